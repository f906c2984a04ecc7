/*
 * test-tensor-step.c — tensor and sequence parallelism of a data-parallel
 * step's timing ([policy] tensor, sequence_parallel with kind = allreduce;
 * policies/tensor.c): the bytes and the time of a step's tensor
 * collectives in closed form, the data-parallel reduction beside them, a
 * tensor rank's parameters and activations, where the tensor groups sit,
 * and the refusals.
 *
 * The model is a small GPT (kind = transformer) of B blocks of width h on
 * sequences of s tokens, batch b: each block all-reduces b·s·h values
 * twice in forward (after the attention's output projection and after the
 * MLP) and twice in backward (at the inputs of the query/key/value
 * projection and of the MLP).  The embedding and the LM head tied to it are
 * cut by vocabulary: the embedding's output is all-reduced in forward, the
 * LM head's input gradient in backward, and the loss over the cut outputs
 * all-reduces b·s values three times (the maximum, the sum of the
 * exponentials, the target's logit).  With sequence parallelism each of a
 * block's all-reduces is a reduce-scatter and an all-gather, the
 * embedding's a reduce-scatter, and the LM head adds an all-gather of its
 * input in forward and a reduce-scatter of its gradient in backward: 4B +
 * 3/2 all-reduces' worth of b·s·h values, against 4B + 2 without.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "device/model.h"
#include "config/models.h"
#include "kernels/tensor.h"
#include "tests/util.h"

static char *tmpdir;

#define BLOCKS 2
#define WIDTH 64
#define SEQ 16
#define BATCH 2
#define VOCAB 100
#define BW 1e9
#define LAT 5e-6

/* A scenario of `workers` on a star, tensor T; `extra` lines end [policy]. */
static char *
scenario (int workers, int T, const char *precision, const char *extra)
{
  return g_strdup_printf ("[scenario]\niterations = 2\n"
                          "[cluster]\nworkers = %d\n"
                          "[device]\nflops = 10TFLOPS\nprecision = %s\n"
                          "[network]\ntopology = star\nbandwidth = %gBps\nlatency = %gs\n"
                          "contention = none\n"
                          "[model]\nkind = transformer\nblocks = %d\nwidth = %d\nheads = 4\n"
                          "sequence = %d\nvocabulary = %d\nbatch = %d\n"
                          "[policy]\nkind = allreduce\nalgorithm = ring\nbucket_size = 0\n"
                          "tensor = %d\n%s",
                          workers, precision, BW, LAT, BLOCKS, WIDTH, SEQ, VOCAB, BATCH, T,
                          extra ? extra : "");
}

/* Bytes per value on the wire in `precision`. */
static double
value_bytes (const char *precision)
{
  return strcmp (precision, "bf16") == 0 || strcmp (precision, "fp16") == 0 ? 2 : 4;
}

/* The ring's all-reduce of n values of e bytes over T ranks on the star:
 * 2(T - 1) steps of n / T values across two links. */
static double
ring_allreduce (int T, double n, double e)
{
  return 2.0 * (T - 1) * (2 * LAT + n / T * e / BW);
}

/* One tensor group and no data parallelism (workers = T): an iteration is
 * the rank's compute and update, then the collectives one after another:
 * 4B + 2 all-reduces of b·s·h values (4B + 3/2 with sequence parallelism,
 * a reduce-scatter or an all-gather taking half an all-reduce on a ring)
 * and three of b·s.  The messages carry 2(T - 1) · n · e bytes per
 * all-reduce of n values, summed over the ranks. */
static void
test_tensor_closed_form (void)
{
  const char *precisions[] = { "fp32", "bf16" };
  const char *modes[] = { "", "sequence_parallel = true\n" };
  double n = (double) BATCH * SEQ * WIDTH, tokens = (double) BATCH * SEQ;
  for (int T = 2; T <= 4; T *= 2)
    for (gsize p = 0; p < G_N_ELEMENTS (precisions); p++)
      for (gsize k = 0; k < G_N_ELEMENTS (modes); k++)
        {
          double e = value_bytes (precisions[p]);
          double wide = 4 * BLOCKS + (k == 0 ? 2 : 1.5);
          g_autofree char *text = scenario (T, T, precisions[p], modes[k]);
          TestRun *r = test_run_collect (text, NULL);
          g_assert_cmpuint (r->rows->len, ==, 2 * (guint) T);
          for (guint i = 0; i < r->rows->len; i++)
            {
              const TestRow *row = &g_array_index (r->rows, TestRow, i);
              test_assert_close (row->end - row->start - row->compute,
                                 wide * ring_allreduce (T, n, e)
                                 + 3 * ring_allreduce (T, tokens, e), 1e-9);
              g_assert_cmpfloat (row->wait, ==, 0);
            }
          test_run_free (r);
          /* the bytes, from the trace */
          g_autofree char *db = test_run_messages (tmpdir, text, "t");
          test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages"),
                             wide * 2.0 * (T - 1) * n * e + 3 * 2.0 * (T - 1) * tokens * e,
                             1e-12);
        }
}

/* A tensor rank computes a 1/T share of every cut layer (the pairs and the
 * layers between them) and the whole of the others; with sequence
 * parallelism a 1/T share of everything.  So the compute of T = 2 lies
 * between half and all of T = 1's, and sequence parallelism lowers it
 * further to exactly half. */
static void
test_tensor_compute_share (void)
{
  /* norms and adds take time only with a memory bandwidth */
  const char *bw = "flops = 10TFLOPS\nmemory_bandwidth = 1TBps";
  g_autofree char *one0 = scenario (1, 1, "fp32", NULL);
  g_autofree char *two0 = scenario (2, 2, "fp32", NULL);
  g_autofree char *sp0 = scenario (2, 2, "fp32", "sequence_parallel = true\n");
  g_autofree char *one = test_replaced (one0, "flops = 10TFLOPS", bw);
  g_autofree char *two = test_replaced (two0, "flops = 10TFLOPS", bw);
  g_autofree char *two_sp = test_replaced (sp0, "flops = 10TFLOPS", bw);
  TestRun *r1 = test_run_collect (one, NULL);
  TestRun *r2 = test_run_collect (two, NULL);
  TestRun *r3 = test_run_collect (two_sp, NULL);
  GPtrArray *configs = test_load_scenario_text (one, NULL);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *m = sim_model_new (c, NULL, NULL);
  double update = sim_update_seconds (c, m->ops->n_params (m));
  double c1 = g_array_index (r1->rows, TestRow, 0).compute - update;
  double c2 = g_array_index (r2->rows, TestRow, 0).compute;
  double c3 = g_array_index (r3->rows, TestRow, 0).compute;
  g_assert_cmpfloat (c2, <, c1);
  g_assert_cmpfloat (c2, >, c1 / 2);
  g_assert_cmpfloat (c3, <, c2);
  kern_model_free (m);
  g_ptr_array_unref (configs);
  test_run_free (r1);
  test_run_free (r2);
  test_run_free (r3);
}

/* Full recomputation runs each block's forward again in backward, with its
 * two all-reduces: 2B more of b·s·h values (the embedding and the loss are
 * not recomputed); selective recomputation recomputes no cut pair's ends
 * and adds none. */
static void
test_tensor_recompute (void)
{
  const int T = 2;
  double n = (double) BATCH * SEQ * WIDTH, tokens = (double) BATCH * SEQ;
  struct {
    const char *recompute;
    double wide;
  } cases[] = { { "full", 6 * BLOCKS + 2 }, { "selective", 4 * BLOCKS + 2 } };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *base = scenario (T, T, "fp32", NULL);
      g_autofree char *with = g_strdup_printf ("batch = %d\nrecompute = %s", BATCH,
                                               cases[k].recompute);
      g_autofree char *key = g_strdup_printf ("batch = %d", BATCH);
      g_autofree char *text = test_replaced (base, key, with);
      TestRun *r = test_run_collect (text, NULL);
      const TestRow *row = &g_array_index (r->rows, TestRow, 0);
      test_assert_close (row->end - row->start - row->compute,
                         cases[k].wide * ring_allreduce (T, n, 4)
                         + 3 * ring_allreduce (T, tokens, 4), 1e-9);
      test_run_free (r);
    }
}

/* Data parallelism beside the tensor groups: with D = 2 data ranks and
 * one bucket, each of the T data groups all-reduces its 1/T share of the
 * gradient (floor(P / T) floats) after the step: 2(D - 1) times the share
 * in bytes over the group's ranks, T groups. */
static void
test_data_beside_tensor (void)
{
  const int T = 2, D = 2;
  g_autofree char *text = scenario (T * D, T, "fp32", NULL);
  GPtrArray *configs = test_load_scenario_text (text, NULL);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *m = sim_model_new (c, NULL, NULL);
  double P = (double) m->ops->n_params (m);
  kern_model_free (m);
  g_ptr_array_unref (configs);
  g_autofree char *db = test_run_messages (tmpdir, text, "d");
  double n = (double) BATCH * SEQ * WIDTH, tokens = (double) BATCH * SEQ;
  double tensor = D * ((4 * BLOCKS + 2) * 2.0 * (T - 1) * n * 4 + 3 * 2.0 * (T - 1) * tokens * 4);
  double data = T * 2.0 * (D - 1) * floor (P / T) * 4;
  test_assert_close (test_query_number (db, "SELECT SUM(bytes) FROM messages"), tensor + data,
                     1e-12);
  /* every worker has its coordinates in the mesh: tensor fastest */
  for (int r = 0; r < T * D; r++)
    {
      g_autofree char *q = g_strdup_printf ("SELECT tensor * 1000 + replica FROM mesh WHERE "
                                            "rank = %d", r);
      g_assert_cmpfloat (test_query_number (db, q), ==, (r % T) * 1000 + r / T);
    }
}

/* A tensor rank holds a 1/T share of each block's four cut weight
 * matrices (query/key/value h x 3h, output h x h, MLP h x 4h and 4h x h),
 * of the column layers' biases (3h and 4h) and of the token embedding
 * (V x h): P - B(1 - 1/T)(12h² + 7h) - (1 - 1/T) V h parameters; the rest
 * (norms, the row layers' biases, the position embedding) whole. */
static void
test_tensor_memory (void)
{
  double h = WIDTH;
  for (int T = 1; T <= 4; T *= 2)
    {
      g_autofree char *text = scenario (T, T, "bf16", NULL);
      GPtrArray *configs = test_load_scenario_text (text, NULL);
      SimConfig *c = g_ptr_array_index (configs, 0);
      KernModel *m = sim_model_new (c, NULL, NULL);
      double P = (double) m->ops->n_params (m);
      SimMemoryTerms t;
      sim_memory_terms (c, m, &t);
      g_assert_cmpint (t.tensor, ==, T);
      double mine = P - BLOCKS * (1.0 - 1.0 / T) * (12 * h * h + 7 * h)
                    - (1.0 - 1.0 / T) * VOCAB * h;
      test_assert_close (t.params, 2 * mine, 1e-15);
      test_assert_close (t.grads, 2 * mine, 1e-15);
      test_assert_close (t.state, 4 * mine, 1e-15);   /* SGD: the fp32 master copy */
      kern_model_free (m);
      g_ptr_array_unref (configs);
    }
}

/* Tensor groups are consecutive workers: on servers of 4 GPUs, groups of
 * 2 or 4 stay inside one; groups of 8 cannot. */
static void
test_tensor_placement (void)
{
  struct {
    int T;
    const char *want;
  } cases[] = {
    { 2, "each inside one server" }, { 4, "each inside one server" },
    { 8, "some across servers (2 of 2)" },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *base = scenario (16, cases[k].T, "fp32", NULL);
      g_autofree char *more = test_replaced (base, "heads = 4", "heads = 8");
      g_autofree char *nodes = test_replaced (more, "topology = star",
                                         "topology = nodes\ngpus_per_node = 4");
      g_autofree char *final = g_strconcat (nodes, "[trace]\ndetail = summary\n", NULL);
      g_autofree char *ini = g_build_filename (tmpdir, "p.ini", NULL);
      g_assert_true (g_file_set_contents (ini, final, -1, NULL));
      g_autofree char *out = NULL, *err = NULL;
      int rc = test_run_dtsim (tmpdir, &out, &err, "check", ini, NULL);
      if (rc != 0)
        g_error ("exit %d: %s", rc, err);
      if (!strstr (out, cases[k].want))
        g_error ("T = %d: no '%s' in:\n%s", cases[k].T, cases[k].want, out);
    }
}

/* One line naming the key and the fix for each layout that makes no sense. */
static void
test_tensor_refusals (void)
{
  const TestRefusal cases[] = {
    { "workers = 4", "workers = 6", "[policy] tensor: 4 does not divide the 6 workers" },
    { "heads = 4", "heads = 2", "[policy] tensor: 4 does not divide the 2 attention heads" },
    { "tensor = 4", "tensor = 3\nsequence_parallel = false",
      "[policy] tensor: 3 does not divide the 4 workers" },
    { "tensor = 4", "tensor = 1\nsequence_parallel = true",
      "[policy] sequence_parallel: applies only with tensor > 1" },
    { "kind = allreduce", "kind = ps", "[policy] tensor: applies only to kind = allreduce" },
    { "tensor = 4", "tensor = 4\nzero = 3", "[policy] zero: 3 is not modelled with tensor > 1" },
    { "tensor = 4", "tensor = 4\ncompression = sign", "[policy] compression: not modelled" },
    { "tensor = 4", "tensor = 2048", "[policy] tensor" },
  };
  g_autofree char *base = scenario (4, 4, "fp32", NULL);
  test_refusals (base, cases, G_N_ELEMENTS (cases));
  /* an MLP whose hidden width T does not divide */
  g_autofree char *mlp = g_strdup ("[cluster]\nworkers = 4\n[model]\nkind = mlp\nhidden = 30\n"
                                   "[policy]\nkind = allreduce\ntensor = 4\n");
  g_autofree char *msg = test_load_scenario_error (mlp);
  g_assert_nonnull (strstr (msg, "[policy] tensor: 4 does not divide the 30 outputs"));
}

/* A tensor group learns what one device learns with the same global batch:
 * D data ranks of T workers against D workers.  Every step's gradient is
 * the one-device gradient up to the order of the sums the cut splits
 * (kernels/tensor.c; tests/test-tensor.c bounds each entry within
 * gamma_K = K u / (1 - K u) of the sums' magnitudes, K the longest sum, u
 * = 2^-24).  To first order each step adds at most that relative error to
 * the parameters, so after k steps the evaluated loss lies within
 * k gamma_K of the one-device loss, relative; the test checks that bound
 * for SGD, momentum and Adam, every evaluation. */
static void
test_tensor_same_learning (void)
{
  const char *optimizers[] = { "sgd", "momentum", "adam" };
  const int K = 64;                     /* the widest sum: hidden 64 */
  const double u = ldexp (1.0, -24);
  const double gamma = K * u / (1 - K * u);
  for (gsize o = 0; o < G_N_ELEMENTS (optimizers); o++)
    for (int T = 2; T <= 4; T *= 2)
      {
        const int D = 2, iterations = 8;
        g_autofree char *one = g_strdup_printf (
          "[scenario]\niterations = %d\n[cluster]\nworkers = %d\n"
          "[model]\nkind = mlp\nhidden = 64,64\noptimizer = %s\nlr = 0.05\neval_every = %d\n"
          "[policy]\nkind = allreduce\n", iterations, D, optimizers[o], D);
        g_autofree char *split = g_strdup_printf (
          "[scenario]\niterations = %d\n[cluster]\nworkers = %d\n"
          "[model]\nkind = mlp\nhidden = 64,64\noptimizer = %s\nlr = 0.05\neval_every = %d\n"
          "[policy]\nkind = allreduce\ntensor = %d\n", iterations, D * T, optimizers[o], D, T);
        TestRun *a = test_run_collect (one, NULL);
        TestRun *b = test_run_collect (split, NULL);
        g_assert_cmpuint (a->metrics->len, ==, iterations + 1);
        g_assert_cmpuint (b->metrics->len, ==, a->metrics->len);
        for (guint i = 0; i < a->metrics->len; i++)
          {
            const TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
            const TestMetric *y = &g_array_index (b->metrics, TestMetric, i);
            g_assert_cmpint (x->step, ==, y->step);
            double bound = MAX (i, 1) * gamma * fabs (x->loss);
            if (fabs (x->loss - y->loss) > bound)
              g_error ("%s, T = %d, evaluation %u: loss %.9g against %.9g, beyond %.3g",
                       optimizers[o], T, i, y->loss, x->loss, bound);
          }
        test_run_free (a);
        test_run_free (b);
      }
}

/* The timing's cut (policies/tensor.c, any model with weight shapes) and
 * the real math's (kernels/tensor.c, MLPs) are one rule: for MLPs of 1 to
 * 4 hidden layers they cut the same layers the same way and give a rank
 * the same parameters. */
static void
test_tensor_cuts_agree (void)
{
  const int widths[] = { 32, 48, 64, 16 };
  for (int n_hidden = 1; n_hidden <= 4; n_hidden++)
    {
      KernModel *m = kern_mlp_new (8, widths, n_hidden, 4, KERN_LOSS_XENT, NULL);
      const int T = 4;
      g_autofree PolTpSplit *split = g_new (PolTpSplit, m->n_layers);
      g_assert_true (pol_tensor_split (m->layers, m->n_layers, T, split, NULL));
      KernTensorPlan *plan = kern_tensor_plan_new (m, T, NULL);
      g_assert_nonnull (plan);
      for (int l = 0; l < m->n_layers; l++)
        {
          KernTensorSplit k = kern_tensor_split (plan, l);
          if (k == KERN_TENSOR_COLUMN)
            g_assert_cmpint (split[l], ==, POL_TP_COLUMN);
          else if (k == KERN_TENSOR_ROW)
            g_assert_cmpint (split[l], ==, POL_TP_ROW);
          else
            g_assert_true (split[l] == POL_TP_WHOLE || split[l] == POL_TP_INSIDE);
        }
      for (int t = 0; t < T; t++)
        g_assert_cmpuint (pol_tensor_rank_params (m->layers, m->n_layers,
                                                  m->ops->n_params (m), split, T),
                          ==, kern_tensor_rank_params (plan, t));
      kern_tensor_plan_free (plan);
      kern_model_free (m);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-tensor-step-XXXXXX", NULL);
  g_test_add_func ("/tensor-step/closed-form", test_tensor_closed_form);
  g_test_add_func ("/tensor-step/compute-share", test_tensor_compute_share);
  g_test_add_func ("/tensor-step/recompute", test_tensor_recompute);
  g_test_add_func ("/tensor-step/data-beside", test_data_beside_tensor);
  g_test_add_func ("/tensor-step/memory", test_tensor_memory);
  g_test_add_func ("/tensor-step/placement", test_tensor_placement);
  g_test_add_func ("/tensor-step/refusals", test_tensor_refusals);
  g_test_add_func ("/tensor-step/same-learning", test_tensor_same_learning);
  g_test_add_func ("/tensor-step/cuts-agree", test_tensor_cuts_agree);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
