#!/bin/sh
# make-live.sh (make live): the live page of MODEL with int8 or float weights.
#
#   sh live/make-live.sh COMPUTE MODULE MODEL OUT [MAKE-MODULE]
#
# First it checks what it was given, before anything is built or written: OUT must name a
# file (not a folder) in a folder that exists, and MODEL must be a whole checkpoint, read
# through the library as every program reads it (bin/quantize --check: size, checksum, every
# tensor), so that half a file or one flipped byte is refused here and not found in the
# browser. Then MAKE-MODULE, a shell command (make live's builds MODULE with emscripten),
# runs, so these checks need no emcc.
#
# COMPUTE=float (make live's default) embeds a float checkpoint as it is, and refuses a
# quantized one, whose float weights are gone. COMPUTE=int8 embeds the model with 8-bit
# weights: a float checkpoint is quantized on the way (bin/quantize into a temporary
# directory, removed at the end), a quantized one (bin/quantize's format 4) goes in as it is.
# The page is written by live/make-page.sh.
set -u
say() { echo "make-live: $*" >&2; }
[ $# = 4 ] || [ $# = 5 ] || { say "usage: make-live.sh COMPUTE MODULE MODEL OUT [MAKE-MODULE]"; exit 1; }
COMPUTE=$1 MODULE=$2 MODEL=$3 OUT=$4 MAKE_MODULE=${5:-}
HERE=$(dirname "$0")
QUANTIZE=${QUANTIZE:-$HERE/../bin/quantize}
case "$COMPUTE" in
int8 | float) ;;
*) say "COMPUTE=$COMPUTE: expected int8 or float"; exit 1 ;;
esac
case "$OUT" in
'' | */) say "OUT=$OUT: expected the name of the page's file (e.g. OUT=live.html)"; exit 1 ;;
esac
[ -d "$OUT" ] && { say "OUT=$OUT is a folder: name the page's file (e.g. OUT=$OUT/live.html)"; exit 1; }
[ -d "$(dirname "$OUT")" ] || { say "OUT=$OUT: no folder $(dirname "$OUT") to write it in"; exit 1; }
[ -r "$MODEL" ] || { say "$MODEL: cannot read the model (MODEL=path of a checkpoint written by bin/train)"; exit 1; }
# bin/quantize has said what is wrong with the file when it fails
weights=$("$QUANTIZE" --check "$MODEL") || { say "$MODEL: refused; no page written"; exit 1; }
if [ "$weights" = int8 ] && [ "$COMPUTE" = float ]; then
    say "$MODEL is an int8 checkpoint (bin/quantize): its float weights are gone; give the float one, or COMPUTE=int8"
    exit 1
fi
if [ -n "$MAKE_MODULE" ]; then
    sh -c "$MAKE_MODULE" || { say "the WebAssembly module ($MODULE) could not be built"; exit 1; }
fi
if [ "$COMPUTE" = float ] || [ "$weights" = int8 ]; then
    exec sh "$HERE/make-page.sh" "$MODULE" "$MODEL" "$OUT"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/nmt-live.XXXXXX") || { say "mktemp failed"; exit 1; }
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM
# named after the model, so the page's model line names it
quantized="$dir/$(basename "$MODEL" .ckpt)-int8.ckpt"
"$QUANTIZE" "$MODEL" "$quantized" || { say "$MODEL: bin/quantize failed"; exit 1; }
say "$MODEL quantized: $(wc -c <"$MODEL") bytes -> $(wc -c <"$quantized") bytes (COMPUTE=float keeps it float)"
sh "$HERE/make-page.sh" "$MODULE" "$quantized" "$OUT"
