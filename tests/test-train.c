/*
 * test-train.c — the device mesh and the worker step (train/).
 *
 * The mesh: coordinates, ranks, groups and hosts follow the rank formula
 * r = sum_a coord_a x stride_a (data slowest, tensor fastest).  The step:
 * each of its parts equals what a schedule would do by hand with the
 * sampler, the model and the optimizer, bit for bit; a stacked step gives
 * the same bits on one thread or three; a batch drawn early and computed
 * later is the batch drawn now; each step's seconds come from the
 * compute-time callback for its own worker.
 */
#include "config.h"

#include <string.h>

#include "kernels/kernels.h"
#include "train/mesh.h"
#include "train/step.h"
#include "tests/util.h"

static void
test_mesh_coordinates (void)
{
  /* data 3, pipeline 4, tensor 2: stride tensor 1, pipeline 2, data 8 */
  int size[TRAIN_N_AXES] = { [TRAIN_AXIS_DATA] = 3, [TRAIN_AXIS_PIPELINE] = 4,
                             [TRAIN_AXIS_EXPERT] = 1, [TRAIN_AXIS_CONTEXT] = 1,
                             [TRAIN_AXIS_TENSOR] = 2 };
  TrainMesh *m = train_mesh_new (size, 5);
  g_assert_cmpint (train_mesh_ranks (m), ==, 3 * 4 * 2);
  for (int r = 0; r < 24; r++)
    {
      int d = train_mesh_coord (m, r, TRAIN_AXIS_DATA);
      int p = train_mesh_coord (m, r, TRAIN_AXIS_PIPELINE);
      int t = train_mesh_coord (m, r, TRAIN_AXIS_TENSOR);
      g_assert_cmpint (r, ==, d * 4 * 2 + p * 2 + t);
      g_assert_cmpint (train_mesh_coord (m, r, TRAIN_AXIS_EXPERT), ==, 0);
      g_assert_cmpint (train_mesh_host (m, r), ==, 5 + r);
      g_assert_cmpint (train_mesh_rank_at (m, r, TRAIN_AXIS_PIPELINE, 3), ==,
                       d * 4 * 2 + 3 * 2 + t);
      /* every group holds the rank, in coordinate order, the others' fixed */
      for (int a = 0; a < TRAIN_N_AXES; a++)
        {
          TrainGroup g = train_mesh_group (m, a, r);
          g_assert_cmpint (g.n, ==, size[a]);
          g_assert_cmpint (g.ranks[train_mesh_coord (m, r, a)], ==, r);
          for (int k = 0; k < g.n; k++)
            {
              g_assert_cmpint (g.ranks[k], ==, train_mesh_rank_at (m, r, a, k));
              g_assert_cmpint (g.hosts[k], ==, train_mesh_host (m, g.ranks[k]));
            }
        }
    }
  /* a tensor group is two consecutive hosts */
  TrainGroup tg = train_mesh_group (m, TRAIN_AXIS_TENSOR, 13);
  g_assert_cmpint (tg.hosts[1] - tg.hosts[0], ==, 1);
  train_mesh_free (m);

  TrainMesh *dp = train_mesh_new_data (7);
  TrainGroup g = train_mesh_group (dp, TRAIN_AXIS_DATA, 4);
  g_assert_cmpint (g.n, ==, 7);
  for (int k = 0; k < 7; k++)
    g_assert_cmpint (g.hosts[k], ==, k);
  train_mesh_free (dp);
}

/* A small MLP on blobs, the steps of `workers` workers over it. */
typedef struct {
  KernModel *model;
  KernDataset *train, *test;
  int workers, batch;
  gsize P;
} Fixture;

static void
fixture_init (Fixture *f, int workers, int batch)
{
  int hidden[] = { 16 };
  f->model = kern_mlp_new (10, hidden, 1, 4, KERN_LOSS_XENT, NULL);
  kern_dataset_blobs (400, 10, 10, 4, 3.0, 11, &f->train, &f->test);
  f->workers = workers;
  f->batch = batch;
  f->P = f->model->ops->n_params (f->model);
}

static void
fixture_clear (Fixture *f)
{
  kern_model_free (f->model);
  kern_dataset_free (f->train);
  kern_dataset_free (f->test);
}

static TrainSteps *
steps_new (Fixture *f, gboolean stacked, TrainComputeTime ct, gpointer ctx)
{
  TrainStepsSetup s = { .model = f->model, .train = f->train,
                        .samplers = train_samplers_new (f->train->n, f->workers, 3),
                        .parts = f->workers, .batch = f->batch, .slots = f->workers,
                        .stacked = stacked, .compute_time = ct, .ctx = ctx };
  return train_steps_new (&s);
}

/* An unstacked step with the optimizer is: each worker's next batch from
 * its own sampler, loss_grad at its own parameters, one optimizer step. */
static void
test_step_by_hand (void)
{
  Fixture f;
  fixture_init (&f, 3, 8);
  TrainSteps *ts = steps_new (&f, FALSE, NULL, NULL);
  TrainSampler *mine = train_samplers_new (f.train->n, f.workers, 3);
  KernOptConfig oc = { .kind = &kern_opt_adam, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999,
                       .eps = 1e-8 };
  float *own[3], *want[3], *grads[3], *wgrad = g_new (float, f.P);
  KernOptimizer *opt[3], *wopt[3];
  g_autofree float *x = g_new (float, (gsize) f.batch * 10);
  g_autofree int *y = g_new (int, f.batch), *idx = g_new (int, f.batch);
  for (int w = 0; w < 3; w++)
    {
      own[w] = g_new (float, f.P);
      f.model->ops->init (f.model, own[w], 100 + w);
      want[w] = g_memdup2 (own[w], f.P * sizeof (float));
      grads[w] = g_new (float, f.P);
      opt[w] = kern_optimizer_new (&oc, f.P);
      wopt[w] = kern_optimizer_new (&oc, f.P);
    }
  for (int round = 0; round < 4; round++)
    {
      double losses[3];
      TrainStep st = { .n = 3, .first = 0, .own = (const float *const *) own, .grads = grads,
                       .losses = losses, .opt = opt, .update = own };
      train_step (ts, &st);
      for (int w = 0; w < 3; w++)
        {
          train_sampler_next (&mine[w], f.batch, idx);
          kern_dataset_gather (f.train, idx, f.batch, x, y);
          double loss = f.model->ops->loss_grad (f.model, want[w], x, y, f.batch, wgrad);
          kern_optimizer_step (wopt[w], want[w], wgrad);
          g_assert_cmpfloat (loss, ==, losses[w]);
          g_assert_cmpmem (wgrad, f.P * sizeof (float), grads[w], f.P * sizeof (float));
          g_assert_cmpmem (want[w], f.P * sizeof (float), own[w], f.P * sizeof (float));
        }
    }
  for (int w = 0; w < 3; w++)
    {
      g_free (own[w]);
      g_free (want[w]);
      g_free (grads[w]);
      kern_optimizer_free (opt[w]);
      kern_optimizer_free (wopt[w]);
    }
  g_free (wgrad);
  train_samplers_free (mine, f.workers);
  train_steps_free (ts);
  fixture_clear (&f);
}

/* The gradients of a stacked step of 7 workers (batch 40: 7 tasks) on
 * `threads` lanes. */
static void
stacked_grads (Fixture *f, int threads, const float *params, float **grads)
{
  train_set_threads (threads);
  TrainSteps *ts = steps_new (f, TRUE, NULL, NULL);
  TrainStep st = { .n = f->workers, .first = 0, .params = params, .grads = grads };
  for (int round = 0; round < 2; round++)
    train_step (ts, &st);
  train_steps_free (ts);
  train_set_threads (1);
}

static void
test_step_stacked_threads (void)
{
  Fixture f;
  fixture_init (&f, 7, 40);
  g_autofree float *params = g_new (float, f.P);
  f.model->ops->init (f.model, params, 5);
  float *one[7], *three[7];
  for (int w = 0; w < 7; w++)
    {
      one[w] = g_new (float, f.P);
      three[w] = g_new (float, f.P);
    }
  stacked_grads (&f, 1, params, one);
  stacked_grads (&f, 3, params, three);
  for (int w = 0; w < 7; w++)
    {
      g_assert_cmpmem (one[w], f.P * sizeof (float), three[w], f.P * sizeof (float));
      g_free (one[w]);
      g_free (three[w]);
    }
  fixture_clear (&f);
}

/* A summed step of 7 workers (batch 100: tasks of ceil(256 / 100) = 3
 * workers) on `threads` lanes: written into sum, then (second round) added
 * to it; `want` gets the documented order from the step's own batches:
 * each task's loss_grad_sum, the tasks' sums added in task order. */
static void
summed_step (Fixture *f, int threads, const float *params, float *sum, float *want)
{
  train_set_threads (threads);
  TrainSteps *ts = steps_new (f, TRUE, NULL, NULL);
  g_assert_true (train_steps_sum_stacked (ts));
  float *scratch[7];
  for (int w = 0; w < 7; w++)
    scratch[w] = g_new (float, f->P);
  g_autofree float *task = g_new (float, f->P);
  double losses[7];
  for (int round = 0; round < 2; round++)
    {
      TrainStep st = { .n = f->workers, .first = 0, .params = params, .grads = scratch,
                       .sum = sum, .sum_add = round > 0, .losses = losses };
      train_step (ts, &st);
      for (int t = 0; t < 3; t++)
        {
          int w0 = 3 * t, n = MIN (3, 7 - w0);
          double tl[3];
          f->model->ops->loss_grad_sum (f->model, params, train_steps_x (ts, w0),
                                        train_steps_y (ts, w0), f->batch, n, task, tl);
          for (int i = 0; i < n; i++)
            g_assert_cmpfloat (tl[i], ==, losses[w0 + i]);
          for (gsize i = 0; i < f->P; i++)
            want[i] = round == 0 && t == 0 ? task[i] : want[i] + task[i];
        }
    }
  for (int w = 0; w < 7; w++)
    g_free (scratch[w]);
  train_steps_free (ts);
  train_set_threads (1);
}

static void
test_step_sum (void)
{
  Fixture f;
  fixture_init (&f, 7, 100);
  g_assert_cmpint (train_task_groups (f.batch), ==, 3);
  g_autofree float *params = g_new (float, f.P);
  f.model->ops->init (f.model, params, 5);
  g_autofree float *one = g_new (float, f.P), *want1 = g_new (float, f.P);
  g_autofree float *three = g_new (float, f.P), *want3 = g_new (float, f.P);
  summed_step (&f, 1, params, one, want1);
  summed_step (&f, 3, params, three, want3);
  g_assert_cmpmem (one, f.P * sizeof (float), want1, f.P * sizeof (float));
  g_assert_cmpmem (three, f.P * sizeof (float), want3, f.P * sizeof (float));
  g_assert_cmpmem (one, f.P * sizeof (float), three, f.P * sizeof (float));
  fixture_clear (&f);
}

/* Drawn at the step's start, computed later: the same gradient as a step
 * that draws and computes at once; and the samplers moved the same. */
static void
test_step_deferred (void)
{
  Fixture f;
  fixture_init (&f, 2, 16);
  TrainSteps *now = steps_new (&f, FALSE, NULL, NULL);
  TrainSteps *later = steps_new (&f, FALSE, NULL, NULL);
  g_autofree float *params = g_new (float, f.P);
  f.model->ops->init (f.model, params, 9);
  const float *own[1] = { params };
  g_autofree float *g_now = g_new (float, f.P), *g_later = g_new (float, f.P);
  g_autofree int *drawn = g_new (int, f.batch);
  for (int round = 0; round < 3; round++)
    {
      TrainStep a = { .n = 1, .first = 1, .own = own, .grads = &g_now };
      train_step (now, &a);
      TrainStep draw = { .n = 1, .first = 1, .drawn_into = drawn };
      g_assert_cmpfloat (train_step (later, &draw), ==, 0);
      TrainStep b = { .n = 1, .first = 1, .own = own, .grads = &g_later, .drawn = drawn };
      train_step (later, &b);
      g_assert_cmpmem (g_now, f.P * sizeof (float), g_later, f.P * sizeof (float));
    }
  train_steps_free (now);
  train_steps_free (later);
  fixture_clear (&f);
}

/* Each worker's seconds come from the callback, for its own id, and a
 * timing-only step (no model) is priced all the same. */
static double
seconds_of (gpointer ctx, int worker, double host)
{
  (void) host;
  int *calls = ctx;
  calls[worker]++;
  return 0.5 + worker;
}

static void
test_step_seconds (void)
{
  int calls[4] = { 0 };
  TrainStepsSetup s = { .model = NULL, .batch = 8, .slots = 4, .compute_time = seconds_of,
                        .ctx = calls };
  TrainSteps *ts = train_steps_new (&s);
  double sec[2];
  TrainStep st = { .n = 2, .first = 2, .seconds = sec };
  g_assert_cmpfloat (train_step (ts, &st), ==, 0);
  g_assert_cmpfloat (sec[0], ==, 2.5);
  g_assert_cmpfloat (sec[1], ==, 3.5);
  g_assert_cmpint (calls[2], ==, 1);
  g_assert_cmpint (calls[3], ==, 1);
  g_assert_cmpint (calls[0] + calls[1], ==, 0);
  train_steps_free (ts);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/train/mesh/coordinates", test_mesh_coordinates);
  g_test_add_func ("/train/step/by-hand", test_step_by_hand);
  g_test_add_func ("/train/step/stacked-threads", test_step_stacked_threads);
  g_test_add_func ("/train/step/sum", test_step_sum);
  g_test_add_func ("/train/step/deferred", test_step_deferred);
  g_test_add_func ("/train/step/seconds", test_step_seconds);
  return g_test_run ();
}
