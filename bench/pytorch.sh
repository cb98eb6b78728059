#!/bin/bash
# make bench-pytorch: bin/bench's toy and medium lines (training, greedy decoding of 1 and 32
# sentences at a time), each followed by the same model run by PyTorch (bench/pytorch.py) on
# the same machine, THREADS threads each.
# Needs PyTorch for the system's Python: as root, installs Debian's python3-torch with OpenBLAS
# (its OpenMP build, which shares PyTorch's thread pool: without OpenBLAS, Debian's PyTorch
# multiplies by the reference BLAS); otherwise SKIPPED with the command.
set -u
cd "$(dirname "$0")/.." || exit 1
say() { echo "bench-pytorch: $*"; }
fail() { echo "bench-pytorch: $*" >&2; exit 1; }
packages="python3-torch libopenblas0-openmp"

find_python() {
    for py in ${PYTHON:-} /usr/bin/python3 python3; do
        "$py" -c 'import torch' >/dev/null 2>&1 && { echo "$py"; return 0; }
    done
    return 1
}

[ -x bin/bench ] || fail "bin/bench is missing: run make bin/bench first"
if ! py=$(find_python); then
    if ! command -v apt-get >/dev/null 2>&1; then
        say "SKIPPED: no python3 here imports torch (install PyTorch, or set PYTHON)"
        exit 0
    fi
    if [ "$(id -u)" != 0 ]; then
        say "SKIPPED: PyTorch is not installed (as root: apt-get install -y $packages)"
        exit 0
    fi
    say "installing PyTorch (apt-get install -y --no-install-recommends $packages)"
    log=$(mktemp) || exit 1
    # shellcheck disable=SC2086 # the package list splits on purpose
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages \
        >"$log" 2>&1 ||
        { DEBIAN_FRONTEND=noninteractive apt-get update >>"$log" 2>&1 &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $packages \
                >>"$log" 2>&1; } ||
        { tail -5 "$log" >&2; rm -f "$log"; fail "apt-get install -y $packages failed"; }
    rm -f "$log"
    py=$(find_python) || fail "PyTorch was installed, yet no python3 imports it"
fi

threads=${THREADS:-$(nproc 2>/dev/null || echo 2)}
status=0
# each line of bin/bench, then PyTorch's: bin/bench's arguments, pytorch.py's (commas between)
while read -r -u 3 ours theirs; do
    # shellcheck disable=SC2086 # the arguments split on purpose
    if out=$(OMP_NUM_THREADS=$threads bin/bench --run 0 ${ours//,/ } </dev/null); then
        printf '%s\n' "${out%%$'\n'*}"
    else
        status=1
    fi
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$threads "$py" bench/pytorch.py ${theirs//,/ } --threads "$threads" \
        </dev/null || status=1
done 3<<'LINES'
train,toy train,toy
train,medium train,medium
decode,toy,1,1 decode,toy,1
decode,toy,1,32 decode,toy,32
decode,medium,1,1 decode,medium,1
decode,medium,1,32 decode,medium,32
LINES
exit $status
