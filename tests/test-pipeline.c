/*
 * test-pipeline.c — the pipeline policy (docs/policies.md, "Pipeline"):
 * the closed-form iteration time and bubble of GPipe and 1F1B on uniform
 * stages with free communication, their peak stash, the balanced
 * partition, the schedule order, the equivalence of the pipelined MLP with
 * unpipelined training on the same batches, the rejected keys, the
 * per-stage device-memory check (each stage on its own device), and the
 * mesh of replicas x stages its trace records.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <unistd.h>
#include <math.h>
#include <string.h>
#include <sqlite3.h>

#include "kernels/kernels.h"
#include "policies/policy.h"
#include "device/model.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

typedef struct {
  GArray *iter_len;   /* double: end - start of every iteration row */
  GArray *stages;     /* PolStageStats */
  GArray *losses;     /* double: evaluated losses in order */
  SimRunSummary sum;
} Result;

static void
on_iteration (gpointer ctx, int worker G_GNUC_UNUSED, gint64 iteration G_GNUC_UNUSED,
              double start, double end, double compute, double comm, double wait,
              gint64 staleness G_GNUC_UNUSED)
{
  Result *r = ctx;
  double len = end - start;
  g_array_append_val (r->iter_len, len);
  test_assert_close (compute + comm + wait, len, 1e-9);
}

static void
on_stage (gpointer ctx, const PolStageStats *st)
{
  Result *r = ctx;
  g_array_append_val (r->stages, *st);
}

static void
on_metric (gpointer ctx, double t G_GNUC_UNUSED, gint64 step G_GNUC_UNUSED, double loss,
           double accuracy G_GNUC_UNUSED, double consensus G_GNUC_UNUSED)
{
  Result *r = ctx;
  g_array_append_val (r->losses, loss);
}

static Result *
run_text (const char *text, const char *const *sets)
{
  Result *r = g_new0 (Result, 1);
  r->iter_len = g_array_new (FALSE, FALSE, sizeof (double));
  r->stages = g_array_new (FALSE, FALSE, sizeof (PolStageStats));
  r->losses = g_array_new (FALSE, FALSE, sizeof (double));
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .iteration = on_iteration,
                      .stage = on_stage, .metric = on_metric };
  test_run_scenario_text (text, sets, &rec, &r->sum, NULL);
  return r;
}

static void
result_free (Result *r)
{
  g_array_unref (r->iter_len);
  g_array_unref (r->stages);
  g_array_unref (r->losses);
  g_free (r);
}

/* A timing workload of `layers` identical layers: no parameters (so the
 * optimizer takes no time), FWD FLOPs and ACT activations per sample. */
#define FWD 1e6
#define ACT 1000
static char *
uniform_workload (int layers)
{
  GString *s = g_string_new ("# input 100\n");
  for (int l = 0; l < layers; l++)
    g_string_append_printf (s, "layer%d 0 %g %d\n", l, FWD, ACT);
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp ("dtsim-pipe-XXXXXX.txt", &path, NULL);
  g_assert_cmpint (fd, >=, 0);
  g_assert_true (g_file_set_contents (path, s->str, -1, NULL));
  close (fd);
  g_string_free (s, TRUE);
  return g_steal_pointer (&path);
}

/* p identical stages, m micro-batches, free communication: every iteration
 * takes (m + p - 1)(t_f + t_b), a stage idles (p - 1)(t_f + t_b) of it, and
 * the peak stash is m (GPipe) or min(p - s, m) (1F1B). */
static void
test_uniform (void)
{
  const int cases[][2] = { { 4, 8 }, { 4, 2 }, { 3, 1 }, { 2, 6 }, { 1, 4 } };
  const char *schedules[] = { "gpipe", "1f1b" };
  const double F = 1e9;      /* FLOP/s, efficiency 1 */
  const int iterations = 3;
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    for (gsize k = 0; k < G_N_ELEMENTS (schedules); k++)
      {
        int p = cases[c][0], m = cases[c][1], n = 4, batch = n * m;
        g_autofree char *wl = uniform_workload (p);
        g_autofree char *text = g_strdup_printf (
          "[scenario]\nname = u\nseed = 1\niterations = %d\n"
          "[cluster]\nworkers = %d\n"
          "[device]\nflops = %g\nefficiency = 1\n"
          "[network]\nbandwidth = 1e18\nlatency = 0\ncontention = none\n"
          "[model]\nkind = timing\nworkload = %s\nbatch = %d\n"
          "[kernels]\nbackend = none\n"
          "[policy]\nkind = pipeline\nschedule = %s\nmicrobatches = %d\n",
          iterations, p, F, wl, batch, schedules[k], m);
        Result *r = run_text (text, NULL);
        const double t_f = FWD * n / F, t_b = 2 * FWD * n / F;
        const double iter = (m + p - 1) * (t_f + t_b);
        g_assert_cmpuint (r->iter_len->len, ==, (guint) (iterations * p));
        for (guint i = 0; i < r->iter_len->len; i++)
          test_assert_close (g_array_index (r->iter_len, double, i), iter, 1e-9);
        test_assert_close (r->sum.sim_time, iterations * iter, 1e-9);
        g_assert_cmpuint (r->stages->len, ==, (guint) p);
        for (int s = 0; s < p; s++)
          {
            const PolStageStats *st = &g_array_index (r->stages, PolStageStats, s);
            g_assert_cmpint (st->stage, ==, s);
            g_assert_cmpint (st->first_layer, ==, s);
            g_assert_cmpint (st->last_layer, ==, s);
            double bubble = st->idle / (st->compute + st->idle);
            if (p == 1)
              g_assert_cmpfloat (fabs (bubble), <, 1e-12);
            else
              test_assert_close (bubble, (double) (p - 1) / (m + p - 1), 1e-9);
            int peak = k == 0 ? m : MIN (p - s, m);
            g_assert_cmpint (st->peak_stash, ==, peak);
            /* stash per micro-batch: its layer's activations, plus the input
             * it received for stages after the first */
            double per = 4.0 * n * (ACT + (s > 0 ? ACT : 0));
            test_assert_close (st->activation_bytes, peak * per, 1e-12);
            test_assert_close (st->flops, m * 3 * FWD * n, 1e-12);
          }
        g_unlink (wl);
        result_free (r);
      }
}

/* The balanced cut is optimal: brute force over all cuts agrees on the
 * largest stage's cost. */
static void
test_partition (void)
{
  const double costs[] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3 };
  int L = G_N_ELEMENTS (costs);
  for (int p = 1; p <= 4; p++)
    {
      int count[4];
      pol_pipeline_partition (costs, L, p, count);
      int sum = 0;
      double worst = 0;
      for (int s = 0; s < p; s++)
        {
          g_assert_cmpint (count[s], >=, 1);
          double c = 0;
          for (int l = sum; l < sum + count[s]; l++)
            c += costs[l];
          worst = MAX (worst, c);
          sum += count[s];
        }
      g_assert_cmpint (sum, ==, L);
      /* every placement of p - 1 cuts in the L - 1 gaps, as a bit mask */
      double best = INFINITY;
      for (int mask = 0; mask < (1 << (L - 1)); mask++)
        {
          if (__builtin_popcount (mask) != p - 1)
            continue;
          double cur = 0, most = 0;
          for (int l = 0; l < L; l++)
            {
              cur += costs[l];
              if (l == L - 1 || (mask >> l) & 1)
                {
                  most = MAX (most, cur);
                  cur = 0;
                }
            }
          best = MIN (best, most);
        }
      g_assert_cmpfloat (worst, ==, best);
    }
}

/* The textbook dynamic programme the partition replaced, O(stages L^2):
 * best[k][i] = least largest group over the first i layers in k groups,
 * taking the first j that reaches it (strict comparison), then walking the
 * cuts back from (stages, L). */
static void
reference_partition (const double *cost, int L, int stages, int *count)
{
  double *prefix = g_new0 (double, L + 1);
  for (int i = 0; i < L; i++)
    prefix[i + 1] = prefix[i] + cost[i];
  gsize cells = (gsize) (stages + 1) * (gsize) (L + 1);
  double *best = g_new (double, cells);
  int *cut = g_new0 (int, cells);
#define AT(k, i) ((gsize) (k) * (gsize) (L + 1) + (gsize) (i))
  for (gsize c = 0; c < cells; c++)
    best[c] = INFINITY;
  best[AT (0, 0)] = 0;
  for (int k = 1; k <= stages; k++)
    for (int i = k; i <= L; i++)
      for (int j = k - 1; j < i; j++)
        {
          double v = MAX (best[AT (k - 1, j)], prefix[i] - prefix[j]);
          if (v < best[AT (k, i)])
            {
              best[AT (k, i)] = v;
              cut[AT (k, i)] = j;
            }
        }
  int i = L;
  for (int k = stages; k >= 1; k--)
    {
      int j = cut[AT (k, i)];
      count[k - 1] = i - j;
      i = j;
    }
#undef AT
  g_free (prefix);
  g_free (best);
  g_free (cut);
}

/* The partition returns the very cut of the dynamic programme, on random
 * costs of four kinds: small integers (many ties between splits), integers
 * with zeros, doubles whose sums round, and a few heavy layers among light
 * ones; every stage count from 1 to L. */
static void
test_partition_reference (void)
{
  GRand *rng = g_rand_new_with_seed (2024);
  for (int trial = 0; trial < 400; trial++)
    {
      int L = g_rand_int_range (rng, 1, 41);
      int kind = trial % 4;
      double *cost = g_new (double, L);
      for (int l = 0; l < L; l++)
        switch (kind)
          {
          case 0:
            cost[l] = g_rand_int_range (rng, 1, 4);
            break;
          case 1:
            cost[l] = g_rand_int_range (rng, 0, 3);
            break;
          case 2:
            cost[l] = g_rand_double_range (rng, 0, 1e-3);
            break;
          default:
            cost[l] = g_rand_int_range (rng, 0, 10) == 0 ? g_rand_double_range (rng, 1, 50)
                                                           : g_rand_double_range (rng, 0, 1);
          }
      int *got = g_new (int, L), *want = g_new (int, L);
      for (int p = 1; p <= L; p++)
        {
          pol_pipeline_partition (cost, L, p, got);
          reference_partition (cost, L, p, want);
          for (int s = 0; s < p; s++)
            g_assert_cmpint (got[s], ==, want[s]);
        }
      g_free (got);
      g_free (want);
      g_free (cost);
    }
  g_rand_free (rng);
}

/* A model of the most layers a model may have (SIM_MAX_LAYERS) over L / 2
 * stages (where stages x (L - stages + 1), the table's size, is largest):
 * non-empty stages summing to L, the largest of ceil(L / stages) layers of
 * cost 1, the least any cut of equal costs can have. */
static void
test_partition_large (void)
{
  int L = SIM_MAX_LAYERS, p = L / 2;
  double *cost = g_new (double, L);
  for (int l = 0; l < L; l++)
    cost[l] = 1;
  int *count = g_new (int, p);
  pol_pipeline_partition (cost, L, p, count);
  int sum = 0, most = 0;
  for (int s = 0; s < p; s++)
    {
      g_assert_cmpint (count[s], >=, 1);
      sum += count[s];
      most = MAX (most, count[s]);
    }
  g_assert_cmpint (sum, ==, L);
  g_assert_cmpint (most, ==, (L + p - 1) / p);
  g_free (count);
  g_free (cost);
}

/* Every micro-batch's forward comes once and before its backward; 1F1B
 * starts with min(p - s - 1, m) forwards and then alternates. */
static void
test_order (void)
{
  for (int p = 1; p <= 5; p++)
    for (int m = 1; m <= 7; m++)
      for (int s = 0; s < p; s++)
        for (int k = 0; k < 2; k++)
          {
            int ops[14];
            pol_pipeline_ops_order (k ? POL_SCHEDULE_1F1B : POL_SCHEDULE_GPIPE, p, 1, s, m, ops);
            int seen_f[7] = { 0 }, seen_b[7] = { 0 }, next_f = 0, next_b = 0;
            for (int i = 0; i < 2 * m; i++)
              if (ops[i] >= 0)
                {
                  g_assert_cmpint (ops[i], ==, next_f++); /* forwards in order */
                  seen_f[ops[i]]++;
                }
              else
                {
                  int b = -ops[i] - 1;
                  g_assert_cmpint (b, ==, next_b++);      /* backwards in order */
                  g_assert_cmpint (seen_f[b], ==, 1);
                  seen_b[b]++;
                }
            for (int i = 0; i < m; i++)
              g_assert_cmpint (seen_b[i], ==, 1);
            if (k == 1)
              {
                int warm = MIN (p - s - 1, m);
                for (int i = 0; i < warm; i++)
                  g_assert_cmpint (ops[i], ==, i);
                if (warm < m)
                  g_assert_cmpint (ops[warm + 1], ==, -1);
              }
            else
              g_assert_cmpint (ops[m], ==, -1);
          }
}

static const char mlp[] =
  "[scenario]\nname = e\nseed = 11\niterations = 12\n"
  "[cluster]\nworkers = 3\n"
  "[device]\nflops = 1GFLOPS\n"
  "[network]\nbandwidth = 10Gbps\nlatency = 5us\n"
  "[model]\nkind = mlp\nhidden = 24,16\nfeatures = 20\nclasses = 5\nsamples = 1024\n"
  "test_samples = 128\neval_samples = 256\nbatch = 16\nlr = 0.2\n"
  "[policy]\nkind = pipeline\nmicrobatches = 4\n";

/* Losses of two runs evaluated after the same number of optimizer steps:
 * the pipeline evaluates once per iteration (every `workers` updates). */
static void
assert_same_losses (const Result *a, const Result *b)
{
  g_assert_cmpuint (a->losses->len, ==, b->losses->len);
  g_assert_cmpuint (a->losses->len, >, 2);
  for (guint i = 0; i < a->losses->len; i++)
    test_assert_close (g_array_index (a->losses, double, i),
                       g_array_index (b->losses, double, i), 1e-5);
  test_assert_close (a->sum.final_loss, b->sum.final_loss, 1e-5);
  /* and training did something */
  g_assert_cmpfloat (g_array_index (a->losses, double, a->losses->len - 1), <,
                     0.9 * g_array_index (a->losses, double, 0));
}

/* Pipelined MLP = one worker training on the same batches (its sampler is
 * the single data-parallel worker's), whatever the schedule and the cut,
 * and whether the math runs operation by operation on the stages (compute
 * time measured on the host) or all at once when the iteration starts. */
static void
test_mlp_equivalence (void)
{
  const char *ref_sets[] = { "policy.kind=allreduce", "cluster.workers=1", NULL };
  Result *ref = run_text (mlp, ref_sets);
  const char *variants[][4] = {
    { "policy.schedule=1f1b", NULL, NULL, NULL },
    { "policy.schedule=gpipe", NULL, NULL, NULL },
    { "policy.schedule=1f1b", "policy.stage_layers=1,2,3", NULL, NULL },
    { "policy.schedule=gpipe", "policy.stage_layers=3,2,1", NULL, NULL },
    { "policy.microbatches=16", "model.optimizer=adam", "model.lr=0.01", NULL },
    { "device.compute_time=measured", "policy.schedule=1f1b", "policy.stage_layers=1,2,3",
      NULL },
    { "device.compute_time=measured", "policy.schedule=gpipe", NULL, NULL },
  };
  for (gsize v = 0; v < G_N_ELEMENTS (variants); v++)
    {
      Result *r = run_text (mlp, variants[v]);
      if (v == 4)
        {
          const char *sets[] = { "policy.kind=allreduce", "cluster.workers=1",
                                 "model.optimizer=adam", "model.lr=0.01", NULL };
          Result *ref2 = run_text (mlp, sets);
          assert_same_losses (r, ref2);
          result_free (ref2);
        }
      else
        assert_same_losses (r, ref);
      result_free (r);
    }
  result_free (ref);
}

/* Two replicas of a 3-stage pipeline = all-reduce over two workers, the
 * math stage by stage (measured compute) or both replicas in one pass. */
static void
test_replicas (void)
{
  const char *pipe_sets[] = { "cluster.workers=6", "policy.replicas=2", NULL };
  const char *staged_sets[] = { "cluster.workers=6", "policy.replicas=2",
                                "device.compute_time=measured", NULL };
  const char *ar_sets[] = { "policy.kind=allreduce", "cluster.workers=2", NULL };
  Result *a = run_text (mlp, pipe_sets);
  Result *s = run_text (mlp, staged_sets);
  Result *b = run_text (mlp, ar_sets);
  assert_same_losses (a, b);
  assert_same_losses (s, b);
  g_assert_cmpuint (a->stages->len, ==, 6);
  g_assert_cmpuint (a->iter_len->len, ==, 6 * 12);
  result_free (a);
  result_free (s);
  result_free (b);
}

static void
expect_error (const char *extra, const char *needle)
{
  g_autofree char *text = g_strconcat (mlp, extra, NULL);
  g_autofree char *msg = test_load_scenario_error (text);
  if (!strstr (msg, needle))
    g_error ("expected '%s' in: %s", needle, msg);
}

static void
test_errors (void)
{
  expect_error ("microbatches = 5\n", "[policy] microbatches");
  expect_error ("stage_layers = 1,1,1\n", "[policy] stage_layers: the counts sum to 3");
  expect_error ("stage_layers = 3,3\n", "[policy] stage_layers: 2 counts for 3 stages");
  expect_error ("stages = 7\n", "[cluster] workers");
  expect_error ("replicas = 2\n", "[policy] replicas");
  /* a 6-layer MLP (fc, relu, fc, relu, fc, xent) cannot have 7 stages */
  g_autofree char *t2 = g_strdup (mlp);
  char *w = strstr (t2, "workers = 3");
  g_assert_nonnull (w);
  g_autofree char *t3 = g_strdup_printf ("%.*sworkers = 7%s", (int) (w - t2), t2,
                                         w + strlen ("workers = 3"));
  g_autofree char *msg = test_load_scenario_error (t3 /* stages = workers = 7 */);
  if (!strstr (msg, "[policy] stages: 7 stages for a model of 6 layers"))
    g_error ("unexpected: %s", msg);
}

/* ------------------------------------------------------- device memory -- */

/* GPT-2 XL, timing only, Adam, on 40 GB devices: `workers` stages (one
 * replica), batch `batch` in `m` micro-batches under `schedule`; memory =
 * 0 leaves the capacity unchecked. */
static char *
xl_text (int workers, int batch, int m, const char *schedule, const char *memory)
{
  return g_strdup_printf ("[scenario]\nname = xl\niterations = 1\n"
                          "[cluster]\nworkers = %d\n"
                          "[device]\nflops = 100TFLOPS\nmemory = %s\n"
                          "[model]\nkind = timing\nworkload = gpt-2-xl\nbatch = %d\n"
                          "optimizer = adam\n"
                          "[policy]\nkind = pipeline\nschedule = %s\nmicrobatches = %d\n"
                          "[kernels]\nbackend = none\n",
                          workers, memory, batch, schedule, m);
}

/* The stages' memory for the scenario of xl_text without a capacity, and
 * the whole model's on one device in *whole. */
static SimStageMemory *
xl_memory (int workers, int batch, int m, const char *schedule, double *whole)
{
  g_autofree char *text = xl_text (workers, batch, m, schedule, "0");
  SimConfig *c = test_load_one (text);
  KernModel *model = sim_model_new (c, NULL, NULL);
  g_assert_nonnull (model);
  int n;
  SimStageMemory *st = sim_shares_memory (c, model, &n, NULL);
  g_assert_cmpint (n, ==, workers);
  if (whole)
    *whole = sim_model_memory_bytes (c, model);
  kern_model_free (model);
  sim_config_free (c);
  return st;
}

/* Index of the first stage over `cap` bytes, or -1. */
static int
first_over (const SimStageMemory *st, int p, double cap)
{
  for (int s = 0; s < p; s++)
    if (st[s].total > cap)
      return s;
  return -1;
}

/* GPT-2 XL at batch 8 does not fit on one 40 GB device whole, but does in 8
 * stages; in 2 stages a stage is refused, by number and with its terms. */
static void
test_memory_stages (void)
{
  const double cap = 40e9;
  double whole = 0;
  g_autofree SimStageMemory *eight = xl_memory (8, 8, 8, "gpipe", &whole);
  g_assert_cmpfloat (whole, >, cap);
  g_assert_cmpint (first_over (eight, 8, cap), ==, -1);
  /* every stage's terms add up, and the stages share out the parameters */
  gsize params = 0;
  for (int s = 0; s < 8; s++)
    {
      const SimStageMemory *x = &eight[s];
      g_assert_cmpint (x->slots, ==, 8);
      g_assert_cmpfloat (x->total, ==, 2 * 4.0 * x->params + 2 * 4.0 * x->params
                                       + x->slots * x->stash_bytes);
      params += x->params;
    }
  g_assert_cmpuint (params, ==, 1557611200);  /* the table's total (gpt-2-xl.txt) */
  g_autofree char *ok_text = xl_text (8, 8, 8, "gpipe", "40GB");
  sim_config_free (test_load_one (ok_text));

  g_autofree SimStageMemory *two = xl_memory (2, 8, 8, "gpipe", NULL);
  int bad = first_over (two, 2, cap);
  g_assert_cmpint (bad, >=, 0);
  g_autofree char *bad_text = xl_text (2, 8, 8, "gpipe", "40GB");
  g_autofree char *msg = test_load_scenario_error (bad_text);
  g_autofree char *stage = g_strdup_printf ("[device] memory: pipeline stage %d (layers %d-%d)",
                                            bad, two[bad].first, two[bad].last);
  if (!strstr (msg, stage) || !strstr (msg, "optimizer state") || !strstr (msg, "activations")
      || !strstr (msg, "8 stashed micro-batches of 1 samples, gpipe"))
    g_error ("unexpected: %s", msg);
}

/* 1F1B stashes at most p - s micro-batches: with 32 micro-batches of one
 * sample, GPipe's 32 stashed do not fit where 1F1B's 4 do. */
static void
test_memory_1f1b (void)
{
  const double cap = 40e9;
  g_autofree SimStageMemory *g = xl_memory (4, 32, 32, "gpipe", NULL);
  g_autofree SimStageMemory *f = xl_memory (4, 32, 32, "1f1b", NULL);
  int bad = first_over (g, 4, cap);
  g_assert_cmpint (bad, >=, 0);
  g_assert_cmpint (first_over (f, 4, cap), ==, -1);
  for (int s = 0; s < 4; s++)
    {
      /* same cut, same micro-batch: only the stash count differs */
      g_assert_cmpint (g[s].first, ==, f[s].first);
      g_assert_cmpfloat (g[s].stash_bytes, ==, f[s].stash_bytes);
      g_assert_cmpint (g[s].slots, ==, 32);
      g_assert_cmpint (f[s].slots, ==, MIN (4 - s, 32));
    }
  g_autofree char *gt = xl_text (4, 32, 32, "gpipe", "40GB");
  g_autofree char *msg = test_load_scenario_error (gt);
  g_autofree char *stage = g_strdup_printf ("pipeline stage %d ", bad);
  if (!strstr (msg, stage))
    g_error ("unexpected: %s", msg);
  g_autofree char *ft = xl_text (4, 32, 32, "1f1b", "40GB");
  sim_config_free (test_load_one (ft));
}

/* The check prices each stage as the run reports it: its total equals the
 * trace's stages.activation_bytes plus parameters, gradients and Adam's
 * two floats per parameter, for both schedules and with replicas. */
static void
test_memory_trace (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-pipemem-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_autofree char *ini = g_build_filename (dir, "p.ini", NULL);
  g_autofree char *db = g_build_filename (dir, "p.db", NULL);
  const char *variants[][5] = {
    { "model.optimizer=adam", "policy.schedule=gpipe", NULL },
    { "model.optimizer=adam", "policy.schedule=1f1b", NULL },
    { "model.optimizer=adam", "policy.schedule=1f1b", "cluster.workers=6",
      "policy.replicas=2", NULL },
  };
  const int per = kern_opt_state_per_param (&kern_opt_adam);
  g_assert_true (g_file_set_contents (ini, mlp, -1, NULL));
  for (gsize v = 0; v < G_N_ELEMENTS (variants); v++)
    {
      g_autoptr (GPtrArray) args = g_ptr_array_new ();
      const char *head[] = { "run", ini, "-o", db, "--quiet" };
      for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
        g_ptr_array_add (args, (gpointer) head[i]);
      for (int i = 0; variants[v][i]; i++)
        {
          g_ptr_array_add (args, (gpointer) "--set");
          g_ptr_array_add (args, (gpointer) variants[v][i]);
        }
      g_ptr_array_add (args, NULL);
      g_remove (db);
      g_autofree char *err = NULL;
      if (test_run_dtsim_argv (dir, NULL, &err, (const char *const *) args->pdata) != 0)
        g_error ("dtsim run: %s", err);

      GPtrArray *configs = test_load_scenario_text (mlp, variants[v]);
      SimConfig *c = g_ptr_array_index (configs, 0);
      KernModel *model = sim_model_new (c, NULL, NULL);
      int n_shares;
      g_autofree SimStageMemory *st = sim_shares_memory (c, model, &n_shares, NULL);
      g_assert_cmpint (n_shares, ==, base_values_int (c->values, "policy.stages"));

      sqlite3 *h = NULL;
      g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
      sqlite3_stmt *q = NULL;
      g_assert_cmpint (sqlite3_prepare_v2 (h, "SELECT stage, first_layer, last_layer, params,"
                                           " peak_stash, activation_bytes FROM stages"
                                           " ORDER BY worker", -1, &q, NULL), ==, SQLITE_OK);
      int rows = 0;
      while (sqlite3_step (q) == SQLITE_ROW)
        {
          int s = sqlite3_column_int (q, 0);
          g_assert_cmpint (s, <, n_shares);
          const SimStageMemory *x = &st[s];
          g_assert_cmpint (sqlite3_column_int (q, 1), ==, x->first);
          g_assert_cmpint (sqlite3_column_int (q, 2), ==, x->last);
          gsize params = (gsize) sqlite3_column_int64 (q, 3);
          g_assert_cmpuint (params, ==, x->params);
          g_assert_cmpint (sqlite3_column_int (q, 4), ==, x->slots);
          double act = sqlite3_column_double (q, 5);
          test_assert_close (x->total, act + 4.0 * (2 + per) * (double) params, 1e-15);
          rows++;
        }
      g_assert_cmpint (rows, ==, (int) c->workers);
      sqlite3_finalize (q);
      sqlite3_close (h);
      kern_model_free (model);
      g_ptr_array_unref (configs);
    }
  g_remove (db);
  g_remove (ini);
  g_rmdir (dir);
}

/* stages = 0 resolves to workers / replicas, and the params row says so;
 * dtsim check prints every stage's memory. */
static void
test_stages_resolved (void)
{
  const char *sets[] = { "cluster.workers=6", "policy.replicas=2", NULL };
  GPtrArray *configs = test_load_scenario_text (mlp, sets);
  SimConfig *c = g_ptr_array_index (configs, 0);
  g_assert_cmpint (base_values_int (c->values, "policy.stages"), ==, 6 / 2);
  const char *found = NULL;
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), "policy.stages") == 0)
      found = g_ptr_array_index (c->param_values, i);
  g_assert_cmpstr (found, ==, "3");
  g_ptr_array_unref (configs);

  g_autofree char *dir = g_dir_make_tmp ("dtsim-pipemem-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "p.ini", NULL);
  g_assert_true (g_file_set_contents (ini, mlp, -1, NULL));
  g_autofree char *out = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, NULL, "check", ini, NULL), ==, 0);
  for (int s = 0; s < 3; s++)
    {
      g_autofree char *line = g_strdup_printf ("stage %d: layers ", s);
      if (!strstr (out, line) || !strstr (out, "stashed micro-batches of 4 samples"))
        g_error ("no memory of stage %d in: %s", s, out);
    }
  g_remove (ini);
  g_rmdir (dir);
}

/* Runs `dtsim run` on mlp with the `sets` (NULL-terminated) into `db` in
 * folder `dir`; asserts it succeeded. */
static void
run_into (const char *dir, const char *db, const char *const *sets)
{
  g_autofree char *ini = g_build_filename (dir, "p.ini", NULL);
  g_assert_true (g_file_set_contents (ini, mlp, -1, NULL));
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  const char *head[] = { "run", ini, "-o", db, "--quiet" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (args, (gpointer) head[i]);
  for (int i = 0; sets[i]; i++)
    {
      g_ptr_array_add (args, (gpointer) "--set");
      g_ptr_array_add (args, (gpointer) sets[i]);
    }
  g_ptr_array_add (args, NULL);
  g_remove (db);
  g_autofree char *err = NULL;
  if (test_run_dtsim_argv (dir, NULL, &err, (const char *const *) args->pdata) != 0)
    g_error ("dtsim run: %s", err);
  g_remove (ini);
}

/* The trace's mesh of a pipeline of R replicas x P stages: one row per
 * rank, rank r = replica x P + stage (train/mesh.h, data slowest), on the
 * host of the stage worker the stages table names for that replica and
 * stage, every other axis at 0; at every [trace] detail.  An all-reduce
 * run's mesh is its one data axis; the parameter server has none. */
static void
test_mesh_rows (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-pipemesh-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_autofree char *db = g_build_filename (dir, "p.db", NULL);
  const int R = 2, P = 3;
  const char *sets[] = { "cluster.workers=6", "policy.replicas=2", "policy.stages=3",
                         "trace.detail=summary", NULL };
  run_into (dir, db, sets);
  g_assert_cmpint (test_query_number (db, "SELECT COUNT(*) FROM mesh"), ==, R * P);
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (h, "SELECT m.rank, m.replica, m.stage, m.host,"
                                       " 'worker' || s.worker, m.expert + m.context + m.tensor"
                                       " FROM mesh m JOIN stages s ON s.run_id = m.run_id"
                                       " AND s.replica = m.replica AND s.stage = m.stage"
                                       " ORDER BY m.rank", -1, &q, NULL), ==, SQLITE_OK);
  int rows = 0;
  while (sqlite3_step (q) == SQLITE_ROW)
    {
      int rank = sqlite3_column_int (q, 0), replica = sqlite3_column_int (q, 1);
      int stage = sqlite3_column_int (q, 2);
      g_assert_cmpint (rank, ==, rows);
      g_assert_cmpint (rank, ==, replica * P + stage);
      g_assert_cmpint (replica, <, R);
      g_assert_cmpint (stage, <, P);
      g_assert_cmpstr ((const char *) sqlite3_column_text (q, 3), ==,
                       (const char *) sqlite3_column_text (q, 4));
      g_assert_cmpint (sqlite3_column_int (q, 5), ==, 0);
      rows++;
    }
  g_assert_cmpint (rows, ==, R * P);
  sqlite3_finalize (q);
  sqlite3_close (h);

  const char *ar[] = { "policy.kind=allreduce", "cluster.workers=4", NULL };
  run_into (dir, db, ar);
  g_assert_cmpint (test_query_number (db, "SELECT COUNT(*) FROM mesh"), ==, 4);
  g_assert_cmpint (test_query_number (db, "SELECT COUNT(*) FROM mesh WHERE replica = rank"
                                      " AND stage + expert + context + tensor = 0"
                                      " AND host = 'worker' || rank"), ==, 4);
  const char *ps[] = { "policy.kind=ps", NULL };
  run_into (dir, db, ps);
  g_assert_cmpint (test_query_number (db, "SELECT COUNT(*) FROM mesh"), ==, 0);
  g_remove (db);
  g_rmdir (dir);
}

/* ------------------------------------------------------- interleaved -- */

/* The peak stash of Megatron-LM's interleaved schedule in (chunk,
 * micro-batch) pairs: min(2(p - s - 1) + (v - 1)p + 1, mv), mv when m = p
 * (every operation a warm-up forward first). */
static int
interleaved_peak (int p, int v, int s, int m)
{
  return m == p ? m * v : MIN (2 * (p - s - 1) + (v - 1) * p + 1, m * v);
}

/* Every (chunk, micro-batch) runs its forward once and its backward once,
 * after that forward; a chunk's forwards and backwards go in micro-batch
 * order; Megatron's warm-up count and the peak stash as formulas. */
static void
test_interleaved_order (void)
{
  for (int p = 2; p <= 4; p++)
    for (int v = 2; v <= 3; v++)
      for (int m = p; m <= 3 * p; m += p)
        for (int s = 0; s < p; s++)
          {
            g_autofree int *ops = g_new (int, 2 * m * v);
            g_autofree int *next_f = g_new0 (int, v);
            g_autofree int *next_b = g_new0 (int, v);
            pol_pipeline_ops_order (POL_SCHEDULE_INTERLEAVED, p, v, s, m, ops);
            int first_backward = -1;
            for (int k = 0; k < 2 * m * v; k++)
              {
                int code = ops[k] >= 0 ? ops[k] : -ops[k] - 1;
                int c = code / m, i = code % m;
                g_assert_cmpint (c, <, v);
                if (ops[k] >= 0)
                  g_assert_cmpint (i, ==, next_f[c]++);
                else
                  {
                    g_assert_cmpint (i, ==, next_b[c]++);
                    g_assert_cmpint (next_f[c], >, i);
                    if (first_backward < 0)
                      first_backward = k;
                  }
              }
            for (int c = 0; c < v; c++)
              {
                g_assert_cmpint (next_f[c], ==, m);
                g_assert_cmpint (next_b[c], ==, m);
              }
            int warm = m == p ? m * v : MIN (2 * (p - s - 1) + (v - 1) * p, m * v);
            /* the first backward comes after the warm-up and one forward */
            g_assert_cmpint (first_backward, ==, warm == m * v ? m * v : warm + 1);
            g_autofree double *ones = g_new (double, v);
            for (int c = 0; c < v; c++)
              ones[c] = 3.0;
            double bytes = 0;
            int peak = pol_pipeline_stash_peak (POL_SCHEDULE_INTERLEAVED, p, v, s, m, ones,
                                                &bytes, NULL);
            g_assert_cmpint (peak, ==, interleaved_peak (p, v, s, m));
            g_assert_cmpfloat (bytes, ==, 3.0 * peak);
          }
  /* one chunk: the 1F1B order */
  for (int p = 1; p <= 4; p++)
    for (int s = 0; s < p; s++)
      {
        int a[16], b[16];
        pol_pipeline_ops_order (POL_SCHEDULE_1F1B, p, 1, s, 2 * p, a);
        pol_pipeline_ops_order (POL_SCHEDULE_INTERLEAVED, p, 1, s, 2 * p, b);
        g_assert_cmpmem (a, sizeof (int) * 4 * p, b, sizeof (int) * 4 * p);
      }
}

/* The uniform scenario of test_uniform with p v layers under `schedule`
 * and `chunks`. */
static char *
uniform_text (int p, int v, int m, int n, const char *schedule, const char *wl,
              const char *recompute)
{
  return g_strdup_printf (
    "[scenario]\nname = u\nseed = 1\niterations = 3\n"
    "[cluster]\nworkers = %d\n"
    "[device]\nflops = 1e9\nefficiency = 1\n"
    "[network]\nbandwidth = 1e18\nlatency = 0\ncontention = none\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = %d\nrecompute = %s\n"
    "[kernels]\nbackend = none\n"
    "[policy]\nkind = pipeline\nschedule = %s\nchunks = %d\nmicrobatches = %d\n",
    p, wl, n * m, recompute, schedule, v, m);
}

/* p stages of v one-layer chunks each, identical layers, free
 * communication: an iteration lasts (m + (p - 1)/v)(t_f + t_b), t_f and t_b
 * a stage's forward and backward of one micro-batch through all its
 * layers; its bubble is (p - 1)/(v m) of the ideal m (t_f + t_b). */
static void
test_interleaved_uniform (void)
{
  const int cases[][3] = { { 2, 2, 4 }, { 4, 2, 8 }, { 3, 3, 6 }, { 4, 4, 4 }, { 2, 3, 2 },
                           { 3, 2, 12 } };
  const double F = 1e9;
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      int p = cases[k][0], v = cases[k][1], m = cases[k][2], n = 4;
      g_autofree char *wl = uniform_workload (p * v);
      g_autofree char *text = uniform_text (p, v, m, n, "interleaved", wl, "none");
      Result *r = run_text (text, NULL);
      const double t_f = v * FWD * n / F, t_b = v * 2 * FWD * n / F;
      const double iter = (m + (double) (p - 1) / v) * (t_f + t_b);
      g_assert_cmpuint (r->iter_len->len, ==, (guint) (3 * p));
      for (guint i = 0; i < r->iter_len->len; i++)
        test_assert_close (g_array_index (r->iter_len, double, i), iter, 1e-9);
      test_assert_close ((iter - m * (t_f + t_b)) / (m * (t_f + t_b)),
                         (double) (p - 1) / (v * m), 1e-9);
      g_assert_cmpuint (r->stages->len, ==, (guint) p);
      for (int s = 0; s < p; s++)
        {
          const PolStageStats *st = &g_array_index (r->stages, PolStageStats, s);
          /* its chunks are layers s, s + p, ..., s + (v - 1)p */
          g_assert_cmpint (st->first_layer, ==, s);
          g_assert_cmpint (st->last_layer, ==, s + (v - 1) * p);
          int peak = interleaved_peak (p, v, s, m);
          g_assert_cmpint (st->peak_stash, ==, peak);
          if (s > 0) /* a chunk stashes its layer's activations and its input */
            test_assert_close (st->activation_bytes, peak * 4.0 * n * 2 * ACT, 1e-12);
          test_assert_close (st->flops, m * v * 3 * FWD * n, 1e-12);
          test_assert_close (st->idle / (st->compute + st->idle),
                             (double) (p - 1) / (v * m + p - 1), 1e-9);
        }
      g_unlink (wl);
      result_free (r);
    }
}

/* Runs `dtsim run` on `text` with the sets (NULL-terminated) into db in
 * dir; returns its exit status, its standard error in *err. */
static int
run_cli (const char *dir, const char *text, const char *db, const char *const *sets, char **err)
{
  g_autofree char *ini = g_build_filename (dir, "i.ini", NULL);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  const char *head[] = { "run", ini, "-o", db, "--quiet" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (args, (gpointer) head[i]);
  for (int i = 0; sets && sets[i]; i++)
    {
      g_ptr_array_add (args, (gpointer) "--set");
      g_ptr_array_add (args, (gpointer) sets[i]);
    }
  g_ptr_array_add (args, NULL);
  int rc = test_run_dtsim_argv (dir, NULL, err, (const char *const *) args->pdata);
  g_remove (ini);
  return rc;
}

/* One chunk under schedule = interleaved is 1F1B: the same rows in every
 * table of the trace but the params row of the schedule. */
static void
test_interleaved_one_chunk (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-interleave-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "i.db", NULL);
  g_autofree char *text = g_strconcat (mlp, "[trace]\ndetail = messages\n"
                                       "[sweep]\npolicy.schedule = 1f1b, interleaved\n", NULL);
  const char *sets[] = { "cluster.workers=2", "policy.replicas=1", NULL };
  g_autofree char *err = NULL;
  if (run_cli (dir, text, db, sets, &err) != 0)
    g_error ("dtsim run: %s", err);
  g_assert_cmpint (test_query_number (db, "SELECT COUNT(*) FROM runs"), ==, 2);
  const char *tables[][2] = {
    { "spans", "actor, kind, start, end, iteration, bytes, phase, microbatch, first_layer, last_layer" },
    { "messages", "src, dst, bytes, start, end, tag" },
    { "iterations", "worker, iteration, start, end, compute, comm, wait" },
    { "metrics", "sim_time, step, loss, accuracy" },
    { "stages", "stage, first_layer, last_layer, params, flops, peak_stash, activation_bytes,"
                " boundary_bytes, compute, idle" },
  };
  for (gsize t = 0; t < G_N_ELEMENTS (tables); t++)
    {
      g_autofree char *rows = g_strdup_printf ("SELECT COUNT(*) FROM %s WHERE run_id = 1",
                                               tables[t][0]);
      g_assert_cmpfloat (test_query_number (db, rows), >, 0);
      g_autofree char *diff = g_strdup_printf (
        "SELECT COUNT(*) FROM (SELECT %s FROM %s WHERE run_id = 1 EXCEPT SELECT %s FROM %s"
        " WHERE run_id = 2) ", tables[t][1], tables[t][0], tables[t][1], tables[t][0]);
      g_autofree char *count2 = g_strdup_printf ("SELECT COUNT(*) FROM %s WHERE run_id = 2",
                                                 tables[t][0]);
      g_assert_cmpfloat (test_query_number (db, diff), ==, 0);
      g_assert_cmpfloat (test_query_number (db, count2), ==, test_query_number (db, rows));
    }
  test_assert_close (test_query_number (db, "SELECT sim_time FROM runs WHERE id = 2"),
                     test_query_number (db, "SELECT sim_time FROM runs WHERE id = 1"), 0);
  g_remove (db);
  g_rmdir (dir);
}

/* Per replica and iteration, every micro-batch crosses the p v - 1
 * boundaries between virtual stages forward and back. */
static void
test_interleaved_messages (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-interleave-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "i.db", NULL);
  const int R = 2, p = 2, v = 3, m = 4, iterations = 12;
  g_autofree char *text = g_strconcat (mlp, "[trace]\ndetail = messages\n", NULL);
  const char *sets[] = { "cluster.workers=4", "policy.replicas=2", "policy.schedule=interleaved",
                         "policy.chunks=3", "policy.microbatches=4", NULL };
  g_autofree char *err = NULL;
  if (run_cli (dir, text, db, sets, &err) != 0)
    g_error ("dtsim run: %s", err);
  double act = test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = 'activation'");
  double grad = test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = 'gradient'");
  g_assert_cmpfloat (act, ==, (double) iterations * R * (p * v - 1) * m);
  g_assert_cmpfloat (grad, ==, (double) iterations * R * (p * v - 1) * m);
  /* and none between the chunks of one worker */
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages WHERE src = dst"),
                     ==, 0);
  g_remove (db);
  g_rmdir (dir);
}

/* An interleaved pipeline learns what 1F1B learns (the same losses after
 * every iteration): the math stacked at the iteration's start, or chunk by
 * chunk (compute time measured), with replicas, with stage_layers giving
 * one count per virtual stage. */
static void
test_interleaved_equivalence (void)
{
  const char *ref_sets[] = { "cluster.workers=2", "policy.schedule=1f1b", NULL };
  Result *ref = run_text (mlp, ref_sets);
  const char *variants[][7] = {
    { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=3", NULL },
    { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=2",
      "policy.stage_layers=1,2,2,1", NULL },
    { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=3",
      "device.compute_time=measured", NULL },
    { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=2",
      "policy.microbatches=8", "device.compute_time=measured", NULL },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (variants); k++)
    {
      Result *r = run_text (mlp, variants[k]);
      assert_same_losses (r, ref);
      result_free (r);
    }
  result_free (ref);
  /* two replicas: all-reduce over two workers */
  const char *ar_sets[] = { "policy.kind=allreduce", "cluster.workers=2", NULL };
  Result *ar = run_text (mlp, ar_sets);
  const char *rep[][7] = {
    { "cluster.workers=4", "policy.replicas=2", "policy.schedule=interleaved",
      "policy.chunks=3", NULL },
    { "cluster.workers=4", "policy.replicas=2", "policy.schedule=interleaved",
      "policy.chunks=3", "device.compute_time=measured", NULL },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (rep); k++)
    {
      Result *r = run_text (mlp, rep[k]);
      assert_same_losses (r, ar);
      result_free (r);
    }
  result_free (ar);
}

/* The refusals of interleaving: one line naming the key, exit 2. */
static void
test_interleaved_errors (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-interleave-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "i.db", NULL);
  const struct {
    const char *sets[5];
    const char *needle;
  } cases[] = {
    /* 4 micro-batches on 3 stages */
    { { "policy.schedule=interleaved", NULL }, "[policy] microbatches: 4 micro-batches are not a multiple of the 3 stages" },
    { { "policy.chunks=2", NULL }, "[policy] chunks: 2 chunks per stage need schedule = interleaved" },
    /* 8 virtual stages of a 6-layer MLP */
    { { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=4", NULL },
      "[policy] chunks: 2 stages x 4 chunks need 8 virtual stages" },
    { { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=2",
        "policy.stage_layers=3,3", NULL }, "[policy] stage_layers: 2 counts for 2 stages x 2 chunks" },
    { { "cluster.workers=1", "policy.schedule=interleaved", "policy.chunks=2", NULL },
      "[policy] chunks: 2 chunks on a single stage" },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *err = NULL;
      int rc = run_cli (dir, mlp, db, cases[k].sets, &err);
      g_assert_cmpint (rc, ==, 2);
      if (!strstr (err, cases[k].needle) || !strstr (err, "i.ini"))
        g_error ("expected '%s' in: %s", cases[k].needle, err);
      /* one line */
      g_assert_cmpint ((int) (strchr (err, '\n') - err), ==, (int) strlen (err) - 1);
      g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));
    }
  g_rmdir (dir);
}

/* [model] recompute under every schedule: a stage's backward costs its
 * forward again, so with identical layers and free communication an
 * iteration lasts (m + p - 1)(2 t_f + t_b) (interleaved: (m + (p - 1)/v)
 * (2 t_f + t_b)), and full recompute stashes only each chunk's input (the
 * first layer's activations, holding the model input, on the first). */
static void
test_recompute (void)
{
  const char *schedules[] = { "gpipe", "1f1b", "interleaved" };
  const double F = 1e9;
  const int p = 2, m = 4, n = 4;
  for (gsize k = 0; k < G_N_ELEMENTS (schedules); k++)
    {
      int v = k == 2 ? 2 : 1;
      g_autofree char *wl = uniform_workload (p * v);
      g_autofree char *plain = uniform_text (p, v, m, n, schedules[k], wl, "none");
      g_autofree char *full = uniform_text (p, v, m, n, schedules[k], wl, "full");
      Result *a = run_text (plain, NULL);
      Result *b = run_text (full, NULL);
      const double t_f = v * FWD * n / F, t_b = v * 2 * FWD * n / F;
      const double lead = k == 2 ? m + (double) (p - 1) / v : m + p - 1;
      test_assert_close (g_array_index (a->iter_len, double, 0), lead * (t_f + t_b), 1e-9);
      test_assert_close (g_array_index (b->iter_len, double, 0), lead * (2 * t_f + t_b), 1e-9);
      for (int s = 0; s < p; s++)
        {
          const PolStageStats *sa = &g_array_index (a->stages, PolStageStats, s);
          const PolStageStats *sb = &g_array_index (b->stages, PolStageStats, s);
          g_assert_cmpint (sa->peak_stash, ==, sb->peak_stash);
          /* every chunk keeps 4 n ACT: its input, or layer 0's activations */
          test_assert_close (sb->activation_bytes, sb->peak_stash * 4.0 * n * ACT, 1e-12);
          test_assert_close (sb->flops, sa->flops * 4 / 3, 1e-12);
        }
      g_unlink (wl);
      result_free (a);
      result_free (b);
    }
}

/* Selective recompute drops the element-wise and norm layers' activations
 * from each stage's stash: 4 n (i + sum of the others' activations); the
 * memory check and the trace agree on it. */
static void
test_recompute_stash (void)
{
  const char *sets[] = { "model.recompute=selective", NULL };
  GPtrArray *configs = test_load_scenario_text (mlp, sets);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *model = sim_model_new (c, NULL, NULL);
  int n_shares;
  g_autofree SimStageMemory *st = sim_shares_memory (c, model, &n_shares, NULL);
  g_assert_cmpint (n_shares, ==, 3);
  const int n = 16 / 4;
  int dropped = 0;
  for (int s = 0; s < n_shares; s++)
    {
      double floats = st[s].first > 0 ? model->layers[st[s].first - 1].outputs : 0;
      for (int l = st[s].first; l <= st[s].last; l++)
        {
          KernLayerKind kind = model->layers[l].kind;
          if ((kind != KERN_LAYER_ELEMENTWISE && kind != KERN_LAYER_NORM) || l == 0)
            floats += model->layers[l].activations;
          else
            dropped++;
        }
      test_assert_close (st[s].stash_bytes, 4.0 * n * floats, 1e-15);
      test_assert_close (st[s].act_bytes, st[s].slots * st[s].stash_bytes, 1e-15);
    }
  g_assert_cmpint (dropped, >, 0);  /* the MLP's activation layers */
  kern_model_free (model);
  g_ptr_array_unref (configs);

  Result *r = run_text (mlp, sets);
  for (int s = 0; s < 3; s++)
    {
      const PolStageStats *x = &g_array_index (r->stages, PolStageStats, s);
      test_assert_close (x->activation_bytes, st[x->stage].act_bytes, 1e-15);
    }
  result_free (r);
}

/* dtsim check prints each stage's chunks and its peak stash in them; the
 * memory check prices what the run stashes. */
static void
test_interleaved_memory (void)
{
  const char *sets[] = { "cluster.workers=2", "policy.schedule=interleaved", "policy.chunks=3",
                         "model.optimizer=adam", NULL };
  GPtrArray *configs = test_load_scenario_text (mlp, sets);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *model = sim_model_new (c, NULL, NULL);
  int n_shares;
  g_autofree SimStageMemory *st = sim_shares_memory (c, model, &n_shares, NULL);
  g_assert_cmpint (n_shares, ==, 2);
  gsize params = 0;
  for (int s = 0; s < 2; s++)
    {
      g_assert_cmpint (st[s].slots, ==, interleaved_peak (2, 3, s, 4));
      params += st[s].params;
    }
  g_assert_cmpuint (params, ==, model->ops->n_params (model));
  Result *r = run_text (mlp, sets);
  const int per = kern_opt_state_per_param (&kern_opt_adam);
  for (int s = 0; s < 2; s++)
    {
      const PolStageStats *x = &g_array_index (r->stages, PolStageStats, s);
      g_assert_cmpuint (x->params, ==, st[s].params);
      g_assert_cmpint (x->peak_stash, ==, st[s].slots);
      test_assert_close (st[s].total, x->activation_bytes + 4.0 * (2 + per) * (double) x->params,
                         1e-15);
    }
  result_free (r);
  kern_model_free (model);
  g_ptr_array_unref (configs);

  g_autofree char *dir = g_dir_make_tmp ("dtsim-interleave-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "p.ini", NULL);
  g_assert_true (g_file_set_contents (ini, mlp, -1, NULL));
  g_autofree char *out = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, NULL, "check", ini, "--set", "cluster.workers=2",
                                   "--set", "policy.schedule=interleaved", "--set",
                                   "policy.chunks=3", NULL), ==, 0);
  /* 6 layers in 6 virtual stages: stage s holds layers s, s + 2, s + 4 */
  if (!strstr (out, "stage 0: layers 0-0, 2-2, 4-4,") || !strstr (out, "stage 1: layers 1-1, 3-3, 5-5,")
      || !strstr (out, "stashed micro-batches of 4 samples in its chunks"))
    g_error ("no chunks in: %s", out);
  g_remove (ini);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/pipeline/uniform", test_uniform);
  g_test_add_func ("/pipeline/partition", test_partition);
  g_test_add_func ("/pipeline/partition/reference", test_partition_reference);
  g_test_add_func ("/pipeline/partition/large", test_partition_large);
  g_test_add_func ("/pipeline/order", test_order);
  g_test_add_func ("/pipeline/mlp-equivalence", test_mlp_equivalence);
  g_test_add_func ("/pipeline/replicas", test_replicas);
  g_test_add_func ("/pipeline/errors", test_errors);
  g_test_add_func ("/pipeline/memory/stages", test_memory_stages);
  g_test_add_func ("/pipeline/memory/1f1b", test_memory_1f1b);
  g_test_add_func ("/pipeline/memory/trace", test_memory_trace);
  g_test_add_func ("/pipeline/stages-resolved", test_stages_resolved);
  g_test_add_func ("/pipeline/mesh", test_mesh_rows);
  g_test_add_func ("/pipeline/interleaved/order", test_interleaved_order);
  g_test_add_func ("/pipeline/interleaved/uniform", test_interleaved_uniform);
  g_test_add_func ("/pipeline/interleaved/one-chunk", test_interleaved_one_chunk);
  g_test_add_func ("/pipeline/interleaved/messages", test_interleaved_messages);
  g_test_add_func ("/pipeline/interleaved/equivalence", test_interleaved_equivalence);
  g_test_add_func ("/pipeline/interleaved/errors", test_interleaved_errors);
  g_test_add_func ("/pipeline/interleaved/memory", test_interleaved_memory);
  g_test_add_func ("/pipeline/recompute/time", test_recompute);
  g_test_add_func ("/pipeline/recompute/stash", test_recompute_stash);
  return g_test_run ();
}
