/*
 * sampler.h — which samples each worker trains on: the training set
 * partitioned among the workers, and each worker's batches drawn in order
 * from its part (train/sampler.c; docs/policies.md, "Data partitioning").
 */
#ifndef DTSIM_TRAIN_SAMPLER_H
#define DTSIM_TRAIN_SAMPLER_H

#include <glib.h>

#include "engine/engine.h"

G_BEGIN_DECLS

typedef enum { TRAIN_PARTITION_IID, TRAIN_PARTITION_BY_LABEL } TrainPartition;

/* The batches of data-parallel workers (train/sampler.c): the training
 * set is partitioned among the workers, each worker cycling through its part
 * in an order reshuffled at every pass. */
typedef struct {
  EngRng rng;   /* reshuffles this worker's part */
  int *idx;     /* (len) sample indices of this worker's part */
  int len;
  int cursor;   /* next position in idx */
} TrainSampler;

/* How the training set is split among workers (docs/policies.md, "Data
 * partitioning"): `iid` shuffles it and cuts it into contiguous parts;
 * `by-label` gives each worker shards of only a few classes. */

/* Parses "iid" or "by-label" into *out; FALSE (and *out untouched) for any
 * other name. */
gboolean train_partition_parse (const char *name, TrainPartition *out);
/* The name train_partition_parse() reads for p. */
const char *train_partition_name (TrainPartition p);

/* One sampler per worker for a training set of n samples, `iid` partition:
 * the set shuffled once and cut into `workers` contiguous parts. */
TrainSampler *train_samplers_new (int n, int workers, guint64 seed);
/* One sampler per worker, `by-label` partition of the n samples whose labels
 * (in [0, k)) are given: workers x classes_per_worker single-class shards
 * dealt classes_per_worker to each worker, so that no worker's part holds
 * more than classes_per_worker distinct labels.  Requires workers x
 * classes_per_worker to be at least the number of classes present and at
 * most n. */
TrainSampler *train_samplers_new_by_label (const int *labels, int n, int k,
                                       int workers, int classes_per_worker,
                                       guint64 seed);
void train_samplers_free (TrainSampler *s, int workers);
/* Writes the indices of the next `batch` samples of this worker into idx. */
void train_sampler_next (TrainSampler *s, int batch, int *idx);

G_END_DECLS

#endif /* DTSIM_TRAIN_SAMPLER_H */
