/*
 * batching.c: choosing between batches by pairs and by tokens (see batching.h).
 */
#include "train/batching.h"

int training_plan(EpochPlan *plan, const Dataset *ds, const ConfigTrain *ct, uint64_t epoch,
                  Error *err) {
    if (ct->batch_tokens > 0)
        return epoch_plan_make_tokens(plan, ds, ct->batch_tokens, ct->seed, epoch, err);
    return epoch_plan_make(plan, ds, ct->batch_size, ct->seed, epoch, err);
}

int training_max_pairs(const Dataset *ds, const ConfigTrain *ct) {
    int most = ct->batch_tokens > 0 ? batch_tokens_max_pairs(ds, ct->batch_tokens) : ct->batch_size;
    /* batch_size may exceed the data, as before; only the token bound is capped by it */
    if (ct->batch_tokens > 0 && (size_t)most > ds->count) most = (int)ds->count;
    return most;
}

int training_steps_per_epoch(const Dataset *ds, const ConfigTrain *ct, size_t *steps, bool *exact,
                             Error *err) {
    if (ct->batch_tokens == 0) {
        *steps = (ds->count + (size_t)ct->batch_size - 1) / (size_t)ct->batch_size;
        *exact = true;
        return 0;
    }
    EpochPlan plan;
    if (epoch_plan_make_tokens(&plan, ds, ct->batch_tokens, ct->seed, 0, err)) return -1;
    *steps = plan.n_batches;
    *exact = false;
    epoch_plan_free(&plan);
    return 0;
}
