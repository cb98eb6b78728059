#!/usr/bin/env bash
# run.sh: `make test-mpi`, data-parallel training over MPI checked against one process.
#
# For each precision (float: 1e-4, double: 1e-12, relative to each tensor's largest value):
#   exact    k steps on 2 ranks (1 thread each, a global batch that splits unevenly, a
#            validation in between) reach the parameters of k steps in one process, and
#            one step fewer does not (the comparison can fail)
#   resume   a 2-rank run interrupted by SIGINT to mpirun saves one checkpoint; resumed in one
#            process it reaches the parameters of an uninterrupted single-process run; and a
#            single-process checkpoint resumed on 2 ranks does too
#   killed   kill -9 of one rank makes the job exit with an error within seconds, not hang
#   writing  killed while rank 0 saves last.ckpt at every step, the checkpoint left is whole
#   settings ranks started with different configs are stopped at the start, with an error
#   corpus   a rank that cannot read its corpus ends the job with its error, within seconds
# The single process is the same MPI build run as one rank (the path the default build runs:
# with one rank no MPI call is made). Needs Open MPI: installs it with apt-get when run as
# root, otherwise prints the command and reports SKIPPED. Leaves an MPI build in bin/.
# run.sh --install: the install alone (.ci/run does it ahead, while other stages run).
set -u
cd "$(dirname "$0")/../.."

pass=0 fail=0
ok() { echo "  ok    $*"; pass=$((pass + 1)); }
bad() { echo "  FAIL  $*"; fail=$((fail + 1)); }

# install_mpi: Open MPI when it is missing (0: there or installed now; 1: the install failed;
# 2: it cannot be installed here)
install_mpi() {
    command -v mpicc >/dev/null && command -v mpirun >/dev/null && return 0
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 2
    echo "test-mpi: installing Open MPI (apt-get install libopenmpi-dev openmpi-bin)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        libopenmpi-dev openmpi-bin >/dev/null || { echo "test-mpi: apt-get failed"; return 1; }
}
case "${1-}" in
--install) install_mpi; [ $? = 1 ] && exit 1; exit 0 ;;
"") ;;
*) echo "test-mpi: unknown argument: $1 (none, or --install)"; exit 2 ;;
esac
install_mpi
case $? in
1) exit 1 ;;
2)
    echo "test-mpi: SKIPPED: Open MPI is not installed; install it with:"
    echo "    sudo apt-get install -y libopenmpi-dev openmpi-bin"
    echo "test-mpi: 0 passed, 0 failed, 18 skipped"
    exit 0
    ;;
esac

# Open MPI refuses root unless told; 2 ranks on a machine with fewer cores need
# --oversubscribe; --bind-to none lets each rank's thread go to any core.
MPIRUN=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
export OMP_NUM_THREADS=1

work=$(mktemp -d /tmp/nmt-mpi-XXXXXX)
trap 'rm -rf "$work"' EXIT
data=$PWD/data/toy
# batch 33 splits 17 + 16 sentences, so the ranks' token counts differ; dropout 0 makes one
# process and two ranks the same computation (with dropout they agree in distribution only)
cat >"$work/cfg.ini" <<EOF
[data]
train = $data/train.tsv
dev = $data/dev.tsv
[model]
emb_size = 32
enc_hidden = 32
dec_hidden = 32
att_size = 32
readout_size = 32
[train]
batch_size = 33
epochs = 0
dropout = 0
label_smoothing = 0.1
threads = 1
log_every = 1
EOF

# train NP OUT STEPS [extra args]: a run to completion
train() {
    local np=$1 out=$2 steps=$3
    shift 3
    timeout 300 "${MPIRUN[@]}" -np "$np" bin/train "$work/cfg.ini" --set train.out_dir="$out" \
        --set train.max_steps="$steps" --set train.valid_every=10 "$@" >"$out.log" 2>&1
}

# the step of the newest line of a run's log (0 before the first)
last_step() { tail -n 1 "$1/train_log.tsv" 2>/dev/null | cut -f 1 | grep -E '^[0-9]+$' || echo 0; }

# waits (at most 60 s) until a run started in the background has logged step $2
wait_for_step() {
    for _ in $(seq 600); do
        [ "$(last_step "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# finish PID SECONDS: waits for a background mpirun to exit and sets $status; one still running
# after SECONDS is killed with its ranks (status 999: it hung)
finish() {
    for _ in $(seq $(($2 * 10))); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
        for rank in $(pgrep -P "$1"); do kill -KILL "$rank"; done
        kill -KILL "$1"
        wait "$1"
        status=999
    else
        wait "$1"
        status=$?
    fi
}

# The tolerances: the ranks sum the gradients in another order, which changes their last bits,
# and 20 Adam steps magnify that; in float, kernels of another instruction set (NMT_ISA) do
# the same. Measured on the toy config in float: 3e-6 to 1.1e-5 for either, against 1e-2 for
# one step fewer; in double: 2e-14. So 1e-4 and 1e-12, each far below a step.
for real in float double; do
    tol=1e-4
    [ $real = double ] && tol=1e-12
    echo "== MPI, $real (make MPI=1 REAL=$real), tolerance $tol =="
    make -s -j2 MPI=1 REAL=$real bin/train bin/ckpt_diff || { bad "$real: build"; continue; }
    dir=$work/$real
    mkdir -p "$dir"
    if bin/train --help | grep -q '^MPI: built in'; then
        ok "$real: bin/train --help says MPI is built in"
    else
        bad "$real: bin/train --help does not say MPI is built in"
    fi

    # exact: 20 steps, a validation (broadcast of rank 0's decisions) at step 10
    if train 1 "$dir/one" 20 && train 2 "$dir/two" 20 && train 1 "$dir/short" 19; then
        if bin/ckpt_diff "$dir/two/last.ckpt" "$dir/one/last.ckpt" $tol; then
            ok "$real: 20 steps on 2 ranks = 20 steps in one process"
        else
            bad "$real: 2 ranks and one process differ"
        fi
        if bin/ckpt_diff "$dir/short/last.ckpt" "$dir/one/last.ckpt" $tol >/dev/null; then
            bad "$real: 19 steps pass for 20: the comparison cannot fail"
        else
            ok "$real: 19 steps do not pass for 20"
        fi
    else
        bad "$real: training failed (see below)"
        tail -n 5 "$dir/one.log" "$dir/two.log"
    fi

    # resume: SIGINT after step 3 of $resume_steps to mpirun and its ranks at once, as Ctrl-C
    # in a terminal sends it to the whole foreground group (mpirun alone passes it on a second
    # or two later, when an idle machine may have finished all the steps); resumed by one
    # process to the last step. Enough steps that the float run (~200 steps a second here) is
    # still training when the signal comes: 150 were once finished before it.
    resume_steps=600
    "${MPIRUN[@]}" -np 2 bin/train "$work/cfg.ini" --set train.out_dir="$dir/int" \
        --set train.max_steps=$resume_steps --set train.valid_every=1000 >"$dir/int.log" 2>&1 &
    pid=$!
    wait_for_step "$dir/int" 3
    kill -INT $pid $(pgrep -P $pid)
    finish $pid 60
    saved=$(grep -c "interrupted by signal" "$dir/int.log")
    at=$(sed -n 's/.*interrupted by signal [0-9]* at step \([0-9]*\).*/\1/p' "$dir/int.log")
    train 1 "$dir/full" $resume_steps --set train.valid_every=1000 ||
        bad "$real: single-process run"
    if [ "$saved" = 1 ] && [ -n "$at" ] && [ "$at" -lt $resume_steps ] && [ $status -ne 0 ] &&
        train 1 "$dir/int" $resume_steps --resume --set train.valid_every=1000 &&
        bin/ckpt_diff "$dir/int/last.ckpt" "$dir/full/last.ckpt" $tol; then
        ok "$real: interrupted at step $at on 2 ranks (exit $status), resumed in one process"
    else
        bad "$real: interrupt and resume (saved $saved time(s), step '$at', exit $status)"
        tail -n 5 "$dir/int.log"
    fi

    # and the other way round: 30 steps in one process, resumed on 2 ranks to the last step
    if train 1 "$dir/back" 30 --set train.valid_every=1000 &&
        train 2 "$dir/back" $resume_steps --resume --set train.valid_every=1000 &&
        bin/ckpt_diff "$dir/back/last.ckpt" "$dir/full/last.ckpt" $tol; then
        ok "$real: 30 steps in one process, resumed on 2 ranks to step $resume_steps"
    else
        bad "$real: a single-process checkpoint resumed on 2 ranks"
        tail -n 5 "$dir/back.log"
    fi

    # killed: kill -9 of one rank; the job must end with an error, within seconds
    "${MPIRUN[@]}" -np 2 bin/train "$work/cfg.ini" --set train.out_dir="$dir/kill" \
        --set train.max_steps=100000 --set train.valid_every=100000 >"$dir/kill.log" 2>&1 &
    pid=$!
    wait_for_step "$dir/kill" 3
    victim=$(pgrep -P $pid | tail -n 1)
    start=$(date +%s)
    [ -n "$victim" ] && kill -KILL "$victim"
    # 30 s is far more than an abort needs; a hang is ended there
    finish $pid 30
    took=$(($(date +%s) - start))
    if [ $status = 999 ]; then
        bad "$real: still running 30 s after a rank was killed"
    elif [ -n "$victim" ] && [ $status -ne 0 ]; then
        ok "$real: a rank killed with -9: the job exited with status $status after ${took}s"
    else
        bad "$real: killed rank '$victim': exit status $status"
        tail -n 5 "$dir/kill.log"
    fi

    # writing: killed (mpirun and its ranks, -9) while rank 0 saves last.ckpt at every step;
    # the checkpoint left is whole
    "${MPIRUN[@]}" -np 2 bin/train "$work/cfg.ini" --set train.out_dir="$dir/write" \
        --set train.max_steps=100000 --set train.valid_every=1 >"$dir/write.log" 2>&1 &
    pid=$!
    wait_for_step "$dir/write" 5
    kill -KILL $pid $(pgrep -P $pid)
    finish $pid 30
    # ckpt_diff loads both files (every field and the checksum checked)
    if [ -f "$dir/write/last.ckpt" ] &&
        bin/ckpt_diff "$dir/write/last.ckpt" "$dir/write/last.ckpt" 0 >/dev/null; then
        ok "$real: killed while saving at every step: last.ckpt is whole"
    else
        bad "$real: killed while saving: last.ckpt is damaged or missing"
        tail -n 3 "$dir/write.log"
    fi

    # settings: ranks started with different configs are stopped at the start, with an error
    "${MPIRUN[@]}" -np 1 bin/train "$work/cfg.ini" --set train.out_dir="$dir/cfgs" --set train.max_steps=20 : \
        -np 1 bin/train "$work/cfg.ini" --set train.out_dir="$dir/cfgs" --set train.max_steps=20 --set optim.lr=0.5 \
        >"$dir/cfgs.log" 2>&1 &
    finish $! 60
    if [ $status != 999 ] && [ $status -ne 0 ] && grep -q 'different settings' "$dir/cfgs.log"; then
        ok "$real: ranks with different settings: stopped at the start (status $status)"
    else
        bad "$real: ranks with different settings: status $status"
        tail -n 5 "$dir/cfgs.log"
    fi

    # corpus: a rank that cannot read its corpus ends the job with its error, within seconds
    "${MPIRUN[@]}" -np 1 bin/train "$work/cfg.ini" --set train.out_dir="$dir/nodata" --set train.max_steps=20 : \
        -np 1 bin/train "$work/cfg.ini" --set train.out_dir="$dir/nodata" --set train.max_steps=20 \
        --set data.train="$dir/missing.tsv" >"$dir/nodata.log" 2>&1 &
    finish $! 60
    if [ $status != 999 ] && [ $status -ne 0 ] && grep -q 'missing.tsv' "$dir/nodata.log"; then
        ok "$real: a rank without its corpus: the job exited with status $status, naming the file"
    else
        bad "$real: a rank without its corpus: status $status"
        tail -n 5 "$dir/nodata.log"
    fi
done

echo "test-mpi: $pass passed, $fail failed"
[ $fail = 0 ]
