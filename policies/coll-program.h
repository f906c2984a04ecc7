/*
 * coll-program.h — what a collective algorithm's file sees of the executor
 * (policies/collectives.c); private to policies/.
 *
 * An algorithm is one file (policies/coll-*.c) defining one PolCollAlgorithm:
 * a builder, which writes one program per rank with pol_coll_prog_send(),
 * pol_coll_prog_recv() and pol_coll_prog_local(), and a cost function giving
 * its closed form (docs/collectives.md).  The executor runs the programs
 * under one dependency rule for every algorithm; the registry in
 * collectives.c lists the algorithms, and no other file names one.
 */
#ifndef DTSIM_COLL_PROGRAM_H
#define DTSIM_COLL_PROGRAM_H

#include <glib.h>

#include "policies/collectives.h"

G_BEGIN_DECLS

/* What a builder reads of the collective it writes programs for.  The
 * executor's own state begins with it. */
struct PolCollOp {
  int p;              /* ranks, >= 1 */
  gsize n;            /* floats per buffer */
  int root;           /* broadcast root (and tree/naive driver), in [0, p) */
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

/* Local steps on the root's accumulator (naive). */
typedef enum {
  POL_COLL_ACC_OWN,   /* acc += own buffer (free) */
  POL_COLL_ACC_STORE  /* own buffer = acc */
} PolCollLocal;

/* Appends to rank r's program a send of elements [lo, hi) to rank dst
 * (dst != r, lo <= hi <= n), with flags POL_COLL_SEND_*. */
void pol_coll_prog_send (PolCollOp *op, int r, int dst, gsize lo, gsize hi,
                         guint flags);
/* Appends to rank r's program the receive of elements [lo, hi) from rank
 * src (src != r), combined per `mode`.  Messages between two ranks match in
 * program order: the k-th receive from src takes src's k-th send to r. */
void pol_coll_prog_recv (PolCollOp *op, int r, int src, gsize lo, gsize hi,
                         PolCollRecvMode mode);
/* Appends a local step on the accumulator to rank r's program; the
 * accumulator (n floats, zeroed) exists once a step uses it. */
void pol_coll_prog_local (PolCollOp *op, int r, PolCollLocal step);

/* Sets POL_COLL_ERROR_UNSUPPORTED for algorithm `alg` and `kind`; returns
 * FALSE, for a builder to return. */
gboolean pol_coll_unsupported (const char *alg, PolCollKind kind,
                               GError **error);

/* a mod p in [0, p), for any sign of a (p >= 1). */
static inline int
pol_coll_mod (int a, int p)
{
  return ((a % p) + p) % p;
}

G_END_DECLS

#endif /* DTSIM_COLL_PROGRAM_H */
