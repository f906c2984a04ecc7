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
 * on the run's host lanes, the same numbers on any number of threads), and
 * each group's gradients are added to the sum, in worker order.  The
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
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "policies/compress.h"
#include "train/mesh.h"
#include "train/step.h"

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
} ArBucket;

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
  double update_time;      /* s */
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
      float *g = ar->sum;
      float inv = 1.0f / (float) W;
      for (gsize i = 0; i < ar->env.n_params; i++)
        g[i] *= inv;
      kern_optimizer_step (ar->opt, ar->params, g);
    }
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
      span (ar, w, "compute", now - ar->update_time, now);
    }
  ar->run.updates += W;
  ar->run.samples += (gint64) W * ar->env.batch;
  pol_run_progress (&ar->run, now);
  if (!pol_run_round_end (&ar->run, ar->params, ar->iter + 1 >= ar->env.iterations))
    return;
  ar->iter++;
  start_iteration (sim, ar, NULL);
}

static void start_bucket (EngSim *sim, gpointer ctx, gpointer data);

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
  eng_schedule (sim, ar->update_time, on_update_done, ar, NULL);
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
  if (!ar->cmp)
    {
      pol_allreduce_start (&ar->env, b->alg, ar->env.workers, ar->hosts, NULL,
                           b->hi - b->lo, 0, on_bucket_done, ar, data);
      return;
    }
  CommArgs a = allgather_args (ar, b->wire);
  g_autoptr (GError) error = NULL;
  if (!comm_start (b->alg, &a, COMM_ALLGATHER, on_bucket_done, ar, data, &error))
    g_error ("all-gather with %s: %s", b->alg->name, error->message); /* chosen to run it */
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
      memset (ar->sum, 0, P * sizeof (float));
      for (int w0 = 0; w0 < W; w0 += ar->group)
        {
          int n = MIN (ar->group, W - w0);
          TrainStep st = { .n = n, .first = w0, .params = ar->params, .grads = ar->grad };
          host += train_step (ar->steps, &st) / W;
          for (int i = 0; i < n; i++)
            {
              int w = w0 + i;
              /* compressed: what the others decode, bucket by bucket */
              for (int j = 0; ar->cmp && j < ar->n_buckets; j++)
                {
                  ArBucket *b = &ar->buckets[j];
                  ar->cmp->apply (env->values, ar->grad[i] + b->lo,
                                  ar->memory ? ar->memory[w] + b->lo : NULL, b->hi - b->lo,
                                  &ar->rngs[w]);
                }
            }
          train_lanes_sum (train_steps_lanes (ar->steps), ar->sum,
                           (const float *const *) ar->grad, n, P);
        }
    }
  for (int w = 0; w < W; w++)
    {
      ar->step_time[w] = env->compute_time (env->compute_ctx, w, host);
      ar->max_step = MAX (ar->max_step, ar->step_time[w]);
      if (!(ar->slowdown > 0)) /* else known when the all-reduces have run */
        span (ar, w, "compute", now, now + ar->step_time[w]);
    }
  ar->done = 0;
  ar->buckets[0].ready = bucket_ready (ar, 0);
  eng_schedule_at (sim, ar->buckets[0].ready + ar->bucket_overhead, start_bucket, ar,
                   GINT_TO_POINTER (0));
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
  pol_run_init (&ar->run, &ar->env);
  ar->mesh = train_mesh_new_data (W);
  ar->hosts = train_mesh_group (ar->mesh, TRAIN_AXIS_DATA, 0).hosts;
  ar->step_time = g_new0 (double, W);
  /* the parameters only where the math runs: a timing-only model may be of
   * any size */
  if (env->model)
    {
      ar->params = g_new0 (float, P);
      env->model->ops->init (env->model, ar->params, env->seed);
      ar->group = ar_group (env->model, env->batch, W);
      int G = ar->group;
      ar->sum = g_new0 (float, P);
      ar->grad = g_new (float *, G);
      for (int i = 0; i < G; i++)
        ar->grad[i] = g_new0 (float, P);
      TrainStepsSetup setup = { .model = env->model, .train = env->train,
                                .samplers = pol_samplers_for_env (env), .parts = W,
                                .batch = env->batch, .slots = G, .stacked = TRUE,
                                .host_timed = env->host_timed };
      ar->steps = train_steps_new (&setup);
      ar->opt = kern_optimizer_new (&env->opt, P);
    }
  ar->update_time = env->update_time (env->compute_ctx, P);
  ar->slowdown = env->overlap_slowdown;
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

  /* buckets of bucket_size bytes from the end of the parameter vector */
  double bucket_bytes = base_values_double (env->values, "policy.bucket_size");
  gsize per = bucket_bytes > 0 ? (gsize) MAX (1.0, floor (bucket_bytes / 4)) : P;
  per = MIN (per, P);
  ar->n_buckets = (int) ((P + per - 1) / per);
  ar->buckets = g_new0 (ArBucket, ar->n_buckets);
  for (int j = 0; j < ar->n_buckets; j++)
    {
      ArBucket *b = &ar->buckets[j];
      b->hi = P - (gsize) j * per;
      b->lo = b->hi > per ? b->hi - per : 0;
      gsize n = b->hi - b->lo;
      b->wire = ar->cmp ? ar->cmp->wire_bytes (env->values, n) : 4.0 * (double) n;
      /* every bucket but the last has the same size: one choice */
      b->alg = j > 0 && n == ar->buckets[j - 1].hi - ar->buckets[j - 1].lo
               ? ar->buckets[j - 1].alg
               : ar->cmp ? allgather_algorithm (ar, b->wire)
               : pol_allreduce_resolve (env, alg, W, ar->hosts, n);
    }
  return (PolPolicy *) ar;
}

static void
ar_start (PolPolicy *p)
{
  ArPolicy *ar = (ArPolicy *) p;
  pol_report_mesh (&ar->env, ar->mesh);
  pol_report_algorithm (&ar->env, ar->alg, ar->buckets[0].alg);
  pol_run_start (&ar->run, ar->params);
  eng_schedule (ar->env.sim, 0, start_iteration, ar, NULL);
}

static void
ar_finish (PolPolicy *p, PolResult *out)
{
  ArPolicy *ar = (ArPolicy *) p;
  pol_run_finish (&ar->run, ar->params, out);
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
  g_free (ar);
}

const char pol_allreduce_tag[] = "allreduce";
static const char *const ar_tags[] = { pol_allreduce_tag };

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

/* Each gradient bucket is all-reduced once an iteration (every bucket's
 * collective may be in flight at once, each with a transfer per rank and
 * channel); spans: compute, communication and wait per worker. */
static void
ar_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  gsize P = mi->model->ops->n_params (mi->model);
  double bucket_bytes = base_values_double (mi->values, "policy.bucket_size");
  gsize per = bucket_bytes > 0 ? (gsize) MAX (1.0, floor (bucket_bytes / 4)) : P;
  per = MAX (MIN (per, P), 1);
  double B = (double) ((P + per - 1) / per);
  int C = (int) base_values_int (mi->values, "policy.channels");
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  double each = comm_messages (alg, COMM_ALLREDUCE, (int) W, per, C);
  *out = (PolWork) { .messages = B * each, .spans = 3 * W, .iteration_rows = W,
                     .bucket_rows = B, .in_flight = B * W * C };
}

const PolPolicyOps pol_allreduce_ops = {
  .work = ar_work,
  .name = "allreduce",
  .compresses = TRUE,
  .source = "S. Li et al.: PyTorch Distributed: experiences on accelerating data parallel training, VLDB 2020 (gradient buckets)",
  .keys = ar_keys,
  .check_model = ar_check_model,
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
