/*
 * quant_encoder.h: an int8 model's encoder (quant.h): encoder_forward with the products of
 * the input projections, the recurrences and the keys on int8 weights, each input quantized by
 * rows once (W_hh's rows by the thread that owns them, every step). It writes the same
 * activations as the float encoder, into Acts planned with ActsPlan.int8, which adds the
 * quantized inputs' buffers (Acts.enc_xq, enc_xs); training's activations have none.
 *
 * The pieces of the encoder both encoders run (the sharing of rows and directions among the
 * threads, the state slots, the layer-normalised input) are seq2seq.c's, declared below.
 */
#ifndef NMT_QUANT_ENCODER_H
#define NMT_QUANT_ENCODER_H

#include "model/seq2seq.h"

/* The bytes int8_encoder_plan allocates for batches of max_B sentences of max_S tokens. */
double int8_encoder_bytes(const ModelDims *d, int max_B, int max_S);
/* The int8 encoder's buffers in a (acts_init_plan with ActsPlan.int8; acts_free frees them). */
int int8_encoder_plan(Acts *a, const ModelDims *d, int max_B, int max_S, Error *err);
/* h_i, h_last, the keys and s_0 of the B x S batch loaded in a, as encoder_forward writes
 * them, from m's int8 weights (m->quant). */
void encoder_forward_int8(const Model *m, Acts *a, int B, int S);

/* ---- seq2seq.c's, shared by both encoders ---- */

/* Part `part` of `parts` of B batch rows: [*first, *first + *count). */
void share_rows(int B, int part, int parts, int *first, int *count);
/* The calling thread's directions [*dir0, *dir1) and its place *part among the *parts threads
 * that share them. */
void encoder_share(int dirs, int *dir0, int *dir1, int *part, int *parts);
/* Slot `slot` of a direction's states [(S+1)*B, N]. */
real *state_slot(real *states, int slot, int B, int N);
/* h_i (zero at padding) and h_last: direction dir's half of rows b0 .. b0+nb-1 of the
 * encoder states, from that direction's state slots. */
void encoder_states_out(Acts *a, real *states, int dir, int b0, int nb, int S, int B, int H, int K);
/* The layer-normalised GRU's input part, in place on `rows` rows of gi from row `row` on. */
void normalise_input(real *gi, GruNormCache *nc, const GruWeights *gw, size_t row, int rows, int N);

#endif
