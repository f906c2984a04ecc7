/*
 * coll-program.h — what a collective algorithm's file sees of the executor
 * (policies/collectives.c); private to policies/.
 *
 * An algorithm is one file (policies/coll-*.c) defining one PolCollAlgorithm.
 * Each rank runs a *program*, an ordered list of steps (PolCollStep), which
 * the algorithm gives in one of two ways:
 *
 *   - generated: its `step` writes step `index` of rank `rank` from a formula
 *     when the executor reaches it, so no program is stored (memory O(p) per
 *     collective); its `build` only checks the kind and may set op->state;
 *   - stored: its `build` writes every rank's whole program with
 *     pol_coll_prog_send(), pol_coll_prog_recv() and pol_coll_prog_local(),
 *     and its `step` is NULL.
 *
 * Either way the executor runs the programs under one dependency rule for
 * every algorithm (docs/collectives.md), and a cost function gives the
 * algorithm's closed form.  The registry in collectives.c lists the
 * algorithms, and no other file names one.
 */
#ifndef DTSIM_COLL_PROGRAM_H
#define DTSIM_COLL_PROGRAM_H

#include <glib.h>

#include "policies/collectives.h"

G_BEGIN_DECLS

/* What an algorithm reads of the collective it gives programs for.  The
 * executor's own state begins with it. */
struct PolCollOp {
  int p;              /* ranks, >= 1 */
  gsize n;            /* floats per buffer */
  int root;           /* broadcast root (and tree/naive driver), in [0, p) */
  PolCollKind kind;   /* the collective asked for */
  const int *group;   /* (p) locality: the group of each rank's host
                         (net_network_host_group); ranks with equal values
                         share a node or rack.  Every rank alone (all
                         distinct) unless the topology says otherwise */
  gpointer state;     /* the algorithm's own data for `step`, set by `build`
                         (NULL = none) */
  GDestroyNotify state_free; /* frees `state` with the collective, or NULL */
};

/* How a receive step combines what it received. */
typedef enum {
  POL_COLL_RECV_REDUCE, /* buf[lo, hi) += payload, costs reduce_per_byte */
  POL_COLL_RECV_COPY,   /* buf[lo, hi) = payload, free */
  POL_COLL_RECV_ACC     /* acc[lo, hi) += payload, costs reduce_per_byte */
} PolCollRecvMode;

/* Flags of a send step; 0 is eager (the rank goes on at once). */
enum {
  POL_COLL_SEND_WAIT = 1 << 0, /* the step ends when the last byte has arrived */
  POL_COLL_SEND_RDV = 1 << 1   /* starts only once the receiver is at the receive */
};

/* Local steps on the root's accumulator (naive).  The accumulator (n floats,
 * zeroed) exists once a step uses it. */
typedef enum {
  POL_COLL_ACC_OWN,   /* acc += own buffer (free) */
  POL_COLL_ACC_STORE  /* own buffer = acc */
} PolCollLocal;

typedef enum {
  POL_COLL_STEP_SEND,  /* hand [lo, hi) to `peer` */
  POL_COLL_STEP_RECV,  /* take [lo, hi) from `peer`, combine per `mode` */
  POL_COLL_STEP_LOCAL  /* PolCollLocal `mode` on the accumulator */
} PolCollStepType;

/* One step of a rank's program.  Messages between two ranks match in
 * program order: the k-th receive from src takes src's k-th send to the
 * receiver. */
struct PolCollStep {
  guint8 type;        /* PolCollStepType */
  guint8 mode;        /* PolCollRecvMode (RECV) or PolCollLocal (LOCAL) */
  guint8 flags;       /* POL_COLL_SEND_* (SEND) */
  int peer;           /* rank sent to or received from (!= the rank) */
  gsize lo, hi;       /* element range [lo, hi), lo <= hi <= n */
};

/* Fill *out with a send of [lo, hi) to dst (flags POL_COLL_SEND_*), a
 * receive of [lo, hi) from src combined per `mode`, or a local step; they
 * return TRUE, for a generator to return. */
gboolean pol_coll_step_send (PolCollStep *out, int dst, gsize lo, gsize hi,
                             guint flags);
gboolean pol_coll_step_recv (PolCollStep *out, int src, gsize lo, gsize hi,
                             PolCollRecvMode mode);
gboolean pol_coll_step_local (PolCollStep *out, PolCollLocal step);

/* Stored programs (algorithms without `step`), from their `build`: append
 * to rank r's program a send of elements [lo, hi) to rank dst (dst != r,
 * lo <= hi <= n) with flags POL_COLL_SEND_*, a receive of [lo, hi) from
 * rank src (src != r) combined per `mode`, or a local step. */
void pol_coll_prog_send (PolCollOp *op, int r, int dst, gsize lo, gsize hi,
                         guint flags);
void pol_coll_prog_recv (PolCollOp *op, int r, int src, gsize lo, gsize hi,
                         PolCollRecvMode mode);
void pol_coll_prog_local (PolCollOp *op, int r, PolCollLocal step);

/* Sets POL_COLL_ERROR_UNSUPPORTED for algorithm `alg` and `kind`; returns
 * FALSE, for a builder to return. */
gboolean pol_coll_unsupported (const char *alg, PolCollKind kind,
                               GError **error);

/* a mod p in [0, p), for any sign of a (p >= 1). */
static inline int
pol_coll_mod (int a, int p)
{
  int m = a % p;   /* one division: the steps' hot path */

  return m < 0 ? m + p : m;
}

G_END_DECLS

#endif /* DTSIM_COLL_PROGRAM_H */
