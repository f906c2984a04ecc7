/*
 * allreduce.c — data parallelism with all-reduce and gradient buckets.
 *
 * Every worker computes a real gradient on its own batch at the shared
 * parameters; the gradients are summed across workers while a collective
 * algorithm (collectives.h) prices the all-reduce on the simulated network;
 * every worker then applies the same update, params -= lr × sum / W.
 * Since every worker applies the same update to the same parameters, dtsim
 * keeps one copy of them.  docs/policies.md is the normative description:
 *
 *   - An iteration starts for all workers at once (time E_prev).  Worker w's
 *     step takes T_w = compute_time(w) (the device model times the straggler
 *     factor): forward, then backward from the last layer to the first;
 *     layer l's gradient is complete at T_w × layer_ready[l].
 *   - The gradient is cut into buckets of bucket_size bytes from its end (the
 *     first produced); bucket j is ready once every worker has produced it,
 *     i.e. at max_w T_w × layer_ready[l] for the layer l holding the bucket's
 *     first parameter.  Buckets are all-reduced one at a time, in order:
 *     bucket j starts at max(ready_j, end of bucket j - 1).  With one bucket
 *     nothing overlaps.
 *   - A bucket's all-reduce starts bucket_overhead ([policy]) after that:
 *     the framework's time to launch it (a fusion cycle, a flattening copy).
 *   - While a bucket's all-reduce runs, the workers' compute takes 1 + s as
 *     long, s = [device] overlap_slowdown (the collective's kernels take SMs
 *     and memory bandwidth): worker w's compute is W_w = T_w seconds of
 *     work, done at rate 1 outside the all-reduces and 1 / (1 + s) inside
 *     them, so it ends at tau(T_w), tau the inverse of the work done by a
 *     time; layer l's gradient is complete at tau(T_w × layer_ready[l]).
 *     All-reduces run one at a time and span every worker, so tau is the
 *     same for all workers and the slowest one (max T_w) makes the buckets
 *     ready.  s = 0: tau(x) = E_prev + x.
 *   - When the last bucket's all-reduce ends, every worker applies the
 *     optimizer to the mean gradient, taking update_time(P) seconds; the
 *     iteration ends (time E) and the next starts.
 *
 * The workers (one data axis of the mesh, train/mesh.h) step together, in
 * groups of up to G workers whose buffers fit in AR_GROUP_BYTES: one
 * stacked worker step each (train/step.h: their batches as one product,
 * on the run's host lanes, the same numbers on any number of threads)
 * that sums its workers' gradients as it computes them: each task's as
 * one product over its stacked rows, the tasks' sums in task order
 * (train_steps_sum_stacked; compressed or rounded gradients are summed
 * worker by worker, in worker order).  The
 * collectives then run for their timing only (no
 * buffers): the sum is what they would deliver, up to the order of the
 * additions, and a run of 10,000 workers holds G gradients, not 10,000.
 *
 * With [policy] compression (compress.h) every worker compresses each
 * bucket of its gradient as it is produced (error feedback per worker);
 * the bucket's exchange is then an all-gather of the W compressed blocks
 * (wire bytes each, timing only: they cannot be summed on the way), and at
 * its end the decoded gradients are summed, worker by worker.
 *
 * Worker w's iteration: compute = tau(T_w) - E_prev + update (its slowed
 * compute included); wait = tau(max_v T_v) - tau(T_w) (time its gradients
 * waited for the slowest worker's); comm = the rest, from the slowest
 * worker's end of backward to the last all-reduce's end.
 *
 * [policy] zero = 1, 2 or 3 shards the training state over the W workers as
 * ZeRO does (Rajbhandari et al., SC 2020), worker r owning the parameters
 * [lo_r, hi_r) of comm_shard_bounds(P, W, r):
 *
 *   - zero = 1 and 2 (optimizer state; 2 also the gradients): each bucket
 *     is reduce-scattered instead of all-reduced; once the last has been,
 *     every worker applies the optimizer to its own shard (update_time of
 *     its largest shard), then the updated parameters are all-gathered,
 *     bucket by bucket, one collective at a time; the iteration ends with
 *     the last all-gather.  The two stages differ in memory only.
 *   - zero = 3 (parameters too): before its forward, and again before its
 *     backward, each unit (a layer with parameters, with the parameterless
 *     layers after it) all-gathers its parameters; after its backward its
 *     gradient is reduce-scattered (one bucket per unit; bucket_size does
 *     not apply).  The collectives run one at a time in a fixed order.  With
 *     [policy] prefetch (the default) a unit's forward all-gather is issued
 *     when the forward of the unit before it starts, and its backward
 *     all-gather when the backward of the unit after it starts; without,
 *     when those end.  A unit's forward starts once its parameters are
 *     there and the previous unit's forward has ended; its backward once
 *     they are there again and the next unit's backward has ended.  Worker
 *     w's step T_w is spread over the units in proportion to their
 *     device-model times; the collectives wait for the slowest worker.
 *     After the last reduce-scatter each worker updates its shard; nothing
 *     is gathered after the update (the next forward gathers).  [device]
 *     overlap_slowdown is not modelled here.
 *
 * [policy] experts = EP > 1 (experts.c; docs/policies.md, "Experts") lays
 * the D data-parallel ranks out as D / EP x EP on the mesh's data and
 * expert axes: the step runs as a chain (tensor.c) with each expert
 * layer's all-to-alls on the expert groups, and each bucket's reduction is
 * two: its dense parameters' over all D ranks, and its expert parameters'
 * 1/EP share over the D / EP ranks holding the same experts (EP such
 * groups at once).
 *
 * The real math is the same at every stage: the sum of the gradients is
 * what the reduce-scatters deliver, shard by shard, and each shard is
 * updated with an optimizer state of its own size (the element-wise
 * optimizers make this the update of the whole).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/shard.h"
#include "policies/common.h"
#include "policies/compress.h"
#include "policies/tensor.h"
#include "train/mesh.h"
#include "train/step.h"

/* The tag of the expert layers' all-to-alls' transfers ([policy] experts
 * > 1); tag 0 is every other collective's. */
#define AR_TAG_ALLTOALL 1

typedef struct {
  gsize lo, hi;            /* parameters [lo, hi) */
  double ready;            /* s, when every worker has produced it */
  double start;            /* s, when its all-reduce started */
  double end;              /* s, when it ended */
  double work;             /* s of compute the slowest worker had done at
                              its start (slowdown > 0 only) */
  const CommAlgorithm *alg; /* what runs its all-reduce ([policy]
                                  algorithm, or what auto picks for it);
                                  with compression, its all-gather */
  double wire;             /* bytes each worker sends: 4 (hi - lo), or
                              what the compressor makes of them */
  const CommAlgorithm *gather; /* zero > 0: the all-gather of its
                                  parameters */
} ArBucket;

/* zero = 3: the units whose parameters are gathered, and the timeline of
 * an iteration for its slowest worker.  Unit u is bucket U - 1 - u (the
 * buckets count from the end of the parameters, as backward makes them). */
typedef enum { Z3_GATHER_FORWARD, Z3_GATHER_BACKWARD, Z3_SCATTER } ArZ3Kind;

typedef struct ArZero3 {
  int U;                   /* units */
  int *first_layer;        /* (U + 1) unit u is layers [first_layer[u],
                              first_layer[u + 1]) */
  double *f, *b;           /* (U) s of its forward and backward, device
                              model at the batch, no straggler */
  double nominal;          /* sum of f and b */
  int n_ops;               /* 3U collectives an iteration */
  ArZ3Kind *op_kind;       /* (n_ops) in the order they run */
  int *op_unit;            /* (n_ops) */
  int pos;                 /* the collective running */
  double k;                /* the slowest worker's T / nominal */
  double *fs, *fe, *bs, *be; /* (U) its forward and backward start, end */
  double *gf_end, *gb_end; /* (U) when the unit's forward and backward
                              all-gathers ended */
} ArZero3;

typedef struct {
  PolEnv env;
  const CommAlgorithm *alg;
  TrainMesh *mesh;         /* the workers on one data axis */
  const int *hosts;        /* (workers) their hosts: the all-reduce's group */
  float *params;           /* (n_params) the one shared copy */
  float *sum;              /* (n_params) the workers' gradients, summed */
  int group;               /* G: workers whose gradients are computed at once */
  float **grad;            /* (G) gradient buffers, (n_params) each */
  TrainSteps *steps;       /* the workers' steps, G at a time; NULL without math */
  KernOptimizer *opt;      /* the shared optimizer state; NULL without math */
  ArBucket *buckets;
  int n_buckets;
  const PolCompressor *cmp; /* [policy] compression; NULL = none */
  float **memory;          /* (workers) error feedback, (n_params) each */
  EngRng *rngs;            /* (workers) the compressors' streams */
  double update_time;      /* s: of the whole model, or (zero > 0) of
                              the largest shard */
  double update_end;       /* s, when this iteration's update ended */
  int zero;                /* [policy] zero: 0 to 3 */
  gboolean prefetch;       /* [policy] prefetch (zero = 3) */
  gsize *shard_lo;         /* (W + 1) zero > 0: worker r owns the
                              parameters [shard_lo[r], shard_lo[r + 1]) */
  KernOptimizer **shard_opt; /* (W) zero > 0: each shard's optimizer state;
                              NULL without math */
  const CommAlgorithm *gather_alg; /* zero > 0: the parameters' all-gathers */
  int gathered;            /* zero = 1, 2: all-gathers ended this iteration */
  struct ArZero3 *z3;      /* zero = 3: the units and their timeline */
  int T;                   /* [policy] tensor: ranks of a tensor group */
  int dp;                  /* data-parallel ranks: workers / T */
  const int **dp_hosts;    /* (T) the hosts of tensor rank t's data group */
  int **dp_own;            /* (T) EP > 1: dp_hosts, built here (the mesh's
                              data axis holds D / EP of the D ranks) */
  PolExperts ex;           /* [policy] experts and the routing's figures */
  const int **ex_hosts;    /* (EP) EP > 1: the hosts of the D / EP ranks
                              holding expert slot e (tensor rank 0) */
  int pending;             /* collectives of the data groups running */
  CommDone pending_done;   /* called when they have all ended */
  gpointer pending_data;
  PolTpSplit *split;       /* (n_layers) T > 1: how each layer is cut */
  PolTensorStep *tp;       /* T > 1: the tensor groups' step chain */
  KernTensorPlan *plan;    /* T > 1 with math: the shards' real math */
  double tp_share;         /* T > 1: a rank's compute over the unsplit step */
  int *bucket_layer;       /* (n_buckets) T > 1: the layer holding each
                              bucket's first parameter */
  int ready_layer;         /* T > 1: the lowest layer whose backward ended */
  gboolean bucket_busy;    /* T > 1: a bucket's collectives are running */
  double chain_end;        /* T > 1: s, when the step ended; < 0 before */
  double slowdown;         /* [device] overlap_slowdown */
  double bucket_overhead;  /* [policy] bucket_overhead, s */
  int done;                /* buckets whose all-reduce has ended this
                              iteration */
  double *step_time;       /* (workers) T_w of the current iteration */
  double max_step;         /* max_w T_w */
  double max_end;          /* tau(max_w T_w): the slowest compute's end */
  gint64 iter;             /* iteration in progress */
  double iter_start;       /* s */
  PolRun run;              /* counters, evaluation, end of the run */
} ArPolicy;

static void start_iteration (EngSim *sim, gpointer ctx, gpointer data);

static void
span (ArPolicy *ar, int w, const char *kind, double a, double b)
{
  pol_worker_span (&ar->env, w, kind, a, b, ar->iter, 0);
}

/* The update has been applied: close the iteration of every worker. */
static void
on_update_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ArPolicy *ar = ctx;
  double now = eng_sim_now (sim);
  int W = ar->env.workers;
  if (ar->env.model)
    {
      /* the mean gradient (sum x 1/W) taken in the optimizer's pass */
      float *g = ar->sum;
      float inv = 1.0f / (float) ar->dp;
      if (!ar->zero)
        kern_optimizer_step_scaled (ar->opt, ar->params, g, inv);
      else
        for (int r = 0; r < ar->dp; r++)
          if (ar->shard_opt[r])
            kern_optimizer_step_scaled (ar->shard_opt[r], ar->params + ar->shard_lo[r],
                                        g + ar->shard_lo[r], inv);
    }
  double update_end = ar->zero ? ar->update_end : now;
  for (int w = 0; w < W; w++)
    {
      /* step_time[w] holds tau(T_w) - E_prev by now */
      double compute = ar->step_time[w] + ar->update_time;
      double wait = (ar->slowdown > 0 ? ar->max_end - ar->iter_start : ar->max_step)
                    - ar->step_time[w];
      double comm = (now - ar->iter_start) - compute - wait;
      if (comm < 0) /* rounding only */
        comm = 0;
      pol_run_iteration (&ar->run, w, ar->iter, ar->iter_start, now, compute, comm, wait, 0);
      span (ar, w, "compute", update_end - ar->update_time, update_end);
      if (update_end < now)
        span (ar, w, "send", update_end, now);
    }
  /* a tensor group applies one gradient, of one batch */
  ar->run.updates += ar->dp;
  ar->run.samples += (gint64) ar->dp * ar->env.batch;
  pol_run_progress (&ar->run, now);
  if (!pol_run_round_end (&ar->run, ar->params, ar->iter + 1 >= ar->env.iterations))
    return;
  ar->iter++;
  start_iteration (sim, ar, NULL);
}

static void start_bucket (EngSim *sim, gpointer ctx, gpointer data);
static void on_shard_updated (EngSim *sim, gpointer ctx, gpointer data);
static void tp_bucket_done (ArPolicy *ar);
static void ar_free (PolPolicy *p);

/* tau(x): when a worker has done x seconds of compute work this iteration,
 * compute slowed by 1 + slowdown inside the all-reduces of buckets
 * [0, n), which have ended. */
static double
work_done_at (const ArPolicy *ar, int n, double x)
{
  double k = 1 + ar->slowdown;
  for (int j = n - 1; j >= 0; j--)
    {
      const ArBucket *b = &ar->buckets[j];
      double end_work = b->work + (b->end - b->start) / k;
      if (x >= end_work)
        return b->end + (x - end_work);
      if (x >= b->work)
        return b->start + (x - b->work) * k;
    }
  return ar->iter_start + x;
}

/* When bucket j is complete: once the layer holding its first parameter
 * has its gradient, on the slowest worker. */
static double
bucket_ready (ArPolicy *ar, int j)
{
  const PolEnv *env = &ar->env;
  const ArBucket *b = &ar->buckets[j];
  if (b->lo == 0) /* exactly the end of compute, whatever the rounding */
    {
      ar->max_end = ar->slowdown > 0 ? work_done_at (ar, ar->done, ar->max_step)
                                     : ar->iter_start + ar->max_step;
      return ar->max_end;
    }
  int l = env->n_layers - 1;
  while (l > 0 && env->layer_lo[l] > b->lo)
    l--;
  double x = ar->max_step * (env->n_layers > 0 ? env->layer_ready[l] : 1.0);
  return ar->slowdown > 0 ? work_done_at (ar, ar->done, x) : ar->iter_start + x;
}

static void
on_bucket_done (EngSim *sim, gpointer ctx, gpointer data)
{
  ArPolicy *ar = ctx;
  int j = GPOINTER_TO_INT (data);
  ArBucket *b = &ar->buckets[j];
  double now = eng_sim_now (sim);
  b->end = now;
  ar->done = j + 1;
  if (ar->env.rec.bucket)
    ar->env.rec.bucket (ar->env.rec.ctx, ar->iter, j, b->wire, b->ready, b->start, now,
                        b->alg->name);
  if (ar->tp)
    {
      tp_bucket_done (ar);
      return;
    }
  if (j + 1 < ar->n_buckets)
    {
      ArBucket *next = &ar->buckets[j + 1];
      next->ready = bucket_ready (ar, j + 1);
      double at = MAX (now, next->ready) + ar->bucket_overhead;
      eng_schedule_at (sim, at, start_bucket, ar, GINT_TO_POINTER (j + 1));
      return;
    }
  double last_work = -1, last_end = 0; /* workers often share a T_w */
  for (int w = 0; w < ar->env.workers; w++)
    {
      if (ar->slowdown > 0)
        {
          /* the all-reduces that slowed it are those before the last
           * bucket's, which started after every worker's compute */
          if (ar->step_time[w] != last_work)
            {
              last_work = ar->step_time[w];
              last_end = last_work == ar->max_step
                         ? ar->max_end
                         : work_done_at (ar, ar->n_buckets - 1, last_work);
            }
          ar->step_time[w] = last_end - ar->iter_start;
          span (ar, w, "compute", ar->iter_start, last_end);
        }
      span (ar, w, "wait", ar->iter_start + ar->step_time[w], ar->max_end);
      span (ar, w, "send", ar->max_end, now);
    }
  eng_schedule (sim, ar->update_time, ar->zero ? on_shard_updated : on_update_done, ar, NULL);
}

/* Bytes the gradients of a group of workers may take at once. */
#define AR_GROUP_BYTES (256.0 * 1024 * 1024)

/* Bytes one worker of a group takes: its gradient buffer and activations
 * (kern_model_memory_bytes: model and gradient, no optimizer state) and its
 * stacked batch. */
static double
ar_worker_bytes (const KernModel *m, int batch)
{
  return kern_model_memory_bytes (m, batch, 0) + 4.0 * (double) batch * (double) m->d;
}

/* G: the workers whose gradients are computed together (within
 * AR_GROUP_BYTES), 1 to W. */
static int
ar_group (const KernModel *m, int batch, int W)
{
  return (int) CLAMP (floor (AR_GROUP_BYTES / ar_worker_bytes (m, batch)), 1, W);
}

/* The all-gather of the W compressed blocks of `wire` bytes: one byte per
 * element, one channel. */
static CommArgs
allgather_args (ArPolicy *ar, double wire)
{
  int W = ar->env.workers;
  CommArgs a = pol_comm_args (&ar->env, W, ar->hosts, NULL, (gsize) W * (gsize) ceil (wire), 0);
  a.elem_bytes = 1;
  a.channels = 1;
  return a;
}

/* What all-gathers compressed blocks of `wire` bytes: [policy] algorithm
 * (or what auto picks for the all-gather) where it does all-gathers, else
 * the ring. */
static const CommAlgorithm *
allgather_algorithm (ArPolicy *ar, double wire)
{
  CommArgs a = allgather_args (ar, wire);
  const CommAlgorithm *alg = comm_resolve (ar->alg, &a, COMM_ALLGATHER);
  if (alg && !isnan (alg->cost (COMM_ALLGATHER, a.p, 1, a.n, 1, 1e-6, 1e-9, 0)))
    return alg;
  return &comm_ring;
}

/* One of a data-group collective's parts has ended; the last calls what
 * start_data asked for. */
static void
on_part_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ArPolicy *ar = ctx;
  if (--ar->pending == 0)
    ar->pending_done (sim, ar, ar->pending_data);
}

/* Starts a collective of `kind` over n of the model's floats on every data
 * group at once (timing only): each tensor rank's group of dp workers
 * carries its 1/T share; `done` is called once all have ended. */
static void
start_data (ArPolicy *ar, const CommAlgorithm *alg, CommKind kind, gsize n, CommDone done,
            gpointer data)
{
  gsize part = ar->T > 1 ? MAX (n / (gsize) ar->T, 1) : n;
  ar->pending = ar->T;
  ar->pending_done = done;
  ar->pending_data = data;
  for (int t = 0; t < ar->T; t++)
    {
      if (kind == COMM_ALLREDUCE && ar->T == 1 && !ar->tp)
        {
          /* the only traffic of the iteration: the buckets go one at a
           * time, and nothing else is sent meanwhile */
          CommArgs a = pol_comm_args (&ar->env, ar->dp, ar->dp_hosts[t], NULL, part, 0);
          g_autoptr (GError) error = NULL;
          a.exclusive = TRUE;
          if (!comm_start (alg, &a, kind, on_part_done, ar, NULL, &error))
            g_error ("all-reduce with %s: %s", alg->name, error->message);
          continue;
        }
      if (kind == COMM_ALLREDUCE)
        {
          pol_allreduce_start (&ar->env, alg, ar->dp, ar->dp_hosts[t], NULL, part, 0,
                               on_part_done, ar, NULL);
          continue;
        }
      pol_collective_start (&ar->env, alg, kind, ar->dp, ar->dp_hosts[t], part, 0, 0,
                            on_part_done, ar, NULL);
    }
}

/* EP > 1: starts a bucket's collective of `kind` as two (timing only):
 * its dense parameters over the D data-parallel ranks with `alg`, and the
 * 1/EP share of its expert parameters on each of the EP groups of D / EP
 * ranks holding the same experts; `done` once all have ended. */
static void
start_bucket_data (ArPolicy *ar, const ArBucket *b, const CommAlgorithm *alg, CommKind kind,
                   CommDone done, gpointer data)
{
  const PolEnv *env = &ar->env;
  if (ar->ex.ep <= 1)
    {
      start_data (ar, alg, kind, b->hi - b->lo, done, data);
      return;
    }
  int EP = ar->ex.ep, R = ar->dp / EP;
  gsize ne = pol_experts_params_in (env->layers, env->n_layers, env->n_params, b->lo, b->hi);
  gsize nd = b->hi - b->lo - ne, part = ne / (gsize) EP;
  gboolean experts = R > 1 && part > 0;
  ar->pending = (nd > 0 ? 1 : 0) + (experts ? EP : 0);
  ar->pending_done = done;
  ar->pending_data = data;
  if (ar->pending == 0)
    {
      /* nothing to reduce: a bucket of expert parameters that no other
       * rank holds */
      ar->pending = 1;
      eng_schedule (env->sim, 0, on_part_done, ar, NULL);
      return;
    }
  if (nd > 0)
    {
      if (kind == COMM_ALLREDUCE)
        pol_allreduce_start (env, alg, ar->dp, ar->dp_hosts[0], NULL, nd, 0, on_part_done, ar,
                             NULL);
      else
        pol_collective_start (env, alg, kind, ar->dp, ar->dp_hosts[0], nd, 0, 0, on_part_done,
                              ar, NULL);
    }
  for (int e = 0; experts && e < EP; e++)
    {
      if (kind == COMM_ALLREDUCE)
        {
          const CommAlgorithm *ea = pol_allreduce_resolve (env, ar->alg, R, ar->ex_hosts[e],
                                                           part);
          pol_allreduce_start (env, ea, R, ar->ex_hosts[e], NULL, part, 0, on_part_done, ar,
                               NULL);
          continue;
        }
      CommArgs a = pol_collective_args (env, R, ar->ex_hosts[e], part, 0, 0);
      const CommAlgorithm *ea = comm_does (ar->alg, kind) ? comm_resolve (ar->alg, &a, kind)
                                                          : NULL;
      pol_collective_start (env, ea ? ea : &comm_ring, kind, R, ar->ex_hosts[e], part, 0, 0,
                            on_part_done, ar, NULL);
    }
}

/* What runs a reduce-scatter or all-gather of n floats among the workers:
 * [policy] algorithm, or what auto picks for it; NULL when it does not do
 * that kind (ar_check_model refuses the run). */
static const CommAlgorithm *
sharded_algorithm (const PolEnv *env, const CommAlgorithm *alg, int p, const int *hosts,
                   CommKind kind, gsize n)
{
  CommArgs a = pol_collective_args (env, p, hosts, n, 0, 0);
  return comm_does (alg, kind) ? comm_resolve (alg, &a, kind) : NULL;
}

/* zero = 1, 2: the parameters' all-gathers, bucket by bucket, after the
 * shards' update; the last ends the iteration. */
static void
on_gather_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ArPolicy *ar = ctx;
  if (++ar->gathered < ar->n_buckets)
    {
      ArBucket *b = &ar->buckets[ar->gathered];
      start_bucket_data (ar, b, b->gather, COMM_ALLGATHER, on_gather_done, NULL);
      return;
    }
  on_update_done (sim, ar, NULL);
}

static void
on_shard_updated (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ArPolicy *ar = ctx;
  ar->update_end = eng_sim_now (sim);
  ar->gathered = 0;
  ArBucket *b = &ar->buckets[0];
  start_bucket_data (ar, b, b->gather, COMM_ALLGATHER, on_gather_done, NULL);
}

static void
start_bucket (EngSim *sim, gpointer ctx, gpointer data)
{
  ArPolicy *ar = ctx;
  int j = GPOINTER_TO_INT (data);
  ArBucket *b = &ar->buckets[j];
  b->start = eng_sim_now (sim);
  if (ar->slowdown > 0)
    {
      /* the work done by now: at full rate since the last all-reduce */
      const ArBucket *prev = j > 0 ? &ar->buckets[j - 1] : NULL;
      b->work = prev ? prev->work + (prev->end - prev->start) / (1 + ar->slowdown)
                         + (b->start - prev->end)
                     : b->start - ar->iter_start;
    }
  if (ar->zero)
    {
      start_bucket_data (ar, b, b->alg, COMM_REDUCE_SCATTER, on_bucket_done, data);
      return;
    }
  if (!ar->cmp)
    {
      start_bucket_data (ar, b, b->alg, COMM_ALLREDUCE, on_bucket_done, data);
      return;
    }
  CommArgs a = allgather_args (ar, b->wire);
  g_autoptr (GError) error = NULL;
  if (!comm_start (b->alg, &a, COMM_ALLGATHER, on_bucket_done, ar, data, &error))
    g_error ("all-gather with %s: %s", b->alg->name, error->message); /* chosen to run it */
}

/* --- zero = 3: gathered parameters, unit by unit ------------------------- */

/* When collective c of the iteration may be issued: after what it waits
 * for (see the file's header), all of it known once collectives [0, c)
 * have ended. */
static double
z3_issue (const ArPolicy *ar, int c)
{
  const ArZero3 *z = ar->z3;
  int u = z->op_unit[c];
  switch (z->op_kind[c])
    {
    case Z3_GATHER_FORWARD:
      return u == 0 ? ar->iter_start : ar->prefetch ? z->fs[u - 1] : z->fe[u - 1];
    case Z3_GATHER_BACKWARD:
      return u == z->U - 1 ? z->fe[u] : ar->prefetch ? z->bs[u + 1] : z->be[u + 1];
    case Z3_SCATTER:
    default:
      return z->be[u];
    }
}

static void z3_start (EngSim *sim, gpointer ctx, gpointer data);

/* A worker's compute spans of the iteration, its step scaled by k: each
 * unit's forward and backward once its parameters are there and the unit
 * before it is done. */
static void
z3_worker_spans (ArPolicy *ar, int w, double k)
{
  const ArZero3 *z = ar->z3;
  double t = ar->iter_start;
  for (int u = 0; u < z->U; u++)
    {
      double a = MAX (t, z->gf_end[u]);
      t = a + z->f[u] * k;
      span (ar, w, "compute", a, t);
    }
  for (int u = z->U - 1; u >= 0; u--)
    {
      double a = MAX (t, z->gb_end[u]);
      t = a + z->b[u] * k;
      span (ar, w, "compute", a, t);
    }
}

static void
z3_updated (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ArPolicy *ar = ctx;
  ar->update_end = eng_sim_now (sim);
  on_update_done (sim, ar, NULL);
}

/* Collective `data` of the iteration has ended: the slowest worker's
 * compute it released, then the next collective, or the update. */
static void
z3_done (EngSim *sim, gpointer ctx, gpointer data)
{
  ArPolicy *ar = ctx;
  ArZero3 *z = ar->z3;
  int c = GPOINTER_TO_INT (data), u = z->op_unit[c];
  double now = eng_sim_now (sim);
  ArBucket *b = &ar->buckets[z->U - 1 - u];
  switch (z->op_kind[c])
    {
    case Z3_GATHER_FORWARD:
      z->gf_end[u] = now;
      z->fs[u] = MAX (now, u > 0 ? z->fe[u - 1] : ar->iter_start);
      z->fe[u] = z->fs[u] + z->f[u] * z->k;
      break;
    case Z3_GATHER_BACKWARD:
      z->gb_end[u] = now;
      z->bs[u] = MAX (now, u == z->U - 1 ? z->fe[u] : z->be[u + 1]);
      z->be[u] = z->bs[u] + z->b[u] * z->k;
      break;
    case Z3_SCATTER:
      b->end = now;
      if (ar->env.rec.bucket)
        ar->env.rec.bucket (ar->env.rec.ctx, ar->iter, z->U - 1 - u, b->wire, z->be[u],
                            b->start, now, b->alg->name);
      break;
    }
  if (c + 1 < z->n_ops)
    {
      eng_schedule_at (sim, MAX (now, z3_issue (ar, c + 1)), z3_start, ar,
                       GINT_TO_POINTER (c + 1));
      return;
    }
  /* every worker's compute, in the gathers' shadow */
  ar->max_end = ar->iter_start + ar->max_step;
  for (int w = 0; w < ar->env.workers; w++)
    z3_worker_spans (ar, w, z->nominal > 0 ? ar->step_time[w] / z->nominal : 0);
  eng_schedule (sim, ar->update_time, z3_updated, ar, NULL);
}

static void
z3_start (EngSim *sim, gpointer ctx, gpointer data)
{
  ArPolicy *ar = ctx;
  const ArZero3 *z = ar->z3;
  int c = GPOINTER_TO_INT (data), u = z->op_unit[c];
  ArBucket *b = &ar->buckets[z->U - 1 - u];
  if (z->op_kind[c] == Z3_SCATTER)
    {
      b->start = eng_sim_now (sim);
      start_data (ar, b->alg, COMM_REDUCE_SCATTER, b->hi - b->lo, z3_done, data);
    }
  else
    start_data (ar, b->gather, COMM_ALLGATHER, b->hi - b->lo, z3_done, data);
}

/* The iteration's collectives, once its workers' step times are known. */
static void
z3_iteration (ArPolicy *ar)
{
  ArZero3 *z = ar->z3;
  z->k = z->nominal > 0 ? ar->max_step / z->nominal : 0;
  eng_schedule_at (ar->env.sim, ar->iter_start, z3_start, ar, GINT_TO_POINTER (0));
}

/* The units of the model (a layer with parameters and the parameterless
 * layers after it; those before the first go with it), their device
 * times, and the order of an iteration's collectives. */
static ArZero3 *
z3_new (const PolEnv *env, gboolean prefetch)
{
  int L = MAX (env->n_layers, 1);
  ArZero3 *z = g_new0 (ArZero3, 1);
  z->first_layer = g_new0 (int, L + 1);
  for (int l = 0; l < env->n_layers; l++)
    {
      gsize hi = l + 1 < env->n_layers ? env->layer_lo[l + 1] : env->n_params;
      if (hi > env->layer_lo[l])
        z->first_layer[z->U++] = l;
    }
  if (z->U == 0)
    z->first_layer[z->U++] = 0;
  z->first_layer[0] = 0;
  z->first_layer[z->U] = env->n_layers;
  z->f = g_new0 (double, z->U);
  z->b = g_new0 (double, z->U);
  if (env->n_layers > 0 && env->layer_seconds)
    {
      g_autofree double *fwd = g_new (double, env->n_layers);
      g_autofree double *bwd = g_new (double, env->n_layers);
      env->layer_seconds (env->compute_ctx, env->batch, fwd, bwd);
      for (int u = 0; u < z->U; u++)
        for (int l = z->first_layer[u]; l < z->first_layer[u + 1]; l++)
          {
            z->f[u] += fwd[l];
            z->b[u] += bwd[l];
          }
    }
  else
    {
      /* one unit: the step's forward and backward shares */
      z->f[0] = env->fwd_share;
      z->b[0] = 1 - env->fwd_share;
    }
  for (int u = 0; u < z->U; u++)
    z->nominal += z->f[u] + z->b[u];
  z->n_ops = 3 * z->U;
  z->op_kind = g_new (ArZ3Kind, z->n_ops);
  z->op_unit = g_new (int, z->n_ops);
  int c = 0;
#define OP(kind, unit) (z->op_kind[c] = (kind), z->op_unit[c] = (unit), c++)
  for (int u = 0; u < z->U; u++)
    OP (Z3_GATHER_FORWARD, u);
  OP (Z3_GATHER_BACKWARD, z->U - 1);
  for (int u = z->U - 1; u >= 0; u--)
    {
      if (prefetch && u > 0)
        OP (Z3_GATHER_BACKWARD, u - 1);
      OP (Z3_SCATTER, u);
      if (!prefetch && u > 0)
        OP (Z3_GATHER_BACKWARD, u - 1);
    }
#undef OP
  g_assert (c == z->n_ops);
  z->fs = g_new0 (double, z->U);
  z->fe = g_new0 (double, z->U);
  z->bs = g_new0 (double, z->U);
  z->be = g_new0 (double, z->U);
  z->gf_end = g_new0 (double, z->U);
  z->gb_end = g_new0 (double, z->U);
  return z;
}

static void
z3_free (ArZero3 *z)
{
  if (!z)
    return;
  g_free (z->first_layer);
  g_free (z->f);
  g_free (z->b);
  g_free (z->op_kind);
  g_free (z->op_unit);
  g_free (z->fs);
  g_free (z->fe);
  g_free (z->bs);
  g_free (z->be);
  g_free (z->gf_end);
  g_free (z->gb_end);
  g_free (z);
}

/* --- tensor > 1: the tensor groups' step, the data groups' buckets -------- */

/* Every bucket and the step have ended: the spans, then the update. */
static void
tp_finish (ArPolicy *ar)
{
  EngSim *sim = ar->env.sim;
  double now = eng_sim_now (sim);
  const double *a, *b;
  int n;
  pol_tensor_step_stretches (ar->tp, &a, &b, &n);
  for (int w = 0; w < ar->env.workers; w++)
    {
      for (int i = 0; i < n; i++)
        span (ar, w, "compute", a[i], b[i]);
      if (ar->chain_end < now)
        span (ar, w, "send", ar->chain_end, now);
    }
  eng_schedule (sim, ar->update_time, ar->zero ? on_shard_updated : on_update_done, ar, NULL);
}

/* Starts the next bucket's collectives if its gradient is complete and
 * none are running. */
static void
tp_try_bucket (ArPolicy *ar)
{
  if (ar->bucket_busy || ar->done >= ar->n_buckets
      || ar->bucket_layer[ar->done] < ar->ready_layer)
    return;
  ar->bucket_busy = TRUE;
  double now = eng_sim_now (ar->env.sim);
  ar->buckets[ar->done].ready = now;
  eng_schedule_at (ar->env.sim, now + ar->bucket_overhead, start_bucket, ar,
                   GINT_TO_POINTER (ar->done));
}

static void
tp_ready (gpointer ctx, int layer)
{
  ArPolicy *ar = ctx;
  ar->ready_layer = layer;
  tp_try_bucket (ar);
}

static void
tp_done (gpointer ctx)
{
  ArPolicy *ar = ctx;
  ar->chain_end = eng_sim_now (ar->env.sim);
  ar->max_end = ar->chain_end;
  if (ar->done >= ar->n_buckets)
    tp_finish (ar);
}

/* A bucket's collectives have ended (on_bucket_done recorded it). */
static void
tp_bucket_done (ArPolicy *ar)
{
  ar->bucket_busy = FALSE;
  if (ar->done < ar->n_buckets)
    tp_try_bucket (ar);
  else if (ar->chain_end >= 0)
    tp_finish (ar);
}

static void
tp_iteration (ArPolicy *ar)
{
  ar->done = ar->dp > 1 ? 0 : ar->n_buckets;  /* one data rank: nothing to reduce */
  ar->ready_layer = ar->env.n_layers;
  ar->bucket_busy = FALSE;
  ar->chain_end = -1;
  /* max_step is the slowest rank's share of its unsplit step */
  double compute = pol_tensor_step_compute (ar->tp);
  pol_tensor_step_run (ar->tp, compute > 0 ? ar->max_step / compute : 0, tp_ready, tp_done, ar);
}

/* The cut of the layers, the step chain on the tensor groups, and the
 * layer of each bucket. */
static gboolean
tp_new (ArPolicy *ar, const PolEnv *env, const CommAlgorithm *alg, GError **error)
{
  int L = env->n_layers;
  ar->split = g_new (PolTpSplit, MAX (L, 1));
  if (!pol_tensor_split (env->layers, L, ar->T, ar->split, error))
    return FALSE;
  g_autofree double *fwd = g_new (double, L);
  g_autofree double *bwd = g_new (double, L);
  env->layer_seconds (env->compute_ctx, env->batch, fwd, bwd);
  gboolean sequence = base_values_int (env->values, "policy.sequence_parallel") != 0;
  ar->tp = pol_tensor_step_new (&ar->env, ar->mesh, ar->split, sequence, env->batch, fwd, bwd,
                                alg, env->value_bytes > 0 ? env->value_bytes : 4.0, &ar->ex,
                                AR_TAG_ALLTOALL);
  double whole = pol_tensor_step_whole (ar->tp);
  ar->tp_share = whole > 0 ? pol_tensor_step_compute (ar->tp) / whole : 1.0;
  return TRUE;
}

/* The layer holding each bucket's first parameter. */
static void
tp_bucket_layers (ArPolicy *ar, const PolEnv *env)
{
  ar->bucket_layer = g_new (int, MAX (ar->n_buckets, 1));
  for (int j = 0; j < ar->n_buckets; j++)
    {
      int l = env->n_layers - 1;
      while (l > 0 && env->layer_lo[l] > ar->buckets[j].lo)
        l--;
      ar->bucket_layer[j] = l;
    }
}

static void
start_iteration (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  ArPolicy *ar = ctx;
  const PolEnv *env = &ar->env;
  double now = eng_sim_now (sim);
  int W = env->workers;
  ar->iter_start = now;
  ar->max_step = 0;
  double host = 0;
  if (env->model)
    {
      gsize P = env->n_params;
      /* uncompressed float32 gradients of equal batches: summed as computed */
      gboolean direct = !ar->cmp && !env->batches && !pol_wire_rounds (env);
      if (!direct)
        memset (ar->sum, 0, P * sizeof (float));
      int D = ar->dp;
      for (int w0 = 0; w0 < D; w0 += ar->group)
        {
          int n = MIN (ar->group, D - w0);
          TrainStep st = { .n = n, .first = w0, .params = ar->params, .grads = ar->grad,
                           .sum = direct ? ar->sum : NULL, .sum_add = w0 > 0 };
          host += train_step (ar->steps, &st) / D;
          if (direct)
            continue;
          for (int i = 0; i < n; i++)
            {
              int w = w0 + i;
              /* balance = speed: its mean gradient weighted by its share
               * of the global batch, so that the sum over D is the mean
               * over every sample of the round */
              if (env->batches)
                {
                  /* b_w D / G, G = batch x D */
                  float f = (float) ((double) env->batches[w] / (double) env->batch);
                  for (gsize k = 0; k < P; k++)
                    ar->grad[i][k] *= f;
                }
              /* compressed: what the others decode, bucket by bucket */
              for (int j = 0; ar->cmp && j < ar->n_buckets; j++)
                {
                  ArBucket *b = &ar->buckets[j];
                  ar->cmp->apply (env->values, ar->grad[i] + b->lo,
                                  ar->memory ? ar->memory[w] + b->lo : NULL, b->hi - b->lo,
                                  &ar->rngs[w]);
                }
              /* its contribution as the all-reduce carries it */
              pol_wire_round (env, ar->grad[i], P);
            }
          train_lanes_sum (train_steps_lanes (ar->steps), ar->sum,
                           (const float *const *) ar->grad, n, P);
        }
      /* the sum as the workers receive it */
      pol_wire_round (env, ar->sum, P);
    }
  for (int w = 0; w < W; w++)
    {
      /* a tensor rank computes its share of the unsplit step */
      ar->step_time[w] = env->compute_time (env->compute_ctx, w, host)
                         * (ar->tp ? ar->tp_share : 1.0);
      ar->max_step = MAX (ar->max_step, ar->step_time[w]);
      if (!(ar->slowdown > 0) && !ar->z3 && !ar->tp) /* else once the collectives have run */
        span (ar, w, "compute", now, now + ar->step_time[w]);
    }
  if (ar->z3)
    {
      z3_iteration (ar);
      return;
    }
  if (ar->tp)
    {
      tp_iteration (ar);
      return;
    }
  ar->done = 0;
  ar->buckets[0].ready = bucket_ready (ar, 0);
  eng_schedule_at (sim, ar->buckets[0].ready + ar->bucket_overhead, start_bucket, ar,
                   GINT_TO_POINTER (0));
}

/* The shards of zero > 0 (their bounds, each one's optimizer state where
 * the math runs) and the update's time: of the largest shard, or of the
 * whole model. */
static void
shards_new (ArPolicy *ar, const PolEnv *env)
{
  int D = ar->dp;
  gsize P = env->n_params;
  /* a tensor rank's parameters: what its optimizer updates */
  gsize mine = ar->T > 1 ? pol_tensor_rank_params (env->layers, env->n_layers, P, ar->split,
                                                   ar->T)
               : ar->ex.ep > 1 ? pol_experts_rank_params (env->layers, env->n_layers, P,
                                                          ar->ex.ep)
               : P;
  ar->zero = (int) base_values_int (env->values, "policy.zero");
  ar->prefetch = base_values_int (env->values, "policy.prefetch") != 0;
  if (ar->zero)
    {
      /* the math's shards: the whole model over the data ranks (element-wise
       * optimizers: any cut gives the same floats) */
      ar->shard_lo = g_new (gsize, (gsize) D + 1);
      for (int r = 0; r < D; r++)
        comm_shard_bounds (P, D, r, &ar->shard_lo[r], &ar->shard_lo[r + 1]);
      ar->update_time = env->update_time (env->compute_ctx, (mine + (gsize) D - 1) / (gsize) D);
      if (env->model)
        {
          ar->shard_opt = g_new0 (KernOptimizer *, (gsize) D);
          for (int r = 0; r < D; r++)
            if (ar->shard_lo[r + 1] > ar->shard_lo[r])
              ar->shard_opt[r] = kern_optimizer_new (&env->opt, ar->shard_lo[r + 1]
                                                                - ar->shard_lo[r]);
        }
    }
  else
    {
      ar->update_time = env->update_time (env->compute_ctx, mine);
      if (env->model)
        ar->opt = kern_optimizer_new (&env->opt, P);
    }
}

/* Bytes of a gradient value in the reductions. */
static double
ar_grad_bytes (const PolEnv *env)
{
  return env->grad_bytes > 0 ? env->grad_bytes : 4.0;
}

/* The buckets, from the end of the parameter vector; a unit each under
 * zero = 3.  Each gets the algorithm of its collective. */
static void
buckets_new (ArPolicy *ar, const PolEnv *env, const CommAlgorithm *alg)
{
  gsize P = env->n_params;
  /* buckets of bucket_size bytes from the end of the parameter vector; a
   * unit each under zero = 3 */
  double bucket_bytes = base_values_double (env->values, "policy.bucket_size");
  gsize per = bucket_bytes > 0 ? (gsize) MAX (1.0, floor (bucket_bytes / ar_grad_bytes (env)))
                               : P;
  per = MIN (per, P);
  if (ar->zero == 3)
    {
      ar->z3 = z3_new (env, ar->prefetch);
      ar->n_buckets = ar->z3->U;
    }
  else
    ar->n_buckets = (int) ((P + per - 1) / per);
  ar->buckets = g_new0 (ArBucket, ar->n_buckets);
  for (int j = 0; j < ar->n_buckets; j++)
    {
      ArBucket *b = &ar->buckets[j];
      if (ar->z3)
        {
          int u = ar->z3->U - 1 - j, l = ar->z3->first_layer[u];
          int next = ar->z3->first_layer[u + 1];
          b->lo = env->n_layers > 0 ? env->layer_lo[l] : 0;
          b->hi = next < env->n_layers ? env->layer_lo[next] : P;
        }
      else
        {
          b->hi = P - (gsize) j * per;
          b->lo = b->hi > per ? b->hi - per : 0;
        }
      gsize n = b->hi - b->lo;
      gsize part = ar->T > 1 ? MAX (n / (gsize) ar->T, 1) : n;
      if (ar->zero)
        {
          b->wire = ar_grad_bytes (env) * (double) part;
          b->alg = sharded_algorithm (env, alg, ar->dp, ar->dp_hosts[0], COMM_REDUCE_SCATTER,
                                      part);
          b->gather = sharded_algorithm (env, alg, ar->dp, ar->dp_hosts[0], COMM_ALLGATHER,
                                         part);
          continue;
        }
      b->wire = ar->cmp ? ar->cmp->wire_bytes (env->values, n) : ar_grad_bytes (env) * (double) part;
      /* every bucket but the last has the same size: one choice */
      b->alg = j > 0 && n == ar->buckets[j - 1].hi - ar->buckets[j - 1].lo
               ? ar->buckets[j - 1].alg
               : ar->cmp ? allgather_algorithm (ar, b->wire)
               : pol_allreduce_resolve (env, alg, ar->dp, ar->dp_hosts[0], part);
    }
}

/* The mesh of the workers (data, expert and tensor axes), the hosts of
 * each tensor rank's data group, and with EP > 1 those of the ranks
 * holding each expert slot. */
static void
mesh_new (ArPolicy *ar, const PolEnv *env)
{
  pol_experts_of (env->values, env->layers, env->n_layers, &ar->ex);
  int EP = ar->ex.ep > 1 ? ar->ex.ep : 1;
  ar->ex.ep = EP;
  int size[TRAIN_N_AXES] = { 0 };
  for (int a = 0; a < TRAIN_N_AXES; a++)
    size[a] = 1;
  size[TRAIN_AXIS_DATA] = ar->dp / EP;
  size[TRAIN_AXIS_EXPERT] = EP;
  size[TRAIN_AXIS_TENSOR] = ar->T;
  ar->mesh = train_mesh_new (size, 0);
  ar->hosts = train_mesh_group (ar->mesh, TRAIN_AXIS_DATA, 0).hosts;
  ar->dp_hosts = g_new (const int *, ar->T);
  if (EP == 1)
    {
      for (int t = 0; t < ar->T; t++)
        ar->dp_hosts[t] = train_mesh_group (ar->mesh, TRAIN_AXIS_DATA, t).hosts;
      return;
    }
  /* the data-parallel ranks of tensor rank t: every rank i T + t */
  ar->dp_own = g_new (int *, ar->T);
  for (int t = 0; t < ar->T; t++)
    {
      ar->dp_own[t] = g_new (int, ar->dp);
      for (int i = 0; i < ar->dp; i++)
        ar->dp_own[t][i] = train_mesh_host (ar->mesh, i * ar->T + t);
      ar->dp_hosts[t] = ar->dp_own[t];
    }
  ar->ex_hosts = g_new (const int *, EP);
  for (int e = 0; e < EP; e++)
    ar->ex_hosts[e] = train_mesh_group (ar->mesh, TRAIN_AXIS_DATA, e * ar->T).hosts;
}

static PolPolicy *
ar_create (const PolEnv *env, GError **error)
{
  const CommAlgorithm *alg = pol_env_algorithm (env, error);
  if (!alg)
    return NULL;
  ArPolicy *ar = g_new0 (ArPolicy, 1);
  ar->env = *env;
  ar->alg = alg;
  int W = env->workers;
  gsize P = env->n_params;
  ar->T = (int) base_values_int (env->values, "policy.tensor");
  ar->dp = W / ar->T;
  pol_run_init_ranks (&ar->run, &ar->env, ar->dp);
  mesh_new (ar, env);
  ar->step_time = g_new0 (double, W);
  /* the parameters only where the math runs: a timing-only model may be of
   * any size; a tensor group computes one data rank's gradient */
  if (env->model)
    {
      ar->params = g_new0 (float, P);
      env->model->ops->init (env->model, ar->params, env->seed);
      ar->group = ar_group (env->model, env->batch, ar->dp);
      int G = ar->group;
      ar->sum = g_new0 (float, P);
      ar->grad = g_new (float *, G);
      for (int i = 0; i < G; i++)
        ar->grad[i] = g_new0 (float, P);
      PolEnv senv = *env;
      senv.workers = ar->dp;
      /* a tensor group computes on its ranks' shards */
      if (ar->T > 1 && !(ar->plan = kern_tensor_plan_new (env->model, ar->T, error)))
        {
          ar_free ((PolPolicy *) ar);
          return NULL;
        }
      TrainStepsSetup setup = { .model = env->model, .train = env->train,
                                .samplers = pol_samplers_for_env (&senv), .parts = ar->dp,
                                .batch = env->batch, .slots = G, .stacked = ar->T == 1,
                                .tensor = ar->plan, .host_timed = env->host_timed };
      /* balance = speed: each worker at its own batch, one at a time */
      if (env->batches)
        {
          setup.batches = env->batches;
          setup.stacked = FALSE;
          for (int w = 0; w < ar->dp; w++)
            setup.batch = MAX (setup.batch, env->batches[w]);
        }
      ar->steps = train_steps_new (&setup);
    }
  if ((ar->T > 1 || ar->ex.ep > 1) && !tp_new (ar, env, alg, error))
    {
      ar_free ((PolPolicy *) ar);
      return NULL;
    }
  shards_new (ar, env);
  /* zero = 3 and tensor > 1: not modelled (device/model.c refuses it set
   * by hand; a catalog device's own is left out) */
  ar->slowdown = ar->zero == 3 || ar->tp ? 0 : env->overlap_slowdown;
  ar->bucket_overhead = base_values_double (env->values, "policy.bucket_overhead");
  ar->cmp = pol_compress_of (env->values);
  if (ar->cmp && env->model)
    {
      ar->rngs = g_new (EngRng, W);
      for (int w = 0; w < W; w++)
        eng_rng_init (&ar->rngs[w], env->seed, POL_COMPRESS_STREAM + (guint64) w);
      if (ar->cmp->feedback)
        {
          ar->memory = g_new (float *, W);
          for (int w = 0; w < W; w++)
            ar->memory[w] = g_new0 (float, P);
        }
    }

  buckets_new (ar, env, alg);
  if (ar->tp)
    tp_bucket_layers (ar, env);
  return (PolPolicy *) ar;
}

static void
ar_start (PolPolicy *p)
{
  ArPolicy *ar = (ArPolicy *) p;
  pol_report_mesh (&ar->env, ar->mesh);
  pol_report_algorithm (&ar->env, ar->alg, ar->buckets[0].alg);
  if (!ar->cmp && !ar->zero && ar->dp > 1)
    {
      /* the protocol and channels of the largest bucket's all-reduce */
      gsize n = ar->buckets[0].hi - ar->buckets[0].lo;
      CommArgs a = pol_comm_args (&ar->env, ar->dp, ar->dp_hosts[0], NULL,
                                  ar->T > 1 ? MAX (n / (gsize) ar->T, 1) : n, 0);
      pol_report_plan (&ar->env, ar->alg, &a, COMM_ALLREDUCE);
    }
  if (ar->ex.ep > 1 && ar->env.rec.param)
    {
      char v[G_ASCII_DTOSTR_BUF_SIZE];
      ar->env.rec.param (ar->env.rec.ctx, "policy.expert_dropped",
                         g_ascii_formatd (v, sizeof v, "%.6g", ar->ex.dropped));
      ar->env.rec.param (ar->env.rec.ctx, "policy.expert_load",
                         g_ascii_formatd (v, sizeof v, "%.6g", ar->ex.load));
      /* bytes one rank sends in a step's all-to-alls */
      double a2a = 0;
      for (int l = 0; l < ar->env.n_layers; l++)
        if (pol_experts_first (ar->env.layers, l))
          a2a += 4 * pol_experts_alltoall_floats (ar->env.layers, l, &ar->ex)
                 * (double) ar->env.batch;
      a2a *= ar->env.value_bytes > 0 ? ar->env.value_bytes : 4.0;
      ar->env.rec.param (ar->env.rec.ctx, "policy.alltoall_bytes",
                         g_ascii_formatd (v, sizeof v, "%.17g", a2a));
    }
  pol_run_start (&ar->run, ar->params);
  eng_schedule (ar->env.sim, 0, start_iteration, ar, NULL);
}

static void
ar_finish (PolPolicy *p, PolResult *out)
{
  ArPolicy *ar = (ArPolicy *) p;
  pol_run_finish (&ar->run, ar->params, out);
  if (ar->ex.ep > 1 && ar->tp && ar->env.rec.param && out->end_time > 0)
    {
      /* the all-to-alls' share of the run: every rank waits on them */
      char v[G_ASCII_DTOSTR_BUF_SIZE];
      ar->env.rec.param (ar->env.rec.ctx, "policy.alltoall_share",
                         g_ascii_formatd (v, sizeof v, "%.6g",
                                          pol_tensor_step_alltoall_seconds (ar->tp)
                                          / out->end_time));
    }
}

static void
ar_free (PolPolicy *p)
{
  ArPolicy *ar = (ArPolicy *) p;
  if (!ar)
    return;
  int W = ar->env.workers;
  g_free (ar->buckets);
  if (ar->grad)
    for (int i = 0; i < ar->group; i++)
      g_free (ar->grad[i]);
  g_free (ar->sum);
  train_steps_free (ar->steps);
  if (ar->memory)
    for (int w = 0; w < W; w++)
      g_free (ar->memory[w]);
  g_free (ar->memory);
  g_free (ar->rngs);
  g_free (ar->grad);
  train_mesh_free (ar->mesh);
  g_free (ar->params);
  g_free (ar->step_time);
  if (ar->opt)
    kern_optimizer_free (ar->opt);
  for (int r = 0; ar->shard_opt && r < ar->dp; r++)
    if (ar->shard_opt[r])
      kern_optimizer_free (ar->shard_opt[r]);
  g_free (ar->shard_opt);
  g_free (ar->shard_lo);
  z3_free (ar->z3);
  pol_tensor_step_free (ar->tp);
  kern_tensor_plan_free (ar->plan);
  g_free (ar->split);
  g_free (ar->bucket_layer);
  g_free (ar->dp_hosts);
  for (int t = 0; ar->dp_own && t < ar->T; t++)
    g_free (ar->dp_own[t]);
  g_free (ar->dp_own);
  g_free (ar->ex_hosts);
  g_free (ar);
}

const char pol_allreduce_tag[] = "allreduce";
static const char *const ar_tags[] = { pol_allreduce_tag, "alltoall" };

/* The most gradient buckets of a run: each is an all-reduce of its own and
 * a trace row per iteration. */
#define AR_MAX_BUCKETS 65536

static const BaseKey ar_keys[] = {
  { "policy", "bucket_size", BASE_KEY_QUANTITY, BASE_UNIT_SIZE, "25MB", 0, BASE_BIG, 0, NULL, 0,
    "Gradient bucket size (kind = allreduce): buckets are all-reduced as backward produces them; 0 = one bucket, no overlap.", NULL },
  { "policy", "bucket_overhead", BASE_KEY_QUANTITY, BASE_UNIT_TIME, "0", 0, BASE_BIG, 0, NULL, 0,
    "Framework time before each gradient bucket's all-reduce starts (kind = allreduce): a fusion cycle, the bucket's flattening copy; added once per bucket and iteration.", NULL },
  { .section = NULL },
};

/* Buckets of bucket_size bytes, at least one float each, from the end of
 * the gradient: at most AR_MAX_BUCKETS of them. */
static gboolean
ar_check_model (const PolModelInfo *mi, GError **error)
{
  double size = base_values_double (mi->values, "policy.bucket_size");
  gsize P = mi->model->ops->n_params (mi->model);
  gint64 zero = base_values_int (mi->values, "policy.zero");
  int T = (int) base_values_int (mi->values, "policy.tensor");
  if (T > 1)
    {
      g_autofree PolTpSplit *split = g_new (PolTpSplit, MAX (mi->model->n_layers, 1));
      if (!pol_tensor_split (mi->model->layers, mi->model->n_layers, T, split, error)
          || !pol_tensor_check_math (mi, T, error))
        return FALSE;
    }
  if (!pol_experts_check_model (mi, error))
    return FALSE;
  if (zero == 3) /* a bucket per layer: bucket_size does not apply */
    return TRUE;
  if (size <= 0)
    return TRUE;
  double per = MAX (1.0, floor (size / 4));
  double n = ceil ((double) P / per);
  if (n <= AR_MAX_BUCKETS)
    return TRUE;
  return pol_key_error (error, "policy", "bucket_size",
                        "%g bytes cut the %.4g-byte gradient into %.4g buckets, more than the %d "
                        "a run may have; use at least %.0f bytes (0 = one bucket)",
                        size, 4.0 * (double) P, n, AR_MAX_BUCKETS,
                        4.0 * ceil ((double) P / AR_MAX_BUCKETS));
}

/* ZeRO's rules: the algorithm must run the collectives a stage needs, no
 * compression (it compresses all-reduced gradients), prefetch only where
 * parameters are gathered. */
static gboolean
ar_validate (PolCheck *chk, GError **error)
{
  gint64 zero = base_values_int (chk->values, "policy.zero");
  gint64 T = base_values_int (chk->values, "policy.tensor");
  if (chk->workers % T != 0)
    return pol_key_error (error, "policy", "tensor",
                          "%" G_GINT64_FORMAT " does not divide the %" G_GINT64_FORMAT
                          " workers (each data-parallel rank is a group of tensor ranks); "
                          "choose workers a multiple of it", T, chk->workers);
  if (T > 1 && zero == 3)
    return pol_key_error (error, "policy", "zero",
                          "3 is not modelled with tensor > 1 (Megatron shards the optimizer "
                          "state: zero = 1); use zero <= 2 or tensor = 1");
  if (T > 1 && pol_compress_of (chk->values))
    return pol_key_error (error, "policy", "compression",
                          "not modelled with tensor > 1; set compression = none or tensor = 1");
  if (!zero)
    return TRUE;
  if (pol_compress_of (chk->values))
    return pol_key_error (error, "policy", "zero",
                          "%" G_GINT64_FORMAT " reduce-scatters the gradients, which [policy] "
                          "compression does not model; set compression = none or zero = 0", zero);
  if (base_values_int (chk->values, "policy.channels") > 1)
    return pol_key_error (error, "policy", "channels",
                          "applies to all-reduces, which zero = %" G_GINT64_FORMAT " replaces "
                          "with reduce-scatters and all-gathers; set channels = 1", zero);
  return TRUE;
}

/* One shared copy of the model and its optimizer state, the sum, G
 * workers' gradients and activations at once, and error feedback per
 * worker where the compressor keeps it. */
static double
ar_host_bytes (const PolModelInfo *mi, double per_model)
{
  int W = (int) mi->workers;
  int G = ar_group (mi->model, (int) mi->batch, W);
  const PolCompressor *cmp = pol_compress_of (mi->values);
  double feedback = cmp && cmp->feedback
                    ? 4.0 * (double) W * (double) mi->model->ops->n_params (mi->model) : 0;
  return per_model + G * ar_worker_bytes (mi->model, (int) mi->batch) + feedback;
}

/* The host groups' size (ranks of a node) when the buckets' all-reduces
 * of a run over `workers` may run as flow classes (docs/collectives.md,
 * "Flow classes"), 0 when they run per message: flow classes on (the
 * collectives carry no data even with real math: the sums are formed
 * apart), one data group (tensor = 1, experts = 1, zero = 0) in one channel
 * without compression, and a topology whose routes of each phase form one
 * class when its links are as built (no [network] links): its registry
 * entry's class_group says over which host groups. */
static int
ar_class_group (const PolModelInfo *mi, gint64 workers)
{
  const BaseValues *v = mi->values;
  const NetTopology *topo = mi->topology ? net_topology_lookup (mi->topology) : NULL;
  if (!mi->flow_classes || workers < 2 || !topo || !topo->class_group
      || base_values_int (v, "policy.tensor") > 1
      || base_values_int (v, "policy.experts") > 1
      || base_values_int (v, "policy.zero") != 0
      || base_values_int (v, "policy.channels") > 1
      || pol_compress_of (v))
    return 0;
  return topo->class_group (v, workers);
}

/* Each gradient bucket is all-reduced once an iteration (every bucket's
 * collective may be in flight at once, each with a transfer per rank and
 * channel); spans: compute, communication and wait per worker. */
static void
ar_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  int T = (int) base_values_int (mi->values, "policy.tensor");
  double D = W / T;            /* ranks of a data group; T of them */
  gsize P = mi->model->ops->n_params (mi->model);
  double bucket_bytes = base_values_double (mi->values, "policy.bucket_size");
  gsize per = bucket_bytes > 0 ? (gsize) MAX (1.0, floor (bucket_bytes / 4)) : P;
  per = MAX (MIN (per, P), 1);
  double B = (double) ((P + per - 1) / per);
  gsize part = MAX (per / (gsize) T, 1);
  /* auto counted as one channel: its count depends on the size */
  int C = (int) MAX (base_values_int (mi->values, "policy.channels"), 1);
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  gint64 zero = base_values_int (mi->values, "policy.zero");
  /* tensor > 1: the step's collectives on each of the D tensor groups */
  double tensor = 0, stretches = 0;
  if (T > 1)
    {
      g_autofree PolTpSplit *split = g_new (PolTpSplit, MAX (mi->model->n_layers, 1));
      if (pol_tensor_split (mi->model->layers, mi->model->n_layers, T, split, NULL))
        {
          int n;
          gboolean sequence = base_values_int (mi->values, "policy.sequence_parallel") != 0;
          g_autofree PolTpCollective *coll
            = pol_tensor_collectives (mi->model->layers, mi->model->n_layers, split, sequence,
                                      mi->recomputed, &n);
          for (int i = 0; i < n; i++)
            tensor += D * comm_messages (alg, coll[i].kind, T,
                                         (gsize) MAX (1.0, coll[i].floats * (double) mi->batch),
                                         1);
          stretches = n + 1;
        }
    }
  /* experts > 1: each expert layer run's four all-to-alls on the W / EP
   * expert groups */
  PolExperts ex;
  pol_experts_of (mi->values, mi->model->layers, mi->model->n_layers, &ex);
  for (int l = 0; ex.ep > 1 && l < mi->model->n_layers; l++)
    if (pol_experts_first (mi->model->layers, l))
      {
        gsize n = (gsize) MAX (1.0, pol_experts_alltoall_floats (mi->model->layers, l, &ex)
                                    * (double) mi->batch);
        tensor += 4 * (W / ex.ep) * comm_messages (pol_experts_alltoall_algorithm (comm_lookup (alg))->name,
                                                      COMM_ALLTOALL, ex.ep, n, 1);
        stretches += 4;
      }
  if (zero)
    {
      /* zero = 3: a unit per layer at most, gathered twice */
      double units = zero == 3 ? MAX (mi->model->n_layers, 1) : B;
      gsize each_n = zero == 3 ? MAX (P / (gsize) units, 1) : part;
      double gathers = zero == 3 ? 2 : 1;
      double each = T * (comm_messages (alg, COMM_REDUCE_SCATTER, (int) D, each_n, 1)
                         + gathers * comm_messages (alg, COMM_ALLGATHER, (int) D, each_n, 1));
      *out = (PolWork) { .messages = units * each + tensor,
                         .spans = (zero == 3 ? 2 * units : 3 + stretches) * W + W,
                         .iteration_rows = W, .bucket_rows = units, .in_flight = W };
      return;
    }
  double each = T * comm_messages (alg, COMM_ALLREDUCE, (int) D, part, C);
  *out = (PolWork) { .messages = B * each + tensor, .spans = (3 + stretches) * W,
                     .iteration_rows = W, .bucket_rows = B, .in_flight = B * W * C };
  /* the buckets of `per` elements and the last, of what is left */
  int group = ar_class_group (mi, (gint64) W);
  gsize last = P - (gsize) (B - 1) * per;
  double full = group ? comm_class_events (alg, COMM_ALLREDUCE, (int) W, group, per) : 0;
  double rest = group ? comm_class_events (alg, COMM_ALLREDUCE, (int) W, group, last) : 0;
  if (full > 0)
    {
      out->class_messages += (B - 1) * each;
      out->class_events += (B - 1) * full;
    }
  if (rest > 0)
    {
      out->class_messages += each;
      out->class_events += rest;
    }
}

/* A tensor group draws one batch: the data-parallel ranks are the parts. */
static gint64
ar_data_parts (const BaseValues *values, gint64 workers)
{
  return workers / MAX (base_values_int (values, "policy.tensor"), 1);
}

const PolPolicyOps pol_allreduce_ops = {
  .work = ar_work,
  .data_parts = ar_data_parts,
  .name = "allreduce",
  .balances = TRUE,
  .job_failures = TRUE,
  .wire_numerics = TRUE,
  .compresses = TRUE,
  .zero = TRUE,
  .tensor = TRUE,
  .experts = TRUE,
  .source = "S. Li et al.: PyTorch Distributed: experiences on accelerating data parallel training, VLDB 2020 (gradient buckets)",
  .keys = ar_keys,
  .check_model = ar_check_model,
  .validate = ar_validate,
  .host_bytes = ar_host_bytes,
  .description = "data parallel: every worker computes a real gradient, buckets are all-reduced "
                 "as backward produces them, every worker applies the averaged update",
  .tag_names = ar_tags,
  .n_tags = G_N_ELEMENTS (ar_tags),
  .host_names = pol_worker_host_names,
  .create = ar_create,
  .start = ar_start,
  .finish = ar_finish,
  .free = ar_free,
};
