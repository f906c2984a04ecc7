/*
 * test-gpt-tensor.c — tensor parallelism of kind = gpt's real math
 * (kernels/gpt-tensor.c): the split gradient against the one-device one
 * (the same bits at T = 1, within a derived tolerance at T = 2 and 4), the
 * layers it splits and the all-reduces it runs against what the timing
 * side cuts (policies/tensor.c), what each rank holds, runs under the
 * all-reduce and pipeline policies that learn what T = 1 learns, thread
 * counts, and the refusal of a T that does not divide the heads.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "policies/policy.h"
#include "train/lanes.h"
#include "tests/util.h"

/* The shape of the unit tests: 4 heads, so T = 1, 2, 4 divide them; a
 * vocabulary of 11, which 2 and 4 do not divide (uneven cuts). */
#define TV 11
#define TS 5
#define TD 16
#define TH 4
#define TL 2
#define TN 3          /* sequences per batch */

static const double U = 0x1p-24;   /* float's unit roundoff */

/* The tiny GPT on the fixed-order backend (NULL) or on `be`. */
static KernModel *
tiny (gboolean untied, KernBackend *be)
{
  KernModel *m = kern_gpt_new (TV, TS, TD, TH, TL, untied, be, NULL);
  g_assert_nonnull (m);
  return m;
}

/* The loss and gradient of T ranks at w on x. */
static double
split_grad (KernModel *m, int T, const float *w, const float *x, float *g)
{
  GError *error = NULL;
  KernTensorPlan *p = kern_tensor_plan_new (m, T, &error);
  g_assert_no_error (error);
  g_assert_cmpint (kern_tensor_ranks (p), ==, T);
  int y[TN] = { 0 };
  double loss = kern_tensor_loss_grad (p, w, x, y, TN, g);
  kern_tensor_plan_free (p);
  return loss;
}

/* T = 1 is gpt.c's computation step for step: the same bits, loss and
 * every gradient entry, tied and untied. */
static void
test_one_rank_bits (void)
{
  for (int untied = 0; untied < 2; untied++)
    {
      KernModel *m = tiny (untied, NULL);
      gsize P = m->ops->n_params (m);
      g_autofree float *w = test_noisy_params (m, 7);
      g_autofree float *g1 = g_new (float, P), *gt = g_new (float, P);
      float x[TN * (TS + 1)];
      int y[TN] = { 0 };
      test_random_tokens (x, TN, TS, TV, 11);
      double l1 = m->ops->loss_grad (m, w, x, y, TN, g1);
      double lt = split_grad (m, 1, w, x, gt);
      g_assert_cmpfloat (l1, ==, lt);
      g_assert_cmpint (memcmp (g1, gt, P * sizeof (float)), ==, 0);
      kern_model_free (m);
    }
}

/* The tolerance of a split gradient entry i against the one-device g_i.
 *
 * Where the two differ.  On the fixed-order backend a product element is
 * one sum formed in double and rounded once, so a column-split product
 * (each rank's columns of it) is the same bits as the whole one, and the
 * element-wise passes are the same functions (gpt-private.h) on the same
 * inputs.  The computations part only where the ranks sum: a row-split
 * output (2 per block), a column-split layer's input gradient (2 per
 * block and the head's), the embedding (exact: one non-zero per
 * element) and the loss's sum of exponentials (in double: below float's
 * rounding).  There the whole side rounds s = sum_k a_k b_k once and the
 * split side T partial sums, then adds them in float: each differs from
 * s by at most (T + 1) u sum_k |a_k b_k| (T roundings of partials, T - 1
 * additions, the whole side's one; u = 2^-24), i.e. a relative error of
 * e = (T + 1) u on that intermediate where its terms do not cancel.
 *
 * How far it travels.  A relative error e of an intermediate moves what
 * depends on it by at most kappa e, kappa the condition number of the
 * layers between.  On the path from any of these N = 4 L + 1 sums to a
 * gradient entry lie layer norms (kappa = gamma / sigma: gains near 1 and
 * row deviations of the order of the 0.3 noise here, so below 16),
 * softmaxes over S = 5 scores, GELUs and products with weights of norm
 * about 1: we take 16 for the norms and a factor 4 for the rest, A = 64,
 * and, the paths from different sums adding, a total amplification N A.
 * An entry whose own terms cancel is not held to a relative bound: its
 * absolute share is taken at the gradient's largest entry, |g|_inf.
 * Hence
 *
 *   |split_i - whole_i| <= N A (T + 1) u (|g_i| + |g|_inf)
 *
 * about 1.7e-4 (|g_i| + |g|_inf) at T = 4, L = 2; the entries found stay
 * below 1 % of it.  That it still discriminates is checked below: the
 * gradient at parameters with two ranks' rows of one W_o swapped (a
 * misplaced shard) lies thousands of times beyond it. */
static double
tolerance (int T, double gi, double gmax)
{
  double N = 4 * TL + 1, A = 64;
  return N * A * (T + 1) * U * (fabs (gi) + gmax);
}

/* The split gradient within `tolerance` of the one-device one, the loss
 * within its share (the loss is one more sum, at the same bound). */
static void
check_close (gboolean untied, int T, KernBackend *be)
{
  KernModel *m = tiny (untied, be);
  gsize P = m->ops->n_params (m);
  g_autofree float *w = test_noisy_params (m, 7 + T);
  g_autofree float *g1 = g_new (float, P), *gt = g_new (float, P);
  float x[TN * (TS + 1)];
  int y[TN] = { 0 };
  test_random_tokens (x, TN, TS, TV, 13 + T);
  double l1 = m->ops->loss_grad (m, w, x, y, TN, g1);
  double lt = split_grad (m, T, w, x, gt);
  double gmax = 0, worst = 0;
  for (gsize i = 0; i < P; i++)
    gmax = MAX (gmax, fabs (g1[i]));
  for (gsize i = 0; i < P; i++)
    {
      double d = fabs ((double) gt[i] - g1[i]), tol = tolerance (T, g1[i], gmax);
      worst = MAX (worst, d / tol);
      if (d > tol)
        g_error ("T = %d, %s head, entry %" G_GSIZE_FORMAT ": %.9g vs %.9g, |diff| %.3g > %.3g",
                 T, untied ? "untied" : "tied", i, gt[i], g1[i], d, tol);
    }
  g_assert_cmpfloat (fabs (lt - l1), <=, tolerance (T, l1, 0));
  g_test_message ("T = %d, %s head: loss %.9f vs %.9f, worst |diff| %.3g of the tolerance",
                  T, untied ? "untied" : "tied", lt, l1, worst);

  /* a misplaced shard: ranks 0 and 1 of block 0's W_o rows swapped */
  int proj = 1 + 5;                      /* embed, then h.0's sixth row */
  g_assert_cmpstr (m->layers[proj].name, ==, "h.0.attn.proj");
  const KernWeight *wo = &m->layers[proj].weight[0];
  gsize rows = (gsize) (TD / T) * TD;
  g_autofree float *ws = g_memdup2 (w, P * sizeof (float));
  memcpy (ws + wo->offset, w + wo->offset + rows, rows * sizeof (float));
  memcpy (ws + wo->offset + rows, w + wo->offset, rows * sizeof (float));
  m->ops->loss_grad (m, ws, x, y, TN, g1);
  double beyond = 0;
  for (gsize i = 0; i < P; i++)
    beyond = MAX (beyond, fabs ((double) gt[i] - g1[i]) / tolerance (T, g1[i], gmax));
  g_test_message ("misplaced shard: %.3g x the tolerance", beyond);
  g_assert_cmpfloat (beyond, >, 100);
  kern_model_free (m);
}

static void
test_close (void)
{
  KernBackend *blas = kern_backend_cpu_new_full (FALSE);
  for (int T = 2; T <= 4; T *= 2)
    for (int untied = 0; untied < 2; untied++)
      check_close (untied, T, NULL);
  /* OpenBLAS rounds a product of another shape its own way: a
   * column-split product too, one more rounding per element, within
   * the same bound (2 u against (T + 1) u) */
  for (int T = 2; T <= 4; T *= 2)
    check_close (TRUE, T, blas);
  kern_backend_free (blas);
}

/* Same inputs, same bits; and a plan reused across batch sizes. */
static void
test_deterministic (void)
{
  KernModel *m = tiny (FALSE, NULL);
  gsize P = m->ops->n_params (m);
  g_autofree float *w = test_noisy_params (m, 5);
  g_autofree float *a = g_new (float, P), *b = g_new (float, P);
  float x[2 * TN * (TS + 1)];
  int y[2 * TN] = { 0 };
  test_random_tokens (x, 2 * TN, TS, TV, 3);
  KernTensorPlan *p = kern_tensor_plan_new (m, 4, NULL);
  double la = kern_tensor_loss_grad (p, w, x, y, TN, a);
  kern_tensor_loss_grad (p, w, x, y, 2 * TN, b);   /* grows the scratch */
  double lb = kern_tensor_loss_grad (p, w, x, y, TN, b);
  g_assert_cmpfloat (la, ==, lb);
  g_assert_cmpint (memcmp (a, b, P * sizeof (float)), ==, 0);
  /* two groups at once: each its own call's bits */
  float *gs[2] = { a, b };
  double ls[2];
  g_autofree float *c = g_new (float, P);
  kern_tensor_loss_grad_groups (p, w, x, y, TN, 2, gs, ls);
  double lc = kern_tensor_loss_grad (p, w, x + TN * (TS + 1), y, TN, c);
  g_assert_cmpfloat (ls[1], ==, lc);
  g_assert_cmpint (memcmp (b, c, P * sizeof (float)), ==, 0);
  g_assert_cmpfloat (ls[0], ==, la);
  kern_tensor_plan_free (p);
  kern_model_free (m);
}

/* The math splits the layers the timing side cuts and runs the
 * all-reduces it prices: pol_tensor_split's column, row and vocabulary
 * layers are the plan's, the ones between (attention, GELU) and the whole
 * ones hold nothing split, and pol_tensor_collectives (no sequence
 * parallelism, no recomputation) lists the plan's all-reduces in the same
 * order, pass and floats per sample. */
static void
check_timing_agrees (gboolean untied, int T)
{
  KernModel *m = tiny (untied, NULL);
  KernTensorPlan *p = kern_tensor_plan_new (m, T, NULL);
  g_autofree PolTpSplit *split = g_new (PolTpSplit, m->n_layers);
  g_assert_true (pol_tensor_split (m->layers, m->n_layers, T, split, NULL));
  for (int l = 0; l < m->n_layers; l++)
    {
      KernTensorSplit k = kern_tensor_split (p, l);
      g_test_message ("%s: %s", m->layers[l].name, kern_tensor_split_name (k));
      switch (split[l])
        {
        case POL_TP_COLUMN:
          g_assert_cmpint (k, ==, KERN_TENSOR_COLUMN);
          break;
        case POL_TP_ROW:
          g_assert_cmpint (k, ==, KERN_TENSOR_ROW);
          break;
        case POL_TP_VOCABULARY:
          g_assert_cmpint (k, ==, KERN_TENSOR_VOCABULARY);
          break;
        default:
          g_assert_true (k == KERN_TENSOR_NONE || k == KERN_TENSOR_REPLICATED);
          break;
        }
    }
  int n;
  g_autofree PolTpCollective *timed = pol_tensor_collectives (m->layers, m->n_layers, split,
                                                              FALSE, NULL, &n);
  int n_fwd, n_bwd;
  const KernTensorAllReduce *ar = kern_tensor_collectives (p, &n_fwd, &n_bwd);
  g_assert_cmpint (n_fwd + n_bwd, ==, n);
  /* forward: the embedding, two a block, three for the loss; backward:
   * the head's and two a block */
  g_assert_cmpint (n_fwd, ==, 1 + 2 * TL + 3);
  g_assert_cmpint (n_bwd, ==, 1 + 2 * TL);
  for (int i = 0; i < n; i++)
    {
      g_assert_cmpint (timed[i].kind, ==, COMM_ALLREDUCE);
      g_assert_cmpint (timed[i].backward, ==, ar[i].pass == KERN_TENSOR_BACKWARD);
      g_assert_cmpfloat (timed[i].floats, ==, ar[i].floats);
      g_assert_cmpint (ar[i].pass, ==, i < n_fwd ? KERN_TENSOR_FORWARD : KERN_TENSOR_BACKWARD);
    }
  kern_tensor_plan_free (p);
  kern_model_free (m);
}

static void
test_timing_agrees (void)
{
  for (int T = 2; T <= 4; T *= 2)
    for (int untied = 0; untied < 2; untied++)
      check_timing_agrees (untied, T);
}

/* What rank t holds, its cuts in closed form: v_t = t V / T symbols of
 * wte (and of an untied head), all of wpe and the norms, 1/T of every
 * block matrix and column-split bias, the row-split biases whole; the
 * ranks' cuts tile each split dimension. */
static void
test_rank_params (void)
{
  for (int untied = 0; untied < 2; untied++)
    for (int T = 1; T <= 4; T *= 2)
      {
        KernModel *m = tiny (untied, NULL);
        KernTensorPlan *p = kern_tensor_plan_new (m, T, NULL);
        gsize D = TD, F = 4 * TD, total = 0;
        for (int t = 0; t < T; t++)
          {
            gsize Vt = (gsize) ((t + 1) * TV / T - t * TV / T);
            gsize block = 4 * D + (D + 1) * 3 * D / T + D * D / T + D + (D + 1) * F / T
                          + F * D / T + D;
            gsize want = Vt * D + TS * D + TL * block + 2 * D + (untied ? D * Vt : 0);
            g_assert_cmpuint (kern_tensor_rank_params (p, t), ==, want);
            total += want;
          }
        /* summed: the model, plus T - 1 copies of what is whole on every rank */
        gsize whole = TS * D + TL * (4 * D + D + D) + 2 * D;
        g_assert_cmpuint (total, ==, m->ops->n_params (m) + (T - 1) * whole);
        for (int l = 0; l < m->n_layers; l++)
          {
            int lo, hi, end = 0;
            for (int t = 0; t < T; t++)
              {
                kern_tensor_cut (p, l, t, &lo, &hi);
                KernTensorSplit s = kern_tensor_split (p, l);
                if (s == KERN_TENSOR_NONE || s == KERN_TENSOR_REPLICATED)
                  continue;
                g_assert_cmpint (lo, ==, end);
                end = hi;
              }
            KernTensorSplit s = kern_tensor_split (p, l);
            if (s == KERN_TENSOR_VOCABULARY || l == m->n_layers - 2)
              g_assert_cmpint (end, ==, TV);
            else if (s == KERN_TENSOR_COLUMN || s == KERN_TENSOR_ROW)
              g_assert_cmpint (end, ==, strstr (m->layers[l].name, "qkv") ? TD
                               : s == KERN_TENSOR_COLUMN ? m->layers[l].weight[0].cols
                               : m->layers[l].weight[0].rows);
          }
        kern_tensor_plan_free (p);
        kern_model_free (m);
      }
}

/* The language and model of the training tests (as test-gpt.c's), 4
 * heads. */
static const char base_scenario[] =
  "[scenario]\nname = gpt\nseed = 5\niterations = 20\n"
  "[cluster]\nworkers = 2\n"
  "[model]\neval_samples = 256\ntest_samples = 64\neval_every = 5\nkind = gpt\nvocabulary = 8\n"
  "branching = 2\nsequence = 16\nwidth = 32\nheads = 4\nblocks = 1\nbatch = 16\n"
  "samples = 4096\noptimizer = adam\nlr = 0.01\n"
  "[policy]\nkind = allreduce\n[trace]\ndetail = summary\n";

/* Runs `text` with the data-parallel groups alike and T tensor ranks. */
static TestRun *
run_with (const char *text, const char *workers, const char *policy)
{
  g_autofree char *a = test_replaced (text, "workers = 2", workers);
  g_autofree char *b = test_replaced (a, "kind = allreduce\n", policy);
  return test_run_collect (b, NULL);
}

/* Two runs' evaluations at the same iterations equal within 1e-3 nats
 * and 4 predictions: a's step counter advances ka a training iteration,
 * b's kb (a pipeline counts every worker's update), and every evaluation
 * of a has one of b at its iteration.  Why 1e-3: 20 Adam steps on the same
 * batches, the gradients within about 1e-5 of each other relative (the
 * bound above at this model's size), each step moving a parameter by at
 * most lr = 0.01 whatever the gradient's size (Adam's normalised step),
 * so that the evaluated losses part by far less than 1e-3 nats, and the
 * accuracies by at most the few of the 4,096 predictions whose top two
 * logits tie within that. */
static void
assert_same_learning (TestRun *a, int ka, TestRun *b, int kb)
{
  guint matched = 0;
  for (guint i = 0; i < a->metrics->len; i++)
    {
      const TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
      const TestMetric *y = NULL;
      g_assert_cmpint (x->step % ka, ==, 0);
      for (guint j = 0; j < b->metrics->len && !y; j++)
        if (g_array_index (b->metrics, TestMetric, j).step * ka == x->step * kb)
          y = &g_array_index (b->metrics, TestMetric, j);
      g_assert_nonnull (y);
      g_test_message ("iteration %" G_GINT64_FORMAT ": %.9f vs %.9f", x->step / ka, x->loss,
                      y->loss);
      g_assert_cmpfloat (fabs (x->loss - y->loss), <=, 1e-3);
      g_assert_cmpfloat (fabs (x->accuracy - y->accuracy), <=, 4.0 / 4096);
      matched++;
    }
  g_assert_cmpuint (matched, >=, 4);
  const TestMetric *first = &g_array_index (a->metrics, TestMetric, 0);
  const TestMetric *last = &g_array_index (a->metrics, TestMetric, a->metrics->len - 1);
  g_assert_cmpint (last->step, ==, 20 * ka);
  g_assert_cmpfloat (last->loss, <, first->loss);
}

/* kind = allreduce: 2 data-parallel groups of 2 tensor ranks (4 workers)
 * learn what 2 workers of one rank learn. */
static void
test_allreduce (void)
{
  TestRun *a = run_with (base_scenario, "workers = 2", "kind = allreduce\n");
  TestRun *b = run_with (base_scenario, "workers = 4", "kind = allreduce\ntensor = 2\n");
  assert_same_learning (a, 2, b, 2);
  test_run_free (a);
  test_run_free (b);
}

/* kind = pipeline, layout data x pipeline x tensor: 2 x 2 x 2 learns what
 * 2 x 2 x 1 learns. */
static void
test_pipeline (void)
{
  TestRun *a = run_with (base_scenario, "workers = 4",
                         "kind = pipeline\nlayout = 2x2x1\nmicrobatches = 4\n");
  TestRun *b = run_with (base_scenario, "workers = 8",
                         "kind = pipeline\nlayout = 2x2x2\nmicrobatches = 4\n");
  assert_same_learning (a, 4, b, 8);
  test_run_free (a);
  test_run_free (b);
}

/* One host thread or two: the same evaluations, to the bit. */
static void
test_threads (void)
{
  TestRun *r[2];
  for (int t = 0; t < 2; t++)
    {
      train_set_threads (t + 1);
      r[t] = run_with (base_scenario, "workers = 8", "kind = allreduce\ntensor = 4\n");
    }
  train_set_threads (1);
  test_assert_same_runs (r[0], r[1]);
  test_run_free (r[0]);
  test_run_free (r[1]);
}

/* A T that does not divide the heads, from a scenario and from the plan,
 * in one line naming [policy] tensor; and one beyond the vocabulary. */
static void
test_refusals_tensor (void)
{
  static const TestRefusal cases[] = {
    { "kind = allreduce\n", "kind = allreduce\ntensor = 8\n", "[policy] tensor" },
    { "kind = allreduce\n", "kind = pipeline\nlayout = 1x1x8\n", "[policy] tensor" },
  };
  g_autofree char *text = test_replaced (base_scenario, "workers = 2", "workers = 8");
  test_refusals (text, cases, G_N_ELEMENTS (cases));
  /* 4 ranks share 4 heads but not a vocabulary of 2 */
  static const TestRefusal vocabulary[] = {
    { "kind = allreduce\n", "kind = allreduce\ntensor = 4\n", "[policy] tensor" },
  };
  g_autofree char *small = test_replaced (text, "vocabulary = 8", "vocabulary = 2");
  test_refusals (small, vocabulary, G_N_ELEMENTS (vocabulary));

  KernModel *m = kern_gpt_new (3, TS, 24, 6, 1, FALSE, NULL, NULL);
  struct { int T; const char *want; } plan_cases[] = {
    { 4, "4 ranks do not divide the 6 attention heads" },
    { 6, "6 ranks exceed the 3 symbols" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (plan_cases); i++)
    {
      GError *error = NULL;
      g_assert_null (kern_tensor_plan_new (m, plan_cases[i].T, &error));
      g_assert_error (error, KERN_TENSOR_ERROR, KERN_TENSOR_ERROR_RANKS);
      g_test_message ("%s", error->message);
      g_assert_true (g_str_has_prefix (error->message, "[policy] tensor: "));
      g_assert_nonnull (strstr (error->message, plan_cases[i].want));
      g_assert_nonnull (strstr (error->message, "; fix: "));
      g_assert_null (strchr (error->message, '\n'));
      g_error_free (error);
    }
  kern_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gpt-tensor/one-rank-bits", test_one_rank_bits);
  g_test_add_func ("/gpt-tensor/close", test_close);
  g_test_add_func ("/gpt-tensor/deterministic", test_deterministic);
  g_test_add_func ("/gpt-tensor/timing-agrees", test_timing_agrees);
  g_test_add_func ("/gpt-tensor/rank-params", test_rank_params);
  g_test_add_func ("/gpt-tensor/train/allreduce", test_allreduce);
  g_test_add_func ("/gpt-tensor/train/pipeline", test_pipeline);
  g_test_add_func ("/gpt-tensor/train/threads", test_threads);
  g_test_add_func ("/gpt-tensor/refusals", test_refusals_tensor);
  return g_test_run ();
}
