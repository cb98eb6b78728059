/*
 * load_model.h: finding and loading the model a tool works on, with a hint when there is
 * none yet (the options themselves are cli.h's).
 */
#ifndef NMT_LOAD_MODEL_H
#define NMT_LOAD_MODEL_H

#include <stddef.h>

#include "nmt/formats/checkpoint.h"

/* The model `bin/train configs/toy.ini` writes, found from the program's own location
 * (BIN/../runs/toy/best.ckpt, normalised) so the tools work from any folder. */
void default_model_path(char *buf, size_t size);

/* Loads path, or the default model when path is NULL; a missing default model gets an
 * error that says which command makes it, and an installed program (not in a checkout, so
 * there is no default model) one that says -m MODEL is needed. */
int load_model(const char *path, NmtModel *nm, Error *err);
/* The same, then multiplying as --compute says (NULL: as the file says; see ComputeType),
 * and refusing a model that overflows on a probe sentence (translator_probe). */
int load_model_compute(const char *path, const char *compute, NmtModel *nm, Error *err);

/* Refuses (-1, naming both) an output file that is the model's file (path, or the default
 * model when NULL) or the file standard input reads: the rename that finishes the output
 * would replace it for good (--align where -m was meant; bin/translate --align in.txt <
 * in.txt). */
int check_output_is_no_input(const char *output, const char *model_path, Error *err);

#endif
