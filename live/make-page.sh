#!/bin/sh
# make-page.sh (make live): writes the live attention page for one model, a single HTML file
# that works from file:// with nothing else: live/page.html with the style (nmt/heatmap.css,
# which the attention page shares, then live/live.css), the module (make wasm's
# build/wasm/nmt-live.js), the checkpoint's bytes in base64 and the script (nmt/heatmap.js,
# then live/live.js) put in at its marker lines.
#
#   sh live/make-page.sh MODULE MODEL OUT [--selftest SCRIPT BEAM=ALIGN.jsonl ...]
#
# --selftest, for the browser tests only (tests/browser/live.sh), adds SCRIPT (their
# live-selftest.js) as a last script element, and each BEAM=FILE embeds what `bin/align -m
# MODEL --beam BEAM --format json` wrote for some sentences: opened with #selftest, the page
# translates the same sentences itself and compares. The page is written to OUT.tmp and
# renamed over OUT when complete. Everything that goes inside a <script> element is checked or
# escaped so that no text in it can end the element: base64 has no '<', the module and the
# scripts are checked for "</script", and in JSON (the model's name, the references) '<', '>'
# and '&' become \u003c, \u003e and \u0026, which can occur in JSON only inside strings.
set -u
say() { echo "make-page: $*" >&2; }
die() {
    say "$*"
    rm -f "${OUT:-/nonexistent}.tmp"
    exit 1
}
usage="usage: make-page.sh MODULE MODEL OUT [--selftest SCRIPT BEAM=ALIGN.jsonl ...]"
[ $# -ge 3 ] || die "$usage"
MODULE=$1 MODEL=$2 OUT=$3 SELFTEST=
shift 3
if [ $# -gt 0 ]; then
    [ "$1" = --selftest ] && [ $# -ge 2 ] || die "$usage"
    SELFTEST=$2
    shift 2
fi
HERE=$(dirname "$0")
SHARED="$HERE/../nmt" # the heatmap the attention page shares
for f in "$MODULE" "$HERE/page.html" "$SHARED/heatmap.css" "$HERE/live.css" "$SHARED/heatmap.js" \
    "$HERE/live.js" ${SELFTEST:+"$SELFTEST"}; do
    [ -r "$f" ] || die "$f: cannot read it"
done
[ -d "$OUT" ] && die "$OUT is a folder: name the page's file"
[ -r "$MODEL" ] || die "$MODEL: cannot read the model (MODEL=path of a checkpoint written by bin/train)"
[ "$(head -c 8 "$MODEL")" = NMTCKPT1 ] || die "$MODEL: not a checkpoint (no NMTCKPT1 at its start)"
# "</script" would end the element early, and "<!--" or "<script" could change how the
# browser finds its end
for f in "$MODULE" "$SHARED/heatmap.js" "$HERE/live.js" ${SELFTEST:+"$SELFTEST"}; do
    if grep -qiE '</script|<!--|<script' "$f"; then die "$f holds </script, <!-- or <script, which a script element cannot hold"; fi
done
for ref in "$@"; do
    case "$ref" in
    [0-9]*=*) [ -r "${ref#*=}" ] || die "${ref#*=}: cannot read the reference" ;;
    *) die "reference '$ref': expected BEAM=FILE (the output of bin/align --beam BEAM --format json)" ;;
    esac
done

# JSON text made safe inside <script>: only strings can hold these characters
script_json() { sed 's/</\\u003c/g; s/>/\\u003e/g; s/&/\\u0026/g'; }
json_string() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\000-\037' | script_json; }

# the references: {"runs": [{"beam": B, "sentences": [one object per line]}, ...]}
references() {
    printf '{"runs":['
    first=1
    for ref in "$@"; do
        [ $first = 1 ] || printf ','
        first=0
        printf '{"beam":%d,"sentences":[\n' "${ref%%=*}"
        grep -v '^null$' "${ref#*=}" | script_json | sed '$!s/$/,/'
        printf ']}'
    done
    printf ']}'
}

write_page() {
    while IFS= read -r line; do
        case "$line" in
        '@STYLE@') cat "$SHARED/heatmap.css" "$HERE/live.css" ;;
        '@MODEL-INFO@')
            printf '{"name":"%s","bytes":%d}\n' "$(json_string "$(basename "$MODEL")")" \
                "$(wc -c <"$MODEL")"
            ;;
        '@MODEL@') base64 -w 0 "$MODEL" && echo ;;
        '@REFERENCES@') references "$@" && echo ;;
        '@MODULE@') cat "$MODULE" && echo ;;
        '@SCRIPT@') cat "$SHARED/heatmap.js" "$HERE/live.js" ;;
        '@SELFTEST@') [ -z "$SELFTEST" ] || printf '<script>\n%s\n</script>\n' "$(cat "$SELFTEST")" ;;
        *) printf '%s\n' "$line" ;;
        esac || return 1
    done <"$HERE/page.html"
}

write_page "$@" >"$OUT.tmp" || die "$OUT.tmp: could not write the page"
mv "$OUT.tmp" "$OUT" || die "$OUT: could not rename $OUT.tmp to it"
say "wrote $OUT ($(wc -c <"$OUT") bytes): open it in a browser (file://), no server needed"
