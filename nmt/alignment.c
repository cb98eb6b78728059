/*
 * alignment.c: alignment matrices, word merging, AER and every output format (see
 * alignment.h).
 *
 * Matrices come from the model in two ways: copied from a search hypothesis, or read from
 * the activations of a teacher-forced model_forward on a batch of one pair (the same numbers
 * the gradient reference dump writes to acts/alpha.npy). Everything after that is plain
 * formatting; the writers check the stream once at the end instead of after every print.
 */
#include "nmt/alignment.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "nmt/npy.h"
#include "nmt/text.h"

static const char END_TOKEN[] = "</s>";

/* ---- small helpers ---------------------------------------------------------------------- */

static char *copy_text(const char *text, Error *err) {
    size_t n = strlen(text) + 1;
    char *copy = checked_calloc(n, 1, "text", err);
    if (copy) memcpy(copy, text, n);
    return copy;
}

static int set_label(char **slot, const char *text, Error *err) {
    *slot = copy_text(text, err);
    return *slot ? 0 : -1;
}

static void free_labels(char **labels, int n) {
    if (!labels) return;
    for (int i = 0; i < n; i++) free(labels[i]);
    free(labels);
}

/* Digits that make a printed real read back as the same value. */
static int real_digits(void) {
    return sizeof(real) == 8 ? 17 : 9;
}

/* The error of a stream that failed somewhere during a writer's prints. */
static int stream_status(FILE *out, Error *err) {
    if (ferror(out)) return error_set(err, "cannot write the output: %s", strerror(errno));
    return 0;
}

/* ---- one sentence's alignment ----------------------------------------------------------- */

void alignment_free(Alignment *a) {
    free(a->alpha);
    free(a->energy);
    free(a->prob);
    free_labels(a->src_tokens, a->cols);
    free_labels(a->tgt_tokens, a->rows);
    free(a->source);
    free(a->reference);
    free(a->translation);
    memset(a, 0, sizeof *a);
}

/* Allocates a for rows output tokens and fills its source side from the source's tokens. */
static int alignment_alloc(Alignment *a, const NmtModel *nm, const char *source,
                           const TokenList *src, int rows, Error *err) {
    int cols = (int)src->count + 1;
    size_t cells = (size_t)rows * cols;
    memset(a, 0, sizeof *a);
    a->rows = rows, a->cols = cols, a->lowercase = nm->lowercase;
    a->alpha = checked_calloc(cells + 1, sizeof(real), "alignment", err);
    a->energy = checked_calloc(cells + 1, sizeof(real), "alignment", err);
    a->prob = checked_calloc((size_t)rows + 1, sizeof(real), "alignment", err);
    a->src_tokens = checked_calloc((size_t)cols, sizeof(char *), "labels", err);
    a->tgt_tokens = checked_calloc((size_t)rows + 1, sizeof(char *), "labels", err);
    a->source = copy_text(source, err);
    int bad = !a->alpha || !a->energy || !a->prob || !a->src_tokens || !a->tgt_tokens || !a->source;
    for (int i = 0; i + 1 < cols && !bad; i++)
        bad = set_label(&a->src_tokens[i], src->tokens[i], err);
    if (!bad) bad = set_label(&a->src_tokens[cols - 1], END_TOKEN, err);
    if (bad) {
        alignment_free(a);
        return -1;
    }
    return 0;
}

int alignment_from_hypothesis(Alignment *a, const NmtModel *nm, const char *source,
                              const Hypothesis *h, Error *err) {
    TokenList src = {0};
    memset(a, 0, sizeof *a);
    if (tokenize(source, nm->lowercase, &src, err)) return -1;
    if ((int)src.count + 1 != h->src_len) {
        token_list_free(&src);
        return error_set(err, "the translation has %d source positions, the sentence %zu",
                         h->src_len, src.count + 1);
    }
    int bad = alignment_alloc(a, nm, source, &src, h->rows, err);
    token_list_free(&src);
    if (bad) return -1;
    a->complete = h->complete;
    size_t cells = (size_t)h->rows * h->src_len;
    memcpy(a->alpha, h->alpha, sizeof(real) * cells);
    memcpy(a->energy, h->energy, sizeof(real) * cells);
    memcpy(a->prob, h->prob, sizeof(real) * (size_t)h->rows);
    for (int t = 0; t < h->len && !bad; t++) {
        const char *token = vocab_token(&nm->tgt_vocab, h->tokens[t]);
        bad = set_label(&a->tgt_tokens[t], token ? token : "<unk>", err);
    }
    if (!bad && h->complete) bad = set_label(&a->tgt_tokens[h->len], END_TOKEN, err);
    if (!bad) a->translation = decode_target(nm, h->tokens, h->len, err);
    if (bad || !a->translation) {
        alignment_free(a);
        return -1;
    }
    return 0;
}

void step_trace_free(StepTrace *trace) {
    free(trace->block);
    memset(trace, 0, sizeof *trace);
}

/* ---- force-decoding --------------------------------------------------------------------- */

void forced_decoder_init(ForcedDecoder *fd, const NmtModel *nm) {
    memset(fd, 0, sizeof *fd);
    fd->nm = nm;
}

void forced_decoder_free(ForcedDecoder *fd) {
    if (fd->planned_src) acts_free(&fd->acts);
    memset(fd, 0, sizeof *fd);
}

/* Runs the model on one pair with teacher forcing, leaving the activations in fd->acts.
 * src has S ids ending in </s>; tgt has n ids without </s>. */
static int forced_run(ForcedDecoder *fd, const int *src, int S, const int *tgt, int n, Error *err) {
    const Model *m = &fd->nm->model;
    int T = n + 1;
    if (S > fd->planned_src || T > fd->planned_tgt) { /* grow the plan to this pair */
        int plan_src = S > fd->planned_src ? S : fd->planned_src;
        int plan_tgt = T > fd->planned_tgt ? T : fd->planned_tgt;
        if (fd->planned_src) acts_free(&fd->acts);
        fd->planned_src = fd->planned_tgt = 0;
        /* every step's logits and attention hidden layer stay for the trace */
        ActsPlan plan = {.logit_rows = ACTS_ALL_ROWS, .attention = ACTS_KEEP};
        if (acts_init_plan(&fd->acts, &m->dims, 1, plan_src, plan_tgt, &plan, err)) return -1;
        fd->planned_src = plan_src, fd->planned_tgt = plan_tgt;
    }
    int *tgt_in = checked_calloc(2 * (size_t)T, sizeof(int), "target ids", err);
    if (!tgt_in) return -1;
    int *tgt_out = tgt_in + T;
    tgt_in[0] = TOK_BOS;
    for (int t = 0; t < n; t++) tgt_in[t + 1] = tgt_out[t] = tgt[t];
    tgt_out[n] = TOK_EOS;
    Batch batch = {.B = 1,
                   .S = S,
                   .T = T,
                   .src = src,
                   .src_len = &S,
                   .tgt_in = tgt_in,
                   .tgt_out = tgt_out,
                   .tgt_len = &T};
    double loss;
    int rc = batch_validate(&batch, &m->dims, err) ||
                     model_forward(m, &fd->acts, &batch, &(ForwardOptions){.forward_only = 1},
                                   &loss, err)
                 ? -1
                 : 0;
    free(tgt_in);
    return rc;
}

static int trace_fill(StepTrace *trace, const Acts *acts, const Model *m, int rows, int cols,
                      Error *err) {
    const ModelDims *d = &m->dims;
    size_t D = d->dec_hidden, K = dims_enc_state(d), A = d->att, R = rows, S = cols;
    *trace = (StepTrace){.rows = rows, .cols = cols, .D = (int)D, .K = (int)K, .A = (int)A};
    size_t total = R * D + R * A + S * A + R * S * A + A + R * K + S * K;
    trace->block = checked_calloc(total, sizeof(real), "step trace", err);
    if (!trace->block) return -1;
    trace->query = trace->block;
    trace->projected = trace->query + R * D;
    trace->keys = trace->projected + R * A;
    trace->hidden = trace->keys + S * A;
    trace->v = trace->hidden + R * S * A;
    trace->context = trace->v + A;
    trace->enc_h = trace->context + R * K;
    /* a batch of one: row t of every time-major array is step t's; dec_state starts at s_0 */
    memcpy(trace->query, acts->dec_state, sizeof(real) * R * D);
    memcpy(trace->projected, acts->query, sizeof(real) * R * A);
    memcpy(trace->keys, acts->keys, sizeof(real) * S * A);
    memcpy(trace->hidden, acts->att_hidden, sizeof(real) * R * S * A);
    memcpy(trace->v, m->w.att_v, sizeof(real) * A);
    memcpy(trace->context, acts->context, sizeof(real) * R * K);
    memcpy(trace->enc_h, acts->enc_h, sizeof(real) * S * K);
    return 0;
}

/* The shared part of force_align and force_align_ids; labels are the n target tokens. */
static int forced_alignment(ForcedDecoder *fd, const char *source, const int *tgt, int n,
                            int complete, const char *const *labels, Alignment *out,
                            StepTrace *trace, Error *err) {
    const NmtModel *nm = fd->nm;
    TokenList src = {0};
    int *ids = NULL, S, unknown;
    memset(out, 0, sizeof *out);
    if (trace) memset(trace, 0, sizeof *trace);
    if (encode_source(nm, source, &ids, &S, &unknown, err)) return -1;
    int rc = -1;
    if (S == 1) {
        error_set(err, "empty sentence, nothing to align");
        goto done;
    }
    if (S - 1 > FORCED_MAX_TOKENS || n > FORCED_MAX_TOKENS) {
        error_set(err, "the %s has %d tokens, more than the %d force-decoding takes",
                  S - 1 > FORCED_MAX_TOKENS ? "source" : "target",
                  S - 1 > FORCED_MAX_TOKENS ? S - 1 : n, FORCED_MAX_TOKENS);
        goto done;
    }
    if (tokenize(source, nm->lowercase, &src, err) || forced_run(fd, ids, S, tgt, n, err) ||
        alignment_alloc(out, nm, source, &src, n + complete, err))
        goto done;
    const Acts *acts = &fd->acts;
    int V = nm->model.dims.tgt_vocab, rows = n + complete;
    out->complete = complete;
    memcpy(out->alpha, acts->alpha, sizeof(real) * (size_t)rows * S);
    memcpy(out->energy, acts->energy, sizeof(real) * (size_t)rows * S);
    for (int t = 0; t < rows; t++) {
        int y = t < n ? tgt[t] : TOK_EOS;
        out->prob[t] = (real)exp((double)acts->logits[(size_t)t * V + y] - acts->lse[t]);
    }
    int bad = 0;
    for (int t = 0; t < n && !bad; t++) bad = set_label(&out->tgt_tokens[t], labels[t], err);
    if (!bad && complete) bad = set_label(&out->tgt_tokens[n], END_TOKEN, err);
    if (!bad) out->translation = detokenize(labels, (size_t)n, err);
    if (bad || !out->translation || (trace && trace_fill(trace, acts, &nm->model, rows, S, err)))
        goto done;
    rc = 0;
done:
    if (rc) alignment_free(out);
    token_list_free(&src);
    free(ids);
    return rc;
}

int force_align(ForcedDecoder *fd, const char *source, const char *target, Alignment *out,
                StepTrace *trace, Error *err) {
    TokenList tgt = {0};
    memset(out, 0, sizeof *out);
    size_t offset;
    uint32_t control;
    if (tokenize(target, fd->nm->lowercase, &tgt, err)) return error_prefix(err, "target: ");
    if (utf8_find_control(target, strlen(target), &offset, &control)) {
        token_list_free(&tgt);
        return error_set(err, "target: control character U+%04X at byte %zu", (unsigned)control,
                         offset);
    }
    if (tgt.count == 0) return error_set(err, "empty target, nothing to force-decode");
    if (tgt.count > FORCED_MAX_TOKENS) {
        size_t count = tgt.count;
        token_list_free(&tgt);
        return error_set(err, "the target has %zu tokens, more than the %d force-decoding takes",
                         count, FORCED_MAX_TOKENS);
    }
    int *ids = checked_calloc(tgt.count, sizeof(int), "target ids", err);
    int rc = -1;
    if (ids) {
        vocab_encode(&fd->nm->tgt_vocab, &tgt, ids);
        rc = forced_alignment(fd, source, ids, (int)tgt.count, 1, (const char *const *)tgt.tokens,
                              out, trace, err);
    }
    if (rc == 0 && !(out->reference = copy_text(target, err))) {
        alignment_free(out);
        if (trace) step_trace_free(trace);
        rc = -1;
    }
    free(ids);
    token_list_free(&tgt);
    return rc;
}

int force_align_ids(ForcedDecoder *fd, const char *source, const int *target, int n, int complete,
                    Alignment *out, StepTrace *trace, Error *err) {
    memset(out, 0, sizeof *out);
    const char **labels = checked_calloc((size_t)n + 1, sizeof(char *), "labels", err);
    if (!labels) return -1;
    for (int t = 0; t < n; t++) {
        labels[t] = vocab_token(&fd->nm->tgt_vocab, target[t]);
        if (!labels[t]) {
            free(labels);
            return error_set(err, "target id %d is not in the vocabulary", target[t]);
        }
    }
    int rc = forced_alignment(fd, source, target, n, complete, labels, out, trace, err);
    free(labels);
    return rc;
}

/* ---- words ------------------------------------------------------------------------------ */

void word_map_free(WordMap *map) {
    free(map->word_of);
    memset(map, 0, sizeof *map);
}

/* The separators of the gold alignments' words (the corpus generator joins with spaces). */
static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int word_map_from_text(WordMap *map, const char *text, bool lowercase, Error *err) {
    char quoted[96];
    TokenList whole = {0}, part = {0};
    memset(map, 0, sizeof *map);
    if (tokenize(text, lowercase, &whole, err)) return -1;
    map->n_tokens = (int)whole.count;
    map->word_of = checked_calloc(whole.count + 1, sizeof(int), "word map", err);
    char *word = checked_calloc(strlen(text) + 1, 1, "word", err);
    int rc = map->word_of && word ? 0 : -1;
    size_t k = 0; /* tokens of the whole sentence matched so far */
    for (const char *p = text; rc == 0;) {
        while (is_space(*p)) p++;
        if (!*p) break;
        size_t len = 0;
        while (p[len] && !is_space(p[len])) len++;
        memcpy(word, p, len);
        word[len] = '\0';
        p += len;
        if (tokenize(word, lowercase, &part, err)) {
            rc = -1;
            break;
        }
        for (size_t j = 0; j < part.count && rc == 0; j++, k++) {
            if (k >= whole.count || strcmp(part.tokens[j], whole.tokens[k]) != 0)
                rc = error_set(err, "word %d ('%s') does not split into the sentence's tokens",
                               map->n_words, text_for_message(quoted, sizeof quoted, word, 60));
            else
                map->word_of[k] = map->n_words;
        }
        token_list_free(&part);
        map->n_words++;
    }
    if (rc == 0 && k != whole.count)
        rc = error_set(err, "the words have %zu tokens, the sentence %zu", k, whole.count);
    free(word);
    token_list_free(&whole);
    if (rc) word_map_free(map);
    return rc;
}

int word_map_from_tokens(WordMap *map, const char *const *tokens, int n, Error *err) {
    memset(map, 0, sizeof *map);
    map->word_of = checked_calloc((size_t)n + 1, sizeof(int), "word map", err);
    if (!map->word_of) return -1;
    map->n_tokens = n;
    /* detokenize decides the space before token k from tokens 0..k only, so each prefix's
     * text extends the previous one: a space between them starts a new word */
    size_t before = 0;
    for (int k = 0; k < n; k++) {
        char *text = detokenize(tokens, (size_t)k + 1, err);
        if (!text) {
            word_map_free(map);
            return -1;
        }
        size_t len = strlen(text);
        if (k == 0 || (len > before && text[before] == ' ')) map->n_words++;
        map->word_of[k] = map->n_words - 1;
        before = len;
        free(text);
    }
    return 0;
}

static int compare_links(const void *a, const void *b) {
    const WordLink *x = a, *y = b;
    return x->src != y->src ? (x->src > y->src) - (x->src < y->src)
                            : (x->tgt > y->tgt) - (x->tgt < y->tgt);
}

int word_links(const real *alpha, int rows, int cols, const WordMap *src, const WordMap *tgt,
               WordLink **links, int *n, Error *err) {
    *links = NULL, *n = 0;
    if (cols != src->n_tokens + 1 || (rows != tgt->n_tokens && rows != tgt->n_tokens + 1))
        return error_set(err, "a %d x %d matrix does not fit %d source and %d target tokens", rows,
                         cols, src->n_tokens, tgt->n_tokens);
    size_t SW = (size_t)src->n_words, TW = (size_t)tgt->n_words;
    double *sum = checked_calloc(SW * TW + 1, sizeof(double), "word matrix", err);
    int *has_token = checked_calloc(TW + 1, sizeof(int), "word matrix", err);
    *links = checked_calloc(TW + 1, sizeof(WordLink), "word links", err);
    if (!sum || !has_token || !*links) {
        free(sum), free(has_token), free(*links);
        *links = NULL;
        return -1;
    }
    /* rows and columns of the same word add up; the </s> row and column are left out */
    for (int t = 0; t < tgt->n_tokens; t++) {
        size_t j = (size_t)tgt->word_of[t];
        has_token[j] = 1;
        for (int i = 0; i < src->n_tokens; i++)
            sum[j * SW + (size_t)src->word_of[i]] += alpha[(size_t)t * cols + i];
    }
    for (size_t j = 0; j < TW && SW > 0; j++) {
        if (!has_token[j]) continue;
        size_t best = 0;
        for (size_t i = 1; i < SW; i++)
            if (sum[j * SW + i] > sum[j * SW + best]) best = i;
        (*links)[(*n)++] = (WordLink){.src = (int)best, .tgt = (int)j};
    }
    qsort(*links, (size_t)*n, sizeof **links, compare_links);
    free(sum), free(has_token);
    return 0;
}

int alignment_word_links(const Alignment *a, WordLink **links, int *n, Error *err) {
    WordMap src = {0}, tgt = {0};
    *links = NULL, *n = 0;
    int rc = word_map_from_text(&src, a->source, a->lowercase, err);
    if (rc == 0)
        rc = a->reference ? word_map_from_text(&tgt, a->reference, a->lowercase, err)
                          : word_map_from_tokens(&tgt, (const char *const *)a->tgt_tokens,
                                                 a->rows - a->complete, err);
    if (rc == 0) rc = word_links(a->alpha, a->rows, a->cols, &src, &tgt, links, n, err);
    word_map_free(&src);
    word_map_free(&tgt);
    return rc;
}

/* ---- alignment error rate --------------------------------------------------------------- */

/* Parses a whole non-negative decimal index from s[0..len). */
static int parse_index(const char *s, size_t len, int *out) {
    long v = 0;
    if (len == 0 || len > 9) return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = (int)v;
    return 0;
}

int pharaoh_parse(const char *line, WordLink **links, int *n, Error *err) {
    *n = 0;
    *links = checked_calloc(strlen(line) / 4 + 1, sizeof(WordLink), "links", err);
    if (!*links) return -1;
    for (const char *p = line;;) {
        while (is_space(*p)) p++;
        if (!*p) return 0;
        size_t len = 0;
        while (p[len] && !is_space(p[len])) len++;
        const char *dash = memchr(p, '-', len);
        WordLink link;
        if (!dash || parse_index(p, (size_t)(dash - p), &link.src) ||
            parse_index(dash + 1, len - (size_t)(dash - p) - 1, &link.tgt)) {
            char link_text[48], quoted[96];
            snprintf(link_text, sizeof link_text, "%.*s", (int)(len < 40 ? len : 40), p);
            free(*links);
            *links = NULL, *n = 0;
            return error_set(err,
                             "malformed link '%s' (expected i-j: source word index, "
                             "dash, target word index)",
                             text_for_message(quoted, sizeof quoted, link_text, 40));
        }
        (*links)[(*n)++] = link;
        p += len;
    }
}

/* Sorts links and drops repeats; returns the new count. */
static int unique_links(WordLink *links, int n) {
    qsort(links, (size_t)n, sizeof *links, compare_links);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (kept == 0 || compare_links(&links[kept - 1], &links[i]) != 0) links[kept++] = links[i];
    return kept;
}

int aer_add(AerCounts *c, const WordLink *predicted, int np, const WordLink *gold, int ng,
            Error *err) {
    WordLink *a = checked_calloc((size_t)np + (size_t)ng + 1, sizeof(WordLink), "links", err);
    if (!a) return -1;
    WordLink *s = a + np;
    if (np) memcpy(a, predicted, sizeof *a * (size_t)np);
    if (ng) memcpy(s, gold, sizeof *s * (size_t)ng);
    np = unique_links(a, np);
    ng = unique_links(s, ng);
    size_t matched = 0;
    for (int i = 0, j = 0; i < np && j < ng;) {
        int order = compare_links(&a[i], &s[j]);
        if (order == 0)
            matched++, i++, j++;
        else if (order < 0)
            i++;
        else
            j++;
    }
    c->predicted += (size_t)np, c->gold += (size_t)ng, c->matched += matched;
    free(a);
    return 0;
}

double aer_precision(const AerCounts *c) {
    return c->predicted ? (double)c->matched / (double)c->predicted : 0;
}

double aer_recall(const AerCounts *c) {
    return c->gold ? (double)c->matched / (double)c->gold : 0;
}

double aer_error_rate(const AerCounts *c) {
    size_t total = c->predicted + c->gold;
    return total ? 1 - 2 * (double)c->matched / (double)total : 0;
}

/* Checks that every gold link lies inside the pair's words. */
static int gold_in_range(const WordLink *gold, int ng, const Alignment *a, Error *err) {
    WordMap src = {0}, tgt = {0};
    int rc = word_map_from_text(&src, a->source, a->lowercase, err) ||
                     word_map_from_text(&tgt, a->reference, a->lowercase, err)
                 ? -1
                 : 0;
    for (int k = 0; k < ng && rc == 0; k++)
        if (gold[k].src >= src.n_words || gold[k].tgt >= tgt.n_words)
            rc = error_set(err, "link %d-%d is outside the pair (%d source, %d target words)",
                           gold[k].src, gold[k].tgt, src.n_words, tgt.n_words);
    word_map_free(&src);
    word_map_free(&tgt);
    return rc;
}

int aer_evaluate(ForcedDecoder *fd, const char *pairs_path, const char *gold_path,
                 AerCounts *counts, size_t *pairs, Error *err) {
    Corpus corpus = {0};
    memset(counts, 0, sizeof *counts);
    *pairs = 0;
    if (corpus_read_file(pairs_path, &corpus, err)) return -1;
    FILE *gold = fopen(gold_path, "r");
    if (!gold) {
        corpus_free(&corpus);
        return error_set(err, "cannot open %s: %s", gold_path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t k = 0; k < corpus.count && rc == 0; k++) {
        long len = read_line(gold, &line, &cap);
        if (len == -2) {
            rc = error_set(err, "cannot read %s: %s", gold_path, strerror(errno));
            break;
        }
        if (len < 0) {
            rc = error_set(err, "%s:%zu: missing: the file ends after %zu lines, %s has %zu pairs",
                           gold_path, k + 1, k, pairs_path, corpus.count);
            break;
        }
        WordLink *gold_links = NULL, *links = NULL;
        int ng = 0, np = 0;
        Alignment a = {0};
        if (pharaoh_parse(line, &gold_links, &ng, err))
            rc = error_prefix(err, "%s:%zu: ", gold_path, k + 1);
        else if (force_align(fd, corpus.src[k], corpus.tgt[k], &a, NULL, err))
            rc = error_prefix(err, "%s:%zu: ", pairs_path, corpus.line[k]);
        else if (gold_in_range(gold_links, ng, &a, err))
            rc = error_prefix(err, "%s:%zu: ", gold_path, k + 1);
        else if (alignment_word_links(&a, &links, &np, err))
            rc = error_prefix(err, "%s:%zu: ", pairs_path, corpus.line[k]);
        else
            rc = aer_add(counts, links, np, gold_links, ng, err);
        alignment_free(&a);
        free(gold_links);
        free(links);
    }
    if (rc == 0 && read_line(gold, &line, &cap) >= 0)
        rc = error_set(err, "%s:%zu: more alignment lines than the %zu pairs of %s", gold_path,
                       corpus.count + 1, corpus.count, pairs_path);
    if (rc == 0 && ferror(gold)) rc = error_set(err, "cannot read %s", gold_path);
    if (rc == 0) *pairs = corpus.count;
    free(line);
    fclose(gold);
    corpus_free(&corpus);
    return rc;
}

/* ---- formats ---------------------------------------------------------------------------- */

static const char *const FORMAT_NAMES[] = {
    [ALIGN_TSV] = "tsv",         [ALIGN_NPY] = "npy",   [ALIGN_JSON] = "json",
    [ALIGN_SVG] = "svg",         [ALIGN_TEXT] = "text", [ALIGN_MARIAN] = "marian",
    [ALIGN_PHARAOH] = "pharaoh",
};

int align_format_parse(const char *name, AlignFormat *out, Error *err) {
    for (size_t f = 0; f < sizeof FORMAT_NAMES / sizeof FORMAT_NAMES[0]; f++)
        if (strcmp(name, FORMAT_NAMES[f]) == 0) {
            *out = (AlignFormat)f;
            return 0;
        }
    char quoted[96];
    return error_set(err,
                     "unknown format '%s' (expected tsv, npy, json, svg, text, marian or "
                     "pharaoh)",
                     text_for_message(quoted, sizeof quoted, name, 60));
}

bool align_format_streams(AlignFormat format) {
    return format != ALIGN_NPY && format != ALIGN_SVG;
}

/* tsv: a corner cell and the source tokens, then each output token with its weights. */
static void write_tsv(FILE *out, const Alignment *a) {
    for (int i = 0; i < a->cols; i++) fprintf(out, "\t%s", a->src_tokens[i]);
    fputc('\n', out);
    for (int t = 0; t < a->rows; t++) {
        fputs(a->tgt_tokens[t], out);
        for (int i = 0; i < a->cols; i++)
            fprintf(out, "\t%.*g", real_digits(), (double)a->alpha[(size_t)t * a->cols + i]);
        fputc('\n', out);
    }
}

/* A JSON string: quotes, backslashes and control characters escaped, UTF-8 as it is. */
static void json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void json_string_list(FILE *out, char *const *items, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        json_string(out, items[i]);
    }
    fputc(']', out);
}

static void write_json(FILE *out, const Alignment *a) {
    fputs("{\"source\": ", out);
    json_string(out, a->source);
    fputs(", \"translation\": ", out);
    json_string(out, a->translation);
    fputs(", \"src_tokens\": ", out);
    json_string_list(out, a->src_tokens, a->cols);
    fputs(", \"tgt_tokens\": ", out);
    json_string_list(out, a->tgt_tokens, a->rows);
    fputs(", \"alpha\": [", out);
    for (int t = 0; t < a->rows; t++) {
        fputs(t ? ", [" : "[", out);
        for (int i = 0; i < a->cols; i++) {
            double w = a->alpha[(size_t)t * a->cols + i];
            if (i) fputs(", ", out);
            if (isfinite(w))
                fprintf(out, "%.*g", real_digits(), w);
            else
                fputs("null", out); /* JSON has no NaN or infinity */
        }
        fputc(']', out);
    }
    fputs("]}\n", out);
}

/* marian: "translation ||| w,w,w w,w,w": one group per output token. */
static void write_marian(FILE *out, const Alignment *a) {
    fprintf(out, "%s |||", a->translation);
    for (int t = 0; t < a->rows; t++) {
        fputc(' ', out);
        for (int i = 0; i < a->cols; i++)
            fprintf(out, i ? ",%.6g" : "%.6g", (double)a->alpha[(size_t)t * a->cols + i]);
    }
    fputc('\n', out);
}

static int write_pharaoh(FILE *out, const Alignment *a, Error *err) {
    WordLink *links;
    int n;
    if (alignment_word_links(a, &links, &n, err)) return -1;
    for (int k = 0; k < n; k++) fprintf(out, k ? " %d-%d" : "%d-%d", links[k].src, links[k].tgt);
    fputc('\n', out);
    free(links);
    return 0;
}

/* ---- terminal text ---- */

/* Columns a code point takes in a terminal: 2 for the wide East Asian blocks, else 1. */
static int cell_width(uint32_t cp) {
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                   (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                   (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                   (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x20000 && cp <= 0x3FFFD)
               ? 2
               : 1;
}

/* Decodes the code point at s (valid UTF-8, tokens are checked) and returns its length. */
static size_t next_code_point(const unsigned char *s, uint32_t *cp) {
    if (s[0] < 0x80) return *cp = s[0], 1;
    size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
    uint32_t v = s[0] & (0x3F >> (len - 1));
    for (size_t k = 1; k < len && s[k]; k++) v = v << 6 | (s[k] & 0x3F);
    *cp = v;
    return len;
}

/* Copies the longest prefix of s that fits max_width columns into buf, ending it with "…"
 * when s was cut; returns the columns used. */
static int fit_label(char *buf, size_t size, const char *s, int max_width) {
    int width = 0, total = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp;
        p += next_code_point(p, &cp);
        total += cell_width(cp);
    }
    int budget = total <= max_width ? max_width : max_width - 1; /* room for the ellipsis */
    size_t used = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp;
        size_t len = next_code_point(p, &cp);
        if (width + cell_width(cp) > budget || used + len + 4 > size) break;
        memcpy(buf + used, p, len);
        used += len, p += len, width += cell_width(cp);
    }
    if (total > width && used + 4 <= size) {
        memcpy(buf + used, "\u2026", 3);
        used += 3, width++;
    }
    buf[used] = '\0';
    return width;
}

static void pad(FILE *out, int n) {
    for (int i = 0; i < n; i++) fputc(' ', out);
}

/* The shade of a weight, from blank (below 0.1) to full block (0.7 and above). */
static const char *shade(double w) {
    return w < 0.1 ? " " : w < 0.3 ? "\u2591" : w < 0.5 ? "\u2592" : w < 0.7 ? "\u2593" : "\u2588";
}

enum { TEXT_MIN_CELL = 3, TEXT_MAX_CELL = 6, TEXT_MAX_ROW_LABEL = 16, LABEL_BYTES = 128 };

static void write_text(FILE *out, const Alignment *a) {
    char label[LABEL_BYTES];
    int cell = TEXT_MIN_CELL, row_label = 1;
    for (int i = 0; i < a->cols; i++) {
        int w = fit_label(label, sizeof label, a->src_tokens[i], TEXT_MAX_CELL);
        if (w > cell) cell = w;
    }
    for (int t = 0; t < a->rows; t++) {
        int w = fit_label(label, sizeof label, a->tgt_tokens[t], TEXT_MAX_ROW_LABEL);
        if (w > row_label) row_label = w;
    }
    fprintf(out, "source: %s\n%s: %s\n", a->source, a->reference ? "target" : "output",
            a->translation);
    pad(out, row_label + 1);
    for (int i = 0; i < a->cols; i++) {
        int w = fit_label(label, sizeof label, a->src_tokens[i], cell);
        fputs(label, out);
        if (i + 1 < a->cols) pad(out, cell + 1 - w);
    }
    fputc('\n', out);
    for (int t = 0; t < a->rows; t++) {
        const real *row = a->alpha + (size_t)t * a->cols;
        int w = fit_label(label, sizeof label, a->tgt_tokens[t], row_label);
        fputs(label, out);
        pad(out, row_label + 1 - w);
        int best = 0;
        for (int i = 0; i < a->cols; i++) {
            for (int k = 0; k < cell; k++) fputs(shade(row[i]), out);
            fputc(' ', out);
            if (row[i] > row[best]) best = i;
        }
        fprintf(out, " %s %.2f\n", a->src_tokens[best], (double)row[best]);
    }
    fputs("(shades: \u2591 0.1+  \u2592 0.3+  \u2593 0.5+  \u2588 0.7+; "
          "right: the source token each output token attends to most)\n",
          out);
}

int alignment_write(FILE *out, AlignFormat format, const Alignment *a, Error *err) {
    switch (format) {
    case ALIGN_TSV:
        write_tsv(out, a);
        break;
    case ALIGN_JSON:
        write_json(out, a);
        break;
    case ALIGN_MARIAN:
        write_marian(out, a);
        break;
    case ALIGN_PHARAOH:
        if (write_pharaoh(out, a, err)) return -1;
        break;
    case ALIGN_TEXT:
        write_text(out, a);
        break;
    case ALIGN_NPY:
    case ALIGN_SVG:
        return error_set(err, "the %s format is not written one sentence at a time",
                         FORMAT_NAMES[format]);
    }
    return stream_status(out, err);
}

int alignment_write_missing(FILE *out, AlignFormat format, Error *err) {
    if (format == ALIGN_MARIAN || format == ALIGN_PHARAOH) fputc('\n', out);
    if (format == ALIGN_JSON) fputs("null\n", out);
    return stream_status(out, err);
}

/* ---- SVG -------------------------------------------------------------------------------- */

enum {
    SVG_CELL = 32,       /* side of one cell, px */
    SVG_FONT = 13,       /* label font size, px */
    SVG_MARGIN = 14,     /* around each block */
    SVG_TITLE = 22,      /* height of a block's title line */
    SVG_LEGEND = 64,     /* width of the colour scale and its ticks */
    SVG_LABEL_CHARS = 24 /* longer labels are cut with an ellipsis */
};

/* Rough width in px of a label in the sans-serif font (no font metrics in plain C). */
static double text_px(const char *s, int max_width) {
    char label[LABEL_BYTES];
    return fit_label(label, sizeof label, s, max_width) * 0.62 * SVG_FONT;
}

/* XML text: markup characters escaped; the C0 controls XML 1.0 forbids become U+FFFD. */
static void xml_text(FILE *out, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
                fputs("\uFFFD", out);
            else
                fputc(*p, out);
        }
    }
}

static void xml_label(FILE *out, const char *s) {
    char label[LABEL_BYTES];
    fit_label(label, sizeof label, s, SVG_LABEL_CHARS);
    xml_text(out, label);
}

/* The colour scale, white through mid blue to dark blue. */
static const struct {
    double at;
    int r, g, b;
} SCALE[] = {{0.0, 255, 255, 255}, {0.5, 107, 174, 214}, {1.0, 8, 48, 107}};

static void scale_colour(double w, int rgb[3]) {
    if (!(w > 0)) w = 0; /* also catches NaN */
    if (w > 1) w = 1;
    int k = w <= SCALE[1].at ? 0 : 1;
    double f = (w - SCALE[k].at) / (SCALE[k + 1].at - SCALE[k].at);
    rgb[0] = (int)lround(SCALE[k].r + f * (SCALE[k + 1].r - SCALE[k].r));
    rgb[1] = (int)lround(SCALE[k].g + f * (SCALE[k + 1].g - SCALE[k].g));
    rgb[2] = (int)lround(SCALE[k].b + f * (SCALE[k + 1].b - SCALE[k].b));
}

typedef struct {
    double left, top;     /* the grid's top-left corner inside the block */
    double width, height; /* of the whole block */
} SvgLayout;

static SvgLayout svg_layout(const Alignment *a) {
    double tgt_w = 0, src_w = 0;
    for (int t = 0; t < a->rows; t++)
        tgt_w = fmax(tgt_w, text_px(a->tgt_tokens[t], SVG_LABEL_CHARS));
    for (int i = 0; i < a->cols; i++)
        src_w = fmax(src_w, text_px(a->src_tokens[i], SVG_LABEL_CHARS));
    double lean = src_w * 0.7072; /* labels are turned 45 degrees up */
    SvgLayout l;
    l.left = SVG_MARGIN + tgt_w + 8;
    l.top = SVG_MARGIN + SVG_TITLE + lean + SVG_FONT;
    double grid_right = l.left + (double)a->cols * SVG_CELL;
    double title = 2 * SVG_MARGIN + (strlen(a->source) + strlen(a->translation) + 3) * 0.6 * 14;
    l.width = fmax(
        fmax(grid_right + SVG_LEGEND + SVG_MARGIN, grid_right - SVG_CELL / 2.0 + lean + SVG_MARGIN),
        title);
    l.height = l.top + (double)a->rows * SVG_CELL + 2 * SVG_MARGIN;
    return l;
}

static void svg_block(FILE *out, const Alignment *a, const SvgLayout *l, double y) {
    fprintf(out, "<g transform=\"translate(0,%.1f)\">\n", y);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", SVG_MARGIN,
            SVG_MARGIN + 14);
    xml_text(out, a->source);
    fputs(" \u2192 ", out);
    xml_text(out, a->translation);
    fputs("</text>\n", out);
    for (int i = 0; i < a->cols; i++) { /* source tokens along the top, turned up */
        double x = l->left + (i + 0.5) * SVG_CELL + 4, base = l->top - 6;
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-45 %.1f %.1f)\" "
                "font-size=\"%d\">",
                x, base, x, base, SVG_FONT);
        xml_label(out, a->src_tokens[i]);
        fputs("</text>\n", out);
    }
    for (int t = 0; t < a->rows; t++) { /* output tokens down the side */
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"%d\">",
                l->left - 6, l->top + (t + 0.5) * SVG_CELL + 0.35 * SVG_FONT, SVG_FONT);
        xml_label(out, a->tgt_tokens[t]);
        fputs("</text>\n", out);
    }
    for (int t = 0; t < a->rows; t++)
        for (int i = 0; i < a->cols; i++) {
            double w = a->alpha[(size_t)t * a->cols + i], x = l->left + i * SVG_CELL,
                   top = l->top + t * SVG_CELL;
            int rgb[3];
            scale_colour(w, rgb);
            fprintf(out,
                    "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
                    "fill=\"#%02x%02x%02x\" stroke=\"#d0d0d0\" stroke-width=\"0.5\"><title>",
                    x, top, SVG_CELL, SVG_CELL, rgb[0], rgb[1], rgb[2]);
            xml_text(out, a->tgt_tokens[t]);
            fputs(" \u2190 ", out);
            xml_text(out, a->src_tokens[i]);
            fprintf(out, ": %.4f</title></rect>\n", w);
            if (w >= 0.1) /* the value itself where the cell is not near white */
                fprintf(out,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\" "
                        "fill=\"%s\" pointer-events=\"none\">%.2f</text>\n",
                        x + SVG_CELL / 2.0, top + SVG_CELL / 2.0 + 3,
                        w > 0.55 ? "#ffffff" : "#000000", w);
        }
    /* the colour scale: a bar from 0 (bottom) to 1 (top) with three ticks */
    double bar_x = l->left + (double)a->cols * SVG_CELL + 16;
    double bar_h = fmin(fmax((double)a->rows * SVG_CELL, 3.0 * SVG_CELL), 160);
    fprintf(out,
            "<rect class=\"legend\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"%.1f\" "
            "fill=\"url(#alpha-scale)\" stroke=\"#808080\" stroke-width=\"0.5\"/>\n",
            bar_x, l->top, bar_h);
    static const double ticks[] = {1.0, 0.5, 0.0};
    for (int k = 0; k < 3; k++)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%g</text>\n", bar_x + 16,
                l->top + (1 - ticks[k]) * bar_h + 3.5, ticks[k]);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">alpha</text>\n", bar_x, l->top - 6);
    fputs("</g>\n", out);
}

int alignment_write_svg(FILE *out, const Alignment *list, int n, Error *err) {
    SvgLayout *layout = checked_calloc((size_t)n + 1, sizeof *layout, "SVG layout", err);
    if (!layout) return -1;
    double width = 0, height = 0;
    for (int k = 0; k < n; k++) {
        layout[k] = svg_layout(&list[k]);
        width = fmax(width, layout[k].width);
        height += layout[k].height;
    }
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
            ceil(width), ceil(height), ceil(width), ceil(height));
    fputs("<defs><linearGradient id=\"alpha-scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">", out);
    for (size_t s = 0; s < sizeof SCALE / sizeof SCALE[0]; s++)
        fprintf(out, "<stop offset=\"%g\" stop-color=\"#%02x%02x%02x\"/>", SCALE[s].at, SCALE[s].r,
                SCALE[s].g, SCALE[s].b);
    fputs("</linearGradient></defs>\n", out);
    fputs("<rect class=\"background\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", out);
    double y = 0;
    for (int k = 0; k < n; k++) {
        svg_block(out, &list[k], &layout[k], y);
        y += layout[k].height;
    }
    fputs("</svg>\n", out);
    free(layout);
    return stream_status(out, err);
}

/* ---- npy -------------------------------------------------------------------------------- */

int npy_output_path(char *buf, size_t size, const char *base, int index, const char *suffix,
                    Error *err) {
    size_t len = strlen(base);
    if (len >= 4 && strcmp(base + len - 4, ".npy") == 0) len -= 4;
    int n = index >= 0 ? snprintf(buf, size, "%.*s.%d%s", (int)len, base, index, suffix)
                       : snprintf(buf, size, "%.*s%s", (int)len, base, suffix);
    if (n < 0 || (size_t)n >= size) return error_set(err, "%s: path too long", base);
    return 0;
}

static int write_token_file(const char *path, char *const *tokens, int n, Error *err) {
    OutputFile o;
    if (output_file_open(&o, path, false, err)) return -1;
    for (int i = 0; i < n; i++) fprintf(o.file, "%s\n", tokens[i]);
    return output_file_commit(&o, err);
}

int alignment_write_npy(const char *base, int index, const Alignment *a, Error *err) {
    char path[4096];
    size_t cells = (size_t)a->rows * a->cols, shape[2] = {(size_t)a->rows, (size_t)a->cols};
    float *matrix = checked_calloc(cells + 1, sizeof(float), "npy matrix", err);
    if (!matrix) return -1;
    for (size_t k = 0; k < cells; k++) matrix[k] = (float)a->alpha[k];
    int rc = npy_output_path(path, sizeof path, base, index, ".npy", err) ||
                     npy_write(path, NPY_F4, 2, shape, matrix, err) ||
                     npy_output_path(path, sizeof path, base, index, ".src.txt", err) ||
                     write_token_file(path, a->src_tokens, a->cols, err) ||
                     npy_output_path(path, sizeof path, base, index, ".tgt.txt", err) ||
                     write_token_file(path, a->tgt_tokens, a->rows, err)
                 ? -1
                 : 0;
    free(matrix);
    return rc;
}

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

/* Step t of the explanation (1-based). */
static void explain_step(FILE *out, const Alignment *a, const StepTrace *tr, int t, double *e) {
    int S = a->cols, A = tr->A, K = tr->K;
    double *ex = e + S, *alpha = ex + S, sum = 0;
    const real *energy = a->energy + (size_t)(t - 1) * S;
    const real *projected = tr->projected + (size_t)(t - 1) * A;
    const real *hidden0 = tr->hidden + (size_t)(t - 1) * S * A; /* source position i = 0 */
    const real *c = tr->context + (size_t)(t - 1) * K;
    fprintf(out, "\nStep %d (output token %d)\n", t, t);
    fprintf(out, "  query    q_%d = s_%d = ", t, t - 1);
    short_vector(out, tr->query + (size_t)(t - 1) * tr->D, tr->D);
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
    fprintf(out,
            "Every value is the model's own, from running it on the source and the %s tokens\n"
            "(teacher forcing%s). Vectors show their first %d values:\n"
            "s_t has D = %d, h_i and c_t have K = %d, the attention layer has A = %d.\n"
            "The softmax is shown as in the notes; the model itself computes exp(e_i - max e),\n"
            "which gives the same alpha without overflowing for large scores.\n",
            a->reference ? "target" : "chosen",
            a->reference ? "" : ", which repeats the search's computation", EXPLAIN_VALUES,
            trace->D, trace->K, trace->A);
    for (int t = 1; t <= a->rows; t++) explain_step(out, a, trace, t, scratch);
    fputc('\n', out);
    free(scratch);
    return stream_status(out, err);
}

/* ---- files written whole or not at all -------------------------------------------------- */
