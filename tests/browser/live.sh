#!/usr/bin/env bash
# live.sh (make test-browser, after run.sh's attention pages): the live attention page in
# headless Chromium. Builds the WebAssembly module (make wasm; live/need-emcc.sh installs
# emscripten as root, and when it cannot be installed this part says SKIPPED and why), makes
# the toy model (runs/toy/best.ckpt when it exists, else a quick 60-step training of
# configs/toy.ini: the toy's sizes, so the page's size and speed are the toy's), writes what
# bin/align prints for a few sentences (greedy and beam 4) and the page with them (and the same
# for small models of the three other attention scores), and checks:
#   - `make live` writes the page in one command (float, the default), at most 5 MB, and
#     `make live COMPUTE=int8` the int8 one, smaller;
#   - #selftest (tests/browser/live-selftest.js, added with make-page.sh --selftest; the pages
#     of make live carry no test code): the page translates the same sentences and matches
#     bin/align's translations, weights and probabilities to 1e-5, every cell's worked step
#     adds up, and hostile text typed into the box (markup, </script>, 10,000 characters,
#     lone surrogates) is refused or translated without breaking the page: PASS, no JavaScript
#     error;
#   - the first translation appears within 1 s of the page starting to load;
#   - a page whose bin/align weight is off by 2e-5 FAILs;
#   - the same self-test for the toy model quantized (bin/quantize) against `bin/align -m
#     QUANTIZED` (int8 products) to 1e-5, its steps (float decoder) within 1e-2 of its
#     search, its first translation within 1 s, its model line naming 8-bit weights.
# Needs chromium (run.sh installs it) and bin/train, bin/align, bin/quantize. BROWSER_OUT=DIR
# keeps the pages.
set -uo pipefail
cd "$(dirname "$0")/../.."

say() { echo "test-browser: live: $*"; }
fail() {
    echo "test-browser: live: FAIL: $*"
    exit 1
}

had_emcc=$(command -v "${EMCC:-emcc}")
start=$(date +%s)
reason=$(sh live/need-emcc.sh 2>&1)
case $? in
0) [ -n "$had_emcc" ] || say "emscripten installed with apt-get in $(($(date +%s) - start)) s" ;;
*)
    say "SKIPPED: the WebAssembly module cannot be built: $(printf '%s\n' "$reason" | tr '\n' ' ')"
    exit 0
    ;;
esac
CHROMIUM_BIN=${CHROMIUM_BIN:-chromium}
command -v "$CHROMIUM_BIN" >/dev/null 2>&1 || fail "$CHROMIUM_BIN is missing (tests/browser/run.sh installs it)"

T=$(mktemp -d /tmp/nmt-live.XXXXXX) || fail "mktemp"
trap 'rm -rf "$T"' EXIT
start=$(date +%s%N)
make --no-print-directory -s -j2 build/wasm/nmt-live.js >"$T/build.log" 2>&1 || fail "make wasm failed: $(tail -n 5 "$T/build.log")"
say "module built (make wasm) in $((($(date +%s%N) - start) / 1000000)) ms: $(wc -c <build/wasm/nmt-live.js) bytes"

CHROMIUM=("$CHROMIUM_BIN" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --enable-logging=stderr --v=0)

MODEL=runs/toy/best.ckpt
if [ ! -f "$MODEL" ]; then
    MODEL="$T/toy/best.ckpt"
    bin/train configs/toy.ini --set train.max_steps=60 --set train.valid_every=60 \
        --set train.threads=1 --set train.out_dir="$T/toy" >"$T/train.log" 2>&1 ||
        fail "training the toy model: $(tail -n 2 "$T/train.log")"
fi
say "model: $MODEL"

SENTENCES=("I love machine learning" "the black cat sees a dog" "où est le chien ?" "我爱你"
    "she has a beautiful house")
bin/align -m "$MODEL" --format json "${SENTENCES[@]}" >"$T/greedy.jsonl" || fail "bin/align (greedy)"
bin/align -m "$MODEL" --beam 4 --format json "${SENTENCES[@]:0:3}" >"$T/beam4.jsonl" ||
    fail "bin/align --beam 4"

# the one command: float by default, int8 on request
make --no-print-directory -s live MODEL="$MODEL" OUT="$T/live-float.html" \
    2>"$T/make-live-float.log" || fail "make live: $(cat "$T/make-live-float.log")"
float_size=$(wc -c <"$T/live-float.html")
[ "$float_size" -le 5000000 ] || fail "the page is $float_size bytes, more than 5 MB"
make --no-print-directory -s live MODEL="$MODEL" OUT="$T/live.html" COMPUTE=int8 \
    2>"$T/make-live.log" || fail "make live COMPUTE=int8: $(cat "$T/make-live.log")"
size=$(wc -c <"$T/live.html")
[ "$size" -lt "$float_size" ] || fail "the int8 page ($size bytes) is not smaller than the float one ($float_size)"
say "make live MODEL=$MODEL: a page of $float_size bytes (float), $size bytes with COMPUTE=int8"
# the self-test is the tests' own: a user's page does not carry it
grep -q 'function selftest' "$T/live-float.html" "$T/live.html" && fail "make live wrote the self-test into the page"

# A page of MODEL with the self-test (tests/browser/selftest.js and live-selftest.js) and the
# references BEAM=FILE: sh live/make-page.sh, as make live runs it, plus --selftest.
cat tests/browser/selftest.js tests/browser/live-selftest.js >"$T/selftest.js" || fail "cat"
test_page() {
    local model=$1 out=$2
    shift 2
    sh live/make-page.sh build/wasm/nmt-live.js "$model" "$out" --selftest "$T/selftest.js" "$@"
}

# Loads PAGE#selftest into NAME.dom; prints the result (the <pre>'s text).
selftest() {
    local page=$1 name=$2
    timeout 120 "${CHROMIUM[@]}" --user-data-dir="$T/profile-$name" \
        --dump-dom "file://$page#selftest" >"$T/$name.dom" 2>"$T/$name.log" ||
        fail "$name: chromium failed (exit $?): $(tail -n 3 "$T/$name.log")"
    sed -n '/<pre id="selftest-result"/,/<\/pre>/p' "$T/$name.dom" | sed 's/<[^>]*>//g'
}

test_page "$MODEL" "$T/selftest.html" 1="$T/greedy.jsonl" \
    4="$T/beam4.jsonl" 2>/dev/null || fail "make-page.sh with references"
result=$(selftest "$T/selftest.html" selftest)
case "$result" in
'PASS '*) ;;
*) fail "self-test: $result" ;;
esac
if grep -E 'Uncaught|SyntaxError|TypeError|ReferenceError' "$T/selftest.log" >/dev/null; then
    fail "JavaScript error: $(grep -E 'Uncaught|Error' "$T/selftest.log" | head -n 3)"
fi
grep -o '<html[^>]*>' "$T/selftest.dom" | grep -q xpwned && fail "a script from the hostile text ran"
[ "$(grep -o '<script' "$T/selftest.dom" | wc -l)" = 6 ] || fail "the DOM has other script elements"
say "self-test: $(printf '%s\n' "$result" | head -n 1)"
first=$(printf '%s\n' "$result" | sed -n 's/^first translation: \([0-9]*\) ms.*/\1/p')
[ -n "$first" ] || fail "the self-test reported no first-translation time: $result"
say "$(printf '%s\n' "$result" | sed -n 2p)"
[ "$first" -le 1000 ] || fail "the first translation took $first ms, more than 1 s"

# the toy model quantized: the page's int8 search against bin/align's int8 search
start=$(date +%s%N)
QUANTIZED="$T/toy-int8.ckpt"
bin/quantize "$MODEL" "$QUANTIZED" || fail "bin/quantize $MODEL"
bin/align -m "$QUANTIZED" --format json "${SENTENCES[@]}" >"$T/int8-1.jsonl" &&
    bin/align -m "$QUANTIZED" --beam 4 --format json "${SENTENCES[@]:0:3}" >"$T/int8-4.jsonl" ||
    fail "bin/align -m $QUANTIZED"
test_page "$QUANTIZED" "$T/int8.html" 1="$T/int8-1.jsonl" \
    4="$T/int8-4.jsonl" 2>/dev/null || fail "make-page.sh (int8)"
result=$(selftest "$T/int8.html" int8)
case "$result" in
'PASS '*) ;;
*) fail "int8: $result" ;;
esac
grep -E 'Uncaught|SyntaxError|TypeError|ReferenceError' "$T/int8.log" >/dev/null &&
    fail "int8: JavaScript error: $(grep -E 'Uncaught|Error' "$T/int8.log" | head -n 3)"
grep -q '<p id="model-line"[^>]*>[^<]*8-bit weights' "$T/int8.dom" || fail "int8: the model line does not name 8-bit weights"
first=$(printf '%s\n' "$result" | sed -n 's/^first translation: \([0-9]*\) ms.*/\1/p')
[ -n "$first" ] || fail "int8: the self-test reported no first-translation time: $result"
[ "$first" -le 1000 ] || fail "int8: the first translation took $first ms, more than 1 s"
say "int8 ($(wc -c <"$QUANTIZED") bytes, page $(wc -c <"$T/int8.html") bytes): $(printf '%s\n' "$result" | head -n 1)"
printf '%s\n' "$result" | sed -n '2,$p' | while IFS= read -r line; do say "int8: $line"; done
say "int8 part: $((($(date +%s%N) - start) / 1000000)) ms"

# the other three scores, each with a small model (sizes 8 to 16, 150 steps): the worked
# steps of dot, general and scaled_dot, checked the same way
for score in dot general scaled_dot; do
    bin/train configs/toy.ini --set model.score=$score --set model.emb_size=16 \
        --set model.enc_hidden=8 --set model.dec_hidden=16 --set model.att_size=12 \
        --set model.readout_size=16 --set train.max_steps=150 --set train.valid_every=150 \
        --set train.threads=1 --set train.out_dir="$T/$score" >"$T/train-$score.log" 2>&1 ||
        fail "training the $score model: $(tail -n 2 "$T/train-$score.log")"
    bin/align -m "$T/$score/best.ckpt" --format json "${SENTENCES[@]:0:3}" >"$T/$score-1.jsonl" &&
        bin/align -m "$T/$score/best.ckpt" --beam 3 --format json "${SENTENCES[@]:0:2}" \
            >"$T/$score-3.jsonl" || fail "bin/align ($score)"
    test_page "$T/$score/best.ckpt" "$T/$score.html" 1="$T/$score-1.jsonl" 3="$T/$score-3.jsonl" 2>/dev/null || fail "make-page.sh ($score)"
    result=$(selftest "$T/$score.html" "$score")
    case "$result" in
    'PASS '*) say "$score: $(printf '%s\n' "$result" | head -n 1)" ;;
    *) fail "$score: $result" ;;
    esac
done

# one weight of bin/align's first sentence off by 2e-5: the self-test must FAIL on it
awk 'NR == 1 {
    at = index($0, "\"alpha\": [[") + 11; rest = substr($0, at)
    match(rest, /^[-0-9.e]+/); value = substr(rest, 1, RLENGTH) + 2e-5
    $0 = substr($0, 1, at - 1) sprintf("%.9g", value) substr(rest, RLENGTH + 1)
} { print }' "$T/greedy.jsonl" >"$T/broken.jsonl"
cmp -s "$T/greedy.jsonl" "$T/broken.jsonl" && fail "broken: the awk edit changed nothing"
test_page "$MODEL" "$T/broken.html" 1="$T/broken.jsonl" 2>/dev/null || fail "make-page.sh (broken)"
result=$(selftest "$T/broken.html" broken)
case "$result" in
*FAIL*'beam 1 sentence 1 step 1: alpha_0 '*) say "broken weight: the self-test fails as it should: $(printf '%s\n' "$result" | sed -n 2p)" ;;
*) fail "broken: the self-test did not catch a wrong weight: $result" ;;
esac

if [ -n "${BROWSER_OUT:-}" ]; then
    mkdir -p "$BROWSER_OUT" && cp "$T"/*.html "$T"/*.dom "$BROWSER_OUT"/ && say "files kept in $BROWSER_OUT"
fi
say "passed"
