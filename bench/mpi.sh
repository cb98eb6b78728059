#!/usr/bin/env bash
# mpi.sh: training throughput of 1 rank x 2 threads against 2 ranks x 1 thread (a benchmark,
# not a test: figures only).
#
# usage: make MPI=1 && bash bench/mpi.sh [ROUNDS]     (default 3 rounds; prints each and the
# median). Trains bin/train for a fixed number of steps on random-token corpora with the toy
# and medium sizes of bench/bench.c (Vs=Vt, E, H bi, D, A, O, B, sentence length) and reads
# tok/s (target tokens per second since the start of training, as the log reports it) from the
# log line of the last step, for 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread.
# The one-rank runs are unbound (--bind-to none) so their two
# threads may use both cores; two ranks keep Open MPI's default of one core each.
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-3}
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
work=$(mktemp -d /tmp/nmt-mpibench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# corpus NAME WORDS LENGTH PAIRS: random sentences of LENGTH words drawn from WORDS per side
corpus() {
    for split in train dev; do
        local n=$4
        [ $split = dev ] && n=20
        awk -v V="$2" -v L="$3" -v N="$n" -v seed="$split$1" 'BEGIN {
            srand(length(seed) * 7919 + N)
            for (i = 0; i < N; i++) {
                s = ""; t = ""
                for (j = 0; j < L; j++) {
                    s = s (j ? " " : "") "s" int(rand() * V)
                    t = t (j ? " " : "") "t" int(rand() * V)
                }
                print s "\t" t
            }
        }' >"$work/$1.$split.tsv"
    done
}

# config NAME VOCAB E H D A O B STEPS
config() {
    cat >"$work/$1.ini" <<EOF
[data]
train = $1.train.tsv
dev = $1.dev.tsv
src_vocab_size = $2
tgt_vocab_size = $2
[model]
emb_size = $3
enc_hidden = $4
dec_hidden = $5
att_size = $6
readout_size = $7
[train]
batch_size = $8
epochs = 0
max_steps = $9
dropout = 0
valid_every = 100000
log_every = $9
patience = 0
EOF
}

corpus toy 996 11 4000
config toy 1000 64 128 128 128 128 32 100
corpus medium 7996 29 3000
config medium 8000 256 256 512 256 256 64 12

# run NAME RANKS THREADS: prints the tok/s of one run
run() {
    local bind=()
    [ "$2" = 1 ] && bind=(--bind-to none)
    OMP_NUM_THREADS=$3 "${MPIRUN[@]}" "${bind[@]}" -np "$2" bin/train "$work/$1.ini" \
        --set train.threads="$3" --set train.out_dir="$work/out-$1-$2x$3" --overwrite >"$work/log" 2>&1 ||
        { cat "$work/log" >&2; exit 1; }
    local steps
    steps=$(sed -n 's/^max_steps = //p' "$work/$1.ini")
    awk -F '\t' -v s="$steps" '$1 == s && $5 == "" { print $9 }' "$work/out-$1-$2x$3/train_log.tsv"
}

median() { tr ' ' '\n' | sort -g | awk '{ x[NR] = $1 } END { print (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2 }'; }

# The rounds take turns (every layout once per round), so a spell of load from other work on
# the machine falls on all layouts alike rather than on one.
layouts=("1 1" "1 2" "2 1")
for name in toy medium; do
    declare -A figures=()
    for _ in $(seq "$rounds"); do
        for layout in "${layouts[@]}"; do
            set -- $layout
            figures[$layout]="${figures[$layout]:-} $(run $name "$1" "$2")"
        done
    done
    for layout in "${layouts[@]}"; do
        set -- $layout
        printf '%-6s %s rank(s) x %s thread(s): tok/s%s  median %s\n' $name "$1" "$2" \
            "${figures[$layout]}" "$(echo ${figures[$layout]} | median)"
    done
    unset figures
done
