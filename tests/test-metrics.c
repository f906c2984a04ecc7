/*
 * test-metrics.c — the buyer's metrics of a run (config/metrics.h): tokens/s,
 * model FLOP/s per GPU, MFU, time to train, GPU-hours and cost, as `dtsim
 * run` prints them (table and --json), as `dtsim export` writes them and as
 * `dtsim report` shows them, each against its closed form; and the
 * refusals of [scenario] tokens, epochs and [cluster] price.
 */
#include "config.h"

#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <glib/gstdio.h>

#include "config/metrics.h"
#include "tests/json.h"
#include "tests/util.h"

static char *tmpdir;

#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

/* A small GPT on 4 workers at a fixed step time: its samples/s comes from
 * the run, everything else from the formulas. */
#define BLOCKS 2.0
#define WIDTH 256.0
#define SEQUENCE 128.0
#define VOCABULARY 1000.0
#define WORKERS 4.0
#define PEAK 100e12
#define TOKENS 1e9
#define PRICE 2.5
static const char gpt_ini[] =
  "[scenario]\nname = gpt\niterations = 3\ntokens = 1e9\n"
  "[cluster]\nworkers = 4\nprice = 2.5\n"
  "[device]\nflops = 100TFLOPS\nstep_time = 0.5\n"
  "[network]\nbandwidth = 100Gbps\nlatency = 5us\n"
  "[model]\nkind = transformer\nblocks = 2\nwidth = 256\nheads = 4\nsequence = 128\n"
  "vocabulary = 1000\nbatch = 8\n"
  "[policy]\nkind = allreduce\n"
  "[kernels]\nbackend = none\n";

/* The transformer's FLOPs per sequence (kernels/transformer.c's layers):
 * per block 2sd x 3d (QKV) + 2 x 2s^2 d (scores, context) + 2sd x d
 * (projection) + 2 x 2sd x 4d (MLP) = 24 s d^2 + 4 s^2 d, the LM head
 * 2 s d V; backward is twice forward. */
static double
gpt_flops_per_sample (void)
{
  double s = SEQUENCE, d = WIDTH, V = VOCABULARY;
  return 3 * (BLOCKS * (24 * s * d * d + 4 * s * s * d) + 2 * s * d * V);
}

static char *
path_in (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* runs.samples and sim_time of run 1 of db. */
static void
runs_row (const char *db, double *samples, double *sim_time)
{
  sqlite3 *h = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_prepare_v2 (h, "SELECT samples, sim_time FROM runs WHERE id = 1", -1,
                                       &st, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (st), ==, SQLITE_ROW);
  *samples = sqlite3_column_double (st, 0);
  *sim_time = sqlite3_column_double (st, 1);
  sqlite3_finalize (st);
  sqlite3_close (h);
}

static void
assert_close (double got, double want)
{
  g_assert_true (isfinite (want) && want != 0);
  g_assert_cmpfloat_with_epsilon (got / want, 1.0, 1e-12);
}

/* The expected metrics of the GPT run from its samples and sim_time. */
typedef struct {
  double sps, tps, flops, mfu, time, hours, cost;
} Want;

static Want
gpt_want (double samples, double sim_time)
{
  Want w;
  w.sps = samples / sim_time;
  w.tps = w.sps * SEQUENCE;
  w.flops = gpt_flops_per_sample () * w.sps / WORKERS;
  w.mfu = gpt_flops_per_sample () * w.sps / (WORKERS * PEAK);
  w.time = TOKENS / w.tps;
  w.hours = w.time * WORKERS / 3600;
  w.cost = w.hours * PRICE;
  return w;
}

/* The first element of --json's "runs". */
static const TjNode *
first_run (const TjNode *j)
{
  const TjNode *runs = tj_get (j, "runs");
  g_assert_nonnull (runs);
  g_assert_cmpint (runs->type, ==, TJ_ARRAY);
  g_assert_cmpuint (runs->items->len, >=, 1);
  return g_ptr_array_index (runs->items, 0);
}

static void
test_run_json (void)
{
  g_autofree char *ini = path_in ("gpt.ini"), *db = path_in ("gpt.db");
  g_assert_true (g_file_set_contents (ini, gpt_ini, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "gpt.ini", "-o", "gpt.db", "--json", NULL), ==, 0);
  double samples, sim_time;
  runs_row (db, &samples, &sim_time);
  g_assert_cmpfloat (samples, >, 0);
  Want w = gpt_want (samples, sim_time);
  g_autofree char *why = NULL;
  TjNode *j = tj_parse (o, strlen (o), &why);
  g_assert_nonnull (j);
  const TjNode *run = first_run (j);
  g_assert_nonnull (run);
  assert_close (tj_number (run, "samples_per_s"), w.sps);
  assert_close (tj_number (run, "tokens_per_s"), w.tps);
  assert_close (tj_number (run, "model_flops_per_gpu"), w.flops);
  assert_close (tj_number (run, "mfu"), w.mfu);
  assert_close (tj_number (run, "time_to_train"), w.time);
  assert_close (tj_number (run, "gpu_hours"), w.hours);
  assert_close (tj_number (run, "cost"), w.cost);
  tj_free (j);
}

static void
test_run_table (void)
{
  g_autofree char *ini = path_in ("gpt.ini");
  g_assert_true (g_file_set_contents (ini, gpt_ini, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "gpt.ini", "-o", "table.db", NULL), ==, 0);
  g_autofree char *db = path_in ("table.db");
  double samples, sim_time;
  runs_row (db, &samples, &sim_time);
  Want w = gpt_want (samples, sim_time);
  const char *cols[] = { "tokens/s", "FLOP/s/GPU", "MFU", "to train", "GPU-hours", "cost" };
  for (gsize k = 0; k < G_N_ELEMENTS (cols); k++)
    g_assert_nonnull (strstr (o, cols[k]));
  /* the figures as the table prints them */
  char want[64];
  g_snprintf (want, sizeof want, "%.6g", w.tps);
  g_assert_nonnull (strstr (o, want));
  g_snprintf (want, sizeof want, "%.3g%%", 100 * w.mfu);
  g_assert_nonnull (strstr (o, want));
  g_autofree char *t = sim_metrics_format_time (w.time);
  g_assert_nonnull (strstr (o, t));
  g_snprintf (want, sizeof want, "%.4g", w.cost);
  g_assert_nonnull (strstr (o, want));
}

/* dtsim export's CSV columns (its first two lines hold no quoted cell)
 * and dtsim report's table. */
static void
test_export_csv (void)
{
  g_autofree char *ini = path_in ("gpt.ini");
  g_assert_true (g_file_set_contents (ini, gpt_ini, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "gpt.ini", "-o", "csv.db", "-q", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o, &e, "export", "csv.db", "--format", "csv", NULL), ==, 0);
  g_auto (GStrv) lines = g_strsplit (o, "\r\n", -1);
  g_assert_nonnull (lines[0]);
  g_assert_nonnull (lines[1]);
  g_auto (GStrv) head = g_strsplit (lines[0], ",", -1);
  g_auto (GStrv) row = g_strsplit (lines[1], ",", -1);
  g_assert_cmpuint (g_strv_length (head), ==, g_strv_length (row));
  g_autofree char *db = path_in ("csv.db");
  double samples, sim_time;
  runs_row (db, &samples, &sim_time);
  Want w = gpt_want (samples, sim_time);
  const struct { const char *col; double want; } cols[] = {
    { "tokens_per_s", w.tps }, { "model_flops_per_gpu", w.flops }, { "mfu", w.mfu },
    { "time_to_train", w.time }, { "gpu_hours", w.hours }, { "cost", w.cost },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cols); k++)
    {
      int at = -1;
      for (int i = 0; head[i]; i++)
        if (strcmp (head[i], cols[k].col) == 0)
          at = i;
      g_assert_cmpint (at, >=, 0);
      assert_close (g_ascii_strtod (row[at], NULL), cols[k].want);
    }
  /* the HTML report shows the same columns */
  g_assert_cmpint (dtsim (&o, &e, "report", "csv.db", "-o", "csv.html", NULL), ==, 0);
  g_autofree char *html_path = path_in ("csv.html"), *html = NULL;
  g_assert_true (g_file_get_contents (html_path, &html, NULL, NULL));
  g_assert_nonnull (strstr (html, "<th>MFU</th>"));
  g_assert_nonnull (strstr (html, "<th>GPU-hours</th>"));
  char want[64];
  g_snprintf (want, sizeof want, ">%.4g<", w.cost);
  g_assert_nonnull (strstr (html, want));
}

/* Epochs of a data set: time = epochs x training samples / samples/s; the
 * parameter server's own device is billed too (workers + servers). */
static void
test_epochs (void)
{
  static const char ini_text[] =
    "[scenario]\nname = ep\niterations = 4\nepochs = 3\n"
    "[cluster]\nworkers = 2\nservers = 1\nprice = 4\n"
    "[device]\nflops = 1GFLOPS\nstep_time = 1ms\n"
    "[network]\nbandwidth = 1Gbps\nlatency = 20us\n"
    "[model]\nfeatures = 15\nclasses = 4\nsamples = 256\ntest_samples = 64\nbatch = 8\n"
    "[policy]\nkind = ps\n";
  g_autofree char *ini = path_in ("ep.ini"), *db = path_in ("ep.db");
  g_assert_true (g_file_set_contents (ini, ini_text, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "ep.ini", "-o", "ep.db", "--json", NULL), ==, 0);
  double samples, sim_time;
  runs_row (db, &samples, &sim_time);
  double sps = samples / sim_time, time = 3 * 256 / sps, hours = time * (2 + 1) / 3600.0;
  g_autofree char *why = NULL;
  TjNode *j = tj_parse (o, strlen (o), &why);
  g_assert_nonnull (j);
  const TjNode *run = first_run (j);
  assert_close (tj_number (run, "time_to_train"), time);
  assert_close (tj_number (run, "gpu_hours"), hours);
  assert_close (tj_number (run, "cost"), hours * 4);
  /* no tokens in a sample: no tokens/s */
  g_assert_true (isnan (tj_number (run, "tokens_per_s")));
  g_assert_cmpfloat (tj_number (run, "mfu"), >, 0);
  tj_free (j);
}

/* The formulas alone, with missing inputs. */
static void
test_formulas (void)
{
  SimMetricsIn in = {
    .samples = 1000, .sim_time = 4, .workers = 8, .devices = 8, .flops_per_sample = 6e9,
    .tokens_per_sample = 2048, .peak = 1e12, .tokens = 1e12, .epochs = 0,
    .train_samples = NAN, .price = 0,
  };
  SimMetrics m;
  sim_metrics_compute (&in, &m);
  assert_close (m.samples_per_s, 1000 / 4.0);
  assert_close (m.tokens_per_s, 1000 / 4.0 * 2048);
  assert_close (m.model_flops, 6e9 * (1000 / 4.0) / 8);
  assert_close (m.mfu, 6e9 * (1000 / 4.0) / (8 * 1e12));
  assert_close (m.train_time, 1e12 / (1000 / 4.0 * 2048));
  assert_close (m.device_hours, 1e12 / (1000 / 4.0 * 2048) * 8 / 3600);
  g_assert_true (isnan (m.cost));              /* no price */
  in.samples = NAN;                            /* a policy that trains nothing */
  sim_metrics_compute (&in, &m);
  g_assert_true (isnan (m.tokens_per_s) && isnan (m.mfu) && isnan (m.train_time)
                 && isnan (m.device_hours));
  g_autofree char *days = sim_metrics_format_time (3 * 86400.0);
  g_assert_cmpstr (days, ==, "3 days");
  g_autofree char *hours = sim_metrics_format_time (5 * 3600.0);
  g_assert_cmpstr (hours, ==, "5 hours");
}

static void
test_refusals_keys (void)
{
  static const char base[] =
    "[scenario]\nname = r\niterations = 2\n"
    "[cluster]\nworkers = 2\n"
    "[device]\nstep_time = 1ms\n"
    "[model]\nkind = transformer\nblocks = 1\nwidth = 64\nheads = 2\nsequence = 16\n"
    "vocabulary = 100\nbatch = 2\n"
    "[policy]\nkind = allreduce\n"
    "[kernels]\nbackend = none\n";
  static const TestRefusal cases[] = {
    { "iterations = 2\n", "iterations = 2\ntokens = 1e9\nepochs = 2\n",
      "[scenario] tokens: and [scenario] epochs both give the length of training" },
    { "iterations = 2\n", "iterations = 2\ntokens = -5\n", "[scenario] tokens" },
    { "iterations = 2\n", "iterations = 2\ntokens = 1e30\n", "[scenario] tokens" },
    { "iterations = 2\n", "iterations = 2\nepochs = -1\n", "[scenario] epochs" },
    { "workers = 2\n", "workers = 2\nprice = -3\n", "[cluster] price" },
    { "workers = 2\n", "workers = 2\nprice = 1e9\n", "[cluster] price" },
    { "workers = 2\n", "workers = 2\nprice = cheap\n", "[cluster] price" },
  };
  /* tokens for a model whose sample is not a sequence */
  g_autofree char *mlp = test_replaced (base, "kind = transformer\nblocks = 1\nwidth = 64\n"
                                        "heads = 2\nsequence = 16\nvocabulary = 100\n",
                                        "features = 4\n");
  g_autofree char *mlp_tokens = test_replaced (mlp, "iterations = 2\n",
                                               "iterations = 2\ntokens = 1e9\n");
  g_autofree char *msg = test_load_scenario_error (mlp_tokens);
  g_assert_nonnull (strstr (msg, "[scenario] tokens: kind = softmax has no tokens per sample"));
  g_assert_nonnull (strstr (msg, "epochs"));
  test_refusals (base, cases, G_N_ELEMENTS (cases));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-metrics-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  g_test_add_func ("/metrics/formulas", test_formulas);
  g_test_add_func ("/metrics/run/json", test_run_json);
  g_test_add_func ("/metrics/run/table", test_run_table);
  g_test_add_func ("/metrics/export/csv-and-report", test_export_csv);
  g_test_add_func ("/metrics/epochs", test_epochs);
  g_test_add_func ("/metrics/refusals", test_refusals_keys);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
