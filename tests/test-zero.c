/*
 * test-zero.c — ZeRO's sharded data parallelism ([policy] zero with kind =
 * allreduce; policies/allreduce.c, device/model.c): the bytes each stage
 * moves, the time of an iteration where nothing overlaps, the memory terms
 * of the ZeRO paper, that every stage learns exactly what stage 0 learns
 * (the MLP, and the CNN and the GPT with and without tensor parallelism),
 * and the refusals.
 *
 * The model is an MLP of three dense layers whose parameter counts W
 * divides (32 features, hidden 64,64, 12 classes: 32·64 + 64, 64·64 + 64,
 * 64·12 + 12), so that the ring's blocks are equal and its time is its
 * closed form.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "device/model.h"
#include "config/models.h"
#include "tests/util.h"

static char *tmpdir;

/* The dense layers' parameter counts, in order, and their sum. */
static const double dense[] = { 32 * 64 + 64, 64 * 64 + 64, 64 * 12 + 12 };
#define PSI (dense[0] + dense[1] + dense[2])

/* Link bandwidth (bytes/s) and latency (s) of the star. */
#define BW 1e9
#define LAT 5e-6

static char *
scenario (int workers, int zero, const char *optimizer, const char *extra)
{
  return g_strdup_printf ("[scenario]\niterations = 3\n"
                          "[cluster]\nworkers = %d\n"
                          "[model]\nkind = mlp\nhidden = 64,64\nfeatures = 32\nclasses = 12\n"
                          "batch = 16\noptimizer = %s\nsamples = 1024\n"
                          "[network]\ntopology = star\nbandwidth = %gBps\nlatency = %gs\n"
                          "[device]\nflops = 1TFLOPS\n"
                          "[policy]\nkind = allreduce\nalgorithm = ring\nzero = %d\n%s",
                          workers, optimizer, BW, LAT, zero, extra ? extra : "");
}

/* The ring's reduce-scatter or all-gather of n floats over p ranks on the
 * star: p - 1 steps, each a block of n / p floats across two links. */
static double
ring_half (int p, double n)
{
  return (p - 1) * (2 * LAT + 4.0 * (n / p) / BW);
}

/* Bytes on the wire in one iteration, summed over every rank: an all-reduce
 * (ring) moves each float 2(W - 1) times, a reduce-scatter or an all-gather
 * W - 1 times.  Stages 1 and 2 reduce-scatter the gradients and all-gather
 * the parameters: as much as the all-reduce; stage 3 gathers the parameters
 * twice: half as much again. */
static void
test_bytes (void)
{
  for (int W = 2; W <= 4; W += 2)
    for (int zero = 0; zero <= 3; zero++)
      {
        g_autofree char *text = scenario (W, zero, "sgd", NULL);
        g_autofree char *db = test_run_messages (tmpdir, text, "bytes");
        double times = zero == 3 ? 3 : 2;
        test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages"),
                           times * (W - 1) * 4 * PSI, 1e-12);
      }
  /* in bf16 the reductions carry 4-byte values by default, 2-byte ones with
   * gradient_precision = training */
  const char *modes[] = { "fp32", "training" };
  for (int k = 0; k < 2; k++)
    {
      g_autofree char *base = scenario (4, 1, "sgd", NULL);
      g_autofree char *mode = g_strdup_printf ("zero = 1\ngradient_precision = %s", modes[k]);
      g_autofree char *mixed = test_replaced (base, "flops = 1TFLOPS", "flops = 1TFLOPS\nprecision = bf16");
      g_autofree char *text = test_replaced (mixed, "zero = 1", mode);
      g_autofree char *db = test_run_messages (tmpdir, text, "bf16");
      test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages"),
                         2.0 * 3 * (k == 0 ? 4 : 2) * PSI, 1e-12);
    }
}

/* Without prefetch nothing overlaps under zero = 3: an iteration is the
 * step, the update of a shard, and per layer two all-gathers and a
 * reduce-scatter of its parameters one after another.  Under zero = 1 with
 * one bucket: the step, the reduce-scatter of the gradient, the update, the
 * all-gather of the parameters.  With prefetch, stage 3 is shorter. */
static void
test_no_overlap (void)
{
  const int W = 4;
  double comm3 = 0;
  for (gsize u = 0; u < G_N_ELEMENTS (dense); u++)
    comm3 += 3 * ring_half (W, dense[u]);
  struct {
    int zero;
    const char *extra;
    double comm;
  } cases[] = {
    { 3, "prefetch = false\n", comm3 },
    { 1, "bucket_size = 0\n", 2 * ring_half (W, PSI) },
    { 2, "bucket_size = 0\n", 2 * ring_half (W, PSI) },
  };
  double without = 0;
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *text = scenario (W, cases[k].zero, "adam", cases[k].extra);
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpuint (r->rows->len, ==, 3 * W);
      for (guint i = 0; i < r->rows->len; i++)
        {
          const TestRow *row = &g_array_index (r->rows, TestRow, i);
          /* compute = the step and the update; no straggler, no wait */
          test_assert_close (row->end - row->start - row->compute, cases[k].comm, 1e-9);
          g_assert_cmpfloat (row->wait, ==, 0);
          if (cases[k].zero == 3)
            without = row->end - row->start;
        }
      test_run_free (r);
    }
  g_autofree char *text = scenario (W, 3, "adam", NULL);
  TestRun *r = test_run_collect (text, NULL);
  const TestRow *row = &g_array_index (r->rows, TestRow, 0);
  g_assert_cmpfloat (row->end - row->start, <, without);
  /* a forward all-gather still runs before the first layer, a backward
   * one before the last and a reduce-scatter after the first */
  g_assert_cmpfloat (row->end - row->start - row->compute, >=,
                     2 * ring_half (W, dense[0]) - 1e-12);
  test_run_free (r);
}

/* The memory terms, for W workers and each stage, in fp32 and bf16, for
 * each optimizer: with Psi parameters and K bytes of optimizer state per
 * parameter, (P + G + K) Psi at stage 0; P Psi + G Psi + K Psi / N at 1;
 * P Psi + (G + K) Psi / N at 2; (P + G + K) Psi / N at 3 (P = G = 4 in
 * fp32, 2 in bf16 and fp16, whose K holds a 4-byte master copy too), plus
 * at stage 3 the gathered parameters of two consecutive layers. */
static void
test_memory (void)
{
  const char *optimizers[] = { "sgd", "momentum", "adam" };
  const double floats[] = { 0, 1, 2 };   /* optimizer state per parameter */
  const int W = 8;
  for (gsize o = 0; o < G_N_ELEMENTS (optimizers); o++)
    for (int bf16 = 0; bf16 <= 1; bf16++)
      {
        double P = bf16 ? 2 : 4, G = P, K = 4 * floats[o] + (bf16 ? 4 : 0);
        double N = W;
        double want[4][3] = {
          { P * PSI, G * PSI, K * PSI },
          { P * PSI, G * PSI, K * PSI / N },
          { P * PSI, G * PSI / N, K * PSI / N },
          { P * PSI / N, G * PSI / N, K * PSI / N },
        };
        double act0 = -1;
        for (int zero = 0; zero <= 3; zero++)
          {
            g_autofree char *base = scenario (W, zero, optimizers[o], NULL);
            g_autofree char *text = test_replaced (base, "flops = 1TFLOPS",
                                              bf16 ? "flops = 1TFLOPS\nprecision = bf16"
                                                   : "flops = 1TFLOPS\nprecision = fp32");
            GPtrArray *configs = test_load_scenario_text (text, NULL);
            SimConfig *c = g_ptr_array_index (configs, 0);
            KernModel *m = sim_model_new (c, NULL, NULL);
            SimMemoryTerms t;
            sim_memory_terms (c, m, &t);
            g_assert_cmpint (t.zero, ==, zero);
            test_assert_close (t.params, want[zero][0], 1e-15);
            test_assert_close (t.grads, want[zero][1], 1e-15);
            if (K > 0)
              test_assert_close (t.state, want[zero][2], 1e-15);
            else
              g_assert_cmpfloat (t.state, ==, 0);
            /* the two largest consecutive dense layers, with prefetch */
            g_assert_cmpfloat (t.gathered, ==, zero == 3 ? P * (dense[0] + dense[1]) : 0);
            if (act0 < 0)
              act0 = t.activations;
            g_assert_cmpfloat (t.activations, ==, act0);   /* not sharded */
            test_assert_close (t.total, t.params + t.grads + t.state + t.gathered
                               + t.activations, 1e-15);
            test_assert_close (sim_model_memory_bytes (c, m), t.total, 0);
            kern_model_free (m);
            g_ptr_array_unref (configs);
          }
      }
}

/* Every stage learns exactly what stage 0 learns, for each optimizer: the
 * optimizers are element-wise, so a shard updated with its own state is
 * the same floats as the whole updated at once, and the sum of the
 * gradients is formed the same way whatever collective delivers it.  Equal
 * bits, not a tolerance. */
static void
test_same_learning (void)
{
  const char *optimizers[] = { "sgd", "momentum", "adam" };
  for (gsize o = 0; o < G_N_ELEMENTS (optimizers); o++)
    {
      g_autofree char *text0 = scenario (4, 0, optimizers[o], NULL);
      TestRun *r0 = test_run_collect (text0, NULL);
      g_assert_cmpuint (r0->metrics->len, >=, 3);
      for (int zero = 1; zero <= 3; zero++)
        {
          g_autofree char *text = scenario (4, zero, optimizers[o], NULL);
          TestRun *r = test_run_collect (text, NULL);
          g_assert_cmpuint (r->metrics->len, ==, r0->metrics->len);
          for (guint i = 0; i < r->metrics->len; i++)
            {
              const TestMetric *a = &g_array_index (r0->metrics, TestMetric, i);
              const TestMetric *b = &g_array_index (r->metrics, TestMetric, i);
              g_assert_cmpint (a->step, ==, b->step);
              g_assert_cmpfloat (a->loss, ==, b->loss);
              g_assert_cmpfloat (a->accuracy, ==, b->accuracy);
            }
          g_assert_cmpfloat (r->sum.final_loss, ==, r0->sum.final_loss);
          test_run_free (r);
        }
      test_run_free (r0);
    }
}

/* The real-math models other than the MLP: a small CNN and a small GPT,
 * each also with two tensor ranks per data-parallel rank. */
static const char cnn_model[] =
  "[scenario]\nseed = 5\niterations = 6\n"
  "[cluster]\nworkers = 4\n"
  "[model]\nkind = cnn\nchannels = 4,8\nhidden = 16\nfeatures = 64\nclasses = 4\n"
  "samples = 512\ntest_samples = 64\neval_samples = 128\nbatch = 8\nlr = 0.05\n"
  "eval_every = 2\noptimizer = OPT\n"
  "[policy]\nkind = allreduce\nalgorithm = ring\nzero = 0\n";
static const char gpt_model[] =
  "[scenario]\nseed = 5\niterations = 6\n"
  "[cluster]\nworkers = 4\n"
  "[model]\nkind = gpt\nvocabulary = 8\nbranching = 2\nsequence = 8\nwidth = 16\n"
  "heads = 2\nblocks = 1\nbatch = 4\nsamples = 512\neval_samples = 64\n"
  "test_samples = 32\nlr = 0.01\neval_every = 2\noptimizer = OPT\n"
  "[policy]\nkind = allreduce\nalgorithm = ring\nzero = 0\n";

/* The same holds for kind = cnn and kind = gpt, with and without tensor
 * parallelism (each tensor rank's shard sharded among its data-parallel
 * peers): stages 1 to 3 (1 and 2 with tensor ranks) give stage 0's
 * evaluations to the bit. */
static void
test_same_learning_models (void)
{
  const char *const models[] = { cnn_model, gpt_model };
  const char *const optimizers[] = { "sgd", "adam" };
  const char *const tensors[] = { "zero = ", "tensor = 2\nzero = " };
  for (gsize m = 0; m < G_N_ELEMENTS (models); m++)
    for (gsize o = 0; o < G_N_ELEMENTS (optimizers); o++)
      for (gsize t = 0; t < G_N_ELEMENTS (tensors); t++)
        {
          g_autofree char *opt = test_replaced (models[m], "OPT", optimizers[o]);
          g_autofree char *base = test_replaced (opt, "zero = ", tensors[t]);
          TestRun *r0 = test_run_collect (base, NULL);
          g_assert_cmpuint (r0->metrics->len, >=, 3);
          const TestMetric *first = &g_array_index (r0->metrics, TestMetric, 0);
          g_assert_cmpfloat (r0->sum.final_loss, <, first->loss);
          /* zero = 3 is refused with tensor > 1 (test_zero_refusals' kin) */
          for (int zero = 1; zero <= (t == 0 ? 3 : 2); zero++)
            {
              g_autofree char *stage = g_strdup_printf ("zero = %d", zero);
              g_autofree char *text = test_replaced (base, "zero = 0", stage);
              TestRun *r = test_run_collect (text, NULL);
              g_test_message ("%s, %s, %s, zero = %d: final loss %.9f vs %.9f",
                              m == 0 ? "cnn" : "gpt", optimizers[o],
                              t == 0 ? "tensor = 1" : "tensor = 2", zero, r->sum.final_loss,
                              r0->sum.final_loss);
              g_assert_cmpuint (r->metrics->len, ==, r0->metrics->len);
              for (guint i = 0; i < r->metrics->len; i++)
                {
                  const TestMetric *a = &g_array_index (r0->metrics, TestMetric, i);
                  const TestMetric *b = &g_array_index (r->metrics, TestMetric, i);
                  g_assert_cmpint (a->step, ==, b->step);
                  g_assert_cmpfloat (a->loss, ==, b->loss);
                  g_assert_cmpfloat (a->accuracy, ==, b->accuracy);
                }
              g_assert_cmpfloat (r->sum.final_loss, ==, r0->sum.final_loss);
              test_run_free (r);
            }
          test_run_free (r0);
        }
}

/* One line naming the key and the fix for each combination that makes no
 * sense. */
static void
test_zero_refusals (void)
{
  const TestRefusal cases[] = {
    { "zero = 3", "zero = 4", "[policy] zero" },
    { "kind = allreduce", "kind = ps", "[policy] zero: applies only to kind = allreduce" },
    { "algorithm = ring", "algorithm = tree", "which [policy] algorithm = tree does not run" },
    { "zero = 3", "zero = 3\ncompression = top-k", "set compression = none or zero = 0" },
    { "zero = 3", "zero = 3\nchannels = 2", "[policy] channels: applies to all-reduces" },
    { "flops = 1TFLOPS", "flops = 1TFLOPS\noverlap_slowdown = 0.1",
      "[device] overlap_slowdown: not modelled" },
    { "zero = 3", "zero = 2\nprefetch = false", "[policy] prefetch: applies only with zero = 3" },
  };
  g_autofree char *base = scenario (4, 3, "sgd", NULL);
  test_refusals (base, cases, G_N_ELEMENTS (cases));
  /* the gradients' precision of a policy that reduces none */
  g_autofree char *local = test_replaced (base, "kind = allreduce", "kind = local-sgd");
  g_autofree char *text = test_replaced (local, "zero = 3", "gradient_precision = training");
  g_autofree char *msg = test_load_scenario_error (text);
  g_assert_nonnull (strstr (msg, "[policy] gradient_precision: applies only to kind = allreduce "
                                 "or pipeline"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-zero-XXXXXX", NULL);
  g_test_add_func ("/zero/bytes", test_bytes);
  g_test_add_func ("/zero/no-overlap", test_no_overlap);
  g_test_add_func ("/zero/memory", test_memory);
  g_test_add_func ("/zero/same-learning", test_same_learning);
  g_test_add_func ("/zero/same-learning/models", test_same_learning_models);
  g_test_add_func ("/zero/refusals", test_zero_refusals);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
