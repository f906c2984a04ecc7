/*
 * dbtree.c — the double binary tree, NCCL's tree algorithm: the
 * buffer is cut in two halves, each reduced up and broadcast down a binary
 * tree of its own, in chunks, so that a rank forwards one chunk while the
 * next one arrives.  The two trees span the ranks other than the root:
 * tree A is NCCL's in-order tree (src/graph/trees.cc, ncclGetBtree), tree
 * B its mirror (p - 1 even) or the same shifted by one rank (p - 1 odd), as
 * ncclGetDtree builds them, so that a rank inside one tree is a leaf of the
 * other; the root sits on top of both, as in the two-tree algorithms of
 * Sanders, Speck & Träff 2009.  All-reduce is a reduce to the root then a
 * broadcast from it; reduce and broadcast are each half of it.
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

/* Parent of position w (1 <= w <= m) in NCCL's in-order tree over 1 .. m
 * (ncclGetBtree with nranks = m + 1): with b the lowest set bit of w,
 * (w ^ b) | 2b, or w ^ b when that is past m; 0 for the top, 2^H. */
static int
dbt_parent (int m, int w)
{
  int b = w & -w, up = (w ^ b) | (b << 1);

  return up > m ? w ^ b : up;
}

/* Children of position w into down[0..1] (-1 where none); returns how many:
 * w - b/2 and w + d, d the largest of b/2, b/4, ... with w + d <= m.  Odd
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

/* A rank's place in the two trees, by virtual rank.  Every rank but the
 * root has children in one tree at most, its inner tree (A when it is a
 * leaf of both, which happens to one rank when m is odd); the other is its
 * outer tree. */
typedef struct {
  int up[2];     /* parent in tree A and B (virtual; the root: -1) */
  int down[2];   /* children in the inner tree (the root: the tops of A
                    and B), -1 where none */
  int n_down;    /* children in the inner tree (the root: 2) */
  int inner;     /* 0 = A, 1 = B (the root: -1) */
  int height;    /* height in the inner tree, leaves 0: the reduce's lag */
  int depth[2];  /* depth in tree A and B, the tops 1: the broadcast's lags */
} DbtRank;

typedef struct {
  int chunks;      /* C: chunks per half */
  DbtRank *ranks;  /* (p) by virtual rank */
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

/* Fills r, rank v's place (v >= 1) in the trees over positions 1 .. m. */
static void
dbt_place (int m, int v, DbtRank *r)
{
  int down[2][2], n_down[2];

  for (int t = 0; t < 2; t++)
    {
      int w = dbt_pos_of (m, t, v);

      r->up[t] = dbt_rank_at (m, t, dbt_parent (m, w));
      n_down[t] = dbt_children (m, w, down[t]);
      r->depth[t] = 0;
      for (int x = w; x > 0; x = dbt_parent (m, x))
        r->depth[t]++;
    }
  g_assert (n_down[0] == 0 || n_down[1] == 0);
  r->inner = n_down[1] > 0 ? 1 : 0;
  r->n_down = n_down[r->inner];
  for (int i = 0; i < 2; i++)
    r->down[i] = i < r->n_down
                   ? dbt_rank_at (m, r->inner, down[r->inner][i]) : -1;
  /* in-order positions: the height of w is the index of its lowest bit */
  r->height = floor_log2 (dbt_pos_of (m, r->inner, v)
                          & -dbt_pos_of (m, r->inner, v));
}

/* All-reduce, reduce and broadcast; the steps are generated (dbt_step) from
 * each rank's place, computed here. */
static gboolean
dbt_build (CommOp *op, CommKind kind, GError **error)
{
  DbtState *st;
  int m = op->p - 1;

  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE
      && kind != COMM_BROADCAST)
    return comm_unsupported (DBT_NAME, kind, error);
  if (op->p == 1)
    return TRUE;
  st = g_new0 (DbtState, 1);
  st->chunks = dbt_chunks (op->n, op->p, op->elem_bytes);
  st->ranks = g_new0 (DbtRank, op->p);
  st->ranks[0] = (DbtRank) {
    .up = { -1, -1 }, .n_down = 2, .inner = -1,
    .down = { dbt_rank_at (m, 0, 1 << floor_log2 (m)),
              dbt_rank_at (m, 1, 1 << floor_log2 (m)) } };
  for (int v = 1; v < op->p; v++)
    dbt_place (m, v, &st->ranks[v]);
  op->state = st;
  op->state_free = dbt_state_free;
  return TRUE;
}

/* --- Steps ----------------------------------------------------------------- *
 *
 * A rank's program in a phase is a sequence of periods; in period j it
 * handles chunk j - first of each of its streams (up to three, in the order
 * listed) whose chunk is in [0, C). */

typedef enum {
  DBT_RECV_DOWN,    /* reduce: from each inner child its partial sum, added */
  DBT_SEND_OUTER,   /* reduce: own chunk of the outer tree to its parent */
  DBT_SEND_INNER,   /* reduce: the inner tree's sum of the chunk, up */
  DBT_ROOT_RECV,    /* reduce, root: the chunk of each tree from its top */
  DBT_RECV_INNER,   /* broadcast: the inner tree's chunk from its parent */
  DBT_SEND_DOWN,    /* broadcast: the inner chunk to each child */
  DBT_RECV_OUTER,   /* broadcast: the outer tree's chunk from its parent */
  DBT_ROOT_SEND     /* broadcast, root: the chunk of each tree to its top */
} DbtWhat;

/* Periods by which a rank takes the chunks of its outer tree (of which it
 * is a leaf) after they could arrive: slack, so that it does not hold up
 * its own tree's chunks waiting for them. */

typedef struct {
  DbtWhat what;
  int first;        /* period of chunk 0 */
  int per;          /* steps per period (0: none) */
} DbtStream;

/* Rank v's streams in the reduce (bcast FALSE) or the broadcast; returns
 * how many.  Reduce: a rank at height h in its inner tree adds chunk k of
 * its children in period k + h and sends the sum up in the same period,
 * after sending chunk k of its own outer half in period k (leaves of the
 * outer tree send at once, their parent needing the chunk later).
 * Broadcast: a rank at depth d of a tree receives chunk k of it in period
 * k + d; it passes an inner chunk on to its inner children then, before it
 * takes the outer chunk of the period, so that its own tree's chunks never
 * wait for the other tree's (which would cost a latency per chunk where two
 * ranks feed each other, one in each tree). */
static int
dbt_streams (const DbtRank *r, gboolean bcast, DbtStream s[3])
{
  int outer = 1 - r->inner;

  if (r->inner < 0)   /* the root */
    {
      s[0] = (DbtStream) { bcast ? DBT_ROOT_SEND : DBT_ROOT_RECV, 0, 2 };
      return 1;
    }
  if (!bcast)
    {
      s[0] = (DbtStream) { DBT_RECV_DOWN, r->height, r->n_down };
      s[1] = (DbtStream) { DBT_SEND_OUTER, 0, 1 };
      s[2] = (DbtStream) { DBT_SEND_INNER, r->height, 1 };
    }
  else
    {
      s[0] = (DbtStream) { DBT_RECV_INNER, r->depth[r->inner], 1 };
      s[1] = (DbtStream) { DBT_SEND_DOWN, r->depth[r->inner], r->n_down };
      s[2] = (DbtStream) { DBT_RECV_OUTER, r->depth[outer], 1 };
    }
  return 3;
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

/* Writes step e (a child, or the root's tree) of stream `what` for chunk k
 * of rank r. */
static gboolean
dbt_emit (const CommOp *op, const DbtState *st, const DbtRank *r,
          DbtWhat what, int e, int k, CommStep *out)
{
  int t, peer;
  gsize lo, hi;

  switch (what)
    {
    case DBT_RECV_DOWN: case DBT_SEND_DOWN:
      t = r->inner;
      peer = r->down[e];
      break;
    case DBT_SEND_INNER: case DBT_RECV_INNER:
      t = r->inner;
      peer = r->up[t];
      break;
    case DBT_SEND_OUTER: case DBT_RECV_OUTER:
      t = 1 - r->inner;
      peer = r->up[t];
      break;
    default:   /* the root: tree A's top, then B's; for p = 2, whose one
                  other rank sends its outer (B) chunk first, B's first */
      t = what == DBT_ROOT_RECV && op->p == 2 ? 1 - e : e;
      peer = r->down[t];
      break;
    }
  dbt_range (op->n, st->chunks, what >= DBT_RECV_INNER, t, k, &lo, &hi);
  peer = comm_mod (peer + op->root, op->p);
  switch (what)
    {
    case DBT_RECV_DOWN: case DBT_ROOT_RECV:
      return comm_step_recv (out, peer, lo, hi, COMM_RECV_REDUCE);
    case DBT_RECV_INNER: case DBT_RECV_OUTER:
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
  DbtStream s[3];
  int ns = dbt_streams (r, bcast, s), C = st->chunks, lo = 0, hi = 0;
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
        return dbt_emit (op, st, r, s[i].what, (int) off, k, out);
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
  DbtStream s[3];
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
  for (int i = 0, ns = dbt_streams (&st->ranks[v], FALSE, s); i < ns; i++)
    len += (guint) s[i].per * (guint) st->chunks;
  return dbt_phase_step (op, st, v, TRUE, index - len, out);
}

/* --- Cost ------------------------------------------------------------------ *
 *
 * The time of the schedule with contention = none on uniform links,
 * evaluated step by step as the executor runs it (docs/collectives.md,
 * "double-tree"): a send at t keeps its rank until t + b beta and arrives at
 * t + alpha + b beta, the k-th message on a connection not before the
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

/* Runs rank v of `op` as far as its messages allow; files in `todo` the
 * ranks its progress may let go on. */
static void
dbt_eval_rank (const CommOp *op, GHashTable *links, DbtClock *clk, int v,
               double alpha, double beta, double gamma, GArray *todo)
{
  DbtClock *c = &clk[v];
  CommStep s;

  while (dbt_step (op, v, c->pc, &s))
    {
      double bytes = (double) (s.hi - s.lo) * op->elem_bytes, x;

      if (s.type == COMM_STEP_SEND)
        {
          DbtLink *l = dbt_link (links, op->p, v, s.peer);
          guint seq = l->arrive->len;

          if (seq >= COMM_SLOTS && l->take->len <= seq - COMM_SLOTS)
            {
              c->blocked = TRUE;   /* the receiver runs it when it takes */
              return;
            }
          if (seq >= COMM_SLOTS)
            c->t = MAX (c->t, g_array_index (l->take, double,
                                             seq - COMM_SLOTS));
          x = c->t + alpha + bytes * beta;
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
            c->t += bytes * gamma;
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

/* The schedule's time for `kind` (all-reduce, reduce or broadcast; p >= 2)
 * of n elements of e bytes on links of latency alpha and beta s/byte,
 * reductions at gamma s/byte: the last rank's end. */
static double
dbt_eval (CommKind kind, int p, gsize n, double e, double alpha,
          double beta, double gamma)
{
  CommOp op = { .p = p, .n = n, .root = 0, .kind = kind, .elem_bytes = e };
  g_autoptr (GHashTable) links = g_hash_table_new_full (NULL, NULL, NULL,
                                                        dbt_link_free);
  g_autoptr (GArray) todo = g_array_new (FALSE, FALSE, sizeof (int));
  DbtClock *clk = g_new0 (DbtClock, p);
  double end = 0;

  if (!dbt_build (&op, kind, NULL))
    g_assert_not_reached ();
  for (int v = p - 1; v >= 0; v--)
    g_array_append_val (todo, v);
  while (todo->len > 0)
    {
      int v = g_array_index (todo, int, todo->len - 1);

      g_array_set_size (todo, todo->len - 1);
      if (!clk[v].done)
        dbt_eval_rank (&op, links, clk, v, alpha, beta, gamma, todo);
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
 * evaluation. */
static double
dbt_cost (CommKind kind, int p, int group G_GNUC_UNUSED, gsize n,
          double elem_bytes, double alpha, double beta, double gamma)
{
  if (kind != COMM_ALLREDUCE && kind != COMM_REDUCE
      && kind != COMM_BROADCAST)
    return NAN;
  if (p == 1)
    return 0;
  return dbt_eval (kind, p, n, elem_bytes, alpha, beta, gamma);
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
  .shared_beta = 2,
  .messages = dbtree_messages,
  .nccl = TRUE,
};
