/*
 * test-collective.c — the collective policy ([policy] kind = collective,
 * policies/collective.c): every operation with every algorithm that does
 * it, run from a scenario.
 *
 * With verify = true the policy checks each result against the operation's
 * definition and aborts on a difference, so a run that completes has moved
 * the data right; with contention = none every iteration lasts the
 * algorithm's cost formula (docs/collectives.md), which test-collectives.c
 * holds to the closed forms.  Rows: one per rank per iteration, all comm.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "comm/collectives.h"
#include "policies/policy.h"
#include "config/hardware.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

#define LINK_LAT 5e-6           /* s per link */
#define LINK_BW  (10e9 / 8)     /* bytes/s */
#define ALPHA    (2 * LINK_LAT) /* route latency on a star */
#define BETA     (1 / LINK_BW)
#define SIZE     4004           /* bytes: 1001 floats, odd */
#define ITERS    3

typedef struct {
  int worker;
  gint64 iteration;
  double start, end, compute, comm, wait;
} Row;

static void
on_iteration (gpointer ctx, int worker, gint64 iteration, double start,
              double end, double compute, double comm, double wait,
              gint64 staleness)
{
  Row row = { worker, iteration, start, end, compute, comm, wait };

  g_assert_cmpint (staleness, ==, 0);
  g_array_append_val ((GArray *) ctx, row);
}

static const char scenario[] =
  "[scenario]\nname = t\niterations = 3\n"
  "[cluster]\nworkers = 7\n"
  "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
  "contention = none\n"
  "[policy]\nkind = collective\n";

/* Runs the scenario with SIZE bytes, root 3 and `sets` (at most 4);
 * returns its iteration rows. */
static GArray *
run_rows (const char *const *sets, SimRunSummary *sum)
{
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (Row));
  PolRecorder rec = { .ctx = rows, .want_iterations = TRUE,
                      .iteration = on_iteration };
  const char *all[8] = { "policy.size=4004B", "policy.root=3" };

  for (int i = 0; sets[i]; i++)
    {
      g_assert_cmpint (i, <, 4);
      all[2 + i] = sets[i];
    }
  test_run_scenario_text (scenario, all, &rec, sum, NULL);
  return rows;
}

/* Every operation with every algorithm that does it (comm_cost not
 * NaN), p = 7 and root 3: the run completes (verified), with ITERS x p
 * rows, back to back, each lasting the cost formula, all comm. */
static void
test_operations (void)
{
  static const char *const ops[] = {
    "all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce",
    "scatter", "gather", "all-to-all" };
  int runs = 0;

  G_STATIC_ASSERT (G_N_ELEMENTS (ops) == COMM_N_KINDS);
  for (int k = 0; k < COMM_N_KINDS; k++)
    for (const CommAlgorithm *const *a = comm_all (); *a; a++)
      {
        double want = comm_cost (*a, (CommKind) k, 7, SIZE / 4, 4,
                                     ALPHA, BETA, 0);
        g_autofree char *s1 = g_strdup_printf ("policy.operation=%s", ops[k]);
        g_autofree char *s2 = g_strdup_printf ("policy.algorithm=%s",
                                               (*a)->name);
        const char *sets[] = { s1, s2, NULL };
        SimRunSummary sum;
        GArray *rows;

        g_assert_cmpstr (comm_kind_name ((CommKind) k), ==, ops[k]);
        if (isnan (want))
          continue;
        if ((*a)->in_switch)
          {
            /* a star has no switch that reduces: refused in one line
             * (test_nvls_* run these algorithms where it has one) */
            g_autofree char *text = g_strdup_printf ("%ssize = 4004B\noperation = %s\n"
                                                     "algorithm = %s\n", scenario, ops[k],
                                                     (*a)->name);
            g_autofree char *msg = test_load_scenario_error (text);

            g_assert_nonnull (strstr (msg, "needs a switch that reduces"));
            continue;
          }
        rows = run_rows (sets, &sum);
        g_assert_cmpuint (rows->len, ==, ITERS * 7);
        for (guint i = 0; i < rows->len; i++)
          {
            Row *r = &g_array_index (rows, Row, i);

            g_assert_cmpfloat_with_epsilon (r->start,
                                            (double) r->iteration * want,
                                            1e-9 * ITERS * want);
            g_assert_cmpfloat_with_epsilon (r->end - r->start, want,
                                            1e-9 * want);
            g_assert_cmpfloat (r->comm, ==, r->end - r->start);
            g_assert_cmpfloat (r->compute + r->wait, ==, 0);
          }
        g_assert_cmpfloat_with_epsilon (sum.sim_time, ITERS * want,
                                        1e-9 * ITERS * want);
        g_array_unref (rows);
        runs++;
      }
  /* naive does all 8, tree 3, ring 4, halving-doubling 3 */
  g_assert_cmpint (runs, >=, 18);
}

/* verify = false: timing only, the same times. */
static void
test_timing_only (void)
{
  const char *sets[] = { "policy.operation=all-to-all", "policy.algorithm=naive",
                         NULL };
  const char *sets_t[] = { "policy.operation=all-to-all", "policy.algorithm=naive",
                           "policy.verify=false", NULL };
  SimRunSummary a, b;
  GArray *ra = run_rows (sets, &a), *rb = run_rows (sets_t, &b);

  g_assert_cmpfloat (a.sim_time, ==, b.sim_time);
  g_assert_cmpfloat (a.sim_time, >, 0);
  g_array_unref (ra);
  g_array_unref (rb);
}

/* Bad keys: one line naming [policy] and the fix. */
static void
test_errors (void)
{
  static const struct {
    const char *extra, *want;
  } cases[] = {
    { "operation = scatter\nalgorithm = ring\nsize = 4004B\n",
      "[policy] algorithm: ring does not do scatter; use one that does: auto, naive" },
    { "operation = all-to-all\nalgorithm = tree\nsize = 4004B\n",
      "[policy] algorithm: tree does not do all-to-all; use one that does: auto, naive" },
    { "root = 7\n", "[policy] root: 7 is not a rank of the 7 workers; use 0 to 6" },
    { "size = 1GB\n", "[policy] verify: real buffers for 7 ranks" },
    { "operation = transpose\n", "[policy] operation" },
    { "operation = all-to-all\nalgorithm = naive\nverify = false\n",
      "[policy] operation: all-to-all among 4097 workers makes" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_auto (GStrv) parts = g_strsplit (scenario, "workers = 7", 2);
      /* the case that names 4097 workers runs with them */
      g_autofree char *base = g_strjoinv (strstr (cases[i].want, "4097")
                                          ? "workers = 4097" : "workers = 7",
                                          parts);
      g_autofree char *text = g_strconcat (base, cases[i].extra, NULL);
      g_autofree char *msg = test_load_scenario_error (text);

      if (!strstr (msg, cases[i].want))
        g_error ("case %u: got \"%s\"", i, msg);
    }
}

/* `dtsim run` prints the bus bandwidth, size / time x 2(p-1)/p for an
 * all-reduce, in place of samples/s, and writes the messages. */
static void
test_table (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-collective-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "c.ini", NULL);
  g_autofree char *db = g_build_filename (dir, "c.db", NULL);
  g_autofree char *out = NULL, *err = NULL, *text = NULL;
  g_autofree char *want = NULL;
  const CommAlgorithm *ring = comm_lookup ("ring");
  double t = comm_cost (ring, COMM_ALLREDUCE, 7, SIZE / 4, 4, ALPHA,
                            BETA, 0);

  text = g_strconcat (scenario, "size = 4004B\nalgorithm = ring\n"
                      "[trace]\ndetail = messages\n"
                      "[sweep]\ncluster.workers = 7\n", NULL);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db,
                                   NULL), ==, 0);
  g_assert_nonnull (strstr (out, "bus GB/s"));
  g_assert_null (strstr (out, "samples/s"));
  want = g_strdup_printf (" %.4g\n", SIZE / t * 2 * 6 / 7 / 1e9);
  if (!strstr (out, want))
    g_error ("no \"%s\" in:\n%s", want, out);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages"), ==,
                   ITERS * 2 * 7 * 6);
  g_remove (db);
  g_remove (ini);
  g_rmdir (dir);
}

/* Naming catalog links brings their kinds' step overheads and the launch
 * overhead (docs/hardware.md) unless the file writes them; each iteration
 * of a one-node all-reduce then lasts launch + the ring's cost with alpha
 * = max(route latency, intra step overhead), beta = 1 / the delivered rate. */
static void
test_catalog_overheads (void)
{
  static const char text[] =
    "[scenario]\nname = t\niterations = 2\n[cluster]\nworkers = 8\n"
    "[network]\ntopology = nodes\ngpus_per_node = 8\nnic = gpu\n"
    "fabric = ib-hdr\nintra_fabric = nvlink3\ncontention = none\n"
    "[policy]\nkind = collective\nsize = 4004B\nalgorithm = ring\n";
  const char *sets[] = { NULL };
  const char *zero[] = { "network.launch_overhead=0", "network.intra_step_overhead=0",
                         NULL };
  g_autoptr (SimCatalog) cat = sim_catalog_load (NULL, NULL);
  const SimLinkSpec *nvl = sim_catalog_link (cat, "nvlink3");
  const SimLinkSpec *ib = sim_catalog_link (cat, "ib-hdr");
  double L = sim_catalog_launch_overhead (cat);
  double o = sim_catalog_step_overhead (cat, nvl->kind);
  double alpha = 2 * nvl->latency, beta = 1 / (nvl->bandwidth * nvl->efficiency);
  const CommAlgorithm *ring = comm_lookup ("ring");
  SimRunSummary sum;
  SimConfig *c = NULL;

  g_assert_cmpfloat (L, >, 0);
  g_assert_cmpfloat (o, >, alpha);
  test_run_scenario_text (text, sets, NULL, &sum, &c);
  g_assert_cmpfloat (c->launch_overhead, ==, L);
  g_assert_cmpfloat (c->intra_step_overhead, ==, o);
  g_assert_cmpfloat (c->step_overhead, ==, sim_catalog_step_overhead (cat, ib->kind));
  g_assert_cmpfloat_with_epsilon (sum.sim_time,
                                  2 * (L + comm_cost (ring, COMM_ALLREDUCE, 8,
                                                          SIZE / 4, 4, o, beta, 0)),
                                  1e-9 * sum.sim_time);
  sim_config_free (c);
  test_run_scenario_text (text, zero, NULL, &sum, &c);
  g_assert_cmpfloat (c->launch_overhead, ==, 0);
  g_assert_cmpfloat_with_epsilon (sum.sim_time,
                                  2 * comm_cost (ring, COMM_ALLREDUCE, 8,
                                                     SIZE / 4, 4, alpha, beta, 0),
                                  1e-9 * sum.sim_time);
  sim_config_free (c);
}

/* algorithm = auto in training: every bucket's row names what ran it, the
 * largest bucket's choice is the run's policy.algorithm_chosen, and each
 * is what the cost formulas give on this star: halving-doubling for the
 * 4 MB buckets among 16 workers (lg p latencies against the ring's 2(p-1),
 * the same bytes). */
static void
test_auto_recorded (void)
{
  static const char text[] =
    "[scenario]\nname = t\niterations = 2\n[cluster]\nworkers = 16\n"
    "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
    "[model]\nkind = timing\nparams = 2500000\nflops = 1e6\n"
    "[policy]\nkind = allreduce\nbucket_size = 4MB\n"
    "[kernels]\nbackend = none\n[trace]\ndetail = iterations\n";
  g_autofree char *dir = g_dir_make_tmp ("dtsim-auto-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "a.ini", NULL);
  g_autofree char *db = g_build_filename (dir, "a.db", NULL);
  g_autofree char *out = NULL, *err = NULL;

  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "--quiet",
                                   NULL), ==, 0);
  /* 10 MB: two buckets of 4 MB and one of 2 MB, two iterations */
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM buckets"), ==, 6);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM buckets"
                                            " WHERE algorithm = 'halving-doubling'"
                                            " AND bytes = 4e6"), ==, 4);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM params"
                                            " WHERE key = 'policy.algorithm_chosen'"
                                            " AND value = 'halving-doubling'"), ==, 1);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM buckets"
                                            " WHERE algorithm IS NULL"
                                            " OR algorithm = 'auto'"), ==, 0);
  g_remove (db);
  g_remove (ini);
  g_rmdir (dir);
}

/* scenarios/validation/nccl-a100.ini against the nccl-tests runs it
 * models (docs/collectives.md, "Against nccl-tests"): the bus bandwidth of
 * each point within its stated tolerance of the published figure.  One
 * server is close to where NVLink's delivered share was calibrated (about
 * 230 GB/s, nccl-tests issue 149): 5%; the others are validation: 15%. */
static void
test_nccl_validation (void)
{
  static const struct {
    int workers;
    double bytes, published, tolerance;
  } cases[] = {
    { 8, 4e9, 232.54e9, 0.05 },   /* NVIDIA/nccl issue 1048: one server */
    { 16, 4e9, 86e9, 0.15 },      /* the same: two servers */
    { 24, 128e6, 84.8e9, 0.15 },  /* NVIDIA/nccl-tests issue 119: three */
  };
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autofree char *ini = g_build_filename (src, "scenarios", "validation",
                                           "nccl-a100.ini", NULL);
  g_autofree char *dir = g_dir_make_tmp ("dtsim-nccl-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "v.db", NULL);
  g_autofree char *out = NULL, *err = NULL;

  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "--quiet",
                                   NULL), ==, 0);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *sql = g_strdup_printf ("SELECT sim_time FROM runs WHERE id = %u",
                                              i + 1);
      double p = cases[i].workers, t = test_query_number (db, sql);
      double busbw = cases[i].bytes / t * 2 * (p - 1) / p;

      g_test_message ("%d GPUs: %.1f GB/s, published %.1f", cases[i].workers,
                      busbw / 1e9, cases[i].published / 1e9);
      test_assert_close (busbw, cases[i].published, cases[i].tolerance);
    }
  g_remove (db);
  g_rmdir (dir);
}


/* --- NVLS and NVLSTree (comm/nvls.c) --------------------------------------- */

#define NV_LAT  600e-9          /* s: each NVLink link */
#define NV_BW   450e9           /* bytes/s: each NVLink link, each way */
#define NIC_LAT 1e-6            /* s: each NIC link */
#define NIC_BW  (200e9 / 8)     /* bytes/s: each NIC link */

/* One node of 8 GPUs whose switch reduces, one NIC per GPU, no step or
 * launch overhead, contention none. */
static const char nvls_scenario[] =
  "[scenario]\nname = t\niterations = 2\n[cluster]\nworkers = 8\n"
  "[network]\ntopology = nodes\ngpus_per_node = 8\nnic = gpu\n"
  "bandwidth = 200Gbps\nlatency = 1us\nintra_bandwidth = 450GBps\n"
  "intra_latency = 600ns\nnvswitch = sharp\ncontention = none\n"
  "[policy]\nkind = collective\nalgorithm = nvls\nsize = 40040B\n";

/* The time of every iteration of `text` with `sets` (verified: the run
 * aborts on a wrong result), asserting they are all `want`. */
static void
assert_iterations (const char *text, const char *const *sets, double want)
{
  TestRun *r = test_run_collect (text, sets);

  g_assert_cmpuint (r->rows->len, >, 0);
  for (guint i = 0; i < r->rows->len; i++)
    {
      TestRow *row = &g_array_index (r->rows, TestRow, i);

      g_assert_cmpfloat_with_epsilon (row->end - row->start, want, 1e-9 * want);
    }
  test_run_free (r);
}

/* NVLS in one node on uniform links (contention none): every GPU sends
 * its buffer to the switch and reads every block back, its reduced block
 * multicast from it, all pipelined, so an all-reduce of N bytes among p
 * lasts the port's latency there and back, then N (1 + 1/p) bytes at the
 * link's rate; reduce-scatter sends N and reads N/p, all-gather the
 * reverse: 2 L + N / B.  The cost formula says the same. */
static void
test_nvls_closed_form (void)
{
  const CommAlgorithm *nvls = comm_lookup ("nvls");
  double N = 40040, p = 8, alpha = 2 * NV_LAT, beta = 1 / NV_BW;
  const char *ar[] = { "policy.operation=all-reduce", NULL };
  const char *rs[] = { "policy.operation=reduce-scatter", NULL };
  const char *ag[] = { "policy.operation=all-gather", NULL };
  double t_ar = 2 * NV_LAT + N * (1 + 1 / p) / NV_BW;
  double t_rs = 2 * NV_LAT + N / NV_BW;

  g_assert_nonnull (nvls);
  assert_iterations (nvls_scenario, ar, t_ar);
  assert_iterations (nvls_scenario, rs, t_rs);
  assert_iterations (nvls_scenario, ag, t_rs);
  test_assert_close (comm_cost (nvls, COMM_ALLREDUCE, 8, 40040 / 4, 4, alpha, beta, 0),
                     t_ar, 1e-12);
  test_assert_close (comm_cost (nvls, COMM_REDUCE_SCATTER, 8, 40040 / 4, 4, alpha, beta, 0),
                     t_rs, 1e-12);
  /* against the ring's 2 (p - 1) / p N: fewer bytes for p > 2 */
  g_assert_cmpfloat (t_ar, <, comm_cost (comm_lookup ("ring"), COMM_ALLREDUCE, 8, 40040 / 4,
                                         4, alpha, beta, 0));
  /* nothing reduces a broadcast in the switch */
  g_assert_true (isnan (comm_cost (nvls, COMM_BROADCAST, 8, 10, 4, alpha, beta, 0)));
}

/* The switch's own rate (nvls_bandwidth S, below the link's): with
 * max-min sharing the 8 GPUs share the node's reduce and multicast links
 * of 8 S, S each: 2 L + N (1 + 1/p) / S. */
static void
test_nvls_switch_rate (void)
{
  double N = 40040, p = 8, S = 100e9;
  const char *sets[] = { "network.contention=max-min", "network.nvls_bandwidth=100GBps",
                         NULL };

  assert_iterations (nvls_scenario, sets, 2 * NV_LAT + N * (1 + 1 / p) / S);
}

/* Two nodes (contention none): NVLSTree, NVLS inside each node and a tree
 * across, pipelined: every GPU's block of N/g goes out through its NIC
 * and back, after the tree's ceil(log2 m) levels up and as many down, one
 * NIC trip each; NVLS with the fabric reducing (ib_sharp) makes one trip.
 *   T = 2 L_nv + trips 2 L_nic + max(N (1 + 1/g) / B_nv, (N/g) / B_nic)
 * Here the NIC (25 GB/s, N/8 bytes) is the slower of the two. */
static void
test_nvls_two_nodes (void)
{
  double N = 40040, g = 8;
  double bytes = MAX (N * (1 + 1 / g) / NV_BW, N / g / NIC_BW);
  const char *tree[] = { "cluster.workers=16", "policy.algorithm=nvls-tree", NULL };
  const char *sharp[] = { "cluster.workers=16", "network.ib_sharp=true", NULL };
  const CommAlgorithm *nt = comm_lookup ("nvls-tree");

  g_assert_cmpfloat (N / g / NIC_BW, >, N * (1 + 1 / g) / NV_BW);
  assert_iterations (nvls_scenario, tree, 2 * NV_LAT + 2 * 2 * NIC_LAT + bytes);
  assert_iterations (nvls_scenario, sharp, 2 * NV_LAT + 2 * NIC_LAT + bytes);
  /* uniform links, 2 groups of 8: the tree's two trips */
  test_assert_close (comm_cost_grouped (nt, COMM_ALLREDUCE, 16, 8, 1000, 4, 1e-6, 1e-9, 0),
                     3 * 1e-6 + 4000 * (1 + 1 / g) * 1e-9, 1e-12);
}

/* Messages: two per GPU and iteration, to its node's switch and back,
 * named by the switch at one end. */
static void
test_nvls_messages (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-nvls-XXXXXX", NULL);
  g_autofree char *db = test_run_messages (dir, nvls_scenario, "m");

  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages"), ==, 2 * 8);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages"
                                            " WHERE dst = 'node0.nvswitch'"
                                            " AND bytes = 40040 * 1.125"), ==, 8);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM messages"
                                            " WHERE src = 'node0.nvswitch'"), ==, 8);
}

/* auto picks NVLS for a large all-reduce on the catalog's H100 server
 * (dgx-h100: its nvswitch3 reduces in the switch) and not on its A100 one
 * (dgx-a100: nvlink3 does not), whose all-reduce then takes longer; each
 * server brings its device, fabrics, GPUs per node and NICs. */
static void
test_nvls_auto (void)
{
  static const char text[] =
    "[scenario]\nname = t\niterations = 1\n[cluster]\nworkers = 8\nserver = dgx-h100\n"
    "[network]\ntopology = nodes\n"
    "[policy]\nkind = collective\nalgorithm = auto\nsize = 1GB\nverify = false\n";
  const char *a100[] = { "cluster.server=dgx-a100", NULL };
  TestRun *h = test_run_collect (text, NULL);
  TestRun *a = test_run_collect (text, a100);

  g_assert_cmpstr (g_hash_table_lookup (h->params, "policy.algorithm_chosen"), ==, "nvls");
  g_assert_cmpstr (g_hash_table_lookup (a->params, "policy.algorithm_chosen"), !=, "nvls");
  g_assert_cmpfloat (h->sum.sim_time, <, a->sum.sim_time);
  test_run_free (h);
  test_run_free (a);
  {
    g_autoptr (SimCatalog) cat = sim_catalog_load (NULL, NULL);
    SimConfig *c = test_load_one (text);
    const SimServer *v = sim_catalog_server (cat, "dgx-h100");

    g_assert_cmpstr (c->device, ==, v->device);
    g_assert_cmpstr (c->intra_fabric, ==, v->intra_fabric);
    g_assert_cmpstr (c->fabric, ==, v->fabric);
    g_assert_cmpint (base_values_int (c->values, "network.gpus_per_node"), ==, (gint64) v->gpus);
    g_assert_cmpint (base_values_int (c->values, "network.nic"), ==, 1);   /* one per GPU */
    g_assert_cmpint (base_values_int (c->values, "network.nvswitch"), ==, 1);
    sim_config_free (c);
  }
}

/* The new keys and where the algorithms do not run: one line each. */
static void
test_nvls_refusals (void)
{
  static const TestRefusal cases[] = {
    { "nvswitch = sharp", "nvswitch = plain",
      "[policy] algorithm: nvls needs a switch that reduces inside each node, which this "
      "network has not; set [network] topology = nodes and nvswitch = sharp" },
    { "nvswitch = sharp", "nvswitch = yes", "[network] nvswitch" },
    { "nvswitch = sharp", "nvswitch = sharp\nnvls_bandwidth = -1GBps",
      "[network] nvls_bandwidth" },
    { "nvswitch = sharp", "nvswitch = sharp\nnvls_bandwidth = 2PBps",
      "[network] nvls_bandwidth" },
    { "nvswitch = sharp", "nvswitch = sharp\nib_sharp = maybe", "[network] ib_sharp" },
    { "workers = 8", "workers = 8\nserver = dgx-x100",
      "[cluster] server: unknown server 'dgx-x100'; use one of: dgx-a100, dgx-h100" },

    { "workers = 8", "workers = 16",
      "[policy] algorithm: nvls across 2 nodes needs a fabric that reduces; set [network] "
      "ib_sharp = true, or use nvls-tree" },
    { "workers = 8", "workers = 12",
      "[policy] algorithm: nvls across 2 nodes needs a fabric that reduces" },
    { "algorithm = nvls", "algorithm = nvls-tree\noperation = all-gather",
      "[policy] algorithm: nvls-tree does not do all-gather" },
  };
  /* several edits each (from, to pairs, NULL-terminated) */
  static const struct {
    const char *edits[7];
    const char *want;
  } several[] = {
    { { "algorithm = nvls", "algorithm = nvls-tree", "workers = 8", "workers = 12", NULL },
      "[policy] algorithm: nvls-tree needs whole nodes" },
    { { "algorithm = nvls", "algorithm = nvls\noperation = reduce-scatter",
        "nvswitch = sharp", "nvswitch = sharp\nib_sharp = true",
        "workers = 8", "workers = 16", NULL },
      "[policy] algorithm: nvls does reduce-scatter inside one node only, not across 2 nodes" },
    { { "topology = nodes", "topology = star", "workers = 8", "workers = 8\nserver = dgx-h100",
        NULL },
      "[cluster] server: dgx-h100 is a server of 8 GPUs, laid out by the nodes topology; "
      "set [network] topology = nodes" },
  };
  g_autofree char *dir = g_dir_make_tmp ("dtsim-nvls-XXXXXX", NULL);
  g_autofree char *ini = g_build_filename (dir, "r.ini", NULL);
  g_autofree char *text = test_replaced (nvls_scenario, "nvswitch = sharp", "nvswitch = plain");
  g_autofree char *out = NULL, *err = NULL;

  test_refusals (nvls_scenario, cases, G_N_ELEMENTS (cases));
  for (guint i = 0; i < G_N_ELEMENTS (several); i++)
    {
      g_autofree char *text_i = g_strdup (nvls_scenario);
      g_autofree char *msg = NULL;

      for (int e = 0; several[i].edits[e]; e += 2)
        {
          char *next = test_replaced (text_i, several[i].edits[e], several[i].edits[e + 1]);

          g_free (text_i);
          text_i = next;
        }
      msg = test_load_scenario_error (text_i);
      if (!strstr (msg, several[i].want))
        g_error ("case %u: %s\n  does not say: %s", i, msg, several[i].want);
    }
  /* from the command line: exit 2, one line naming the file */
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", ini, NULL), ==, 2);
  g_assert_nonnull (strstr (err, ini));
  g_assert_nonnull (strstr (err, "[policy] algorithm"));
  g_remove (ini);
  g_rmdir (dir);
}

/* scenarios/validation/nccl-h100.ini against the figures it lists
 * (docs/collectives.md, "Against nccl-tests"): bus bandwidth 2(p-1)/p N / t
 * for an all-reduce, (p-1)/p N / t for the others.  Runs 1-3 and 5 (the
 * ring) are where the catalog's figures were fixed (5%); run 4, two servers, is held out: the
 * report it comes from measured 430 GB/s on one server as well, 10% under
 * NVIDIA's 480, so dtsim's 514 is 20% over it.  Sizes below 1 MB are
 * pending (the scenario's header), not run. */
static void
test_nccl_h100_validation (void)
{
  static const struct {
    int workers;
    gboolean allreduce;
    double published, tolerance;
  } cases[] = {
    { 8, TRUE, 480e9, 0.05 },    /* nccl-tests issue 212: calibration */
    { 8, FALSE, 370e9, 0.05 },   /* the same, all-gather: calibration */
    { 8, FALSE, 370e9, 0.05 },   /* the same, reduce-scatter: calibration */
    { 16, TRUE, 430e9, 0.20 },   /* NVIDIA/nccl issue 1221: validation */
    { 8, TRUE, 370e9, 0.05 },    /* nccl-tests issue 212, ring: calibration */
  };
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autofree char *ini = g_build_filename (src, "scenarios", "validation", "nccl-h100.ini",
                                           NULL);
  g_autofree char *dir = g_dir_make_tmp ("dtsim-nccl-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "v.db", NULL);
  g_autofree char *out = NULL, *err = NULL;

  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "--quiet", NULL),
                   ==, 0);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM runs"), ==,
                     G_N_ELEMENTS (cases));
  /* auto's choices: NVLS in one server, NVLSTree across two */
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM params WHERE run_id = 1"
                                            " AND key = 'policy.algorithm_chosen'"
                                            " AND value = 'nvls'"), ==, 1);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM params WHERE run_id = 4"
                                            " AND key = 'policy.algorithm_chosen'"
                                            " AND value = 'nvls-tree'"), ==, 1);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *sql = g_strdup_printf ("SELECT sim_time FROM runs WHERE id = %u", i + 1);
      double p = cases[i].workers, t = test_query_number (db, sql);
      double busbw = 8e9 / t * (cases[i].allreduce ? 2 : 1) * (p - 1) / p;

      g_test_message ("%d GPUs: %.1f GB/s, published %.1f", cases[i].workers, busbw / 1e9,
                      cases[i].published / 1e9);
      test_assert_close (busbw, cases[i].published, cases[i].tolerance);
    }
  g_remove (db);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/collective/operations", test_operations);
  g_test_add_func ("/collective/timing-only", test_timing_only);
  g_test_add_func ("/collective/errors", test_errors);
  g_test_add_func ("/collective/table", test_table);
  g_test_add_func ("/collective/catalog-overheads", test_catalog_overheads);
  g_test_add_func ("/collective/auto-recorded", test_auto_recorded);
  g_test_add_func ("/collective/nccl-validation", test_nccl_validation);
  g_test_add_func ("/collective/nvls/closed-form", test_nvls_closed_form);
  g_test_add_func ("/collective/nvls/switch-rate", test_nvls_switch_rate);
  g_test_add_func ("/collective/nvls/two-nodes", test_nvls_two_nodes);
  g_test_add_func ("/collective/nvls/messages", test_nvls_messages);
  g_test_add_func ("/collective/nvls/auto", test_nvls_auto);
  g_test_add_func ("/collective/nvls/refusals", test_nvls_refusals);
  g_test_add_func ("/collective/nccl-h100-validation", test_nccl_h100_validation);
  return g_test_run ();
}
