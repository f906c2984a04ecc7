/*
 * test-hostile.c — hostile and broken scenario input through the dtsim
 * command (docs/security.md): every case must end with exit code 2, one line
 * on stderr naming the file (or --set) and the [section] key where there is
 * one, no database written, and the input file left as it was.  Each class
 * of the safety issue has its cases here: repeated or localised keys, NUL
 * bytes and non-text, files that are not regular (FIFO, device, directory)
 * or too large, --set values over several lines, sweeps that are too large or
 * overflow, keys swept twice, bounds that were open (momentum = 1), numbers
 * too small to be real (subnormals), names and [trace] db paths that would
 * write outside results/, clusters and models larger than the limits, data
 * files with fewer images than workers, and a learning rate that makes the
 * loss diverge.
 */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config/input.h"
#include "config/scenario.h"
#include "tests/util.h"
#include "sim/load.h"

static char *tmpdir;

static char *
tmp (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

static char *
write_tmp (const char *name, const char *text, gssize len)
{
  char *path = tmp (name);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_set_contents (path, text, len, &error));
  return path;
}

/* Asserts `err` is exactly one line holding every string of `want`. */
static void
assert_one_line (const char *err, const char *const *want)
{
  g_test_message ("stderr: %s", err);
  const char *nl = strchr (err, '\n');
  g_assert_nonnull (nl);
  g_assert_cmpstr (nl + 1, ==, "");
  g_assert_true (g_str_has_prefix (err, "dtsim: "));
  for (int i = 0; want && want[i]; i++)
    if (!strstr (err, want[i]))
      g_error ("stderr '%s' does not name '%s'", err, want[i]);
}

/* Runs dtsim (args, NULL-terminated) in tmpdir; asserts exit code 2, one line
 * naming each of `want`, and that no results/ folder nor database appeared. */
static void
refused (const char *const *args, const char *const *want)
{
  g_autofree char *out = NULL, *err = NULL;
  int code = test_run_dtsim_argv (tmpdir, &out, &err, args);
  g_assert_cmpint (code, ==, 2);
  assert_one_line (err, want);
  g_autofree char *results = tmp ("results");
  g_assert_false (g_file_test (results, G_FILE_TEST_EXISTS));
}

typedef struct {
  const char *name;      /* test path and file name */
  const char *text;      /* the scenario */
  const char *set;       /* one --set, or NULL */
  const char *key;       /* "[section] key" the line must name, or NULL */
  const char *also;      /* another string the line must hold, or NULL */
  gboolean blame_set;    /* the line names --set rather than the file */
} Case;

static const Case cases[] = {
  { "duplicate-key", "[cluster]\nworkers = 4\nworkers = 8\n", NULL, "[cluster] workers",
    "set twice (lines 2 and 3)", FALSE },
  { "duplicate-section", "[cluster]\nworkers = 4\n[model]\nbatch = 8\n[cluster]\nservers = 2\n",
    NULL, NULL, "[cluster] appears twice (lines 1 and 5)", FALSE },
  /* a duplicate sweep key plus --set on it crashed the loader */
  { "duplicate-sweep-key", "[sweep]\nmodel.features = 1\nmodel.features = 2\n",
    "model.features=8", "[sweep] model.features", "set twice", FALSE },
  { "swept-twice", "[sweep]\nmodel.features = 1,2\nmodel.features/model.batch = 3/4, 5/6\n",
    NULL, "[sweep] model.features/model.batch", "already swept", FALSE },
  { "sweep-db", "[sweep]\ntrace.db = results/a.db, results/b.db\n", NULL, "[sweep] trace.db",
    NULL, FALSE },
  { "escape-in-value", "[model]\ndata_dir = /tmp/\033[2J\n", NULL, "[model] data_dir",
    "control character", FALSE },
  { "tab-in-sweep", "[sweep]\nscenario.seed = 1,\t2\n", NULL, "[sweep] scenario.seed",
    "control character", FALSE },
  /* 1e15 parameters in buckets of one byte: 10^15 buckets were allocated */
  { "too-many-buckets", "[model]\nkind = timing\nparams = 1e15\nflops = 1\n[kernels]\n"
    "backend = none\n[policy]\nkind = allreduce\nbucket_size = 1\n", NULL,
    "[policy] bucket_size", "65536", FALSE },
  { "locale-key", "[cluster]\nworkers = 4\nworkers[fr] = 8\n", NULL, "[cluster] workers[fr]",
    "localised", FALSE },
  { "momentum-one", "[model]\noptimizer = momentum\nmomentum = 1\n", NULL, "[model] momentum",
    "[0, 1)", FALSE },
  { "beta2-one", "[model]\noptimizer = adam\nbeta2 = 1\n", NULL, "[model] beta2", "[0, 1)", FALSE },
  /* 1e-320 is subnormal: it passed "> 0" and divided to infinity */
  { "subnormal-efficiency", "[device]\nefficiency = 1e-320\n", NULL, "[device] efficiency",
    "2.2e-308", FALSE },
  { "overflowing-unit", "[network]\nbandwidth = 1e300 Tbps\n", NULL, "[network] bandwidth",
    "1.8e308", FALSE },
  { "infinite-step", "[device]\nflops = 1e-300\nefficiency = 1e-20\n", NULL, "[device] efficiency", "inf", FALSE },
  { "name-slash", "[scenario]\nname = ../../escape\n", NULL, "[scenario] name", "'/'", FALSE },
  { "name-absolute", "[scenario]\nname = /tmp/escape\n", NULL, "[scenario] name", NULL, FALSE },
  { "db-absolute", "[trace]\ndb = /tmp/escape.db\n", NULL, "[trace] db", "outside results/", FALSE },
  { "db-dotdot", "[trace]\ndb = results/../escape.db\n", NULL, "[trace] db", "outside results/", FALSE },
  { "db-elsewhere", "[trace]\ndb = notes/escape.db\n", NULL, "[trace] db", "outside results/", FALSE },
  { "set-newline", "[model]\nbatch = 8\n", "scenario.seed=5\n[cluster]\nworkers=2", NULL,
    "control character", TRUE },
  { "too-many-hosts", "[cluster]\nworkers = 70000\nservers = 70000\n", NULL, "[cluster] servers",
    "131072", FALSE },
  { "too-many-pairs", "[cluster]\nworkers = 6000\nservers = 6000\n", NULL, "[cluster] servers",
    "16777216", FALSE },
  { "workers-over-max", "[cluster]\nworkers = 131073\n", NULL, "[cluster] workers",
    "out of range", FALSE },
  { "host-memory", "[model]\nkind = mlp\nhidden = 1000000,1000000\n", NULL, "[kernels] backend",
    "host memory", FALSE },
  { "data-memory", "[model]\nfeatures = 1000000\nsamples = 1000000000\n", NULL,
    "[kernels] backend", "host memory", FALSE },
};

static void
test_case (gconstpointer data)
{
  const Case *k = data;
  g_autofree char *file = g_strdup_printf ("%s.ini", k->name);
  g_autofree char *path = write_tmp (file, k->text, -1);
  const char *want[] = { k->blame_set ? "--set" : file, k->key, k->also, NULL };
  if (!k->key)
    want[1] = k->also, want[2] = NULL;
  for (int run = 0; run < 2; run++)
    {
      const char *args[] = { run ? "run" : "check", file, k->set ? "--set" : NULL, k->set, NULL };
      refused (args, want);
    }
  g_autofree char *again = NULL;
  g_assert_true (g_file_get_contents (path, &again, NULL, NULL));
  g_assert_cmpstr (again, ==, k->text);
}

/* A sweep whose point count overflows 64 bits (16 keys of 16 values wrapped
 * to zero points) and one of 10^12 points are refused at the limit. */
static void
test_sweep_too_large (void)
{
  static const char *const keys[] = {
    "model.features", "model.batch", "model.samples", "model.test_samples", "model.classes",
    "model.hidden", "model.eval_samples", "scenario.seed", "scenario.iterations",
    "cluster.workers", "policy.staleness", "model.warmup", "model.eval_every",
    "network.rack_size", "network.gpus_per_node", "policy.sync_every",
  };
  /* 16^16 = 2^64 points; 100^6 = 10^12 points */
  static const int shapes[][2] = { { 16, 16 }, { 6, 100 } };
  for (gsize k = 0; k < G_N_ELEMENTS (shapes); k++)
    {
      int n_keys = shapes[k][0], n_values = shapes[k][1];
      GString *s = g_string_new ("[sweep]\n");
      for (int i = 0; i < n_keys; i++)
        {
          g_string_append_printf (s, "%s = ", keys[i]);
          for (int v = 0; v < n_values; v++)
            g_string_append_printf (s, "%s%d", v ? "," : "", v + 2);
          g_string_append_c (s, '\n');
        }
      g_autofree char *file = g_strdup_printf ("sweep-%d.ini", n_values);
      g_autofree char *path = write_tmp (file, s->str, -1);
      g_string_free (s, TRUE);
      g_autofree char *limit = g_strdup_printf ("more than %d points", SIM_MAX_SWEEP_POINTS);
      const char *want[] = { file, "[sweep]", limit, NULL };
      const char *args[] = { "check", file, NULL };
      refused (args, want);
    }
}

/* A sweep of exactly the limit is accepted: the limit is the documented one. */
static void
test_sweep_at_limit (void)
{
  GString *s = g_string_new ("[kernels]\nbackend = none\n[model]\nkind = timing\nparams = 10\n"
                             "flops = 10\n[sweep]\nscenario.seed = ");
  for (int v = 0; v < SIM_MAX_SWEEP_POINTS; v++)
    g_string_append_printf (s, "%s%d", v ? "," : "", v + 1);
  g_string_append_c (s, '\n');
  g_autofree char *path = write_tmp ("limit.ini", s->str, -1);
  g_string_free (s, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) configs = sim_scenario_load (path, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (configs->len, ==, SIM_MAX_SWEEP_POINTS);
}

/* A model of more layers than the limit is refused; one of exactly the
 * limit is accepted, cut into a pipeline of L / 2 stages, the stage count
 * at which the balancing's table, stages x (layers - stages + 1), is
 * largest (docs/security.md gives its time). */
static void
test_too_many_layers (void)
{
  for (int extra = 0; extra <= 1; extra++)
    {
      /* an MLP's layers: a linear layer and a ReLU per hidden width, then the
       * output's linear layer and softmax */
      int hidden = (SIM_MAX_LAYERS - 2) / 2 + extra;
      GString *s = g_string_new (NULL);
      g_string_printf (s, "[cluster]\nworkers = %d\n[policy]\nkind = pipeline\n"
                       "[kernels]\nbackend = none\n[model]\nkind = mlp\nhidden = 1",
                       SIM_MAX_LAYERS / 2);
      for (int i = 1; i < hidden; i++)
        g_string_append (s, ",1");
      g_string_append_c (s, '\n');
      g_autofree char *path = write_tmp ("deep.ini", s->str, -1);
      g_string_free (s, TRUE);
      const char *args[] = { "check", "deep.ini", NULL };
      if (extra)
        {
          g_autofree char *limit = g_strdup_printf ("more than the %d", SIM_MAX_LAYERS);
          const char *want[] = { "deep.ini", "[model] hidden", limit, NULL };
          refused (args, want);
        }
      else
        {
          g_autofree char *out = NULL, *err = NULL;
          g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, args), ==, 0);
        }
    }
}

/* NUL bytes and text that is not UTF-8. */
static void
test_not_text (void)
{
  static const char nul[] = "[model]\nbatch = 8\0\n[cluster]\nworkers = 2\n";
  g_autofree char *p1 = write_tmp ("nul.ini", nul, sizeof nul - 1);
  const char *want1[] = { "nul.ini", "NUL byte", NULL };
  const char *a1[] = { "check", "nul.ini", NULL };
  refused (a1, want1);
  g_autofree char *p2 = write_tmp ("latin1.ini", "[scenario]\nname = caf\xe9\n", -1);
  const char *want2[] = { "latin1.ini", "line 2", "UTF-8", NULL };
  const char *a2[] = { "check", "latin1.ini", NULL };
  refused (a2, want2);
  /* an escape sequence in a catalog's value would reach `dtsim hardware`'s
   * tables on a terminal */
  g_autofree char *p3 = write_tmp ("esc-catalog.ini", "[device:x]\nflops = 1TFLOPS\033[2J\n", -1);
  const char *want3[] = { "esc-catalog.ini", "[device:x] flops", "control character", NULL };
  const char *a3[] = { "hardware", "esc-catalog.ini", NULL };
  refused (a3, want3);
}

/* A FIFO, a device, a directory and a file over the size limit, as the
 * scenario, as the hardware catalog and as a layer table: refused at once
 * (a FIFO used to hang, /dev/zero to be read until memory ran out). */
static void
test_not_regular (void)
{
  g_autofree char *fifo = tmp ("fifo.ini");
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_autofree char *big = tmp ("big.ini");
  FILE *f = fopen (big, "w");
  g_assert_nonnull (f);
  static const char line[] = "# a comment line, repeated until the file is past the limit\n";
  for (gsize i = 0; i <= SIM_INPUT_MAX_BYTES / (sizeof line - 1); i++)
    fputs (line, f);
  fclose (f);
  const char *const bad[] = { fifo, "/dev/zero", tmpdir, big };
  const char *const kinds[] = { "FIFO", "character device", "directory", "bytes, more than" };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      const char *want[] = { bad[i], kinds[i], NULL };
      const char *as_scenario[] = { "check", bad[i], NULL };
      refused (as_scenario, want);
      g_autofree char *cat = g_strdup_printf ("[cluster]\ncatalog = %s\ndevice = a100\n", bad[i]);
      g_autofree char *p1 = write_tmp ("catalog.ini", cat, -1);
      const char *want_cat[] = { "catalog.ini", bad[i], kinds[i], NULL };
      const char *as_catalog[] = { "check", "catalog.ini", NULL };
      refused (as_catalog, want_cat);
      const char *as_hardware[] = { "hardware", bad[i], NULL };
      refused (as_hardware, want);
      g_autofree char *wl = g_strdup_printf ("[model]\nkind = timing\nworkload = %s\n"
                                             "[kernels]\nbackend = none\n", bad[i]);
      g_autofree char *p2 = write_tmp ("workload.ini", wl, -1);
      const char *want_wl[] = { "workload.ini", "[model] workload", bad[i], kinds[i], NULL };
      const char *as_workload[] = { "check", "workload.ini", NULL };
      refused (as_workload, want_wl);
    }
  g_unlink (big);
  g_unlink (fifo);
}

/* Fashion-MNIST files holding fewer images than workers (they gave GLib
 * criticals and 100% accuracy) and a FIFO in place of a data file. */
static void
test_small_dataset (void)
{
  g_autofree char *dir = tmp ("fmnist");
  g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
  static const char *const prefixes[] = { "train", "t10k" };
  int n = 3;
  for (int i = 0; i < 2; i++)
    {
      /* plain (not gzip) IDX: the reader takes both */
      g_autofree char *images = g_strdup_printf ("%s/%s-images-idx3-ubyte.gz", dir, prefixes[i]);
      g_autofree char *labels = g_strdup_printf ("%s/%s-labels-idx1-ubyte.gz", dir, prefixes[i]);
      guint8 head[16] = { 0, 0, 8, 3, 0, 0, 0, (guint8) n, 0, 0, 0, 28, 0, 0, 0, 28 };
      GByteArray *im = g_byte_array_new ();
      g_byte_array_append (im, head, sizeof head);
      for (int p = 0; p < n * 28 * 28; p++)
        {
          guint8 v = (guint8) (p * 7);
          g_byte_array_append (im, &v, 1);
        }
      g_assert_true (g_file_set_contents (images, (char *) im->data, im->len, NULL));
      g_byte_array_unref (im);
      guint8 lab[8 + 3] = { 0, 0, 8, 1, 0, 0, 0, (guint8) n, 0, 1, 2 };
      g_assert_true (g_file_set_contents (labels, (char *) lab, sizeof lab, NULL));
    }
  g_autofree char *text = g_strdup_printf ("[cluster]\nworkers = 4\n[model]\ndataset = fashion-mnist\n"
                                           "data_dir = %s\nbatch = 1\n", dir);
  g_autofree char *p = write_tmp ("small-data.ini", text, -1);
  const char *want[] = { "small-data.ini", "[model] data_dir", "3 training", NULL };
  const char *args[] = { "run", "small-data.ini", NULL };
  refused (args, want);
  /* three workers have an image each: accepted */
  g_autofree char *out = NULL, *err = NULL;
  const char *ok[] = { "check", "small-data.ini", "--set", "cluster.workers=3", NULL };
  g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, ok), ==, 0);
  /* a FIFO in place of the test labels is refused without blocking */
  g_autofree char *labels = g_strdup_printf ("%s/t10k-labels-idx1-ubyte.gz", dir);
  g_unlink (labels);
  g_assert_cmpint (mkfifo (labels, 0600), ==, 0);
  const char *want2[] = { "small-data.ini", "[model] data_dir", "not a regular file", NULL };
  refused (ok, want2);
  sim_remove_tree (dir);
}

/* A learning rate that makes the loss infinite or NaN fails the run with exit
 * code 2 and one line naming [model] lr, instead of "done" with a NULL loss;
 * no database replaces the one there. */
static void
test_diverging_lr (void)
{
  g_autofree char *p = write_tmp ("lr.ini", "[model]\nlr = 1e300\n[scenario]\niterations = 20\n", -1);
  g_autofree char *out = NULL, *err = NULL;
  const char *args[] = { "run", "lr.ini", "-o", "lr.db", NULL };
  g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, args), ==, 2);
  const char *want[] = { "lr.ini: [model] lr: the training loss diverged", "lower [model] lr",
                         NULL };
  assert_one_line (err, want);
  g_autofree char *db = tmp ("lr.db");
  g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));
}

/* The reproducers the scenario fuzzer found (tests/data/fuzz/, docs/fuzzing.md):
 * each is refused with one line.  A reproducer's leading "--set ..." lines
 * are overrides, passed as the fuzzer passed them. */
static void
test_fuzz_reproducers (void)
{
  g_autofree char *dir = g_build_filename (g_getenv ("DTSIM_TEST_DATA"), "fuzz", NULL);
  GDir *d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  const char *name;
  int seen = 0;
  while ((name = g_dir_read_name (d)))
    {
      if (!g_str_has_suffix (name, ".ini"))
        continue;
      g_autofree char *src = g_build_filename (dir, name, NULL), *text = NULL;
      g_assert_true (g_file_get_contents (src, &text, NULL, NULL));
      GPtrArray *args = g_ptr_array_new_with_free_func (g_free);
      g_ptr_array_add (args, g_strdup ("check"));
      g_ptr_array_add (args, g_strdup (name));
      char *body = text;
      while (g_str_has_prefix (body, "--set "))
        {
          char *nl = strchr (body, '\n');
          g_assert_nonnull (nl);
          g_ptr_array_add (args, g_strdup ("--set"));
          g_ptr_array_add (args, g_strndup (body + 6, nl - body - 6));
          body = nl + 1;
        }
      g_ptr_array_add (args, NULL);
      g_autofree char *path = write_tmp (name, body, -1);
      g_test_message ("reproducer %s", name);
      const char *want[] = { name, NULL };
      refused ((const char *const *) args->pdata, want);
      g_ptr_array_unref (args);
      seen++;
    }
  g_dir_close (d);
  g_assert_cmpint (seen, >=, 6);
}

/* A straggler factor that overflows to infinity (pareto with a tiny alpha)
 * passes check, since it is drawn while running, and stops the run with one
 * line naming [stragglers] instead of an SQLite NOT NULL error. */
static void
test_infinite_straggler (void)
{
  g_autofree char *p = write_tmp ("pareto.ini", "[stragglers]\nmodel = pareto\n"
                                  "alpha = 1e-300\n", -1);
  g_autofree char *out = NULL, *err = NULL;
  const char *check[] = { "check", "pareto.ini", NULL };
  g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, check), ==, 0);
  const char *run[] = { "run", "pareto.ini", "-o", "pareto.db", NULL };
  const char *want[] = { "pareto.ini: [stragglers] model", "infinite time", NULL };
  refused (run, want);
  g_autofree char *db = tmp ("pareto.db");
  g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));
}

/* A timing-only model of 10^12 parameters (4 TB of floats) runs under every
 * policy: without the math no parameter vector is held (the policies
 * allocated one and aborted). */
static void
test_huge_timing_model (void)
{
  /* the pipeline needs a layer per stage: three layers of 10^15 / 3 */
  g_autofree char *table = write_tmp ("huge.txt", "# input 10\na 333333333333333 1 1\n"
                                      "b 333333333333333 1 1\nc 333333333333334 1 1\n", -1);
  g_autofree char *pipe = g_strdup_printf ("[model]\nkind = timing\nworkload = %s\n"
                                           "[kernels]\nbackend = none\n[policy]\n"
                                           "kind = pipeline\n[cluster]\nworkers = 3\n"
                                           "[scenario]\niterations = 2\n", table);
  g_autofree char *pp = write_tmp ("huge-pipeline.ini", pipe, -1);
  g_autofree char *po = NULL, *pe = NULL;
  const char *pargs[] = { "run", "huge-pipeline.ini", "-o", "huge-pipeline.db", "--quiet", NULL };
  g_assert_cmpint (test_run_dtsim_argv (tmpdir, &po, &pe, pargs), ==, 0);

  static const char *const policies[] = { "ps", "allreduce", "local-sgd" };
  for (gsize i = 0; i < G_N_ELEMENTS (policies); i++)
    {
      g_autofree char *text = g_strdup_printf ("[model]\nkind = timing\nparams = 1e12\n"
                                               "flops = 1\n[kernels]\nbackend = none\n"
                                               "[policy]\nkind = %s\nbucket_size = 0\n"
                                               "[scenario]\niterations = 2\n", policies[i]);
      g_autofree char *p = write_tmp ("huge.ini", text, -1);
      g_autofree char *out = NULL, *err = NULL;
      const char *args[] = { "run", "huge.ini", "-o", "huge.db", "--quiet", NULL };
      g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, args), ==, 0);
      g_autofree char *db = tmp ("huge.db");
      g_assert_cmpfloat (test_query_number (db, "SELECT updates FROM runs"), >, 0);
      g_unlink (db);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-hostile-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/hostile/scenario/%s", cases[i].name);
      g_test_add_data_func (path, &cases[i], test_case);
    }
  g_test_add_func ("/hostile/sweep/too-large", test_sweep_too_large);
  g_test_add_func ("/hostile/sweep/at-limit", test_sweep_at_limit);
  g_test_add_func ("/hostile/model/too-many-layers", test_too_many_layers);
  g_test_add_func ("/hostile/file/not-text", test_not_text);
  g_test_add_func ("/hostile/file/not-regular", test_not_regular);
  g_test_add_func ("/hostile/data/fewer-images-than-workers", test_small_dataset);
  g_test_add_func ("/hostile/run/diverging-lr", test_diverging_lr);
  g_test_add_func ("/hostile/run/infinite-straggler", test_infinite_straggler);
  g_test_add_func ("/hostile/run/huge-timing-model", test_huge_timing_model);
  g_test_add_func ("/hostile/fuzz/reproducers", test_fuzz_reproducers);
  int r = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return r;
}
