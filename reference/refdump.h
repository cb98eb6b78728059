/*
 * refdump.h: the gradient reference dump of the model spec: for one model and one batch of
 * sentence pairs, every parameter, the batch, the loss, every gradient and the main
 * activations, as .npy files that any other implementation can load and compare itself
 * against (layout in docs/MODEL-SPEC.md). No dropout, no label smoothing.
 */
#ifndef NMT_REFDUMP_H
#define NMT_REFDUMP_H

#include "data/dataset.h"
#include "nmt/checkpoint.h"

typedef struct {
    int pairs, S, T; /* the batch's shape */
    double loss;
} RefDumpSummary;

/* Runs the pairs of ds as one batch through nm (forward, then backward: nm's gradients are
 * overwritten) and writes the dump into the folder out (created with its parents). */
int reference_dump(NmtModel *nm, const Dataset *ds, const char *out, RefDumpSummary *summary,
                   Error *err);

#endif
