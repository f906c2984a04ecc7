/*
 * lanes.c — lanes: a run's independent tasks on several host threads
 * (parallel.h).  Every run's lanes share one process-wide thread pool; a
 * caller always works through the tasks itself too, so a busy pool only
 * delays, never blocks, a run.
 */
#include "config.h"

#include "train/lanes.h"

static gint run_threads = 1;
static GThreadPool *pool;
static GMutex pool_lock;

struct TrainLanes {
  int n;
  KernModel **models;   /* (n): [0] the run's own (borrowed), then clones */
};

typedef struct {
  TrainLanes *lanes;
  int tasks;
  void (*fn) (gpointer ctx, int task, KernModel *model);
  gpointer ctx;
  gint next;            /* the next task to take */
  int pending;          /* pool lanes not yet finished, under lock */
  GMutex lock;
  GCond done;
} Job;

typedef struct {
  Job *job;
  int lane;
} LaneArg;

void
train_set_threads (int threads)
{
  g_atomic_int_set (&run_threads, MAX (threads, 1));
}

int
train_threads (void)
{
  return g_atomic_int_get (&run_threads);
}

int
train_task_groups (int batch)
{
  return MAX (1, (TRAIN_TASK_ROWS + MAX (batch, 1) - 1) / MAX (batch, 1));
}

static void
lane_loop (Job *j, int lane)
{
  int t;
  while ((t = g_atomic_int_add (&j->next, 1)) < j->tasks)
    j->fn (j->ctx, t, j->lanes->models[lane]);
}

static void
pool_lane (gpointer data, gpointer user G_GNUC_UNUSED)
{
  LaneArg *a = data;
  Job *j = a->job;
  lane_loop (j, a->lane);
  g_mutex_lock (&j->lock);
  if (--j->pending == 0)
    g_cond_signal (&j->done);
  g_mutex_unlock (&j->lock);
}

TrainLanes *
train_lanes_new (KernModel *model, gboolean host_timed)
{
  TrainLanes *l = g_new0 (TrainLanes, 1);
  int want = host_timed || !model || !model->ops->clone ? 1 : train_threads ();
  l->models = g_new0 (KernModel *, want);
  l->models[0] = model;
  l->n = 1;
  for (int i = 1; i < want; i++)
    {
      KernModel *c = model->ops->clone (model);
      if (!c)
        break;
      c->num = model->num;   /* the formats its math emulates */
      l->models[l->n++] = c;
    }
  if (l->n > 1)
    {
      g_mutex_lock (&pool_lock);
      if (!pool)
        pool = g_thread_pool_new (pool_lane, NULL, (int) MAX (g_get_num_processors (), 1),
                                  FALSE, NULL);
      g_mutex_unlock (&pool_lock);
    }
  return l;
}

int
train_lanes_count (const TrainLanes *l)
{
  return l->n;
}

void
train_lanes_run (TrainLanes *l, int tasks, void (*fn) (gpointer ctx, int task, KernModel *model),
               gpointer ctx)
{
  int extra = MIN (l->n, tasks) - 1;
  if (extra <= 0)
    {
      for (int t = 0; t < tasks; t++)
        fn (ctx, t, l->models[0]);
      return;
    }
  Job j = { .lanes = l, .tasks = tasks, .fn = fn, .ctx = ctx, .pending = extra };
  g_mutex_init (&j.lock);
  g_cond_init (&j.done);
  g_autofree LaneArg *args = g_new (LaneArg, extra);
  for (int i = 0; i < extra; i++)
    {
      args[i] = (LaneArg) { .job = &j, .lane = i + 1 };
      g_thread_pool_push (pool, &args[i], NULL);
    }
  lane_loop (&j, 0);
  g_mutex_lock (&j.lock);
  while (j.pending > 0)
    g_cond_wait (&j.done, &j.lock);
  g_mutex_unlock (&j.lock);
  g_mutex_clear (&j.lock);
  g_cond_clear (&j.done);
}

void
train_lanes_free (TrainLanes *l)
{
  if (!l)
    return;
  for (int i = 1; i < l->n; i++)
    kern_model_free (l->models[i]);
  g_free (l->models);
  g_free (l);
}

/* --- sums ----------------------------------------------------------------- */

/* Floats per task of a sum: a block of dst and of each source stay in
 * cache while the sources are added. */
enum { SUM_BLOCK = 16384 };

typedef struct {
  float *dst;
  const float *const *src;
  int n;
  gsize len;
} SumJob;

static void
sum_block (gpointer ctx, int task, KernModel *model G_GNUC_UNUSED)
{
  SumJob *s = ctx;
  gsize lo = (gsize) task * SUM_BLOCK, hi = MIN (lo + SUM_BLOCK, s->len);
  for (int g = 0; g < s->n; g++)
    {
      const float *src = s->src[g];
      for (gsize i = lo; i < hi; i++)
        s->dst[i] += src[i];
    }
}

void
train_lanes_sum (TrainLanes *l, float *dst, const float *const *src, int n, gsize len)
{
  SumJob s = { .dst = dst, .src = src, .n = n, .len = len };
  gsize tasks = (len + SUM_BLOCK - 1) / SUM_BLOCK;
  g_return_if_fail (tasks <= G_MAXINT);
  train_lanes_run (l, (int) tasks, sum_block, &s);
}
