/*
 * explain.c: every step of a force-decoded sentence worked out for a learner (see
 * align_write.h).
 */
#include "nmt/pictures/align_write.h"

#include <math.h>
#include <stdlib.h>

#include "nmt/pictures/markup.h"

/* ---- --explain -------------------------------------------------------------------------- */

enum { EXPLAIN_VALUES = 4 }; /* values shown of each vector and terms of each long sum */

/* One number as the notes write it: three decimals, negatives in parentheses inside a
 * product, and scientific notation when three decimals would hide it. */
static void number(FILE *out, double x, bool in_product) {
    double size = fabs(x);
    const char *format = size != 0 && (size < 0.001 || size >= 1e6) ? "%.3e" : "%.3f";
    if (in_product && x < 0) fputc('(', out);
    fprintf(out, format, x);
    if (in_product && x < 0) fputc(')', out);
}

/* "[0.123, -0.456, 0.789, 0.012, ...]": the first few of n values. */
static void short_vector(FILE *out, const real *v, int n) {
    fputc('[', out);
    for (int j = 0; j < n && j < EXPLAIN_VALUES; j++) {
        if (j) fputs(", ", out);
        number(out, v[j], false);
    }
    fputs(n > EXPLAIN_VALUES ? ", ...]" : "]", out);
}

/* "[x_0, x_1, ...]": all n values. */
static void full_vector(FILE *out, const double *v, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        number(out, v[i], false);
    }
    fputc(']', out);
}

/* "a_0*b_0 + a_1*b_1 + ..." over the first `shown` of n terms. */
static void products(FILE *out, const real *a, const real *b, int stride_b, int n, int shown) {
    for (int j = 0; j < n && j < shown; j++) {
        if (j) fputs(" + ", out);
        number(out, a[j], true);
        fputc('*', out);
        number(out, b[(size_t)j * stride_b], true);
    }
    if (n > shown) fprintf(out, " + ... (%d terms)", n);
}

/* The formula of the score, in the notation of the steps below (q_t = s_{t-1}). */
static const char *score_formula(AttentionScore score) {
    switch (score) {
    case SCORE_DOT:
        return "e_ti = q_t . h_i";
    case SCORE_GENERAL:
        return "e_ti = q_t . (W_a h_i)";
    case SCORE_SCALED_DOT:
        return "e_ti = (W_q q_t) . (W_k h_i) / sqrt(A)";
    default:
        return "e_ti = v^T tanh(W_q q_t + W_k h_i + b)";
    }
}

/* The scores of step t worked out for i = 0 for the dot-product scores: the vectors compared,
 * their products and, for scaled_dot, the scaling; then every i's dot product. */
static void explain_dot_scores(FILE *out, const Alignment *a, const StepTrace *tr, int t) {
    int S = a->cols, F = tr->F, scaled = tr->score == SCORE_SCALED_DOT;
    const real *energy = a->energy + (size_t)(t - 1) * S;
    const real *q = tr->projected + (size_t)(t - 1) * F;
    const char *key = tr->score == SCORE_DOT ? "h_0" : scaled ? "W_k h_0" : "W_a h_0";
    double scale = scaled ? 1 / sqrt((double)tr->A) : 1;
    fprintf(out, "\n  scores   %s (%s); for i = 0 (\"%s\"):\n", score_formula(tr->score),
            score_name(tr->score), a->src_tokens[0]);
    if (scaled) {
        fprintf(out, "             W_q q_%d = ", t);
        short_vector(out, q, F);
        fputc('\n', out);
    }
    fprintf(out, "             %s = ", key);
    short_vector(out, tr->keys, F);
    if (scaled) {
        fprintf(out, "\n             (W_q q_%d) . (W_k h_0) = ", t);
        products(out, q, tr->keys, 1, F, EXPLAIN_VALUES);
        fputs(" = ", out);
        number(out, energy[0] / scale, false);
        fprintf(out, "\n             e_%d0 = that / sqrt(A) = that / sqrt(%d) = that * ", t, tr->A);
        number(out, scale, false);
        fputs(" = ", out);
    } else {
        fprintf(out, "\n             e_%d0 = q_%d . %s = ", t, t,
                tr->score == SCORE_DOT ? "h_0" : "(W_a h_0)");
        products(out, q, tr->keys, 1, F, EXPLAIN_VALUES);
        fputs(" = ", out);
    }
    number(out, energy[0], false);
    if (scaled) {
        fputs("\n           the dot products for every i (before / sqrt(A)):\n           ", out);
        fputc('[', out);
        for (int i = 0; i < S; i++) {
            if (i) fputs(", ", out);
            number(out, energy[i] / scale, false);
        }
        fputc(']', out);
    }
}

/* The scores of step t worked out for i = 0 for the additive score. */
static void explain_additive_scores(FILE *out, const Alignment *a, const StepTrace *tr, int t) {
    int S = a->cols, A = tr->A;
    const real *energy = a->energy + (size_t)(t - 1) * S;
    const real *projected = tr->projected + (size_t)(t - 1) * A;
    const real *hidden0 = tr->hidden + (size_t)(t - 1) * S * A; /* source position i = 0 */
    fprintf(out, "\n  scores   e_%di = v^T tanh(W_q q_%d + W_k h_i + b); for i = 0 (\"%s\"):\n", t,
            t, a->src_tokens[0]);
    fprintf(out, "             W_q q_%d = ", t);
    short_vector(out, projected, A);
    fputs("\n             W_k h_0 + b = ", out);
    short_vector(out, tr->keys, A);
    fprintf(out, "\n             tanh(W_q q_%d + W_k h_0 + b) = ", t);
    short_vector(out, hidden0, A);
    fputs("\n             v = ", out);
    short_vector(out, tr->v, A);
    fprintf(out, "\n             e_%d0 = v . tanh(...) = ", t);
    products(out, tr->v, hidden0, 1, A, EXPLAIN_VALUES);
    fputs(" = ", out);
    number(out, energy[0], false);
}

/* Step t of the explanation (1-based). */
static void explain_step(FILE *out, const Alignment *a, const StepTrace *tr, int t, double *e) {
    int S = a->cols, K = tr->K;
    double *ex = e + S, *alpha = ex + S, sum = 0;
    const real *energy = a->energy + (size_t)(t - 1) * S;
    const real *c = tr->context + (size_t)(t - 1) * K;
    fprintf(out, "\nStep %d (output token %d)\n", t, t);
    fprintf(out, "  query    q_%d = s_%d = ", t, t - 1);
    short_vector(out, tr->query + (size_t)(t - 1) * tr->D, tr->D);
    if (tr->score == SCORE_ADDITIVE)
        explain_additive_scores(out, a, tr, t);
    else
        explain_dot_scores(out, a, tr, t);
    fputs("\n           and so for every i:\n           e = ", out);
    /* the softmax by hand: exp of each score, their sum, each one's share of the sum */
    int best = 0;
    for (int i = 0; i < S; i++) {
        e[i] = energy[i];
        ex[i] = exp(e[i]);
        sum += ex[i];
    }
    for (int i = 0; i < S; i++) {
        alpha[i] = ex[i] / sum;
        if (alpha[i] > alpha[best]) best = i;
    }
    full_vector(out, e, S);
    fputs("\n  softmax  exp(e) = ", out);
    full_vector(out, ex, S);
    fputs("\n           sum = ", out);
    for (int i = 0; i < S; i++) {
        if (i) fputs(" + ", out);
        number(out, ex[i], false);
    }
    fputs(" = ", out);
    number(out, sum, false);
    fputs("\n           alpha = exp(e) / sum = ", out);
    full_vector(out, alpha, S);
    fprintf(out, "\n           (the most attended: \"%s\", %.1f%%)\n", a->src_tokens[best],
            100 * alpha[best]);
    fprintf(out, "  context  c_%d = sum_i alpha_%di h_i = ", t, t);
    short_vector(out, c, K);
    fprintf(out, "\n           its first value: ");
    /* the products alpha_ti * h_i[0], with alpha as printed above */
    for (int i = 0; i < S; i++) {
        if (i) fputs(" + ", out);
        number(out, alpha[i], true);
        fputc('*', out);
        number(out, tr->enc_h[(size_t)i * K], true);
    }
    fputs(" = ", out);
    number(out, c[0], false);
    fprintf(out, "\n  output   %s \"%s\" with probability ",
            a->reference ? "target token" : "chosen token", a->tgt_tokens[t - 1]);
    number(out, a->prob[t - 1], false);
    fputc('\n', out);
}

int alignment_explain(FILE *out, const Alignment *a, const StepTrace *trace, Error *err) {
    int S = a->cols;
    if (trace->rows != a->rows || trace->cols != S)
        return error_set(err, "the step trace does not belong to this alignment");
    double *scratch = checked_calloc(3 * (size_t)S, sizeof(double), "explain", err);
    if (!scratch) return -1;
    fprintf(out, "Source: %s\n", a->source);
    fputs("Source tokens: ", out);
    for (int i = 0; i < S; i++) fprintf(out, "%s%d %s", i ? ", " : "", i, a->src_tokens[i]);
    fprintf(out, "\n%s: %s\n", a->reference ? "Forced target" : "Translation", a->translation);
    /* A is the size of additive's hidden layer and of scaled_dot's W_q q_t and W_k h_i; dot
     * and general have no such layer */
    const char *attention_size = trace->score == SCORE_ADDITIVE     ? ", the attention layer has"
                                 : trace->score == SCORE_SCALED_DOT ? ", W_q q_t and W_k h_i have"
                                                                    : NULL;
    fprintf(out,
            "Every value is the model's own, from running it on the source and the %s tokens\n"
            "(teacher forcing%s). Vectors show their first %d values:\n"
            "s_t has D = %d, h_i and c_t have K = %d",
            a->reference ? "target" : "chosen",
            a->reference ? "" : ", which repeats the search's computation", EXPLAIN_VALUES,
            trace->D, trace->K);
    if (attention_size) fprintf(out, "%s A = %d", attention_size, trace->A);
    fputs(".\nThe softmax is shown as in the notes; the model itself computes exp(e_i - max e),\n"
          "which gives the same alpha without overflowing for large scores.\n",
          out);
    fprintf(out, "Attention score: %s, %s with q_t = s_{t-1}.\n", score_name(trace->score),
            score_formula(trace->score));
    if (trace->int8)
        fputs("Weights: int8. W_ih and W_hh of every GRU, W_q, W_k, W_a, W_o, W_out and the\n"
              "embeddings are stored as 8-bit integers q with one scale s per row (biases, v and\n"
              "the initial state's layer are float). The encoder states h_i and keys below come\n"
              "from int8 products, as in the search: each input row rounded to 8 bits, summed in\n"
              "integers, scaled back. The decoder's numbers below are computed in float from the\n"
              "weights' values s*q; the search computes them with int8 products too, so its\n"
              "scores can differ from these in the last digits.\n",
              out);
    for (int t = 1; t <= a->rows; t++) explain_step(out, a, trace, t, scratch);
    fputc('\n', out);
    free(scratch);
    return stream_status(out, err);
}
