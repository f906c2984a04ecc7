/*
 * bench-kernels.c — how fast the emulator's real math runs, beside the BLAS
 * it is built on.
 *
 * The peer figure is cblas_sgemm on one large square product (N = 2048),
 * best of three, on the same thread count, beside dtsim's own fixed-order
 * product (kernels/gemm.c, what [kernels] reproducible = auto uses: the same
 * bits on every CPU) on the same matrices.  Against it, figures for an MLP
 * 784-512-512-10 with batch 64 per worker, all counting the model's exact
 * FLOPs (forward + backward, docs/kernels.md):
 *
 *   stacked   loss_grad_groups over 64 workers' batches (one GEMM per
 *             layer for the forward and input-gradient products);
 *   separate  64 calls of loss_grad, one per worker;
 *   runs      a whole training run of each policy (64 workers, the
 *             pipeline's 16; a tensor-parallel run's 16 groups of 4, each
 *             computing its batch on its ranks' column and row shards): the wall time of a run of 1 + N iterations
 *             minus that of a run of 1 iteration, so that set-up (data
 *             generation, first touch of the buffers) is not counted as
 *             training (best of three of each); on one host thread, then
 *             the all-reduce and the
 *             pipeline again on every core (train/lanes.h), beside
 *             as many single-thread sgemm.  Runs use the user's default
 *             (the fixed-order products); the runs marked "OpenBLAS" set
 *             [kernels] reproducible = false, so that the price of
 *             reproducibility shows in whole runs.
 *
 * Usage: bench-kernels [iterations]  (default 10 for the run)
 *        bench-kernels --peer  (three GFLOP/s on one line: sgemm, the
 *                               fixed-order product, and a step of 64
 *                               workers each on its own model
 *                               (own_models_gflops): the peer figures
 *                               bench/bench-policies.sh prints)
 * With BENCH_KERNELS_ONLY=TEXT[|TEXT...] in the environment, only the
 * training runs whose label contains one of the TEXTs are timed and
 * printed (the peer and the gradient figures always are), e.g.
 * BENCH_KERNELS_ONLY="tensor 4|all-reduce (ring".
 * Prints figures only; asserts nothing about time.
 */
#include "config.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "kernels/kernels.h"
#include "train/lanes.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "sim/load.h"

#define SQ 2048
#define WORKERS 64
#define BATCH 64
#define D 784
#define K 10

static double
now (void)
{
  return (double) g_get_monotonic_time () / 1e6;
}

/* GFLOP/s of cblas_sgemm on the square product, best of three; *fixed
 * gets kern_gemm_fixed's on the same matrices. */
static double
sgemm_gflops (double *fixed)
{
  gsize n = (gsize) SQ * SQ;
  float *a = g_new (float, n), *b = g_new (float, n), *c = g_new0 (float, n);
  for (gsize i = 0; i < n; i++)
    {
      a[i] = (float) ((i * 7919) % 1000) / 1000.0f;
      b[i] = (float) ((i * 104729) % 1000) / 1000.0f;
    }
  double best = 1e300, best_fixed = 1e300;
  for (int r = 0; r < 3; r++)
    {
      double t0 = now ();
      cblas_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, SQ, SQ, SQ, 1.0f, a, SQ,
                   b, SQ, 0.0f, c, SQ);
      best = MIN (best, now () - t0);
      t0 = now ();
      kern_gemm_fixed (FALSE, FALSE, SQ, SQ, SQ, 1.0f, a, SQ, b, SQ, 0.0f, c, SQ);
      best_fixed = MIN (best_fixed, now () - t0);
    }
  *fixed = 2.0 * SQ * (double) SQ * SQ / best_fixed / 1e9;
  g_free (a);
  g_free (b);
  g_free (c);
  return 2.0 * SQ * (double) SQ * SQ / best / 1e9;
}

/* GFLOP/s of the forward and backward of WORKERS workers' batches, each
 * worker on its own parameters (WORKERS vectors, none shared: the step of
 * a policy whose workers hold their own models, which no product can stack
 * across workers), one loss_grad call per worker, best of three.  No
 * optimizer pass is counted: this is the products' and layers' speed on
 * the shapes and the memory such a policy has, the most its step could
 * reach. */
static double
own_models_gflops (void)
{
  int hidden[] = { 512, 512 };
  KernModel *m = kern_mlp_new (D, hidden, 2, K, KERN_LOSS_XENT, NULL);
  gsize P = m->ops->n_params (m);
  double step_flops = m->ops->flops_forward (m, BATCH) + m->ops->flops_backward (m, BATCH);
  float **params = g_new (float *, WORKERS);
  for (int w = 0; w < WORKERS; w++)
    {
      params[w] = g_new (float, P);
      m->ops->init (m, params[w], (guint64) w + 1);
    }
  float *grad = g_new (float, P);
  KernDataset *train, *test;
  kern_dataset_blobs (WORKERS * BATCH, 16, D, K, 1.0, 7, &train, &test);
  double best = 1e300;
  for (int r = 0; r < 4; r++)   /* the first pass warms the scratch buffers */
    {
      double t0 = now ();
      for (int w = 0; w < WORKERS; w++)
        m->ops->loss_grad (m, params[w], train->x + (gsize) w * BATCH * D,
                           train->y + w * BATCH, BATCH, grad);
      if (r > 0)
        best = MIN (best, now () - t0);
    }
  for (int w = 0; w < WORKERS; w++)
    g_free (params[w]);
  g_free (params);
  g_free (grad);
  kern_dataset_free (train);
  kern_dataset_free (test);
  kern_model_free (m);
  return step_flops * WORKERS / best / 1e9;
}

/* Whether the run labelled `label` is to be timed: always without a
 * filter, else when it contains one of the filter's |-separated texts. */
static gboolean
run_wanted (const char *label, const char *filter)
{
  if (filter == NULL)
    return TRUE;
  g_auto (GStrv) texts = g_strsplit (filter, "|", -1);
  for (int i = 0; texts[i] != NULL; i++)
    if (texts[i][0] != '\0' && strstr (label, texts[i]) != NULL)
      return TRUE;
  return FALSE;
}

/* GFLOP/s of a whole training run of `policy` (bench scenario, `threads`
 * host threads): the work of `iters` iterations over the wall time they
 * add to a one-iteration run; < 0 on error. */
static double
run_gflops (const char *label, const char *policy, int iters, int threads)
{
  gboolean adam = strstr (label, "Adam") != NULL;
  gboolean per_worker = strstr (label, "per worker") != NULL;
  gboolean pipeline = strstr (policy, "pipeline") != NULL;
  gboolean blas = strstr (label, "OpenBLAS") != NULL;
  const char *tp = strstr (policy, "tensor = ");
  int T = tp ? atoi (tp + strlen ("tensor = ")) : 1;
  int workers = pipeline ? 16 : WORKERS;
  int hidden[] = { 512, 512 };
  KernModel *m = kern_mlp_new (D, hidden, 2, K, KERN_LOSS_XENT, NULL);
  double step_flops = m->ops->flops_forward (m, BATCH) + m->ops->flops_backward (m, BATCH);
  kern_model_free (m);
  double walls[2] = { G_MAXDOUBLE, G_MAXDOUBLE };
  train_set_threads (threads);
  /* best of three of each, as for the peer: the host's noise only slows */
  for (int rep = 0; rep < 6; rep++)
    {
      int r = rep % 2;
      g_autofree char *ini = NULL;
      int fd = g_file_open_tmp ("bench-kernels-XXXXXX.ini", &ini, NULL);
      g_autofree char *text = g_strdup_printf (
        "[scenario]\nname = bench\niterations = %d\n[cluster]\nworkers = %d\nservers = %d\n"
        "[model]\nkind = mlp\nhidden = 512,512\nbatch = %d\nfeatures = %d\nclasses = %d\n"
        "samples = %d\neval_samples = 64\ntest_samples = 64\neval_every = 1000000000\n"
        "optimizer = %s\nlr = %s\n[policy]\n%s[trace]\ndetail = summary\n"
        "[kernels]\nreproducible = %s\n",
        r == 0 ? 1 : 1 + iters, workers, per_worker ? 0 : 1, BATCH, D, K, WORKERS * BATCH * 4,
        adam ? "adam" : "sgd", adam ? "0.001" : "0.01", policy, blas ? "false" : "auto");
      if (fd < 0 || write (fd, text, strlen (text)) != (ssize_t) strlen (text))
        return -1;
      close (fd);
      GError *error = NULL;
      GPtrArray *configs = sim_scenario_load (ini, NULL, &error);
      if (!configs)
        {
          fprintf (stderr, "bench-kernels: %s: %s\n", label, error->message);
          return -1;
        }
      SimRunSummary sum;
      if (!sim_run_config (g_ptr_array_index (configs, 0), NULL, 0, NULL, &sum, &error))
        {
          fprintf (stderr, "bench-kernels: %s: %s\n", label, error->message);
          return -1;
        }
      walls[r] = MIN (walls[r], sum.wall_time);
      g_unlink (ini);
      g_ptr_array_unref (configs);
    }
  train_set_threads (1);
  /* every worker computes one batch per iteration (the pipeline's stages
   * share one: stages x replicas = workers, each a part of the model; a
   * tensor group's T workers one, each a 1/T share of the products) */
  double flops = step_flops * (pipeline ? workers / 2 : workers / T) * iters;
  return flops / (walls[1] - walls[0]) / 1e9;
}

int
main (int argc, char **argv)
{
  const char *threads = g_getenv ("OPENBLAS_NUM_THREADS");
  double fixed;
  if (argc > 1 && strcmp (argv[1], "--peer") == 0)
    {
      double sgemm = sgemm_gflops (&fixed);
      printf ("%.2f %.2f %.2f\n", sgemm, fixed, own_models_gflops ());
      return 0;
    }
  int iters = argc > 1 ? atoi (argv[1]) : 10;
  if (iters < 1)
    iters = 10;
  double peer = sgemm_gflops (&fixed);

  int hidden[] = { 512, 512 };
  KernModel *m = kern_mlp_new (D, hidden, 2, K, KERN_LOSS_XENT, NULL);
  gsize P = m->ops->n_params (m);
  double step_flops = m->ops->flops_forward (m, BATCH) + m->ops->flops_backward (m, BATCH);
  float *params = g_new (float, P);
  m->ops->init (m, params, 1);
  KernDataset *train, *test;
  kern_dataset_blobs (WORKERS * BATCH, 16, D, K, 1.0, 7, &train, &test);
  float **grads = g_new (float *, WORKERS);
  for (int w = 0; w < WORKERS; w++)
    grads[w] = g_new (float, P);
  double losses[WORKERS];

  /* warm the scratch buffers, then time */
  m->ops->loss_grad_groups (m, params, train->x, train->y, BATCH, WORKERS, grads, losses);
  int reps = 5;
  double t0 = now ();
  for (int r = 0; r < reps; r++)
    m->ops->loss_grad_groups (m, params, train->x, train->y, BATCH, WORKERS, grads, losses);
  double stacked = step_flops * WORKERS * reps / (now () - t0) / 1e9;
  t0 = now ();
  for (int r = 0; r < reps; r++)
    for (int w = 0; w < WORKERS; w++)
      m->ops->loss_grad (m, params, train->x + (gsize) w * BATCH * D, train->y + w * BATCH,
                         BATCH, grads[w]);
  double separate = step_flops * WORKERS * reps / (now () - t0) / 1e9;

  /* whole training runs, one per policy: 1 + iters iterations minus 1 */
  static const struct { const char *label, *policy; } runs[] = {
    { "all-reduce (ring, Adam)", "kind = allreduce\nalgorithm = ring\nbucket_size = 25MB\n" },
    { "parameter server BSP (SGD)", "kind = ps\nconsistency = bsp\n" },
    { "parameter server BSP (SGD), OpenBLAS", "kind = ps\nconsistency = bsp\n" },
    { "all-reduce (ring, Adam), OpenBLAS", "kind = allreduce\nalgorithm = ring\nbucket_size = 25MB\n" },
    { "parameter server BSP (Adam)", "kind = ps\nconsistency = bsp\n" },
    { "parameter server async (SGD)", "kind = ps\nconsistency = async\n" },
    { "parameter server, a server per worker", "kind = ps\nconsistency = bsp\n" },
    { "local SGD (H = 4)", "kind = local-sgd\nsync_every = 4\nalgorithm = ring\n" },
    { "gossip (ring)", "kind = gossip\n" },
    { "Hogwild! (lock-free)", "kind = hogwild\n" },
    { "pipeline 1F1B, 2 stages x 8 replicas", "kind = pipeline\nschedule = 1f1b\nreplicas = 8\nmicrobatches = 4\n" },
    { "all-reduce, tensor 4 (Adam)", "kind = allreduce\nalgorithm = ring\nbucket_size = 25MB\ntensor = 4\n" },
    { "all-reduce, tensor 4, ZeRO-1 (Adam)", "kind = allreduce\nalgorithm = ring\nbucket_size = 25MB\ntensor = 4\nzero = 1\n" },
    { "all-reduce, tensor 4 (Adam), OpenBLAS", "kind = allreduce\nalgorithm = ring\nbucket_size = 25MB\ntensor = 4\n" },
  };
  const char *only = g_getenv ("BENCH_KERNELS_ONLY");
  double shares[G_N_ELEMENTS (runs)];
  for (gsize k = 0; k < G_N_ELEMENTS (runs); k++)
    if (!run_wanted (runs[k].label, only))
      shares[k] = 0;
    else if ((shares[k] = run_gflops (runs[k].label, runs[k].policy, iters, 1)) < 0)
      return 1;
  /* one run on every core (train/lanes.h), where a policy spreads a
   * round's gradients over threads */
  int cores = (int) g_get_num_processors ();
  static const gsize spread[] = { 0, 10 };   /* all-reduce, pipeline */
  double spread_gflops[G_N_ELEMENTS (spread)];
  for (gsize i = 0; i < G_N_ELEMENTS (spread); i++)
    if (!run_wanted (runs[spread[i]].label, only))
      spread_gflops[i] = 0;
    else if ((spread_gflops[i] = run_gflops (runs[spread[i]].label, runs[spread[i]].policy,
                                             iters, cores)) < 0)
      return 1;

  printf ("threads: OPENBLAS_NUM_THREADS=%s\n", threads ? threads : "(unset: dtsim uses 1)");
  printf ("%-44s %8.1f GFLOP/s\n", "peer: cblas_sgemm 2048 x 2048 x 2048", peer);
  printf ("%-44s %8.1f GFLOP/s  %5.1f%% of sgemm\n", "fixed-order product 2048 x 2048 x 2048",
          fixed, 100 * fixed / peer);
  printf ("%-44s %8.1f GFLOP/s  %5.1f%% of sgemm\n", "stacked gradients (64 workers, 1 call)",
          stacked, 100 * stacked / peer);
  printf ("%-44s %8.1f GFLOP/s  %5.1f%% of sgemm\n", "separate gradients (64 calls)", separate,
          100 * separate / peer);
  printf ("whole training runs (%d workers but the pipeline's 16, batch %d, MLP 784-512-512-10;"
          " target 75%% of sgemm):\n", WORKERS, BATCH);
  for (gsize k = 0; k < G_N_ELEMENTS (runs); k++)
    if (shares[k] > 0)
      printf ("  %-42s %8.1f GFLOP/s  %5.1f%% of sgemm\n", runs[k].label, shares[k],
              100 * shares[k] / peer);
  printf ("one run on all %d cores (--threads %d; the same numbers as on one):\n", cores, cores);
  for (gsize i = 0; i < G_N_ELEMENTS (spread); i++)
    if (spread_gflops[i] > 0)
      printf ("  %-42s %8.1f GFLOP/s  %5.2fx one thread, %5.1f%% of %d x sgemm\n",
              runs[spread[i]].label, spread_gflops[i], spread_gflops[i] / shares[spread[i]],
              100 * spread_gflops[i] / (cores * peer), cores);

  for (int w = 0; w < WORKERS; w++)
    g_free (grads[w]);
  g_free (grads);
  g_free (params);
  kern_dataset_free (train);
  kern_dataset_free (test);
  kern_model_free (m);
  return 0;
}
