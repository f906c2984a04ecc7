/*
 * test-3d.c — 3-D parallelism: tensor groups inside pipeline stages
 * (kind = pipeline with [policy] tensor = T; data x pipeline x tensor).
 *
 * Closed forms: with free communication a GPipe iteration is the tandem
 * line's, each stage's operation at its tensor rank's share of the layers;
 * with one stage, the tensor collectives add their ring time exactly as in
 * /tensor-step/closed-form; the bytes of an iteration are the tensor
 * collectives', the boundary transfers' (split T ways, the same sum) and
 * the data groups' reduction of each rank's share.  Then where the groups
 * sit, [policy] layout, the refusals, and the learning of a 3-D run
 * against the data-parallel run of the same global batch.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "device/model.h"
#include "config/models.h"
#include "tests/util.h"

static char *tmpdir;

/* --- free communication: the tandem line of the stages' shares -------------- */

#define MLP_WIDTH 64

/* An MLP 64 -> 64 -> 64 -> 64 -> 64 (timing only) cut into two stages of
 * four layers (fc1 relu1 fc2 relu2 | fc3 relu3 fc4 xent), GPipe. */
static char *
mlp_pipeline (int R, int T, int M, int batch, double bandwidth)
{
  return g_strdup_printf ("[scenario]\niterations = 3\n[cluster]\nworkers = %d\n"
                          "[device]\nflops = 1e9\nefficiency = 1\n"
                          "[network]\ntopology = star\nbandwidth = %g\nlatency = 0\n"
                          "contention = none\n"
                          "[model]\nkind = mlp\nhidden = %d,%d,%d\nfeatures = %d\nclasses = %d\n"
                          "batch = %d\n[kernels]\nbackend = none\n"
                          "[policy]\nkind = pipeline\nschedule = gpipe\nstages = 2\n"
                          "stage_layers = 4,4\nreplicas = %d\ntensor = %d\nmicrobatches = %d\n"
                          "algorithm = ring\n",
                          R * 2 * T, bandwidth, MLP_WIDTH, MLP_WIDTH, MLP_WIDTH, MLP_WIDTH,
                          MLP_WIDTH, batch, R, T, M);
}

/* Stage s's forward and backward on one micro-batch of n samples at a
 * tensor rank's share: sum over its layers of the device seconds, 1/T for
 * the cut ones. */
static void
stage_share (const SimConfig *c, const KernModel *m, int T, int n, int first, int last,
             double *f, double *b)
{
  int L = m->n_layers;
  g_autofree double *fwd = g_new (double, L);
  g_autofree double *bwd = g_new (double, L);
  g_autofree PolTpSplit *split = g_new (PolTpSplit, L);
  sim_layer_seconds (c, m, n, fwd, bwd);
  g_assert_true (pol_tensor_split (m->layers, L, T, split, NULL));
  *f = *b = 0;
  for (int l = first; l <= last; l++)
    {
      double share = split[l] != POL_TP_WHOLE ? 1.0 / T : 1.0;
      *f += fwd[l] * share;
      *b += bwd[l] * share;
    }
}

/* GPipe over p stages with free communication is a tandem line, forward
 * then backward: the last micro-batch leaves the last stage after
 * sum_s f_s + (m - 1) max_s f_s, and its gradient the first stage
 * sum_s b_s + (m - 1) max_s b_s later, with p = 2 here (equal stages give
 * (m + p - 1)(t_f + t_b)).  Stage s's update u_s follows its last
 * backward: stage 1's ends m b_1 after the forwards.  Every rank of every
 * group and replica has that iteration. */
static void
test_free_communication (void)
{
  const int R = 2, M = 4, n = 2, iterations = 3;
  for (int T = 2; T <= 4; T *= 2)
    {
      g_autofree char *text = mlp_pipeline (R, T, M, M * n, 1e18);
      GPtrArray *configs = test_load_scenario_text (text, NULL);
      SimConfig *c = g_ptr_array_index (configs, 0);
      KernModel *m = sim_model_new (c, NULL, NULL);
      g_assert_cmpint (m->n_layers, ==, 8);
      double f0, b0, f1, b1;
      stage_share (c, m, T, n, 0, 3, &f0, &b0);
      stage_share (c, m, T, n, 4, 7, &f1, &b1);
      g_autofree PolTpSplit *split = g_new (PolTpSplit, m->n_layers);
      g_assert_true (pol_tensor_split (m->layers, m->n_layers, T, split, NULL));
      gsize NP = m->ops->n_params (m);
      gsize lo1 = m->layers[4].param_offset;
      double u0 = sim_update_seconds (c, pol_tensor_rank_params (m->layers, 4, lo1, split, T));
      double u1 = sim_update_seconds (c, pol_tensor_rank_params (m->layers + 4, 4, NP,
                                                                 split + 4, T));
      double forward = f0 + f1 + (M - 1) * MAX (f0, f1);
      double end0 = forward + b1 + b0 + (M - 1) * MAX (b0, b1);
      double end1 = forward + M * b1;
      double iter = MAX (end0 + u0, end1 + u1);
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpuint (r->rows->len, ==, (guint) (iterations * R * 2 * T));
      for (guint i = 0; i < r->rows->len; i++)
        {
          const TestRow *row = &g_array_index (r->rows, TestRow, i);
          test_assert_close (row->end - row->start, iter, 1e-9);
        }
      test_run_free (r);
      kern_model_free (m);
      g_ptr_array_unref (configs);
    }
}

/* --- one stage: the tensor collectives' time ------------------------------- */

#define BLOCKS 2
#define WIDTH 64
#define SEQ 16
#define BW 1e9
#define LAT 5e-6

/* A small GPT on a star: R replicas x P stages x T, M micro-batches of n
 * sequences; `extra` lines end [policy]. */
static char *
gpt_pipeline (int R, int P, int T, int M, int n, const char *extra)
{
  return g_strdup_printf ("[scenario]\niterations = 2\n[cluster]\nworkers = %d\n"
                          "[device]\nflops = 10TFLOPS\nprecision = fp32\n"
                          "[network]\ntopology = star\nbandwidth = %gBps\nlatency = %gs\n"
                          "contention = none\n"
                          "[model]\nkind = transformer\nblocks = %d\nwidth = %d\nheads = 4\n"
                          "sequence = %d\nvocabulary = 100\nbatch = %d\n"
                          "[policy]\nkind = pipeline\nalgorithm = ring\nreplicas = %d\n"
                          "stages = %d\ntensor = %d\nmicrobatches = %d\n%s",
                          R * P * T, BW, LAT, BLOCKS, WIDTH, SEQ, M * n, R, P, T, M,
                          extra ? extra : "");
}

/* The ring's all-reduce of N values of 4 bytes over T ranks on the star. */
static double
ring_allreduce (int T, double N)
{
  return 2.0 * (T - 1) * (2 * LAT + N / T * 4 / BW);
}

/* One stage and one replica: the group runs its m forwards and m
 * backwards one after another, each micro-batch's chain with the
 * collectives of /tensor-step/closed-form (4B + 2 all-reduces of n·s·h
 * values, 4B + 3/2 with sequence parallelism, and three of n·s), so an
 * iteration's communication is m times theirs on every rank, and nothing
 * waits (but for rounding). */
static void
test_one_stage (void)
{
  const int M = 2, n = 1;
  const char *modes[] = { "", "sequence_parallel = true\n" };
  for (int T = 2; T <= 4; T *= 2)
    for (gsize k = 0; k < G_N_ELEMENTS (modes); k++)
      {
        g_autofree char *text = gpt_pipeline (1, 1, T, M, n, modes[k]);
        TestRun *r = test_run_collect (text, NULL);
        g_assert_cmpuint (r->rows->len, ==, 2 * (guint) T);
        for (guint i = 0; i < r->rows->len; i++)
          {
            const TestRow *row = &g_array_index (r->rows, TestRow, i);
            /* a block's four, the embedding's and the LM head's (one and a
             * half with sequence parallelism), the loss's three of n·s */
            double wide = 4 * BLOCKS + (k == 0 ? 2 : 1.5);
            test_assert_close (row->end - row->start - row->compute,
                               M * (wide * ring_allreduce (T, (double) n * SEQ * WIDTH)
                                    + 3 * ring_allreduce (T, (double) n * SEQ)),
                               1e-9);
            g_assert_cmpfloat (fabs (row->wait), <=, 1e-12 * (row->end - row->start));
          }
        test_run_free (r);
      }
}

/* --- the bytes of an iteration ----------------------------------------------- */

/* R x 2 x T, m micro-batches of n sequences, the stages cut after layer k:
 *   tensor collectives: per replica and micro-batch, 4B + 2 ring
 *     all-reduces of n·s·h values (the blocks', the embedding's, the LM
 *     head's), 2(T - 1) n·s·h · 4 bytes each over the ranks, and the
 *     loss's three of n·s values;
 *   boundary: per replica and micro-batch, the activations and the
 *     gradient of layer k's n x outputs floats, T transfers of a 1/T share
 *     (the same sum);
 *   data groups: for each stage, T rings of R ranks all-reduce a tensor
 *     rank's parameters Psi_s (pol_tensor_rank_params over its layers),
 *     2(R - 1) Psi_s · 4 bytes each. */
static void
test_bytes (void)
{
  const int R = 2, T = 2, M = 2, n = 1;
  g_autofree char *probe = gpt_pipeline (R, 2, T, M, n, NULL);
  GPtrArray *configs = test_load_scenario_text (probe, NULL);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *m = sim_model_new (c, NULL, NULL);
  int L = m->n_layers, k = L / 2;
  g_autofree PolTpSplit *split = g_new (PolTpSplit, L);
  g_assert_true (pol_tensor_split (m->layers, L, T, split, NULL));
  gsize NP = m->ops->n_params (m), cut = m->layers[k].param_offset;
  double psi0 = (double) pol_tensor_rank_params (m->layers, k, cut, split, T);
  double psi1 = (double) pol_tensor_rank_params (m->layers + k, L - k, NP, split + k, T);
  double boundary = 4.0 * n * m->layers[k - 1].outputs;
  kern_model_free (m);
  g_ptr_array_unref (configs);
  g_autofree char *cut_at = g_strdup_printf ("stage_layers = %d,%d\n", k, L - k);
  g_autofree char *text = gpt_pipeline (R, 2, T, M, n, cut_at);
  g_autofree char *db = test_run_messages (tmpdir, text, "bytes");
  double N = (double) n * SEQ * WIDTH;
  double tensor = R * M * ((4 * BLOCKS + 2) * 2.0 * (T - 1) * N * 4
                            + 3 * 2.0 * (T - 1) * n * SEQ * 4);
  double sends = 2 * R * M * boundary;
  double data = T * 2.0 * (R - 1) * (psi0 + psi1) * 4;
  test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages WHERE tag = 'tensor'"),
                     tensor, 1e-12);
  test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages WHERE tag IN "
                                            "('activation', 'gradient')"), sends, 1e-12);
  test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages WHERE tag = "
                                            "'allreduce'"), data, 1e-12);
  /* a boundary transfer carries 1/T of the micro-batch's tensor, rank t
   * to rank t of the next stage */
  test_assert_close (test_query_number (db, "SELECT MAX(bytes) FROM messages WHERE tag = "
                                            "'activation'"), boundary / T, 1e-12);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = "
                                            "'activation'"), ==, R * M * T);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = "
                                            "'activation' AND CAST(substr(src, 7) AS INTEGER) "
                                            "% 2 != CAST(substr(dst, 7) AS INTEGER) % 2"), ==, 0);
  /* the stages' memory is a tensor rank's */
  configs = test_load_scenario_text (text, NULL);
  c = g_ptr_array_index (configs, 0);
  m = sim_model_new (c, NULL, NULL);
  int n_st;
  SimStageMemory *st = sim_shares_memory (c, m, &n_st, NULL);
  g_assert_cmpint (n_st, ==, 2);
  g_assert_cmpfloat (st[0].params, ==, psi0);
  g_assert_cmpfloat (st[1].params, ==, psi1);
  g_free (st);
  kern_model_free (m);
  g_ptr_array_unref (configs);
}

/* ZeRO over the replicas: each tensor rank's data group reduce-scatters its
 * stage's gradient and all-gathers the updated parameters, the ring moving
 * what its all-reduce moved (2(R - 1) Psi_s floats per group); a stage's
 * optimizer state (zero 1) and gradients (zero 2) take 1/R of their bytes
 * (the math is unchanged: the stacked gradients, an element-wise update). */
static void
test_zero (void)
{
  const int R = 2, T = 2, M = 2, n = 1;
  double bytes[3];
  for (int zero = 0; zero <= 2; zero++)
    {
      g_autofree char *extra = g_strdup_printf ("zero = %d\n", zero);
      g_autofree char *text = gpt_pipeline (R, 2, T, M, n, extra);
      g_autofree char *name = g_strdup_printf ("zero%d", zero);
      g_autofree char *db = test_run_messages (tmpdir, text, name);
      bytes[zero] = test_query_number (db, "SELECT SUM(bytes) FROM messages WHERE tag = "
                                           "'allreduce'");
      g_assert_cmpfloat (bytes[zero], >, 0);
      GPtrArray *configs = test_load_scenario_text (text, NULL);
      SimConfig *c = g_ptr_array_index (configs, 0);
      KernModel *m = sim_model_new (c, NULL, NULL);
      int n_st;
      SimStageMemory *st = sim_shares_memory (c, m, &n_st, NULL);
      for (int s = 0; s < n_st; s++)
        {
          /* fp32, SGD: 4 bytes of parameters, of gradients; no state */
          g_assert_cmpfloat (st[s].param_bytes, ==, 4.0 * st[s].params);
          g_assert_cmpfloat (st[s].grad_bytes, ==, 4.0 * st[s].params / (zero >= 2 ? R : 1));
          test_assert_close (st[s].total, st[s].param_bytes + st[s].grad_bytes
                             + st[s].opt_bytes + st[s].act_bytes, 1e-15);
        }
      g_free (st);
      kern_model_free (m);
      g_ptr_array_unref (configs);
    }
  test_assert_close (bytes[1], bytes[0], 1e-12);
  test_assert_close (bytes[2], bytes[0], 1e-12);
  /* Adam in bf16: 12 bytes of state per parameter, 1/R from zero 1 */
  g_autofree char *base = gpt_pipeline (R, 2, T, M, n, "zero = 1\n");
  g_autofree char *adam0 = test_replaced (base, "precision = fp32", "precision = bf16");
  g_autofree char *adam = test_replaced (adam0, "[policy]", "optimizer = adam\n[policy]");
  GPtrArray *configs = test_load_scenario_text (adam, NULL);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *m = sim_model_new (c, NULL, NULL);
  int n_st;
  SimStageMemory *st = sim_shares_memory (c, m, &n_st, NULL);
  for (int s = 0; s < n_st; s++)
    {
      g_assert_cmpfloat (st[s].param_bytes, ==, 2.0 * st[s].params);
      g_assert_cmpfloat (st[s].grad_bytes, ==, 2.0 * st[s].params);
      g_assert_cmpfloat (st[s].opt_bytes, ==, 12.0 * st[s].params / R);
    }
  g_free (st);
  kern_model_free (m);
  g_ptr_array_unref (configs);
}

/* --- placement, layout, refusals -------------------------------------------- */

/* On servers of 4 GPUs, tensor groups of 4 consecutive workers: every
 * tensor collective stays inside a server; the mesh has tensor fastest,
 * then stage, then replica. */
static void
test_placement (void)
{
  const int R = 2, P = 2, T = 4;
  g_autofree char *base = gpt_pipeline (R, P, T, 2, 1, NULL);
  g_autofree char *text = test_replaced (base, "topology = star",
                                    "topology = nodes\ngpus_per_node = 4");
  g_autofree char *db = test_run_messages (tmpdir, text, "placement");
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = "
                                            "'tensor'"), >, 0);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = 'tensor' "
                                            "AND CAST(substr(src, 7) AS INTEGER) / 4 != "
                                            "CAST(substr(dst, 7) AS INTEGER) / 4"), ==, 0);
  for (int r = 0; r < R * P * T; r++)
    {
      g_autofree char *q = g_strdup_printf ("SELECT replica * 100 + stage * 10 + tensor "
                                            "FROM mesh WHERE rank = %d", r);
      g_assert_cmpfloat (test_query_number (db, q), ==,
                         (r / (P * T)) * 100 + (r / T) % P * 10 + r % T);
    }
}

/* layout = DPxPPxTP sets replicas, stages and tensor. */
static void
test_layout (void)
{
  g_autofree char *base = gpt_pipeline (1, 1, 1, 2, 1, NULL);
  g_autofree char *w = test_replaced (base, "workers = 1", "workers = 8");
  g_autofree char *text = g_strconcat (w, "layout = 2x2x2\n", NULL);
  g_autofree char *plain = test_replaced (text, "replicas = 1\nstages = 1\ntensor = 1\n", "");
  GPtrArray *configs = test_load_scenario_text (plain, NULL);
  SimConfig *c = g_ptr_array_index (configs, 0);
  g_assert_cmpint (base_values_int (c->values, "policy.replicas"), ==, 2);
  g_assert_cmpint (base_values_int (c->values, "policy.stages"), ==, 2);
  g_assert_cmpint (base_values_int (c->values, "policy.tensor"), ==, 2);
  g_ptr_array_unref (configs);
  /* under allreduce: DP x 1 x TP */
  g_autofree char *ar = test_replaced (plain, "kind = pipeline", "kind = allreduce");
  g_autofree char *ar4 = test_replaced (ar, "layout = 2x2x2", "layout = 4x1x2");
  g_autofree char *ar_ok = test_replaced (ar4, "microbatches = 2\n", "");
  configs = test_load_scenario_text (ar_ok, NULL);
  c = g_ptr_array_index (configs, 0);
  g_assert_cmpint (base_values_int (c->values, "policy.tensor"), ==, 2);
  g_ptr_array_unref (configs);
}

/* One line naming the key and the fix for each 3-D layout that makes no
 * sense. */
static void
test_3d_refusals (void)
{
  struct {
    const char *from, *to;
    const char *want;
  } cases[] = {
    { "tensor = 2\n", "tensor = 1\nlayout = 2x2x4\n",
      "[policy] layout: 2x2x4 is 16 workers but [cluster] workers = 8" },
    { "tensor = 2\n", "tensor = 1\nlayout = 2x2\n", "[policy] layout: \"2x2\" is not DPxPPxTP" },
    { "tensor = 2\n", "tensor = 2\nlayout = 1x4x2\n",
      "[policy] layout: 1x4x2 gives 1 for [policy] replicas, which says 2" },
    { "kind = pipeline", "kind = ps", "[policy] tensor: applies only to kind = allreduce or "
                                      "pipeline" },
    { "heads = 4", "heads = 2", "[policy] tensor: 2 does not divide the 2 attention heads" },
    { "workers = 8", "workers = 10", "[policy] tensor: 2 does not divide the 5 workers of each "
                                     "replica" },
    { "tensor = 2\n", "tensor = 2\nzero = 3\n", "[policy] zero: 3 is not modelled under kind = pipeline" },
    { "tensor = 2\n", "tensor = 1\nlayout = 2x1x4\n",
      "[policy] layout: 2x1x4 gives 1 for [policy] stages, which says 2" },
    { "kind = pipeline", "kind = gossip\nlayout = 2x2x2",
      "[policy] layout: applies only to kind = pipeline or allreduce" },
    { "tensor = 2\n", "tensor = 1\nsequence_parallel = true\n",
      "[policy] sequence_parallel: applies only with tensor > 1" },
  };
  g_autofree char *base = gpt_pipeline (2, 2, 2, 2, 1, NULL);
  g_autofree char *heads = test_replaced (base, "heads = 4", "heads = 2");
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      /* heads = 2 with T = 2 divides: make the case T = 4 over 2 heads */
      g_autofree char *t1 = k == 4 ? test_replaced (heads, "tensor = 2", "tensor = 4") : NULL;
      g_autofree char *t2 = k == 4 ? test_replaced (t1, "workers = 8", "workers = 16") : NULL;
      g_autofree char *text = k == 4 ? g_strdup (t2) : test_replaced (base, cases[k].from, cases[k].to);
      g_autofree char *msg = test_load_scenario_error (text);
      const char *want = k == 4 ? "[policy] tensor: 4 does not divide the 2 attention heads"
                                : cases[k].want;
      if (!strstr (msg, want))
        g_error ("case %zu: %s\n  does not say: %s", k, msg, want);
      g_assert_null (strchr (msg, '\n'));
    }
  /* an MLP whose hidden width T does not divide; measured compute with
   * the groups' math */
  g_autofree char *mlp = g_strdup ("[cluster]\nworkers = 8\n[model]\nkind = mlp\nhidden = 30,30\n"
                                   "batch = 8\n[policy]\nkind = pipeline\nstages = 2\n"
                                   "replicas = 1\ntensor = 4\n");
  g_autofree char *msg = test_load_scenario_error (mlp);
  if (!strstr (msg, "[policy] tensor: 4 does not divide the 30 outputs"))
    g_error ("%s", msg);
  g_autofree char *w32 = test_replaced (mlp, "hidden = 30,30", "hidden = 32,32");
  g_autofree char *measured = g_strconcat (w32, "[device]\ncompute_time = measured\n", NULL);
  g_autofree char *msg2 = test_load_scenario_error (measured);
  if (!strstr (msg2, "[device] compute_time: measured cannot time a pipeline stage's "
                     "operations with [policy] tensor = 4"))
    g_error ("%s", msg2);
  g_assert_null (strchr (msg2, '\n'));
}

/* --- the math ---------------------------------------------------------------- */

/* replicas 2 x stages 2 x tensor 2 learns what 2 data-parallel workers
 * learn with the same global batch: both draw each replica's batch from
 * the same part of the data, and each step's gradient is the one-device
 * gradient up to the order of the sums the tensor cut splits (within
 * gamma_K = K u / (1 - K u) of the sums' magnitudes, K the longest sum,
 * u = 2^-24; tests/test-tensor.c).  To first order a step adds at most
 * that relative error to the parameters, so after k steps the evaluated
 * loss lies within k gamma_K of the data-parallel loss, relative, as in
 * /tensor-step/same-learning; checked for SGD, momentum and Adam at every
 * evaluation. */
static void
test_same_learning (void)
{
  const char *optimizers[] = { "sgd", "momentum", "adam" };
  const int K = 64;                     /* the widest sum: hidden 64 */
  const double u = ldexp (1.0, -24);
  const double gamma = K * u / (1 - K * u);
  const int R = 2, P = 2, T = 2, iterations = 6;
  for (gsize o = 0; o < G_N_ELEMENTS (optimizers); o++)
    {
      g_autofree char *one = g_strdup_printf (
        "[scenario]\niterations = %d\n[cluster]\nworkers = %d\n"
        "[model]\nkind = mlp\nhidden = 64,64\noptimizer = %s\nlr = 0.05\nbatch = 16\n"
        "eval_every = %d\n[policy]\nkind = allreduce\n", iterations, R, optimizers[o], R);
      g_autofree char *three = g_strdup_printf (
        "[scenario]\niterations = %d\n[cluster]\nworkers = %d\n"
        "[model]\nkind = mlp\nhidden = 64,64\noptimizer = %s\nlr = 0.05\nbatch = 16\n"
        "eval_every = %d\n[policy]\nkind = pipeline\nreplicas = %d\nstages = %d\n"
        "tensor = %d\nmicrobatches = 4\n", iterations, R * P * T, optimizers[o], R * P * T, R,
        P, T);
      TestRun *a = test_run_collect (one, NULL);
      TestRun *b = test_run_collect (three, NULL);
      g_assert_cmpuint (a->metrics->len, ==, iterations + 1);
      g_assert_cmpuint (b->metrics->len, ==, a->metrics->len);
      for (guint i = 0; i < a->metrics->len; i++)
        {
          const TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
          const TestMetric *y = &g_array_index (b->metrics, TestMetric, i);
          double bound = MAX (i, 1) * gamma * fabs (x->loss);
          if (fabs (x->loss - y->loss) > bound)
            g_error ("%s, evaluation %u: loss %.9g against %.9g, beyond %.3g", optimizers[o], i,
                     y->loss, x->loss, bound);
        }
      /* it learned something */
      g_assert_cmpfloat (g_array_index (b->metrics, TestMetric, iterations).loss, <,
                         g_array_index (b->metrics, TestMetric, 0).loss);
      test_run_free (a);
      test_run_free (b);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-3d-XXXXXX", NULL);
  g_test_add_func ("/3d/free-communication", test_free_communication);
  g_test_add_func ("/3d/one-stage", test_one_stage);
  g_test_add_func ("/3d/bytes", test_bytes);
  g_test_add_func ("/3d/placement", test_placement);
  g_test_add_func ("/3d/layout", test_layout);
  g_test_add_func ("/3d/refusals", test_3d_refusals);
  g_test_add_func ("/3d/same-learning", test_same_learning);
  g_test_add_func ("/3d/zero", test_zero);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
