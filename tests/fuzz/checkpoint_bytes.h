/*
 * checkpoint_bytes.h: what the two checkpoint fuzz targets (fuzz_checkpoint, fuzz_quantized)
 * share: each input loaded as it is and with its checksum forged, and a model that loads used
 * the way bin/translate uses it.
 */
#ifndef NMT_FUZZ_CHECKPOINT_BYTES_H
#define NMT_FUZZ_CHECKPOINT_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nmt/text.h"

/* Loads one input: use_model says whether a model that loads should be translated with. */
typedef void LoadInput(const uint8_t *data, size_t size, bool use_model);

/* Calls load on the input as it is (which mostly exercises the checksum), and with its last 8
 * bytes replaced by the correct checksum of the rest, so that mutations reach every field
 * check behind it; only the forged one's model is used. */
void load_as_is_and_forged(const uint8_t *data, size_t size, LoadInput *load);

/* Encodes a fixed sentence and translates it (greedy and beam 2), decoding every hypothesis,
 * so that parameters that pass the loader but break the arithmetic are found too; aborts on
 * what a loaded model must never do. */
void translate_one_sentence(const NmtModel *nm);

/* Aborts when a loader's error message is more than one line. */
void check_one_line(const Error *err);

#endif
