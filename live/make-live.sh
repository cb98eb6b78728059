#!/bin/sh
# make-live.sh (make live): the live page of MODEL with int8 or float weights.
#
#   sh live/make-live.sh COMPUTE MODULE MODEL OUT
#
# COMPUTE=float (make live's default) embeds a float checkpoint as it is, and refuses a
# quantized one, whose float weights are gone. COMPUTE=int8 embeds the model with 8-bit
# weights: a float checkpoint is quantized on the way (bin/quantize into a temporary
# directory, removed at the end), a quantized one (bin/quantize's format 4) goes in as it is.
# The page is written by live/make-page.sh.
set -u
say() { echo "make-live: $*" >&2; }
[ $# = 4 ] || { say "usage: make-live.sh COMPUTE MODULE MODEL OUT"; exit 1; }
COMPUTE=$1 MODULE=$2 MODEL=$3 OUT=$4
HERE=$(dirname "$0")
case "$COMPUTE" in
int8 | float) ;;
*) say "COMPUTE=$COMPUTE: expected int8 or float"; exit 1 ;;
esac
[ -r "$MODEL" ] || { say "$MODEL: cannot read the model (MODEL=path of a checkpoint written by bin/train)"; exit 1; }
[ "$(head -c 8 "$MODEL")" = NMTCKPT1 ] || { say "$MODEL: not a checkpoint (no NMTCKPT1 at its start)"; exit 1; }
# the format version, a little-endian u32 after the magic: 4 for bin/quantize's files
version=$(od -A n -t u1 -j 8 -N 4 "$MODEL" | awk '{ print $1 + 256 * ($2 + 256 * ($3 + 256 * $4)) }')
if [ "$version" = 4 ]; then
    [ "$COMPUTE" = int8 ] || { say "$MODEL is an int8 checkpoint (bin/quantize): its float weights are gone; give the float one, or COMPUTE=int8"; exit 1; }
    exec sh "$HERE/make-page.sh" "$MODULE" "$MODEL" "$OUT"
fi
[ "$COMPUTE" = int8 ] || exec sh "$HERE/make-page.sh" "$MODULE" "$MODEL" "$OUT"

QUANTIZE=${QUANTIZE:-bin/quantize}
dir=$(mktemp -d "${TMPDIR:-/tmp}/nmt-live.XXXXXX") || { say "mktemp failed"; exit 1; }
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM
# named after the model, so the page's model line names it
quantized="$dir/$(basename "$MODEL" .ckpt)-int8.ckpt"
"$QUANTIZE" "$MODEL" "$quantized" || { say "$MODEL: bin/quantize failed"; exit 1; }
say "$MODEL quantized: $(wc -c <"$MODEL") bytes -> $(wc -c <"$quantized") bytes (COMPUTE=float keeps it float)"
sh "$HERE/make-page.sh" "$MODULE" "$quantized" "$OUT"
