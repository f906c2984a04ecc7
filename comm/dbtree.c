/*
 * dbtree.c — the double binary tree, NCCL's tree algorithm: the
 * buffer is cut in two halves, each reduced up and broadcast down a binary
 * tree of its own, in chunks, so that a rank forwards one chunk while the
 * next one arrives.  The two trees span the ranks other than the root:
 * tree A is NCCL's in-order tree (src/graph/trees.cc, ncclGetBtree), tree
 * B its mirror (p - 1 even) or the same shifted by one rank (p - 1 odd), as
 * ncclGetDtree builds them, so that a rank inside one tree is a leaf of the
 * other; the root sits on top of both, as in the two-tree algorithms of
 * Sanders, Speck & Träff 2009.  Where the ranks sit in several host groups
 * (nodes), the trees are laid as NCCL lays them (src/graph/connect.cc,
 * connectTrees): a chain inside each group, the two trees over the groups.
 * All-reduce is a reduce to the root then a broadcast from it; reduce and
 * broadcast are each half of it.
 *
 * Sends stream, as NCCL's do: a rank hands chunk k + 1 to the network as
 * soon as chunk k is on the wire, with up to COMM_SLOTS chunks ahead of a
 * receiver, so each hop's latency is paid once along the trees' depth.
 * The steps are generated from (rank, index) out of a few numbers per rank
 * computed by build (O(p) for the collective).  Steps, chunk rule and cost
 * (the schedule evaluated step by step) are in docs/collectives.md,
 * "double-tree"; the executor that runs them is comm/collectives.c.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"
#include "comm/shard.h"

#define DBT_NAME "double-tree"

/* --- The two trees ---------------------------------------------------------
 *
 * Ranks are virtual, v = (r - root) mod p: the root is 0 and the others,
 * 1 .. m with m = p - 1, fill positions 1 .. m of each tree; position 0 is
 * the root. */

/* Largest H with 2^H <= x (x >= 1). */
static int
floor_log2 (int x)
{
  int H = 0;

  while ((x >> (H + 1)) > 0)
    H++;
  return H;
}

/* Children of position w (1 <= w <= m) in NCCL's in-order tree over
 * 1 .. m (ncclGetBtree with nranks = m + 1; its top is 2^H, H the largest
 * with 2^H <= m) into down[0..1] (-1 where none); returns how many: with b
 * the lowest set bit of w, w - b/2 and w + d, d the largest of b/2, b/4, ... with w + d <= m.  Odd
 * positions are the leaves. */
static int
dbt_children (int m, int w, int down[2])
{
  int d = (w & -w) >> 1, k = 0;

  down[0] = down[1] = -1;
  if (d == 0)
    return 0;
  down[k++] = w - d;
  while (d > 0 && w + d > m)
    d >>= 1;
  if (d > 0)
    down[k++] = w + d;
  return k;
}

/* The rank at position w of tree t: tree A holds rank w; tree B mirrors
 * the ranks when m is even and shifts them by one when m is odd (ncclGetDtree),
 * which makes every odd position of A (a leaf) an even position of B. */
static int
dbt_rank_at (int m, int t, int w)
{
  if (t == 0 || w == 0)
    return w;
  if (m % 2 == 0)
    return m + 1 - w;
  return w < m ? w + 1 : 1;
}

/* The position of rank v in tree t (inverse of dbt_rank_at). */
static int
dbt_pos_of (int m, int t, int v)
{
  if (t == 0 || v == 0)
    return v;
  if (m % 2 == 0)
    return m + 1 - v;
  return v >= 2 ? v - 1 : m;
}

/* --- State ---------------------------------------------------------------- */

/* Children a rank may have in one tree: the next rank of its group's chain
 * and the heads of two groups below (the root: its chain's next and the
 * top group). */
#define DBT_MAX_DOWN 3

/* A rank's place in the two trees, by virtual rank. */
typedef struct {
  int up[2];            /* parent in tree A and B (virtual; the root: -1) */
  int down[2][DBT_MAX_DOWN]; /* children in tree A and B, -1 where none:
                           the chain's next first, then the groups' heads */
  int n_down[2];        /* children in tree A and B */
  int inner;            /* the tree whose streams come first in a period:
                           A unless the rank has children in B only (with
                           every rank its own group, the one tree in which
                           it has children, A for a leaf of both); the
                           root: -1 */
  int height[2];        /* height in tree A and B, leaves 0: the reduce's
                           lag in that tree */
  int depth[2];         /* depth in tree A and B, the root 0: the
                           broadcast's lag in that tree */
} DbtRank;

/* One transfer of the root's period: tree t, child v (virtual). */
typedef struct {
  int t, v;
} DbtEdge;

typedef struct {
  int chunks;      /* C: chunks per half */
  DbtRank *ranks;  /* (p) by virtual rank */
  DbtEdge root_recv[2 * DBT_MAX_DOWN]; /* the root's receives of a period */
  DbtEdge root_send[2 * DBT_MAX_DOWN]; /* the root's sends of a period */
  int root_n;      /* entries of each */
} DbtState;

static void
dbt_state_free (gpointer data)
{
  DbtState *st = data;

  g_free (st->ranks);
  g_free (st);
}

/* The least bytes of a chunk: NCCL's tree chunks are never below 32 KiB
 * (LL's whole chunk, half its 64 KiB step; the floor to which NCCL halves
 * LL128's and Simple's for small buffers: src/enqueue.cc). */
#define DBT_CHUNK_BYTES 32768.0

/* Chunks per half, for n elements of e bytes over p ranks:
 * C = max(1, min(floor(n/2), 8 ceil(lg p), floor(n e / (2 x 32 KiB)))).
 * The pipeline takes about 2C + 2 lg p chunk times per phase, so
 * C >= 8 lg p keeps its fill within 1/8 of its steady state; no chunk is
 * empty (n >= 2C), which the cost formula needs; and no chunk is smaller
 * than NCCL's, since every chunk pays a step's latency. */
static int
dbt_chunks (gsize n, int p, double e)
{
  int L = 0;
  gsize C;
  double by_bytes = floor ((double) n * e / (2 * DBT_CHUNK_BYTES));

  while ((1 << L) < p)
    L++;
  C = MIN (n / 2, (gsize) (8 * L));
  if (!(by_bytes >= (double) C))   /* also NaN */
    C = by_bytes >= 1 ? (gsize) by_bytes : 0;
  return C < 1 ? 1 : (int) C;
}

/* Appends child c to rank x's children in tree t. */
static void
dbt_link_down (DbtRank *ranks, int t, int x, int c)
{
  g_assert (ranks[x].n_down[t] < DBT_MAX_DOWN);
  ranks[x].down[t][ranks[x].n_down[t]++] = c;
  ranks[c].up[t] = x;
}

/* Lays both trees over the p ranks in ranks[0..p) by virtual rank, from
 * `vgroup` (p), the host group of each virtual rank (NULL: every rank
 * alone).  Groups are numbered by their first virtual rank, the root's 0.
 * Inside group g of k ranks (virtual ranks m_0 < ... < m_{k-1}), tree A
 * is the chain m_0 -> m_1 -> ... -> m_{k-1} and tree B the same run
 * backwards, m_{k-1} -> ... -> m_0 (the root's group: m_0 -> m_{k-1} ->
 * ... -> m_1, the root on top of both), so that a rank sends to a
 * neighbour in one tree per direction.  Across groups, groups 1 .. G-1
 * fill positions 1 .. G-1 of the two trees over groups as ranks fill them
 * without groups, below the root's group; a group's chain head in a tree
 * (m_0 in A, m_{k-1} in B, the root in both for its group) is the one
 * rank that links it to the group above and to the groups below.  With
 * every rank its own group this is the layout over ranks unchanged.  Long:
 * the groups' members, their chains and the trees over the chains' heads
 * are laid in one pass over the same tables. */
static void
dbt_layout (int p, const int *vgroup, DbtRank *ranks)
{
  g_autoptr (GHashTable) ids = g_hash_table_new (NULL, NULL);
  gsize np = (gsize) MAX (p, 1);
  int *gidx = g_new (int, np), *start = g_new0 (int, np + 1);
  int *mem = g_new (int, np), *fill = g_new0 (int, np), *order = g_new (int, np);
  int G = 0, M;

  /* groups by first virtual rank; mem[start[g] .. start[g+1]) the
   * members of group g in virtual-rank order */
  for (int v = 0; v < p; v++)
    {
      gpointer key = GINT_TO_POINTER (vgroup ? vgroup[v] : v), found;

      if (g_hash_table_lookup_extended (ids, key, NULL, &found))
        gidx[v] = GPOINTER_TO_INT (found);
      else
        {
          gidx[v] = G;
          g_hash_table_insert (ids, key, GINT_TO_POINTER (G++));
        }
      start[gidx[v] + 1]++;
    }
  for (int g = 0; g < G; g++)
    start[g + 1] += start[g];
  for (int v = 0; v < p; v++)
    mem[start[gidx[v]] + fill[gidx[v]]++] = v;
  M = G - 1;
  for (int v = 0; v < p; v++)
    ranks[v] = (DbtRank) { .up = { -1, -1 }, .inner = -1,
                           .down = { { -1, -1, -1 }, { -1, -1, -1 } } };

  for (int t = 0; t < 2; t++)
    {
      /* the chains, so that a chain's next is a rank's first child */
      for (int g = 0; g < G; g++)
        {
          const int *m = mem + start[g];
          int k = start[g + 1] - start[g];

          for (int i = 1; i < k; i++)
            {
              int up = i - 1, x = i;

              if (t == 1 && g > 0)        /* m_{k-1} -> ... -> m_0 */
                up = k - i, x = k - 1 - i;
              else if (t == 1)            /* m_0 -> m_{k-1} -> ... -> m_1 */
                up = i == 1 ? 0 : k - i + 1, x = k - i;
              dbt_link_down (ranks, t, m[up], m[x]);
            }
        }
      /* the trees over groups, between the chains' heads */
      for (int g = 0; g < G && M >= 1; g++)
        {
          int down[2], n = 1;
          int head = t == 1 && g > 0 ? mem[start[g + 1] - 1] : mem[start[g]];

          if (g == 0)
            down[0] = 1 << floor_log2 (M);
          else
            n = dbt_children (M, dbt_pos_of (M, t, g), down);
          for (int i = 0; i < n; i++)
            {
              int c = dbt_rank_at (M, t, down[i]);
              int chead = t == 1 ? mem[start[c + 1] - 1] : mem[start[c]];

              dbt_link_down (ranks, t, head, chead);
            }
        }
      /* depths from the root down, heights back up */
      int len = 1;

      order[0] = 0;
      ranks[0].depth[t] = 0;
      for (int i = 0; i < len; i++)
        {
          DbtRank *r = &ranks[order[i]];

          for (int j = 0; j < r->n_down[t]; j++)
            {
              ranks[r->down[t][j]].depth[t] = r->depth[t] + 1;
              order[len++] = r->down[t][j];
            }
        }
      g_assert (len == p);   /* a tree over every rank */
      for (int i = p - 1; i >= 0; i--)
        {
          DbtRank *r = &ranks[order[i]];

          r->height[t] = 0;
          for (int j = 0; j < r->n_down[t]; j++)
            r->height[t] = MAX (r->height[t],
                                ranks[r->down[t][j]].height[t] + 1);
        }
    }
  for (int v = 1; v < p; v++)
    ranks[v].inner = ranks[v].n_down[1] > 0 && ranks[v].n_down[0] == 0;
  g_free (gidx);
  g_free (start);
  g_free (mem);
  g_free (fill);
  g_free (order);
}

/* The root's transfers of a period into st: its sends, tree A's children
 * then B's; its receives in the same order, except that a child in both
 * trees (a leaf of both, which sends its B chunk first) gives its B chunk
 * before its A chunk. */
static void
dbt_root_edges (DbtState *st)
{
  const DbtRank *r = &st->ranks[0];
  int n = 0, m = 0;

  for (int t = 0; t < 2; t++)
    for (int j = 0; j < r->n_down[t]; j++)
      st->root_send[n++] = (DbtEdge) { t, r->down[t][j] };
  for (int j = 0; j < r->n_down[0]; j++)
    {
      int x = r->down[0][j];

      for (int i = 0; i < r->n_down[1]; i++)
        if (r->down[1][i] == x)
          {
            g_assert (st->ranks[x].n_down[0] == 0
                      && st->ranks[x].n_down[1] == 0);
            st->root_recv[m++] = (DbtEdge) { 1, x };
          }
      st->root_recv[m++] = (DbtEdge) { 0, x };
    }
  for (int i = 0; i < r->n_down[1]; i++)
    {
      gboolean both = FALSE;

      for (int j = 0; j < r->n_down[0]; j++)
        both = both || r->down[0][j] == r->down[1][i];
      if (!both)
        st->root_recv[m++] = (DbtEdge) { 1, r->down[1][i] };
    }
  g_assert (n == m);
  st->root_n = n;
}

/* All-reduce, reduce and broadcast; the steps are generated (dbt_step) from
 * each rank's place, computed here from the ranks' host groups. */
static gboolean
dbt_build (CommOp *op, CommKind kind, GError **error)
{
  DbtState *st;
  int *vgroup = NULL;

  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE
      && kind != COMM_BROADCAST)
    return comm_unsupported (DBT_NAME, kind, error);
  if (op->p == 1)
    return TRUE;
  st = g_new0 (DbtState, 1);
  st->chunks = dbt_chunks (op->n, op->p, op->elem_bytes);
  st->ranks = g_new0 (DbtRank, op->p);
  /* laid over groups only where the ranks span several: on one node NCCL
   * runs no tree between nodes, and the tree over ranks stays */
  gboolean several = FALSE;
  for (int v = 1; op->group != NULL && v < op->p && !several; v++)
    several = op->group[v] != op->group[0];
  if (several)
    {
      vgroup = g_new (int, op->p);
      for (int v = 0; v < op->p; v++)
        vgroup[v] = op->group[comm_mod (v + op->root, op->p)];
    }
  dbt_layout (op->p, vgroup, st->ranks);
  g_free (vgroup);
  dbt_root_edges (st);
  op->state = st;
  op->state_free = dbt_state_free;
  return TRUE;
}

/* --- Steps ----------------------------------------------------------------- *
 *
 * A rank's program in a phase is a sequence of periods; in period j it
 * handles chunk j - first of each of its streams (up to four, in the order
 * listed) whose chunk is in [0, C). */

typedef enum {
  DBT_RECV_DOWN,    /* reduce: from each child in a tree its partial sum,
                       added */
  DBT_SEND_UP,      /* reduce: the tree's sum of the chunk to the parent */
  DBT_ROOT_RECV,    /* reduce, root: the chunk of each tree from each child */
  DBT_RECV_UP,      /* broadcast: a tree's chunk from the parent */
  DBT_SEND_DOWN,    /* broadcast: a tree's chunk to each child */
  DBT_ROOT_SEND     /* broadcast, root: the chunk of each tree to each child */
} DbtWhat;

typedef struct {
  DbtWhat what;
  int tree;         /* 0 = A, 1 = B (the root's streams: both) */
  int first;        /* period of chunk 0 */
  int per;          /* steps per period (0: none) */
} DbtStream;

/* Rank v's streams in the reduce (bcast FALSE) or the broadcast; returns
 * how many.  With a the rank's inner tree and b the other: reduce, a rank
 * at height h in a tree adds chunk k of its children in that tree in
 * period k + h and sends the sum up in the same period; its streams in a
 * period go a's receives, b's receives, b's send, a's send, so that a
 * leaf of b (every rank but the root when every rank is its own group)
 * sends its chunk of b at once, its parent needing it later.  Broadcast:
 * a rank at depth d of a tree receives chunk k of it in period k + d and
 * passes it on to its children then; a's chunk first, so that its own
 * tree's chunks never wait for the other tree's (which would cost a
 * latency per chunk where two ranks feed each other, one in each tree). */
static int
dbt_streams (const DbtState *st, const DbtRank *r, gboolean bcast,
             DbtStream s[4])
{
  int a = r->inner, b = 1 - r->inner;

  if (r->inner < 0)   /* the root */
    {
      s[0] = (DbtStream) { bcast ? DBT_ROOT_SEND : DBT_ROOT_RECV, -1, 0,
                           st->root_n };
      return 1;
    }
  if (!bcast)
    {
      s[0] = (DbtStream) { DBT_RECV_DOWN, a, r->height[a], r->n_down[a] };
      s[1] = (DbtStream) { DBT_RECV_DOWN, b, r->height[b], r->n_down[b] };
      s[2] = (DbtStream) { DBT_SEND_UP, b, r->height[b], 1 };
      s[3] = (DbtStream) { DBT_SEND_UP, a, r->height[a], 1 };
    }
  else
    {
      s[0] = (DbtStream) { DBT_RECV_UP, a, r->depth[a], 1 };
      s[1] = (DbtStream) { DBT_SEND_DOWN, a, r->depth[a], r->n_down[a] };
      s[2] = (DbtStream) { DBT_RECV_UP, b, r->depth[b], 1 };
      s[3] = (DbtStream) { DBT_SEND_DOWN, b, r->depth[b], r->n_down[b] };
    }
  return 4;
}

/* Steps in periods 0 .. j-1 of streams s[0..ns). */
static guint
dbt_count (const DbtStream *s, int ns, int C, int j)
{
  guint c = 0;

  for (int i = 0; i < ns; i++)
    c += (guint) s[i].per * (guint) CLAMP (j - s[i].first, 0, C);
  return c;
}

/* Elements [lo, hi) of chunk k of tree t's half: the reduce gives tree A
 * the first ceil(n/2) elements, the broadcast the first floor(n/2) (the
 * larger half goes where it costs least: docs/collectives.md); each half
 * is cut as comm_shard_bounds (len, C). */
static void
dbt_range (gsize n, int C, gboolean bcast, int t, int k, gsize *lo, gsize *hi)
{
  gsize a = bcast ? n / 2 : n - n / 2;   /* elements of tree A's half */

  comm_shard_bounds (t == 0 ? a : n - a, C, k, lo, hi);
  if (t == 1)
    {
      *lo += a;
      *hi += a;
    }
}

/* Writes step e (a child, or the root's e-th transfer) of stream s for
 * chunk k of rank r. */
static gboolean
dbt_emit (const CommOp *op, const DbtState *st, const DbtRank *r,
          const DbtStream *s, int e, int k, CommStep *out)
{
  int t = s->tree, peer;
  gsize lo, hi;

  switch (s->what)
    {
    case DBT_RECV_DOWN: case DBT_SEND_DOWN:
      peer = r->down[t][e];
      break;
    case DBT_SEND_UP: case DBT_RECV_UP:
      peer = r->up[t];
      break;
    case DBT_ROOT_RECV:
      t = st->root_recv[e].t;
      peer = st->root_recv[e].v;
      break;
    default:
      t = st->root_send[e].t;
      peer = st->root_send[e].v;
      break;
    }
  dbt_range (op->n, st->chunks, s->what >= DBT_RECV_UP, t, k, &lo, &hi);
  peer = comm_mod (peer + op->root, op->p);
  switch (s->what)
    {
    case DBT_RECV_DOWN: case DBT_ROOT_RECV:
      return comm_step_recv (out, peer, lo, hi, COMM_RECV_REDUCE);
    case DBT_RECV_UP:
      return comm_step_recv (out, peer, lo, hi, COMM_RECV_COPY);
    default:   /* one-port streaming sends: the rank is busy while the
                  bytes go onto the wire, not while they cross it, and at
                  most COMM_SLOTS chunks are ahead of their receiver */
      return comm_step_send (out, peer, lo, hi, COMM_SEND_STREAM);
    }
}

/* Step `index` of rank v's program in one phase, or FALSE past its end:
 * the period holding it by bisection on dbt_count, then the stream. */
static gboolean
dbt_phase_step (const CommOp *op, const DbtState *st, int v,
                gboolean bcast, guint index, CommStep *out)
{
  const DbtRank *r = &st->ranks[v];
  DbtStream s[4];
  int ns = dbt_streams (st, r, bcast, s), C = st->chunks, lo = 0, hi = 0;
  guint off;

  for (int i = 0; i < ns; i++)
    hi = MAX (hi, s[i].first + C);
  if (index >= dbt_count (s, ns, C, hi))
    return FALSE;
  while (lo < hi)   /* the first period j with count(j + 1) > index */
    {
      int mid = lo + (hi - lo) / 2;

      if (dbt_count (s, ns, C, mid + 1) > index)
        hi = mid;
      else
        lo = mid + 1;
    }
  off = index - dbt_count (s, ns, C, lo);
  for (int i = 0; i < ns; i++)
    {
      int k = lo - s[i].first;

      if (k < 0 || k >= C)
        continue;
      if (off < (guint) s[i].per)
        return dbt_emit (op, st, r, &s[i], (int) off, k, out);
      off -= (guint) s[i].per;
    }
  g_assert_not_reached ();
  return FALSE;
}

/* Step `index` of rank `rank`: the reduce's steps, then (all-reduce) the
 * broadcast's. */
static gboolean
dbt_step (const CommOp *op, int rank, guint index, CommStep *out)
{
  const DbtState *st = op->state;
  int v = comm_mod (rank - op->root, op->p);
  DbtStream s[4];
  guint len;

  if (st == NULL)   /* p = 1 */
    return FALSE;
  if (op->kind == COMM_BROADCAST)
    return dbt_phase_step (op, st, v, TRUE, index, out);
  if (dbt_phase_step (op, st, v, FALSE, index, out))
    return TRUE;
  if (op->kind == COMM_REDUCE)
    return FALSE;
  len = 0;
  for (int i = 0, ns = dbt_streams (st, &st->ranks[v], FALSE, s); i < ns; i++)
    len += (guint) s[i].per * (guint) st->chunks;
  return dbt_phase_step (op, st, v, TRUE, index - len, out);
}

/* --- Cost ------------------------------------------------------------------ *
 *
 * The time of the schedule with contention = none, every route inside a
 * host group of latency alpha_in and beta_in s/byte and every route across
 * of alpha_out and beta_out, evaluated step by step as the executor runs
 * it (docs/collectives.md, "double-tree"): a send at t keeps its rank
 * until t + b beta and arrives at t + alpha + b beta (the route's), the k-th message on a connection not before the
 * (k - COMM_SLOTS)-th was taken; a receive ends at the later of the rank's
 * time and the arrival, plus b gamma when it adds.  Ranks are run as far as
 * their messages allow, in any order (the times do not depend on it), so
 * the work is that of the steps, O(p C). */

/* What the evaluation knows of the messages from one rank to another. */
typedef struct {
  GArray *arrive;   /* double: arrival of each message sent, by number */
  GArray *take;     /* double: when the receiver took each, by number */
} DbtLink;

static void
dbt_link_free (gpointer data)
{
  DbtLink *l = data;

  g_array_unref (l->arrive);
  g_array_unref (l->take);
  g_free (l);
}

/* The link from rank `src` to `dst` of table `links`, created if missing. */
static DbtLink *
dbt_link (GHashTable *links, int p, int src, int dst)
{
  gpointer key = GSIZE_TO_POINTER ((gsize) src * (gsize) p + (gsize) dst + 1);
  DbtLink *l = g_hash_table_lookup (links, key);

  if (l == NULL)
    {
      l = g_new (DbtLink, 1);
      l->arrive = g_array_new (FALSE, FALSE, sizeof (double));
      l->take = g_array_new (FALSE, FALSE, sizeof (double));
      g_hash_table_insert (links, key, l);
    }
  return l;
}

/* The evaluation's state of one rank. */
typedef struct {
  guint pc;            /* next step */
  double t;            /* s, when it is free to start that step */
  gboolean blocked;    /* waits for a message or a slot */
  gboolean done;
} DbtClock;

/* How many streams share the route into `peer` with rank v's send to it:
 * with links shared (lv->shared, max-min), a send up the tree into a
 * parent that receives from k children at once in that tree gets 1 / k of
 * the parent's link, so its bytes take k times as long to arrive (the
 * sender's own link keeps its rate for its other stream: its time is not
 * stretched); 1 otherwise, and always with contention none.  The
 * broadcast's sends from one rank are already in turn (the rank sends one
 * at a time). */
static double
dbt_ingress_share (const CommOp *op, const CommLevels *lv, int v, int peer)
{
  const DbtState *st = op->state;

  if (!lv->shared)
    return 1;
  for (int t = 0; t < 2; t++)
    if (st->ranks[v].up[t] == peer)
      return MAX (st->ranks[peer].n_down[t], 1);
  return 1;
}

/* Runs rank v of `op` as far as its messages allow; files in `todo` the
 * ranks its progress may let go on. */
static void
dbt_eval_rank (const CommOp *op, GHashTable *links, DbtClock *clk, int v,
               const CommLevels *lv, GArray *todo)
{
  DbtClock *c = &clk[v];
  CommStep s;

  while (dbt_step (op, v, c->pc, &s))
    {
      double bytes = (double) (s.hi - s.lo) * lv->elem_bytes, x;
      gboolean in = op->group[v] == op->group[s.peer];
      double alpha = in ? lv->alpha_in : lv->alpha_out;
      double beta = in ? lv->beta_in : lv->beta_out;

      if (s.type == COMM_STEP_SEND)
        {
          DbtLink *l = dbt_link (links, op->p, v, s.peer);
          guint seq = l->arrive->len;
          double share = dbt_ingress_share (op, lv, v, s.peer);

          if (seq >= COMM_SLOTS && l->take->len <= seq - COMM_SLOTS)
            {
              c->blocked = TRUE;   /* the receiver runs it when it takes */
              return;
            }
          if (seq >= COMM_SLOTS)
            c->t = MAX (c->t, g_array_index (l->take, double,
                                             seq - COMM_SLOTS));
          x = c->t + alpha + bytes * beta * share;
          g_array_append_val (l->arrive, x);
          c->t += bytes * beta;
          if (clk[s.peer].blocked)
            {
              clk[s.peer].blocked = FALSE;
              g_array_append_val (todo, s.peer);
            }
        }
      else
        {
          DbtLink *l = dbt_link (links, op->p, s.peer, v);
          guint seq = l->take->len;

          if (seq >= l->arrive->len)
            {
              c->blocked = TRUE;   /* the sender runs it when it sends */
              return;
            }
          c->t = MAX (c->t, g_array_index (l->arrive, double, seq));
          g_array_append_val (l->take, c->t);
          if (s.mode != COMM_RECV_COPY)
            c->t += bytes * lv->reduce_per_byte;
          if (clk[s.peer].blocked)
            {
              clk[s.peer].blocked = FALSE;
              g_array_append_val (todo, s.peer);
            }
        }
      c->pc++;
    }
  c->done = TRUE;
}

/* The schedule's time for l's collective (all-reduce, reduce or
 * broadcast; p >= 2, in host groups of l->group consecutive ranks, the
 * last one smaller where l->group does not divide p): the last rank's
 * end, its chunks cut as the executor cuts them, by the bytes on the
 * wire (l->wire).  With l->shared (max-min), a send up the tree into a parent of k
 * children arrives k times as slowly (dbt_ingress_share). */
static double
dbt_eval (const CommLevels *l)
{
  int p = l->p, group = MAX (l->group, 1);
  g_autofree int *groups = g_new (int, p);
  CommOp op = { .p = p, .n = l->n, .root = 0, .kind = l->kind,
                .elem_bytes = l->elem_bytes * (l->wire > 0 ? l->wire : 1),
                .group = groups };   /* chunks cut by the wire's bytes */
  g_autoptr (GHashTable) links = g_hash_table_new_full (NULL, NULL, NULL,
                                                        dbt_link_free);
  g_autoptr (GArray) todo = g_array_new (FALSE, FALSE, sizeof (int));
  DbtClock *clk = g_new0 (DbtClock, p);
  double end = 0;

  for (int r = 0; r < p; r++)
    groups[r] = r / group;
  if (!dbt_build (&op, l->kind, NULL))
    g_assert_not_reached ();
  for (int v = p - 1; v >= 0; v--)
    g_array_append_val (todo, v);
  while (todo->len > 0)
    {
      int v = g_array_index (todo, int, todo->len - 1);

      g_array_set_size (todo, todo->len - 1);
      if (!clk[v].done)
        dbt_eval_rank (&op, links, clk, v, l, todo);
    }
  for (int v = 0; v < p; v++)
    {
      g_assert (clk[v].done);   /* the schedule has no deadlock */
      end = MAX (end, clk[v].t);
    }
  g_free (clk);
  op.state_free (op.state);
  return end;
}

/* Exact with contention = none (docs/collectives.md): the schedule's own
 * evaluation, laid over host groups of `group` ranks as the executor lays
 * it (every route alpha and beta). */
static double
dbt_cost (CommKind kind, int p, int group, gsize n,
          double elem_bytes, double alpha, double beta, double gamma)
{
  CommLevels l = { kind, p, group, n, elem_bytes, alpha, beta, alpha, beta,
                   gamma, FALSE, 1 };

  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE
      && kind != COMM_BROADCAST)
    return NAN;
  if (p == 1)
    return 0;
  return dbt_eval (&l);
}

/* The same on a two-level network: routes inside a group alpha_in and
 * beta_in, across alpha_out and beta_out. */
static double
dbt_cost_levels (const CommLevels *l)
{
  if (l->kind != COMM_ALLREDUCE && l->kind != COMM_REDUCE
      && l->kind != COMM_BROADCAST)
    return NAN;
  if (l->p == 1)
    return 0;
  return dbt_eval (l);
}

/* Transfers of one collective in one channel: two trees, each moving C
 * chunks (dbt_chunks) across p - 1 edges, once each way for all-reduce;
 * without the element's bytes, an upper bound (C for elements so large
 * that the byte rule does not bind). */
static double
dbtree_messages (CommKind kind, int p, gsize n)
{
  return (kind == COMM_ALLREDUCE ? 2 : 1) * (double) (p - 1) * 2 * dbt_chunks (n, p, INFINITY);
}

const CommAlgorithm comm_dbtree = {
  .name = DBT_NAME,
  .description = "NCCL's double binary tree: each half of the buffer reduced "
                 "up and broadcast down its own tree, pipelined in chunks",
  .source = "NCCL src/graph/trees.cc (ncclGetBtree, ncclGetDtree); "
            "Sanders, Speck & Träff 2009, Parallel Comput. 35(12)",
  .family = COMM_FAMILY_TREE,
  .build = dbt_build,
  .step = dbt_step,
  .cost = dbt_cost,
  .cost_levels = dbt_cost_levels,
  .shared_beta = 1,   /* its evaluation shares a parent's link itself */
  .messages = dbtree_messages,
  .nccl = TRUE,
};
