/*
 * cli.h: what the command-line tools share: finding and loading the model (with a hint when
 * there is none yet), strict number options, and reading input lines.
 */
#ifndef NMT_CLI_H
#define NMT_CLI_H

#include <stdio.h>

#include "base/files.h"
#include "nmt/checkpoint.h"

/* The model `bin/train configs/toy.ini` writes, found from the program's own location
 * (BIN/../runs/toy/best.ckpt) so the tools work from any folder. */
void default_model_path(char *buf, size_t size);

/* Loads path, or the default model when path is NULL; a missing default model gets an
 * error that says which command makes it. */
int load_model(const char *path, NmtModel *nm, Error *err);

/* Parses a whole decimal integer in [lo, hi]; errors name the option and value. */
int parse_int_option(const char *option, const char *text, long lo, long hi, long *out, Error *err);
int parse_double_option(const char *option, const char *text, double lo, double hi, double *out,
                        Error *err);

#endif
