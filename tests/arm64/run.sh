#!/usr/bin/env bash
# run.sh (make test-arm64): the numerical suites on ARM64 without ARM hardware. A copy of the
# tree is cross-compiled with Debian's gcc-aarch64-linux-gnu against the arm64 `check` (multiarch)
# in build/arm64/, and its test program runs under qemu-aarch64, on an emulated CPU with each
# kernel set: i8mm (qemu's `max` CPU has it), dotprod, neon and portable, capped by NMT_ISA on
# the `max` CPU; then the dispatch alone on CPUs that have less (cortex-a72: NEON only,
# neoverse-n1: NEON and dotprod), which must get their best without any cap. As root, what is
# missing is installed with apt-get; otherwise the test says SKIPPED and the command to run.
# run.sh --install: the install alone (.ci/run does it ahead, while other stages run).
set -uo pipefail
cd "$(dirname "$0")/../.."

say() { echo "test-arm64: $*"; }
CROSS=${CROSS:-aarch64-linux-gnu-gcc}
PACKAGES="gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user check:arm64"
INSTALL="dpkg --add-architecture arm64 && apt-get update && apt-get install -y $PACKAGES"
have_all() {
    command -v "$CROSS" >/dev/null 2>&1 && command -v qemu-aarch64 >/dev/null 2>&1 &&
        [ -f /usr/lib/aarch64-linux-gnu/pkgconfig/check.pc ]
}
# install_missing: what is missing, with apt-get as root (0: all there; 1: the install failed;
# 2: it cannot be installed here)
install_missing() {
    have_all && return 0
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 ||
        return 2
    say "installing the cross compiler, qemu-user and arm64 check ($INSTALL)"
    export DEBIAN_FRONTEND=noninteractive
    (dpkg --add-architecture arm64 && apt-get update -q && apt-get install -y -q $PACKAGES) \
        >build-arm64-install.log 2>&1 ||
        { tail -n 5 build-arm64-install.log; say "FAIL: $INSTALL failed"; return 1; }
    rm -f build-arm64-install.log
}
case "${1-}" in
--install) install_missing; [ $? = 1 ] && exit 1; exit 0 ;;
"") ;;
*) say "unknown argument: $1 (none, or --install)"; exit 2 ;;
esac
install_missing
case $? in
1) exit 1 ;;
2)
    say "SKIPPED: the ARM64 cross compiler, qemu-aarch64 or arm64 check is missing; install with:"
    say "    sudo sh -c '$INSTALL'"
    exit 0
    ;;
esac

# The tree, copied with its times (so that make rebuilds only what changed), without what
# builds and runs leave behind.
TREE=build/arm64/tree
mkdir -p "$TREE" || exit 1
for entry in * .clang-format; do
    case $entry in build | bin | runs) continue ;; esac
    [ -e "$entry" ] && { cp -Rp "$entry" "$TREE/" || exit 1; }
done
export PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
if ! make --no-print-directory -s -C "$TREE" -j2 CC="$CROSS" bin/run_tests \
    >build/arm64/build.log 2>&1; then
    tail -n 20 build/arm64/build.log
    say "FAIL: the cross build (make CC=$CROSS bin/run_tests; build/arm64/build.log)"
    exit 1
fi
if grep -q 'warning:' build/arm64/build.log; then
    grep -A3 'warning:' build/arm64/build.log | head -n 20
    say "FAIL: the cross build has warnings"
    exit 1
fi

# The vector loops have their portable variant only on ARM64 (model/fastmath.h): NEON is the
# baseline there, and the compiler must have vectorised each loop for it.
count=0
for object in $(find "$TREE/build" -name '*.o' -not -path '*/tests/*'); do
    for symbol in $(aarch64-linux-gnu-nm "$object" | awk '$3 ~ /_isa_portable$/ { print $3 }'); do
        code=$(aarch64-linux-gnu-objdump -d --no-show-raw-insn --disassemble="$symbol" "$object")
        if ! grep -Eq 'v[0-9]+\.(4s|2d)' <<<"$code"; then
            say "FAIL: $symbol (${object#$TREE/}) is not vectorised: no NEON arithmetic in its code"
            exit 1
        fi
        count=$((count + 1))
    done
done
[ $count -gt 0 ] || { say "FAIL: no vector loop (*_isa_portable) in the ARM64 build"; exit 1; }
say "vector loops: all $count vectorised for NEON"

# the cross compiler's runtime (libgomp) is under its own prefix, the arm64 check under /usr/lib
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

# run CPU CAP GEMM INT8 SUITE[:CASE]...: each suite (or only its test case CASE) under qemu's
# CPU model with NMT_ISA=CAP (empty: none), which must choose the GEMM and the int8 kernels
# named. In this process (CK_FORK=no): check's forked tests hang under qemu-aarch64 7.2; a
# timeout stands in for check's.
run() {
    local cpu=$1 cap=$2 gemm=$3 int8=$4 log="build/arm64/$1-${2:-best}.log"
    shift 4
    : >"$log"
    for what in "$@"; do
        local suite=${what%%:*} case=() expect=$gemm
        [ "$what" != "$suite" ] && case=(CK_RUN_CASE="${what#*:}")
        [ "$suite" = quant ] && expect=$int8
        if ! (cd "$TREE/tests" && env "${case[@]}" NMT_ISA="$cap" NMT_EXPECT_KERNELS="$expect" \
            CK_FORK=no CK_RUN_SUITE="$suite" timeout 1200 qemu-aarch64 -cpu "$cpu" \
            ../bin/run_tests) >>"$log" 2>&1; then
            tail -n 20 "$log"
            say "FAIL: $what on an emulated $cpu, NMT_ISA=$cap"
            return 1
        fi
        if tail -n 1 "$log" | grep -q '^0 passed'; then
            say "FAIL: $what ran no test on an emulated $cpu"
            return 1
        fi
        say "$cpu, NMT_ISA=${cap:-(unset)} ($gemm, $int8 kernels), $what: $(tail -n 1 "$log")"
    done
}
# One thread each and two runs side by side: what differs between the sets is the kernels,
# which one thread runs as two do (the thread-count tests set their own). The numerical suites
# whole with the best set (NEON products, i8mm int8); with each other set the cases that
# differ between sets: the products' shapes and the int8 kernels (ARM64_ALL=1: every suite
# with every set, some 4 times as long). Then CPUs with less, for the dispatch alone.
export OMP_NUM_THREADS=1
# ARM64_SUITES: the best set's list instead (CI: the ones that fit its time)
ALL=${ARM64_SUITES:-layers model gemm quant reference}
if [ "${ARM64_ALL:-0}" = 1 ]; then
    PRODUCTS="gemm:kernels $ALL" INT8="gemm:kernels $ALL"
else
    PRODUCTS="gemm:kernels gemm:gemm quant:quant" INT8="gemm:kernels quant:quant"
fi
status=0
{ run max "" neon i8mm $ALL && run max neon neon neon $INT8 &&
    run cortex-a72 "" neon neon gemm:kernels quant:quant; } &
first=$!
run max dotprod neon dotprod $INT8 && run max portable portable portable $PRODUCTS &&
    run neoverse-n1 "" neon dotprod gemm:kernels quant:quant || status=1
wait $first || status=1
[ $status = 0 ] && say "PASS"
exit $status
