/*
 * test-allreduce.c — the all-reduce data-parallel policy (docs/policies.md):
 * its closed-form iteration time, bucket scheduling, and the equivalence of
 * all-reduce SGD over N workers of batch b with single-worker SGD of batch N·b;
 * and kind = exchange, all-reduce's math with its gradients all-gathered.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "comm/collectives.h"
#include "policies/policy.h"
#include "device/model.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

/* worker, iteration, end - start, wait, compute + comm + wait */
typedef struct {
  double v[5];
} Row;

typedef struct {
  gint64 iteration;
  int bucket;
  double bytes, ready, start, end;
  const char *algorithm;   /* a registry name: lives as long as the process */
} Bucket;

typedef struct {
  GArray *iters;     /* Row */
  GArray *buckets;   /* Bucket */
  SimRunSummary sum;
} Result;

static void
on_iteration (gpointer ctx, int worker, gint64 iteration, double start, double end,
              double compute, double comm, double wait, gint64 staleness)
{
  Result *r = ctx;
  Row row = { { worker, (double) iteration, end - start, wait, compute + comm + wait } };
  g_array_append_val (r->iters, row);
  g_assert_cmpint (staleness, ==, 0);
}

static void
on_bucket (gpointer ctx, gint64 iteration, int bucket, double bytes, double ready,
           double start, double end, const char *algorithm)
{
  Result *r = ctx;
  Bucket b = { iteration, bucket, bytes, ready, start, end, algorithm };
  g_array_append_val (r->buckets, b);
}

static Result *
run_text (const char *text, const char *const *sets, SimConfig **config_out)
{
  Result *r = g_new0 (Result, 1);
  r->iters = g_array_new (FALSE, FALSE, sizeof (Row));
  r->buckets = g_array_new (FALSE, FALSE, sizeof (Bucket));
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .iteration = on_iteration,
                      .bucket = on_bucket };
  test_run_scenario_text (text, sets, &rec, &r->sum, config_out);
  return r;
}

static void
result_free (Result *r)
{
  g_array_unref (r->iters);
  g_array_unref (r->buckets);
  g_free (r);
}

static const char cluster[] =
  "[scenario]\nname = t\nseed = 5\niterations = 5\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = allreduce\nbucket_size = 0\n";

/* One bucket, contention none: T + C(4P bytes) + 2P / (flops × efficiency). */
static void
test_closed_form (void)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive" };
  for (gsize a = 0; a < G_N_ELEMENTS (algs); a++)
    for (int workers = 2; workers <= 8; workers++)
      {
        g_autofree char *s1 = g_strdup_printf ("policy.algorithm=%s", algs[a]);
        g_autofree char *s2 = g_strdup_printf ("cluster.workers=%d", workers);
        const char *sets[] = { s1, s2, NULL };
        Result *r = run_text (cluster, sets, NULL);
        const double T = 1e-3, l = 20e-6, B = 1e9 / 8, F = 1e9 * 0.5;
        const double P = 15 * 4 + 4;
        const double alpha = 2 * l, beta = 1 / B;
        double C = comm_cost (comm_lookup (algs[a]), COMM_ALLREDUCE, workers,
                                  (gsize) P, 4, alpha, beta, 0);
        if (strcmp (algs[a], "ring") == 0 && (int) P % workers == 0)
          test_assert_close (C, 2 * (workers - 1) * alpha
                             + 2.0 * (workers - 1) / workers * 4 * P * beta, 1e-12);
        const double iter = T + C + kern_sgd_flops ((gsize) P) / F;
        g_assert_cmpuint (r->iters->len, ==, 5 * (guint) workers);
        for (guint i = 0; i < r->iters->len; i++)
          {
            const double *row = g_array_index (r->iters, Row, i).v;
            test_assert_close (row[2], iter, 1e-9);
            test_assert_close (row[4], row[2], 1e-9);
            g_assert_cmpfloat (row[3], ==, 0.0);
          }
        test_assert_close (r->sum.sim_time, 5 * iter, 1e-9);
        g_assert_cmpint (r->sum.updates, ==, 5 * workers);
        result_free (r);
      }
}

/* Buckets: ordered, each after it is ready and after the previous one, and
 * overlapping backward makes the iteration shorter than with one bucket.
 * The model has two dense layers (15-3-4: 48 + 16 = 64 parameters) so that
 * the last layer's buckets are ready before backward ends. */
static void
test_buckets (void)
{
  const char *one[] = { "network.contention=max-min", "model.kind=mlp", "model.hidden=3", NULL };
  const char *many[] = { "network.contention=max-min", "policy.bucket_size=32B",
                         "device.step_time=-1", "model.kind=mlp", "model.hidden=3", NULL };
  const char *one_flops[] = { "network.contention=max-min", "device.step_time=-1",
                              "model.kind=mlp", "model.hidden=3", NULL };
  Result *a = run_text (cluster, one, NULL);
  g_assert_cmpuint (a->buckets->len, ==, 5); /* one bucket per iteration */
  Result *b = run_text (cluster, many, NULL);
  Result *c = run_text (cluster, one_flops, NULL);
  const int per_iter = (64 * 4 + 31) / 32; /* ceil(4P / bucket_size) */
  g_assert_cmpuint (b->buckets->len, ==, 5 * per_iter);
  double total = 0;
  for (guint i = 0; i < b->buckets->len; i++)
    {
      const Bucket *x = &g_array_index (b->buckets, Bucket, i);
      g_assert_cmpint (x->bucket, ==, (int) (i % per_iter));
      g_assert_cmpfloat (x->start, >=, x->ready);
      g_assert_cmpfloat (x->end, >, x->start);
      if (x->bucket > 0)
        {
          const Bucket *prev = x - 1;
          g_assert_cmpfloat (x->ready, >=, prev->ready);
          g_assert_cmpfloat (x->start, >=, prev->end);
        }
      if (x->iteration == 0)
        total += x->bytes;
    }
  g_assert_cmpfloat (total, ==, 64 * 4); /* the buckets cover the gradient */
  /* overlap: at least one bucket started before the last one was ready */
  const Bucket *first = &g_array_index (b->buckets, Bucket, 0);
  const Bucket *last = &g_array_index (b->buckets, Bucket, per_iter - 1);
  g_assert_cmpfloat (first->start, <, last->ready);
  /* the same math whatever the bucketing */
  test_assert_close (b->sum.final_loss, c->sum.final_loss, 1e-5);
  result_free (a);
  result_free (b);
  result_free (c);
}

/* Overlap that costs, in closed form.  Buckets of 16 floats cut the 15-3-4
 * MLP (64 parameters) into the last layer's 16 (bucket 0, ready at T f1
 * before backward ends) and three of the first layer, ready when backward
 * ends.  Each all-reduce starts o = bucket_overhead after it may and takes
 * C; while bucket 0's runs, compute takes 1 + s as long.  If compute
 * outlasts it (T (1 - f1) >= o + C / (1 + s)), backward ends at
 * T + C s / (1 + s); else at T f1 + o + (T (1 - f1) - o)(1 + s).  The
 * iteration is that end + 3 (o + C) + the update. */
static void
test_overlap_slowdown (void)
{
  const struct { double s, o, latency; gboolean outlasts; } cases[] = {
    { 0.5, 50e-6, 20e-6, TRUE },   /* C about 240 us */
    { 9, 0, 1e-3, FALSE },         /* C about 12 ms */
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *s1 = g_strdup_printf ("device.overlap_slowdown=%g", cases[k].s);
      g_autofree char *s2 = g_strdup_printf ("policy.bucket_overhead=%gs", cases[k].o);
      g_autofree char *s3 = g_strdup_printf ("network.latency=%gs", cases[k].latency);
      const char *sets[] = { s1, s2, s3, "policy.bucket_size=64B", "policy.algorithm=ring",
                             "model.kind=mlp", "model.hidden=3", NULL };
      Result *r = run_text (cluster, sets, NULL);
      const int W = 4, per_iter = 4;
      const double T = 1e-3, B = 1e9 / 8, F = 1e9 * 0.5, P = 64;
      const double s = cases[k].s, o = cases[k].o, alpha = 2 * cases[k].latency;
      double C = comm_cost (comm_lookup ("ring"), COMM_ALLREDUCE, W, 16, 4, alpha,
                                1 / B, 0);
      g_assert_cmpuint (r->buckets->len, ==, 5 * per_iter);
      const Bucket *b = &g_array_index (r->buckets, Bucket, 0);
      double f1 = b->ready / T; /* iteration 0 starts at 0 */
      g_assert_cmpfloat (f1, >, 0);
      g_assert_cmpfloat (f1, <, 1);
      g_assert_true ((T * (1 - f1) >= o + C / (1 + s)) == cases[k].outlasts);
      double end = cases[k].outlasts ? T + C * s / (1 + s)
                                     : T * f1 + o + (T * (1 - f1) - o) * (1 + s);
      test_assert_close (b[0].start, b[0].ready + o, 1e-12);
      test_assert_close (b[0].end - b[0].start, C, 1e-9);
      for (int j = 1; j < per_iter; j++)
        {
          test_assert_close (b[j].ready, end, 1e-9);
          test_assert_close (b[j].start, MAX (end, b[j - 1].end) + o, 1e-9);
          test_assert_close (b[j].end - b[j].start, C, 1e-9);
        }
      double iter = MAX (end, b[0].end) + 3 * (o + C) + kern_sgd_flops ((gsize) P) / F;
      for (guint i = 0; i < r->iters->len; i++)
        {
          const double *row = g_array_index (r->iters, Row, i).v;
          test_assert_close (row[2], iter, 1e-9);
          test_assert_close (row[4], row[2], 1e-9);
        }
      test_assert_close (r->sum.sim_time, 5 * iter, 1e-9);
      result_free (r);
    }
}

/* All-reduce SGD over N workers of batch b is single-worker SGD of batch N·b
 * on the concatenated batches. */
static void
test_matches_large_batch (void)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive" };
  const char *opts[] = { "sgd", "momentum", "adam" };
  for (gsize a = 0; a < G_N_ELEMENTS (algs); a++)
    for (gsize o = 0; o < G_N_ELEMENTS (opts); o++)
      {
        if (o > 0 && a > 0)
          continue; /* every algorithm with SGD, every optimizer with ring */
        g_autofree char *s1 = g_strdup_printf ("policy.algorithm=%s", algs[a]);
        g_autofree char *s2 = g_strdup_printf ("model.optimizer=%s", opts[o]);
        const char *sets[] = { s1, s2, "scenario.iterations=30", "cluster.workers=3",
                               o == 2 ? "model.lr=0.01" : "model.lr=0.1", NULL };
        SimConfig *c = NULL;
        Result *r = run_text (cluster, sets, &c);

        /* the reference: the same data, samplers and initial parameters */
        const int N = (int) c->workers, b = (int) c->batch;
        KernDataset *train = NULL, *test = NULL;
        kern_dataset_blobs ((int) c->samples, (int) c->test_samples, (int) c->features,
                            (int) c->classes, c->separation, (guint64) c->seed, &train, &test);
        KernModel *m = kern_softmax_new ((int) c->features, (int) c->classes);
        gsize P = m->ops->n_params (m);
        g_autofree float *params = g_new0 (float, P);
        g_autofree float *grad = g_new0 (float, P);
        m->ops->init (m, params, (guint64) c->seed);
        KernOptConfig oc = sim_opt_config (c);
        g_assert_true (oc.kind == kern_opt_lookup (opts[o]));
        KernOptimizer *opt = kern_optimizer_new (&oc, P);
        TrainSampler *s = train_samplers_new (train->n, N, (guint64) c->seed);
        g_autofree int *idx = g_new (int, N * b);
        g_autofree float *x = g_new (float, (gsize) N * b * train->d);
        g_autofree int *y = g_new (int, N * b);
        for (int it = 0; it < 30; it++)
          {
            for (int w = 0; w < N; w++)
              train_sampler_next (&s[w], b, idx + w * b);
            kern_dataset_gather (train, idx, N * b, x, y);
            m->ops->loss_grad (m, params, x, y, N * b, grad);
            kern_optimizer_step (opt, params, grad);
          }
        KernDataset eval = *train;
        eval.n = MIN (eval.n, (int) c->eval_samples);
        double loss, acc;
        m->ops->evaluate (m, params, &eval, &loss, &acc);
        test_assert_close (r->sum.final_loss, loss, 1e-5);
        g_assert_cmpfloat (loss, <, log ((double) c->classes)); /* it did learn */

        kern_optimizer_free (opt);
        train_samplers_free (s, N);
        kern_model_free (m);
        kern_dataset_free (train);
        kern_dataset_free (test);
        sim_config_free (c);
        result_free (r);
      }
}

/* [model] lr means the same in every policy: a BSP parameter server takes
 * one optimizer step per round with the mean of the round's gradients, as
 * all-reduce does, so both train the same model step for step (one server
 * or sharded; every optimizer), whatever their timing. */
static void
test_ps_bsp_same_math (void)
{
  const char *opts[] = { "model.optimizer=sgd", "model.optimizer=momentum",
                         "model.optimizer=adam" };
  for (gsize o = 0; o < G_N_ELEMENTS (opts); o++)
    for (int servers = 1; servers <= 3; servers += 2)
      {
        g_autofree char *srv = g_strdup_printf ("cluster.servers=%d", servers);
        const char *lr = o == 2 ? "model.lr=0.01" : "model.lr=0.1";
        const char *ar[] = { opts[o], lr, "scenario.iterations=30", "cluster.workers=3", NULL };
        const char *ps[] = { opts[o], lr, "scenario.iterations=30", "cluster.workers=3",
                             "policy.kind=ps", "policy.consistency=bsp", srv, NULL };
        Result *a = run_text (cluster, ar, NULL);
        Result *p = run_text (cluster, ps, NULL);
        g_assert_cmpint (a->sum.updates, ==, p->sum.updates);
        test_assert_close (p->sum.final_loss, a->sum.final_loss, 1e-5);
        g_assert_cmpfloat (a->sum.final_loss, <, log (4.0)); /* it did learn */
        result_free (a);
        result_free (p);
      }
}

/* A fixed straggler makes the others wait for it, every iteration. */
static void
test_straggler_wait (void)
{
  const char *sets[] = { "stragglers.model=fixed", "stragglers.slow=1", "stragglers.factor=3",
                         NULL };
  Result *r = run_text (cluster, sets, NULL);
  for (guint i = 0; i < r->iters->len; i++)
    {
      const double *row = g_array_index (r->iters, Row, i).v;
      test_assert_close (row[3], (int) row[0] == 1 ? 0.0 : (3 - 1) * 1e-3, 1e-9);
    }
  result_free (r);
}

/* kind = exchange: contention none, T + C_allgather(W blocks of P floats) +
 * 2P / (flops x efficiency) per iteration, every row's compute T + update,
 * no wait; and the math all-reduce does, to float rounding. */
static void
test_exchange (void)
{
  const char *algs[] = { "ring", "naive" };
  for (gsize a = 0; a < G_N_ELEMENTS (algs); a++)
    for (int workers = 2; workers <= 5; workers++)
      {
        g_autofree char *s1 = g_strdup_printf ("policy.algorithm=%s", algs[a]);
        g_autofree char *s2 = g_strdup_printf ("cluster.workers=%d", workers);
        const char *sets[] = { "policy.kind=exchange", s1, s2, NULL };
        TestRun *r = test_run_collect (cluster, sets);
        const double T = 1e-3, l = 20e-6, B = 1e9 / 8, F = 1e9 * 0.5;
        const double P = 15 * 4 + 4;
        double C = comm_cost (comm_lookup (algs[a]), COMM_ALLGATHER, workers,
                              (gsize) (workers * P), 4, 2 * l, 1 / B, 0);
        if (strcmp (algs[a], "ring") == 0)
          test_assert_close (C, (workers - 1) * (2 * l + 4 * P / B), 1e-12);
        const double update = kern_sgd_flops ((gsize) P) / F, iter = T + C + update;
        g_assert_cmpuint (r->rows->len, ==, 5 * (guint) workers);
        for (guint i = 0; i < r->rows->len; i++)
          {
            const TestRow *row = &g_array_index (r->rows, TestRow, i);
            test_assert_close (row->end - row->start, iter, 1e-9);
            test_assert_close (row->compute, T + update, 1e-9);
            test_assert_close (row->comm, C, 1e-9);
            g_assert_cmpfloat (row->wait, ==, 0.0);
          }
        test_assert_close (r->sum.sim_time, 5 * iter, 1e-9);
        const char *ar[] = { s2, NULL };
        Result *same = run_text (cluster, ar, NULL);
        test_assert_close (r->sum.final_loss, same->sum.final_loss, 1e-5);
        result_free (same);
        test_run_free (r);
      }
  /* an algorithm that does no all-gather is refused before anything runs */
  int refused = 0;
  for (const CommAlgorithm *const *alg = comm_all (); *alg; alg++)
    if (!comm_does (*alg, COMM_ALLGATHER))
      {
        refused++;
        g_autofree char *head = g_strndup (cluster, strstr (cluster, "[policy]") - cluster);
        g_autofree char *text = g_strdup_printf ("%s[policy]\nkind = exchange\n"
                                                 "algorithm = %s\n", head, (*alg)->name);
        g_autofree char *msg = test_load_scenario_error (text);
        g_assert_nonnull (strstr (msg, "[policy] algorithm"));
        g_assert_nonnull (strstr (msg, "all-gather"));
      }
  g_assert_cmpint (refused, >, 0); /* the check above ran */
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/allreduce/closed-form", test_closed_form);
  g_test_add_func ("/allreduce/buckets", test_buckets);
  g_test_add_func ("/allreduce/overlap-slowdown", test_overlap_slowdown);
  g_test_add_func ("/allreduce/matches-large-batch", test_matches_large_batch);
  g_test_add_func ("/allreduce/straggler-wait", test_straggler_wait);
  g_test_add_func ("/allreduce/ps-bsp-same-math", test_ps_bsp_same_math);
  g_test_add_func ("/allreduce/exchange", test_exchange);
  return g_test_run ();
}
