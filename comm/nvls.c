/*
 * nvls.c — collectives reduced inside the network: NVLink SHARP (NVLS),
 * where the NVSwitch of a server adds what its GPUs send it and multicasts
 * the sum back, and NVLSTree, NVLS inside each server with a tree across
 * the servers; across servers NVLS itself needs a fabric that reduces too
 * (InfiniBand SHARP).  Their transfers end at a switch, not at a rank, so
 * they do not run as rank programs: each runs itself (CommAlgorithm.start)
 * as the flows between every GPU and its switches, which netmodel/ shares
 * with everything else on the links (net_send_port).  docs/collectives.md,
 * "nvls and nvls-tree", gives the model, its cost formula and its sources.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/program.h"
#include "comm/shard.h"

/* Where a collective's ranks sit: one switch that reduces per node (level
 * 0), every node with the same number g of ranks, m nodes. */
typedef struct {
  int g, m;          /* ranks per node, nodes (m >= 1) */
  gboolean sharp;    /* with m > 1: the fabric between the nodes reduces */
  double alpha_in;   /* s: up and back through a node's switch, floored
                        by NCCL's latency for the algorithm (the intra-node
                        step overhead scaled) */
  double beta_in;    /* s/byte each rank gets through its node's switch */
  double alpha_out;  /* s: up and back through the fabric's switch,
                        floored by the step overhead scaled likewise, plus
                        the NIC's declared latency as Simple pays it */
  double beta_out;   /* s/byte each rank gets through its NIC */
} NvlsShape;

/* The shape of a's ranks for NVLS (`tree` FALSE) or NVLSTree, its figures
 * read from rank 0's ports (every node built alike), the latencies floored
 * by the step overheads scaled to NCCL's latency for the algorithm
 * (comm_protocol_nvls_step_scale); FALSE (with the reason in *why,
 * static) where a rank has no switch that reduces, the nodes hold
 * different numbers of ranks, or, across nodes, there is no switch
 * between them. */
static gboolean
nvls_shape (const CommArgs *a, gboolean tree, NvlsShape *s, const char **why)
{
  NetNetwork *net = a->net;
  int sw0 = net_network_host_switch (net, a->hosts[0], 0);
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  double up, down, rate;

  memset (s, 0, sizeof *s);
  if (sw0 < 0 || !net_network_switch_reduces (net, sw0))
    {
      *why = "no switch that reduces joins its GPUs (set [network] "
             "topology = nodes and nvswitch = sharp)";
      return FALSE;
    }
  for (int r = 0; r < a->p; r++)
    {
      int sw = net_network_host_switch (net, a->hosts[r], 0);
      gpointer k = GINT_TO_POINTER (sw + 1);

      if (sw < 0 || !net_network_switch_reduces (net, sw))
        {
          *why = "a rank's node has no switch that reduces";
          return FALSE;
        }
      g_hash_table_replace (seen, k,
                            GINT_TO_POINTER (GPOINTER_TO_INT (
                              g_hash_table_lookup (seen, k)) + 1));
    }
  s->m = (int) g_hash_table_size (seen);
  s->g = a->p / s->m;
  if (s->g * s->m != a->p)
    {
      *why = "its nodes hold different numbers of ranks";
      return FALSE;
    }
  {
    GHashTableIter it;
    gpointer k, v;

    g_hash_table_iter_init (&it, seen);
    while (g_hash_table_iter_next (&it, &k, &v))
      if (GPOINTER_TO_INT (v) != s->g)
        {
          *why = "its nodes hold different numbers of ranks";
          return FALSE;
        }
  }
  up = net_network_port_bandwidth (net, a->hosts[0], 0, TRUE);
  down = net_network_port_bandwidth (net, a->hosts[0], 0, FALSE);
  rate = net_network_switch_rate (net, sw0);
  s->alpha_in = MAX (a->intra_step_overhead
                       * comm_protocol_nvls_step_scale (tree, a->intra_hw),
                     net_network_port_latency (net, a->hosts[0], 0, TRUE)
                     + net_network_port_latency (net, a->hosts[0], 0, FALSE));
  s->beta_in = 1 / MIN (MIN (up, down), rate);
  if (s->m > 1)
    {
      int sw1 = net_network_host_switch (net, a->hosts[0], 1);

      if (sw1 < 0)
        {
          *why = "its nodes have no switch between them";
          return FALSE;
        }
      s->sharp = net_network_switch_reduces (net, sw1);
      s->alpha_out = MAX (a->step_overhead
                            * comm_protocol_nvls_step_scale (tree, a->hw),
                          net_network_port_latency (net, a->hosts[0], 1, TRUE)
                          + net_network_port_latency (net, a->hosts[0], 1,
                                                      FALSE))
                     + a->cross_latency
                     + a->nic_latency * comm_protocol_nic_latency_scale (NULL);
      s->beta_out = 1 / MIN (net_network_port_bandwidth (net, a->hosts[0], 1,
                                                         TRUE),
                             net_network_port_bandwidth (net, a->hosts[0], 1,
                                                         FALSE));
    }
  return TRUE;
}

/* Bytes each rank moves, pipelined, for `kind` among g ranks of a node over
 * N bytes: up to its node's switch (*up) and back down (*down); and to the
 * fabric and back (*cross, each way) where m > 1.  All-reduce: the switch
 * reads every block of the rank's buffer to reduce it (N) and the rank
 * stores its reduced block (N/g) for the switch to multicast, which
 * brings every block back (N/g + N); across nodes each rank's block of
 * N/g goes out and comes back.  Reduce-scatter: N up, the rank's block
 * down; all-gather: the block up, N down (one node only). */
static void
nvls_bytes (CommKind kind, int g, int m, double N, double *up, double *down,
            double *cross)
{
  *cross = m > 1 ? N / g : 0;
  switch (kind)
    {
    case COMM_ALLREDUCE:
      *up = *down = N + N / g;
      break;
    case COMM_REDUCE_SCATTER:
      *up = N;
      *down = N / g;
      break;
    case COMM_ALLGATHER:
      *up = N / g;
      *down = N;
      break;
    default:
      *up = *down = NAN;
      break;
    }
}

/* The latency of the cross-node part: one trip up and back through the
 * fabric's switch where it reduces (SHARP); a tree's reduction up
 * ceil(log2 m) levels then its broadcast down as many, each level one trip
 * between two nodes. */
static double
cross_trips (int m, gboolean sharp)
{
  int depth = 0;

  if (m < 2)
    return 0;
  if (sharp)
    return 1;
  while ((1 << depth) < m)
    depth++;
  return 2.0 * depth;
}

/* The time, s, an all-reduce of N bytes among the g GPUs of one node
 * waits for its chunks beyond what it would wait at NCCL's largest chunk:
 * NCCL pipelines NVLS in smaller chunks for smaller collectives
 * (comm_protocol_nvls_chunk), so each of its channels runs more loop
 * iterations, each paying COMM_NVLS_CHUNK_COST, than the catalog's rate,
 * measured at the largest chunk, holds:
 *   COMM_NVLS_CHUNK_COST (I(c) - I(COMM_NVLS_CHUNK_MAX)),
 * I of comm_protocol_nvls_iterations.  0 for the other kinds and across
 * nodes (docs/collectives.md, "nvls and nvls-tree": why). */
static double
nvls_chunk_wait (CommKind kind, int g, int m, double N)
{
  double c;

  if (kind != COMM_ALLREDUCE || m != 1 || g < 2 || !(N > 0))
    return 0;
  c = comm_protocol_nvls_chunk (g, N);
  return COMM_NVLS_CHUNK_COST
         * (comm_protocol_nvls_iterations (g, N, c)
            - comm_protocol_nvls_iterations (g, N, COMM_NVLS_CHUNK_MAX));
}

/* The formula both algorithms share, the tree's latency across nodes
 * unless `sharp`: every flow starts at once (the switches pipeline) and
 * lasts its latency, its chunks' wait W, then its bytes, so
 *   T = alpha_in + trips alpha_out + W + max(U beta_in, D beta_in, X beta_out)
 * with U, D, X of nvls_bytes and W of nvls_chunk_wait; NaN for a kind it
 * does not do.  A reduction is the switch's, at no cost to the ranks
 * (gamma unused). */
static double
nvls_formula (CommKind kind, int g, int m, gsize n, double elem_bytes,
              double alpha_in, double beta_in, double alpha_out,
              double beta_out, gboolean sharp)
{
  double U, D, X, N = (double) n * elem_bytes;

  if (m > 1 && kind != COMM_ALLREDUCE)
    return NAN;
  nvls_bytes (kind, g, m, N, &U, &D, &X);
  if (isnan (U))
    return NAN;
  return alpha_in + cross_trips (m, sharp) * alpha_out
         + nvls_chunk_wait (kind, g, m, N)
         + MAX (MAX (U, D) * beta_in, X * beta_out);
}

/* Uniform links (every route alpha, beta), groups of `group` ranks, each
 * joined by a switch that reduces; across groups, NVLS reduces in the
 * fabric's switch, NVLSTree through a tree.  group = 1 (no grouping
 * known) is one switch joining all p ranks. */
static double
nvls_cost (CommKind kind, int p, int group, gsize n, double elem_bytes,
           double alpha, double beta, double gamma G_GNUC_UNUSED)
{
  if (group <= 1)
    group = p;
  return nvls_formula (kind, group, p / group, n, elem_bytes, alpha, beta,
                       alpha, beta, TRUE);
}

static double
nvls_tree_cost (CommKind kind, int p, int group, gsize n, double elem_bytes,
                double alpha, double beta, double gamma G_GNUC_UNUSED)
{
  if (kind != COMM_ALLREDUCE)
    return NAN;
  if (group <= 1)
    group = p;
  return nvls_formula (kind, group, p / group, n, elem_bytes, alpha, beta,
                       alpha, beta, FALSE);
}

/* One running collective: every rank's flows to and from its switches,
 * the result written when the last has arrived. */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  CommKind kind;
  int p;
  int *hosts;        /* (p) */
  float **bufs;      /* (p) borrowed, or NULL (timing only) */
  gsize n;
  double elem_bytes; /* bytes per element on the wire */
  NvlsShape shape;
  gboolean sharp;    /* cross the nodes through the fabric's reduction */
  int tag;
  int pending;       /* flows not yet arrived */
  CommDone done;
  gpointer ctx, data;
} NvlsOp;

/* Writes the collective's result into the buffers: every rank's sum
 * (all-reduce), its block of it (reduce-scatter), every rank's block
 * (all-gather); sums in rank order. */
static void
nvls_apply (NvlsOp *op)
{
  int p = op->p;
  gsize n = op->n;

  if (op->bufs == NULL)
    return;
  if (op->kind == COMM_ALLGATHER)
    {
      for (int b = 0; b < p; b++)
        {
          gsize lo, hi;

          comm_shard_bounds (n, p, b, &lo, &hi);
          for (int r = 0; r < p; r++)
            if (r != b && hi > lo)
              memcpy (op->bufs[r] + lo, op->bufs[b] + lo,
                      sizeof (float) * (hi - lo));
        }
      return;
    }
  {
    g_autofree float *sum = g_new0 (float, MAX (n, 1));

    for (int r = 0; r < p; r++)
      for (gsize e = 0; e < n; e++)
        sum[e] += op->bufs[r][e];
    for (int r = 0; r < p; r++)
      {
        gsize lo = 0, hi = n;

        if (op->kind == COMM_REDUCE_SCATTER)
          comm_shard_bounds (n, p, r, &lo, &hi);
        if (hi > lo)
          memcpy (op->bufs[r] + lo, sum + lo, sizeof (float) * (hi - lo));
      }
  }
}

static void
nvls_op_free (NvlsOp *op)
{
  g_free (op->hosts);
  g_free (op->bufs);
  g_free (op);
}

/* NetDone of every flow: the last one completes the collective. */
static void
on_flow (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED,
         const NetTransfer *t G_GNUC_UNUSED)
{
  NvlsOp *op = ctx;

  if (--op->pending > 0)
    return;
  nvls_apply (op);
  op->done (sim, op->ctx, op->data);
  nvls_op_free (op);
}

/* After the launch overhead (none: NCCL's base latency for these is 0,
 * their step latency all of it): every rank's flows at once, each floored at
 * the latency of the whole path plus its chunks' wait, which moves no
 * bytes (formula: nvls_formula). */
static void
on_launch (EngSim *sim G_GNUC_UNUSED, gpointer ctx,
           gpointer data G_GNUC_UNUSED)
{
  NvlsOp *op = ctx;
  const NvlsShape *s = &op->shape;
  double U, D, X, floor;

  nvls_bytes (op->kind, s->g, s->m, (double) op->n * op->elem_bytes, &U, &D,
              &X);
  floor = s->alpha_in + cross_trips (s->m, op->sharp) * s->alpha_out
          + nvls_chunk_wait (op->kind, s->g, s->m,
                             (double) op->n * op->elem_bytes);
  op->pending = op->p * (s->m > 1 ? 4 : 2);
  for (int r = 0; r < op->p; r++)
    {
      int h = op->hosts[r];

      net_send_port (op->net, h, 0, TRUE, U, floor, op->tag, on_flow, op,
                     NULL);
      net_send_port (op->net, h, 0, FALSE, D, floor, op->tag, on_flow, op,
                     NULL);
      if (s->m > 1)
        {
          net_send_port (op->net, h, 1, TRUE, X, floor, op->tag, on_flow, op,
                         NULL);
          net_send_port (op->net, h, 1, FALSE, X, floor, op->tag, on_flow,
                         op, NULL);
        }
    }
}

/* Checks that `kind` runs for `a` with the fabric's reduction across nodes
 * or not (`sharp_needed`: NVLS; else NVLSTree); the shape in *s. */
static gboolean
nvls_fits (const char *name, const CommArgs *a, CommKind kind,
           gboolean sharp_needed, NvlsShape *s, GError **error)
{
  const char *why = NULL;

  if (!nvls_shape (a, !sharp_needed, s, &why))
    {
      g_set_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED,
                   "%s: %s", name, why);
      return FALSE;
    }
  if (kind != COMM_ALLREDUCE
      && (s->m > 1 || (kind != COMM_REDUCE_SCATTER && kind != COMM_ALLGATHER)
          || !sharp_needed))
    {
      g_set_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED,
                   "%s does not do %s%s", name, comm_kind_name (kind),
                   s->m > 1 && sharp_needed ? " across nodes" : "");
      return FALSE;
    }
  if (s->m > 1 && sharp_needed && !s->sharp)
    {
      g_set_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED,
                   "%s across nodes needs a fabric that reduces (set "
                   "[network] ib_sharp = true, or use nvls-tree)", name);
      return FALSE;
    }
  return TRUE;
}

/* Starts `kind` over a's ranks as the flows to and from their switches. */
static gboolean
nvls_run (const char *name, gboolean sharp_needed, const CommArgs *a,
          CommKind kind, CommDone done, gpointer ctx, gpointer data,
          GError **error)
{
  NvlsOp *op;
  NvlsShape s;

  if (!nvls_fits (name, a, kind, sharp_needed, &s, error))
    return FALSE;
  op = g_new0 (NvlsOp, 1);
  op->sim = a->sim;
  op->net = a->net;
  op->kind = kind;
  op->p = a->p;
  op->hosts = g_memdup2 (a->hosts, sizeof (int) * (gsize) a->p);
  op->bufs = a->bufs ? g_memdup2 (a->bufs, sizeof (float *) * (gsize) a->p)
                     : NULL;
  op->n = a->n;
  op->shape = s;
  op->sharp = sharp_needed;
  op->tag = a->tag;
  op->done = done;
  op->ctx = ctx;
  op->data = data;
  op->elem_bytes = a->elem_bytes;
  eng_schedule (a->sim, a->launch_overhead * comm_protocol_nvls_launch_scale (),
                on_launch, op, NULL);
  return TRUE;
}

static gboolean
nvls_start (const CommArgs *a, CommKind kind, CommDone done, gpointer ctx,
            gpointer data, GError **error)
{
  return nvls_run ("nvls", TRUE, a, kind, done, ctx, data, error);
}

static gboolean
nvls_tree_start (const CommArgs *a, CommKind kind, CommDone done,
                 gpointer ctx, gpointer data, GError **error)
{
  return nvls_run ("nvls-tree", FALSE, a, kind, done, ctx, data, error);
}

/* Prices for auto: the formula on a's network (launch overhead left out,
 * as auto leaves it out of every algorithm's), NaN where it does not run. */
static double
nvls_price_as (const char *name, gboolean sharp_needed, const CommArgs *a,
               CommKind kind)
{
  NvlsShape s;

  if (!nvls_fits (name, a, kind, sharp_needed, &s, NULL))
    return NAN;
  return nvls_formula (kind, s.g, s.m, a->n, a->elem_bytes, s.alpha_in,
                         s.beta_in, s.alpha_out, s.beta_out, sharp_needed);
}

static double
nvls_price (const CommArgs *a, CommKind kind)
{
  return nvls_price_as ("nvls", TRUE, a, kind);
}

static double
nvls_tree_price (const CommArgs *a, CommKind kind)
{
  return nvls_price_as ("nvls-tree", FALSE, a, kind);
}

/* Flows per collective: two per rank (to its node's switch and back), two
 * more across nodes; the count for one node (p ranks in one group). */
static double
nvls_messages (CommKind kind G_GNUC_UNUSED, int p, gsize n G_GNUC_UNUSED)
{
  return 2.0 * p;
}

const CommAlgorithm comm_nvls = {
  .name = "nvls",
  .description = "NVLink SHARP: each GPU sends its buffer to the node's "
                 "switch, which reduces and multicasts the sum (needs "
                 "nvswitch = sharp; across nodes, ib_sharp = true)",
  .source = "NVIDIA NCCL 2.17 release notes (NVLink SHARP on NVSwitch 3); "
            "NVIDIA/nccl-tests issue 212 (8 x H100: about 480 GB/s busbw)",
  .cost = nvls_cost,
  .messages = nvls_messages,
  .start = nvls_start,
  .price = nvls_price,
  .in_switch = TRUE,
  .fabric_sharp = TRUE,
  .nccl = TRUE,
};

const CommAlgorithm comm_nvls_tree = {
  .name = "nvls-tree",
  .description = "NVLSTree: NVLink SHARP inside each node, a pipelined "
                 "tree across the nodes (all-reduce; needs nvswitch = sharp)",
  .source = "NVIDIA NCCL 2.18 release notes (NVLSTree); NVIDIA/nccl issue "
            "1221 (16 x H100: about 430 GB/s busbw)",
  .cost = nvls_tree_cost,
  .messages = nvls_messages,
  .start = nvls_tree_start,
  .price = nvls_tree_price,
  .in_switch = TRUE,
  .nccl = TRUE,
};
