/*
 * test-scenario.c — quantities with units, read and written (config/units.c),
 * and scenario files (config/scenario.c): defaults from the key table, unit
 * conversion, the one-line errors for every kind of bad input, sweeps
 * (cartesian product, last key fastest), `--set` overrides, the `params`
 * rows and the key reference.
 *
 * Every scenario is written into a fresh temporary folder (removed by the
 * fixture's teardown).  Expected quantities are written as formulas in SI base
 * units: bits/s are divided by 8, binary prefixes are powers of 1024.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "netmodel/netmodel.h"
#include "policies/policy.h"
#include "config/scenario.h"
#include "config/units.h"
#include "sim/load.h"

/* Asserts that `got` equals `want` to 1e-12 relative (exactly at 0). */
#define assert_rel(got, want) \
  g_assert_cmpfloat_with_epsilon ((got), (want), \
                                  1e-12 * fabs ((double) (want)) + 1e-300)

/* Asserts that string `hay` contains `needle`, printing both if not. */
#define assert_contains(hay, needle) \
  assert_contains_at (__FILE__, __LINE__, G_STRFUNC, #hay, (hay), (needle))

static void
assert_contains_at (const char *file, int line, const char *func,
                    const char *expr, const char *hay, const char *needle)
{
  if (hay && strstr (hay, needle))
    return;
  g_autofree char *msg = g_strdup_printf ("%s = \"%s\" does not contain \"%s\"",
                                          expr, hay ? hay : "(null)", needle);
  g_assertion_message (G_LOG_DOMAIN, file, line, func, msg);
}

/* ---------------------------------------------------------------- units -- */

/* Parses `text` as `kind`, asserting success; returns the value. */
static double
parse_ok (const char *text, SimUnitKind kind)
{
  double v = NAN;
  const char *why = NULL;
  if (!sim_parse_quantity (text, kind, &v, &why))
    g_error ("'%s' rejected: %s", text, why ? why : "(no reason)");
  return v;
}

/* Asserts that `text` is rejected as `kind`; returns the explanation. */
static const char *
parse_fails (const char *text, SimUnitKind kind)
{
  double v = -12345.0;
  const char *why = NULL;
  gboolean ok = sim_parse_quantity (text, kind, &v, &why);
  if (ok)
    g_error ("'%s' accepted as %g, expected a rejection", text, v);
  g_assert_nonnull (why);
  g_assert_cmpuint (strlen (why), >, 0);
  return why;
}

static void
test_units_time (void)
{
  assert_rel (parse_ok ("5us", SIM_UNIT_TIME), 5 * 1e-6);
  assert_rel (parse_ok ("2.5 ms", SIM_UNIT_TIME), 2.5 * 1e-3);
  assert_rel (parse_ok ("1s", SIM_UNIT_TIME), 1.0);
  assert_rel (parse_ok ("3", SIM_UNIT_TIME), 3.0);         /* bare = seconds */
  assert_rel (parse_ok ("  7ns  ", SIM_UNIT_TIME), 7 * 1e-9);
  assert_rel (parse_ok ("1e3us", SIM_UNIT_TIME), 1e3 * 1e-6);
  assert_rel (parse_ok ("0", SIM_UNIT_TIME), 0.0);
  g_assert_cmpstr (sim_unit_base_name (SIM_UNIT_TIME), ==, "s");
}

static void
test_units_size (void)
{
  assert_rel (parse_ok ("64KiB", SIM_UNIT_SIZE), 64 * 1024.0);
  assert_rel (parse_ok ("1MiB", SIM_UNIT_SIZE), 1024.0 * 1024.0);
  assert_rel (parse_ok ("2GiB", SIM_UNIT_SIZE), 2 * 1024.0 * 1024.0 * 1024.0);
  assert_rel (parse_ok ("4MB", SIM_UNIT_SIZE), 4 * 1e6);
  assert_rel (parse_ok ("3kB", SIM_UNIT_SIZE), 3 * 1e3);
  assert_rel (parse_ok ("512", SIM_UNIT_SIZE), 512.0);     /* bare = bytes */
  assert_rel (parse_ok ("16 B", SIM_UNIT_SIZE), 16.0);
  assert_rel (parse_ok ("8Mb", SIM_UNIT_SIZE), 8 * 1e6 / 8); /* bits */
  g_assert_cmpstr (sim_unit_base_name (SIM_UNIT_SIZE), ==, "bytes");
}

static void
test_units_bandwidth (void)
{
  assert_rel (parse_ok ("10Gbps", SIM_UNIT_BANDWIDTH), 10e9 / 8);
  assert_rel (parse_ok ("1.25GBps", SIM_UNIT_BANDWIDTH), 1.25e9);
  assert_rel (parse_ok ("100 Mb/s", SIM_UNIT_BANDWIDTH), 100e6 / 8);
  assert_rel (parse_ok ("2GB/s", SIM_UNIT_BANDWIDTH), 2e9);
  assert_rel (parse_ok ("1000", SIM_UNIT_BANDWIDTH), 1000.0); /* bytes/s */
  g_assert_cmpstr (sim_unit_base_name (SIM_UNIT_BANDWIDTH), ==, "bytes/s");
}

static void
test_units_compute (void)
{
  assert_rel (parse_ok ("19.5TFLOPS", SIM_UNIT_COMPUTE), 19.5e12);
  assert_rel (parse_ok ("100GFLOPS", SIM_UNIT_COMPUTE), 100e9);
  assert_rel (parse_ok ("2 PFLOP/s", SIM_UNIT_COMPUTE), 2e15);
  assert_rel (parse_ok ("5e9", SIM_UNIT_COMPUTE), 5e9);     /* FLOP/s */
  g_assert_cmpstr (sim_unit_base_name (SIM_UNIT_COMPUTE), ==, "FLOP/s");
}

static void
test_units_plain (void)
{
  assert_rel (parse_ok ("0.25", SIM_UNIT_NONE), 0.25);
  assert_rel (parse_ok (" -3 ", SIM_UNIT_NONE), -3.0);
  /* a unit on a plain number */
  assert_contains (parse_fails ("3s", SIM_UNIT_NONE), "plain number");
  assert_contains (parse_fails ("0.5 B", SIM_UNIT_NONE), "plain number");
}

static void
test_units_wrong_kind (void)
{
  /* each kind names itself in the explanation */
  assert_contains (parse_fails ("5GB", SIM_UNIT_TIME), "time");
  assert_contains (parse_fails ("10Gbps", SIM_UNIT_TIME), "time");
  assert_contains (parse_fails ("5ms", SIM_UNIT_BANDWIDTH), "bandwidth");
  assert_contains (parse_fails ("4MB", SIM_UNIT_BANDWIDTH), "bandwidth");
  assert_contains (parse_fails ("10Gbps", SIM_UNIT_SIZE), "size");
  assert_contains (parse_fails ("1s", SIM_UNIT_SIZE), "size");
  assert_contains (parse_fails ("1s", SIM_UNIT_COMPUTE), "compute");
  assert_contains (parse_fails ("19.5TB", SIM_UNIT_COMPUTE), "compute");
}

static void
test_units_garbage (void)
{
  const char *bad[] = { "", "   ", "abc", "us", "5 parsecs", "5 u s", "5sx",
                        "nan", "inf", "1e400" };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_test_message ("text '%s'", bad[i]);
      assert_contains (parse_fails (bad[i], SIM_UNIT_TIME), "time");
    }
  assert_contains (parse_fails ("", SIM_UNIT_SIZE), "size");
  assert_contains (parse_fails ("x", SIM_UNIT_NONE), "plain number");
}

/* Quantities written for people (sim_format_quantity). */
static void
test_units_format (void)
{
  struct { double v; SimUnitKind kind; const char *want; } cases[] = {
    { 19.5e12, SIM_UNIT_COMPUTE, "19.5 TFLOP/s" },
    { 147.2e9, SIM_UNIT_COMPUTE, "147.2 GFLOP/s" },
    { 2039e9, SIM_UNIT_BANDWIDTH, "2.039 TB/s" },
    { 100e9 / 8, SIM_UNIT_BANDWIDTH, "12.5 GB/s" },
    { 80e9, SIM_UNIT_SIZE, "80 GB" },
    { 80.0 * 1024 * 1024 * 1024, SIM_UNIT_SIZE, "80 GiB" },
    { 2048000, SIM_UNIT_SIZE, "2.048 MB" },
    { 512, SIM_UNIT_SIZE, "512 B" },
    { 600e-9, SIM_UNIT_TIME, "600 ns" },
    { 5e-6, SIM_UNIT_TIME, "5 us" },
    { 2.5e-3, SIM_UNIT_TIME, "2.5 ms" },
    { 0, SIM_UNIT_TIME, "0 s" },
    { 90, SIM_UNIT_TIME, "90 s" },
    { 0.5, SIM_UNIT_NONE, "0.5" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *got = sim_format_quantity (cases[i].v, cases[i].kind);
      g_assert_cmpstr (got, ==, cases[i].want);
    }
}

/* ------------------------------------------------------------- scenario -- */

typedef struct {
  char *dir;      /* temporary folder, removed with its contents */
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  (void) data;
  fx->dir = g_dir_make_tmp ("dtsim-test-scenario-XXXXXX", &error);
  g_assert_no_error (error);
}

/* Removes `path` and, if it is a folder, everything in it. */
static void
remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
      const char *n;
      while (d && (n = g_dir_read_name (d)))
        {
          g_autofree char *child = g_build_filename (path, n, NULL);
          remove_tree (child);
        }
      g_assert_cmpint (g_rmdir (path), ==, 0);
    }
  else
    g_assert_cmpint (g_unlink (path), ==, 0);
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
  (void) data;
  remove_tree (fx->dir);
  g_free (fx->dir);
}

/* Writes `contents` to `name` in the fixture's folder; returns its path. */
static char *
write_file (Fixture *fx, const char *name, const char *contents)
{
  g_autoptr (GError) error = NULL;
  char *path = g_build_filename (fx->dir, name, NULL);
  g_file_set_contents (path, contents, -1, &error);
  g_assert_no_error (error);
  return path;
}

/* Writes and loads scenario `name`, asserting success with `n` configs. */
static GPtrArray *
load_ok (Fixture *fx, const char *name, const char *contents,
         const char *const *sets, guint n)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = write_file (fx, name, contents);
  GPtrArray *configs = sim_scenario_load (path, sets, &error);
  g_assert_no_error (error);
  g_assert_nonnull (configs);
  g_assert_cmpuint (configs->len, ==, n);
  return configs;
}

/* Asserts that loading failed with one line of SIM_ERROR_INPUT; returns
 * the message. */
static char *
input_error (GPtrArray *configs, GError *error)
{
  g_assert_null (configs);
  g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
  g_test_message ("error: %s", error->message);
  g_assert_null (strchr (error->message, '\n'));
  return g_strdup (error->message);
}

/* Writes and loads scenario `name`, asserting it fails with a one-line
 * SIM_ERROR_INPUT that names the file; returns the message. */
static char *
load_fails (Fixture *fx, const char *name, const char *contents,
            const char *const *sets)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = write_file (fx, name, contents);
  GPtrArray *configs = sim_scenario_load (path, sets, &error);
  char *msg = input_error (configs, error);
  assert_contains (msg, path);
  return msg;
}

#define CONFIG(configs, i) ((SimConfig *) g_ptr_array_index ((configs), (i)))

/* The text of param `key` of c, or NULL; asserts the key appears once. */
static const char *
param (const SimConfig *c, const char *key)
{
  const char *found = NULL;
  g_assert_cmpuint (c->param_keys->len, ==, c->param_values->len);
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), key) == 0)
      {
        g_assert_null (found);
        found = g_ptr_array_index (c->param_values, i);
      }
  return found;
}

static void
test_scenario_defaults (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autoptr (GPtrArray) configs = load_ok (fx, "plain.ini", "# nothing set\n", NULL, 1);
  SimConfig *c = CONFIG (configs, 0);

  /* defaults of the key table */
  g_assert_cmpstr (c->scenario_name, ==, "plain");   /* file name less .ini */
  g_assert_cmpstr (c->name, ==, "plain");            /* nothing swept */
  g_assert_cmpuint (c->swept->len, ==, 0);
  g_assert_cmpstr (c->db, ==, "results/plain.db");
  g_assert_cmpint (c->seed, ==, 1);
  g_assert_cmpint (c->iterations, ==, 100);
  assert_rel (c->time_limit, 0.0);
  g_assert_cmpint (c->workers, ==, 4);
  g_assert_cmpint (c->servers, ==, 1);
  assert_rel (c->flops, 100e9);
  assert_rel (c->efficiency, 1.0);
  assert_rel (c->step_time, -1.0);
  g_assert_cmpstr (c->topology, ==, "star");
  assert_rel (c->bandwidth, 10e9 / 8);
  assert_rel (c->latency, 5e-6);
  g_assert_cmpint (c->contention, ==, NET_CONTENTION_MAXMIN);
  g_assert_cmpstr (c->model_kind, ==, "softmax");
  g_assert_cmpstr (c->dataset, ==, "synthetic");
  g_assert_cmpint (c->batch, ==, 32);
  assert_rel (c->lr, 0.1);
  g_assert_cmpstr (c->policy, ==, "ps");
  g_assert_cmpint (base_values_int (c->values, "policy.consistency"), ==, POL_BSP);
  g_assert_cmpint (base_values_int (c->values, "policy.staleness"), ==, 3);
  g_assert_cmpstr (base_values_string (c->values, "stragglers.model"), ==, "none");
  assert_rel (base_values_double (c->values, "stragglers.factor"), 4.0);
  g_assert_cmpuint (base_values_list (c->values, "stragglers.slow")->len, ==, 0);
  g_assert_true (c->math);
  g_assert_cmpint (c->detail, ==, SIM_DETAIL_ITERATIONS);
}

static void
test_scenario_units (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autoptr (GPtrArray) configs = load_ok (fx, "u.ini",
      "[scenario]\nname = study\ntime_limit = 2.5 ms\n"
      "[device]\nflops = 19.5TFLOPS\nstep_time = 0\nefficiency = 0.5\n"
      "[network]\nbandwidth = 1.25GBps\nlatency = 2us\ncontention = none\n"
      "[policy]\nconsistency = SSP\nstaleness = 0\n"
      "[stragglers]\nmodel = fixed\nslow = 0, 3\nfactor = 2\n"
      "[kernels]\nbackend = none\n"
      "[trace]\ndetail = messages\n", NULL, 1);
  SimConfig *c = CONFIG (configs, 0);

  g_assert_cmpstr (c->scenario_name, ==, "study");
  g_assert_cmpstr (c->db, ==, "results/study.db");
  assert_rel (c->time_limit, 2.5 * 1e-3);
  assert_rel (c->flops, 19.5e12);
  assert_rel (c->step_time, 0.0);
  assert_rel (c->efficiency, 0.5);
  assert_rel (c->bandwidth, 1.25e9);
  assert_rel (c->latency, 2 * 1e-6);
  g_assert_cmpint (c->contention, ==, NET_CONTENTION_NONE);
  g_assert_cmpint (base_values_int (c->values, "policy.consistency"), ==, POL_SSP);   /* case-insensitive */
  g_assert_cmpint (base_values_int (c->values, "policy.staleness"), ==, 0);
  const GArray *slow = base_values_list (c->values, "stragglers.slow");
  g_assert_cmpstr (base_values_string (c->values, "stragglers.model"), ==, "fixed");
  g_assert_cmpuint (slow->len, ==, 2);
  g_assert_cmpint (g_array_index (slow, int, 0), ==, 0);
  g_assert_cmpint (g_array_index (slow, int, 1), ==, 3);
  assert_rel (base_values_double (c->values, "stragglers.factor"), 2.0);
  g_assert_false (c->math);
  g_assert_cmpint (c->detail, ==, SIM_DETAIL_MESSAGES);
}

static void
test_scenario_unknown_key (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "typo.ini",
      "[network]\nbandwith = 10Gbps\n", NULL);
  assert_contains (msg, "[network] bandwith");
  assert_contains (msg, "bandwidth");   /* lists the keys of [network] */
}

static void
test_scenario_unknown_section (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "sec.ini", "[netwrok]\nlatency = 1us\n", NULL);
  assert_contains (msg, "[netwrok]");
  assert_contains (msg, "[network]");   /* lists the sections */
}

static void
test_scenario_negative_bandwidth (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "neg.ini", "[network]\nbandwidth = -10Gbps\n", NULL);
  assert_contains (msg, "[network] bandwidth");
  assert_contains (msg, "-10Gbps");
}

static void
test_scenario_bad_unit (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "unit.ini", "[network]\nlatency = 5GB\n", NULL);
  assert_contains (msg, "[network] latency");
  assert_contains (msg, "5GB");
  assert_contains (msg, "time");
}

static void
test_scenario_bad_enum (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "enum.ini", "[policy]\nconsistency = eventual\n", NULL);
  assert_contains (msg, "[policy] consistency");
  assert_contains (msg, "eventual");
  assert_contains (msg, "bsp, ssp, async");
}

static void
test_scenario_bad_int (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *zero = load_fails (fx, "w0.ini", "[cluster]\nworkers = 0\n", NULL);
  assert_contains (zero, "[cluster] workers");
  assert_contains (zero, "out of range");
  g_autofree char *frac = load_fails (fx, "wf.ini", "[cluster]\nworkers = 4.5\n", NULL);
  assert_contains (frac, "[cluster] workers");
  assert_contains (frac, "not an integer");
}

static void
test_scenario_empty_string (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "e.ini", "[scenario]\nname =\n", NULL);
  assert_contains (msg, "[scenario] name");
}

static void
test_scenario_fixed_needs_slow (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *msg = load_fails (fx, "fixed.ini", "[stragglers]\nmodel = fixed\n", NULL);
  assert_contains (msg, "[stragglers] slow");
}

static void
test_scenario_slow_out_of_range (Fixture *fx, gconstpointer data)
{
  (void) data;
  /* workers 0 .. 3 exist; index 4 = workers does not */
  g_autofree char *msg = load_fails (fx, "slow.ini",
      "[cluster]\nworkers = 4\n[stragglers]\nmodel = fixed\nslow = 1, 4\n", NULL);
  assert_contains (msg, "[stragglers] slow");
  assert_contains (msg, "worker 4");
  g_autofree char *neg = load_fails (fx, "slowneg.ini",
      "[stragglers]\nmodel = fixed\nslow = -1\n", NULL);
  assert_contains (neg, "[stragglers] slow");
}

static void
test_scenario_db (Fixture *fx, gconstpointer data)
{
  (void) data;
  /* a db in a missing folder */
  g_autofree char *missing = g_build_filename (fx->dir, "nope", "out.db", NULL);
  g_autofree char *text = g_strdup_printf ("[trace]\ndb = %s\n", missing);
  g_autofree char *msg = load_fails (fx, "db.ini", text, NULL);
  assert_contains (msg, "[trace] db");

  /* a scenario file names no database outside results/ (docs/security.md)... */
  g_autofree char *here = g_build_filename (fx->dir, "out.db", NULL);
  g_autofree char *text2 = g_strdup_printf ("[trace]\ndb = %s\n", here);
  g_autofree char *msg2 = load_fails (fx, "db2.ini", text2, NULL);
  assert_contains (msg2, "[trace] db");
  assert_contains (msg2, "outside results/");
  /* ...but the user's own --set may, and the path is a param */
  g_autofree char *set = g_strdup_printf ("trace.db=%s", here);
  const char *sets[] = { set, NULL };
  g_autoptr (GPtrArray) configs = load_ok (fx, "db3.ini", "", sets, 1);
  g_assert_cmpstr (CONFIG (configs, 0)->db, ==, here);
  g_assert_cmpstr (param (CONFIG (configs, 0), "trace.db"), ==, here);
}

static void
test_scenario_cross_rules (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *loss = load_fails (fx, "loss.ini",
      "[scenario]\ntarget_loss = 0.5\n[kernels]\nbackend = none\n", NULL);
  assert_contains (loss, "[scenario] target_loss");
  g_autofree char *acc = load_fails (fx, "acc.ini",
      "[scenario]\ntarget_accuracy = 0.8\n[model]\nkind = timing\nparams = 100\nflops = 100\n",
      NULL);
  assert_contains (acc, "[scenario] target_accuracy");
  g_autofree char *acc2 = load_fails (fx, "acc2.ini", "[scenario]\ntarget_accuracy = 80\n", NULL);
  assert_contains (acc2, "[scenario] target_accuracy");
  g_autofree char *topo = load_fails (fx, "topo.ini", "[network]\ntopology = ring9\n", NULL);
  assert_contains (topo, "[network] topology");
  assert_contains (topo, "star");
  g_autofree char *samples = load_fails (fx, "samples.ini",
      "[cluster]\nworkers = 8\n[model]\nsamples = 7\n", NULL);
  assert_contains (samples, "[model] samples");
}

/* The dgx1 topology's keys through the loader: a bad [network] mesh or
 * intra_efficiency is one line naming the key and what to write; mesh =
 * p100 is taken and kept in the params. */
static void
test_scenario_dgx1_keys (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *mesh = load_fails (fx, "mesh.ini",
      "[network]\ntopology = dgx1\nmesh = a100\n", NULL);
  assert_contains (mesh, "[network] mesh");
  assert_contains (mesh, "v100, p100");
  g_autofree char *eff = load_fails (fx, "eff.ini",
      "[network]\ntopology = dgx1\nintra_efficiency = 1.5\n", NULL);
  assert_contains (eff, "[network] intra_efficiency");
  g_autoptr (GPtrArray) configs = load_ok (fx, "p100.ini",
      "[cluster]\nworkers = 12\n[network]\ntopology = dgx1\nmesh = p100\n"
      "intra_bandwidth = 20GBps\n", NULL, 1);
  g_assert_cmpstr (param (CONFIG (configs, 0), "network.mesh"), ==, "p100");
  g_assert_cmpint (base_values_int (CONFIG (configs, 0)->values, "network.mesh"),
                   ==, 1);
}

/* The torus topology's keys through the loader: a negative torus_x is
 * refused by its key's bounds, a torus too small for the hosts by the
 * topology; each is one line naming the file, the key and what to write.
 * A shape that holds them is taken and kept in the params. */
static void
test_scenario_torus_keys (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *neg = load_fails (fx, "neg.ini",
      "[network]\ntopology = torus\ntorus_x = -1\n", NULL);
  assert_contains (neg, "[network] torus_x");
  /* kind = allreduce: 8 workers are the 8 hosts */
  g_autofree char *small = load_fails (fx, "small.ini",
      "[cluster]\nworkers = 8\n[policy]\nkind = allreduce\n"
      "[network]\ntopology = torus\ntorus_x = 3\ntorus_y = 2\n", NULL);
  assert_contains (small, "[network] torus_y: a 3 x 2 torus holds 6 hosts");
  assert_contains (small, "write torus_y = 3");
  g_autoptr (GPtrArray) configs = load_ok (fx, "torus.ini",
      "[cluster]\nworkers = 8\n[policy]\nkind = allreduce\n"
      "[network]\ntopology = torus\ntorus_x = 4\n", NULL, 1);
  g_assert_cmpstr (param (CONFIG (configs, 0), "network.torus_x"), ==, "4");
  g_assert_cmpint (base_values_int (CONFIG (configs, 0)->values,
                                    "network.torus_y"), ==, 0);
}

static void
test_scenario_missing_file (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (fx->dir, "absent.ini", NULL);
  GPtrArray *configs = sim_scenario_load (path, NULL, &error);
  g_autofree char *msg = input_error (configs, error);
  assert_contains (msg, path);
}

static void
test_scenario_unreadable (Fixture *fx, gconstpointer data)
{
  (void) data;
  /* not a key file: GLib's parse error, still on one line with the path */
  g_autofree char *msg = load_fails (fx, "junk.ini", "[network]\nthis is not a key\n", NULL);
  assert_contains (msg, "cannot read scenario");
  /* a folder given as the scenario */
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = sim_scenario_load (fx->dir, NULL, &error);
  g_autofree char *dir_msg = input_error (configs, error);
  assert_contains (dir_msg, fx->dir);
}

/* ---------------------------------------------------------------- sweep -- */

static const char sweep2[] =
  "[scenario]\nname = sw\n"
  "[sweep]\npolicy.consistency = bsp, async\ncluster.workers = 2, 4\n";

static void
test_sweep_product (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autoptr (GPtrArray) configs = load_ok (fx, "sw.ini", sweep2, NULL, 2 * 2);
  const PolConsistency cons[] = { POL_BSP, POL_ASYNC };
  const char *cons_text[] = { "bsp", "async" };
  const gint64 workers[] = { 2, 4 };
  const char *workers_text[] = { "2", "4" };

  for (guint i = 0; i < 2; i++)
    for (guint j = 0; j < 2; j++)
      {
        SimConfig *c = CONFIG (configs, i * 2 + j);   /* last key fastest */
        g_autofree char *l0 = g_strdup_printf ("policy.consistency=%s", cons_text[i]);
        g_autofree char *l1 = g_strdup_printf ("cluster.workers=%s", workers_text[j]);
        g_assert_cmpint (base_values_int (c->values, "policy.consistency"), ==, cons[i]);
        g_assert_cmpint (c->workers, ==, workers[j]);
        g_assert_cmpstr (c->scenario_name, ==, "sw");
        assert_contains (c->name, "sw");
        assert_contains (c->name, l0);
        assert_contains (c->name, l1);
        g_assert_cmpuint (c->swept->len, ==, 2);
        g_assert_cmpstr (g_ptr_array_index (c->swept, 0), ==, l0);
        g_assert_cmpstr (g_ptr_array_index (c->swept, 1), ==, l1);
        g_assert_cmpstr (param (c, "policy.consistency"), ==, cons_text[i]);
        g_assert_cmpstr (param (c, "cluster.workers"), ==, workers_text[j]);
      }
}

static void
test_sweep_mixed_radix (Fixture *fx, gconstpointer data)
{
  (void) data;
  /* 2 x 3 x 2 points; point (i, j, k) is at (i * 3 + j) * 2 + k */
  g_autoptr (GPtrArray) configs = load_ok (fx, "mr.ini",
      "[sweep]\ncluster.workers = 1, 2\n"
      "policy.consistency = bsp, ssp, async\nmodel.batch = 8, 16\n", NULL, 2 * 3 * 2);
  for (guint i = 0; i < 2; i++)
    for (guint j = 0; j < 3; j++)
      for (guint k = 0; k < 2; k++)
        {
          SimConfig *c = CONFIG (configs, (i * 3 + j) * 2 + k);
          g_assert_cmpint (c->workers, ==, 1 + i);
          g_assert_cmpint (base_values_int (c->values, "policy.consistency"), ==, j);   /* bsp, ssp, async */
          g_assert_cmpint (c->batch, ==, 8 << k);
        }
}

static void
test_sweep_empty (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *none = load_fails (fx, "e1.ini", "[sweep]\ncluster.workers =\n", NULL);
  assert_contains (none, "[sweep] cluster.workers");
  g_autofree char *commas = load_fails (fx, "e2.ini", "[sweep]\ncluster.workers = , ,\n", NULL);
  assert_contains (commas, "[sweep] cluster.workers");
}

static void
test_sweep_unknown_key (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *bad = load_fails (fx, "u1.ini", "[sweep]\ncluster.nodes = 1, 2\n", NULL);
  assert_contains (bad, "cluster.nodes");
  g_autofree char *nodot = load_fails (fx, "u2.ini", "[sweep]\nworkers = 1, 2\n", NULL);
  assert_contains (nodot, "[sweep] workers");
}

static void
test_sweep_bad_value (Fixture *fx, gconstpointer data)
{
  (void) data;
  /* the second point is invalid: nothing is returned */
  g_autofree char *msg = load_fails (fx, "bv.ini", "[sweep]\ncluster.workers = 2, 0\n", NULL);
  assert_contains (msg, "[cluster] workers");
}

/* ----------------------------------------------------------------- sets -- */

static void
test_set_override (Fixture *fx, gconstpointer data)
{
  (void) data;
  const char *const sets[] = { "network.bandwidth=25Gbps", "stragglers.model=bernoulli",
                               NULL };
  g_autoptr (GPtrArray) configs = load_ok (fx, "o.ini",
      "[network]\nbandwidth = 10Gbps\n", sets, 1);
  SimConfig *c = CONFIG (configs, 0);
  assert_rel (c->bandwidth, 25e9 / 8);
  g_assert_cmpstr (param (c, "network.bandwidth"), ==, "25Gbps");
  g_assert_cmpstr (base_values_string (c->values, "stragglers.model"), ==, "bernoulli");  /* section not in file */
}

static void
test_set_fixes_sweep (Fixture *fx, gconstpointer data)
{
  (void) data;
  const char *const sets[] = { "cluster.workers=3", NULL };
  g_autoptr (GPtrArray) configs = load_ok (fx, "sw.ini", sweep2, sets, 2);
  const PolConsistency cons[] = { POL_BSP, POL_ASYNC };
  for (guint i = 0; i < 2; i++)
    {
      SimConfig *c = CONFIG (configs, i);
      g_assert_cmpint (c->workers, ==, 3);
      g_assert_cmpint (base_values_int (c->values, "policy.consistency"), ==, cons[i]);
      g_assert_cmpuint (c->swept->len, ==, 1);
      g_assert_null (strstr (c->name, "cluster.workers"));
    }
}

/* --set of a key joined with others in one sweep: that key is fixed, the
 * sweep goes on over the others' distinct values, in order. */
static void
test_set_fixes_joined_sweep (Fixture *fx, gconstpointer data)
{
  (void) data;
  const char *const sets[] = { "cluster.workers=3", NULL };
  g_autoptr (GPtrArray) configs = load_ok (fx, "js.ini",
      "[sweep]\ncluster.workers/policy.consistency = 2/bsp, 4/async, 8/bsp, 16/ssp\n", sets, 3);
  const PolConsistency cons[] = { POL_BSP, POL_ASYNC, POL_SSP };
  for (guint i = 0; i < 3; i++)
    {
      SimConfig *c = CONFIG (configs, i);
      g_assert_cmpint (c->workers, ==, 3);
      g_assert_cmpint (base_values_int (c->values, "policy.consistency"), ==, cons[i]);
      g_assert_null (strstr (c->name, "cluster.workers"));
    }
  /* fixing every key of the joined sweep leaves one run */
  const char *const both[] = { "cluster.workers=3", "policy.consistency=async", NULL };
  g_autoptr (GPtrArray) one = load_ok (fx, "js2.ini",
      "[sweep]\ncluster.workers/policy.consistency = 2/bsp, 4/async\n", both, 1);
  g_assert_cmpint (base_values_int (CONFIG (one, 0)->values, "policy.consistency"), ==,
                   POL_ASYNC);
}

static void
test_set_adds_sweep (Fixture *fx, gconstpointer data)
{
  (void) data;
  const char *const sets[] = { "sweep.cluster.workers=2,3", NULL };
  g_autoptr (GPtrArray) configs = load_ok (fx, "as.ini", "[scenario]\nname = as\n", sets, 2);
  for (guint i = 0; i < 2; i++)
    {
      SimConfig *c = CONFIG (configs, i);
      g_autofree char *label = g_strdup_printf ("cluster.workers=%u", 2 + i);
      g_assert_cmpint (c->workers, ==, 2 + i);
      assert_contains (c->name, label);
    }
}

static void
test_set_malformed (Fixture *fx, gconstpointer data)
{
  (void) data;
  const char *bad[] = { "nodot=1", "network.bandwidth", "=5", ".bandwidth=1",
                        "network.=1" };
  g_autofree char *path = write_file (fx, "m.ini", "\n");
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      const char *const sets[] = { bad[i], NULL };
      GPtrArray *configs = sim_scenario_load (path, sets, &error);
      g_autofree char *msg = input_error (configs, error);
      assert_contains (msg, bad[i]);
      assert_contains (msg, "section.key=value");
    }
}

static void
test_set_unknown_key (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autofree char *path = write_file (fx, "k.ini", "\n");
  const char *const typo[] = { "network.bandwith=1Gbps", NULL };
  g_autoptr (GError) e1 = NULL;
  GPtrArray *c1 = sim_scenario_load (path, typo, &e1);
  g_autofree char *m1 = input_error (c1, e1);
  assert_contains (m1, "[network] bandwith");

  const char *const sweep[] = { "sweep.cluster.nodes=1,2", NULL };
  g_autoptr (GError) e2 = NULL;
  GPtrArray *c2 = sim_scenario_load (path, sweep, &e2);
  g_autofree char *m2 = input_error (c2, e2);
  assert_contains (m2, "sweep.cluster.nodes");

  const char *const bad_value[] = { "network.bandwidth=-1Gbps", NULL };
  g_autoptr (GError) e3 = NULL;
  GPtrArray *c3 = sim_scenario_load (path, bad_value, &e3);
  g_autofree char *m3 = input_error (c3, e3);
  assert_contains (m3, "[network] bandwidth");
}

/* --------------------------------------------------------------- params -- */

/* Number of key rows in the reference, i.e. keys in the table. */
static guint
count_reference_keys (void)
{
  g_autoptr (GString) ref = g_string_new (NULL);
  sim_scenario_write_reference (ref);
  guint n = 0;
  g_auto (GStrv) lines = g_strsplit (ref->str, "\n", -1);
  for (int i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], "| `"))
      n++;
  return n;
}

static void
test_params (Fixture *fx, gconstpointer data)
{
  (void) data;
  g_autoptr (GPtrArray) configs = load_ok (fx, "p.ini",
      "[network]\nbandwidth = 25Gbps\n[sweep]\npolicy.consistency = bsp, ssp\n", NULL, 2);
  guint n_keys = count_reference_keys ();
  for (guint i = 0; i < configs->len; i++)
    {
      SimConfig *c = CONFIG (configs, i);
      /* every key has a value except [trace] db, which is derived, and the
       * three keys only a [job NAME] section holds (arrival, priority, hosts) */
      g_assert_cmpuint (c->param_keys->len, ==, n_keys - 1 - 3);
      g_assert_cmpuint (c->param_values->len, ==, n_keys - 1 - 3);
      g_assert_cmpstr (param (c, "network.bandwidth"), ==, "25Gbps");
      g_assert_cmpstr (param (c, "cluster.workers"), ==, "4");      /* default */
      g_assert_cmpstr (param (c, "network.latency"), ==, "5us");    /* default */
      g_assert_cmpstr (param (c, "scenario.name"), ==, "p");        /* derived */
      g_assert_cmpstr (param (c, "policy.consistency"), ==, i == 0 ? "bsp" : "ssp");
      g_assert_null (param (c, "trace.db"));
      g_assert_null (param (c, "sweep.policy.consistency"));
      for (guint j = 0; j < c->param_keys->len; j++)
        g_assert_nonnull (strchr (g_ptr_array_index (c->param_keys, j), '.'));
    }
}

static void
test_reference (void)
{
  g_autoptr (GString) ref = g_string_new (NULL);
  sim_scenario_write_reference (ref);
  const char *sections[] = { "scenario", "cluster", "device", "network", "model",
                             "policy", "stragglers", "kernels", "trace" };
  for (gsize i = 0; i < G_N_ELEMENTS (sections); i++)
    {
      g_autofree char *heading = g_strdup_printf ("### [%s]", sections[i]);
      assert_contains (ref->str, heading);
    }
  assert_contains (ref->str, "| `bandwidth` | bytes/s | 10Gbps |");
  assert_contains (ref->str, "| `workers` | integer | 4 |");
  assert_contains (ref->str, "bsp \\| ssp \\| async");
  g_assert_cmpuint (count_reference_keys (), >=, 30);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/sim/units/time", test_units_time);
  g_test_add_func ("/sim/units/size", test_units_size);
  g_test_add_func ("/sim/units/bandwidth", test_units_bandwidth);
  g_test_add_func ("/sim/units/compute", test_units_compute);
  g_test_add_func ("/sim/units/plain", test_units_plain);
  g_test_add_func ("/sim/units/wrong-kind", test_units_wrong_kind);
  g_test_add_func ("/sim/units/garbage", test_units_garbage);
  g_test_add_func ("/sim/units/format", test_units_format);

#define ADD(path, fn) \
  g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
  ADD ("/sim/scenario/defaults", test_scenario_defaults);
  ADD ("/sim/scenario/units", test_scenario_units);
  ADD ("/sim/scenario/unknown-key", test_scenario_unknown_key);
  ADD ("/sim/scenario/unknown-section", test_scenario_unknown_section);
  ADD ("/sim/scenario/negative-bandwidth", test_scenario_negative_bandwidth);
  ADD ("/sim/scenario/bad-unit", test_scenario_bad_unit);
  ADD ("/sim/scenario/bad-enum", test_scenario_bad_enum);
  ADD ("/sim/scenario/bad-int", test_scenario_bad_int);
  ADD ("/sim/scenario/empty-string", test_scenario_empty_string);
  ADD ("/sim/scenario/fixed-needs-slow", test_scenario_fixed_needs_slow);
  ADD ("/sim/scenario/slow-out-of-range", test_scenario_slow_out_of_range);
  ADD ("/sim/scenario/db", test_scenario_db);
  ADD ("/sim/scenario/cross-rules", test_scenario_cross_rules);
  ADD ("/sim/scenario/dgx1-keys", test_scenario_dgx1_keys);
  ADD ("/sim/scenario/torus-keys", test_scenario_torus_keys);
  ADD ("/sim/scenario/missing-file", test_scenario_missing_file);
  ADD ("/sim/scenario/unreadable", test_scenario_unreadable);
  ADD ("/sim/scenario/sweep/product", test_sweep_product);
  ADD ("/sim/scenario/sweep/mixed-radix", test_sweep_mixed_radix);
  ADD ("/sim/scenario/sweep/empty", test_sweep_empty);
  ADD ("/sim/scenario/sweep/unknown-key", test_sweep_unknown_key);
  ADD ("/sim/scenario/sweep/bad-value", test_sweep_bad_value);
  ADD ("/sim/scenario/set/override", test_set_override);
  ADD ("/sim/scenario/set/fixes-sweep", test_set_fixes_sweep);
  ADD ("/sim/scenario/set/fixes-joined-sweep", test_set_fixes_joined_sweep);
  ADD ("/sim/scenario/set/adds-sweep", test_set_adds_sweep);
  ADD ("/sim/scenario/set/malformed", test_set_malformed);
  ADD ("/sim/scenario/set/unknown-key", test_set_unknown_key);
  ADD ("/sim/scenario/params", test_params);
#undef ADD
  g_test_add_func ("/sim/scenario/reference", test_reference);

  return g_test_run ();
}
