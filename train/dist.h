/*
 * dist.h: synchronous data-parallel training across processes (MPI ranks).
 *
 * Every rank holds the whole model and runs the same steps on the same batches (the same
 * EpochPlan); each computes the loss and gradients of its share of every batch's sentences
 * (every size-th one), the gradients are summed across ranks, and every rank applies the same Adam
 * step. Rank 0 alone validates, logs, prints and saves. Built with `make MPI=1` (-DNMT_MPI)
 * this talks to MPI; otherwise it is a one-process stand-in (size 1) with no MPI in it, so
 * the trainer has one code path. It holds no state of its own beyond what MPI holds.
 */
#ifndef NMT_TRAIN_DIST_H
#define NMT_TRAIN_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"
#include "base/rng.h"

typedef struct {
    int rank;        /* this process, 0 .. size-1; rank 0 validates, logs and saves */
    int size;        /* processes training together; 1 without MPI */
    bool mpi_active; /* MPI was initialised here and must be finalised */
} Dist;

/* One line for --help into buf: whether MPI is built in, and which library. */
void dist_build_info(char *buf, size_t size);

/* Initialises MPI (when built in) and fills d. Errors on a dead peer are fatal to the whole
 * job (MPI_ERRORS_ARE_FATAL), so a rank never waits forever for one that has gone. */
int dist_init(Dist *d, int *argc, char ***argv, Error *err);

/* Finalises MPI. After a failure on this rank (failed) with other ranks running, aborts the
 * job instead: the others may be waiting in a collective this rank will never join. */
void dist_finalize(Dist *d, bool failed);

/* This rank's share of a batch of n pairs (their indices in pairs[]): every size-th one from
 * pairs[rank] on, in order, written to share[] (room for n / size + 1); returns how many
 * (differing by at most one between ranks; none when n <= rank). A batch goes longest target
 * first, so each rank gets long and short sentences alike, still longest first. */
size_t dist_share(const Dist *d, const size_t *pairs, size_t n, size_t *share);

/* The dropout stream of this rank for one step: with one rank, shared itself (the masks a
 * single process draws); with several, a stream split off shared for (step, rank), so ranks
 * draw independent masks and shared advances the same on every rank. */
Rng *dist_dropout_stream(const Dist *d, Rng *shared, Rng *local);

/* Why training stops after a step: the signal a rank has seen (0: none), and whether its
 * time budget ([train] max_minutes) is spent (0 or 1). */
enum { STOP_SIGNAL, STOP_TIME, STOP_REASONS };

/* Combines one step across ranks. In: this rank's mean loss over its n_tokens target tokens
 * and grads[0..n) = the gradient of that mean (the model normalises by its own tokens), and
 * this rank's stop reasons and share of the training budget spent. Out: the global mean loss
 * and token count, grads = the gradient of the global mean loss (each rank's scaled by
 * n_rank / n_global, then summed), identical on every rank, and each stop reason and the budget
 * share the largest any rank has, so all ranks agree on stopping and on the learning rate.
 * With one rank nothing changes. */
int dist_reduce_step(const Dist *d, real *grads, size_t n, double *loss, long *n_tokens,
                     int stop[STOP_REASONS], double *budget_used, Error *err);

/* Copies x[0..n) from rank 0 to every rank. */
int dist_broadcast(const Dist *d, double *x, int n, Error *err);

/* Sets *same when every rank holds bit-identical x[0..n) (compares a 64-bit hash). */
int dist_identical(const Dist *d, const real *x, size_t n, bool *same, Error *err);

#endif
