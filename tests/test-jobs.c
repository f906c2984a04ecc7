/*
 * test-jobs.c — several jobs on one cluster ([job NAME] sections,
 * sim/jobs.c): a job alone gives the same iteration rows as that job beside
 * a partner that arrives after it ends; packed and spread placement on a
 * small nodes topology; two jobs on one shared link take half of it each
 * (max-min, through network views); the refusals of the new keys; the
 * usage table's busy GPUs and link bytes against the schedule's closed
 * form; the Perfetto export's process per job.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "config/scenario.h"
#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "sim/jobs.h"
#include "tests/json.h"
#include "tests/util.h"
#include "views/perfetto.h"

/* One all-reduce job on a star, its gradient heavy enough for the ring to
 * take a good part of each step. */
static const char *const alone =
  "[scenario]\niterations = 5\nseed = 3\n"
  "[cluster]\nworkers = 4\n"
  "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
  "[device]\nstep_time = 10ms\n"
  "[model]\nkind = timing\nparams = 20e6\nflops = 1e9\n"
  "[policy]\nkind = allreduce\nalgorithm = ring\n";

/* The same job as [job a], and a partner of other shape arriving long after
 * a has ended. */
static const char *const with_partner =
  "[scenario]\niterations = 5\nseed = 3\n"
  "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
  "[device]\nstep_time = 10ms\n"
  "[model]\nkind = timing\nparams = 20e6\nflops = 1e9\n"
  "[policy]\nkind = allreduce\nalgorithm = ring\n"
  "[job a]\ncluster.workers = 4\n"
  "[job b]\ncluster.workers = 2\nmodel.params = 5e6\narrival = 1000s\n";

static void
test_alone_equals_idle_partner (void)
{
  TestRun *one = test_run_collect (alone, NULL);
  TestRun *two = test_run_collect (with_partner, NULL);
  /* job a's rows come first (b starts only after a's last) and number its
   * workers from 0 */
  g_assert_cmpuint (one->rows->len, ==, 5 * 4);
  g_assert_cmpuint (two->rows->len, ==, one->rows->len + 5 * 2);
  for (guint i = 0; i < one->rows->len; i++)
    {
      const TestRow *x = &g_array_index (one->rows, TestRow, i);
      const TestRow *y = &g_array_index (two->rows, TestRow, i);
      g_assert_cmpint (x->worker, ==, y->worker);
      g_assert_cmpint (x->iteration, ==, y->iteration);
      /* bit-identical: the same events in the same order on the same links */
      g_assert_true (x->start == y->start && x->end == y->end);
      g_assert_true (x->compute == y->compute && x->comm == y->comm && x->wait == y->wait);
    }
  /* b's workers follow a's */
  const TestRow *b0 = &g_array_index (two->rows, TestRow, one->rows->len);
  g_assert_cmpint (b0->worker, >=, 4);
  g_assert_cmpfloat (b0->start, >=, 1000.0);
  test_run_free (one);
  test_run_free (two);
}

/* A job with real math writes the metrics rows it writes alone, and in a
 * database they carry its name in the `job` column. */
static void
test_metrics_per_job (void)
{
  const char *math_alone =
    "[scenario]\niterations = 4\nseed = 3\n[cluster]\nworkers = 2\n"
    "[network]\ntopology = star\nbandwidth = 10Gbps\n"
    "[model]\nkind = linear\n[policy]\nkind = allreduce\n";
  const char *math_two =
    "[scenario]\niterations = 4\nseed = 3\n"
    "[network]\ntopology = star\nbandwidth = 10Gbps\n"
    "[model]\nkind = linear\n[policy]\nkind = allreduce\n"
    "[job a]\ncluster.workers = 2\n[job b]\ncluster.workers = 2\narrival = 1000s\n";
  TestRun *one = test_run_collect (math_alone, NULL);
  TestRun *two = test_run_collect (math_two, NULL);
  /* job b arrives after a has ended: a's evaluations come first, then b's
   * (the same job shifted by its arrival) */
  g_assert_cmpuint (one->metrics->len, >, 0);
  g_assert_cmpuint (two->metrics->len, ==, 2 * one->metrics->len);
  for (guint i = 0; i < one->metrics->len; i++)
    {
      const TestMetric *x = &g_array_index (one->metrics, TestMetric, i);
      const TestMetric *y = &g_array_index (two->metrics, TestMetric, i);
      g_assert_true (x->t == y->t && x->step == y->step);
      g_assert_true (x->loss == y->loss);
      g_assert_true (x->accuracy == y->accuracy || (isnan (x->accuracy) && isnan (y->accuracy)));
    }
  test_run_free (one);
  test_run_free (two);
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-mj-XXXXXX", NULL);
  g_autofree char *db = test_run_text (dir, math_two, "mj");
  double n = test_query_number (db, "SELECT COUNT(*) FROM metrics");
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM metrics WHERE job = 'a'"),
                     ==, n / 2);
  g_assert_cmpfloat (test_query_number (db, "SELECT MIN(sim_time) FROM metrics WHERE job = 'b'"),
                     >=, 1000.0);
  sim_remove_tree (dir);
}

/* The hosts placement gives each job of `text` (with `placement` set),
 * written "a: 0 1 2 3; b: 4 5 6 7". */
static char *
placed (const char *text, const char *placement)
{
  g_autofree char *set = g_strdup_printf ("cluster.placement=%s", placement);
  const char *sets[] = { set, NULL };
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (g_get_tmp_dir (), "dtsim-test-jobs-XXXXXX.ini", NULL);
  int fd = g_mkstemp (path);
  g_assert_cmpint (fd, >=, 0);
  close (fd);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (GPtrArray) cs = sim_scenario_parse (path, sets, &error);
  g_assert_no_error (error);
  g_unlink (path);
  const SimConfig *c = g_ptr_array_index (cs, 0);
  int H = 0;
  g_autoptr (GPtrArray) place = sim_jobs_place (c, path, &H, &error);
  g_assert_no_error (error);
  GString *s = g_string_new (NULL);
  for (guint j = 0; j < place->len; j++)
    {
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      const GArray *p = g_ptr_array_index (place, j);
      g_string_append_printf (s, "%s%s:", j ? "; " : "", job->name);
      for (guint i = 0; i < p->len; i++)
        g_string_append_printf (s, " %d", g_array_index (p, int, i));
    }
  return g_string_free (s, FALSE);
}

static const char *const on_nodes =
  "[network]\ntopology = nodes\ngpus_per_node = 4\n"
  "[device]\nstep_time = 1ms\n"
  "[model]\nkind = timing\nparams = 1e6\nflops = 1e9\n"
  "[policy]\nkind = allreduce\n"
  "[job a]\ncluster.workers = 4\n"
  "[job b]\ncluster.workers = 4\n";

static void
test_placement_nodes (void)
{
  /* packed: a fills node 0 (hosts 0-3), b node 1 (4-7) */
  g_autofree char *packed = placed (on_nodes, "packed");
  g_assert_cmpstr (packed, ==, "a: 0 1 2 3; b: 4 5 6 7");
  /* spread: hosts dealt in turn, each job has two GPUs of each node */
  g_autofree char *spread = placed (on_nodes, "spread");
  g_assert_cmpstr (spread, ==, "a: 0 2 4 6; b: 1 3 5 7");
  /* priority: b first gets node 0 */
  g_autofree char *prio_text = test_replaced (on_nodes, "[job b]\n", "[job b]\npriority = 1\n");
  g_autofree char *prio = placed (prio_text, "packed");
  g_assert_cmpstr (prio, ==, "a: 4 5 6 7; b: 0 1 2 3");
  /* a larger cluster leaves its last hosts idle under packed */
  g_autofree char *big_text = test_replaced (on_nodes, "[device]", "[cluster]\nhosts = 12\n[device]");
  g_autofree char *big = placed (big_text, "spread");
  g_assert_cmpstr (big, ==, "a: 0 2 4 6; b: 1 3 5 7");
  /* given: as listed */
  g_autofree char *given_text = test_replaced_free (
    test_replaced (on_nodes, "[job a]\n", "[job a]\nhosts = 7, 6, 5, 4\n"), "[job b]\n",
    "[job b]\nhosts = 0, 1, 2, 3\n");
  g_autofree char *given = placed (given_text, "given");
  g_assert_cmpstr (given, ==, "a: 7 6 5 4; b: 0 1 2 3");
  /* random: a permutation of the hosts, the same for the same seed */
  g_autofree char *r1 = placed (on_nodes, "random");
  g_autofree char *r2 = placed (on_nodes, "random");
  g_assert_cmpstr (r1, ==, r2);
}

/* Four jobs of 2, 6, 2 and 2 GPUs on three nodes of 4 GPUs with a NIC
 * each (12 hosts, none idle). */
static const char *const on_rails =
  "[network]\ntopology = nodes\ngpus_per_node = 4\nnic = gpu\n"
  "[device]\nstep_time = 1ms\n"
  "[model]\nkind = timing\nparams = 1e6\nflops = 1e9\n"
  "[policy]\nkind = allreduce\n"
  "[job a]\ncluster.workers = 2\n"
  "[job b]\ncluster.workers = 6\n"
  "[job c]\ncluster.workers = 2\n"
  "[job d]\ncluster.workers = 2\n";

static void
test_placement_rail (void)
{
  /* g = 4.  a (w = 2): offset 0 of node 0, hosts 0 1.  b (w = 4, rows of 4
   * and 2): node 0 is not free at 0-3, so node 1 (4-7), then GPUs 0-1 of a
   * node b does not hold: node 2 (8 9); its ranks i and i + 4 share rail
   * i.  c (w = 2): GPUs 0-1 are taken on every node, 1-2 too; 2-3 are free
   * on node 0 (2 3).  d: 0-1 and 1-2 nowhere, 2-3 on node 2 (10 11). */
  g_autofree char *rail = placed (on_rails, "rail");
  g_assert_cmpstr (rail, ==, "a: 0 1; b: 4 5 6 7 8 9; c: 2 3; d: 10 11");
  /* packed lays b across nodes 0 and 1, with its rank 0 on GPU 2 */
  g_autofree char *packed = placed (on_rails, "packed");
  g_assert_cmpstr (packed, ==, "a: 0 1; b: 2 3 4 5 6 7; c: 8 9; d: 10 11");
  /* priority first: d (2 GPUs) takes node 0's GPUs 0-1; then b needs a
   * whole node for its first row: node 1, and GPUs 0-1 of node 2 */
  g_autofree char *prio_text = test_replaced (on_rails, "[job d]\n",
                                              "[job d]\npriority = 1\n");
  g_autofree char *prio = placed (prio_text, "rail");
  g_assert_cmpstr (prio, ==, "a: 2 3; b: 4 5 6 7 8 9; c: 10 11; d: 0 1");
  /* a larger cluster leaves the last node idle */
  g_autofree char *big_text = test_replaced (on_rails, "[device]",
                                             "[cluster]\nhosts = 16\n[device]");
  g_autofree char *big = placed (big_text, "rail");
  g_assert_cmpstr (big, ==, "a: 0 1; b: 4 5 6 7 8 9; c: 2 3; d: 10 11");
}

static void
on_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED, const NetTransfer *t G_GNUC_UNUSED)
{
  *(double *) ctx = eng_sim_now (sim);
}

static void
test_shared_link_maxmin (void)
{
  /* racks of 2: hosts 0, 1 under rack 0, hosts 2, 3 under rack 1; the
   * uplink of a rack carries 2 x B / oversubscription = B / 2.  Job a on
   * hosts {0, 2}, job b on {1, 3}: each sends b bytes from its first host
   * to its second, and both cross rack 0's uplink, which each gets half
   * of: B / 4.  Alone a flow gets the uplink's B / 2. */
  const double B = 1e9, L = 1e-6, bytes = 1e6;
  g_autoptr (BaseValues) v = net_topology_values_new ();
  base_values_set_int (v, "network.rack_size", 2);
  base_values_set_double (v, "network.oversubscription", 4);
  const char *names[] = { "h0", "h1", "h2", "h3" };
  NetTopologyParams p = { .n_hosts = 4, .names = names, .bandwidth = B, .latency = L,
                          .values = v };
  for (int together = 0; together < 2; together++)
    {
      EngSim *sim = eng_sim_new ();
      NetNetwork *net = net_network_new (sim, NET_CONTENTION_MAXMIN);
      g_autoptr (GError) error = NULL;
      g_assert_true (net_topology_lookup ("racks")->build (net, &p, &error));
      const int ha[] = { 0, 2 }, hb[] = { 1, 3 };
      NetNetwork *a = net_network_view_new (net, 2, ha);
      NetNetwork *b = net_network_view_new (net, 2, hb);
      g_assert_cmpint (net_network_n_hosts (a), ==, 2);
      g_assert_cmpstr (net_network_host_name (b, 1), ==, "h3");
      double end_a = 0, end_b = 0;
      net_send (a, 0, 1, bytes, 0, on_done, &end_a, NULL);
      if (together)
        net_send (b, 0, 1, bytes, 0, on_done, &end_b, NULL);
      eng_run (sim, INFINITY);
      /* the route: host up, rack up, rack down, host down */
      double lat = net_network_route_latency (a, 0, 1);
      double share = together ? (2 * B / 4) / 2 : 2 * B / 4;
      g_assert_cmpfloat_with_epsilon (end_a, lat + bytes / share, 1e-12);
      if (together)
        g_assert_cmpfloat (end_b, ==, end_a);
      net_network_free (a);
      net_network_free (b);
      net_network_free (net);
      eng_sim_free (sim);
    }
}

static const char *const base =
  "[network]\ntopology = star\n"
  "[device]\nstep_time = 1ms\n"
  "[model]\nkind = timing\nparams = 1e6\nflops = 1e9\n"
  "[policy]\nkind = allreduce\n"
  "[cluster]\nplacement = packed\n"
  "[job a]\ncluster.workers = 2\n"
  "[job b]\ncluster.workers = 2\n";

static void
test_refusals_jobs (void)
{
  const TestRefusal cases[] = {
    { "[job b]\n", "[job b]\nnetwork.bandwidth = 1Gbps\n",
      "[job b] network.bandwidth: a job cannot set this key" },
    { "[job b]\n", "[job b]\nspeed = 3\n", "[job b] speed: unknown key" },
    { "[job b]\n", "[job b]\nmodel.kinds = mlp\n", "[job b] model.kinds: not a scenario key" },
    { "[job b]\n", "[job b!]\n", "a job section is [job NAME]" },
    { "[job b]\n", "[job]\n", "a job section is [job NAME]" },
    { "[job b]\n", "[job b]\narrival = -1s\n", "[job b] arrival" },
    { "[job b]\n", "[job b]\npriority = 5000\n", "[job b] priority" },
    { "[job b]\n", "[job b]\nhosts = 0, 1\n", "[job b] hosts: only [cluster] placement = given" },
    { "placement = packed", "placement = given", "[job a] hosts: job a lists 0 hosts and needs 2" },
    { "placement = packed", "placement = packed\nhosts = 3",
      "[cluster] hosts: 3 hosts cannot hold the jobs, which need 4" },
    { "[job b]\n", "[job b]\nmodel.kind = nonsense\n", "[job b] model.kind" },
    { "[job b]\ncluster.workers = 2\n", "[job b]\ncluster.workers = 0\n", "[job b] cluster.workers" },
    { "placement = packed", "placement = rail",
      "[cluster] placement: rail placement lays jobs on the GPUs of nodes" },
  };
  test_refusals (base, cases, G_N_ELEMENTS (cases));
  /* rail placement: a NIC per GPU, and jobs that find the same GPU indices
   * free (b's 3 GPUs on nodes of 4 after a's 2: node 0 has GPUs 2-3 free,
   * the cluster's second node only GPU 0) */
  g_autofree char *rail = test_replaced (base, "placement = packed", "placement = rail");
  const TestRefusal rails[] = {
    { "topology = star", "topology = nodes",
      "[cluster] placement: rail placement needs a NIC per GPU" },
  };
  test_refusals (rail, rails, G_N_ELEMENTS (rails));
  g_autofree char *rail3 = test_replaced_free (
    test_replaced (rail, "topology = star", "topology = nodes\nnic = gpu\ngpus_per_node = 4"),
    "[job b]\ncluster.workers = 2\n", "[job b]\ncluster.workers = 3\n");
  g_autofree char *msg = test_load_scenario_error (rail3);
  g_assert_nonnull (strstr (msg, "[cluster] placement: rail placement finds no nodes with the"
                                 " same 3 free GPU indices for job b"));
  /* given hosts out of the cluster, or listed twice */
  g_autofree char *given = test_replaced_free (
    test_replaced_free (test_replaced (base, "placement = packed", "placement = given"),
                   "[job a]\n", "[job a]\nhosts = 0, 1\n"), "[job b]\n", "[job b]\nhosts = 1, 5\n");
  const TestRefusal twice[] = {
    { "hosts = 1, 5", "hosts = 2, 5", "[job b] hosts: host 5 is not on the cluster" },
    { "hosts = 1, 5", "hosts = 3, 1", "[job b] hosts: host 1 is job a's already" },
  };
  test_refusals (given, twice, G_N_ELEMENTS (twice));
}

/* An arrival trace moves each job it names: a job's first iteration row
 * starts at the trace's arrival, not at its section's. */
static void
test_arrivals_take_effect (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-arr-XXXXXX", NULL);
  g_autofree char *csv = g_build_filename (dir, "arrivals.csv", NULL);
  const double ta = 0.25, tb = 0.125;
  g_assert_true (g_file_set_contents (csv, "# two jobs\nJob, Arrival, Priority\n"
                                           "b,125ms,3\na, 0.25 \n", -1, NULL));
  g_autofree char *line = g_strdup_printf ("[cluster]\narrivals = %s\n[job a]", csv);
  g_autofree char *text = test_replaced (with_partner, "[job a]", line);
  TestRun *r = test_run_collect (text, NULL);
  double first_a = INFINITY, first_b = INFINITY;
  for (guint i = 0; i < r->rows->len; i++)
    {
      const TestRow *x = &g_array_index (r->rows, TestRow, i);
      if (x->worker < 4)
        first_a = MIN (first_a, x->start);
      else
        first_b = MIN (first_b, x->start);
    }
  g_assert_cmpfloat (first_a, ==, ta);
  g_assert_cmpfloat (first_b, ==, tb);
  test_run_free (r);
  /* the priority placed b first: its workers hold hosts 0 and 1 */
  GPtrArray *cs = test_load_scenario_text (text, NULL);
  const SimConfig *c = g_ptr_array_index (cs, 0);
  const SimJob *b = g_ptr_array_index (c->jobs, 1);
  g_assert_cmpint (b->priority, ==, 3);
  g_assert_cmpfloat (b->arrival, ==, tb);
  int H = 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) place = sim_jobs_place (c, c->file, &H, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_array_index ((GArray *) g_ptr_array_index (place, 1), int, 0), ==, 0);
  g_ptr_array_unref (cs);
  sim_remove_tree (dir);
}

/* The refusals of an arrival trace: one line naming the file, the line and
 * the column, with the fix. */
static void
test_arrivals_refusals (void)
{
  static const struct { const char *text, *want; } cases[] = {
    { "", "a.csv line 1: expected the header line job,arrival" },
    { "job,start\n", "a.csv line 1: expected the header line" },
    { "job,arrival\nbb,1s\n", "a.csv line 2 column 1: job: no [job bb] in the scenario;"
      " did you mean b?" },
    { "job,arrival\nzzzzzz,1s\n", "line 2 column 1: job: no [job zzzzzz] in the scenario; name" },
    { "job,arrival\na,1s\na,2s\n", "line 3 column 1: job: a has a line already" },
    { "job,arrival\na,-1s\n", "line 2 column 2: arrival:" },
    { "job,arrival\na,3 parsecs\n", "line 2 column 2: arrival:" },
    { "job,arrival,priority\na,1s,5000\n", "line 2 column 3: priority: expected a whole number" },
    { "job,arrival,priority\na,1s,x\n", "line 2 column 3: priority" },
    { "job,arrival\na\n", "line 2: expected 2 or 3 fields" },
    { "job,arrival\na,1,2,3\n", "line 2: expected 2 or 3 fields" },
    { "job,arrival\na,\x1b[31m\n", "line 2: a control character" },
  };
  GPtrArray *cs = test_load_scenario_text (with_partner, NULL);
  const SimConfig *c = g_ptr_array_index (cs, 0);
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autoptr (GError) error = NULL;
      g_assert_false (sim_arrivals_apply (c->jobs, cases[k].text, "a.csv", &error));
      g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
      if (!strstr (error->message, cases[k].want))
        g_error ("case %zu: %s\n  does not say: %s", k, error->message, cases[k].want);
      g_assert_null (strchr (error->message, '\n'));
    }
  /* bounded: a line too long, too many lines */
  g_autofree char *long_line = g_strnfill (SIM_ARRIVALS_MAX_LINE + 1, 'a');
  g_autofree char *t1 = g_strdup_printf ("job,arrival\n%s,1\n", long_line);
  g_autofree char *t2 = g_strnfill (SIM_ARRIVALS_MAX_LINES + 1, '\n');
  const char *bounded[] = { t1, t2 };
  const char *want[] = { "line 2: a line of more than", "more than 256 lines" };
  for (int k = 0; k < 2; k++)
    {
      g_autoptr (GError) error = NULL;
      g_assert_false (sim_arrivals_apply (c->jobs, bounded[k], "a.csv", &error));
      g_assert_nonnull (strstr (error->message, want[k]));
    }
  g_ptr_array_unref (cs);
  /* through the scenario: the key named, a file that is missing, no jobs */
  const TestRefusal keyed[] = {
    { "[job a]", "[cluster]\narrivals = /nonexistent/a.csv\n[job a]",
      "[cluster] arrivals: " },
    { "[job a]", "[job c]\ncluster.arrivals = x.csv\n[job a]",
      "[job c] cluster.arrivals: a job cannot set this key" },
  };
  test_refusals (with_partner, keyed, G_N_ELEMENTS (keyed));
  g_autofree char *no_jobs = test_replaced (alone, "[cluster]\n", "[cluster]\narrivals = x.csv\n");
  g_autofree char *msg = test_load_scenario_error (no_jobs);
  g_assert_nonnull (strstr (msg, "[cluster] arrivals: an arrival trace sets the arrivals of"
                                 " [job NAME] sections, and the scenario has none"));
}

/* Two ring all-reduce jobs on a star, both from 0: job a of 4 workers and
 * N_a = 4 x 20e6 gradient bytes, job b of 2 and N_b = 4 x 5e6. */
static void
test_usage_closed_form (void)
{
  g_autofree char *text = test_replaced_free (
    test_replaced (with_partner, "arrival = 1000s\n", ""), "[job a]",
    "[trace]\ndetail = iterations\n[job a]");
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-usage-XXXXXX", NULL);
  g_autofree char *db = test_run_text (dir, text, "usage");
  /* busy GPU-seconds summed over the windows are the job's compute
   * seconds, as its iterations rows count them */
  double busy_a = test_query_number (db, "SELECT SUM(value * (end - start)) FROM usage"
                                         " WHERE kind = 'busy' AND name = 'a'");
  double compute_a = test_query_number (db, "SELECT SUM(compute) FROM iterations WHERE"
                                            " worker < 4");
  test_assert_close (busy_a, compute_a, 1e-12);
  g_assert_cmpfloat (busy_a, >=, 5 * 4 * 10e-3);
  /* a ring all-reduce of N bytes among p sends 2 (p - 1) / p N out of
   * (and into) each host a step: each host link carries that, 5 steps */
  const double B = 10e9 / 8, Na = 4 * 20e6, Nb = 4 * 5e6;
  const char *const link[] = { "a/worker0.up", "a/worker3.down", "b/worker1.up" };
  const double want[] = { 5 * 2.0 * 3 / 4 * Na, 5 * 2.0 * 3 / 4 * Na, 5 * 2.0 * 1 / 2 * Nb };
  for (int k = 0; k < 3; k++)
    {
      g_autofree char *sql = g_strdup_printf ("SELECT SUM(value * (end - start)) FROM usage"
                                              " WHERE kind = 'link' AND name = '%s'", link[k]);
      test_assert_close (test_query_number (db, sql) * B, want[k], 1e-9);
    }
  /* the width: 1 us x 2^k, the least with 256 windows covering the run;
   * every window a row per job and per host link (6 hosts, up and down) */
  double end = test_query_number (db, "SELECT sim_time FROM runs");
  double w = test_query_number (db, "SELECT MIN(end - start) FROM usage");
  double k = log2 (w / 1e-6);
  g_assert_cmpfloat (fabs (k - round (k)), <, 1e-9);
  g_assert_cmpfloat (256 * w, >=, end);
  g_assert_cmpfloat (128 * w, <, end);
  g_assert_cmpfloat (test_query_number (db, "SELECT COUNT(*) FROM usage"), ==,
                     ceil (end / w) * (2 + 6 * 2));
  /* at most job a's 4 GPUs busy (the shares of a window rounded) */
  g_assert_cmpfloat (test_query_number (db, "SELECT MAX(value) FROM usage WHERE kind = 'busy'"),
                     <=, 4 * (1 + 1e-12));
  sim_remove_tree (dir);
}

/* The Perfetto export of a run of two jobs: each job's workers are the
 * threads of a process of its own, named after the job. */
static void
test_perfetto_per_job (void)
{
  g_autofree char *text = test_replaced_free (
    test_replaced (with_partner, "arrival = 1000s\n", "arrival = 1ms\n"), "[job a]",
    "[trace]\ndetail = spans\n[job a]");
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-pf-XXXXXX", NULL);
  g_autofree char *db = test_run_text (dir, text, "pf");
  g_autofree char *json = g_build_filename (dir, "pf.json", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "export", db, "--format", "perfetto", "-o",
                                   json, NULL), ==, 0);
  gsize len = 0;
  g_autofree char *body = test_read_file (json, &len);
  g_autofree char *perr = NULL;
  TjNode *root = tj_parse (body, len, &perr);
  g_assert_null (perr);
  const TjNode *ev = tj_get (root, "traceEvents");
  g_assert_nonnull (ev);
  const double pid_a = SIM_PERFETTO_JOB_PID (1, 0), pid_b = SIM_PERFETTO_JOB_PID (1, 1);
  int threads_a = 0, threads_b = 0, named_a = 0, named_b = 0, other = 0;
  for (guint i = 0; i < ev->items->len; i++)
    {
      const TjNode *e = g_ptr_array_index (ev->items, i);
      const char *name = tj_string (e, "name");
      double pid = tj_number (e, "pid");
      const TjNode *args = tj_get (e, "args");
      const char *arg = args ? tj_string (args, "name") : NULL;
      if (g_strcmp0 (name, "process_name") == 0)
        {
          named_a += pid == pid_a && g_strcmp0 (arg, "run 1: job a") == 0;
          named_b += pid == pid_b && g_strcmp0 (arg, "run 1: job b") == 0;
        }
      else if (g_strcmp0 (name, "thread_name") == 0 && arg)
        {
          /* every worker of a job on its job's process, and nowhere else */
          if (g_str_has_prefix (arg, "a/worker"))
            threads_a += pid == pid_a ? 1 : 1000;
          else if (g_str_has_prefix (arg, "b/worker"))
            threads_b += pid == pid_b ? 1 : 1000;
          else
            other++;
        }
    }
  g_assert_cmpint (named_a, ==, 1);
  g_assert_cmpint (named_b, ==, 1);
  /* job a has 4 workers, job b 2: a track each (no overlapping spans) */
  g_assert_cmpint (threads_a, ==, 4);
  g_assert_cmpint (threads_b, ==, 2);
  g_assert_cmpint (other, ==, 0);
  tj_free (root);
  sim_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/jobs/alone-equals-idle-partner", test_alone_equals_idle_partner);
  g_test_add_func ("/jobs/placement/nodes", test_placement_nodes);
  g_test_add_func ("/jobs/placement/rail", test_placement_rail);
  g_test_add_func ("/jobs/shared-link-maxmin", test_shared_link_maxmin);
  g_test_add_func ("/jobs/refusals", test_refusals_jobs);
  g_test_add_func ("/jobs/metrics/per-job", test_metrics_per_job);
  g_test_add_func ("/jobs/arrivals/take-effect", test_arrivals_take_effect);
  g_test_add_func ("/jobs/arrivals/refusals", test_arrivals_refusals);
  g_test_add_func ("/jobs/usage/closed-form", test_usage_closed_form);
  g_test_add_func ("/jobs/perfetto/process-per-job", test_perfetto_per_job);
  return g_test_run ();
}
