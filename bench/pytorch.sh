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
packages="python3-torch libopenblas0-openmp"

find_python() {
    for py in ${PYTHON:-} /usr/bin/python3 python3; do
        "$py" -c 'import torch' >/dev/null 2>&1 && { echo "$py"; return 0; }
    done
    return 1
}

if ! py=$(find_python); then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        say "SKIPPED: PyTorch is not installed (as root: apt-get install -y $packages)"
        exit 0
    fi
    say "installing PyTorch (apt-get install -y --no-install-recommends $packages)"
    # shellcheck disable=SC2086 # the package list splits on purpose
    apt-get install -y --no-install-recommends $packages >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 &&
            apt-get install -y --no-install-recommends $packages >/dev/null 2>&1; } ||
        { say "apt-get install -y $packages failed"; exit 1; }
    py=$(find_python) || { say "PyTorch was installed, yet no python3 imports it"; exit 1; }
fi

threads=${THREADS:-$(nproc 2>/dev/null || echo 2)}
status=0
# each line of bin/bench, then PyTorch's: bin/bench ARGS / pytorch.py ARGS
while read -r ours theirs; do
    # shellcheck disable=SC2086 # the arguments split on purpose
    OMP_NUM_THREADS=$threads bin/bench --run 0 ${ours//,/ } | head -1 || status=1
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$threads "$py" bench/pytorch.py ${theirs//,/ } --threads "$threads" ||
        status=1
done <<'EOF'
train,toy train,toy
train,medium train,medium
decode,toy,1,1 decode,toy,1
decode,toy,1,32 decode,toy,32
decode,medium,1,1 decode,medium,1
decode,medium,1,32 decode,medium,32
EOF
exit $status
