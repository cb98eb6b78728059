/*
 * batching.h: the batches training takes, by pairs ([train] batch_size) or by target tokens
 * ([train] batch_tokens > 0), and the largest batch either can produce.
 *
 * train.c asks here rather than calling the two epoch planners itself, so the choice between
 * them lives in one place. It does not fill batches or plan activations (dataset.h and
 * seq2seq.h do); it only says what they must hold.
 */
#ifndef NMT_TRAIN_BATCHING_H
#define NMT_TRAIN_BATCHING_H

#include <stdbool.h>

#include "data/dataset.h"
#include "train/config.h"

/* The batches of one epoch, from ([train] seed, epoch). */
int training_plan(EpochPlan *plan, const Dataset *ds, const ConfigTrain *ct, uint64_t epoch,
                  Error *err);

/* The most pairs any batch of any epoch holds: batch_size, or under batch_tokens the bound of
 * batch_tokens_max_pairs (never more than the dataset has). */
int training_max_pairs(const Dataset *ds, const ConfigTrain *ct);

/* Steps per epoch: exact under batch_size (*exact set); under batch_tokens the count varies a
 * little from epoch to epoch, and the first epoch's count is given as an estimate. */
int training_steps_per_epoch(const Dataset *ds, const ConfigTrain *ct, size_t *steps, bool *exact,
                             Error *err);

#endif
