/*
 * dist.c: data-parallel training across MPI ranks (see dist.h).
 *
 * Two implementations behind one interface: with -DNMT_MPI the calls below talk to MPI over
 * MPI_COMM_WORLD; without it, size is 1 and every call leaves its data as it is, so a default
 * build has no MPI in it at all. Only the trainer's main thread calls MPI (FUNNELED): OpenMP
 * threads work inside a rank's forward and backward passes, never across ranks.
 */
#include "train/dist.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef NMT_MPI
#include <mpi.h>
#endif

size_t dist_share(const Dist *d, const size_t *pairs, size_t n, size_t *share) {
    size_t count = 0;
    for (size_t i = (size_t)d->rank; i < n; i += (size_t)d->size) share[count++] = pairs[i];
    return count;
}

Rng *dist_dropout_stream(const Dist *d, Rng *shared, Rng *local) {
    if (d->size == 1) return shared;
    /* one draw per step on every rank keeps shared in step everywhere, so a checkpoint (which
     * saves rank 0's) resumes the same streams on the same number of ranks */
    rng_seed(local, rng_next(shared), 16 + (uint64_t)d->rank);
    return local;
}

#ifdef NMT_MPI

#if defined(REAL_DOUBLE)
#define MPI_REAL_TYPE MPI_DOUBLE
#else
#define MPI_REAL_TYPE MPI_FLOAT
#endif

/* FNV-1a over 8-byte words of x: cheap enough to run over the parameters at each validation,
 * and any differing bit changes it. */
static uint64_t hash_reals(const real *x, size_t n) {
    const unsigned char *p = (const unsigned char *)x;
    size_t bytes = n * sizeof *x;
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3u;
    }
    for (size_t i = bytes / 8 * 8; i < bytes; i++) h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

static int mpi_failed(int rc, const char *what, Error *err) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return error_set(err, "%s: %s", what, msg);
}

void dist_build_info(char *buf, size_t size) {
    /* MPI_Get_library_version may be called before MPI_Init; keep its first clause
     * ("Open MPI v4.1.4") */
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "unknown version";
    int len = 0;
    if (MPI_Get_library_version(version, &len) == MPI_SUCCESS)
        version[strcspn(version, ",\n")] = '\0';
    snprintf(buf, size, "MPI: built in (%s): mpirun -np N bin/train CONFIG trains on N ranks",
             version);
}

int dist_init(Dist *d, int *argc, char ***argv, Error *err) {
    *d = (Dist){.rank = 0, .size = 1};
    int provided = 0, rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Init_thread", err);
    d->mpi_active = true;
    if (provided < MPI_THREAD_FUNNELED)
        return error_set(err, "the MPI library does not allow OpenMP threads beside MPI calls");
    /* the default already, made explicit: a collective with a dead peer aborts the job rather
     * than returning an error some rank might not check, or waiting forever */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    return 0;
}

void dist_finalize(Dist *d, bool failed) {
    if (!d->mpi_active) return;
    if (failed && d->size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
    d->mpi_active = false;
}

/* In-place sum of x[0..n) over ranks, in chunks that fit MPI's int counts. */
static int sum_reals(real *x, size_t n, Error *err) {
    const size_t chunk = (size_t)1 << 28;
    for (size_t i = 0; i < n; i += chunk) {
        int count = (int)(n - i < chunk ? n - i : chunk);
        int rc = MPI_Allreduce(MPI_IN_PLACE, x + i, count, MPI_REAL_TYPE, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Allreduce of the gradients", err);
    }
    return 0;
}

int dist_reduce_step(const Dist *d, real *grads, size_t n, double *loss, long *n_tokens,
                     int stop[STOP_REASONS], double *budget_used, Error *err) {
    if (d->size == 1) return 0;
    /* token counts are exact in a double (far below 2^53) */
    double totals[2] = {*loss * (double)*n_tokens, (double)*n_tokens};
    int rc = MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(MPI_IN_PLACE, stop, STOP_REASONS, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) /* the ranks' clocks differ a little: the first to run out counts */
        rc = MPI_Allreduce(MPI_IN_PLACE, budget_used, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Allreduce of the step's loss", err);
    if (totals[1] <= 0) return error_set(err, "a batch with no target token on any rank");
    /* this rank's gradient is of its own mean, (1/n_rank) sum over its tokens; times
     * n_rank/n_global it is its part of (1/n_global) sum over all tokens, the single-process
     * gradient of the whole batch */
    real scale = (real)((double)*n_tokens / totals[1]);
    for (size_t i = 0; i < n; i++) grads[i] *= scale;
    if (sum_reals(grads, n, err)) return -1;
    *loss = totals[0] / totals[1];
    *n_tokens = (long)totals[1];
    return 0;
}

int dist_broadcast(const Dist *d, double *x, int n, Error *err) {
    if (d->size == 1) return 0;
    int rc = MPI_Bcast(x, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "MPI_Bcast from rank 0", err);
}

int dist_identical(const Dist *d, const real *x, size_t n, bool *same, Error *err) {
    *same = true;
    if (d->size == 1) return 0;
    /* the largest h and the largest ~h are h and ~h only when every rank has the same h */
    uint64_t h = hash_reals(x, n), pair[2] = {h, ~h};
    int rc = MPI_Allreduce(MPI_IN_PLACE, pair, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Allreduce of a parameter hash", err);
    *same = pair[0] == h && pair[1] == ~h;
    return 0;
}

#else /* one process, no MPI */

void dist_build_info(char *buf, size_t size) {
    snprintf(buf, size, "MPI: not built in (make MPI=1 builds data-parallel training)");
}

int dist_init(Dist *d, int *argc, char ***argv, Error *err) {
    (void)argc, (void)argv, (void)err;
    *d = (Dist){.rank = 0, .size = 1};
    return 0;
}

void dist_finalize(Dist *d, bool failed) {
    (void)d, (void)failed;
}

int dist_reduce_step(const Dist *d, real *grads, size_t n, double *loss, long *n_tokens,
                     int stop[STOP_REASONS], double *budget_used, Error *err) {
    (void)d, (void)grads, (void)n, (void)loss, (void)n_tokens, (void)stop, (void)budget_used;
    (void)err;
    return 0;
}

int dist_broadcast(const Dist *d, double *x, int n, Error *err) {
    (void)d, (void)x, (void)n, (void)err;
    return 0;
}

int dist_identical(const Dist *d, const real *x, size_t n, bool *same, Error *err) {
    (void)d, (void)x, (void)n, (void)err;
    *same = true;
    return 0;
}

#endif
