/*
 * test-mirror.c — mirrored replicas (docs/policies.md, "Mirrored
 * replicas"): a pipeline job whose replicas are copies of one another runs
 * replica 0 alone, and everything it records equals, to the bit, what the
 * per-message run of every replica records; where the replicas differ it
 * says why and runs them all.  Also the network's folding and the
 * collective executor's test of mirrored ranks.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/collectives.h"
#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "util.h"

/* A small 3-D job: 4 replicas x 2 stages x 2 tensor ranks, each replica
 * one node of 4 GPUs with a NIC per GPU. */
static const char base[] =
  "[scenario]\nname = mirror\niterations = 2\n"
  "[cluster]\ndevice = h100\nworkers = 16\n"
  "[device]\nprecision = bf16\n"
  "[network]\ntopology = nodes\ngpus_per_node = 4\nnic = gpu\nfabric = ib-ndr\n"
  "intra_fabric = nvlink4\n"
  "[model]\nkind = transformer\nblocks = 8\nwidth = 512\nheads = 8\nsequence = 256\n"
  "vocabulary = 5000\noptimizer = adam\nrecompute = full\nbatch = 8\n"
  "[policy]\nkind = pipeline\nschedule = 1f1b\nzero = 1\ngradient_precision = training\n"
  "algorithm = ring\nlayout = 4x2x2\nmicrobatches = 4\n";

/* One recorded row: a span (kind, worker name, start, end, bytes) or a
 * stage summary, as text with every double at 17 digits, so that sorting
 * and comparing the texts compares the bits. */
typedef struct {
  GPtrArray *rows;       /* char* */
  GHashTable *params;    /* key -> value */
} Rec;

static void
rec_iteration (gpointer ctx, int w, gint64 it, double start, double end, double compute,
               double comm, double wait, gint64 staleness)
{
  Rec *r = ctx;
  g_ptr_array_add (r->rows, g_strdup_printf ("it %d %" G_GINT64_FORMAT " %.17g %.17g %.17g %.17g "
                                             "%.17g %" G_GINT64_FORMAT, w, it, start, end,
                                             compute, comm, wait, staleness));
}

static void
rec_span (gpointer ctx, const char *actor, const char *kind, double a, double b, gint64 it,
          double bytes, const PolSpanDetail *d)
{
  Rec *r = ctx;
  g_ptr_array_add (r->rows, g_strdup_printf ("span %s %s %.17g %.17g %" G_GINT64_FORMAT
                                             " %.17g %s %" G_GINT64_FORMAT " %d %d", actor,
                                             kind, a, b, it, bytes, d ? d->phase : "-",
                                             d ? d->microbatch : -1, d ? d->first_layer : -1,
                                             d ? d->last_layer : -1));
}

static void
rec_stage (gpointer ctx, const PolStageStats *st)
{
  Rec *r = ctx;
  g_ptr_array_add (r->rows, g_strdup_printf ("stage %d %d %d %d %d %" G_GSIZE_FORMAT " %.17g %d "
                                             "%.17g %.17g %.17g %.17g", st->worker, st->replica,
                                             st->stage, st->first_layer, st->last_layer,
                                             st->params, st->flops, st->peak_stash,
                                             st->activation_bytes, st->boundary_bytes,
                                             st->compute, st->idle));
}

static void
rec_param (gpointer ctx, const char *key, const char *value)
{
  Rec *r = ctx;
  g_hash_table_replace (r->params, g_strdup (key), g_strdup (value));
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Runs `text` with `sets` (NULL-terminated, at most 6), plus `extra` when
 * not NULL, recording everything; sorted rows. */
static Rec *
record (const char *text, const char *const *sets, const char *extra, SimRunSummary *sum)
{
  Rec *r = g_new0 (Rec, 1);
  r->rows = g_ptr_array_new_with_free_func (g_free);
  r->params = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .want_spans = TRUE,
                      .iteration = rec_iteration, .span = rec_span, .stage = rec_stage,
                      .param = rec_param };
  const char *all[8] = { NULL };
  int n = 0;
  for (; sets && sets[n]; n++)
    all[n] = sets[n];
  all[n] = extra;
  test_run_scenario_text (text, all, &rec, sum, NULL);
  g_ptr_array_sort (r->rows, cmp_str);
  return r;
}

static void
rec_free (Rec *r)
{
  g_ptr_array_unref (r->rows);
  g_hash_table_unref (r->params);
  g_free (r);
}

/* Runs `text` + `sets` mirrored (flow classes on) and per message (off):
 * asserts every row is the same to the bit and that the mirrored run's
 * params row starts with `want` ("yes" or the "no: ..." reason). */
static void
assert_mirror (const char *text, const char *const *sets, const char *want)
{
  SimRunSummary sm, sf;
  Rec *m = record (text, sets, NULL, &sm);
  Rec *f = record (text, sets, "network.flow_classes=off", &sf);
  const char *why = g_hash_table_lookup (m->params, "policy.replicas_mirrored");
  g_assert_nonnull (why);
  if (!g_str_has_prefix (why, want))
    g_error ("%s%s: expected policy.replicas_mirrored '%s...', found '%s'", sets && sets[0]
             ? sets[0] : "base", sets && sets[0] && sets[1] ? " ..." : "", want, why);
  const char *off = g_hash_table_lookup (f->params, "policy.replicas_mirrored");
  g_assert_nonnull (off);
  g_assert_true (g_str_has_prefix (off, "no: "));
  g_assert_cmpuint (m->rows->len, ==, f->rows->len);
  g_assert_cmpuint (m->rows->len, >, 0);
  for (guint i = 0; i < m->rows->len; i++)
    if (strcmp (m->rows->pdata[i], f->rows->pdata[i]) != 0)
      g_error ("row %u differs:\n  mirrored:    %s\n  per message: %s", i,
               (char *) m->rows->pdata[i], (char *) f->rows->pdata[i]);
  g_assert_cmpfloat (sm.sim_time, ==, sf.sim_time);
  /* the mirrored run simulates one replica: fewer events */
  if (g_str_has_prefix (want, "yes"))
    g_assert_cmpuint (sm.events, <, sf.events);
  rec_free (m);
  rec_free (f);
}

/* Every symmetric case: topologies, ZeRO stages, schedules, tensor ranks,
 * replica counts (two, odd, four) and algorithms. */
static void
test_equal_cases (void)
{
  static const char *const cases[][5] = {
    { NULL },
    { "network.nic=node", NULL },
    { "policy.zero=0", NULL },
    { "policy.zero=2", NULL },
    { "policy.schedule=gpipe", NULL },
    { "policy.schedule=interleaved", "policy.chunks=2", NULL },
    { "cluster.workers=8", "policy.layout=2x2x2", NULL },
    { "cluster.workers=12", "policy.layout=3x2x2", NULL },
    { "cluster.workers=12", "policy.layout=3x2x2", "policy.algorithm=auto", NULL },
    { "network.topology=star", "policy.layout=8x2x1", NULL },
    { "network.topology=star", "policy.layout=8x2x1", "policy.zero=0", NULL },
    { "network.gpus_per_node=2", "policy.layout=4x1x4", NULL },
    { "network.topology=racks", "network.rack_size=4", "network.oversubscription=4", NULL },
    { "network.topology=racks", "network.rack_size=2", "policy.layout=8x2x1", NULL },
    { "policy.sequence_parallel=true", NULL },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_test_message ("case %" G_GSIZE_FORMAT ": %s", i, cases[i][0] ? cases[i][0] : "base");
      assert_mirror (base, cases[i], "yes");
    }
}

/* Where the replicas differ, or the network is not made of copies, the
 * run says why and runs every replica (and equals itself with flow classes
 * off, trivially, which assert_mirror also checks). */
static void
test_fallbacks (void)
{
  static const struct {
    const char *sets[4];
    const char *want;
  } cases[] = {
    { { "stragglers.model=fixed", "stragglers.slow=1", NULL }, "no: stragglers" },
    { { "network.topology=fat-tree", NULL }, "no: the network is not made of copies" },
    { { "network.links=node0.gpu0.nic.up 100Gbps", NULL }, "no: the network is not made of copies" },
    { { "network.gpus_per_node=8", NULL }, "no: the network is not made of copies" },
    { { "policy.algorithm=tree", "policy.zero=0", NULL }, "no: the data-parallel collective" },
    { { "policy.algorithm=double-tree", "policy.zero=0", NULL }, "no: the data-parallel collective" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_test_message ("case %s", cases[i].sets[0]);
      assert_mirror (base, cases[i].sets, cases[i].want);
    }
  /* one replica: nothing to mirror */
  const char *const one[] = { "cluster.workers=4", "policy.layout=1x2x2", NULL };
  SimRunSummary sum;
  Rec *r = record (base, one, NULL, &sum);
  g_assert_null (g_hash_table_lookup (r->params, "policy.replicas_mirrored"));
  rec_free (r);
}

/* Jobs of 256 and 1,024 GPUs (64 and 256 replicas), and a padded ZeRO
 * buffer whose parameters do not divide among 7 replicas. */
static void
test_larger (void)
{
  const char *const sets[] = { "cluster.workers=256", "policy.layout=64x2x2", NULL };
  assert_mirror (base, sets, "yes");
  const char *const big[] = { "cluster.workers=1024", "policy.layout=256x2x2",
                              "scenario.iterations=1", NULL };
  assert_mirror (base, big, "yes");
  const char *const odd[] = { "cluster.workers=28", "policy.layout=7x2x2", NULL };
  assert_mirror (base, odd, "yes");
}

/* The network's side: a star of 8 hosts folds in copies of 4 (and 2), not
 * 3 nor 8; a folded route crosses the sender's uplink and the downlink of
 * the receiver's peer in the first copy; an edited link stops the fold. */
static void
test_network_fold (void)
{
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
  const char *names[8] = { "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7" };
  NetTopologyParams p = { .n_hosts = 8, .names = names, .bandwidth = 1e9, .latency = 1e-6 };
  GError *error = NULL;
  g_assert_true (net_topology_lookup ("star")->build (net, &p, &error));
  g_assert_no_error (error);
  g_assert_false (net_network_fold (net, 3));
  g_assert_false (net_network_fold (net, 8));
  g_assert_cmpint (net_network_fold_period (net), ==, 0);
  g_assert_true (net_network_fold (net, 2));
  g_assert_true (net_network_fold (net, 4));
  g_assert_cmpint (net_network_fold_period (net), ==, 4);
  int real[4], plain[4];
  /* h1 -> h6: up(h1), down(h6); folded: up(h1), down(h2) = route h1 -> h2 */
  g_assert_cmpint (net_network_route_links (net, 1, 2, plain, 4), ==, 2);
  g_assert_cmpint (net_network_route_links (net, 1, 6, real, 4), ==, 2);
  g_assert_cmpint (real[0], ==, plain[0]);
  g_assert_cmpint (real[1], !=, plain[1]);
  g_assert_true (net_network_fold (net, 0));
  g_assert_cmpint (net_network_fold_period (net), ==, 0);
  g_assert_true (net_network_set_link (net, 0, 2e9, 1e-6));
  g_assert_false (net_network_fold (net, 4));
  net_network_free (net);
  eng_sim_free (sim);
}

static int arrived;

static void
on_folded (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED, gpointer data G_GNUC_UNUSED,
           const NetTransfer *t G_GNUC_UNUSED)
{
  arrived++;
}

/* Two folded transfers whose translates share a downlink share it in the
 * folded network: h0 -> h5 lands on down(h1) in the first copy, as h1's
 * own incoming transfer from h4's translate does; each gets half the link,
 * so both take 2 bytes/bandwidth (one latency of each of the two hops
 * before). */
static void
test_folded_sharing (void)
{
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
  const char *names[8] = { "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7" };
  double bw = 1e9, lat = 1e-6, bytes = 1e6;
  NetTopologyParams p = { .n_hosts = 8, .names = names, .bandwidth = bw, .latency = lat };
  g_assert_true (net_topology_lookup ("star")->build (net, &p, NULL));
  g_assert_true (net_network_fold (net, 4));
  arrived = 0;
  net_send_folded (net, 0, 5, bytes, 0, 0, on_folded, NULL, NULL);   /* up h0, down h1 */
  net_send_folded (net, 2, 5, bytes, 0, 0, on_folded, NULL, NULL);   /* up h2, down h1 */
  eng_run (sim, INFINITY);
  g_assert_cmpint (arrived, ==, 2);
  double want = 2 * lat + bytes / (bw / 2);
  g_assert_cmpfloat (fabs (eng_sim_now (sim) - want), <=, 1e-12 * want);
  net_network_free (net);
  eng_sim_free (sim);
}

/* `dtsim check` says whether the replicas will run mirrored, and why not. */
static void
test_check_says (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-mirror-XXXXXX", NULL);
  g_autofree char *file = g_build_filename (dir, "m.ini", NULL);
  g_assert_true (g_file_set_contents (file, base, -1, NULL));
  char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "m.ini", NULL), ==, 0);
  g_assert_nonnull (strstr (out, "replicas: mirrored: replica 0 runs for all 4"));
  /* the default algorithm, auto, picks at the start: predicted mirrored */
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "m.ini", "--set",
                                   "policy.algorithm=auto", NULL), ==, 0);
  g_assert_nonnull (strstr (out, "replicas: mirrored: replica 0 runs for all 4"));
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "m.ini", "--set",
                                   "policy.algorithm=tree", "--set", "policy.zero=0", NULL),
                   ==, 0);
  g_assert_nonnull (strstr (out, "not mirrored: the data-parallel collective"));
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "m.ini", "--set",
                                   "stragglers.model=fixed", "--set", "stragglers.slow=1", NULL),
                   ==, 0);
  g_assert_nonnull (strstr (out, "replicas: all 4 run, not mirrored: stragglers"));
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "m.ini", "--set",
                                   "network.gpus_per_node=8", NULL), ==, 0);
  g_assert_nonnull (strstr (out, "not mirrored: the network is not made of copies"));
  g_free (out);
  g_free (err);
  sim_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mirror/network/fold", test_network_fold);
  g_test_add_func ("/mirror/network/sharing", test_folded_sharing);
  g_test_add_func ("/mirror/pipeline/equal", test_equal_cases);
  g_test_add_func ("/mirror/pipeline/fallbacks", test_fallbacks);
  g_test_add_func ("/mirror/pipeline/larger", test_larger);
  g_test_add_func ("/mirror/check", test_check_says);
  return g_test_run ();
}
