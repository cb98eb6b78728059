/*
 * refdump.h: the gradient reference dump of the model spec: for one model and one batch of
 * sentence pairs, every parameter, the batch, the loss, every gradient and the main
 * activations, as .npy files that any other implementation can load and compare itself
 * against (layout in docs/MODEL-SPEC.md). No dropout, no label smoothing.
 */
#ifndef NMT_REFDUMP_H
#define NMT_REFDUMP_H

#include "data/dataset.h"
#include "nmt/formats/checkpoint.h"

typedef struct {
    int pairs, S, T; /* the batch's shape */
    double loss;
} RefDumpSummary;

/* Which arithmetic computes the dump: the engine (model/seq2seq.h) or the plain reference
 * (reference/reference.h), which agree within round-off. At padding target steps (t at or
 * past a sentence's length) alpha, dec_s and logits are not the spec's: the engine may hold
 * anything there, the reference holds zeros. */
typedef enum { DUMP_ENGINE, DUMP_REFERENCE } DumpPath;

/* Runs the pairs of ds as one batch through nm (forward, then backward: nm's gradients are
 * overwritten) and writes the dump into the folder out (created with its parents). */
int reference_dump(NmtModel *nm, const Dataset *ds, const char *out, DumpPath path,
                   RefDumpSummary *summary, Error *err);

#endif
