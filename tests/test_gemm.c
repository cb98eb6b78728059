/*
 * test_gemm.c: gemm against a naive reference that accumulates in double, for many shapes
 * (1..300 in each dimension, primes, sizes around the kernels' tile and block sizes), all four
 * transpose combinations, sub-blocks of larger matrices (lda/ldb/ldc above the row length),
 * beta 0 over a C full of NaN, and beta 1; then that results are bit-identical for 1, 2 and 3
 * threads and run to run, and that a row of C does not depend on how many other rows are
 * computed with it (except in the dot-product path for B transposed and few rows, which must
 * then match the rows computed one at a time).
 *
 * Every operand lives inside a larger allocation whose unused parts hold NaN (A, B: any read
 * outside op(A), op(B) poisons the result) or a sentinel (C: any write outside the M x N block
 * is caught).
 *
 * The tolerance is a forward error bound for a sum of K products: each element may differ
 * from the exact value by (K + 2) * eps * (sum_k |a_ik b_kj| + |c_ij|), eps the unit roundoff
 * of `real`. A wrong index or a lost term is off by the size of a whole term, far above that.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cpu.h"
#include "model/fastmath.h"
#include "model/gemm.h"
#include "model/qgemm.h"
#include "tests/harness.h"
#include "tests/suites.h"

#define EPS      (sizeof(real) == 8 ? 0x1p-53 : 0x1p-24)
#define SENTINEL ((real)12345.0)

typedef struct {
    uint64_t s;
} TestRng;

static double rnd(TestRng *r) { /* uniform in [-1, 1) */
    r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
    return (double)(r->s >> 11) * 0x1p-52 - 1;
}

/* A rows x cols matrix at stride ld inside a buffer whose padding holds `pad`. */
typedef struct {
    real *data;
    int rows, cols, ld;
} Mat;

static Mat mat_new(int rows, int cols, int ld, real pad, TestRng *r) {
    Mat m = {malloc(sizeof(real) * ((size_t)rows * ld + 1)), rows, cols, ld};
    ck_assert_ptr_nonnull(m.data);
    for (size_t i = 0; i < (size_t)rows * ld + 1; i++) m.data[i] = pad;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) m.data[(size_t)i * ld + j] = (real)rnd(r);
    return m;
}

static Mat mat_copy(const Mat *m) {
    Mat c = *m;
    size_t n = (size_t)m->rows * m->ld + 1;
    c.data = malloc(sizeof(real) * n);
    ck_assert_ptr_nonnull(c.data);
    memcpy(c.data, m->data, sizeof(real) * n);
    return c;
}

/* One product: shape, transposes, how much padding each stride adds, beta. */
typedef struct {
    int M, N, K, ta, tb, pad_a, pad_b, pad_c;
    real beta;
} Case;

typedef struct {
    Mat A, B, C;
} Operands;

static Operands operands_new(const Case *t, TestRng *r) {
    Operands o;
    /* A is stored [M,K], or [K,M] when transposed; likewise B [K,N] or [N,K] */
    int ar = t->ta ? t->K : t->M, ac = t->ta ? t->M : t->K;
    int br = t->tb ? t->N : t->K, bc = t->tb ? t->K : t->N;
    o.A = mat_new(ar, ac, ac + t->pad_a, (real)NAN, r);
    o.B = mat_new(br, bc, bc + t->pad_b, (real)NAN, r);
    o.C = mat_new(t->M, t->N, t->N + t->pad_c, SENTINEL, r);
    if (t->beta == 0) /* garbage that must be ignored */
        for (int i = 0; i < t->M; i++)
            for (int j = 0; j < t->N; j++) o.C.data[(size_t)i * o.C.ld + j] = (real)NAN;
    return o;
}

static void operands_free(Operands *o) {
    free(o->A.data), free(o->B.data), free(o->C.data);
}

static void run(const Case *t, Operands *o) {
    gemm(t->ta, t->tb, t->M, t->N, t->K, o->A.data, o->A.ld, o->B.data, o->B.ld, t->beta, o->C.data,
         o->C.ld);
}

static double elem_a(const Case *t, const Mat *A, int i, int k) {
    return t->ta ? A->data[(size_t)k * A->ld + i] : A->data[(size_t)i * A->ld + k];
}
static double elem_b(const Case *t, const Mat *B, int k, int j) {
    return t->tb ? B->data[(size_t)j * B->ld + k] : B->data[(size_t)k * B->ld + j];
}

/* Runs the case and compares every element with the double reference; checks the padding of C
 * is untouched. */
static void check_case(const Case *t, unsigned seed) {
    TestRng r = {0x9E3779B97F4A7C15ull ^ seed};
    Operands o = operands_new(t, &r);
    Mat c0 = mat_copy(&o.C);
    run(t, &o);
    for (int i = 0; i < t->M; i++) {
        for (int j = 0; j < t->N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < t->K; k++) {
                double p = elem_a(t, &o.A, i, k) * elem_b(t, &o.B, k, j);
                ref += p, mag += fabs(p);
            }
            if (t->beta != 0) {
                double c = c0.data[(size_t)i * c0.ld + j];
                ref += c, mag += fabs(c);
            }
            double got = o.C.data[(size_t)i * o.C.ld + j];
            EXPECT_MSG(fabs(got - ref) <= (t->K + 2) * EPS * mag,
                       "M=%d N=%d K=%d ta=%d tb=%d beta=%g pads=%d,%d,%d: C[%d][%d] = %.9g, "
                       "expected %.9g",
                       t->M, t->N, t->K, t->ta, t->tb, (double)t->beta, t->pad_a, t->pad_b,
                       t->pad_c, i, j, got, ref);
        }
        for (int j = t->N; j < o.C.ld; j++)
            EXPECT_MSG(o.C.data[(size_t)i * o.C.ld + j] == SENTINEL,
                       "M=%d N=%d K=%d ta=%d tb=%d: wrote outside C at [%d][%d]", t->M, t->N, t->K,
                       t->ta, t->tb, i, j);
    }
    ck_assert(o.C.data[(size_t)t->M * o.C.ld] == SENTINEL);
    free(c0.data);
    operands_free(&o);
}

/* Sizes around the tiles (4, 6, 8, 16, 32), the K block (256) and primes. */
static const int dims[] = {1,  2,  3,  4,  5,  7,   8,   9,   13,  16,  17,  31,  32, 33,
                           47, 63, 64, 65, 97, 127, 128, 129, 191, 255, 256, 257, 300};
#define NDIMS ((int)(sizeof dims / sizeof dims[0]))

START_TEST(gemm_small_shapes_all_modes) {
    /* every M, N, K in 1..9 and every transpose combination, beta 0 and 1 */
    unsigned seed = 1;
    for (int mode = 0; mode < 4; mode++)
        for (int M = 1; M <= 9; M++)
            for (int N = 1; N <= 9; N++)
                for (int K = 1; K <= 9; K++) {
                    Case t = {M, N, K, mode >> 1, mode & 1, 0, 0, 0, (real)((M + N + K) & 1)};
                    check_case(&t, seed++);
                }
}
END_TEST

START_TEST(gemm_many_shapes_all_modes) {
    /* pseudo-random picks from `dims` (every one appears), bounded total size */
    TestRng r = {12345};
    unsigned seed = 1000;
    for (int mode = 0; mode < 4; mode++)
        for (int n = 0; n < 120; n++) {
            int M = dims[n % NDIMS], N, K;
            do {
                N = dims[(int)((rnd(&r) + 1) / 2 * NDIMS)];
                K = dims[(int)((rnd(&r) + 1) / 2 * NDIMS)];
            } while ((long)M * N * K > 4000000);
            Case t = {M, N, K, mode >> 1, mode & 1, 0, 0, 0, (real)(n & 1)};
            check_case(&t, seed++);
        }
}
END_TEST

/* check_case for each shape in all four modes, beta 0 and 1, with the given stride padding. */
static void check_shapes(const int shapes[][3], size_t count, int pad_a, int pad_b, int pad_c,
                         unsigned seed) {
    for (size_t s = 0; s < count; s++)
        for (int mode = 0; mode < 4; mode++)
            for (int beta = 0; beta <= 1; beta++) {
                Case t = {shapes[s][0], shapes[s][1], shapes[s][2], mode >> 1, mode & 1,
                          pad_a,        pad_b,        pad_c,        (real)beta};
                check_case(&t, seed++);
            }
}

START_TEST(gemm_sub_blocks) {
    /* strides larger than the rows, NaN around A and B, a sentinel around C */
    static const int shapes[][3] = {{1, 1, 1},     {1, 37, 19},   {37, 1, 19},   {5, 7, 300},
                                    {33, 65, 17},  {64, 300, 64}, {130, 70, 40}, {300, 33, 129},
                                    {2, 257, 260}, {257, 2, 3}};
    check_shapes(shapes, sizeof shapes / sizeof shapes[0], 3, 17, 5, 5000);
}
END_TEST

START_TEST(gemm_edge_cases) {
    unsigned seed = 7000;
    /* M == 1 (matrix-vector, incl. a strided x when A is transposed), N == 1 (strided y),
     * K == 1, and long K */
    static const int shapes[][3] = {{1, 1, 300},    {1, 300, 1},    {300, 1, 1},  {1, 300, 300},
                                    {300, 1, 300},  {1, 2, 2},      {2, 1, 2},    {2, 2, 1},
                                    {1, 129, 2500}, {129, 1, 2500}, {3, 5, 2500}, {40, 40, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int mode = 0; mode < 4; mode++)
            for (int beta = 0; beta <= 1; beta++)
                for (int pad = 0; pad <= 7; pad += 7) {
                    Case t = {shapes[s][0], shapes[s][1], shapes[s][2], mode >> 1, mode & 1,
                              pad,          pad,          pad,          (real)beta};
                    check_case(&t, seed++);
                }
    /* K == 0: C = beta C */
    for (int beta = 0; beta <= 1; beta++) {
        real c[6] = {1, 2, 3, 4, 5, 6}, a[1] = {0}, b[1] = {0};
        gemm(0, 0, 2, 3, 0, a, 1, b, 3, (real)beta, c, 3);
        for (int i = 0; i < 6; i++) ck_assert(c[i] == (beta ? (real)(i + 1) : 0));
    }
}
END_TEST

/* Shapes big enough to use several threads, through every path: M == 1, N == 1, few rows
 * (B in place or C^T), and the blocked product with K over several blocks; the last two are
 * long enough that two threads claim runs of them as they go (columns, then rows). */
static const int big_shapes[][3] = {{1, 3000, 700},   {3000, 1, 700}, {3, 1000, 900},
                                    {40, 1000, 300},  {64, 333, 513}, {203, 310, 280},
                                    {150, 1100, 300}, {700, 90, 520}, {5, 700, 2100},
                                    {130, 6200, 9},   {770, 8, 260}};

START_TEST(gemm_thread_count_does_not_change_bits) {
    int saved = omp_get_max_threads();
    unsigned seed = 9000;
    for (size_t s = 0; s < sizeof big_shapes / sizeof big_shapes[0]; s++)
        for (int mode = 0; mode < 4; mode++)
            for (int beta = 0; beta <= 1; beta++) {
                Case t = {big_shapes[s][0],
                          big_shapes[s][1],
                          big_shapes[s][2],
                          mode >> 1,
                          mode & 1,
                          1,
                          0,
                          2,
                          (real)beta};
                TestRng r = {seed++};
                Operands o = operands_new(&t, &r);
                Mat c0 = mat_copy(&o.C), c1 = mat_copy(&o.C);
                size_t bytes = sizeof(real) * ((size_t)t.M * o.C.ld + 1);
                for (int threads = 1; threads <= 3; threads++) {
                    memcpy(o.C.data, c0.data, bytes);
                    omp_set_num_threads(threads);
                    run(&t, &o);
                    if (threads == 1)
                        memcpy(c1.data, o.C.data, bytes);
                    else
                        ck_assert_msg(memcmp(c1.data, o.C.data, bytes) == 0,
                                      "M=%d N=%d K=%d ta=%d tb=%d beta=%d: %d threads differ "
                                      "from 1",
                                      t.M, t.N, t.K, t.ta, t.tb, beta, threads);
                }
                /* and again, same bits run to run */
                memcpy(o.C.data, c0.data, bytes);
                run(&t, &o);
                ck_assert(memcmp(c1.data, o.C.data, bytes) == 0);
                free(c0.data), free(c1.data);
                operands_free(&o);
            }
    omp_set_num_threads(saved);
}
END_TEST

START_TEST(gemm_claimed_runs_match_reference) {
    /* Long sides that two threads share out in claimed runs rather than fixed halves (as the
     * output layer's products are): a product of one K block with many columns, and a k-inside
     * product with many rows. Every element against the reference, every mode, beta 0 and 1. */
    static const int shapes[][3] = {{130, 6200, 9}, {770, 8, 260}};
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    check_shapes(shapes, sizeof shapes / sizeof shapes[0], 3, 0, 1, 10000);
    omp_set_num_threads(saved);
}
END_TEST

/* gemm of rows [i0, i0 + m) of op(A) alone, into a fresh [m, N] matrix. */
static real *rows_alone(const Case *t, const Operands *o, int i0, int m) {
    /* shift the start of op(A): a row of A, or a column when A is transposed */
    const real *a = t->ta ? o->A.data + i0 : o->A.data + (size_t)i0 * o->A.ld;
    real *c = malloc(sizeof(real) * (size_t)m * t->N);
    ck_assert_ptr_nonnull(c);
    gemm(t->ta, t->tb, m, t->N, t->K, a, o->A.ld, o->B.data, o->B.ld, 0, c, t->N);
    return c;
}

static int same_rows(const real *c, const Mat *big, int i0, int m, int N) {
    for (int i = 0; i < m; i++)
        if (memcmp(c + (size_t)i * N, big->data + (size_t)(i0 + i) * big->ld, sizeof(real) * N))
            return 0;
    return 1;
}

START_TEST(gemm_rows_do_not_depend_on_batch) {
    /* Rows of op(A) multiplied as a smaller batch give the same bits as inside a large product:
     * every path sums each element in the same order. The exception is B transposed with at
     * most 16 rows, which may take dot products along k, summed in vector lanes: such a batch
     * must then match its rows multiplied one at a time (M == 1 always does that). */
    static const int shapes[][3] = {{150, 70, 300}, {300, 40, 1500}, {200, 1100, 64}};
    static const int batches[][2] = {{37, 2}, {40, 5}, {8, 16}, {20, 17}, {64, 33}, {1, 70}};
    unsigned seed = 11000;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int mode = 0; mode < 4; mode++) {
            Case t = {shapes[s][0], shapes[s][1], shapes[s][2], mode >> 1, mode & 1, 0, 0, 0, 0};
            TestRng r = {seed++};
            Operands o = operands_new(&t, &r);
            run(&t, &o);
            /* the same rows one at a time */
            Mat single = mat_copy(&o.C);
            for (int i = 0; i < t.M; i++) {
                real *row = rows_alone(&t, &o, i, 1);
                memcpy(single.data + (size_t)i * single.ld, row, sizeof(real) * t.N);
                free(row);
            }
            for (size_t q = 0; q < sizeof batches / sizeof batches[0]; q++) {
                int i0 = batches[q][0], m = batches[q][1];
                real *c = rows_alone(&t, &o, i0, m);
                int in_big = same_rows(c, &o.C, i0, m, t.N);
                int as_single = same_rows(c, &single, i0, m, t.N);
                ck_assert_msg(in_big || (t.tb && m <= 16 && as_single),
                              "M=%d N=%d K=%d ta=%d tb=%d: rows %d..%d as a batch of %d differ",
                              t.M, t.N, t.K, t.ta, t.tb, i0, i0 + m - 1, m);
                free(c);
            }
            /* from gemm_rows_summed_alike() rows on, a batch matches the large product */
            int alike = gemm_rows_summed_alike();
            real *c = rows_alone(&t, &o, 3, alike);
            ck_assert_msg(same_rows(c, &o.C, 3, alike, t.N),
                          "M=%d N=%d K=%d ta=%d tb=%d: %d rows (gemm_rows_summed_alike) differ",
                          t.M, t.N, t.K, t.ta, t.tb, alike);
            free(c);
            /* with B not transposed even single rows match */
            if (!t.tb)
                ck_assert_msg(same_rows(single.data, &o.C, 0, t.M, t.N),
                              "M=%d N=%d K=%d ta=%d tb=%d: a row alone differs", t.M, t.N, t.K,
                              t.ta, t.tb);
            free(single.data);
            operands_free(&o);
        }
}
END_TEST

START_TEST(gemm_packed_sums_rows_alike) {
    /* A B packed once gives any number of rows the bits they get in a large product (more
     * than gemm_rows_summed_alike() rows), where gemm() dots few rows of a transposed B: row
     * counts on both sides of each path's limits (dot products, in place, one A block), K
     * across blocks, odd N, every mode, beta 0 and 1, packed and not, with the threads there
     * are (two in make test: the larger products share out their rows; one in the emulated
     * runs of this case, which start no thread); the rows after M untouched; and the packing
     * stays inside its size. */
    static const int rows[] = {1, 2, 6, 16, 17, 32, 64, 65, 129, 200};
    static const int nk[][2] = {{48, 513}, {100, 256}, {7, 40}, {257, 70}};
    unsigned seed = 12000;
    for (size_t q = 0; q < sizeof nk / sizeof nk[0]; q++)
        for (int mode = 0; mode < 4; mode++) {
            Case t = {rows[sizeof rows / sizeof rows[0] - 1],
                      nk[q][0],
                      nk[q][1],
                      mode >> 1,
                      mode & 1,
                      1,
                      3,
                      2,
                      0};
            ck_assert_int_gt(t.M, gemm_rows_summed_alike());
            TestRng r = {seed++};
            Operands o = operands_new(&t, &r);
            size_t size = gemm_panels_size(t.K, t.N);
            real *panels = aligned_alloc(64, (sizeof(real) * (size + 16) + 63) / 64 * 64);
            ck_assert_ptr_nonnull(panels);
            for (int g = 0; g < 16; g++) panels[size + g] = SENTINEL;
            GemmPanels packed, plain, unused;
            gemm_pack(&packed, t.tb, t.K, t.N, o.B.data, o.B.ld, t.M, panels);
            gemm_pack(&plain, t.tb, t.K, t.N, o.B.data, o.B.ld, t.M, NULL);
            for (int g = 0; g < 16; g++) ck_assert(panels[size + g] == SENTINEL);
            ck_assert(packed.panels == panels && plain.panels == NULL);
            /* one row of B as stored is always read in place: nothing is packed */
            if (!t.tb) {
                gemm_pack(&unused, t.tb, t.K, t.N, o.B.data, o.B.ld, 1, panels);
                ck_assert(unused.panels == NULL);
            }
            size_t bytes = sizeof(real) * ((size_t)t.M * o.C.ld);
            real *want = malloc(bytes), *got = malloc(bytes), *start = malloc(bytes);
            ck_assert(want && got && start);
            memcpy(start, o.C.data, bytes);
            for (int beta = 0; beta <= 1; beta++) {
                memcpy(want, start, bytes);
                gemm(t.ta, t.tb, t.M, t.N, t.K, o.A.data, o.A.ld, o.B.data, o.B.ld, (real)beta,
                     want, o.C.ld);
                for (size_t m = 0; m < sizeof rows / sizeof rows[0]; m++)
                    for (int which = 0; which < 2; which++) {
                        memcpy(got, start, bytes);
                        gemm_packed(t.ta, rows[m], o.A.data, o.A.ld, which ? &plain : &packed,
                                    (real)beta, got, o.C.ld);
                        size_t done = sizeof(real) * ((size_t)rows[m] * o.C.ld);
                        ck_assert_msg(memcmp(want, got, done) == 0 &&
                                          memcmp(start + done / sizeof(real),
                                                 got + done / sizeof(real), bytes - done) == 0,
                                      "M=%d N=%d K=%d ta=%d tb=%d beta=%d %s: differs from "
                                      "the rows of %d",
                                      rows[m], t.N, t.K, t.ta, t.tb, beta,
                                      which ? "unpacked" : "packed", t.M);
                    }
            }
            free(want), free(got), free(start), free(panels);
            operands_free(&o);
        }
}
END_TEST

/* Each dispatch's choice: the GEMM kernels, the vector loops (exp, tanh, the norm, the gates,
 * Adam: model/fastmath.h) and the int8 kernels. */
typedef struct {
    InstructionSet gemm, vector, int8;
} Choices;

static Choices choices_now(void) {
    return (Choices){gemm_kernels(), vector_kernels(), qgemm_kernels()};
}

/* The kernels chosen are the best this CPU runs within NMT_ISA's cap; under
 * NMT_EXPECT_KERNELS (make test-cpus and make test-arm64 set it for each emulated CPU) they are
 * the ones named. On ARM64 the GEMM kernels are NEON's on every CPU (unless NMT_ISA=portable),
 * and the vector loops have their portable variant only: NEON is ARM64's baseline, which the
 * compiler vectorises it for (make test-arm64 checks), as it does SSE2 on x86-64. */
START_TEST(gemm_kernels_follow_the_cpu) {
    Choices c = choices_now();
    InstructionSet best_float = cpu_allows(ISA_AVX512) ? ISA_AVX512
                                : cpu_allows(ISA_AVX2) ? ISA_AVX2
                                                       : ISA_PORTABLE;
    InstructionSet best_gemm = cpu_allows(ISA_NEON) ? ISA_NEON : best_float;
#if defined(REAL_DOUBLE)
    best_float = best_gemm = ISA_PORTABLE; /* the double build has the portable code only */
#endif
#if defined(__aarch64__)
    ck_assert(cpu_runs(ISA_NEON));
#endif
    ck_assert_str_eq(isa_name(c.gemm), isa_name(best_gemm));
    ck_assert_str_eq(isa_name(c.vector), isa_name(best_float));
    const char *expect = getenv("NMT_EXPECT_KERNELS");
    if (expect) {
        ck_assert_str_eq(isa_name(c.gemm), expect);
        if (best_float != ISA_PORTABLE) ck_assert_str_eq(isa_name(c.vector), expect);
    }
}
END_TEST

/* Choices under NMT_ISA=cap, made in a child process whose first use of the dispatches
 * follows the setenv (the cap is read once a process). */
static Choices choices_under(const char *cap) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        setenv("NMT_ISA", cap, 1);
        Choices c = choices_now();
        _exit(write(fds[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fds[1]);
    Choices c;
    ck_assert_int_eq(read(fds[0], &c, sizeof c), (ssize_t)sizeof c);
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return c;
}

/* NMT_ISA reaches every dispatch: under each cap every choice is the best set at or below it
 * that the CPU runs. A dispatch that ignored the cap (a target_clones function, a kernel
 * chosen with __builtin_cpu_supports) would pick a higher one on a CPU that has it; make
 * test-cpus also checks that no function in the build is chosen by the loader. */
START_TEST(gemm_isa_cap_reaches_every_dispatch) {
    if (getenv("CK_FORK") && !strcmp(getenv("CK_FORK"), "no")) {
        test_skip("gemm_isa_cap_reaches_every_dispatch", "needs CK_FORK (reads NMT_ISA once)");
        return;
    }
#if defined(__aarch64__)
    const InstructionSet caps[] = {ISA_PORTABLE, ISA_NEON, ISA_DOTPROD, ISA_I8MM};
#else
    const InstructionSet caps[] = {ISA_PORTABLE, ISA_AVX2, ISA_AVX512};
#endif
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        InstructionSet cap = caps[i];
        Choices c = choices_under(isa_name(cap));
        InstructionSet want = ISA_PORTABLE, want_gemm = ISA_PORTABLE, want_int8 = ISA_PORTABLE;
#if defined(__aarch64__) /* NEON products; the vector loops' portable variant is NEON code */
        for (int s = ISA_NEON; s <= (int)cap; s++)
            if (cpu_runs((InstructionSet)s)) want_int8 = (InstructionSet)s;
#if !defined(REAL_DOUBLE)
        want_gemm = cap >= ISA_NEON ? ISA_NEON : ISA_PORTABLE;
#endif
#else
#if !defined(REAL_DOUBLE)
        for (int s = ISA_AVX2; s <= (int)cap; s++)
            if (cpu_runs((InstructionSet)s)) want = want_gemm = (InstructionSet)s;
#endif
        want_int8 = cap >= ISA_AVX2 && cpu_runs(ISA_AVX2) ? ISA_AVX2 : ISA_PORTABLE;
#endif
        ck_assert_msg(c.gemm == want_gemm, "NMT_ISA=%s: the GEMM kernels are %s, not %s",
                      isa_name(cap), isa_name(c.gemm), isa_name(want_gemm));
        ck_assert_msg(c.vector == want, "NMT_ISA=%s: the vector loops are %s, not %s",
                      isa_name(cap), isa_name(c.vector), isa_name(want));
        ck_assert_msg(c.int8 == want_int8, "NMT_ISA=%s: the int8 kernels are %s, not %s",
                      isa_name(cap), isa_name(c.int8), isa_name(want_int8));
    }
}
END_TEST

Suite *gemm_suite(void) {
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gemm_small_shapes_all_modes);
    tcase_add_test(tc, gemm_many_shapes_all_modes);
    tcase_add_test(tc, gemm_sub_blocks);
    tcase_add_test(tc, gemm_edge_cases);
    tcase_add_test(tc, gemm_packed_sums_rows_alike);
    suite_add_tcase(s, tc);
    /* apart from the shapes, which make test-arm64 runs alone for each kernel set
     * (CK_RUN_CASE=gemm): these are the heavy ones under emulation */
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 120);
    tcase_add_test(threads, gemm_thread_count_does_not_change_bits);
    tcase_add_test(threads, gemm_claimed_runs_match_reference);
    tcase_add_test(threads, gemm_rows_do_not_depend_on_batch);
    suite_add_tcase(s, threads);
    /* a case of its own, which make test-cpus runs alone (CK_RUN_CASE=kernels) */
    TCase *kernels = tcase_create("kernels");
    tcase_add_test(kernels, gemm_kernels_follow_the_cpu);
    tcase_add_test(kernels, gemm_isa_cap_reaches_every_dispatch);
    suite_add_tcase(s, kernels);
    return s;
}
