#!/bin/sh
# need-emcc.sh (make wasm, make live, make test-browser): makes sure Debian's emscripten (emcc)
# and the acorn its JavaScript optimizer loads (node-acorn) are present. As root on a
# Debian-like system it installs them with apt-get; otherwise it says what to install.
# Exit 0: emcc is there. Exit 2: it is not, and the caller reports SKIPPED (stderr says why).
# Exit 1: installing it failed.
EMCC=${EMCC:-emcc}
if command -v "$EMCC" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "wasm: installing emscripten with apt-get (apt-get install -y emscripten node-acorn)" >&2
    export DEBIAN_FRONTEND=noninteractive
    if apt-get install -y -q emscripten node-acorn >/dev/null 2>&1 ||
       { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q emscripten node-acorn >/dev/null 2>&1; }; then
        command -v "$EMCC" >/dev/null 2>&1 && exit 0
    fi
    echo "wasm: could not install emscripten; run: apt-get update && apt-get install -y emscripten node-acorn" >&2
    exit 1
fi
echo "wasm: SKIPPED: $EMCC (emscripten) is not installed; install it with:" >&2
echo "    sudo apt-get update && sudo apt-get install -y emscripten node-acorn" >&2
exit 2
