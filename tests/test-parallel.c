/*
 * test-parallel.c — one run's math on several host threads
 * (train/lanes.h): every task runs once, sums add in the same order
 * whatever the lanes, a model clone computes the same numbers, and the
 * policies that spread their gradients over lanes (all-reduce, pipeline
 * replicas) give bit for bit the same run on one thread or three.
 */
#include "config.h"

#include <string.h>

#include "kernels/kernels.h"
#include "train/lanes.h"
#include "tests/util.h"

typedef struct {
  gint *runs;             /* (tasks) times each task ran */
  KernModel *own;         /* lane 0's model */
  gint others;            /* tasks run on a clone */
} CountJob;

static void
count_task (gpointer ctx, int task, KernModel *model)
{
  CountJob *j = ctx;
  g_usleep (2000); /* long enough for the pool's threads to take some */
  g_atomic_int_inc (&j->runs[task]);
  if (model != j->own)
    g_atomic_int_inc (&j->others);
}

static void
test_lanes (void)
{
  int hidden[] = { 8 };
  KernModel *m = kern_mlp_new (6, hidden, 1, 3, KERN_LOSS_XENT, NULL);
  for (int threads = 1; threads <= 5; threads++)
    {
      train_set_threads (threads);
      TrainLanes *l = train_lanes_new (m, FALSE);
      g_assert_cmpint (train_lanes_count (l), ==, threads);
      for (int tasks = 0; tasks <= 40; tasks += 7)
        {
          CountJob j = { .runs = g_new0 (gint, MAX (tasks, 1)), .own = m };
          train_lanes_run (l, tasks, count_task, &j);
          for (int t = 0; t < tasks; t++)
            g_assert_cmpint (j.runs[t], ==, 1);
          if (threads == 1 || tasks <= 1)
            g_assert_cmpint (j.others, ==, 0);
          else
            g_assert_cmpint (j.others, >, 0);
          g_free (j.runs);
        }
      train_lanes_free (l);
      /* measured compute time: one kernel at a time */
      l = train_lanes_new (m, TRUE);
      g_assert_cmpint (train_lanes_count (l), ==, 1);
      train_lanes_free (l);
    }
  train_set_threads (1);
  kern_model_free (m);
}

/* train_lanes_sum adds the sources in order, element by element: the same
 * floats as the plain loop, on any number of lanes, over a length that is
 * not a multiple of its blocks. */
static void
test_sum (void)
{
  const gsize len = 100003;
  const int n = 5;
  g_autofree float *want = g_new (float, len);
  g_autofree float *got = g_new (float, len);
  float *src[5];
  GRand *rng = g_rand_new_with_seed (9);
  for (int g = 0; g < n; g++)
    {
      src[g] = g_new (float, len);
      for (gsize i = 0; i < len; i++)
        src[g][i] = (float) g_rand_double_range (rng, -1e3, 1e3);
    }
  for (gsize i = 0; i < len; i++)
    {
      want[i] = (float) i * 1e-3f;
      for (int g = 0; g < n; g++)
        want[i] += src[g][i];
    }
  KernModel *m = kern_softmax_new (4, 3);
  for (int threads = 1; threads <= 4; threads++)
    {
      train_set_threads (threads);
      TrainLanes *l = train_lanes_new (m, FALSE);
      for (gsize i = 0; i < len; i++)
        got[i] = (float) i * 1e-3f;
      train_lanes_sum (l, got, (const float *const *) src, n, len);
      g_assert_cmpmem (got, len * sizeof (float), want, len * sizeof (float));
      train_lanes_free (l);
    }
  train_set_threads (1);
  for (int g = 0; g < n; g++)
    g_free (src[g]);
  g_rand_free (rng);
  kern_model_free (m);
}

/* A clone has the model's architecture and computes its numbers. */
static void
test_clone (void)
{
  int hidden[] = { 16, 8 };
  KernModel *m = kern_mlp_new (12, hidden, 2, 4, KERN_LOSS_XENT, NULL);
  KernModel *c = m->ops->clone (m);
  g_assert_nonnull (c);
  g_assert_cmpstr (c->ops->name, ==, m->ops->name);
  gsize P = m->ops->n_params (m);
  g_assert_cmpuint (c->ops->n_params (c), ==, P);
  g_autofree float *params = g_new (float, P);
  g_autofree float *g1 = g_new (float, P);
  g_autofree float *g2 = g_new (float, P);
  m->ops->init (m, params, 3);
  KernDataset *train, *test;
  kern_dataset_blobs (64, 4, 12, 4, 1.0, 5, &train, &test);
  double l1 = m->ops->loss_grad (m, params, train->x, train->y, 32, g1);
  double l2 = c->ops->loss_grad (c, params, train->x, train->y, 32, g2);
  g_assert_cmpfloat (l1, ==, l2);
  g_assert_cmpmem (g1, P * sizeof (float), g2, P * sizeof (float));
  kern_dataset_free (train);
  kern_dataset_free (test);
  kern_model_free (c);
  kern_model_free (m);
}

/* 96 workers of batch 16: 16 workers per task, six tasks a round, each
 * long enough that the pool's threads take their share. */
static const char scenario[] =
  "[scenario]\nname = p\nseed = 4\niterations = 8\n"
  "[cluster]\nworkers = 96\n"
  "[device]\nflops = 1GFLOPS\n"
  "[network]\nbandwidth = 10Gbps\nlatency = 5us\n"
  "[model]\nkind = mlp\nhidden = 256,128\nfeatures = 256\nclasses = 5\nsamples = 4096\n"
  "test_samples = 128\neval_samples = 256\nbatch = 16\nlr = 0.1\neval_every = 96\n"
  "[policy]\nkind = allreduce\n";

/* The run on `threads` host threads. */
static TestRun *
run_on (int threads, const char *const *sets)
{
  train_set_threads (threads);
  TestRun *r = test_run_collect (scenario, sets);
  train_set_threads (1);
  return r;
}

static void
assert_identical (const TestRun *a, const TestRun *b)
{
  g_assert_cmpuint (a->metrics->len, ==, b->metrics->len);
  g_assert_cmpuint (a->metrics->len, >, 2);
  for (guint i = 0; i < a->metrics->len; i++)
    {
      const TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
      const TestMetric *y = &g_array_index (b->metrics, TestMetric, i);
      g_assert_cmpfloat (x->t, ==, y->t);
      g_assert_cmpfloat (x->loss, ==, y->loss);
      g_assert_cmpfloat (x->accuracy, ==, y->accuracy);
    }
  g_assert_cmpfloat (a->sum.final_loss, ==, b->sum.final_loss);
  g_assert_cmpfloat (a->sum.sim_time, ==, b->sum.sim_time);
  /* and it trained */
  const TestMetric *first = &g_array_index (a->metrics, TestMetric, 0);
  g_assert_cmpfloat (a->sum.final_loss, <, 0.9 * first->loss);
}

static void
test_identical (gconstpointer data)
{
  const char *const *sets = data;
  TestRun *one = run_on (1, sets);
  TestRun *three = run_on (3, sets);
  assert_identical (one, three);
  test_run_free (one);
  test_run_free (three);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  static const char *const allreduce[] = { NULL };
  static const char *const adam[] = { "model.optimizer=adam", "model.lr=0.01", NULL };
  /* 48 replicas of two stages: 16 replicas per task */
  static const char *const pipeline[] = { "policy.kind=pipeline", "policy.replicas=48",
                                          "policy.microbatches=4", NULL };
  g_test_add_func ("/parallel/lanes", test_lanes);
  g_test_add_func ("/parallel/sum", test_sum);
  g_test_add_func ("/parallel/clone", test_clone);
  g_test_add_data_func ("/parallel/identical/allreduce", allreduce, test_identical);
  g_test_add_data_func ("/parallel/identical/allreduce-adam", adam, test_identical);
  g_test_add_data_func ("/parallel/identical/pipeline", pipeline, test_identical);
  return g_test_run ();
}
