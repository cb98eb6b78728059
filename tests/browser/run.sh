#!/usr/bin/env bash
# run.sh (make test-browser): the attention page (bin/align --format html) in a real browser,
# headless Chromium. First the pages' scripts go through `node --check` (SKIPPED without node)
# and no line of them or their styles may pass 100 columns. Each page then gets the self-test
# (selftest.js and attention-selftest.js, which users' pages do not carry) and is opened with
# #selftest: the test hovers and focuses every output token and checks what the page shows
# against its embedded data, then writes PASS or FAIL into <pre id="selftest-result">, which
# this script reads from the dumped DOM. Checked:
#   - pages of searched translations (bin/align; bin/translate --nbest --align-format html);
#   - a force-decoded page whose tokens and texts are hostile (</script>, -->, quotes, &,
#     javascript:, U+2028): the self-test passes, no script from the text ran, the DOM holds
#     the text verbatim;
#   - a page whose data has one weight broken on purpose: the self-test must FAIL, which shows
#     that it can;
#   - a screenshot of the page, and the SVG files (attention heatmap, training curves) with
#     xmllint --noout, among them the hostile texts (and U+FFFE, U+FFFF) as an attention SVG
#     and curves of runs whose folder names hold markup, comment marks, javascript:, U+2028,
#     a control character and a byte that is not UTF-8.
# Nothing is trained for real: a 4-step model of size 4 is made in a scratch folder (and
# runs/toy/best.ckpt is used for the main page when it exists). Without Chromium, as root it
# is installed with apt-get; otherwise the test says SKIPPED and how to install it.
# Then tests/browser/live.sh tests the live page (make live), which runs the model itself.
# BROWSER_OUT=DIR keeps the pages, DOM dumps and the screenshot in DIR. run.sh --install: what
# both scripts install, alone (.ci/run does it ahead, while other stages run).
set -uo pipefail
cd "$(dirname "$0")/../.."

say() { echo "test-browser: $*"; }
fail() {
    echo "test-browser: FAIL: $*"
    exit 1
}

# ---- what the test needs: chromium and xmllint (libxml2-utils), with apt-get as root ----
install_packages() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y "$@" >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 && apt-get install -y "$@" >/dev/null 2>&1; }
}
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
CHROMIUM_BIN=${CHROMIUM_BIN:-chromium} # another name or path to test with
# install_browser: chromium when it is missing (0: there or installed now; 1: the install
# failed; 2: it cannot be installed here), and xmllint when it can be
install_browser() {
    if ! command -v "$CHROMIUM_BIN" >/dev/null 2>&1; then
        can_install || return 2
        say "installing chromium and libxml2-utils (apt-get install -y chromium libxml2-utils)"
        install_packages chromium libxml2-utils || return 1
    fi
    if ! command -v xmllint >/dev/null 2>&1 && can_install; then install_packages libxml2-utils; fi
    return 0
}
case "${1-}" in
--install) # and emscripten, which live.sh needs (live/need-emcc.sh: exit 2 when it cannot be had)
    install_browser
    [ $? = 1 ] && fail "apt-get install -y chromium failed"
    sh live/need-emcc.sh
    [ $? = 1 ] && exit 1
    exit 0
    ;;
"") ;;
*) fail "unknown argument: $1 (none, or --install)" ;;
esac

# ---- the pages' scripts and styles: node --check (syntax) and 100 columns ----
SCRIPTS=(nmt/heatmap.js nmt/attention-page.js live/live.js tests/browser/selftest.js
    tests/browser/attention-selftest.js
    tests/browser/live-selftest.js)
if command -v node >/dev/null 2>&1; then
    for script in "${SCRIPTS[@]}"; do
        problem=$(node --check "$script" 2>&1) ||
            fail "node --check $script: $(printf '%s\n' "$problem" | head -n 5)"
    done
    say "node --check: the ${#SCRIPTS[@]} scripts of the pages and their self-tests parse"
else
    say "SKIPPED node --check: node is not installed (apt-get install -y nodejs)"
fi
wide=$(awk 'length > 100 { print FILENAME ":" FNR }' "${SCRIPTS[@]}" nmt/*.css live/*.css)
[ -z "$wide" ] || fail "lines over 100 columns: $wide"

# ---- the browser (and xmllint) ----
install_browser
case $? in
1) fail "apt-get install -y chromium failed" ;;
2)
    say "SKIPPED: $CHROMIUM_BIN is not installed; install it with:"
    say "    sudo apt-get update && sudo apt-get install -y chromium libxml2-utils"
    exit 0
    ;;
esac

for program in bin/align bin/translate bin/train bin/plot; do
    [ -x "$program" ] || fail "$program is missing (make builds it)"
done

T=$(mktemp -d /tmp/nmt-browser.XXXXXX) || fail "mktemp"
trap 'rm -rf "$T"' EXIT
CHROMIUM=("$CHROMIUM_BIN" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --enable-logging=stderr --v=0)
cat tests/browser/selftest.js tests/browser/attention-selftest.js >"$T/selftest.js" || fail "cat"

# Adds the self-test (tests/browser/selftest.js and attention-selftest.js, which users' pages
# do not carry) to PAGE as NAME.test.html, loads that with #selftest into NAME.dom, and prints
# the result block (the <pre> through </pre>).
selftest() {
    local page=$1 name=$2
    awk '/^<\/body>$/ { print "<script>"; while ((getline line < test) > 0) print line; print "</script>" }
        { print }' test="$T/selftest.js" "$page" >"$T/$name.test.html" ||
        fail "$name: could not add the self-test"
    timeout 120 "${CHROMIUM[@]}" --user-data-dir="$T/profile-$name" \
        --dump-dom "file://$T/$name.test.html#selftest" >"$T/$name.dom" 2>"$T/$name.log" ||
        fail "$name: chromium failed (exit $?): $(tail -n 3 "$T/$name.log")"
    sed -n '/<pre id="selftest-result"/,/<\/pre>/p' "$T/$name.dom"
}

# The self-test of page NAME must pass, with no JavaScript error in the browser's log.
expect_pass() {
    local page=$1 name=$2 result
    result=$(selftest "$page" "$name")
    [ -n "$result" ] || fail "$name: no self-test result in the page"
    case "$result" in
    *'>PASS '*) ;;
    *) fail "$name: $(printf '%s\n' "$result" | sed 's/<[^>]*>//g')" ;;
    esac
    if grep -E 'Uncaught|SyntaxError|TypeError|ReferenceError' "$T/$name.log" >/dev/null; then
        fail "$name: JavaScript error: $(grep -E 'Uncaught|Error' "$T/$name.log" | head -n 3)"
    fi
    say "$name: $(printf '%s\n' "$result" | sed 's/<[^>]*>//g' | head -n 1)"
}

# ---- a small model, and curves from its log ----
mkdir -p "$T/small" || fail "mkdir"
printf '%s\n' "I love cats	j'aime les chats" "I have a cat	j'ai un chat" \
    "the black cat	le chat noir" "we see the dog	nous voyons le chien" \
    "où est le chien ?	where is the dog ?" "我爱你	je t'aime" \
    "I love machine learning	j'aime l'apprentissage automatique" >"$T/small/pairs.tsv"
printf '%s\n' "[data]" "train = pairs.tsv" "dev = pairs.tsv" "[model]" "emb_size = 4" \
    "enc_hidden = 4" "dec_hidden = 4" "att_size = 4" "readout_size = 4" "[train]" \
    "batch_size = 2" "max_steps = 4" "valid_every = 2" "log_every = 1" "threads = 1" \
    "out_dir = run" >"$T/small/small.ini"
bin/train "$T/small/small.ini" >"$T/train.log" 2>&1 || fail "training the small model: $(tail -n 2 "$T/train.log")"
SMALL="$T/small/run/best.ckpt"
MODEL=$SMALL
[ -f runs/toy/best.ckpt ] && MODEL=runs/toy/best.ckpt
say "model for the main page: $MODEL"

# ---- pages of searched translations ----
bin/align -m "$MODEL" --format html -o "$T/page.html" "I love machine learning" \
    "she has a black cat" "où est le chien ?" "我爱你" || fail "bin/align --format html"
expect_pass "$T/page.html" page
bin/translate -m "$MODEL" --beam 3 --nbest 2 --align "$T/nbest.html" --align-format html \
    "I love machine learning" "the dog sees a cat" >"$T/nbest.txt" || fail "bin/translate --align-format html"
expect_pass "$T/nbest.html" nbest
bin/align -m "$SMALL" --format html -o "$T/small.html" "I love machine learning" "I have a cat" ||
    fail "bin/align --format html (small model)"
expect_pass "$T/small.html" small-model

# ---- hostile tokens: force-decoded, so the target's tokens are taken as given ----
HOSTILE_SOURCE=$'<b>x</b> & "dogs" --> \u2028 </script><script>document.documentElement.setAttribute(\'x\'+\'pwned\',\'source\')</script>'
HOSTILE_TARGET=$'</script><script>document.documentElement.setAttribute("x"+"pwned","target")</script> <!-- javascript:alert(1) "q" \'a\' & <img src=x onerror=document.documentElement.setAttribute("x"+"pwned","img")> \u2028 é 中'
bin/align -m "$SMALL" --format html -o "$T/hostile.html" --ref "$HOSTILE_TARGET" "$HOSTILE_SOURCE" ||
    fail "bin/align --ref (hostile)"
expect_pass "$T/hostile.html" hostile
dom="$T/hostile.dom"
grep -o '<html[^>]*>' "$dom" | grep -q xpwned && fail "hostile: a script from the text ran (xpwned set)"
[ "$(grep -o '<script' "$dom" | wc -l)" = 3 ] || fail "hostile: the DOM has other script elements"
grep -q '<span class="source">&lt;b&gt;x&lt;/b&gt; &amp; "dogs" --&gt; '$'\u2028'' &lt;/script&gt;&lt;script&gt;document' "$dom" ||
    fail "hostile: the source is not in the DOM verbatim"
grep -qF '<q class="reference">&lt;/script&gt;&lt;script&gt;document.documentElement.setAttribute("x"+"pwned","target")&lt;/script&gt; &lt;!-- javascript:alert(1) "q" '"'a'"' &amp; &lt;img src=x onerror=' "$dom" ||
    fail "hostile: the reference is not in the DOM verbatim"
grep -q '<th class="tgt" [^>]*>&lt;/script&gt;&lt;script&gt;document</th>' "$dom" ||
    fail "hostile: the token </script><script>document is not a row label verbatim"
say "hostile: no script from the text ran; texts and tokens verbatim in the DOM"

# ---- a weight broken on purpose must make the self-test fail ----
# The first weight's code is replaced: by the code of weight 1 ("AAAA") when it was below
# ~0.96, else by that of a weight of ~0 ("_AAA"); either way its row no longer sums to 1.
code=$(grep -o '"q":"[A-Za-z0-9_-]\{4\}' "$T/page.html" | head -n 1 | cut -c6-)
[ -n "$code" ] || fail "broken: no weights found in the page"
case "$code" in AA*) wrong=_AAA ;; *) wrong=AAAA ;; esac
sed "0,/\"q\":\"$code/s//\"q\":\"$wrong/" "$T/page.html" >"$T/broken.html"
cmp -s "$T/page.html" "$T/broken.html" && fail "broken: the sed edit changed nothing"
result=$(selftest "$T/broken.html" broken | sed 's/<[^>]*>//g')
case "$result" in
*FAIL*'sentence 1 step 1: weights sum to'*) say "broken weight ($code -> $wrong): the self-test fails as it should: $(printf '%s\n' "$result" | sed -n 2p)" ;;
*) fail "broken: the self-test did not catch a wrong weight: $result" ;;
esac

# ---- a screenshot ----
timeout 120 "${CHROMIUM[@]}" --user-data-dir="$T/profile-screenshot" --hide-scrollbars \
    --window-size=1200,900 --screenshot="$T/page.png" "file://$T/page.html#s1t2" \
    >"$T/screenshot.log" 2>&1 || fail "screenshot: chromium failed: $(tail -n 3 "$T/screenshot.log")"
[ "$(head -c 8 "$T/page.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
    fail "screenshot: $T/page.png is not a PNG"
say "screenshot: $(wc -c <"$T/page.png") bytes"

# ---- SVG files: well-formed XML with the expected elements ----
bin/align -m "$MODEL" --format svg -o "$T/attention.svg" "I love machine learning" "我爱你" ||
    fail "bin/align --format svg"
bin/plot "$T/small/run/train_log.tsv" "$T/small/run/train_log.tsv" -o "$T/plot.svg" || fail "bin/plot"
[ "$(grep -c '<rect class="cell"' "$T/attention.svg")" -gt 0 ] || fail "attention.svg has no cells"
for svg in "$T/small/run/curves.svg" "$T/plot.svg"; do
    [ "$(grep -c '<polyline class="series"' "$svg")" -ge 6 ] || fail "$svg has no curves"
done
# the same hostile texts (and U+FFFE, U+FFFF, which XML forbids) as an SVG, and training
# curves of runs whose folder names hold markup, quotes, comment marks, javascript:, U+2028,
# a control character and a byte that is not UTF-8 (bin/plot runs inside $T so that the
# names are short enough to be drawn whole)
bin/align -m "$SMALL" --format svg -o "$T/hostile.svg" --ref "$HOSTILE_TARGET"$' \xef\xbf\xbe\xef\xbf\xbf' \
    "$HOSTILE_SOURCE" || fail "bin/align --format svg --ref (hostile)"
HOSTILE_DIRS=("$T/<b>&\"'<" "$T/<b>&\"'</script>x" "$T/--><!--javascript:x" "$T/"$'\xff\x01\xe2\x80\xa8y&amp')
mkdir -p "${HOSTILE_DIRS[@]}" || fail "mkdir (hostile folders)"
for dir in "${HOSTILE_DIRS[@]:1}"; do cp "$T/small/run/train_log.tsv" "$dir/" || fail "cp"; done
(cd "$T" && "$OLDPWD/bin/plot" -o hostile-plot.svg -- "<b>&\"'</script>x/train_log.tsv" \
    "--><!--javascript:x/train_log.tsv" $'\xff\x01\xe2\x80\xa8y&amp/train_log.tsv') ||
    fail "bin/plot (hostile folder names)"
grep -qF '&lt;b&gt;&amp;&quot;&apos;&lt;/script&gt;x</text>' "$T/hostile-plot.svg" ||
    fail "hostile-plot.svg: a folder name is not text"
grep -q 'href="javascript' "$T/hostile.dom" && fail "hostile: javascript: became a link"

if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$T/attention.svg" "$T/small/run/curves.svg" "$T/plot.svg" "$T/hostile.svg" \
        "$T/hostile-plot.svg" ||
        fail "xmllint: an SVG file is not well-formed"
    say "xmllint: attention.svg, curves.svg (bin/train), plot.svg (bin/plot) and the hostile hostile.svg and hostile-plot.svg are well-formed"
else
    say "xmllint is missing (apt-get install -y libxml2-utils): SVG files checked by the unit tests only"
fi

if [ -n "${BROWSER_OUT:-}" ]; then
    mkdir -p "$BROWSER_OUT" && cp "$T"/*.html "$T"/*.dom "$T"/*.png "$T"/*.svg "$BROWSER_OUT"/ &&
        say "files kept in $BROWSER_OUT"
fi

# ---- the live page (tests/browser/live.sh: SKIPPED there when emscripten cannot be had) ----
bash tests/browser/live.sh || exit 1
say "passed"
