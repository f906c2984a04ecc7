/*
 * ps-replica.h — the backup copies of a parameter server's key ranges
 * under chain replication (`[policy] replication = k`).
 *
 * Range r's chain (policies/partition.h) is its owner, the primary, then
 * the next k - 1 distinct servers along the ring.  The primary's keys live
 * in the policy's parameter vector; this module keeps the copy of every
 * range at chain positions 1 .. k - 1, each with its own optimizer state
 * and (BSP) round sum, and applies forwarded gradients to them with the
 * same arithmetic as the primary, so a replica that has applied the same
 * gradients in the same order holds the same bits.  docs/policies.md
 * ("Chain replication") is the normative description; the messages that
 * carry the gradients along the chains are ps.c's.
 */
#ifndef DTSIM_POLICIES_PS_REPLICA_H
#define DTSIM_POLICIES_PS_REPLICA_H

#include <glib.h>

#include "kernels/kernels.h"
#include "policies/partition.h"

G_BEGIN_DECLS

/* Bytes of the acknowledgement the tail of a chain sends to the worker:
 * the range's index and the iteration, 8 bytes each. */
#define POL_PS_ACK_BYTES 16

typedef struct PolReplicas PolReplicas;

/* The replicas of every range of `part` (whose chains keep k >= 2
 * servers) for W workers.  With `init` (the P initial parameters) each
 * replica starts as a copy of it with a fresh optimizer from `opt`; with
 * init = NULL (a timing-only model) they hold no numbers and only count.
 * `bsp`: one optimizer step per W gradients, with their mean, as the BSP
 * primary does; else one step per gradient. */
PolReplicas *pol_replicas_new (const PolPartition *part, int k, int W, const float *init,
                               const KernOptConfig *opt, gboolean bsp);
void pol_replicas_free (PolReplicas *rp);

/* The chain length k. */
int pol_replicas_k (const PolReplicas *rp);

/* Applies worker w's gradient of iteration `iter` for range r (the range's
 * len floats, or NULL without numbers) at chain position h (1 <= h < k).
 * Gradients of one worker reach a replica in iteration order; one already
 * applied there (iter below the count applied) is skipped: returns FALSE
 * then, TRUE when applied. */
gboolean pol_replicas_apply (PolReplicas *rp, int r, int h, int w, gint64 iter,
                             const float *grad);

/* Range r's parameters at chain position h (len floats), or NULL without
 * numbers. */
const float *pol_replicas_params (const PolReplicas *rp, int r, int h);

/* Gradients of worker w applied to range r at chain position h. */
gint64 pol_replicas_applied (const PolReplicas *rp, int r, int h, int w);

/* A takeover: the copy of range r at chain position h becomes the range's
 * primary.  Its parameters go to params (len floats; NULL without
 * numbers), its optimizer state replaces *opt (the old one is freed; opt
 * NULL without numbers), its BSP round to round_sum (len floats, or NULL)
 * and *round_n, its gradients applied per worker to held (W).  The copy
 * keeps no state and takes no further gradient. */
void pol_replicas_promote (PolReplicas *rp, int r, int h, float *params, KernOptimizer **opt,
                           float *round_sum, gint64 *round_n, gint64 *held);

G_END_DECLS

#endif /* DTSIM_POLICIES_PS_REPLICA_H */
