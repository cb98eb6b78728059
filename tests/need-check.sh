#!/bin/sh
# Makes sure the `check` unit-test library and pkg-config are present: installs them with
# apt-get when running as root on a Debian-like system, otherwise says exactly what to run.
if pkg-config --exists check 2>/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "make test: installing the 'check' test library and pkg-config with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    if apt-get install -y -q check pkg-config >/dev/null 2>&1 ||
       { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q check pkg-config >/dev/null 2>&1; }; then
        pkg-config --exists check && exit 0
    fi
    echo "make test: could not install 'check' with apt-get; run: apt-get update && apt-get install -y check pkg-config" >&2
    exit 1
fi
echo "make test: the 'check' unit-test library is missing; install it with:" >&2
if [ "$(uname -s)" = Darwin ]; then
    echo "    brew install check pkg-config" >&2
else
    echo "    sudo apt-get install -y check pkg-config" >&2
fi
exit 1
