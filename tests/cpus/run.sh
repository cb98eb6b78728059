#!/usr/bin/env bash
# run.sh (make test-cpus): the numerical suites on CPUs that this machine is not, emulated by
# qemu-user: one with AVX2 and FMA but no AVX-512 (Haswell) and one with neither (Nehalem).
# So the code such CPUs run is tested as those CPUs choose it, not only as NMT_ISA caps it
# (which CI does natively): the vector loops' AVX2 and portable variants and the GEMM
# kernels. The layers, model and train suites must pass, and the gemm suite's `kernels` case
# checks that each CPU got the kernels named below (the gemm suite's own cases run those
# kernels natively, with NMT_ISA, far faster than under emulation). Without qemu-x86_64,
# as root it is installed with apt-get; otherwise the test says SKIPPED and how to install it.
# Before the emulated runs, and even without qemu, it checks that every variant is vectorised.
# TEST_CPUS: the CPU models to emulate (default "Haswell Nehalem"; CI leaves out the one this
# machine is).
# run.sh --install: the install alone (.ci/run does it ahead, while other stages run).
set -uo pipefail
cd "$(dirname "$0")/../.."

say() { echo "test-cpus: $*"; }
if [ "$(uname -m)" != x86_64 ]; then
    say "SKIPPED: the emulated CPUs are x86-64 ones and this machine is $(uname -m)"
    exit 0
fi
# qemu-user with apt-get, when it is missing and this is root (0: there or installed now; 1: the
# install failed; 2: it cannot be installed here)
install_qemu() {
    command -v qemu-x86_64 >/dev/null 2>&1 && return 0
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 2
    say "installing qemu-user (apt-get install -y qemu-user)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y qemu-user >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 && apt-get install -y qemu-user >/dev/null 2>&1; } ||
        { say "FAIL: apt-get install -y qemu-user failed"; return 1; }
}
case "${1-}" in
--install) install_qemu; [ $? = 1 ] && exit 1; exit 0 ;;
"") ;;
*) say "unknown argument: $1 (none, or --install)"; exit 2 ;;
esac
[ -x bin/run_tests ] || { say "FAIL: bin/run_tests is missing (make bin/run_tests)"; exit 1; }

# First, without emulation: every loop compiled once per instruction set (model/fastmath.h's
# VECTOR_DISPATCH) must be vectorised in each variant, with zmm registers in name_isa_avx512,
# ymm in name_isa_avx2 and packed SSE arithmetic in name_isa_portable. A compiler can leave a
# variant's loop scalar without a word (exp, tanh and sigmoid were, in all but their AVX-512
# clones, until 45679bc), and the emulated runs below would still pass, only slower. And no
# function may be chosen by the loader (target_clones, ifunc), out of NMT_ISA's reach. The
# double build has one variant, the portable one, of libm's scalar functions: not checked.
check_variants() {
    if grep -Eq 'REAL_DOUBLE' build/compile-command; then
        say "variants: the double build has none to check"
        return 0
    fi
    if ! command -v nm >/dev/null 2>&1 || ! command -v objdump >/dev/null 2>&1; then
        say "FAIL: nm and objdump (binutils) are missing"
        return 1
    fi
    local count=0 bad=0 object symbol pattern code
    for object in $(find build -name '*.o' -not -path 'build/tests/*' -not -path 'build/mpi/*' \
                       -not -path 'build/wasm/*'); do
        if nm "$object" | grep -Eq ' i |[.]resolver$'; then
            say "FAIL: $object has a function the loader chooses (target_clones or ifunc): NMT_ISA cannot cap it"
            bad=1
        fi
        for symbol in $(nm "$object" | awk '$3 ~ /_isa_(avx512|avx2|portable)([.].*)?$/ { print $3 }'); do
            case $symbol in
            *_isa_avx512*) pattern='%zmm' ;;
            *_isa_avx2*) pattern='%ymm' ;;
            *) pattern='[[:space:]]v?(add|sub|mul|div|max|min|sqrt)p[sd][[:space:]]' ;;
            esac
            # the whole listing first: grep -q stopping early would fail the pipe (pipefail)
            code=$(objdump -d --no-show-raw-insn --disassemble="$symbol" "$object")
            if ! grep -Eq "$pattern" <<<"$code"; then
                say "FAIL: $symbol ($object) is not vectorised: no $pattern in its code"
                bad=1
            fi
            count=$((count + 1))
        done
    done
    if [ $count = 0 ]; then
        say "FAIL: no loop variant (name_isa_avx2) in build/ (a float build has them: model/fastmath.h)"
        return 1
    fi
    [ $bad = 0 ] && say "variants: all $count vectorised (zmm, ymm, packed SSE)"
    return $bad
}
check_variants || exit 1
install_qemu
case $? in
1) exit 1 ;;
2)
    say "SKIPPED: qemu-x86_64 is not installed; install it with:"
    say "    sudo apt-get update && sudo apt-get install -y qemu-user"
    exit 0
    ;;
esac
# run_cpu MODEL KERNELS: each suite under qemu's CPU model, which must get those GEMM kernels
# (and int8 kernels of the same name: the quant suite)
run_cpu() {
    local log="build/test-cpus-$1.log"
    : >"$log"
    for suite in gemm quant layers model train; do
        local only=()
        [ "$suite" = gemm ] && only=(CK_RUN_CASE=kernels)
        if ! (cd tests && env "${only[@]}" NMT_EXPECT_KERNELS="$2" CK_RUN_SUITE="$suite" \
            qemu-x86_64 -cpu "$1" ../bin/run_tests) >>"$log" 2>&1; then
            tail -n 20 "$log"
            say "FAIL: the $suite suite on an emulated $1"
            return 1
        fi
        # a suite that ran nothing (a misspelt name) must not pass
        if tail -n 1 "$log" | grep -q '^0 passed'; then
            say "FAIL: the $suite suite ran no test on an emulated $1"
            return 1
        fi
        say "$1 ($2 kernels), $suite: $(tail -n 1 "$log")"
    done
}
# the two side by side, one thread each: the code that differs between CPUs is the kernels and
# the vector loops, which one thread runs as two do (the thread-count tests set their own)
export OMP_NUM_THREADS=1
runs=()
for cpu in ${TEST_CPUS:-Haswell Nehalem}; do
    case $cpu in
    Haswell) run_cpu Haswell avx2 & ;;
    Nehalem) run_cpu Nehalem portable & ;;
    *) say "FAIL: TEST_CPUS names $cpu; the models are Haswell and Nehalem" && exit 1 ;;
    esac
    runs+=($!)
done
status=0
for run in "${runs[@]}"; do wait "$run" || status=1; done
[ $status = 0 ] || exit 1
say "PASS"
