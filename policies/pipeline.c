/*
 * pipeline.c — pipeline parallelism: GPipe, 1F1B (PipeDream-flush) and
 * Megatron-LM's interleaved 1F1B.
 *
 * The model's layers are cut into `stages` contiguous groups, one per
 * worker, or with `chunks` = v > 1 (interleaved) into stages x v virtual
 * stages, worker s holding virtual stages s, s + stages, ... (its chunks);
 * every rule below between stages then holds between virtual stages.
 * `replicas` copies of that pipeline train data-parallel: a mesh of
 * replicas (its data axis) x stages (its pipeline axis, train/mesh.h), rank
 * r x stages + s running stage s of replica r.  docs/policies.md
 * ("Pipeline") is the normative description; in short:
 *
 *   - An iteration starts for every worker at once.  Each replica draws
 *     `batch` samples (its own sampler, as a data-parallel worker would) and
 *     cuts them into m micro-batches of batch / m consecutive samples.
 *   - Stage s runs its 2mv operations in the order of the schedule
 *     (pol_pipeline_ops_order), one at a time, each as soon as the one
 *     before it has ended and its input is there: a forward of micro-batch
 *     i needs the activations from stage s - 1 (stage 0 has its batch), a
 *     backward needs the gradient from stage s + 1 (the last stage: its own
 *     forward of i).  An operation's time is the stage's layers' device
 *     time on one micro-batch, through scale_time (straggler factor).
 *   - When a forward ends, its output (n x width x 4 bytes) is sent to stage
 *     s + 1; when a backward ends, the gradient at the stage's input is sent
 *     to stage s - 1 (tags "activation" and "gradient").
 *   - After its last backward, a stage's gradient (the sum of the
 *     micro-batches' gradients of the mean loss over the batch) is averaged
 *     among the replicas with the all-reduce algorithm when replicas > 1,
 *     then the stage applies the optimizer to its parameters, taking
 *     update_time(its parameters) seconds.  When every stage of every
 *     replica has done so, the iteration ends (flush) and the next starts.
 *
 * Replicas apply identical updates, so one copy of the parameters is kept.
 * An iteration's math does not depend on when its operations run: every
 * replica's micro-batches see the parameters of the last flush, and a
 * stage's gradient is the sum of its micro-batches'.  So, unless compute
 * time is measured on the host (which needs each operation's own time),
 * the whole iteration's gradients are computed when it starts, all
 * replicas' batches stacked in one pass (loss_grad_groups: the same
 * numbers up to float rounding), and the operations only take their
 * simulated time.  With measured compute, the math of a stage runs when its
 * operation starts (kernels' KernStage); activations and gradients then
 * live in host buffers per boundary and micro-batch, which the simulated
 * transfers stand for.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/collectives.h"
#include "policies/common.h"
#include "policies/tensor.h"
#include "train/lanes.h"
#include "train/mesh.h"
#include "train/step.h"

enum { TAG_ACTIVATION, TAG_GRADIENT, TAG_ALLREDUCE, TAG_TENSOR };

typedef struct PlPolicy PlPolicy;

/* One chunk of a stage: the layers of virtual stage k = c P + s on the
 * worker of stage s (the whole stage without interleaving, v = 1). */
typedef struct {
  int k;                      /* its virtual stage, 0 .. P v - 1 */
  int first, last;            /* layers */
  gsize lo, hi;               /* parameters [lo, hi) */
  double t_fwd, t_bwd;        /* s per micro-batch, device model */
  double out_bytes;           /* bytes sent forward per micro-batch (0 for
                               * the last virtual stage) */
  double stash_bytes;         /* bytes stashed per micro-batch */
  int slots;                  /* most of its micro-batches stashed at once */
  int stash;                  /* its micro-batches stashed now */
  int *in_ready;              /* (m) transfers of micro-batch i's activations
                               * arrived: ready at T, one per tensor rank */
  int *grad_ready;            /* (m) and of its gradient */
  double *in_sent;            /* (m) s, when they were sent */
  double *grad_sent;          /* (m) */
  KernStage *ks;              /* NULL without math */
  PolTensorStep *op_fwd;      /* T > 1: the chain of a forward on the
                               * stage's tensor group; NULL otherwise */
  PolTensorStep *op_bwd;      /* T > 1: of a backward */
} PlChunk;

/* A stage of a replica: one worker, or with [policy] tensor = T > 1 the
 * tensor group of T consecutive ranks that runs it in lockstep. */
typedef struct {
  PlPolicy *pl;
  int replica, stage, index;  /* its rank on the mesh (replica, stage), the
                               * first of its tensor group's T */
  gsize rank_params;          /* parameters one of its tensor ranks holds
                               * (params when T = 1) */
  PlChunk *chunk;             /* (v) its chunks, chunk c = virtual stage c P + s */
  gsize params;               /* parameters of all its chunks */
  double flops;               /* per iteration, on one tensor rank */
  double out_bytes;           /* bytes its chunks send forward per micro-batch */
  int *ops;                   /* (2 m v) schedule order */
  int pos;                    /* next operation */
  gboolean busy;
  double blocked_since;       /* s, < 0 when not blocked */
  double op_start;            /* s, start of the running operation */
  int stash, peak_stash;      /* (chunk, micro-batch) pairs stashed */
  double peak_bytes;          /* most bytes stashed at once */
  float *packed;              /* (params) its chunks' gradients side by side for
                               * the replicas' all-reduce; NULL unless v > 1
                               * with math operation by operation */
  double it_compute, it_comm; /* this iteration, s */
  double sum_compute, sum_idle;
} PlWorker;

struct PlPolicy {
  PolEnv env;
  int P, R, M, W;             /* stages, replicas, micro-batches, workers */
  int T;                      /* [policy] tensor: ranks of a stage's group */
  int G;                      /* stage groups, R P; W = G T */
  PolTpSplit *split;          /* (n_layers) T > 1: how each layer is cut */
  gboolean sequence;          /* [policy] sequence_parallel */
  KernTensorPlan *plan;       /* T > 1 with math: the groups' real math */
  int *reduce_pending;        /* (P) T > 1: data groups of stage s still
                               * all-reducing */
  int V, K;                   /* chunks per stage, virtual stages P V */
  int n;                      /* samples per micro-batch */
  PolSchedule schedule;
  double *layer_fwd;          /* (n_layers) s of each layer's forward on one
                               * micro-batch (device model, no straggler) */
  double *layer_bwd;          /* (n_layers) its backward, recomputation
                               * included */
  int *count;                 /* (K) layers per virtual stage */
  TrainMesh *mesh;            /* data (replicas) x pipeline (stages) x
                               * tensor (T) */
  PlWorker *w;                /* (G) by group, rank / T */
  const CommAlgorithm *alg;
  float *params;              /* (n_params) the one shared copy */
  float **grad;               /* (R) gradients, (n_params) each */
  KernOptimizer **opt;        /* (K) one per virtual stage; NULL without math */
  gboolean stacked;           /* the iteration's math at its start, all
                               * replicas in one pass (see above) */
  TrainSteps *steps;          /* the replicas' steps: their batches, and
                               * stacked, their gradients */
  float ***act;               /* (R)(K - 1) (m x n, width) virtual stage outputs */
  float ***dact;              /* (R)(K - 1) their gradients */
  float **reduce_bufs;        /* (R) */
  int *backward_done;         /* (P) replicas whose stage s ended backward */
  int stages_updated;         /* stages (all replicas) done this iteration */
  double *update_time;        /* (P) s */
  int zero;                   /* [policy] zero over the replicas (0 with
                               * one replica): the stage's gradient is
                               * reduce-scattered, each replica updates
                               * its shard, the parameters all-gathered */
  gboolean mirror;            /* the replicas are mirrored copies: replica 0
                               * alone runs (see "Mirrored replicas" below) */
  int Rs;                     /* replicas run: 1 when mirrored, else R */
  gint64 iter;
  double iter_start;
  double loss_sum;            /* mean losses of the iteration's micro-batches */
  PolRun run;                 /* counters, evaluation, end of the run */
};

/* Partition (policy.h).  f(k, i), the least largest group over the first i
 * layers in k groups, obeys f(k, i) = min over j of max(f(k - 1, j),
 * S(j, i)), S(j, i) = prefix[i] - prefix[j] the cost of layers [j, i).  With
 * costs >= 0, S grows with i and shrinks with j (rounding is monotone), and
 * f(k - 1, j) grows with j, so the max is least where the two cross: the
 * first j at which f(k - 1, j) >= S(j, i) (call it c) gives f(k - 1, c),
 * the j before it S(c - 1, i), and f(k, i) is the smaller.  c only moves
 * right as i grows, so a row of the table costs O(L), and only the
 * W = L - stages + 1 entries of each row that a cut of all L layers can
 * reach are kept: stages x W <= L^2 / 4 steps in all.  These are the same
 * doubles the textbook O(stages L^2) programme finds (every value is one of
 * the same S(j, i), chosen by exact comparisons).
 *
 * The cut before the last of k groups ending at layer i is the first j
 * (at least k - 1) with S(j, i) <= f(k, i): f(k - 1, j) is then <= f(k, i)
 * too, since some later j reaches the optimum and f(k - 1, .) grows, so
 * this is the earliest optimal cut, the one the programme's strict
 * comparison kept.  The walk back from (stages, L) needs f(k, i) of one i
 * per row: rows are kept every B = ceil(sqrt(stages)) and the B rows
 * between two of them recomputed once when the walk reaches them, so
 * memory is about 2 sqrt(stages) W doubles and time twice the forward
 * pass. */

/* Row k of f over i = k .. k + W - 1 into row[i - k], from row k - 1 in
 * prev (over j = k - 1 .. k + W - 2); k = 1 needs no prev. */
static void
partition_row (const double *prefix, int k, int W, const double *prev, double *row)
{
  if (k == 1)
    {
      for (int t = 0; t < W; t++)
        row[t] = prefix[1 + t] - prefix[0];
      return;
    }
  int c = k - 1;
  for (int t = 0; t < W; t++)
    {
      int i = k + t;
      while (c < i && prev[c - (k - 1)] < prefix[i] - prefix[c])
        c++;
      double v = c < i ? prev[c - (k - 1)] : INFINITY;
      if (c > k - 1)
        v = MIN (v, prefix[i] - prefix[c - 1]);
      row[t] = v;
    }
}

/* The first j in [0, i) with prefix[i] - prefix[j] <= most (there is one:
 * j = i - 1 when most is f of a partition ending at i). */
static int
partition_first_cut (const double *prefix, int i, double most)
{
  int lo = 0, hi = i - 1;
  while (lo < hi)
    {
      int mid = lo + (hi - lo) / 2;
      if (prefix[i] - prefix[mid] <= most)
        hi = mid;
      else
        lo = mid + 1;
    }
  return lo;
}

void
pol_pipeline_partition (const double *cost, int L, int stages, int *count)
{
  g_return_if_fail (cost != NULL && count != NULL && stages >= 1 && stages <= L);
  g_autofree double *prefix = g_new0 (double, L + 1);
  for (int i = 0; i < L; i++)
    {
      g_return_if_fail (isfinite (cost[i]) && cost[i] >= 0);
      prefix[i + 1] = prefix[i] + cost[i];
    }
  int W = L - stages + 1, B = 1;
  while (B * B < stages)
    B++;
  int n_saved = (stages - 1) / B + 1;
  /* saved[s]: row s B + 1; block: rows b B + 1 .. b B + B, as the walk
   * needs them; prev/cur: the forward pass's two rows */
  g_autofree double *saved = g_new (double, (gsize) n_saved * (gsize) W);
  g_autofree double *block = g_new (double, (gsize) B * (gsize) W);
  g_autofree double *prev = g_new (double, W);
  g_autofree double *cur = g_new (double, W);
  for (int k = 1; k <= stages; k++)
    {
      partition_row (prefix, k, W, prev, cur);
      if ((k - 1) % B == 0)
        memcpy (saved + (gsize) ((k - 1) / B) * (gsize) W, cur, sizeof (double) * (gsize) W);
      double *t = prev;
      prev = cur;
      cur = t;
    }
  int i = L, loaded = -1;
  for (int k = stages; k >= 1; k--)
    {
      int b = (k - 1) / B, first = b * B + 1;
      if (b != loaded)
        {
          memcpy (block, saved + (gsize) b * (gsize) W, sizeof (double) * (gsize) W);
          for (int r = first + 1; r <= MIN (first + B - 1, stages); r++)
            partition_row (prefix, r, W, block + (gsize) (r - 1 - first) * (gsize) W,
                           block + (gsize) (r - first) * (gsize) W);
          loaded = b;
        }
      double most = block[(gsize) (k - first) * (gsize) W + (gsize) (i - k)];
      int j = k == 1 ? 0 : MAX (k - 1, partition_first_cut (prefix, i, most));
      count[k - 1] = i - j;
      i = j;
    }
}

/* The j-th forward (backward) of stage s under Megatron-LM's interleaved
 * order, as pol_pipeline_ops_order encodes it. */
static int
interleaved_op (int p, int v, int m, int j, gboolean forward)
{
  int in_group = j % (p * v);
  int chunk = in_group / p;
  int micro = (j / (p * v)) * p + j % p;
  if (!forward)
    chunk = v - 1 - chunk;
  int code = chunk * m + micro;
  return forward ? code : -(code + 1);
}

void
pol_pipeline_ops_order (PolSchedule schedule, int p, int v, int s, int m, int *ops)
{
  g_return_if_fail (ops != NULL && p >= 1 && v >= 1 && 0 <= s && s < p && m >= 1);
  int k = 0;
  if (schedule == POL_SCHEDULE_GPIPE)
    {
      g_return_if_fail (v == 1);
      for (int i = 0; i < m; i++)
        ops[k++] = i;
      for (int i = 0; i < m; i++)
        ops[k++] = -(i + 1);
      return;
    }
  if (v == 1)
    {
      /* 1F1B, and interleaved with one chunk per stage */
      int warm = MIN (p - s - 1, m);
      for (int i = 0; i < warm; i++)
        ops[k++] = i;
      for (int j = 0; j < m - warm; j++)
        {
          ops[k++] = warm + j;
          ops[k++] = -(j + 1);
        }
      for (int j = m - warm; j < m; j++)
        ops[k++] = -(j + 1);
      return;
    }
  g_return_if_fail (schedule == POL_SCHEDULE_INTERLEAVED && m % p == 0);
  int total = m * v;
  int warm = m == p ? total : MIN (2 * (p - s - 1) + (v - 1) * p, total);
  for (int j = 0; j < warm; j++)
    ops[k++] = interleaved_op (p, v, m, j, TRUE);
  for (int j = 0; j < total - warm; j++)
    {
      ops[k++] = interleaved_op (p, v, m, warm + j, TRUE);
      ops[k++] = interleaved_op (p, v, m, j, FALSE);
    }
  for (int j = total - warm; j < total; j++)
    ops[k++] = interleaved_op (p, v, m, j, FALSE);
}

int
pol_pipeline_stash_peak (PolSchedule schedule, int p, int v, int s, int m,
                         const double *chunk_bytes, double *peak_bytes, int *chunk_peak)
{
  g_return_val_if_fail (chunk_bytes != NULL && v >= 1 && m >= 1, 0);
  g_autofree int *ops = g_new (int, 2 * m * v);
  g_autofree int *held = g_new0 (int, v);
  pol_pipeline_ops_order (schedule, p, v, s, m, ops);
  int count = 0, peak = 0;
  double most = 0;
  if (chunk_peak)
    memset (chunk_peak, 0, sizeof (int) * (gsize) v);
  for (int k = 0; k < 2 * m * v; k++)
    {
      int op = ops[k];
      int c = (op >= 0 ? op : -op - 1) / m;
      if (op < 0)
        {
          held[c]--;
          count--;
          continue;
        }
      held[c]++;
      count++;
      peak = MAX (peak, count);
      if (chunk_peak)
        chunk_peak[c] = MAX (chunk_peak[c], held[c]);
      double bytes = 0;
      for (int j = 0; j < v; j++)
        bytes += held[j] * chunk_bytes[j];
      most = MAX (most, bytes);
    }
  if (peak_bytes)
    *peak_bytes = most;
  return peak;
}

int
pol_pipeline_pieces (const KernLayer *layers, int L)
{
  int pieces = 0;
  for (int l = 0; l < L; l++)
    pieces += l == 0 || !layers || !layers[l].joined;
  return pieces;
}

void
pol_pipeline_stage_counts (const int *stage_layers, const double *layer_fwd,
                           const double *layer_bwd, const KernLayer *layers, int L, int p,
                           int *count)
{
  g_return_if_fail (count != NULL && p >= 1 && p <= L);
  if (stage_layers)
    {
      memcpy (count, stage_layers, sizeof (int) * (gsize) p);
      return;
    }
  g_return_if_fail (layer_fwd != NULL && layer_bwd != NULL);
  /* piece u: layers start[u] .. start[u + 1] - 1, costs summed */
  int U = pol_pipeline_pieces (layers, L);
  g_return_if_fail (p <= U);
  g_autofree double *cost = g_new0 (double, U);
  g_autofree int *start = g_new (int, U + 1);
  int u = -1;
  for (int l = 0; l < L; l++)
    {
      if (l == 0 || !layers || !layers[l].joined)
        start[++u] = l;
      cost[u] += layer_fwd[l] + layer_bwd[l];
    }
  start[U] = L;
  g_autofree int *pieces = g_new (int, p);
  pol_pipeline_partition (cost, U, p, pieces);
  for (int k = 0, at = 0; k < p; k++)
    {
      count[k] = start[at + pieces[k]] - start[at];
      at += pieces[k];
    }
}

double
pol_pipeline_stash_bytes (const KernLayer *layers, const gboolean *recomputed, int first,
                          int last, int n)
{
  g_return_val_if_fail (layers != NULL && 0 <= first && first <= last, NAN);
  double stash = first > 0 ? layers[first - 1].outputs : 0.0;  /* floats per sample */
  for (int l = first; l <= last; l++)
    if (!recomputed || !recomputed[l] || l == 0)
      stash += layers[l].activations;
  return 4.0 * (double) n * stash;
}

/* pol_pipeline_stash_bytes on one rank of a tensor group of T (split NULL
 * or T = 1: the whole stage): a cut layer's activations 1/T, every
 * layer's with sequence parallelism, which also keeps the stage's input
 * 1/T (without it, the input is all-gathered whole before the first
 * layer). */
static double
rank_stash_bytes (const KernLayer *layers, const gboolean *recomputed, const PolTpSplit *split,
                  int T, gboolean sequence, int first, int last, int n)
{
  if (!split || T <= 1)
    return pol_pipeline_stash_bytes (layers, recomputed, first, last, n);
  double stash = first > 0 ? layers[first - 1].outputs / (sequence ? T : 1) : 0.0;
  for (int l = first; l <= last; l++)
    if (!recomputed || !recomputed[l] || l == 0)
      stash += layers[l].activations / (split[l] != POL_TP_WHOLE || sequence ? T : 1);
  return 4.0 * (double) n * stash;
}

/* A span of worker w, and when mirrored of its peer in every replica. */
static void
span_detail (PlPolicy *pl, int w, const char *kind, double a, double b, double bytes,
             const PolSpanDetail *d)
{
  if (!pl->mirror)
    {
      pol_worker_span_detail (&pl->env, w, kind, a, b, pl->iter, bytes, d);
      return;
    }
  if (!pl->env.rec.want_spans)
    return;  /* nothing to write for any replica */
  for (int r = 0; r < pl->R; r++)
    pol_worker_span_detail (&pl->env, train_mesh_rank_at (pl->mesh, w, TRAIN_AXIS_DATA, r), kind,
                            a, b, pl->iter, bytes, d);
}

static void
span (PlPolicy *pl, int w, const char *kind, double a, double b, double bytes)
{
  span_detail (pl, w, kind, a, b, bytes, NULL);
}

/* The same span on each rank of wk's tensor group. */
static void
group_span (PlPolicy *pl, const PlWorker *wk, const char *kind, double a, double b,
            double bytes)
{
  for (int t = 0; t < pl->T; t++)
    span (pl, wk->index + t, kind, a, b, bytes);
}

/* The stage group rank belongs to. */
static PlWorker *
group_of (PlPolicy *pl, int rank)
{
  return &pl->w[rank / pl->T];
}

/* Elements of a tensor rank's ZeRO reduce-scatter and all-gather: its
 * parameters padded to a multiple of the replicas, as Megatron-LM's
 * distributed optimizer and DeepSpeed pad their flat buffers, so that
 * every replica's shard has the same size. */
static gsize
zero_elems (const PlPolicy *pl, const PlWorker *wk)
{
  gsize R = (gsize) pl->R;
  return (wk->rank_params + R - 1) / R * R;
}

/* The group that runs group k's work: k itself, or when mirrored its
 * peer in replica 0. */
static PlWorker *
run_group (PlPolicy *pl, int k)
{
  if (!pl->mirror)
    return &pl->w[k];
  return group_of (pl, train_mesh_rank_at (pl->mesh, k * pl->T, TRAIN_AXIS_DATA, 0));
}

/* Message data: the receiving chunk (its group x v + chunk, the group of
 * rank `worker`), micro-batch and kind packed in a pointer. */
static gpointer
pack (const PlPolicy *pl, int worker, int chunk, int micro, int kind)
{
  gsize id = (gsize) (worker / pl->T) * (gsize) pl->V + (gsize) chunk;
  return GSIZE_TO_POINTER ((id << 24) | ((gsize) micro << 1) | (gsize) kind);
}

/* The worker and chunk of virtual stage k in the replica of rank `like`. */
static PlWorker *
virtual_stage (PlPolicy *pl, int like, int k, PlChunk **chunk)
{
  PlWorker *wk = group_of (pl, train_mesh_rank_at (pl->mesh, like, TRAIN_AXIS_PIPELINE,
                                                   k % pl->P));
  *chunk = &wk->chunk[k / pl->P];
  return wk;
}

static void try_next (PlPolicy *pl, PlWorker *wk);
static void start_iteration (EngSim *sim, gpointer ctx, gpointer data);

static void
on_arrive (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data,
           const NetTransfer *t G_GNUC_UNUSED)
{
  PlPolicy *pl = ctx;
  gsize v = GPOINTER_TO_SIZE (data);
  gsize id = v >> 24;
  PlWorker *wk = &pl->w[id / (gsize) pl->V];
  PlChunk *ch = &wk->chunk[id % (gsize) pl->V];
  int micro = (int) ((v >> 1) & 0x7fffff);
  if (v & 1)
    ch->grad_ready[micro]++;
  else
    ch->in_ready[micro]++;
  try_next (pl, wk);
}

/* Every stage of every replica has applied its update: the flush. */
static void
end_iteration (PlPolicy *pl)
{
  EngSim *sim = pl->env.sim;
  double now = eng_sim_now (sim);
  double T = now - pl->iter_start;
  for (int k = 0; k < pl->G; k++)
    {
      /* mirrored, replica 0's group stands for its peers */
      PlWorker *wk = run_group (pl, k);
      double compute = wk->it_compute, comm = MIN (wk->it_comm, T - compute);
      double wait = MAX (0.0, T - compute - comm);
      if (wk == &pl->w[k])
        {
          wk->sum_compute += compute;
          wk->sum_idle += T - compute;
        }
      for (int t = 0; t < pl->T; t++)
        pol_run_iteration (&pl->run, k * pl->T + t, pl->iter, pl->iter_start, now, compute,
                           comm, wait, 0);
    }
  pl->run.updates += pl->W;
  /* each replica's batch went through every stage once: the stages share
   * its samples, which count once */
  pl->run.samples += (gint64) pl->R * pl->env.batch;
  pol_run_progress (&pl->run, now);
  if (!pol_run_round_end (&pl->run, pl->params, pl->iter + 1 >= pl->env.iterations))
    return;
  pl->iter++;
  start_iteration (sim, pl, NULL);
}

/* Stage s (all replicas) has applied its update. */
static void
on_update_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  double now = eng_sim_now (sim);
  TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, s * pl->T);
  for (int r = 0; r < pl->Rs; r++)
    {
      PlWorker *wk = group_of (pl, g.ranks[r]);
      wk->it_compute += pl->update_time[s];
      group_span (pl, wk, "update", now - pl->update_time[s], now, 0);
    }
  if (++pl->stages_updated == pl->P)
    end_iteration (pl);
}

static void on_shard_updated (EngSim *sim, gpointer ctx, gpointer data);

/* Stage s's gradient is averaged among replicas: apply it, chunk by chunk. */
static void
apply_update (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  PlWorker *w0 = &pl->w[s];
  if (pl->env.model)
    for (int c = 0; c < pl->V; c++)
      {
        const PlChunk *ch = &w0->chunk[c];
        float *g = pl->grad[0];
        if (pl->R > 1)
          {
            float inv = 1.0f / (float) pl->R;
            for (gsize i = ch->lo; i < ch->hi; i++)
              g[i] *= inv;
          }
        kern_optimizer_step (pl->opt[ch->k], pl->params + ch->lo, g + ch->lo);
      }
  eng_schedule (sim, pl->update_time[s], pl->zero ? on_shard_updated : on_update_done, pl, data);
}

/* Copies worker wk's chunks' gradients from grad (the model's layout) into
 * wk->packed, side by side, or back when `back`. */
static void
pack_grad (PlPolicy *pl, PlWorker *wk, float *grad, gboolean back)
{
  gsize at = 0;
  for (int c = 0; c < pl->V; c++)
    {
      const PlChunk *ch = &wk->chunk[c];
      gsize len = ch->hi - ch->lo;
      if (back)
        memcpy (grad + ch->lo, wk->packed + at, sizeof (float) * len);
      else
        memcpy (wk->packed + at, grad + ch->lo, sizeof (float) * len);
      at += len;
    }
}

/* Starts collective `kind` among stage s's replicas with a, `done` with s. */
static void
data_start (PlPolicy *pl, const CommArgs *a, CommKind kind, CommDone done, int s)
{
  g_autoptr (GError) error = NULL;
  if (!comm_start (pl->alg, a, kind, done, pl, GINT_TO_POINTER (s), &error))
    g_error ("%s with %s: %s", comm_kind_name (kind), pl->alg->name,
             error->message); /* validated before */
}

/* zero > 0: the reduce-scatter of stage s's gradients (or the all-gather
 * of its updated parameters) among the replicas, timing only: each tensor
 * rank's data group, T at once, over that rank's parameters; `done` with
 * s once all have ended. */
static void
zero_collectives (PlPolicy *pl, const PlWorker *wk, CommKind kind, CommDone done, int s)
{
  pl->reduce_pending[s] = pl->T;
  for (int t = 0; t < pl->T; t++)
    {
      TrainGroup gt = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, wk->index + t);
      CommArgs a = pol_collective_args (&pl->env, gt.n, gt.hosts, zero_elems (pl, wk), 0,
                                        TAG_ALLREDUCE);
      a.mirrored = pl->mirror;
      data_start (pl, &a, kind, done, s);
    }
}

/* zero > 0: stage s's parameters are gathered again: its update is done. */
static void
on_gather_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  if (--pl->reduce_pending[s] > 0)
    return;
  on_update_done (sim, ctx, data);
}

/* zero > 0: stage s's shards are updated: gather the parameters. */
static void
on_shard_updated (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  zero_collectives (pl, group_of (pl, train_mesh_group (pl->mesh, TRAIN_AXIS_DATA,
                                                        s * pl->T).ranks[0]),
                    COMM_ALLGATHER, on_gather_done, s);
}

static void
on_reduce_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  int s = GPOINTER_TO_INT (data);
  if ((pl->T > 1 || pl->zero) && --pl->reduce_pending[s] > 0)
    return; /* another tensor rank's data group is still reducing */
  double now = eng_sim_now (sim);
  TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, s * pl->T);
  for (int r = 0; r < pl->Rs; r++)
    {
      PlWorker *wk = group_of (pl, g.ranks[r]);
      wk->it_comm += now - wk->blocked_since;
      group_span (pl, wk, "send", wk->blocked_since, now, 4.0 * (double) wk->rank_params);
      wk->blocked_since = -1;
    }
  PlWorker *w0 = group_of (pl, g.ranks[0]);
  if (w0->packed)
    pack_grad (pl, w0, pl->grad[0], TRUE);
  apply_update (sim, pl, data);
}

/* Worker wk has ended its last backward of the iteration. */
static void
stage_backward_done (PlPolicy *pl, PlWorker *wk)
{
  int s = wk->stage;
  for (int c = 0; c < pl->V; c++)
    if (wk->chunk[c].ks)
      kern_stage_take_grad (wk->chunk[c].ks, pl->grad[wk->replica]);
  if (++pl->backward_done[s] < pl->Rs)
    return;
  double now = eng_sim_now (pl->env.sim);
  if (pl->R == 1)
    {
      apply_update (pl->env.sim, pl, GINT_TO_POINTER (s));
      return;
    }
  /* the all-reduce starts when the last replica's stage s is done; the
   * others waited for it (their wait), the collective is comm */
  TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, wk->index);
  gboolean math = pl->env.model && !pl->stacked;
  for (int r = 0; r < pl->Rs; r++)
    {
      PlWorker *o = group_of (pl, g.ranks[r]);
      if (math && o->packed)
        {
          pack_grad (pl, o, pl->grad[r], FALSE);
          pl->reduce_bufs[r] = o->packed;
        }
      else if (math)
        pl->reduce_bufs[r] = pl->grad[r] + o->chunk[0].lo;
      o->blocked_since = now;
    }
  if (pl->zero)
    {
      zero_collectives (pl, wk, COMM_REDUCE_SCATTER, on_reduce_done, s);
      return;
    }
  if (pl->T == 1)
    {
      CommArgs a = pol_comm_args (&pl->env, g.n, g.hosts, math ? pl->reduce_bufs : NULL,
                                  wk->params, TAG_ALLREDUCE);
      a.mirrored = pl->mirror;
      data_start (pl, &a, COMM_ALLREDUCE, on_reduce_done, s);
      return;
    }
  /* tensor groups: each tensor rank's data group (its peers at the same
   * stage and tensor coordinate) all-reduces that rank's share, T groups at
   * once; the math ran stacked at the iteration's start */
  pl->reduce_pending[s] = pl->T;
  for (int t = 0; t < pl->T; t++)
    {
      TrainGroup gt = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, wk->index + t);
      CommArgs a = pol_comm_args (&pl->env, gt.n, gt.hosts, NULL, wk->rank_params,
                                  TAG_ALLREDUCE);
      a.mirrored = pl->mirror;
      data_start (pl, &a, COMM_ALLREDUCE, on_reduce_done, s);
    }
}

/* Sends `bytes` from wk's group to `to`'s: one transfer, or with tensor
 * groups T of bytes / T, each tensor rank to the same rank of `to`
 * (Megatron's scatter/gather of the boundary tensors). */
static void
send_boundary (PlPolicy *pl, const PlWorker *wk, const PlWorker *to, int chunk, int micro,
               double bytes, int tag)
{
  for (int t = 0; t < pl->T; t++)
    net_send (pl->env.net, train_mesh_host (pl->mesh, wk->index + t),
              train_mesh_host (pl->mesh, to->index + t), bytes / pl->T, tag, on_arrive, pl,
              pack (pl, to->index, chunk, micro, tag == TAG_GRADIENT));
}

/* wk's running operation has ended now: its output goes on, and the next
 * one starts when it can. */
static void
op_finished (PlPolicy *pl, PlWorker *wk)
{
  double now = eng_sim_now (pl->env.sim);
  int op = wk->ops[wk->pos];
  int code = op >= 0 ? op : -op - 1;
  int micro = code % pl->M;
  PlChunk *ch = &wk->chunk[code / pl->M];
  if (op >= 0)
    {
      if (ch->k + 1 < pl->K)
        {
          PlChunk *nc;
          PlWorker *next = virtual_stage (pl, wk->index, ch->k + 1, &nc);
          nc->in_sent[micro] = now;
          send_boundary (pl, wk, next, (int) (nc - next->chunk), micro, ch->out_bytes,
                         TAG_ACTIVATION);
        }
      else
        {
          ch->grad_sent[micro] = now;
          ch->grad_ready[micro] = pl->T;
        }
    }
  else
    {
      wk->stash--;
      ch->stash--;
      if (ch->k > 0)
        {
          PlChunk *pc;
          PlWorker *prev = virtual_stage (pl, wk->index, ch->k - 1, &pc);
          pc->grad_sent[micro] = now;
          send_boundary (pl, wk, prev, (int) (pc - prev->chunk), micro, pc->out_bytes,
                         TAG_GRADIENT);
        }
    }
  wk->busy = FALSE;
  wk->pos++;
  if (wk->pos == 2 * pl->M * pl->V)
    {
      stage_backward_done (pl, wk);
      return;
    }
  try_next (pl, wk);
}

static void
on_op_done (EngSim *sim, gpointer ctx, gpointer data)
{
  PlPolicy *pl = ctx;
  PlWorker *wk = data;
  wk->it_compute += eng_sim_now (sim) - wk->op_start;
  op_finished (pl, wk);
}

/* A tensor group's operation chain has ended: its compute stretches are
 * compute, the tensor collectives between them communication. */
static void
on_tensor_op_done (gpointer ctx)
{
  PlWorker *wk = ctx;
  PlPolicy *pl = wk->pl;
  double now = eng_sim_now (pl->env.sim);
  int op = wk->ops[wk->pos];
  int code = op >= 0 ? op : -op - 1;
  const PlChunk *ch = &wk->chunk[code / pl->M];
  const PolTensorStep *chain = op >= 0 ? ch->op_fwd : ch->op_bwd;
  const double *a, *b;
  int n;
  pol_tensor_step_stretches (chain, &a, &b, &n);
  PolSpanDetail d = { op >= 0 ? "forward" : "backward", code % pl->M, ch->first, ch->last };
  double compute = 0, from = wk->op_start;
  for (int i = 0; i < n; i++)
    {
      if (a[i] > from)
        group_span (pl, wk, "send", from, a[i], 0);
      for (int t = 0; t < pl->T; t++)
        span_detail (pl, wk->index + t, "compute", a[i], b[i], 0, &d);
      compute += b[i] - a[i];
      from = b[i];
    }
  if (now > from)
    group_span (pl, wk, "send", from, now, 0);
  wk->it_compute += compute;
  wk->it_comm += (now - wk->op_start) - compute;
  op_finished (pl, wk);
}

/* With math run operation by operation: chunk ch of worker wk runs its
 * forward or backward of `micro` on its layers' kernels.  Returns the host
 * seconds it took. */
static double
chunk_math (PlPolicy *pl, PlWorker *wk, PlChunk *ch, int micro, gboolean fwd)
{
  const PolEnv *env = &pl->env;
  int r = wk->replica, k = ch->k, n = pl->n;
  int slot = micro % ch->slots;
  gsize in_w = (gsize) ch->ks->in_width, out_w = (gsize) ch->ks->out_width;
  gsize row = (gsize) micro * (gsize) n;
  gint64 t0 = g_get_monotonic_time ();
  if (fwd)
    {
      const float *in = k == 0 ? train_steps_x (pl->steps, r) + row * (gsize) env->model->d
                               : pl->act[r][k - 1] + row * in_w;
      float *out = k + 1 < pl->K ? pl->act[r][k] + row * out_w : NULL;
      const float *x = train_steps_x (pl->steps, r) + row * (gsize) env->model->d;
      double loss = kern_stage_forward (ch->ks, slot, in, x, train_steps_y (pl->steps, r) + row,
                                        out);
      if (k + 1 == pl->K)
        pl->loss_sum += loss;
    }
  else
    {
      const float *dout = k + 1 < pl->K ? pl->dact[r][k] + row * out_w : NULL;
      float *din = k > 0 ? pl->dact[r][k - 1] + row * in_w : NULL;
      kern_stage_backward (ch->ks, slot, dout, din);
    }
  return (double) (g_get_monotonic_time () - t0) / 1e6;
}

/* Starts wk's next operation if its input is there; otherwise it waits. */
static void
try_next (PlPolicy *pl, PlWorker *wk)
{
  if (wk->busy || wk->pos >= 2 * pl->M * pl->V)
    return;
  EngSim *sim = pl->env.sim;
  double now = eng_sim_now (sim);
  int op = wk->ops[wk->pos];
  int code = op >= 0 ? op : -op - 1;
  int micro = code % pl->M;
  PlChunk *ch = &wk->chunk[code / pl->M];
  gboolean fwd = op >= 0;
  gboolean ready = fwd ? (ch->k == 0 || ch->in_ready[micro] == pl->T)
                       : ch->grad_ready[micro] == pl->T;
  if (!ready)
    {
      if (wk->blocked_since < 0)
        wk->blocked_since = now;
      return;
    }
  if (wk->blocked_since >= 0)
    {
      /* blocked time after the input was sent is communication (a recv
       * span, as the summary counts it); before, the bubble (idle) */
      double sent = fwd ? ch->in_sent[micro] : ch->grad_sent[micro];
      double from = MAX (wk->blocked_since, sent);
      wk->it_comm += now - from;
      group_span (pl, wk, "idle", wk->blocked_since, from, 0);
      group_span (pl, wk, "recv", from, now, 0);
      wk->blocked_since = -1;
    }
  const PolEnv *env = &pl->env;
  double host = ch->ks ? chunk_math (pl, wk, ch, micro, fwd) : 0;
  if (fwd)
    {
      wk->stash++;
      ch->stash++;
      wk->peak_stash = MAX (wk->peak_stash, wk->stash);
      double bytes = 0;
      for (int c = 0; c < pl->V; c++)
        bytes += wk->chunk[c].stash * wk->chunk[c].stash_bytes;
      wk->peak_bytes = MAX (wk->peak_bytes, bytes);
    }
  wk->busy = TRUE;
  wk->op_start = now;
  if (pl->T > 1)
    {
      /* the group's chain, its compute at the pace of its slowest rank */
      PolTensorStep *chain = fwd ? ch->op_fwd : ch->op_bwd;
      double share = pol_tensor_step_compute (chain), slowest = 0;
      for (int t = 0; t < pl->T; t++)
        slowest = MAX (slowest, env->scale_time (env->compute_ctx, wk->index + t, share, 0));
      pol_tensor_step_run (chain, share > 0 ? slowest / share : 0, NULL, on_tensor_op_done, wk);
      return;
    }
  double dt = env->scale_time (env->compute_ctx, wk->index, fwd ? ch->t_fwd : ch->t_bwd, host);
  PolSpanDetail d = { fwd ? "forward" : "backward", micro, ch->first, ch->last };
  span_detail (pl, wk->index, "compute", now, now + dt, 0, &d);
  eng_schedule (sim, dt, on_op_done, pl, wk);
}

static void
start_iteration (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  PlPolicy *pl = ctx;
  const PolEnv *env = &pl->env;
  pl->iter_start = eng_sim_now (sim);
  pl->stages_updated = 0;
  pl->loss_sum = 0;
  memset (pl->backward_done, 0, sizeof (int) * (gsize) pl->P);
  if (env->model)
    {
      /* every replica's batch; stacked, its gradient too, summed into
       * grad[0] as the step computes them (train_step's sum: a product
       * per task, the tasks in order): the stages' all-reduces then only
       * take their time */
      TrainStep st = { .n = pl->R, .first = 0, .params = pl->params,
                       .grads = pl->stacked ? pl->grad : NULL,
                       .sum = pl->stacked ? pl->grad[0] : NULL };
      train_step (pl->steps, &st);
    }
  for (int k = 0; k < pl->G; k++)
    {
      PlWorker *wk = &pl->w[k];
      if (wk->replica >= pl->Rs)
        continue;  /* mirrored: replica 0 runs for all */
      wk->pos = 0;
      wk->busy = FALSE;
      wk->stash = 0;
      wk->blocked_since = -1;
      wk->it_compute = wk->it_comm = 0;
      for (int c = 0; c < pl->V; c++)
        {
          PlChunk *ch = &wk->chunk[c];
          ch->stash = 0;
          for (int i = 0; i < pl->M; i++)
            {
              ch->in_ready[i] = ch->grad_ready[i] = 0;
              ch->in_sent[i] = ch->grad_sent[i] = pl->iter_start;
            }
          if (ch->ks)
            kern_stage_set_params (ch->ks, pl->params);
        }
    }
  for (int k = 0; k < pl->G; k++)
    if (pl->w[k].replica < pl->Rs)
      try_next (pl, &pl->w[k]);
}

/* Replicas draw batches as data-parallel workers do: one part of the
 * training set each. */
static gint64
pl_data_parts (const BaseValues *values, gint64 workers G_GNUC_UNUSED)
{
  return MAX (base_values_int (values, "policy.replicas"), 1);
}

/* The pipeline's shape from its keys: stages, replicas, micro-batches,
 * chunks per stage and tensor ranks per stage. */
static void
pl_shape (const BaseValues *v, int *P, int *R, int *M, int *V, int *T)
{
  *T = (int) MAX (base_values_int (v, "policy.tensor"), 1);
  *P = (int) base_values_int (v, "policy.stages");
  *R = (int) MAX (base_values_int (v, "policy.replicas"), 1);
  *M = (int) base_values_int (v, "policy.microbatches");
  *V = (int) MAX (base_values_int (v, "policy.chunks"), 1);
}

/* [policy] stage_layers, or NULL when empty (balanced by device time). */
static const int *
pl_stage_layers (const BaseValues *v)
{
  const GArray *a = base_values_list (v, "policy.stage_layers");
  return a && a->len > 0 ? (const int *) a->data : NULL;
}

/* FALSE (and an error) when env's pipeline shape cannot run: stages, replicas,
 * micro-batches and chunks against workers, layers and batch, and the layer
 * tables the policy needs. */
static gboolean
pl_check_env (const PolEnv *env, GError **error)
{
  int P, R, M, V, T;
  pl_shape (env->values, &P, &R, &M, &V, &T);
  PolSchedule schedule = (PolSchedule) base_values_int (env->values, "policy.schedule");
  int L = env->n_layers;
  gboolean chunks_ok = V == 1 || (schedule == POL_SCHEDULE_INTERLEAVED && P >= 2);
  if (P < 1 || P > L || P * R * T != env->workers || M < 1 || env->batch % M != 0
      || V < 1 || P * V > L || !chunks_ok
      || (schedule == POL_SCHEDULE_INTERLEAVED && M % P != 0)
      || !env->layers || !env->layer_seconds || !env->scale_time)
    {
      g_set_error (error, POL_ERROR, 0,
                   "pipeline: bad stages %d, replicas %d, tensor %d, micro-batches %d or chunks "
                   "%d for %d workers, %d layers and batch %d", P, R, T, M, V, env->workers, L,
                   env->batch);
      return FALSE;
    }
  return TRUE;
}

/* Fills pl->count (K entries), the layers of each virtual stage; FALSE (and
 * an error) when they are not K non-empty groups covering the L layers. */
static gboolean
pl_stage_counts (PlPolicy *pl, GError **error)
{
  const PolEnv *env = &pl->env;
  int K = pl->K, L = env->n_layers;
  pl->count = g_new (int, K);
  pol_pipeline_stage_counts (pl_stage_layers (env->values), pl->layer_fwd, pl->layer_bwd,
                             env->layers, L, K, pl->count);
  int total = 0;
  for (int k = 0; k < K; k++)
    {
      if (pl->count[k] < 1)
        total = -L - 1;
      total += pl->count[k];
    }
  if (total != L)
    {
      g_set_error (error, POL_ERROR, 0,
                   "pipeline: stage layer counts do not cover the %d layers", L);
      return FALSE;
    }
  return TRUE;
}

/* Bytes of an activation value on the wire: the training precision's. */
static double
value_bytes (const PolEnv *env)
{
  return env->value_bytes > 0 ? env->value_bytes : 4.0;
}

/* Seconds of a stage's update: of a tensor rank's parameters, or with ZeRO
 * of its 1/R shard of them. */
static double
stage_update_time (const PlPolicy *pl, const PlWorker *wk)
{
  gsize n = pl->zero ? zero_elems (pl, wk) / (gsize) pl->R : wk->rank_params;
  return pl->env.update_time (pl->env.compute_ctx, n);
}

/* Sets up stage s of replica r: its chunks' layers, parameters, device
 * times, stash and per-micro-batch state (and their KernStages with math
 * run operation by operation), its FLOPs and its schedule. */
/* The first rank of stage s of replica r. */
static int
stage_rank (const PlPolicy *pl, int r, int s)
{
  return train_mesh_rank_at (pl->mesh, train_mesh_rank_at (pl->mesh, 0, TRAIN_AXIS_DATA, r),
                             TRAIN_AXIS_PIPELINE, s);
}

static void
pl_worker_init (PlPolicy *pl, int r, int s)
{
  const PolEnv *env = &pl->env;
  int P = pl->P, M = pl->M, V = pl->V, L = env->n_layers;
  double n = pl->n;
  int rank = stage_rank (pl, r, s);
  PlWorker *wk = group_of (pl, rank);
  wk->pl = pl;
  wk->replica = r;
  wk->stage = s;
  wk->index = rank;
  wk->chunk = g_new0 (PlChunk, V);
  g_autofree double *bytes = g_new (double, V);
  g_autofree int *slots = g_new (int, V);
  for (int c = 0; c < V; c++)
    {
      PlChunk *ch = &wk->chunk[c];
      ch->k = c * P + s;
      ch->first = 0;
      for (int k = 0; k < ch->k; k++)
        ch->first += pl->count[k];
      ch->last = ch->first + pl->count[ch->k] - 1;
      ch->lo = env->layers[ch->first].param_offset;
      ch->hi = ch->last + 1 < L ? env->layers[ch->last + 1].param_offset : env->n_params;
      wk->params += ch->hi - ch->lo;
      int count = ch->last - ch->first + 1;
      wk->rank_params += pl->split ? pol_tensor_rank_params (env->layers + ch->first, count, ch->hi,
                                                             pl->split + ch->first, pl->T)
                                   : ch->hi - ch->lo;
      for (int l = ch->first; l <= ch->last; l++)
        {
          const KernLayer *ly = &env->layers[l];
          double fwd = ly->fwd_flops_fixed + ly->fwd_flops * n;
          double share = pl->split && (pl->split[l] != POL_TP_WHOLE || pl->sequence)
                         ? 1.0 / pl->T : 1.0;
          ch->t_fwd += pl->layer_fwd[l];
          ch->t_bwd += pl->layer_bwd[l];
          wk->flops += M * share * (fwd + ly->bwd_flops_fixed + ly->bwd_flops * n
                                    + (env->recomputed && env->recomputed[l] ? fwd : 0));
        }
      ch->stash_bytes = rank_stash_bytes (env->layers, env->recomputed, pl->split, pl->T,
                                          pl->sequence, ch->first, ch->last, pl->n);
      if (pl->T > 1)
        {
          const int *hosts = train_mesh_group (pl->mesh, TRAIN_AXIS_TENSOR, rank).hosts;
          double e = env->value_bytes > 0 ? env->value_bytes : 4.0;
          ch->op_fwd = pol_tensor_op_new (env, pl->T, hosts, pl->split, pl->sequence, ch->first,
                                          ch->last, TRUE, pl->n, pl->layer_fwd, pl->alg, e,
                                          TAG_TENSOR);
          ch->op_bwd = pol_tensor_op_new (env, pl->T, hosts, pl->split, pl->sequence, ch->first,
                                          ch->last, FALSE, pl->n, pl->layer_bwd, pl->alg, e,
                                          TAG_TENSOR);
        }
      ch->out_bytes = ch->k + 1 < pl->K ? value_bytes (env) * n * env->layers[ch->last].outputs
                                        : 0.0;
      wk->out_bytes += ch->out_bytes;
      bytes[c] = ch->stash_bytes;
      ch->in_ready = g_new0 (int, M);
      ch->grad_ready = g_new0 (int, M);
      ch->in_sent = g_new0 (double, M);
      ch->grad_sent = g_new0 (double, M);
    }
  pol_pipeline_stash_peak (pl->schedule, P, V, s, M, bytes, NULL, slots);
  for (int c = 0; c < V; c++)
    {
      PlChunk *ch = &wk->chunk[c];
      ch->slots = MAX (slots[c], 1);
      if (env->model && !pl->stacked)
        ch->ks = kern_stage_new (env->model, ch->first, ch->last, pl->n, ch->slots,
                                 1.0f / (float) env->batch);
    }
  wk->ops = g_new (int, 2 * M * V);
  pol_pipeline_ops_order (pl->schedule, P, V, s, M, wk->ops);
  wk->blocked_since = -1;
  if (env->model && !pl->stacked && pl->R > 1 && V > 1)
    wk->packed = g_new (float, MAX (wk->params, 1));
  if (r == 0)
    pl->update_time[s] = stage_update_time (pl, wk);
}

/* With math: the replicas' samplers, batches, gradients, the boundary
 * buffers between virtual stages and one optimizer per virtual stage. */
static void
pl_math_new (PlPolicy *pl)
{
  const PolEnv *env = &pl->env;
  int K = pl->K, R = pl->R;
  gsize NP = env->n_params;
  PolEnv senv = *env;
  senv.workers = R; /* replicas draw batches as data-parallel workers do */
  /* with tensor groups, each replica's gradient on its group's shards */
  TrainStepsSetup setup = { .model = env->model, .train = env->train,
                            .samplers = pol_samplers_for_env (&senv), .parts = R,
                            .batch = env->batch, .slots = R,
                            .stacked = pl->stacked && !pl->plan, .tensor = pl->plan,
                            .host_timed = env->host_timed };
  pl->steps = train_steps_new (&setup);
  pl->grad = g_new (float *, R);
  pl->act = g_new0 (float **, R);
  pl->dact = g_new0 (float **, R);
  for (int r = 0; r < R; r++)
    {
      pl->grad[r] = g_new0 (float, NP);
      pl->act[r] = g_new0 (float *, K);
      pl->dact[r] = g_new0 (float *, K);
      if (pl->stacked)
        continue;
      for (int k = 0; k + 1 < K; k++)
        {
          PlChunk *ch;
          virtual_stage (pl, 0, k, &ch);
          gsize len = (gsize) env->batch * (gsize) ch->ks->out_width;
          pl->act[r][k] = g_new (float, len);
          pl->dact[r][k] = g_new (float, len);
        }
    }
  pl->opt = g_new0 (KernOptimizer *, K);
  for (int k = 0; k < K; k++)
    {
      PlChunk *ch;
      virtual_stage (pl, 0, k, &ch);
      pl->opt[k] = kern_optimizer_new (&env->opt, ch->hi - ch->lo);
    }
}

static void pl_free (PolPolicy *p);

static PolPolicy *
pl_create (const PolEnv *env, GError **error)
{
  if (!pl_check_env (env, error))
    return NULL;
  int P, R, M, V, T;
  pl_shape (env->values, &P, &R, &M, &V, &T);
  const CommAlgorithm *alg = NULL;
  if ((R > 1 || T > 1) && !(alg = pol_env_algorithm (env, error)))
    return NULL;
  gboolean stacked = env->model && !env->host_timed && env->model->ops->loss_grad_groups;
  if (T > 1 && env->model && !stacked)
    {
      /* the groups' math is the iteration's, computed at its start */
      g_set_error (error, POL_ERROR, 0,
                   "[policy] tensor: %d with kind = pipeline computes a stage's gradient on "
                   "its tensor ranks' shards at the iteration's start, which [device] "
                   "compute_time = measured cannot time operation by operation; use "
                   "compute_time = model or tensor = 1", T);
      return NULL;
    }
  PlPolicy *pl = g_new0 (PlPolicy, 1);
  pl->env = *env;
  pl->alg = alg;
  pl->P = P;
  pl->R = R;
  pl->M = M;
  pl->V = V;
  pl->T = T;
  pl->K = P * V;
  pl->G = P * R;
  pl->W = P * R * T;
  pl->n = env->batch / M;
  pl->schedule = (PolSchedule) base_values_int (env->values, "policy.schedule");
  pl->stacked = stacked;
  pl->sequence = base_values_int (env->values, "policy.sequence_parallel") != 0;
  /* ZeRO shards a stage's state over its replicas: nothing to shard alone */
  pl->zero = pl->R > 1 ? (int) base_values_int (env->values, "policy.zero") : 0;
  pl->layer_fwd = g_new (double, env->n_layers);
  pl->layer_bwd = g_new (double, env->n_layers);
  env->layer_seconds (env->compute_ctx, pl->n, pl->layer_fwd, pl->layer_bwd);
  pol_run_init (&pl->run, &pl->env);
  if (T > 1)
    pl->split = g_new (PolTpSplit, MAX (env->n_layers, 1));
  if (T > 1 || pl->zero)
    pl->reduce_pending = g_new0 (int, P);
  if ((pl->split && !pol_tensor_split (env->layers, env->n_layers, T, pl->split, error))
      || (T > 1 && env->model && !(pl->plan = kern_tensor_plan_new (env->model, T, error)))
      || !pl_stage_counts (pl, error))
    {
      pl_free ((PolPolicy *) pl);
      return NULL;
    }

  /* the parameters only where the math runs: a timing-only model may be of
   * any size */
  if (env->model)
    {
      pl->params = g_new0 (float, MAX (env->n_params, 1));
      env->model->ops->init (env->model, pl->params, env->seed);
    }
  pl->update_time = g_new (double, P);
  pl->backward_done = g_new0 (int, P);
  int size[TRAIN_N_AXES] = { [TRAIN_AXIS_DATA] = R, [TRAIN_AXIS_PIPELINE] = P,
                             [TRAIN_AXIS_EXPERT] = 1, [TRAIN_AXIS_CONTEXT] = 1,
                             [TRAIN_AXIS_TENSOR] = T };
  pl->mesh = train_mesh_new (size, 0);
  pl->reduce_bufs = g_new0 (float *, R);
  pl->w = g_new0 (PlWorker, pl->G);
  pl->Rs = R;
  /* the other replicas' groups are set up at the start, unless mirrored */
  for (int r = 0; r < R; r++)
    for (int s = 0; s < P; s++)
      if (r == 0 || env->model)
        pl_worker_init (pl, r, s);
      else
        group_of (pl, stage_rank (pl, r, s))->replica = r;
  if (env->model)
    pl_math_new (pl);
  return (PolPolicy *) pl;
}

/* Mirrored replicas (docs/policies.md, "Mirrored replicas").  When every
 * replica is replica 0 moved on a network made of copies — the same
 * compute at the same pace, no failure, no math, no per-message trace, no
 * expert groups across replicas, each replica's ranks on one copy of the
 * network in the same order — the replicas do the same thing at the same
 * times, and their data-parallel collectives are mirrored too
 * (comm_mirror_ok): replica 0 alone is run, its collectives among replicas
 * on folded routes, and what it records stands for every replica.  Folds
 * the network and returns NULL then; else returns why not, the network
 * unfolded. */
/* Why replicas are not mirrored, where both the run and the prediction of
 * `dtsim check` can find it. */
static const char MIRROR_NOT_COPIES[] =
  "no: the network is not made of copies of one replica's hosts (topology, nodes split by a "
  "replica, [network] links, or a trace of every message)";
static const char MIRROR_NOT_ALIKE[] =
  "no: the data-parallel collective's ranks do not all do alike (algorithm, channels or "
  "blocks of two sizes)";

/* The conditions of mirrored replicas that the scenario alone settles:
 * NULL when they hold, else why not. */
static const char *
pl_mirror_keys (const BaseValues *v, int R, gboolean math, gboolean same_pace,
                gboolean failures, gboolean flow_classes)
{
  if (R < 2)
    return "no: one replica";
  if (math)
    return "no: the replicas' real math differs";
  if (!same_pace || failures)
    return "no: stragglers, measured compute or failures make replicas differ";
  if (base_values_int (v, "policy.experts") > 1)
    return "no: expert groups span the replicas";
  if (!flow_classes)
    return "no: [network] flow_classes = off";
  return NULL;
}

static const char *
pl_mirror (PlPolicy *pl)
{
  const PolEnv *env = &pl->env;
  int period = pl->P * pl->T;
  const char *why = pl_mirror_keys (env->values, pl->R, env->model != NULL, env->same_pace,
                                    env->n_failures > 0, net_network_flow_classes (env->net));
  if (why)
    return why;
  for (int w = 0; w < pl->W; w++)
    {
      int base = train_mesh_host (pl->mesh, train_mesh_rank_at (pl->mesh, w, TRAIN_AXIS_DATA, 0));
      int r = train_mesh_coord (pl->mesh, w, TRAIN_AXIS_DATA);
      if (base >= period || train_mesh_host (pl->mesh, w) != base + r * period)
        return "no: the replicas are not placed alike";
    }
  if (!net_network_fold (env->net, period))
    return MIRROR_NOT_COPIES;
  for (int s = 0; s < pl->P; s++)
    for (int t = 0; t < pl->T; t++)
      {
        const PlWorker *wk = group_of (pl, stage_rank (pl, 0, s));
        TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, wk->index + t);
        CommArgs a = pl->zero
          ? pol_collective_args (env, g.n, g.hosts, zero_elems (pl, wk), 0, TAG_ALLREDUCE)
          : pol_comm_args (env, g.n, g.hosts, NULL, pl->T == 1 ? wk->params : wk->rank_params,
                           TAG_ALLREDUCE);
        gboolean ok = pl->zero ? comm_mirror_ok (pl->alg, &a, COMM_REDUCE_SCATTER)
                                   && comm_mirror_ok (pl->alg, &a, COMM_ALLGATHER)
                               : comm_mirror_ok (pl->alg, &a, COMM_ALLREDUCE);
        if (!ok)
          {
            net_network_fold (env->net, 0);
            return MIRROR_NOT_ALIKE;
          }
      }
  return NULL;
}

static void
pl_start (PolPolicy *p)
{
  PlPolicy *pl = (PlPolicy *) p;
  const char *why = pl_mirror (pl);
  pl->mirror = why == NULL;
  pl->Rs = pl->mirror ? 1 : pl->R;
  if (pl->R > 1 && pl->env.rec.param)
    pl->env.rec.param (pl->env.rec.ctx, "policy.replicas_mirrored",
                       why ? why : "yes: replica 0 ran for every replica");
  for (int r = pl->mirror ? pl->R : 1; r < pl->R; r++)
    for (int s = 0; s < pl->P; s++)
      if (group_of (pl, stage_rank (pl, r, s))->chunk == NULL)
        pl_worker_init (pl, r, s);
  pol_report_mesh (&pl->env, pl->mesh);
  if (pl->R > 1)  /* what stage 0's replicas all-reduce with */
    {
      TrainGroup g = train_mesh_group (pl->mesh, TRAIN_AXIS_DATA, 0);
      pol_report_algorithm (&pl->env, pl->alg,
                            pol_allreduce_resolve (&pl->env, pl->alg, g.n, g.hosts,
                                                   pl->w[0].rank_params));
    }
  pol_run_start (&pl->run, pl->params);
  eng_schedule (pl->env.sim, 0, start_iteration, pl, NULL);
}

static void
pl_finish (PolPolicy *p, PolResult *out)
{
  PlPolicy *pl = (PlPolicy *) p;
  pol_run_finish (&pl->run, pl->params, out);
  if (!pl->env.rec.stage)
    return;
  for (int k = 0; k < pl->W; k++)
    {
      const PlWorker *wk = run_group (pl, k / pl->T);
      PolStageStats st = {
        .replica = group_of (pl, k)->replica,
        .stage = wk->stage,
        .worker = k,
        .first_layer = wk->chunk[0].first,
        .last_layer = wk->chunk[pl->V - 1].last,
        .params = wk->rank_params,
        .flops = wk->flops,
        .peak_stash = wk->peak_stash,
        .activation_bytes = wk->peak_bytes,
        .boundary_bytes = wk->out_bytes / pl->T,
        .compute = wk->sum_compute,
        .idle = wk->sum_idle,
      };
      pl->env.rec.stage (pl->env.rec.ctx, &st);
    }
}

static void
pl_free (PolPolicy *p)
{
  PlPolicy *pl = (PlPolicy *) p;
  if (!pl)
    return;
  for (int k = 0; pl->w && k < pl->G; k++)
    {
      PlWorker *wk = &pl->w[k];
      g_free (wk->ops);
      g_free (wk->packed);
      for (int c = 0; wk->chunk && c < pl->V; c++)
        {
          PlChunk *ch = &wk->chunk[c];
          g_free (ch->in_ready);
          g_free (ch->grad_ready);
          g_free (ch->in_sent);
          g_free (ch->grad_sent);
          kern_stage_free (ch->ks);
          pol_tensor_step_free (ch->op_fwd);
          pol_tensor_step_free (ch->op_bwd);
        }
      g_free (wk->chunk);
    }
  if (pl->env.model && pl->grad)
    {
      for (int r = 0; r < pl->R; r++)
        {
          g_free (pl->grad[r]);
          for (int k = 0; k + 1 < pl->K; k++)
            {
              g_free (pl->act[r][k]);
              g_free (pl->dact[r][k]);
            }
          g_free (pl->act[r]);
          g_free (pl->dact[r]);
        }
      for (int k = 0; k < pl->K; k++)
        kern_optimizer_free (pl->opt[k]);
    }
  train_steps_free (pl->steps);
  g_free (pl->grad);
  g_free (pl->act);
  g_free (pl->dact);
  g_free (pl->opt);
  g_free (pl->w);
  g_free (pl->count);
  g_free (pl->layer_fwd);
  g_free (pl->layer_bwd);
  g_free (pl->params);
  g_free (pl->update_time);
  g_free (pl->backward_done);
  train_mesh_free (pl->mesh);
  g_free (pl->reduce_bufs);
  g_free (pl->split);
  g_free (pl->reduce_pending);
  kern_tensor_plan_free (pl->plan);
  g_free (pl);
}

static const char *const pl_tags[] = { "activation", "gradient", pol_allreduce_tag, "tensor" };

static const BaseChoice schedule_choices[] = {
  { "gpipe", POL_SCHEDULE_GPIPE, FALSE }, { "1f1b", POL_SCHEDULE_1F1B, FALSE },
  { "interleaved", POL_SCHEDULE_INTERLEAVED, FALSE }, { NULL, 0, FALSE },
};

static const BaseKey pl_keys[] = {
  { "policy", "schedule", BASE_KEY_ENUM, 0, "1f1b", 0, 0, 0, schedule_choices, 0,
    "Pipeline schedule (kind = pipeline): gpipe (all forwards, then all backwards), 1f1b (warm-up forwards, then one forward one backward) or interleaved (Megatron-LM's 1F1B over [policy] chunks chunks per stage; microbatches a multiple of stages); docs/policies.md.", NULL },
  { "policy", "chunks", BASE_KEY_INT, 0, "1", 1, 64, 0, NULL, 0,
    "Model chunks per pipeline stage (kind = pipeline, schedule = interleaved): the layers are cut into stages x chunks virtual stages, stage s holding virtual stages s, s + stages, ...; 1 = no interleaving.", NULL },
  { "policy", "stages", BASE_KEY_INT, 0, "0", 0, 1e6, 0, NULL, 0,
    "Pipeline stages (kind = pipeline), one worker each (a group of [policy] tensor workers with tensor > 1); 0 = workers / (replicas x tensor).  At most the model's layer count.", NULL },
  { "policy", "microbatches", BASE_KEY_INT, 0, "4", 1, 1e9, 0, NULL, 0,
    "Micro-batches per batch (kind = pipeline); must divide [model] batch (and be a multiple of stages under schedule = interleaved).", NULL },
  { "policy", "stage_layers", BASE_KEY_INTLIST, 0, "", 1, 1e6, 0, NULL, 0,
    "Layers of each pipeline stage, comma-separated, summing to the model's layer count (kind = pipeline); with chunks > 1 one count per virtual stage (stages x chunks, in pipeline order); empty = balanced by device time.", NULL },
  { "policy", "replicas", BASE_KEY_INT, 0, "1", 1, 1e6, 0, NULL, 0,
    "Data-parallel copies of the pipeline (kind = pipeline): workers = replicas x stages x [policy] tensor; a stage's gradient is all-reduced among its replicas with [policy] algorithm (each tensor rank's share among its peers with tensor > 1).", NULL },
  { .section = NULL },
};

/* Stages x replicas = workers (stages = 0 resolved so), micro-batches
 * dividing the batch (a multiple of the stages when interleaved), chunks
 * only when interleaved over two stages or more, one layer count per
 * virtual stage. */
static gboolean
pl_validate (PolCheck *chk, GError **error)
{
  gint64 R = base_values_int (chk->values, "policy.replicas");
  gint64 P = base_values_int (chk->values, "policy.stages");
  gint64 M = base_values_int (chk->values, "policy.microbatches");
  gint64 V = base_values_int (chk->values, "policy.chunks");
  gint64 T = base_values_int (chk->values, "policy.tensor");
  PolSchedule schedule = (PolSchedule) base_values_int (chk->values, "policy.schedule");
  const GArray *sl = base_values_list (chk->values, "policy.stage_layers");
  gint64 zero = base_values_int (chk->values, "policy.zero");
  if (zero == 3)
    return pol_key_error (error, "policy", "zero",
                          "3 is not modelled under kind = pipeline (its stages hold their "
                          "layers' parameters); use zero = 1 or 2, as Megatron-LM's distributed "
                          "optimizer does");
  if (chk->workers % R != 0)
    return pol_key_error (error, "policy", "replicas",
                          "%" G_GINT64_FORMAT " replicas do not divide [cluster] workers = %"
                          G_GINT64_FORMAT "; workers must be stages x replicas", R, chk->workers);
  if ((chk->workers / R) % T != 0)
    return pol_key_error (error, "policy", "tensor",
                          "%" G_GINT64_FORMAT " does not divide the %" G_GINT64_FORMAT
                          " workers of each replica (its stages are groups of tensor ranks); "
                          "make [cluster] workers = replicas x stages x tensor", T,
                          chk->workers / R);
  if (P == 0)
    pol_check_resolve_int (chk, "policy.stages", P = chk->workers / (R * T));
  if (T > 1 && P * R * T != chk->workers)
    return pol_key_error (error, "cluster", "workers",
                          "%" G_GINT64_FORMAT " workers but [policy] replicas x stages x tensor = %"
                          G_GINT64_FORMAT " x %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                          "; set workers = %" G_GINT64_FORMAT " or change stages", chk->workers,
                          R, P, T, R * P * T);
  if (P * R * T != chk->workers)
    return pol_key_error (error, "cluster", "workers",
                          "%" G_GINT64_FORMAT " workers but [policy] stages x replicas = %"
                          G_GINT64_FORMAT " x %" G_GINT64_FORMAT "; set workers = %" G_GINT64_FORMAT
                          " or change stages", chk->workers, P, R, P * R);
  if (chk->batch % M != 0)
    return pol_key_error (error, "policy", "microbatches",
                          "%" G_GINT64_FORMAT " micro-batches do not divide [model] batch = %"
                          G_GINT64_FORMAT "; use a divisor of the batch", M, chk->batch);
  if (V > 1 && schedule != POL_SCHEDULE_INTERLEAVED)
    return pol_key_error (error, "policy", "chunks",
                          "%" G_GINT64_FORMAT " chunks per stage need schedule = interleaved; "
                          "set [policy] schedule = interleaved or chunks = 1", V);
  if (V > 1 && P < 2)
    return pol_key_error (error, "policy", "chunks",
                          "%" G_GINT64_FORMAT " chunks on a single stage interleave nothing; "
                          "use chunks = 1 or two stages or more", V);
  if (schedule == POL_SCHEDULE_INTERLEAVED && M % P != 0)
    return pol_key_error (error, "policy", "microbatches",
                          "%" G_GINT64_FORMAT " micro-batches are not a multiple of the %"
                          G_GINT64_FORMAT " stages, as schedule = interleaved needs; use a "
                          "multiple of %" G_GINT64_FORMAT " dividing [model] batch = %"
                          G_GINT64_FORMAT, M, P, P, chk->batch);
  if (sl && sl->len > 0 && (gint64) sl->len != P * V)
    {
      if (V > 1)
        return pol_key_error (error, "policy", "stage_layers",
                              "%u counts for %" G_GINT64_FORMAT " stages x %" G_GINT64_FORMAT
                              " chunks; give one layer count per virtual stage (%"
                              G_GINT64_FORMAT ")", sl->len, P, V, P * V);
      return pol_key_error (error, "policy", "stage_layers",
                            "%u counts for %" G_GINT64_FORMAT " stages; give one layer count per stage",
                            sl->len, P);
    }
  return TRUE;
}

/* At most one stage per layer, at least one layer per virtual stage;
 * stage_layers covering the model; with tensor groups, a tensor size that
 * cuts the model and a compute time the groups' math can have. */
static gboolean
pl_check_model (const PolModelInfo *mi, GError **error)
{
  gint64 P = base_values_int (mi->values, "policy.stages");
  gint64 V = base_values_int (mi->values, "policy.chunks");
  int T = (int) base_values_int (mi->values, "policy.tensor");
  int L = mi->model->n_layers;
  if (base_values_int (mi->values, "policy.zero") > 0 && mi->host_timed
      && mi->model->ops->loss_grad_groups)
    return pol_key_error (error, "device", "compute_time",
                          "measured cannot time a pipeline with [policy] zero (its math runs at "
                          "the iteration's start); use compute_time = model or zero = 0");
  if (T > 1)
    {
      g_autofree PolTpSplit *split = g_new (PolTpSplit, MAX (L, 1));
      if (!pol_tensor_split (mi->model->layers, L, T, split, error)
          || !pol_tensor_check_math (mi, T, error))
        return FALSE;
      if (mi->host_timed && mi->model->ops->loss_grad_groups)
        return pol_key_error (error, "device", "compute_time",
                              "measured cannot time a pipeline stage's operations with "
                              "[policy] tensor = %d (the groups' math runs at the iteration's "
                              "start); use compute_time = model or tensor = 1", T);
    }
  /* measured compute runs each stage's math when its operation starts */
  if (mi->math && !mi->model->ops->stage_new
      && (mi->host_timed || !mi->model->ops->loss_grad_groups))
    return pol_key_error (error, "policy", "kind",
                          "pipeline with [device] compute_time = measured runs each stage's "
                          "math on its own, which model %s does not support yet; use "
                          "compute_time = model, or another kind", mi->model->ops->name);
  if (P > L)
    return pol_key_error (error, "policy", "stages",
                          "%" G_GINT64_FORMAT " stages for a model of %d layers; "
                          "use at most %d stages (fewer workers, or replicas > 1)", P, L, L);
  if (P * V > L)
    return pol_key_error (error, "policy", "chunks",
                          "%" G_GINT64_FORMAT " stages x %" G_GINT64_FORMAT " chunks need %"
                          G_GINT64_FORMAT " virtual stages of one layer or more, but the model "
                          "has %d layers; use at most %" G_GINT64_FORMAT " chunks",
                          P, V, P * V, L, MAX ((gint64) L / P, 1));
  int U = pol_pipeline_pieces (mi->model->layers, L);
  if (P * V > U)
    return pol_key_error (error, "policy", "stages",
                          "%" G_GINT64_FORMAT " stages x %" G_GINT64_FORMAT " chunks, but model "
                          "%s can be cut before %d of its layers only (a transformer block's "
                          "attention and MLP halves stay whole); use at most %d stages x chunks",
                          P, V, mi->model->ops->name, U, U);
  /* a tied head's gradient belongs to the embedding's stage too */
  int V_ = 0, S_ = 0, D_ = 0, H_ = 0, L_ = 0;
  gboolean untied = TRUE;
  if (mi->math && mi->host_timed && P * V > 1
      && kern_gpt_shape (mi->model, &V_, &S_, &D_, &H_, &L_, &untied) && !untied)
    return pol_key_error (error, "model", "head",
                          "tied shares the token embedding between the first and the last "
                          "pipeline stage, and with [device] compute_time = measured each "
                          "stage's gradient is its own (the embedding's all-reduce between them "
                          "is not simulated); use head = untied, or compute_time = model");
  const GArray *sl = base_values_list (mi->values, "policy.stage_layers");
  if (!sl || sl->len == 0)
    return TRUE;
  gint64 sum = 0;
  for (guint i = 0; i < sl->len; i++)
    sum += g_array_index (sl, int, i);
  if (sum != L)
    return pol_key_error (error, "policy", "stage_layers",
                          "the counts sum to %" G_GINT64_FORMAT " but the model has %d layers; "
                          "make them sum to %d", sum, L, L);
  gint64 at = 0;
  for (guint i = 0; i + 1 < sl->len; i++)
    {
      at += g_array_index (sl, int, i);
      if (at > 0 && at < L && mi->model->layers[at].joined)
        return pol_key_error (error, "policy", "stage_layers",
                              "stage %u would begin at layer %s (%" G_GINT64_FORMAT "), inside "
                              "a transformer block's half, whose residual stream a boundary "
                              "cannot carry; move the cut before a ln_1, ln_2 or ln_f row", i + 2,
                              mi->model->layers[at].name, at);
    }
  return TRUE;
}

/* Each stage on its own device (with tensor groups: one tensor rank of
 * it): its chunks' layers, cut as pl_create cuts them, and the most its
 * schedule stashes at once (a rank's share of each micro-batch). */
static PolShares *
pl_shares (const PolModelInfo *mi)
{
  const KernModel *m = mi->model;
  int P, R, M, V, T, L = m->n_layers;
  pl_shape (mi->values, &P, &R, &M, &V, &T);
  g_autofree PolTpSplit *split = NULL;
  gboolean sequence = base_values_int (mi->values, "policy.sequence_parallel") != 0;
  if (T > 1)
    {
      split = g_new (PolTpSplit, MAX (L, 1));
      if (!pol_tensor_split (m->layers, L, T, split, NULL))
        g_clear_pointer (&split, g_free);
    }
  M = MAX (M, 1);
  g_return_val_if_fail (P >= 1 && P * V <= L, NULL);
  int n = (int) (mi->batch / M), K = P * V;
  PolSchedule schedule = (PolSchedule) base_values_int (mi->values, "policy.schedule");
  g_autofree double *fwd = g_new (double, L);
  g_autofree double *bwd = g_new (double, L);
  g_autofree int *count = g_new (int, K);
  g_autofree int *start = g_new (int, K + 1);
  g_autofree double *bytes = g_new (double, V);
  mi->layer_seconds (mi->ctx, n, fwd, bwd);
  pol_pipeline_stage_counts (pl_stage_layers (mi->values), fwd, bwd, m->layers, L, K, count);
  start[0] = 0;
  for (int k = 0; k < K; k++)
    start[k + 1] = start[k] + count[k];
  PolShares *out = g_new0 (PolShares, 1);
  out->n = P;
  out->share = g_new0 (PolShare, P);
  out->unit = "stage";
  gboolean gpipe = schedule == POL_SCHEDULE_GPIPE;
  out->note = schedule == POL_SCHEDULE_INTERLEAVED
                ? g_strdup_printf ("interleaved, %d chunk%s", V, V == 1 ? "" : "s")
                : g_strdup (gpipe ? "gpipe" : "1f1b");
  out->advice = g_strdup_printf ("use more stages ([cluster] workers, [policy] stages), %s",
                                 gpipe ? "schedule = 1f1b (it stashes at most stages - s micro-batches)"
                                 : V > 1 ? "fewer [policy] chunks or [model] recompute"
                                         : "more [policy] microbatches (smaller ones)");
  for (int s = 0; s < P; s++)
    {
      PolShare *sh = &out->share[s];
      sh->chunks = V;
      sh->chunk_first = g_new (int, V);
      sh->chunk_last = g_new (int, V);
      for (int c = 0; c < V; c++)
        {
          int k = c * P + s;
          sh->chunk_first[c] = start[k];
          sh->chunk_last[c] = start[k + 1] - 1;
          bytes[c] = rank_stash_bytes (m->layers, mi->recomputed, split, T, sequence, start[k],
                                       start[k + 1] - 1, n);
          sh->stash_bytes += bytes[c];
        }
      sh->first = sh->chunk_first[0];
      sh->last = sh->chunk_last[V - 1];
      sh->microbatch = n;
      sh->slots = pol_pipeline_stash_peak (schedule, P, V, s, M, bytes, &sh->act_bytes, NULL);
    }
  return out;
}

/* Whether a run of `mi` will mirror its replicas (pl_mirror), as far as
 * the scenario tells before the network is built: NULL when it should,
 * else why not.  The collectives' own test (blocks of one size) is left to
 * the run, which reports it. */
static const char *
pl_mirror_predicted (const PolModelInfo *mi)
{
  const BaseValues *v = mi->values;
  int T = (int) MAX (base_values_int (v, "policy.tensor"), 1);
  int P = (int) base_values_int (v, "policy.stages");
  int R = (int) MAX (base_values_int (v, "policy.replicas"), 1);
  const char *why = pl_mirror_keys (v, R, mi->model->ops->loss_grad != NULL, mi->same_pace,
                                    mi->failures, mi->flow_classes);
  if (why)
    return why;
  const NetTopology *topo = mi->topology ? net_topology_lookup (mi->topology) : NULL;
  if (!topo || !topo->copies || P < 1 || !topo->copies (v, mi->workers, P * T))
    return MIRROR_NOT_COPIES;
  /* a selector (the default, auto) picks per collective when the run
   * starts; the run says what it did */
  const CommAlgorithm *alg = comm_lookup (base_values_string (v, "policy.algorithm"));
  if (!alg || (!alg->choose && !alg->rounds) || base_values_int (v, "policy.channels") > 1)
    return MIRROR_NOT_ALIKE;
  return NULL;
}

/* `dtsim check`: whether the replicas will run mirrored. */
static char *
pl_describe (const PolModelInfo *mi)
{
  int R = (int) MAX (base_values_int (mi->values, "policy.replicas"), 1);
  if (R < 2)
    return NULL;
  const char *why = pl_mirror_predicted (mi);
  if (why)
    return g_strdup_printf ("replicas: all %d run, not mirrored: %s (docs/policies.md, "
                            "\"Mirrored replicas\")\n", R, why + strlen ("no: "));
  return g_strdup_printf ("replicas: mirrored: replica 0 runs for all %d, its collectives "
                          "among replicas on folded routes, where the algorithm (or the one "
                          "auto picks) runs them in rounds with blocks of one size "
                          "(docs/policies.md, \"Mirrored replicas\"; the params row "
                          "policy.replicas_mirrored says what the run did)\n", R);
}

/* Per replica, each micro-batch crosses every virtual stage boundary
 * forward (activations) and backward (gradients), T transfers each with
 * tensor groups, whose operations also run the tensor collectives; each
 * stage's gradient is then all-reduced among the replicas (T data groups
 * at once).  Spans: per worker, chunk and micro-batch a forward, a
 * backward and their transfers (and per tensor collective a compute
 * stretch and a send), and a few per iteration. */
static void
pl_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  double R = (double) MAX (base_values_int (mi->values, "policy.replicas"), 1);
  double P = (double) base_values_int (mi->values, "policy.stages");
  double M = (double) base_values_int (mi->values, "policy.microbatches");
  double V = (double) MAX (base_values_int (mi->values, "policy.chunks"), 1);
  int T = (int) MAX (base_values_int (mi->values, "policy.tensor"), 1);
  if (P < 1)
    P = MAX (1.0, floor (W / (R * T)));
  gsize n = mi->model->ops->n_params (mi->model);
  /* auto counted as one channel: its count depends on the size */
  int C = (int) MAX (base_values_int (mi->values, "policy.channels"), 1);
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  double each = comm_messages (alg, COMM_ALLREDUCE, (int) R, (gsize) ((double) n / P / T), C);
  double tensor = 0, coll = 0;
  if (T > 1)
    {
      int L = mi->model->n_layers, k;
      g_autofree PolTpSplit *split = g_new (PolTpSplit, MAX (L, 1));
      gboolean sequence = base_values_int (mi->values, "policy.sequence_parallel") != 0;
      if (pol_tensor_split (mi->model->layers, L, T, split, NULL))
        {
          g_autofree PolTpCollective *c = pol_tensor_collectives (mi->model->layers, L, split,
                                                                  sequence, mi->recomputed,
                                                                  &k);
          for (int i = 0; i < k; i++)
            tensor += comm_messages (alg, c[i].kind, T,
                                     (gsize) MAX (1.0, c[i].floats * mi->batch / M), 1);
          coll = k;
        }
    }
  /* mirrored, replica 0 alone runs: one transfer per round of a
   * collective among replicas */
  double Rrun = R;
  if (R > 1 && !pl_mirror_predicted (mi))
    {
      Rrun = 1;
      each = 2 * (R - 1);
    }
  *out = (PolWork) { .messages = Rrun * T * 2 * (P * V - 1) * M + T * P * each
                                 + Rrun * M * tensor,
                     .spans = W * (4 * M * V + 2 * M * coll + 3), .iteration_rows = W,
                     .in_flight = Rrun * P * T * (M * V + C) };
}

const PolPolicyOps pol_pipeline_ops = {
  .work = pl_work,
  .name = "pipeline",
  .job_failures = TRUE,
  .no_numerics = TRUE,
  .layer_steps = TRUE,
  .updates_not_samples = TRUE,
  .tensor = TRUE,
  .source = "Y. Huang et al.: GPipe, NeurIPS 2019; 1F1B: D. Narayanan et al.: PipeDream, SOSP 2019; "
            "interleaved 1F1B: D. Narayanan et al.: Megatron-LM, SC 2021",
  .keys = pl_keys,
  .validate = pl_validate,
  .zero = TRUE,
  .check_model = pl_check_model,
  .describe = pl_describe,
  .shares = pl_shares,
  .description = "pipeline parallel: layers cut into stages, one per worker (or per tensor "
                 "group); micro-batches flow forward and back under GPipe, 1F1B or interleaved "
                 "1F1B; each stage applies its update at the flush",
  .tag_names = pl_tags,
  .n_tags = G_N_ELEMENTS (pl_tags),
  .data_parts = pl_data_parts,
  .host_names = pol_worker_host_names,
  .create = pl_create,
  .start = pl_start,
  .finish = pl_finish,
  .free = pl_free,
};
