/*
 * hier.c — the hierarchical all-reduce: ring reduce-scatter inside
 * each group of ranks that share a node (or rack), ring all-reduce across
 * the groups among the ranks holding the same block, ring all-gather
 * inside each group (Horovod's NCCL reduce-scatter / MPI all-reduce / NCCL
 * all-gather; Huawei HCCL's hierarchical all-reduce).  The groups are the
 * host groups the topology gives (CommOp.group).  Its steps, its cost
 * and how it cuts the buffer for groups of unequal sizes are in
 * docs/collectives.md, "hierarchical"; the executor that runs them is
 * comm/collectives.c.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/program.h"
#include "comm/shard.h"

/* The groups of one collective, from `build`: O(p) ints, then every step
 * is a formula of (rank, index) over them. */
typedef struct {
  int m;         /* groups, numbered 0 .. m-1 in order of their lowest rank */
  int G;         /* blocks the buffer is cut into: the largest group's size */
  int *grp;      /* (p) each rank's group */
  int *loc;      /* (p) each rank's local index: its place in its group, by
                    rank index */
  int *start;    /* (m + 1) group j's ranks are members[start[j] ..
                    start[j+1]) */
  int *members;  /* (p) the ranks, by group, then by rank */
  int storage[]; /* of the four */
} HierGroups;

/* Numbers the groups of op->group densely, in order of their lowest rank,
 * and lists each group's ranks. */
static HierGroups *
hier_groups_new (const CommOp *op)
{
  int p = op->p;
  g_autoptr (GHashTable) dense = g_hash_table_new (g_int_hash, g_int_equal);
  HierGroups *h = g_malloc (sizeof (HierGroups)
                            + sizeof (int) * (4 * (gsize) p + 1));
  int *fill;     /* (m) next free place of each group in members */

  h->grp = h->storage;
  h->loc = h->grp + p;
  h->members = h->loc + p;
  h->start = h->members + p;  /* m + 1 <= p + 1 ints */
  h->m = 0;
  for (int r = 0; r < p; r++)
    {
      gpointer j;

      /* keys point into op->group, which lives as long as `dense` */
      if (!g_hash_table_lookup_extended (dense, &op->group[r], NULL, &j))
        {
          j = GINT_TO_POINTER (h->m++);
          g_hash_table_insert (dense, (gpointer) &op->group[r], j);
        }
      h->grp[r] = GPOINTER_TO_INT (j);
    }
  memset (h->start, 0, sizeof (int) * ((gsize) h->m + 1));
  for (int r = 0; r < p; r++)
    h->start[h->grp[r] + 1]++;
  h->G = 0;
  for (int j = 0; j < h->m; j++)
    {
      h->G = MAX (h->G, h->start[j + 1]);
      h->start[j + 1] += h->start[j];
    }
  fill = g_memdup2 (h->start, sizeof (int) * (gsize) h->m);
  for (int r = 0; r < p; r++)  /* in rank order: members sorted by rank */
    {
      h->loc[r] = fill[h->grp[r]] - h->start[h->grp[r]];
      h->members[fill[h->grp[r]]++] = r;
    }
  g_free (fill);
  return h;
}

/* All-reduce only; the groups are numbered once, here. */
static gboolean
hier_build (CommOp *op, CommKind kind, GError **error)
{
  if (kind != COMM_ALLREDUCE)
    return comm_unsupported ("hierarchical", kind, error);
  op->state = hier_groups_new (op);
  op->state_free = g_free;
  return TRUE;
}

/* Blocks [*b0, *b1) of G that local rank l of a group of g <= G owns: the
 * blocks cut in g contiguous shares as comm_shard_bounds() cuts elements,
 * so a full group (g = G) owns one block per rank. */
static void
owned_blocks (int G, int g, int l, int *b0, int *b1)
{
  gsize lo, hi;

  comm_shard_bounds ((gsize) G, g, l, &lo, &hi);
  *b0 = (int) lo;
  *b1 = (int) hi;
}

/* The local index, in a group of g <= G ranks, of the owner of block b: the
 * inverse of owned_blocks (the first G % g ranks own q + 1 blocks). */
static int
block_owner (int G, int g, int b)
{
  int q = G / g, rem = G % g;

  return b < rem * (q + 1) ? b / (q + 1) : rem + (b - rem * (q + 1)) / q;
}

/* Elements [*lo, *hi) of local rank l's chunk, its blocks together. */
static void
chunk_bounds (const CommOp *op, int g, int l, gsize *lo, gsize *hi)
{
  const HierGroups *h = op->state;
  int b0, b1;
  gsize x;

  owned_blocks (h->G, g, l, &b0, &b1);
  comm_shard_bounds (op->n, h->G, b0, lo, &x);
  comm_shard_bounds (op->n, h->G, b1 - 1, &x, hi);
}

/* Step k of rank r's ring inside its group j (g ranks, local index l), a
 * send when `send`: the reduce-scatter (rs) leaves local l with the
 * group's sum of chunk l (in step k it sends chunk l-k-1 to l+1 and adds
 * chunk l-k-2 from l-1); the all-gather starts from it (sends chunk l-k,
 * copies chunk l-k-1). */
static gboolean
intra_step (const CommOp *op, int r, int k, gboolean send, gboolean rs,
            CommStep *out)
{
  const HierGroups *h = op->state;
  int j = h->grp[r], l = h->loc[r];
  int g = h->start[j + 1] - h->start[j];
  int c = comm_mod (l - k - (rs ? 1 : 0) - (send ? 0 : 1), g);
  gsize lo, hi;

  chunk_bounds (op, g, c, &lo, &hi);
  if (send)
    return comm_step_send (out, h->members[h->start[j]
                                               + (l + 1 == g ? 0 : l + 1)],
                               lo, hi, 0);
  return comm_step_recv (out, h->members[h->start[j]
                                             + (l == 0 ? g - 1 : l - 1)],
                             lo, hi,
                             rs ? COMM_RECV_REDUCE : COMM_RECV_COPY);
}

/* The rank of group j that owns block b. */
static int
owner_rank (const HierGroups *h, int j, int b)
{
  int g = h->start[j + 1] - h->start[j];

  return h->members[h->start[j] + block_owner (h->G, g, b)];
}

/* Step `i` (< 4(m-1)) of rank r's ring all-reduce of block b across the m
 * groups, r standing for its group j: the ring of the owners of b, in
 * group order, cuts it into m sub-blocks; a reducing pass (step k: send
 * sub-block j-k, add j-k-1) then a copying one (send j-k+1, copy j-k),
 * as ring.c does for the whole buffer. */
static gboolean
cross_step (const CommOp *op, int r, int b, int i, CommStep *out)
{
  const HierGroups *h = op->state;
  int m = h->m, j = h->grp[r];
  int pass = i / (2 * (m - 1)), k = i % (2 * (m - 1)) / 2;
  gboolean send = i % 2 == 0;
  int s = comm_mod (j - k + pass - (send ? 0 : 1), m);
  gsize blo, bhi, lo, hi;

  comm_shard_bounds (op->n, h->G, b, &blo, &bhi);
  comm_shard_bounds (bhi - blo, m, s, &lo, &hi);
  if (send)
    return comm_step_send (out, owner_rank (h, j + 1 == m ? 0 : j + 1, b),
                               blo + lo, blo + hi, 0);
  return comm_step_recv (out, owner_rank (h, j == 0 ? m - 1 : j - 1, b),
                             blo + lo, blo + hi,
                             pass == 0 ? COMM_RECV_REDUCE
                                       : COMM_RECV_COPY);
}

/* Step `index` of rank r: 2(g-1) steps of reduce-scatter in its group,
 * 4(m-1) per block it owns (in increasing block order, which every rank
 * shares, so no ring waits on a later one), 2(g-1) of all-gather. */
static gboolean
hier_step (const CommOp *op, int r, guint index, CommStep *out)
{
  const HierGroups *h = op->state;
  int j = h->grp[r], g = h->start[j + 1] - h->start[j];
  guint intra = 2 * (guint) (g - 1), per = 4 * (guint) (h->m - 1);
  int b0, b1;

  if (index < intra)
    return intra_step (op, r, (int) index / 2, index % 2 == 0, TRUE, out);
  index -= intra;
  owned_blocks (h->G, g, h->loc[r], &b0, &b1);
  if (index < per * (guint) (b1 - b0))
    return cross_step (op, r, b0 + (int) (index / per), (int) (index % per),
                       out);
  index -= per * (guint) (b1 - b0);
  if (index < intra)
    return intra_step (op, r, (int) index / 2, index % 2 == 0, FALSE, out);
  return FALSE;
}

/* The hierarchical all-reduce as phases of rounds (CommAlgorithm.rounds)
 * when every group has g ranks (then local rank l owns block l alone) and
 * every sub-block has an element: g - 1 reducing rounds inside the groups,
 * where local rank l starts with chunk l - 1; 2(m - 1) rounds across them
 * among the owners of each block, the first m - 1 reducing, group j's
 * rank starting with sub-block j; g - 1 copying rounds inside the groups,
 * local rank l starting with chunk l.  Chunks and sub-blocks are cut as
 * hier_step cuts them, sizes differing by one. */
static int
hier_rounds (const CommOp *op, CommRound *out, int max)
{
  const HierGroups *h = op->state;
  int m = h->m, g = h->G, p = op->p, n_out = 0;

  if (op->kind != COMM_ALLREDUCE || p < 2 || max < 3)
    return 0;
  for (int j = 0; j < m; j++)
    if (h->start[j + 1] - h->start[j] != g)
      return 0;
  /* the smallest chunk, then its smallest sub-block, has an element */
  if (op->n / (gsize) g < (gsize) m || op->n < (gsize) g)
    return 0;
  for (int phase = 0; phase < 3; phase++)
    {
      gboolean cross = phase == 1;
      CommRound *o;

      if ((cross && m < 2) || (!cross && g < 2))
        continue;
      o = &out[n_out++];
      *o = (CommRound) { cross ? 2 * (m - 1) : g - 1,
                         phase == 0 ? g - 1 : cross ? m - 1 : 0,
                         g_new (int, p), g_new (gsize, p) };
      for (int r = 0; r < p; r++)
        {
          int j = h->grp[r], l = h->loc[r];
          gsize lo, hi, slo, shi;

          if (cross)
            {
              comm_shard_bounds (op->n, g, l, &lo, &hi);
              comm_shard_bounds (hi - lo, m, j, &slo, &shi);
              o->to[r] = h->members[h->start[j + 1 == m ? 0 : j + 1] + l];
              o->elems[r] = shi - slo;
              continue;
            }
          comm_shard_bounds (op->n, g, phase == 0 ? comm_mod (l - 1, g) : l,
                             &lo, &hi);
          o->to[r] = h->members[h->start[j] + (l + 1 == g ? 0 : l + 1)];
          o->elems[r] = hi - lo;
        }
    }
  return n_out;
}

/* The rounds hier_rounds gives for m = p / g groups of g: 2(g - 1)
 * inside the groups and 2(m - 1) across them, when every sub-block has an
 * element. */
static double
hier_class_rounds (CommKind kind, int p, int g, gsize n)
{
  int m = p / g;

  if (kind != COMM_ALLREDUCE || p < 2 || n / (gsize) g < (gsize) m
      || n < (gsize) g)
    return 0;
  return 2.0 * (g - 1) + 2.0 * (m - 1);
}

/* Uniform links, p ranks in m = p/g groups of g: the reduce-scatter and
 * the all-gather of block 0 (M1 = ceil(n/g) elements, the largest) are
 * chains of g-1 transfers each, the ring all-reduce of block 0 across the
 * groups one of 2(m-1) on sub-blocks of M2 = ceil(M1/m), and every other
 * block's path is no longer:
 * (g-1)(2 alpha + M1 (2 beta + gamma)) + (m-1)(2 alpha + M2 (2 beta + gamma)).
 * g = 1 and g = p give the ring's formula.  On two levels the phases
 * inside a node run at alpha_in, beta_in and the one across at alpha_out,
 * beta_out (groups of l->group dividing p). */
static double
hier_cost_levels (const CommLevels *l)
{
  int g = l->group, m;
  gsize M1, M2;     /* elements */
  double e = l->elem_bytes, gamma = l->reduce_per_byte;

  if (l->kind != COMM_ALLREDUCE || g < 1 || l->p % g != 0)
    return NAN;
  m = l->p / g;
  M1 = (l->n + (gsize) g - 1) / (gsize) g;
  M2 = (M1 + (gsize) m - 1) / (gsize) m;
  return (g - 1) * (2 * l->alpha_in + (double) M1 * e * (2 * l->beta_in + gamma))
         + (m - 1) * (2 * l->alpha_out
                      + (double) M2 * e * (2 * l->beta_out + gamma));
}

/* Uniform links: both levels alike. */
static double
hier_cost (CommKind kind, int p, int group, gsize n, double elem_bytes,
           double alpha, double beta, double gamma)
{
  CommLevels l = { kind, p, group, n, elem_bytes, alpha, beta, alpha, beta,
                      gamma, FALSE, 1 };

  return hier_cost_levels (&l);
}

const CommAlgorithm comm_hier = {
  .name = "hierarchical",
  .description = "ring reduce-scatter inside each node, ring all-reduce "
                 "across nodes, ring all-gather inside each node",
  .source = "Horovod hierarchical allreduce (NCCL reduce-scatter, MPI "
            "allreduce, NCCL allgather; horovod PR 411, 2018); Huawei "
            "HCCL, Hierarchical Communication Principles",
  .build = hier_build,
  .step = hier_step,
  .cost = hier_cost,
  .cost_levels = hier_cost_levels,
  .rounds = hier_rounds,
  .class_rounds = hier_class_rounds,
};
