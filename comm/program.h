/*
 * program.h — what a collective algorithm's file sees of the executor
 * (comm/collectives.c); private to comm/.
 *
 * An algorithm is one file (comm/NAME.c) defining one CommAlgorithm.
 * Each rank runs a *program*, an ordered list of steps (CommStep), which
 * the algorithm gives in one of two ways:
 *
 *   - generated: its `step` writes step `index` of rank `rank` from a formula
 *     when the executor reaches it, so no program is stored (memory O(p) per
 *     collective); its `build` only checks the kind and may set op->state;
 *   - stored: its `build` writes every rank's whole program with
 *     comm_prog_send(), comm_prog_recv() and comm_prog_local(),
 *     and its `step` is NULL.
 *
 * Either way the executor runs the programs under one dependency rule for
 * every algorithm (docs/collectives.md), and a cost function gives the
 * algorithm's closed form.  The registry in collectives.c lists the
 * algorithms, and no other file names one.
 */
#ifndef DTSIM_COMM_PROGRAM_H
#define DTSIM_COMM_PROGRAM_H

#include <glib.h>

#include "comm/collectives.h"

G_BEGIN_DECLS

/* What an algorithm reads of the collective it gives programs for.  The
 * executor's own state begins with it. */
struct CommOp {
  int p;              /* ranks, >= 1 */
  gsize n;            /* floats per buffer */
  int root;           /* broadcast root (and tree/naive driver), in [0, p) */
  CommKind kind;   /* the collective asked for */
  double elem_bytes;  /* bytes of an element on the wire (its protocol's
                         lines included): for chunk rules in bytes */
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
  COMM_RECV_REDUCE, /* buf[lo, hi) += payload, costs reduce_per_byte */
  COMM_RECV_COPY,   /* buf[lo, hi) = payload, free */
  COMM_RECV_ACC     /* acc[lo, hi) += payload, costs reduce_per_byte */
} CommRecvMode;

/* Flags of a send step; 0 is eager (the rank goes on at once). */
enum {
  COMM_SEND_WAIT = 1 << 0, /* the step ends when the last byte has arrived */
  COMM_SEND_RDV = 1 << 1,  /* starts only once the receiver is at the receive */
  COMM_SEND_STREAM = 1 << 2 /* the step ends once the bytes are on the wire
                               (bytes / the route's bandwidth, plus the
                               ceiling's wait), not after the latency, and
                               starts only while fewer than COMM_SLOTS
                               earlier messages to the receiver are untaken */
};

/* Messages a streaming sender may have handed to one receiver that it has
 * not taken yet: NCCL's slots per connection (NCCL_STEPS, src/include/
 * device.h; a sender waits in src/device/prims_simple.h and prims_ll.h
 * while it is that many steps ahead of its receiver). */
#define COMM_SLOTS 8

/* Local steps on the root's accumulator (naive).  The accumulator (n floats,
 * zeroed) exists once a step uses it. */
typedef enum {
  COMM_ACC_OWN,   /* acc += own buffer (free) */
  COMM_ACC_STORE  /* own buffer = acc */
} CommLocal;

typedef enum {
  COMM_STEP_SEND,  /* hand [lo, hi) to `peer` */
  COMM_STEP_RECV,  /* take [lo, hi) from `peer`, combine per `mode` */
  COMM_STEP_LOCAL  /* CommLocal `mode` on the accumulator */
} CommStepType;

/* One step of a rank's program.  Messages between two ranks match in
 * program order: the k-th receive from src takes src's k-th send to the
 * receiver. */
struct CommStep {
  guint8 type;        /* CommStepType */
  guint8 mode;        /* CommRecvMode (RECV) or CommLocal (LOCAL) */
  guint8 flags;       /* COMM_SEND_* (SEND) */
  int peer;           /* rank sent to or received from (!= the rank) */
  gsize lo, hi;       /* element range [lo, hi), lo <= hi <= n */
};

/* A phase of a symmetric collective (CommAlgorithm.rounds): `count`
 * rounds around the rings of the permutation `to`.  Each rank r starts the
 * phase holding one block of elems[r] elements; in every round it sends
 * the block it holds to to[r] (an eager send), then receives the block
 * its predecessor sends, combined by adding in the first `reducing`
 * rounds and by copying in the others, and holds that block in the next
 * round, which it starts when the receive has completed.  A block thus
 * travels around its ring one rank per round: a *chain* of transfers of
 * one size.  The phase's first round starts on each rank when its
 * previous phase has ended there. */
struct CommRound {
  int count;          /* rounds, >= 1 */
  int reducing;       /* the first of them that reduce, 0 .. count */
  int *to;            /* (p) newly allocated, freed by the executor: a
                         permutation of the ranks without fixed point */
  gsize *elems;       /* (p) newly allocated, freed by the executor: the
                         block each rank holds at the start, >= 1 */
};

/* Fill *out with a send of [lo, hi) to dst (flags COMM_SEND_*), a
 * receive of [lo, hi) from src combined per `mode`, or a local step; they
 * return TRUE, for a generator to return. */
gboolean comm_step_send (CommStep *out, int dst, gsize lo, gsize hi,
                             guint flags);
gboolean comm_step_recv (CommStep *out, int src, gsize lo, gsize hi,
                             CommRecvMode mode);
gboolean comm_step_local (CommStep *out, CommLocal step);

/* Stored programs (algorithms without `step`), from their `build`: append
 * to rank r's program a send of elements [lo, hi) to rank dst (dst != r,
 * lo <= hi <= n) with flags COMM_SEND_*, a receive of [lo, hi) from
 * rank src (src != r) combined per `mode`, or a local step. */
void comm_prog_send (CommOp *op, int r, int dst, gsize lo, gsize hi,
                         guint flags);
void comm_prog_recv (CommOp *op, int r, int src, gsize lo, gsize hi,
                         CommRecvMode mode);
void comm_prog_local (CommOp *op, int r, CommLocal step);

/* Sets COMM_ERROR_UNSUPPORTED for algorithm `alg` and `kind`; returns
 * FALSE, for a builder to return. */
gboolean comm_unsupported (const char *alg, CommKind kind,
                               GError **error);

/* How many host groups a's ranks sit in, counted up to 3 (NCCL's
 * ceilings tell one node, two, and more apart); 1 at least. */
int comm_group_count (const CommArgs *a);

/* comm_protocol_rate_cap for a's architecture, host groups and hosts'
 * vendor (a->amd_host), in data
 * bytes/s; INFINITY with COMM_ARCH_OTHER. */
double comm_args_rate_cap (const CommArgs *a, const CommProtocol *pr,
                           CommFamily family, int channels);

/* a mod p in [0, p), for any sign of a (p >= 1). */
static inline int
comm_mod (int a, int p)
{
  int m = a % p;   /* one division: the steps' hot path */

  return m < 0 ? m + p : m;
}

G_END_DECLS

#endif /* DTSIM_COMM_PROGRAM_H */
