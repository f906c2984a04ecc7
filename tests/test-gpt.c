/*
 * test-gpt.c — kind = gpt (kernels/gpt.c) and its synthetic language
 * (kernels/language.c): gradients against finite differences, causality,
 * FLOP counts, agreement with the timing transformer's layer table, the
 * entropy floor of the language reached by a run, every data-parallel
 * policy, thread counts, and the refusals of measured pipeline stages and
 * of a tensor size that does not divide the heads (test-gpt-tensor.c
 * tests the split itself).  Nothing here compares against stored bits of real math.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/rng.h"
#include "config/models.h"
#include "train/lanes.h"
#include "tests/util.h"

/* A tiny GPT's shape for the unit tests. */
#define TV 5
#define TS 4
#define TD 8
#define TH 2
#define TL 2

/* Central differences (L(w + h e_i) - L(w - h e_i)) / 2h on a few
 * parameters of every layer that has some, head tied or untied.  The loss
 * is float: with h = 1e-2 its rounding (u = 2^-24 on a loss near log V,
 * amplified by a few hundred operations: about 1e-5 absolute) divided by 2h
 * gives 1e-3, and the truncation h^2 |L'''| / 6 another 1e-4 or so, hence
 * |fd - g| <= 2e-3 + 2e-2 |g|. */
static void
check_gradient (gboolean untied)
{
  KernModel *m = kern_gpt_new (TV, TS, TD, TH, TL, untied, NULL, NULL);
  g_assert_nonnull (m);
  gsize P = m->ops->n_params (m);
  g_autofree float *w = test_noisy_params (m, 7);
  g_autofree float *g = g_new (float, P);
  float x[3 * (TS + 1)];
  int y[3] = { 0, 0, 0 };
  test_random_tokens (x, 3, TS, TV, 11);
  m->ops->loss_grad (m, w, x, y, 3, g);
  int checked_layers = 0;
  for (int l = 0; l < m->n_layers; l++)
    {
      const KernLayer *ly = &m->layers[l];
      if (ly->params == 0)
        continue;
      checked_layers++;
      for (int k = 0; k < 6; k++)
        {
          gsize i = ly->param_offset + (gsize) k * (ly->params - 1) / 5;
          float keep = w[i];
          const float h = 1e-2f;
          w[i] = keep + h;
          double up = m->ops->loss_grad (m, w, x, y, 3, NULL);
          w[i] = keep - h;
          double down = m->ops->loss_grad (m, w, x, y, 3, NULL);
          w[i] = keep;
          double fd = (up - down) / (2.0 * (double) h);
          if (fabs (fd - g[i]) > 2e-3 + 2e-2 * fabs (g[i]))
            g_error ("%s parameter %" G_GSIZE_FORMAT ": gradient %g, finite difference %g",
                     ly->name, i, g[i], fd);
        }
    }
  /* embed, per block ln_1, qkv, proj, ln_2, fc, proj, then ln_f (and the
   * untied head) */
  g_assert_cmpint (checked_layers, ==, 1 + 6 * TL + 1 + (untied ? 1 : 0));
  kern_model_free (m);
}

static void
test_gradient_tied (void)
{
  check_gradient (FALSE);
}

static void
test_gradient_untied (void)
{
  check_gradient (TRUE);
}

/* Changing symbol j of a row changes no logit of the positions t < j (which
 * see symbols 0 .. t only), and does change position j's. */
static void
test_causal (void)
{
  KernModel *m = kern_gpt_new (TV, TS, TD, TH, TL, FALSE, NULL, NULL);
  g_autofree float *w = test_noisy_params (m, 3);
  float x[TS + 1], x2[TS + 1];
  float z[TS * TV], z2[TS * TV];
  test_random_tokens (x, 1, TS, TV, 5);
  for (int j = 0; j < TS; j++)
    {
      memcpy (x2, x, sizeof x);
      x2[j] = (float) (((int) x[j] + 1) % TV);
      kern_gpt_logits (m, w, x, 1, z);
      kern_gpt_logits (m, w, x2, 1, z2);
      for (int t = 0; t < j; t++)
        for (int c = 0; c < TV; c++)
          g_assert_cmpfloat (z[t * TV + c], ==, z2[t * TV + c]);
      gboolean changed = FALSE;
      for (int c = 0; c < TV; c++)
        changed = changed || z[j * TV + c] != z2[j * TV + c];
      g_assert_true (changed);
    }
  kern_model_free (m);
}

/* flops_forward/backward are the layer sums, and the products' rows hold
 * the closed forms: per sample, per block 2 S D (3D) + 2 S^2 D + 2 S^2 D +
 * 2 S D^2 + 2 (2 S D F) forward, plus the head's 2 S D V. */
static void
test_flops (void)
{
  KernModel *m = kern_gpt_new (TV, TS, TD, TH, TL, TRUE, NULL, NULL);
  for (int n = 1; n <= 5; n += 4)
    {
      double f = 0, b = 0;
      for (int l = 0; l < m->n_layers; l++)
        {
          f += m->layers[l].fwd_flops_fixed + m->layers[l].fwd_flops * n;
          b += m->layers[l].bwd_flops_fixed + m->layers[l].bwd_flops * n;
        }
      g_assert_cmpfloat (m->ops->flops_forward (m, n), ==, f);
      g_assert_cmpfloat (m->ops->flops_backward (m, n), ==, b);
    }
  double S = TS, D = TD, F = 4 * TD, V = TV, gemm = 0;
  for (int l = 0; l < m->n_layers; l++)
    if (m->layers[l].kind == KERN_LAYER_GEMM || m->layers[l].kind == KERN_LAYER_ATTENTION)
      gemm += m->layers[l].fwd_flops;
  double want = TL * (2 * S * D * 3 * D + 4 * S * S * D + 2 * S * D * D + 4 * S * D * F)
                + 2 * S * D * V;
  g_assert_cmpfloat (gemm, ==, want);
  gsize params = (gsize) (TV + TS) * TD
                 + TL * (4 * TD + 3 * TD * TD + 3 * TD + TD * TD + TD + 8 * TD * TD + 5 * TD)
                 + 2 * TD + TD * TV;
  g_assert_cmpuint (m->ops->n_params (m), ==, params);
  kern_model_free (m);
}

/* The model a scenario of kind `kind` with the tiny shape builds. */
static KernModel *
model_of (const char *kind, const char *head)
{
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = t\nseed = 1\niterations = 1\n[cluster]\nworkers = 1\n"
    "[model]\nkind = %s\nblocks = %d\nwidth = %d\nheads = %d\nsequence = %d\n"
    "vocabulary = %d\nhead = %s\n[policy]\nkind = allreduce\n",
    kind, TL, TD, TH, TS, TV, head);
  SimConfig *c = test_load_one (text);
  g_autoptr (GError) error = NULL;
  KernModel *m = sim_model_new (c, NULL, &error);
  g_assert_no_error (error);
  sim_config_free (c);
  return m;
}

/* The real-math GPT describes itself with the timing transformer's rows
 * for the same shape: names, kinds, parameters and their offsets, weight
 * shapes, heads, vocabulary rows, and the forward FLOPs of every product. */
static void
check_agrees (const char *head)
{
  KernModel *g = model_of ("gpt", head), *t = model_of ("transformer", head);
  g_assert_cmpint (g->n_layers, ==, t->n_layers);
  g_assert_cmpuint (g->ops->n_params (g), ==, t->ops->n_params (t));
  for (int l = 0; l < g->n_layers; l++)
    {
      const KernLayer *a = &g->layers[l], *b = &t->layers[l];
      g_assert_cmpstr (a->name, ==, b->name);
      g_assert_cmpint (a->kind, ==, b->kind);
      g_assert_cmpuint (a->params, ==, b->params);
      g_assert_cmpuint (a->param_offset, ==, b->param_offset);
      g_assert_cmpint (a->heads, ==, b->heads);
      g_assert_cmpint (a->vocabulary, ==, b->vocabulary);
      g_assert_cmpint (a->n_weights, ==, b->n_weights);
      for (int k = 0; k < a->n_weights; k++)
        {
          g_assert_cmpuint (a->weight[k].offset, ==, b->weight[k].offset);
          g_assert_cmpint (a->weight[k].rows, ==, b->weight[k].rows);
          g_assert_cmpint (a->weight[k].cols, ==, b->weight[k].cols);
          g_assert_cmpint (a->weight[k].has_bias, ==, b->weight[k].has_bias);
        }
      if (a->kind == KERN_LAYER_GEMM || a->kind == KERN_LAYER_ATTENTION)
        g_assert_cmpfloat (a->fwd_flops, ==, b->fwd_flops);
    }
  kern_model_free (g);
  kern_model_free (t);
}

static void
test_agrees_tied (void)
{
  check_agrees ("tied");
}

static void
test_agrees_untied (void)
{
  check_agrees ("untied");
}

/* With branching = 1 every context's law is the same up to which symbol it
 * favours, so H is that law's entropy whatever pi is:
 * -(1 - e + e/V) log(1 - e + e/V) - (V - 1) (e/V) log(e/V); the floor of
 * S predictions lies between H and H(X_1 | X_0) <= log V. */
static void
test_entropy (void)
{
  for (int V = 2; V <= 32; V *= 4)
    {
      KernLanguage *l = kern_language_new (V, 1, 9);
      double e = KERN_LANGUAGE_SMOOTHING, top = 1 - e + e / V, low = e / V;
      double H = -top * log (top) - (V - 1) * low * log (low);
      g_assert_cmpfloat_with_epsilon (kern_language_entropy (l), H, 1e-12);
      double f = kern_language_floor (l, 8);
      g_assert_cmpfloat (f, >=, H - 1e-12);
      g_assert_cmpfloat (f, <=, H + (log (V) - H) / 8 + 1e-12);
      kern_language_free (l);
    }
  /* richer contexts: between 0 and log V */
  KernLanguage *l = kern_language_new (16, 4, 3);
  g_assert_cmpfloat (kern_language_entropy (l), >, 0.0);
  g_assert_cmpfloat (kern_language_entropy (l), <, log (16.0));
  kern_language_free (l);
}

/* Rows of S + 1 symbols in [0, V), the label the last. */
static void
test_dataset (void)
{
  KernDataset *tr, *te;
  kern_dataset_language (50, 20, 7, 2, 9, 4, &tr, &te);
  g_assert_cmpint (tr->d, ==, 10);
  g_assert_cmpint (tr->k, ==, 7);
  g_assert_cmpint (te->n, ==, 20);
  for (int i = 0; i < tr->n; i++)
    {
      for (int t = 0; t < tr->d; t++)
        {
          float v = tr->x[i * tr->d + t];
          g_assert_true (v >= 0 && v < 7 && v == floorf (v));
        }
      g_assert_cmpint (tr->y[i], ==, (int) tr->x[i * tr->d + tr->d - 1]);
    }
  kern_dataset_free (tr);
  kern_dataset_free (te);
}

/* The language and model of the training tests: 8 symbols, 2 favoured per
 * context, sequences of 16, a one-block GPT of width 32. */
static const char base_scenario[] =
  "[scenario]\nname = gpt\nseed = 5\niterations = 300\n"
  "[cluster]\nworkers = 1\n"
  "[model]\neval_samples = 256\ntest_samples = 64\neval_every = 100\nkind = gpt\nvocabulary = 8\nbranching = 2\nsequence = 16\nwidth = 32\n"
  "heads = 2\nblocks = 1\nbatch = 16\nsamples = 4096\noptimizer = adam\nlr = 0.01\n"
  "[policy]\nkind = allreduce\n[trace]\ndetail = summary\n";

/* One worker on the language of base_scenario, Adam at lr 0.003, gets its
 * evaluated loss, in nats per predicted symbol, within 0.05 of the floor
 * (H(X_1 | X_0) + 15 H) / 16 in 1,000 steps of 16 sequences (about 3 s
 * here), and not below it by more than 0.05: the loss is measured on 256
 * x 16 predictions, whose mean has a standard error near 0.016 nats (a
 * prediction's loss varies by about 1 nat), so 0.05 is three of them. */
static void
test_entropy_floor (void)
{
  static const char *const sets[] = { "scenario.iterations=1000", "model.lr=0.003", NULL };
  TestRun *r = test_run_collect (base_scenario, sets);
  KernLanguage *l = kern_language_new (8, 2, 5);
  double floor_ = kern_language_floor (l, 16), loss = r->sum.final_loss;
  g_test_message ("loss %.4f, floor %.4f, entropy rate %.4f", loss, floor_,
                  kern_language_entropy (l));
  g_assert_cmpfloat (loss, <=, floor_ + 0.05);
  g_assert_cmpfloat (loss, >=, floor_ - 0.05);
  /* uniform guessing, the start: log V */
  TestMetric *first = &g_array_index (r->metrics, TestMetric, 0);
  g_assert_cmpfloat (fabs (first->loss - log (8.0)), <, 0.1);
  kern_language_free (l);
  test_run_free (r);
}

/* Every data-parallel policy, and the pipeline (its math stacked at the
 * iteration's start), trains it: 4 workers, 20 steps, the last evaluation
 * below the first. */
static void
test_policies (void)
{
  static const char *const policies[] = {
    "kind = ps\nconsistency = bsp\n", "kind = ps\nconsistency = ssp\n",
    "kind = ps\nconsistency = async\n", "kind = allreduce\n", "kind = local-sgd\n",
    "kind = gossip\n", "kind = fedavg\n", "kind = hogwild\n",
    "kind = allreduce\ncompression = top-k\n",
    "kind = pipeline\nlayout = 2x2x1\nmicrobatches = 4\n",
  };
  for (gsize i = 0; i < G_N_ELEMENTS (policies); i++)
    {
      g_autofree char *a = test_replaced (base_scenario, "kind = allreduce\n", policies[i]);
      g_autofree char *b = test_replaced (a, "workers = 1", "workers = 4");
      g_autofree char *c = test_replaced (b, "iterations = 300", "iterations = 20");
      g_autofree char *text = test_replaced (c, "eval_every = 100", "eval_every = 0");
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpuint (r->metrics->len, >=, 2);
      double first = g_array_index (r->metrics, TestMetric, 0).loss;
      double last = g_array_index (r->metrics, TestMetric, r->metrics->len - 1).loss;
      g_autofree char *name = g_strdelimit (g_strdup (policies[i]), "\n", ' ');
      g_test_message ("%s: %.4f -> %.4f", name, first, last);
      if (!(last < first))
        g_error ("policy %s: loss %g did not fall below %g", policies[i], last, first);
      test_run_free (r);
    }
}

/* The same run on one host thread and on two: the same evaluations. */
static void
test_threads (void)
{
  g_autofree char *a = test_replaced (base_scenario, "workers = 1", "workers = 4");
  g_autofree char *text = test_replaced (a, "iterations = 300", "iterations = 10");
  TestRun *r[2];
  for (int t = 0; t < 2; t++)
    {
      train_set_threads (t + 1);
      r[t] = test_run_collect (text, NULL);
    }
  train_set_threads (1);
  test_assert_same_runs (r[0], r[1]);
  test_run_free (r[0]);
  test_run_free (r[1]);
}

/* Pipeline stages timed by the host's measured math and a tensor size
 * that does not divide the heads (2 here) are refused up front, in one
 * line naming the key; so are keys out of gpt's range. */
static void
test_refusals_gpt (void)
{
  static const TestRefusal cases[] = {
    { "[policy]\nkind = allreduce\n",
      "[device]\ncompute_time = measured\n[policy]\nkind = pipeline\nstages = 2\n",
      "[model] head: tied shares the token embedding" },
    { "[policy]\nkind = allreduce\n",
      "[policy]\nkind = pipeline\nstages = 2\nstage_layers = 3,13\n",
      "[policy] stage_layers: stage 2 would begin at layer h.0.attn.score" },
    { "kind = allreduce\n", "kind = allreduce\ntensor = 4\n", "[policy] tensor" },
    { "vocabulary = 8", "vocabulary = 300", "[model] vocabulary" },
    { "branching = 2", "branching = 9", "[model] branching" },
    { "heads = 2", "heads = 3", "[model] heads" },
    { "width = 32", "width = 4096", "[model] width" },
    { "kind = gpt\n", "kind = gpt\npositions = 32\n", "[model] positions" },
  };
  g_autofree char *text = test_replaced (base_scenario, "workers = 1", "workers = 2");
  test_refusals (text, cases, G_N_ELEMENTS (cases));
}

/* A bare kind = gpt takes the kind's own values of the keys it shares with
 * the timing transformer (whose GPT-2 defaults are beyond its ranges); a
 * value the scenario gives stays. */
static void
test_defaults (void)
{
  SimConfig *c = test_load_one ("[scenario]\nname = g\n[model]\nkind = gpt\n");
  g_assert_cmpint (base_values_int (c->values, "model.vocabulary"), ==, 8);
  g_assert_cmpint (base_values_int (c->values, "model.blocks"), ==, 2);
  g_assert_cmpint (base_values_int (c->values, "model.width"), ==, 64);
  g_assert_cmpint (base_values_int (c->values, "model.heads"), ==, 4);
  g_assert_cmpint (base_values_int (c->values, "model.sequence"), ==, 32);
  sim_config_free (c);
  c = test_load_one ("[scenario]\nname = g\n[model]\nkind = gpt\nvocabulary = 16\n");
  g_assert_cmpint (base_values_int (c->values, "model.vocabulary"), ==, 16);
  g_assert_cmpint (base_values_int (c->values, "model.width"), ==, 64);
  sim_config_free (c);
  /* the timing transformer keeps the table's */
  c = test_load_one ("[scenario]\nname = t\n[model]\nkind = transformer\n"
                     "[kernels]\nbackend = none\n");
  g_assert_cmpint (base_values_int (c->values, "model.vocabulary"), ==, 50257);
  sim_config_free (c);
}

/* Under kind = pipeline, [device] compute_time = measured runs each
 * stage's math when its operation starts, the default the iteration's at
 * its start.  With one micro-batch of 16 sequences of 16 (the token's
 * loss scale (1 / 16) / 16 exact) the sums are the same, so the losses
 * are too, bit for bit, with the balanced cut, with one between a block's
 * halves and with one before the head; on 1 and 2 threads. */
static void
test_pipeline_measured (void)
{
  static const char *const cuts[] = {
    "", "stage_layers = 8,8\n", "stage_layers = 14,2\n",
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cuts); c++)
    {
      g_autofree char *pipe = g_strconcat ("kind = pipeline\nstages = 2\nmicrobatches = 1\n",
                                           cuts[c], NULL);
      g_autofree char *a_text = test_replaced (base_scenario, "kind = allreduce\n", pipe);
      g_autofree char *b_text = test_replaced (a_text, "workers = 1", "workers = 2");
      g_autofree char *text = test_replaced (b_text, "kind = gpt\n", "kind = gpt\nhead = untied\n");
      static const char *const model[] = { "scenario.iterations=40", NULL };
      static const char *const measured[] = { "scenario.iterations=40",
                                              "device.compute_time=measured", NULL };
      TestRun *a = test_run_collect (text, model);
      for (int t = 1; t <= 2; t++)
        {
          train_set_threads (t);
          TestRun *b = test_run_collect (text, measured);
          g_assert_cmpuint (a->metrics->len, ==, b->metrics->len);
          g_assert_cmpuint (a->metrics->len, >=, 2);
          for (guint i = 0; i < a->metrics->len; i++)
            {
              double x = g_array_index (a->metrics, TestMetric, i).loss;
              double y = g_array_index (b->metrics, TestMetric, i).loss;
              if (memcmp (&x, &y, sizeof x) != 0)
                g_error ("cut %" G_GSIZE_FORMAT ", evaluation %u: loss %a stacked, %a staged",
                         c, i, x, y);
            }
          test_run_free (b);
        }
      train_set_threads (1);
      const TestMetric *first = &g_array_index (a->metrics, TestMetric, 0);
      g_assert_cmpfloat (a->sum.final_loss, <, first->loss);
      test_run_free (a);
    }
}

/* The layers cut into pipeline stages (kern_stage_new) at every place the
 * layer table allows (before each row not `joined`: embed, each block's
 * ln_1 and ln_2, ln_f, lm_head, lm_loss), one micro-batch or four: each
 * micro-batch's loss and the summed gradient are the bits of the whole
 * model's on the same micro-batches (test_stages_match; the token's loss
 * scale (1 / B) / S is a power of two times the whole model's 1 / (n S)).
 * Tied, only the cuts that keep lm_head with embed are stages: one. */
static void
check_stages (gboolean untied)
{
  g_autoptr (GError) error = NULL;
  KernModel *m = kern_gpt_new (TV, TS, TD, TH, TL, untied, NULL, &error);
  g_assert_no_error (error);
  int B = 4, L = m->n_layers;
  g_autofree float *x = g_new (float, (gsize) B * m->d);
  g_autofree int *y = g_new0 (int, B);
  test_random_tokens (x, B, TS, TV, 7);
  g_autofree float *params = test_noisy_params (m, 7);
  g_autofree int *starts = g_new (int, L);
  int n_starts = 0;
  for (int i = 0; i < L; i++)
    if (!m->layers[i].joined)
      starts[n_starts++] = i;
  /* embed, ln_1 and ln_2 of each block, ln_f, lm_head, lm_loss */
  g_assert_cmpint (n_starts, ==, 1 + 2 * TL + 3);
  for (int M = 1; M <= 4; M *= 4)
    {
      int whole[] = { L };
      test_stages_match (m, params, x, y, B, M, whole, 1);
      if (!untied)
        continue;
      for (int c = 1; c < n_starts; c++)
        {
          int two[] = { starts[c], L - starts[c] };
          test_stages_match (m, params, x, y, B, M, two, 2);
        }
      g_autofree int *each = g_new (int, n_starts);
      for (int c = 0; c < n_starts; c++)
        each[c] = (c + 1 < n_starts ? starts[c + 1] : L) - starts[c];
      test_stages_match (m, params, x, y, B, M, each, n_starts);
    }
  kern_model_free (m);
}

static void
test_stages_untied (void)
{
  check_stages (TRUE);
}

static void
test_stages_tied (void)
{
  check_stages (FALSE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gpt/gradient/tied", test_gradient_tied);
  g_test_add_func ("/gpt/gradient/untied", test_gradient_untied);
  g_test_add_func ("/gpt/causal", test_causal);
  g_test_add_func ("/gpt/stages/untied", test_stages_untied);
  g_test_add_func ("/gpt/stages/tied", test_stages_tied);
  g_test_add_func ("/gpt/pipeline-measured", test_pipeline_measured);
  g_test_add_func ("/gpt/flops", test_flops);
  g_test_add_func ("/gpt/timing-agrees/tied", test_agrees_tied);
  g_test_add_func ("/gpt/timing-agrees/untied", test_agrees_untied);
  g_test_add_func ("/gpt/language/entropy", test_entropy);
  g_test_add_func ("/gpt/language/dataset", test_dataset);
  g_test_add_func ("/gpt/train/entropy-floor", test_entropy_floor);
  g_test_add_func ("/gpt/train/policies", test_policies);
  g_test_add_func ("/gpt/train/threads", test_threads);
  g_test_add_func ("/gpt/refusals", test_refusals_gpt);
  g_test_add_func ("/gpt/defaults", test_defaults);
  return g_test_run ();
}
