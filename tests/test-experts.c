/*
 * test-experts.c — mixture-of-experts transformers ([model] experts,
 * top_k) and expert parallelism ([policy] experts, capacity_factor,
 * routing, zipf; policies/experts.c): the parameter and FLOP counts in
 * closed form, the Mixtral 8x7B shape, a dense run left as it was, the
 * all-to-alls' bytes, the routing's shares, capacity and load, the memory
 * terms, and the refusals.
 *
 * The model is a small decoder of B blocks of width h, ffn f, SwiGLU,
 * RMSNorm, rotary positions, an untied head and no biases, so that a block
 * holds 2h (norms) + h (h + 2 kv h / heads) + h^2 (attention) + h E
 * (router) + E 3 h f (experts) parameters.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "config/models.h"
#include "device/model.h"
#include "tests/util.h"
#include "views/tracedigest.h"

static char *tmpdir;

#define BLOCKS 2
#define WIDTH 64
#define HEADS 4
#define KV 2
#define FFN 96
#define SEQ 16
#define VOCAB 100
#define BATCH 2
#define EXPERTS 4
#define BW 1e9
#define LAT 5e-6

/* A scenario of `workers` on a star; `model` and `policy` lines end their
 * sections. */
static char *
scenario (int workers, const char *model, const char *policy)
{
  return g_strdup_printf ("[scenario]\nname = moe\niterations = 2\n"
                          "[cluster]\nworkers = %d\n"
                          "[device]\nflops = 10TFLOPS\nprecision = bf16\n"
                          "[network]\ntopology = star\nbandwidth = %gBps\nlatency = %gs\n"
                          "contention = none\n"
                          "[model]\nkind = transformer\nblocks = %d\nwidth = %d\nheads = %d\n"
                          "kv_heads = %d\nffn = %d\nsequence = %d\nvocabulary = %d\n"
                          "batch = %d\nactivation = swiglu\nnorm = rmsnorm\nhead = untied\n"
                          "position = rotary\nbias = false\n%s"
                          "[policy]\nkind = allreduce\nalgorithm = ring\nbucket_size = 0\n%s",
                          workers, BW, LAT, BLOCKS, WIDTH, HEADS, KV, FFN, SEQ, VOCAB, BATCH,
                          model ? model : "", policy ? policy : "");
}

/* The model and config of a scenario text (free both). */
static KernModel *
model_of (const char *text, SimConfig **config)
{
  *config = test_load_one (text);
  KernModel *m = sim_model_new (*config, NULL, NULL);
  g_assert_nonnull (m);
  return m;
}

/* Parameters of the decoder above with E experts (E <= 1: dense). */
static double
decoder_params (double B, double h, double heads, double kv, double f, double V, double E)
{
  double attention = h * (h + 2 * kv * h / heads) + h * h;
  double mlp = 3 * h * f;
  double block = 2 * h + attention + (E > 1 ? h * E + E * mlp : mlp);
  return V * h + B * block + h + V * h;
}

/* Parameters and FLOPs in closed form: E experts hold E MLPs and a router,
 * a token runs k of them: forward FLOPs per sample grow by B ((k - 1) MLPs
 * of 2 s 3 h f and the router's 2 s h E) over the dense model. */
static void
test_counts (void)
{
  g_autofree char *dense = scenario (1, NULL, NULL);
  g_autofree char *moe = scenario (1, "experts = 4\ntop_k = 2\n", NULL);
  SimConfig *cd, *cm;
  KernModel *md = model_of (dense, &cd);
  KernModel *mm = model_of (moe, &cm);
  double B = BLOCKS, h = WIDTH, f = FFN, s = SEQ, E = EXPERTS, k = 2;
  g_assert_cmpfloat ((double) md->ops->n_params (md), ==,
                     decoder_params (B, h, HEADS, KV, f, VOCAB, 1));
  g_assert_cmpfloat ((double) mm->ops->n_params (mm), ==,
                     decoder_params (B, h, HEADS, KV, f, VOCAB, E));
  g_assert_cmpint (mm->n_layers, ==, md->n_layers + 2 * BLOCKS);
  double extra = B * ((k - 1) * 2 * s * 3 * h * f + 2 * s * h * E);
  test_assert_close (mm->ops->flops_forward (mm, 1) - md->ops->flops_forward (md, 1), extra,
                     1e-12);
  /* the expert layers are marked, three a block (gate/up, SwiGLU, down) */
  int marked = 0;
  for (int l = 0; l < mm->n_layers; l++)
    if (mm->layers[l].experts == EXPERTS)
      {
        marked++;
        g_assert_cmpint (mm->layers[l].top_k, ==, 2);
      }
  g_assert_cmpint (marked, ==, 3 * BLOCKS);
  kern_model_free (md);
  kern_model_free (mm);
  sim_config_free (cd);
  sim_config_free (cm);
}

/* Mixtral 8x7B (Jiang et al. 2024): 46.7 B parameters, 12.9 B active (the
 * dense ones and two experts of eight per block). */
static void
test_mixtral (void)
{
  const char *text = "[cluster]\nworkers = 1\n[model]\nkind = transformer\n"
                     "shape = mixtral-8x7b\n[policy]\nkind = allreduce\n";
  SimConfig *c;
  KernModel *m = model_of (text, &c);
  double B = 32, h = 4096, f = 14336, V = 32000, E = 8, k = 2;
  double P = decoder_params (B, h, 32, 8, f, V, E);
  double active = P - B * (E - k) * 3 * h * f;
  g_assert_cmpfloat ((double) m->ops->n_params (m), ==, P);
  g_assert_cmpfloat (fabs (P - 46.7e9), <, 0.05e9);
  g_assert_cmpfloat (fabs (active - 12.9e9), <, 0.05e9);
  kern_model_free (m);
  sim_config_free (c);
}

/* The digests of the tables a run's timing fills. */
static char *
timing_digest (const char *db)
{
  static const char *const tables[] = { "iterations", "spans", "messages", "buckets", "mesh",
                                        NULL };
  return test_tables_digest (db, tables);
}

/* experts absent, 0 or 1 (and [policy] experts = 1): the dense run, row for
 * row. */
static void
test_dense_unchanged (void)
{
  g_autofree char *dense = scenario (4, NULL, NULL);
  g_autofree char *one = scenario (4, "experts = 1\n", "experts = 1\n");
  g_autofree char *zero = scenario (4, "experts = 0\n", NULL);
  g_autofree char *a = test_run_messages (tmpdir, dense, "dense");
  g_autofree char *b = test_run_messages (tmpdir, one, "one");
  g_autofree char *z = test_run_messages (tmpdir, zero, "zero");
  g_autofree char *da = timing_digest (a), *db = timing_digest (b), *dz = timing_digest (z);
  g_assert_cmpstr (da, ==, db);
  g_assert_cmpstr (da, ==, dz);
  g_assert_nonnull (strstr (da, "messages"));
}

/* One iteration on one expert group of W = EP = 4: each all-to-all moves n
 * = b s k h values per rank, naive sending EP - 1 blocks of floor(n / EP)
 * values of 2 bytes (bf16); four per block (dispatch and combine, forward
 * and backward). */
static void
test_alltoall_bytes (void)
{
  g_autofree char *text = scenario (4, "experts = 4\ntop_k = 2\n", "experts = 4\n");
  g_autofree char *db = test_run_messages (tmpdir, text, "a2a");
  double EP = 4, e = 2, n = (double) BATCH * SEQ * 2 * WIDTH;
  double want = 4 * BLOCKS * EP * (EP - 1) * floor (n / EP) * e;
  double got = test_query_number (db, "SELECT SUM(bytes) FROM messages WHERE tag = 'alltoall'");
  g_assert_cmpfloat (got, ==, want);
  double count = test_query_number (db, "SELECT COUNT(*) FROM messages WHERE tag = 'alltoall'");
  g_assert_cmpfloat (count, ==, 4 * BLOCKS * EP * (EP - 1));
  double param = test_query_number (db, "SELECT CAST(value AS REAL) FROM params "
                                        "WHERE key = 'policy.alltoall_bytes'");
  g_assert_cmpfloat (param, ==, 4 * BLOCKS * n * e);
  double load = test_query_number (db, "SELECT CAST(value AS REAL) FROM params "
                                       "WHERE key = 'policy.expert_load'");
  g_assert_cmpfloat (load, ==, 1);
  /* the all-to-alls' share of the run: each op's transfers start together
   * and the chain waits for the last to end */
  double spent = test_query_number (db, "SELECT SUM(e - s) FROM (SELECT start AS s, MAX(end) AS e "
                                        "FROM messages WHERE tag = 'alltoall' GROUP BY start)");
  double end = test_query_number (db, "SELECT sim_time FROM runs");
  double share = test_query_number (db, "SELECT CAST(value AS REAL) FROM params "
                                        "WHERE key = 'policy.alltoall_share'");
  g_assert_cmpfloat (spent, >, 0);
  g_assert_cmpfloat_with_epsilon (share, spent / end, 1e-5 * share);
}

/* The routing's figures for E experts over EP ranks at capacity c. */
static void
routing_of (const char *routing, double zipf, double c, int E, int EP, PolExperts *ex)
{
  g_autofree char *model = g_strdup_printf ("experts = %d\n", E);
  g_autofree char *z = strcmp (routing, "zipf") == 0 ? g_strdup_printf ("zipf = %g\n", zipf)
                                                      : g_strdup ("");
  g_autofree char *policy = g_strdup_printf ("experts = %d\nrouting = %s\n%s"
                                             "capacity_factor = %g\n", EP, routing, z, c);
  g_autofree char *text = scenario (EP, model, policy);
  SimConfig *cfg;
  KernModel *m = model_of (text, &cfg);
  pol_experts_of (cfg->values, m->layers, m->n_layers, ex);
  kern_model_free (m);
  sim_config_free (cfg);
}

/* Zipf's shares: (i + 1)^-s / H_E(s), with s = 1 the harmonic number; s = 0
 * is uniform. */
static void
test_shares (void)
{
  PolExperts u, z0, z1;
  routing_of ("uniform", 0, 1.25, 8, 8, &u);
  routing_of ("zipf", 0, 1.25, 8, 8, &z0);
  routing_of ("zipf", 1, 100, 8, 8, &z1);
  g_assert_cmpfloat (u.load, ==, 1);
  g_assert_cmpfloat (u.dropped, ==, 0);
  g_assert_cmpfloat (z0.load, ==, u.load);
  g_assert_cmpfloat (z0.dropped, ==, u.dropped);
  /* uncapped: expert 0 takes 1 / H_8, its rank (one expert each) 8 / H_8 */
  test_assert_close (z1.hot, 1 / test_harmonic (8), 1e-12);
  test_assert_close (z1.load, 8 / test_harmonic (8), 1e-12);
  g_assert_cmpfloat (z1.dropped, ==, 0);
}

/* Capacity c caps every expert at c / E of the assignments: the hot
 * expert computes min(p_0, c / E), the rest of each expert's share is
 * dropped. */
static void
test_capacity (void)
{
  double c = 1.25, s = 2;
  int E = 8;
  PolExperts ex;
  routing_of ("zipf", s, c, E, 4, &ex);
  double H = 0;
  for (int i = 0; i < E; i++)
    H += pow (i + 1, -s);
  double dropped = 0, load = 0;
  for (int r = 0; r < 4; r++)
    {
      double taken = 0;
      for (int i = 2 * r; i < 2 * r + 2; i++)
        {
          double p = pow (i + 1, -s) / H;
          taken += MIN (p, c / E);
          dropped += MAX (p - c / E, 0);
        }
      load = MAX (load, 4 * taken);
    }
  g_assert_cmpfloat (pow (1, -s) / H, >, c / E); /* expert 0 is over capacity */
  test_assert_close (ex.hot, c / E, 1e-12);
  test_assert_close (ex.dropped, dropped, 1e-12);
  test_assert_close (ex.load, load, 1e-12);
}

/* A hotter expert never shortens an iteration: zipf s = 0 is uniform to
 * the row, and the iteration grows with s up to the capacity. */
static void
test_skew_iteration (void)
{
  g_autofree char *model = g_strdup_printf ("experts = %d\n", EXPERTS);
  const char *policies[] = {
    "experts = 4\n", "experts = 4\nrouting = zipf\nzipf = 0\n",
    "experts = 4\nrouting = zipf\nzipf = 0.5\ncapacity_factor = 4\n",
    "experts = 4\nrouting = zipf\nzipf = 1\ncapacity_factor = 4\n",
    "experts = 4\nrouting = zipf\nzipf = 1.5\ncapacity_factor = 4\n",
    "experts = 4\nrouting = zipf\nzipf = 3\ncapacity_factor = 4\n",
  };
  double last = 0;
  for (guint i = 0; i < G_N_ELEMENTS (policies); i++)
    {
      g_autofree char *text = scenario (4, model, policies[i]);
      TestRun *r = test_run_collect (text, NULL);
      double t = r->sum.sim_time;
      if (i == 1)
        g_assert_cmpfloat (t, ==, last);
      else if (i > 1)
        g_assert_cmpfloat (t, >, last);
      last = t;
      test_run_free (r);
    }
}

/* A rank holds the dense parameters and 1/EP of the experts', sharded P/N
 * in all under ZeRO; its expert activations at the capacity. */
static void
test_memory (void)
{
  g_autofree char *text = scenario (4, "experts = 4\n", "experts = 4\n");
  g_autofree char *z1 = scenario (4, "experts = 4\n", "experts = 4\nzero = 1\n");
  SimConfig *c, *c1;
  KernModel *m = model_of (text, &c);
  KernModel *m1 = model_of (z1, &c1);
  SimMemoryTerms t, t1;
  sim_memory_terms (c, m, &t);
  sim_memory_terms (c1, m1, &t1);
  double E = EXPERTS, EP = 4;
  double P = (double) m->ops->n_params (m);
  double expert = BLOCKS * E * 3.0 * WIDTH * FFN;
  g_assert_cmpint (t.experts, ==, 4);
  g_assert_cmpfloat (t.params, ==, 2 * (P - expert + expert / EP));
  g_assert_cmpfloat (t1.state, ==, t1.state_bytes * P / 4);
  g_assert_cmpfloat (t1.params, ==, t.params);
  kern_model_free (m);
  kern_model_free (m1);
  sim_config_free (c);
  sim_config_free (c1);
}

static void
test_refusals_lines (void)
{
  const TestRefusal cases[] = {
    { "experts = 4\nrouting", "experts = 3\nrouting",
      "[policy] experts: 3 does not divide the 4 data-parallel ranks" },
    { "[model]\nexperts = 4", "[model]\nexperts = 6", "[policy] experts: 4 does not divide the 6 experts" },
    { "[model]\nexperts = 4", "[model]\nexperts = 4\ntop_k = 5", "[model] top_k: 5 is more than the 4 experts" },
    { "capacity_factor = 1.25", "capacity_factor = 0", "[policy] capacity_factor" },
    { "routing = zipf", "routing = uniform", "[policy] zipf: applies only with routing = zipf" },
    { "kind = allreduce", "kind = ps", "[policy] experts: applies only to kind = allreduce" },
    { "experts = 4\nrouting", "experts = 1\nrouting",
      "[policy] routing: applies only with experts > 1" },
    { "experts = 4\nrouting", "experts = 4\ntensor = 2\nrouting",
      "[policy] experts: 4 is not modelled with tensor > 1" },
    { "experts = 4\nrouting", "experts = 4\nzero = 3\nrouting",
      "[policy] experts: 4 is not modelled with zero = 3" },
  };
  g_autofree char *base = scenario (4, NULL, "experts = 4\nrouting = zipf\nzipf = 1.5\n"
                                              "capacity_factor = 1.25\n");
  g_autofree char *moe = test_replaced (base, "[model]\n", "[model]\nexperts = 4\n");
  test_refusals (moe, cases, G_N_ELEMENTS (cases));
  /* a dense model */
  g_autofree char *msg = test_load_scenario_error (base);
  g_assert_nonnull (strstr (msg, "[policy] experts: 4: the model has no mixture-of-experts"));
  /* top_k without experts */
  g_autofree char *k = scenario (1, "top_k = 1\n", NULL);
  g_autofree char *msg2 = test_load_scenario_error (k);
  g_assert_nonnull (strstr (msg2, "[model] top_k: applies only with experts > 1"));
  /* the command line: one line, exit 2 */
  g_autofree char *bad = test_replaced (moe, "capacity_factor = 1.25", "capacity_factor = 0");
  g_autofree char *ini = g_build_filename (tmpdir, "bad.ini", NULL);
  g_assert_true (g_file_set_contents (ini, bad, -1, NULL));
  g_autofree char *out = NULL, *err = NULL;
  int rc = test_run_dtsim (tmpdir, &out, &err, "check", ini, NULL);
  g_assert_cmpint (rc, ==, 2);
  g_assert_nonnull (strstr (err, "bad.ini"));
  g_assert_nonnull (strstr (err, "[policy] capacity_factor"));
  g_assert_nonnull (strchr (err, '\n'));
  g_assert_null (strchr (strchr (err, '\n') + 1, '\n'));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-experts-XXXXXX", NULL);
  g_test_add_func ("/experts/counts", test_counts);
  g_test_add_func ("/experts/mixtral", test_mixtral);
  g_test_add_func ("/experts/dense-unchanged", test_dense_unchanged);
  g_test_add_func ("/experts/alltoall-bytes", test_alltoall_bytes);
  g_test_add_func ("/experts/shares", test_shares);
  g_test_add_func ("/experts/capacity", test_capacity);
  g_test_add_func ("/experts/skew-iteration", test_skew_iteration);
  g_test_add_func ("/experts/memory", test_memory);
  g_test_add_func ("/experts/refusals", test_refusals_lines);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
