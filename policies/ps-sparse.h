/*
 * ps-sparse.h — sparse pulls and pushes of the parameter server ([policy]
 * pull = sparse, docs/policies.md, "Sparse pulls and pushes").
 *
 * A worker whose model reads only some parameters per batch (the model's
 * `touched` op: kind = sparse) pulls from each server only the keys its next
 * batch reads that lie in the server's shard, and pushes only those of its
 * gradient.  This file holds the key-set arithmetic: which keys a batch
 * touches, how many fall in each shard, and their bytes on the wire; ps.c
 * decides when a worker draws its batch and sends what.
 */
#ifndef DTSIM_PS_SPARSE_H
#define DTSIM_PS_SPARSE_H

#include <glib.h>

#include "kernels/kernels.h"
#include "policies/partition.h"

G_BEGIN_DECLS

/* Bytes of one key on the wire: its value (a float32) and its index (a
 * 32-bit integer). */
#define POL_SPARSE_KEY_BYTES 8.0

typedef enum { POL_PULL_DENSE, POL_PULL_SPARSE } PolPull;

typedef struct PolSparse PolSparse;

/* The key counter of a run: `model` and `train` borrowed, batches of
 * `batch` samples, the keys placed on servers by `part` (its ranges and
 * their owners, copied).  The model must have a touched op. */
PolSparse *pol_sparse_new (KernModel *model, const KernDataset *train, int batch,
                           const PolPartition *part);
void pol_sparse_free (PolSparse *sp);
/* The keys the batch of training samples idx (batch of them) touches,
 * counted per shard into counts (servers); returns their total. */
gint64 pol_sparse_count (PolSparse *sp, const int *idx, gint64 *counts);
/* Bytes on the wire of `keys` keys: POL_SPARSE_KEY_BYTES each. */
double pol_sparse_bytes (gint64 keys);

G_END_DECLS

#endif /* DTSIM_PS_SPARSE_H */
