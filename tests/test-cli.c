/*
 * test-cli.c — end-to-end tests of the dtsim command: determinism of the
 * trace, the trace's contents, the JSON report, bad input (exit 2, one line
 * naming the file and key, no database left behind), where the database is
 * written (only a dtsim trace is replaced, through a temporary file renamed
 * over it), sweep points that fail alone, and plotting.
 *
 * The binary and the test scenarios come from DTSIM_BIN and DTSIM_TEST_DATA,
 * which `make check` sets.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/trace.h"
#include "config/hardware.h"
#include "tests/json.h"
#include "tests/util.h"

static char *tmpdir;

static char *
tmp (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* dtsim with the arguments (NULL-terminated), run in tmpdir. */
#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

/* Every row of every table, as text, wall_time excluded; rows by run, and
 * within a run in the order they were written (runs of a parallel sweep may
 * interleave in rowid order). */
static char *
dump (const char *path)
{
  sqlite3 *db = NULL;
  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  GString *s = g_string_new (NULL);
  const char *queries[] = {
    "SELECT id, scenario, name, seed, status, error, stop, sim_time, events, iterations,"
    " updates, final_loss, final_accuracy, compute, comm, wait, version, kernel FROM runs"
    " ORDER BY id",
    "SELECT * FROM params ORDER BY run_id, rowid",
    "SELECT * FROM metrics ORDER BY run_id, rowid",
    "SELECT * FROM iterations ORDER BY run_id, rowid",
    "SELECT * FROM spans ORDER BY run_id, rowid",
    "SELECT * FROM messages ORDER BY run_id, rowid",
    "SELECT * FROM buckets ORDER BY run_id, rowid",
    "SELECT * FROM failures ORDER BY run_id, rowid",
    "SELECT * FROM stages ORDER BY run_id, rowid",
  };
  for (gsize q = 0; q < G_N_ELEMENTS (queries); q++)
    {
      sqlite3_stmt *st = NULL;
      g_assert_cmpint (sqlite3_prepare_v2 (db, queries[q], -1, &st, NULL), ==, SQLITE_OK);
      while (sqlite3_step (st) == SQLITE_ROW)
        {
          for (int c = 0; c < sqlite3_column_count (st); c++)
            {
              /* %.17g keeps every bit of a double */
              if (sqlite3_column_type (st, c) == SQLITE_FLOAT)
                g_string_append_printf (s, "%.17g|", sqlite3_column_double (st, c));
              else
                g_string_append_printf (s, "%s|", (const char *) sqlite3_column_text (st, c));
            }
          g_string_append_c (s, '\n');
        }
      sqlite3_finalize (st);
      g_string_append (s, "--\n");
    }
  sqlite3_close (db);
  return g_string_free (s, FALSE);
}

static gint64
count (const char *path, const char *sql)
{
  return (gint64) test_query_number (path, sql);
}

static void
test_deterministic (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *a = tmp ("a.db"), *b = tmp ("b.db");
  g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--quiet", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--quiet", NULL), ==, 0);
  g_autofree char *da = dump (a), *db = dump (b);
  g_assert_cmpstr (da, ==, db);
  /* the dump is not trivially equal: every table has rows */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs"), ==, 2);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM metrics"), >, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM iterations"), >, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM spans"), >, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM messages"), >, 0);
  /* a different seed gives a different trace */
  g_autofree char *c = tmp ("c.db");
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", c, "--quiet", "--set", "scenario.seed=8",
                          NULL), ==, 0);
  g_autofree char *dc = dump (c);
  g_assert_cmpstr (da, !=, dc);
}

/* A sweep run on 1 and on 3 threads writes the same database; the summary
 * stays in point order and each finished point prints one line. */
static void
test_jobs (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *a = tmp ("j1.db"), *b = tmp ("j3.db");
  g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--jobs", "1", "--set",
                          "sweep.cluster.workers=2,4,8", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--jobs", "3", "--set",
                          "sweep.cluster.workers=2,4,8", NULL), ==, 0);
  g_assert_cmpint (count (b, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), ==, 2 * 3);
  g_autofree char *da = dump (a), *db = dump (b);
  g_assert_cmpstr (da, ==, db);
  /* run ids follow point order: run 3 is the third point */
  g_assert_cmpint (count (b, "SELECT COUNT(*) FROM params WHERE run_id = 3 AND key ="
                          " 'cluster.workers' AND value = '8'"), ==, 1);
  g_assert_cmpint (count (b, "SELECT COUNT(*) FROM params WHERE run_id = 4 AND key ="
                          " 'policy.consistency' AND value = 'async'"), ==, 1);
  /* the table lists the points in order, whatever finished first */
  const char *bsp8 = strstr (o2, "consistency=bsp cluster.workers=8");
  const char *async2 = strstr (o2, "consistency=async cluster.workers=2");
  g_assert_nonnull (bsp8);
  g_assert_nonnull (async2);
  g_assert_cmpint (bsp8 - o2, <, async2 - o2);
  /* not a terminal: one line per finished point */
  for (int i = 1; i <= 6; i++)
    {
      g_autofree char *line = g_strdup_printf ("run %d/6 done: small ", i);
      g_assert_nonnull (strstr (e2, line));
    }
  /* --jobs 0 is bad usage */
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", a, "--jobs", "0", NULL), ==, 2);
  g_assert_nonnull (strstr (e3, "--jobs"));
}

/* One all-reduce run with real math on 1 and on 3 host threads per point
 * writes the same database (tests/test-parallel.c checks the lanes); 0
 * threads is bad usage. */
static void
test_threads (void)
{
  g_autofree char *ini = tmp ("threads.ini");
  g_assert_true (g_file_set_contents (ini,
    "[scenario]\nname = t\niterations = 4\n[cluster]\nworkers = 48\n"
    "[model]\nkind = mlp\nhidden = 128\nfeatures = 128\nclasses = 4\nsamples = 2048\n"
    "test_samples = 64\neval_samples = 128\nbatch = 16\n"
    "[policy]\nkind = allreduce\n", -1, NULL));
  g_autofree char *a = tmp ("t1.db"), *b = tmp ("t3.db");
  g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL, *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--threads", "1", "-q", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--threads", "3", "-q", NULL), ==, 0);
  g_autofree char *da = dump (a), *db = dump (b);
  g_assert_cmpstr (da, ==, db);
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", a, "--threads", "0", NULL), ==, 2);
  g_assert_nonnull (strstr (e3, "--threads"));
}

/* runs.kernel of run 1 of `db` (a new string). */
static char *
run_kernel (const char *db)
{
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (h, "SELECT kernel FROM runs WHERE id = 1", -1, &st, NULL),
                   ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (st), ==, SQLITE_ROW);
  char *k = g_strdup ((const char *) sqlite3_column_text (st, 0));
  sqlite3_finalize (st);
  sqlite3_close (h);
  return k;
}

/* With [kernels] reproducible at its default, a real-math run gives the same
 * trace whichever kernels OpenBLAS is told to use (OPENBLAS_CORETYPE: what
 * it would pick on other CPUs), in a run whose learning rate makes it
 * diverge, where any last-bit difference would grow; the trace records
 * what did the math, and a backend that cannot be reproducible is refused
 * the promise. */
static void
test_kernels_reproducible (void)
{
  g_autofree char *ini = tmp ("repro.ini");
  g_assert_true (g_file_set_contents (ini,
    "[scenario]\nname = r\niterations = 12\n[cluster]\nworkers = 4\n"
    "[model]\nkind = mlp\nhidden = 48\nfeatures = 40\nclasses = 5\nsamples = 1024\n"
    "test_samples = 64\neval_samples = 128\nbatch = 16\nlr = 3\noptimizer = adam\n"
    "[stragglers]\nmodel = lognormal\nmean = 0.5\nsigma = 0.5\n"
    "[policy]\nkind = ps\nconsistency = async\n", -1, NULL));
  const char *cores[] = { "Haswell", "SkylakeX", "Zen", "Sandybridge", "Cooperlake" };
  g_autofree char *first = NULL;
  g_autofree char *was = g_strdup (g_getenv ("OPENBLAS_CORETYPE"));
  for (gsize c = 0; c < G_N_ELEMENTS (cores); c++)
    {
      g_setenv ("OPENBLAS_CORETYPE", cores[c], TRUE);
      g_autofree char *db = tmp ("repro.db");
      g_autofree char *o = NULL, *e = NULL;
      g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "-q", NULL), ==, 0);
      g_autofree char *k = run_kernel (db);
      g_assert_cmpstr (k, ==, "fixed-order");
      g_autofree char *d = dump (db);
      if (!first)
        first = g_steal_pointer (&d);
      else if (strcmp (first, d) != 0)
        g_error ("OPENBLAS_CORETYPE=%s changed the trace of a reproducible run", cores[c]);
    }
  /* OpenBLAS, told to use Haswell's kernels, is named so */
  g_setenv ("OPENBLAS_CORETYPE", "Haswell", TRUE);
  g_autofree char *db = tmp ("repro-blas.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "-q", "--set",
                          "kernels.reproducible=false", NULL), ==, 0);
  g_autofree char *k = run_kernel (db);
  g_assert_true (g_str_has_prefix (k, "OpenBLAS "));
  g_assert_true (g_str_has_suffix (k, " Haswell"));
  if (was)
    g_setenv ("OPENBLAS_CORETYPE", was, TRUE);
  else
    g_unsetenv ("OPENBLAS_CORETYPE");
  /* timing only */
  g_autofree char *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", db, "-q", "--set",
                          "kernels.backend=none", NULL), ==, 0);
  g_autofree char *k2 = run_kernel (db);
  g_assert_cmpstr (k2, ==, "none");
  /* cuBLAS promises no bits: asked to, the run is refused before it starts */
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", db, "-q", "--set", "kernels.backend=cuda",
                          "--set", "kernels.reproducible=true", NULL), ==, 2);
  g_assert_nonnull (strstr (e3, "[kernels] reproducible"));
  g_assert_nonnull (strstr (e3, "reproducible = false"));
  g_assert_true (strchr (e3, '\n') == e3 + strlen (e3) - 1);
  g_autofree char *k3 = run_kernel (db);
  g_assert_cmpstr (k3, ==, "none");   /* the good database survived */
  /* check says what will do the math */
  g_autofree char *o5 = NULL, *e5 = NULL, *o6 = NULL, *e6 = NULL;
  g_assert_cmpint (dtsim (&o5, &e5, "check", ini, NULL), ==, 0);
  g_assert_nonnull (strstr (o5, "kernels: cpu backend, fixed-order (reproducible"));
  g_assert_cmpint (dtsim (&o6, &e6, "check", ini, "--set", "kernels.reproducible=false", NULL),
                   ==, 0);
  g_assert_nonnull (strstr (o6, "kernels: cpu backend, OpenBLAS "));
  /* --version names both */
  g_autofree char *o4 = NULL, *e4 = NULL;
  g_assert_cmpint (dtsim (&o4, &e4, "--version", NULL), ==, 0);
  g_assert_nonnull (strstr (o4, "fixed-order"));
  g_assert_nonnull (strstr (o4, "OpenBLAS "));
}

/* The dynamic loader's account (LD_DEBUG=libs) of the libraries `dtsim
 * run INI -o DB -q` with `set` (NULL: none) initialises: its stderr, after
 * asserting the run succeeded. */
static char *
loader_log (const char *ini, const char *db, const char *set)
{
  g_setenv ("LD_DEBUG", "libs", TRUE);
  g_autofree char *o = NULL;
  char *e = NULL;
  int rc = set ? dtsim (&o, &e, "run", ini, "-o", db, "-q", "--set", set, NULL)
               : dtsim (&o, &e, "run", ini, "-o", db, "-q", NULL);
  g_unsetenv ("LD_DEBUG");
  g_assert_cmpint (rc, ==, 0);
  return e;
}

/* A timing-only run, and a real-math run on the fixed-order products, never
 * load OpenBLAS (docs/kernels.md): the loader initialises it only for
 * [kernels] reproducible = false.  Where it cannot be loaded, they still
 * run, and a run that needs it is refused in one line naming the file, the
 * key, the library and the fix, leaving the good database in place. */
static void
test_kernels_lazy_blas (void)
{
  g_autofree char *timing = tmp ("lazy-timing.ini");
  g_assert_true (g_file_set_contents (timing,
    "[scenario]\nname = t\niterations = 1\n[cluster]\nworkers = 4\n"
    "[device]\nstep_time = 1ms\n[model]\nkind = timing\nparams = 1000\nflops = 1\n"
    "[policy]\nkind = allreduce\n[kernels]\nbackend = none\n", -1, NULL));
  g_autofree char *math = tmp ("lazy-math.ini");
  g_assert_true (g_file_set_contents (math,
    "[scenario]\nname = m\niterations = 2\n[cluster]\nworkers = 2\n"
    "[model]\nkind = mlp\nhidden = 8\nfeatures = 6\nclasses = 3\nsamples = 64\n"
    "test_samples = 16\nbatch = 8\n[policy]\nkind = allreduce\n", -1, NULL));
  g_autofree char *db = tmp ("lazy.db");
  /* "calling init: /path/libopenblas...": the library ran its constructor */
  const char *init = "calling init: ";
  g_autofree char *want = g_strconcat ("/", DTSIM_BLAS_SONAME, NULL);

  g_autofree char *e1 = loader_log (timing, db, NULL);
  g_assert_nonnull (strstr (e1, init)); /* the loader did report */
  g_assert_null (strstr (e1, want));
  g_autofree char *e2 = loader_log (math, db, NULL);
  g_assert_nonnull (strstr (e2, init));
  g_assert_null (strstr (e2, want));
  g_autofree char *e3 = loader_log (math, db, "kernels.reproducible=false");
  g_assert_nonnull (strstr (e3, want));

  /* no library: only the run that needs it fails */
  g_setenv ("DTSIM_BLAS_LIBRARY", "/nonexistent/libopenblas.so.0", TRUE);
  g_autofree char *o4 = NULL, *e4 = NULL, *o5 = NULL, *e5 = NULL, *o6 = NULL, *e6 = NULL;
  int rc4 = dtsim (&o4, &e4, "run", timing, "-o", db, "-q", NULL);
  int rc5 = dtsim (&o5, &e5, "run", math, "-o", db, "-q", NULL);
  int rc6 = dtsim (&o6, &e6, "run", math, "-o", db, "-q", "--set",
                   "kernels.reproducible=false", NULL);
  g_unsetenv ("DTSIM_BLAS_LIBRARY");
  g_assert_cmpint (rc4, ==, 0);
  g_assert_cmpint (rc5, ==, 0);
  g_assert_cmpint (rc6, ==, 2);
  g_assert_nonnull (strstr (e6, math));
  g_assert_nonnull (strstr (e6, "[kernels] reproducible"));
  g_assert_nonnull (strstr (e6, "/nonexistent/libopenblas.so.0"));
  g_assert_nonnull (strstr (e6, "reproducible = true"));
  g_assert_true (strchr (e6, '\n') == e6 + strlen (e6) - 1);
  g_autofree char *k = run_kernel (db);
  g_assert_cmpstr (k, ==, "fixed-order"); /* the good database survived */
}

/* The step time dtsim predicts for one worker of `device` in `precision`
 * training `workload` at `batch`, with `extra` [device] lines: the run's
 * simulated time over its iterations. */
static double
step_seconds (const char *device, const char *precision, const char *workload, int batch,
              const char *catalog, const char *extra)
{
  static int n;
  g_autofree char *name = g_strdup_printf ("step%d", n++);
  g_autofree char *ini = tmp (name);
  g_autofree char *db = g_strdup_printf ("%s.db", ini);
  g_autofree char *cat = catalog ? g_strdup_printf ("catalog = %s\n", catalog) : g_strdup ("");
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = s\niterations = 2\n[cluster]\ndevice = %s\nworkers = 1\n%s"
    "[device]\nprecision = %s\nmemory = 0\n%s[model]\nkind = timing\nworkload = %s\n"
    "batch = %d\noptimizer = momentum\n[policy]\nkind = allreduce\n",
    device, cat, precision, extra, workload, batch);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "-q", NULL), ==, 0);
  return test_query_number (db, "SELECT sim_time / iterations FROM runs");
}

/* dtsim calibrate recovers the efficiencies and the kernel overhead that
 * produced a set of step times (dense from BERT's rows, convolutions from
 * ResNet's, the overhead from one workload at two batches), keeps the
 * catalog's where the rows do not determine them, writes a catalog that
 * then predicts the steps, and refuses bad input in one line. */
static void
test_calibrate (void)
{
  const char *truth = "efficiency = 0.62\nconv_efficiency = 0.31\nkernel_overhead = 20us\n";
  struct { const char *wl; int batch; } rows[] = {
    { "resnet-50", 64 }, { "resnet-50", 256 }, { "bert-large", 32 }, { "bert-large", 8 },
  };
  GString *csv = g_string_new ("# measured on our A100s\r\nDevice, Precision, Workload, Batch,"
                               " Seconds, Optimizer\r\n");
  double want[G_N_ELEMENTS (rows)];
  for (gsize i = 0; i < G_N_ELEMENTS (rows); i++)
    {
      want[i] = step_seconds ("a100", "tf32", rows[i].wl, rows[i].batch, NULL, truth);
      g_string_append_printf (csv, "a100,tf32,%s,%d,%.9g,momentum\n", rows[i].wl,
                              rows[i].batch, want[i]);
    }
  /* CNN rows alone do not determine the dense efficiency */
  double v100 = step_seconds ("v100", "fp32", "resnet-50", 96, NULL,
                              "conv_efficiency = 0.7\n");
  g_string_append_printf (csv, "v100,fp32,resnet-50,96,%.9g,momentum\n", v100);
  g_autofree char *path = tmp ("measured.csv");
  g_assert_true (g_file_set_contents (path, csv->str, -1, NULL));
  g_string_free (csv, TRUE);
  g_autofree char *out = tmp ("calibrated.ini");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "calibrate", path, "-o", out, NULL), ==, 0);
  if (!strstr (o, "a100 tf32: dense efficiency 0.62, convolution efficiency 0.31\n")
      || !strstr (o, "a100: kernel overhead 20 us per layer pass\n"))
    g_error ("calibrate did not recover the figures: %s", o);
  g_assert_nonnull (strstr (o, "v100 fp32: dense efficiency 0.5 (not determined"));
  g_assert_nonnull (strstr (o, "convolution efficiency 0.7\n"));
  g_assert_nonnull (strstr (o, "v100: kernel overhead 0 us per layer pass (not determined"));
  g_autoptr (GError) error = NULL;
  g_autoptr (SimCatalog) cat = sim_catalog_load (out, &error);
  g_assert_no_error (error);
  const SimDevice *a100 = sim_catalog_device (cat, "a100");
  test_assert_close (a100->tf32_efficiency, 0.62, 1e-9);
  test_assert_close (a100->tf32_conv_efficiency, 0.31, 1e-9);
  test_assert_close (a100->kernel_overhead, 20e-6, 1e-9);
  g_assert_cmpfloat (sim_catalog_device (cat, "v100")->conv_efficiency, ==, 0.7);
  g_assert_cmpfloat (sim_catalog_device (cat, "v100")->efficiency, ==, 0.5);
  /* the written catalog predicts the measured steps */
  for (gsize i = 0; i < G_N_ELEMENTS (rows); i++)
    test_assert_close (step_seconds ("a100", "tf32", rows[i].wl, rows[i].batch, out, ""),
                       want[i], 1e-6);

  /* bad input: one line naming the file, the line and the fix; nothing written */
  const struct { const char *text, *needle; } bad[] = {
    { "dev,prec\na100,tf32,resnet-50,64,0.1\n", "line 1: expected the header line" },
    { "device,precision,workload,batch,seconds\nb200,tf32,resnet-50,64,0.1\n",
      "line 2: device: unknown device 'b200'" },
    { "device,precision,workload,batch,seconds\nv100,tf32,resnet-50,64,0.1\n",
      "line 2: precision: 'tf32'" },
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,0,0.1\n",
      "line 2: batch:" },
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,8,-1\n",
      "line 2: seconds:" },
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,8\n",
      "line 2: expected 5 or 6 fields" },
    { "device,precision,workload,batch,seconds\na100,tf32,nosuchnet,8,0.1\n",
      "line 2: " },
    { "device,precision,workload,batch,seconds\n", "no measured steps" },
    /* implausible measurements: the file, the row's line and the column */
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,64,0.1\n"
      "a100,tf32,resnet-50,64,1e300\n", "bad.csv line 3: seconds: 1e+300 s is no plausible" },
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,64,inf\n",
      "bad.csv line 2: seconds:" },
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,64,1e-9\n",
      "bad.csv line 2: seconds: 1e-09 s is faster than this step takes at the device's peak" },
    /* a fit worse than the base: refused, nothing written */
    { "device,precision,workload,batch,seconds\na100,tf32,resnet-50,64,0.1\n"
      "a100,tf32,resnet-50,256,9e5\n", "bad.csv: the fit predicts these steps worse than the"
      " base catalog" },
  };
  g_autofree char *badcsv = tmp ("bad.csv");
  g_autofree char *fresh = tmp ("fresh.ini");
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_assert_true (g_file_set_contents (badcsv, bad[i].text, -1, NULL));
      g_autofree char *bo = NULL, *be = NULL;
      g_assert_cmpint (dtsim (&bo, &be, "calibrate", badcsv, "-o", fresh, NULL), ==, 2);
      if (!strstr (be, bad[i].needle) || strchr (be, '\n') != be + strlen (be) - 1)
        g_error ("case %zu: expected one line with '%s', got: %s", i, bad[i].needle, be);
      g_assert_false (g_file_test (fresh, G_FILE_TEST_EXISTS));
    }
  /* the worse fit is written with --force, and the report shows both errors */
  g_autofree char *fo = NULL, *fe = NULL;
  g_assert_cmpint (dtsim (&fo, &fe, "calibrate", badcsv, "-o", fresh, "--force", NULL), ==, 0);
  g_assert_nonnull (strstr (fo, "mean absolute error: "));
  g_assert_true (g_file_test (fresh, G_FILE_TEST_EXISTS));
  /* a file that is not a catalog is never replaced */
  g_autofree char *notes = tmp ("notes.ini");
  g_assert_true (g_file_set_contents (notes, "my notes\n", -1, NULL));
  g_autofree char *no = NULL, *ne = NULL;
  g_assert_cmpint (dtsim (&no, &ne, "calibrate", path, "-o", notes, NULL), ==, 2);
  g_autofree char *kept = test_read_file (notes, NULL);
  g_assert_cmpstr (kept, ==, "my notes\n");
}

/* The tables only some policies write (a pipeline's stages, a parameter
 * server's failures) come through a parallel sweep as through a serial one. */
static void
test_jobs_tables (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  const char *names[] = { "pipeline", "stragglers" };
  const char *counts[] = { "SELECT COUNT(*) FROM stages", "SELECT COUNT(*) FROM failures" };
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *file = g_strdup_printf ("%s.ini", names[i]);
      g_autofree char *ini = g_build_filename (src, "scenarios", file, NULL);
      g_autofree char *a = tmp ("t1.db"), *b = tmp ("t2.db");
      g_autofree char *o1 = NULL, *e1 = NULL, *o2 = NULL, *e2 = NULL;
      g_unlink (a);
      g_unlink (b);
      g_assert_cmpint (dtsim (&o1, &e1, "run", ini, "-o", a, "--jobs", "1", "--quiet", NULL), ==, 0);
      g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", b, "--jobs", "2", "--quiet", NULL), ==, 0);
      /* every run has rows: one per stage, or one per failure */
      gint64 runs = count (b, "SELECT COUNT(*) FROM runs");
      g_assert_cmpint (count (b, counts[i]), >=, runs);
      g_autofree char *da = dump (a), *db = dump (b);
      g_assert_cmpstr (da, ==, db);
    }
}

/* Fills `dir`/bad-fashion with Fashion-MNIST files whose headers are sound
 * (the loader checks the magic numbers and image counts) but that claim 100
 * images each and hold none: a run that uses them fails at run time with a
 * SIM_ERROR_INPUT naming [model] data_dir.  Returns the --set that points
 * model.data_dir there. */
static char *
corrupt_fashion (const char *dir)
{
  g_autofree char *bad = g_build_filename (dir, "bad-fashion", NULL);
  g_assert_cmpint (g_mkdir_with_parents (bad, 0755), ==, 0);
  const char *files[] = { "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                          "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz" };
  static const guint8 images[16] = { 0, 0, 8, 3, 0, 0, 0, 100, 0, 0, 0, 28, 0, 0, 0, 28 };
  static const guint8 labels[8] = { 0, 0, 8, 1, 0, 0, 0, 100 };
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *f = g_build_filename (bad, files[i], NULL);
      gboolean img = strstr (files[i], "images") != NULL;
      g_assert_true (g_file_set_contents (f, (const char *) (img ? images : labels),
                                          img ? sizeof images : sizeof labels, NULL));
    }
  return g_strdup_printf ("model.data_dir=%s", bad);
}

/* A point that fails at run time (its data files are corrupt) marks its run
 * failed; the other points started with it finish; the exit code is 2 as for
 * any input error found while running. */
static void
test_jobs_failure (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *a = tmp ("jf.db");
  g_autofree char *set_dir = corrupt_fashion (tmpdir);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", a, "--jobs", "2", "--set",
                          "sweep.model.dataset=synthetic,fashion-mnist", "--set", set_dir,
                          NULL), ==, 2);
  g_assert_nonnull (strstr (e, "small.ini: [model] data_dir: "));
  g_assert_nonnull (strstr (e, "failed: small policy.consistency=bsp model.dataset=fashion-mnist"));
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'failed'"
                          " AND error IS NOT NULL"), >=, 1);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'running'"), ==, 0);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), >=, 1);
}

static void
test_trace_contents (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *a = tmp ("t.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", a, NULL), ==, 0);
  /* the summary table names each run */
  g_assert_nonnull (strstr (o, "small policy.consistency=bsp"));
  g_assert_nonnull (strstr (o, "small policy.consistency=async"));
  g_assert_cmpint (count (a, "PRAGMA user_version"), ==, SIM_TRACE_SCHEMA_VERSION);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), ==, 2);
  /* 20 rounds of 4 workers */
  g_assert_cmpint (count (a, "SELECT MIN(updates) FROM runs"), ==, 20 * 4);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM params WHERE run_id = 1 AND key ="
                          " 'policy.consistency' AND value = 'bsp'"), ==, 1);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM params WHERE run_id = 1"), >=, 30);
  /* BSP: every worker has every iteration, and iterations add up */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM iterations WHERE run_id = 1"), ==, 20 * 4);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM iterations WHERE abs((end - start)"
                          " - (compute + comm + wait)) > 1e-12"), ==, 0);
  /* messages use the topology's host names; each gradient crosses once */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM messages WHERE run_id = 1 AND tag = 'grad'"
                          " AND src LIKE 'worker%' AND dst = 'server0'"), >=, 20 * 4);
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM messages WHERE end < start"), ==, 0);
  /* the loss goes down */
  g_assert_cmpint (count (a, "SELECT (SELECT loss FROM metrics WHERE run_id = 1 ORDER BY step"
                          " DESC LIMIT 1) < (SELECT loss FROM metrics WHERE run_id = 1 AND"
                          " step = 0)"), ==, 1);
}

static void
test_json (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *a = tmp ("j.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", a, "--json", "--set",
                          "policy.consistency=ssp", NULL), ==, 0);
  g_autoptr (GError) error = NULL;
  const char *keys[] = { "\"sim_time\": ", "\"iterations\": 20", "\"final_loss\": ",
                         "\"final_accuracy\": ", "\"events\": ", "\"wall_time\": ",
                         "\"db\": " };
  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    g_assert_nonnull (strstr (o, keys[i]));
  /* --set of a swept key fixes it: one run */
  g_assert_cmpint (count (a, "SELECT COUNT(*) FROM runs"), ==, 1);
  g_assert_cmpint (o[0], ==, '{');
  g_assert_cmpint (strchr (o, '\n') - o, ==, (long) strlen (o) - 1);
  /* one valid JSON object; the runs in "runs", nothing of run 1 repeated
   * at the top */
  g_autofree char *err = NULL;
  TjNode *doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  g_assert_null (tj_get (doc, "sim_time"));
  g_assert_null (tj_get (doc, "name"));
  const TjNode *runs = tj_get (doc, "runs");
  g_assert_cmpuint (runs->items->len, ==, 1);
  const TjNode *r = g_ptr_array_index (runs->items, 0);
  g_assert_cmpfloat (tj_number (r, "run"), ==, 1);
  g_assert_cmpstr (tj_string (r, "status"), ==, "done");
  g_assert_cmpint (tj_get (r, "params")->type, ==, TJ_OBJECT);
  g_assert_cmpfloat (tj_number (r, "sim_time"), ==,
                     test_query_number (a, "SELECT sim_time FROM runs WHERE id = 1"));
  tj_free (doc);
  /* a sweep: each run its swept keys; a failed point is in "runs" too,
   * with its error, and the exit code says it failed */
  g_autofree char *b = tmp ("j2.db");
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", b, "--json", "--set",
                          "sweep.model.lr=0.1,1e300", "--set", "policy.consistency=bsp", NULL),
                   !=, 0);
  doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  runs = tj_get (doc, "runs");
  g_assert_cmpuint (runs->items->len, ==, 2);
  for (guint i = 0; i < 2; i++)
    {
      r = g_ptr_array_index (runs->items, i);
      g_assert_cmpfloat (tj_number (r, "run"), ==, i + 1);
      g_assert_cmpfloat (tj_number (tj_get (r, "params"), "model.lr"), ==, i ? 1e300 : 0.1);
      g_autofree char *q = g_strdup_printf ("SELECT status = '%s' FROM runs WHERE id = %u",
                                            tj_string (r, "status"), i + 1);
      g_assert_cmpint (count (b, q), ==, 1);
    }
  r = g_ptr_array_index (runs->items, 1);
  g_assert_cmpstr (tj_string (r, "status"), ==, "failed");
  g_assert_nonnull (tj_string (r, "error"));
  tj_free (doc);
}

/* A sweep whose points do not all fit device memory: those are recorded
 * `infeasible` with their reason, the others run (exit 0); the table, --json
 * and `check` say which; a sweep where none fits is bad input. */
static void
test_infeasible_points (void)
{
  g_autofree char *ini = tmp ("inf.ini");
  g_assert_true (g_file_set_contents (ini,
    "[scenario]\nname = inf\niterations = 2\n"
    "[cluster]\ndevice = a100\nworkers = 2\n"
    "[device]\nprecision = bf16\n"
    "[model]\nkind = timing\nworkload = gpt-1.7b\noptimizer = adam\n"
    "[policy]\nkind = allreduce\n"
    "[sweep]\nmodel.batch = 1, 8, 64\n", -1, NULL));
  g_autofree char *db = tmp ("inf.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, NULL), ==, 0);
  g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), ==, 1);
  g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs WHERE status = 'infeasible' AND"
                              " error LIKE '%does not fit in 74.5 GiB%' AND id IN (2, 3)"), ==, 2);
  g_assert_cmpint (count (db, "SELECT COUNT(*) FROM iterations WHERE run_id > 1"), ==, 0);
  g_assert_nonnull (strstr (o, "inf model.batch=8     infeasible"));
  g_assert_nonnull (strstr (o, "infeasible: run 3 (inf model.batch=64): "));
  /* --json: each point's status and reason */
  g_autofree char *db2 = tmp ("inf2.db");
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db2, "--json", NULL), ==, 0);
  g_autofree char *err = NULL;
  TjNode *doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  const TjNode *runs = tj_get (doc, "runs");
  static const char *const want[] = { "done", "infeasible", "infeasible" };
  for (guint i = 0; i < 3; i++)
    {
      const TjNode *r = g_ptr_array_index (runs->items, i);
      g_assert_cmpstr (tj_string (r, "status"), ==, want[i]);
      g_assert_true ((tj_string (r, "error") != NULL) == (i > 0));
    }
  tj_free (doc);
  /* check names them before anything runs */
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "check", ini, NULL), ==, 0);
  g_assert_nonnull (strstr (o, "run 2: inf model.batch=8: infeasible, will be recorded"));
  /* nothing fits: bad input, one line, no database */
  g_autofree char *db3 = tmp ("inf3.db");
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db3, "--set", "sweep.model.batch=8,64", NULL),
                   ==, 2);
  g_assert_nonnull (strstr (e, "no point of the sweep fits device memory"));
  g_assert_true (strchr (e, '\n') == e + strlen (e) - 1);
  g_assert_false (g_file_test (db3, G_FILE_TEST_EXISTS));
}

/* docs/labs/README.md tells instructors to run one lab's checks as
 * build/tests/test-labs -p /labs/NAME from the top of the tree, outside
 * `make check`: with none of make check's environment, it finds its sources
 * and the dtsim of this build itself. */
static void
test_labs_by_hand (void)
{
  g_autofree char *labs = g_build_filename (TEST_BUILDDIR, "tests", "test-labs", NULL);
  const char *argv[] = { labs, "-p", "/labs/allreduce/1-latency-bound", NULL };
  g_auto (GStrv) env = g_get_environ ();
  const char *drop[] = { "DTSIM_SRCDIR", "DTSIM_BIN", "DTSIM_TEST_DATA", "DTSIM_CUDA_PLUGIN" };
  for (gsize i = 0; i < G_N_ELEMENTS (drop); i++)
    env = g_environ_unsetenv (env, drop[i]);
  g_autofree char *o = NULL, *e = NULL;
  int status = -1;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (TEST_SRCDIR, (char **) argv, env, G_SPAWN_DEFAULT, NULL, NULL,
                               &o, &e, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("test-labs by hand failed: %s%s", o, e);
  g_assert_nonnull (strstr (o, "ok 1 /labs/allreduce/1-latency-bound"));
}

/* check of a scenario of several jobs: the cluster holds them all (3 + 2
 * hosts), and each job's hosts are as the placement lays them (spread:
 * dealt one at a time, a first). */
static void
test_check_jobs (void)
{
  static const char text[] =
    "[scenario]\nname = j\niterations = 1\n[cluster]\nplacement = spread\n"
    "[network]\ntopology = star\nbandwidth = 10Gbps\n[device]\nstep_time = 1ms\n"
    "[model]\nkind = timing\nparams = 1000\nflops = 1e6\n[policy]\nkind = allreduce\n"
    "[job a]\ncluster.workers = 3\n[job b]\ncluster.workers = 2\narrival = 1ms\n";
  g_autofree char *ini = tmp ("jobs.ini");
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "check", ini, NULL), ==, 0);
  g_assert_nonnull (strstr (o, "jobs: 2 on a cluster of 5 hosts, placement spread\n"));
  g_assert_nonnull (strstr (o, "  a: 3 workers, kind = allreduce, arrives at 0 s, priority 0;"
                               " hosts 0 2 4\n"));
  g_assert_nonnull (strstr (o, "  b: 2 workers, kind = allreduce, arrives at 0.001 s,"
                               " priority 0; hosts 1 3\n"));
}

/* Small things a new user met: run -o into a folder that does not exist
 * yet (created when its parent exists, as plot -o does); a --set sweep
 * crossing the file's sweep is announced with the points; check does not
 * promise gradients in a timing-only run; keys prints the units and the
 * sweep syntax; run --help names the default database. */
static void
test_frictions (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *db = tmp ("newdir/f.db");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "-q", "--set", "policy.consistency=bsp",
                          NULL), ==, 0);
  g_assert_true (g_file_test (db, G_FILE_TEST_IS_REGULAR));
  g_autofree char *deep = tmp ("no1/no2/f.db");
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", deep, "-q", NULL), ==, 2);
  g_assert_nonnull (strstr (e, "neither does its parent"));
  /* small.ini sweeps policy.consistency */
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "check", ini, "--set", "sweep.model.lr=0.1,0.2", NULL), ==, 0);
  g_assert_nonnull (strstr (e, "--set sweep.model.lr crosses the file's own [sweep] "
                               "(policy.consistency): 4 points"));
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "check", ini, "--set", "kernels.backend=none", "--set",
                          "policy.consistency=bsp", NULL), ==, 0);
  g_assert_nonnull (strstr (o, "(here timing only: no gradient is computed"));
  g_assert_nonnull (strstr (o, "(timing only: [kernels] backend = none)"));
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "keys", NULL), ==, 0);
  g_assert_nonnull (strstr (o, "## Sweeps and overrides"));
  g_assert_nonnull (strstr (o, "| bandwidth | byte/s |"));
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "run", "--help", NULL), ==, 0);
  g_assert_nonnull (strstr (o, "results/NAME.db"));
}

/* Runs bash with the completion script sourced and COMP_WORDS = words:
 * COMPREPLY, joined by spaces. */
static char *
complete_words (const char *script, const char *words)
{
  g_autofree char *cmd = g_strdup_printf ("source '%s'; COMP_WORDS=(%s); "
                                          "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _dtsim; "
                                          "echo \"${COMPREPLY[*]}\"", script, words);
  const char *argv[] = { "bash", "-c", cmd, NULL };
  char *o = NULL;
  int status = -1;
  g_assert_true (g_spawn_sync (tmpdir, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &o,
                               NULL, &status, NULL));
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  return g_strstrip (o);
}

/* The bash completion and the manual page come from the key table: every
 * key is in both; completion gives subcommands, options, keys after --set
 * and their choices after '='; the page is roff groff reads without a
 * warning; every option they list is one the subcommand knows. */
static void
test_completion_and_man (void)
{
  g_autofree char *o = NULL, *e = NULL, *keys = NULL, *man = NULL;
  g_assert_cmpint (dtsim (&o, &e, "completion", "bash", NULL), ==, 0);
  g_autofree char *script = tmp ("dtsim.bash");
  g_assert_true (g_file_set_contents (script, o, -1, NULL));
  g_assert_cmpint (dtsim (&keys, &e, "keys", NULL), ==, 0);
  g_assert_cmpint (dtsim (&man, &e, "man", NULL), ==, 0);
  /* every key of the reference, in both */
  const char *kl = strstr (o, "_dtsim_keys='");
  g_assert_nonnull (kl);
  g_autofree char *klist = g_strndup (kl + 13, strcspn (kl + 13, "'"));
  g_auto (GStrv) script_keys = g_strsplit (klist, " ", -1);
  int n = 0;
  g_auto (GStrv) lines = g_strsplit (keys, "\n", -1);
  const char *section = NULL;
  g_autofree char *sec = NULL;
  for (int i = 0; lines[i]; i++)
    {
      if (g_str_has_prefix (lines[i], "### ["))
        {
          g_free (sec);
          sec = g_strndup (lines[i] + 5, strcspn (lines[i] + 5, "]"));
          section = sec;
        }
      if (!section || !g_str_has_prefix (lines[i], "| `"))
        continue;
      g_autofree char *key = g_strndup (lines[i] + 3, strcspn (lines[i] + 3, "`"));
      g_autofree char *dotted = g_strdup_printf ("%s.%s", section, key);
      if (!g_strv_contains ((const char *const *) script_keys, dotted))
        g_error ("completion lacks %s", dotted);
      g_autoptr (GString) roffkey = g_string_new (".B ");
      for (const char *c = key; *c; c++)
        g_string_append (roffkey, *c == '-' ? "\\-" : (char[]) { *c, 0 });
      if (!strstr (man, roffkey->str))
        g_error ("dtsim.1 lacks %s", roffkey->str);
      n++;
    }
  g_assert_cmpint (n, >, 100);
  struct { const char *words, *want; } cases[] = {
    { "dtsim ex", "export" },
    { "dtsim run x.ini --set policy.ki", "policy.kind=" },
    { "dtsim run x.ini --set policy.kind = al", "allreduce" },
    { "dtsim run x.ini --set policy.kind=al", "policy.kind=allreduce" },
    { "dtsim run x.ini --set sweep.cluster.wo", "sweep.cluster.workers=" },
    { "dtsim export a.db --format ''", "csv json perfetto" },
    { "dtsim plot --f", "--format" },
    { "dtsim completion ''", "bash" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *got = complete_words (script, cases[i].words);
      if (strcmp (got, cases[i].want) != 0)
        g_error ("completing '%s': got '%s', want '%s'", cases[i].words, got, cases[i].want);
    }
  /* every option the script offers, the subcommand's --help knows */
  const char *subs[] = { "run", "check", "plan", "plot", "export", "calibrate" };
  for (gsize i = 0; i < G_N_ELEMENTS (subs); i++)
    {
      g_autofree char *w = g_strdup_printf ("dtsim %s -", subs[i]);
      g_autofree char *opts = complete_words (script, w);
      g_autofree char *help = NULL, *he = NULL;
      g_assert_cmpint (dtsim (&help, &he, subs[i], "--help", NULL), ==, 0);
      g_auto (GStrv) list = g_strsplit (opts, " ", -1);
      for (int k = 0; list[k]; k++)
        if (!strstr (help, list[k]))
          g_error ("%s --help does not know %s", subs[i], list[k]);
    }
  /* every command answers --help with what it does and examples, which the
   * page lists too; a misspelt command gets the one meant */
  const char *all[] = { "run", "check", "plan", "plot", "export", "report", "keys", "hardware",
                        "calibrate", "completion", "man" };
  g_assert_nonnull (strstr (man, ".SH EXAMPLES"));
  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    {
      g_autofree char *help = NULL, *he = NULL;
      g_assert_cmpint (dtsim (&help, &he, all[i], "--help", NULL), ==, 0);
      g_autofree char *example = g_strdup_printf ("  dtsim %s ", all[i]);
      if (!strstr (help, "Examples:") || !strstr (help, example))
        g_error ("%s --help has no examples:\n%s", all[i], help);
      g_autofree char *line = g_strdup_printf ("\ndtsim %s ", all[i]);
      g_assert_nonnull (strstr (man, line));
    }
  g_autofree char *mo = NULL, *me = NULL;
  g_assert_cmpint (dtsim (&mo, &me, "chek", "x.ini", NULL), ==, 2);
  g_assert_nonnull (strstr (me, "unknown command 'chek'; did you mean check?"));
  /* groff reads the page without a warning */
  g_autofree char *page = tmp ("dtsim.1");
  g_assert_true (g_file_set_contents (page, man, -1, NULL));
  const char *argv[] = { "groff", "-man", "-Tutf8", "-ww", "-z", page, NULL };
  g_autofree char *go = NULL, *ge = NULL;
  int status = -1;
  g_assert_true (g_spawn_sync (tmpdir, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &go,
                               &ge, &status, NULL));
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_cmpstr (ge, ==, "");
}

/* Bad input: exit 2, one line naming the file and the key, no database. */
static void
check_bad (const char *file, const char *const *expect, const char *set)
{
  g_autofree char *ini = test_data_path (file);
  g_autofree char *db = tmp ("bad.db");
  g_autofree char *o = NULL, *e = NULL;
  int code = set ? dtsim (&o, &e, "run", ini, "-o", db, "--set", set, NULL)
                 : dtsim (&o, &e, "run", ini, "-o", db, NULL);
  g_assert_cmpint (code, ==, 2);
  g_assert_cmpstr (o, ==, "");
  g_assert_true (g_str_has_suffix (e, "\n"));
  g_assert_true (strchr (e, '\n') == e + strlen (e) - 1); /* one line */
  for (int i = 0; expect[i]; i++)
    if (!strstr (e, expect[i]))
      g_error ("'%s' not in the message: %s", expect[i], e);
  g_assert_false (g_file_test (db, G_FILE_TEST_EXISTS));
  /* check says the same */
  g_autofree char *o2 = NULL, *e2 = NULL;
  code = set ? dtsim (&o2, &e2, "check", ini, "--set", set, NULL)
             : dtsim (&o2, &e2, "check", ini, NULL);
  g_assert_cmpint (code, ==, 2);
  g_assert_cmpstr (e2, ==, e);
}

static void
test_bad_unknown_key (void)
{
  const char *expect[] = { "unknown-key.ini", "[network] bandwith", "bandwidth", NULL };
  check_bad ("unknown-key.ini", expect, NULL);
}

static void
test_bad_negative_bandwidth (void)
{
  const char *expect[] = { "negative-bandwidth.ini", "[network] bandwidth", "-10Gbps", NULL };
  check_bad ("negative-bandwidth.ini", expect, NULL);
}

static void
test_bad_unit (void)
{
  const char *expect[] = { "bad-unit.ini", "[network] latency", "5GB", NULL };
  check_bad ("bad-unit.ini", expect, NULL);
}

static void
test_bad_missing_folder (void)
{
  /* the scenario's own [trace] db points into a missing folder */
  g_autofree char *ini = test_data_path ("missing-file.ini");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, NULL), ==, 2);
  g_assert_nonnull (strstr (e, "missing-file.ini"));
  g_assert_nonnull (strstr (e, "[trace] db"));
  g_assert_nonnull (strstr (e, "no-such-folder"));
  g_autofree char *ghost = tmp ("no-such-folder");
  g_assert_false (g_file_test (ghost, G_FILE_TEST_EXISTS));
}

static void
test_bad_missing_scenario (void)
{
  const char *expect[] = { "no-such-scenario.ini", "no such scenario file", NULL };
  check_bad ("no-such-scenario.ini", expect, NULL);
}

static void
test_bad_set (void)
{
  const char *expect[] = { "--set", "[cluster] wrokers", NULL };
  check_bad ("small.ini", expect, "cluster.wrokers=3");
  const char *expect2[] = { "small.ini", "[cluster] workers", "0", NULL };
  check_bad ("small.ini", expect2, "cluster.workers=0");
}

static void
test_bad_link (void)
{
  const char *expect[] = { "small.ini", "[network] links", "nolink", NULL };
  check_bad ("small.ini", expect, "network.links=nolink 1Gbps");
  const char *expect2[] = { "small.ini", "[network] links", "worker1.up", "fast", NULL };
  check_bad ("small.ini", expect2, "network.links=worker1.up fast");
  const char *expect3[] = { "small.ini", "[network] oversubscription", "0.5", NULL };
  check_bad ("small.ini", expect3, "network.oversubscription=0.5");
}

/* A run that fails validation keeps an earlier database intact. */
static void
test_bad_keeps_old_db (void)
{
  g_autofree char *ini = test_data_path ("small.ini"), *bad = test_data_path ("unknown-key.ini");
  g_autofree char *db = tmp ("keep.db");
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_autofree char *before = dump (db);
  g_assert_cmpint (dtsim (&o2, &e2, "run", bad, "-o", db, NULL), ==, 2);
  g_autofree char *after = dump (db);
  g_assert_cmpstr (before, ==, after);
}

/* --- where the database is written ---------------------------------------- */

/* A fresh empty folder under tmpdir. */
static char *
fresh_dir (const char *name)
{
  char *dir = tmp (name);
  sim_remove_tree (dir);
  g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
  return dir;
}

/* stderr is exactly one line, which contains every string of `expect`. */
static void
assert_one_line (const char *e, const char *const *expect)
{
  g_assert_true (g_str_has_suffix (e, "\n"));
  g_assert_true (strchr (e, '\n') == e + strlen (e) - 1);
  for (int i = 0; expect[i]; i++)
    if (!strstr (e, expect[i]))
      g_error ("'%s' not in the message: %s", expect[i], e);
}

/* What a refused target looks like before and after: its type, and for a
 * regular file its bytes, for a link where it points. */
static char *
snapshot (const char *path)
{
  struct stat st;
  g_assert_cmpint (lstat (path, &st), ==, 0);
  if (S_ISREG (st.st_mode))
    {
      gsize len = 0;
      g_autofree char *bytes = test_read_file (path, &len);
      g_autofree char *b64 = g_base64_encode ((const guchar *) bytes, len);
      return g_strdup_printf ("file %" G_GSIZE_FORMAT " %s", len, b64);
    }
  if (S_ISLNK (st.st_mode))
    {
      g_autofree char *to = g_file_read_link (path, NULL);
      return g_strdup_printf ("link %s", to);
    }
  return g_strdup_printf ("mode %o", (unsigned) (st.st_mode & S_IFMT));
}

/* One refused target: `dtsim run` exits 2 before running anything, prints
 * one line naming "-o" and the path, and leaves the path as it was and no
 * temporary file beside it. */
static void
check_refused (const char *dir, const char *path, const char *why)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *before = snapshot (path);
  guint entries = test_count_entries (dir, "");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", path, NULL), ==, 2);
  g_assert_cmpstr (o, ==, "");
  const char *expect[] = { "-o '", path, why, NULL };
  assert_one_line (e, expect);
  /* nothing ran: no progress line */
  g_assert_null (strstr (e, "run 1/2"));
  g_autofree char *after = snapshot (path);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (test_count_entries (dir, ""), ==, entries);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
}

static void
test_refuse_text (void)
{
  g_autofree char *dir = fresh_dir ("refuse-text");
  g_autofree char *notes = g_build_filename (dir, "notes.txt", NULL);
  g_assert_true (g_file_set_contents (notes, "my notes\n", -1, NULL));
  check_refused (dir, notes, "not an SQLite database");
}

/* -o naming the scenario itself */
static void
test_refuse_scenario (void)
{
  g_autofree char *dir = fresh_dir ("refuse-ini");
  g_autofree char *src = test_data_path ("small.ini"), *text = test_read_file (src, NULL);
  g_autofree char *ini = g_build_filename (dir, "s.ini", NULL);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autofree char *before = snapshot (ini);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", ini, NULL), ==, 2);
  const char *expect[] = { "-o '", ini, "not an SQLite database", NULL };
  assert_one_line (e, expect);
  g_autofree char *after = snapshot (ini);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (test_count_entries (dir, ""), ==, 1);
}

static void
test_refuse_empty (void)
{
  g_autofree char *dir = fresh_dir ("refuse-empty");
  g_autofree char *empty = g_build_filename (dir, "empty.db", NULL);
  g_assert_true (g_file_set_contents (empty, "", 0, NULL));
  check_refused (dir, empty, "is empty");
}

static void
test_refuse_dev_null (void)
{
  g_autofree char *dir = fresh_dir ("refuse-null");
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *o = NULL, *e = NULL;
  /* run in dir: a temporary file beside /dev/null would be in /dev */
  g_assert_cmpint (test_run_dtsim (dir, &o, &e, "run", ini, "-o", "/dev/null", NULL), ==, 2);
  const char *expect[] = { "-o '/dev/null'", "character device", NULL };
  assert_one_line (e, expect);
  g_assert_true (g_file_test ("/dev/null", G_FILE_TEST_EXISTS));
  struct stat st;
  g_assert_cmpint (stat ("/dev/null", &st), ==, 0);
  g_assert_true (S_ISCHR (st.st_mode));
  g_assert_cmpuint (test_count_entries (dir, ""), ==, 0);
}

static void
test_refuse_directory (void)
{
  g_autofree char *dir = fresh_dir ("refuse-dir");
  g_autofree char *sub = g_build_filename (dir, "out.db", NULL);
  g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
  check_refused (dir, sub, "is a directory");
  g_assert_cmpuint (test_count_entries (sub, ""), ==, 0);
}

/* A FIFO with no writer: opening it for reading would block forever. */
static void
test_refuse_fifo (void)
{
  g_autofree char *dir = fresh_dir ("refuse-fifo");
  g_autofree char *fifo = g_build_filename (dir, "out.db", NULL);
  g_assert_cmpint (mkfifo (fifo, 0644), ==, 0);
  check_refused (dir, fifo, "is a FIFO");
}

/* SQLite databases that are not dtsim traces: another program's, one with a
 * runs table but no schema version, one from a future schema. */
static void
test_refuse_other_sqlite (void)
{
  const char *sql[] = {
    "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep me');",
    "CREATE TABLE runs (id INTEGER PRIMARY KEY); INSERT INTO runs VALUES (1);",
    "CREATE TABLE runs (id INTEGER); PRAGMA user_version = 99;",
  };
  const char *why[] = { "user_version 0, no runs table", "user_version 0, a runs table",
                        "user_version 99, a runs table" };
  for (gsize i = 0; i < G_N_ELEMENTS (sql); i++)
    {
      g_autofree char *dir = fresh_dir ("refuse-sqlite");
      g_autofree char *db = g_build_filename (dir, "other.db", NULL);
      sqlite3 *h = NULL;
      g_assert_cmpint (sqlite3_open (db, &h), ==, SQLITE_OK);
      g_assert_cmpint (sqlite3_exec (h, sql[i], NULL, NULL, NULL), ==, SQLITE_OK);
      sqlite3_close (h);
      check_refused (dir, db, why[i]);
    }
}

/* A symbolic link is refused even when it points to a trace: dtsim does not
 * write through links, and does not replace them either. */
static void
test_refuse_symlink (void)
{
  g_autofree char *dir = fresh_dir ("refuse-link");
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *real = g_build_filename (dir, "real.db", NULL);
  g_autofree char *link = g_build_filename (dir, "link.db", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", real, "--quiet", NULL), ==, 0);
  g_assert_cmpint (symlink ("real.db", link), ==, 0);
  g_autofree char *before = snapshot (real);
  check_refused (dir, link, "symbolic link");
  g_autofree char *after = snapshot (real);
  g_assert_cmpstr (before, ==, after);
}

/* The same check for a scenario's own [trace] db (which must lie inside
 * results/): the line names the scenario file and the key. */
static void
test_refuse_trace_db (void)
{
  g_autofree char *dir = fresh_dir ("refuse-key");
  g_autofree char *results = g_build_filename (dir, "results", NULL);
  g_assert_cmpint (g_mkdir (results, 0755), ==, 0);
  g_autofree char *notes = g_build_filename (results, "notes.txt", NULL);
  g_assert_true (g_file_set_contents (notes, "my notes\n", -1, NULL));
  g_autofree char *src = test_data_path ("small.ini"), *text = test_read_file (src, NULL);
  g_autofree char *ini = g_build_filename (dir, "s.ini", NULL);
  /* small.ini has a [trace] section: add the key to it */
  g_autofree char *edited = NULL;
  {
    g_auto (GStrv) parts = g_strsplit (text, "[trace]\n", 2);
    g_assert_cmpuint (g_strv_length (parts), ==, 2);
    edited = g_strdup_printf ("%s[trace]\ndb = results/notes.txt\n%s", parts[0], parts[1]);
  }
  g_assert_true (g_file_set_contents (ini, edited, -1, NULL));
  g_autofree char *before = snapshot (notes);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &o, &e, "run", "s.ini", NULL), ==, 2);
  const char *expect[] = { "s.ini", "[trace] db '", "results/notes.txt", "not an SQLite database",
                           NULL };
  assert_one_line (e, expect);
  g_autofree char *after = snapshot (notes);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (test_count_entries (results, "."), ==, 0);
}

/* A run that fails (every point, at run time) leaves a good database as it
 * was; a good run then replaces it with exactly what it writes to a new
 * path.  No temporary file stays behind either time. */
static void
test_failed_run_keeps_db (void)
{
  g_autofree char *dir = fresh_dir ("keep-on-failure");
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_autofree char *set_dir = corrupt_fashion (dir);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_autofree char *good = dump (db);
  /* one point, failing at run time (the loader accepts the files) */
  g_autofree char *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", db, "--quiet", "--set", "policy.consistency=bsp",
                          "--set", "model.dataset=fashion-mnist", "--set", set_dir, NULL), ==, 2);
  const char *expect[] = { "[model] data_dir: ", NULL };
  assert_one_line (e2, expect);
  g_autofree char *after_fail = dump (db);
  g_assert_cmpstr (good, ==, after_fail);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
  /* a sweep whose every point fails: the same */
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "run", ini, "-o", db, "--jobs", "2", "--set",
                          "model.dataset=fashion-mnist", "--set", set_dir, NULL), ==, 2);
  g_assert_nonnull (strstr (e3, "all 2 runs failed"));
  g_assert_nonnull (strstr (e3, "was left as it was"));
  g_autofree char *after_fail2 = dump (db);
  g_assert_cmpstr (good, ==, after_fail2);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
  /* a good run replaces it: same rows as a run to a new file */
  g_autofree char *fresh = g_build_filename (dir, "fresh.db", NULL);
  g_autofree char *o4 = NULL, *e4 = NULL, *o5 = NULL, *e5 = NULL;
  g_assert_cmpint (dtsim (&o4, &e4, "run", ini, "-o", db, "--quiet", "--set", "scenario.seed=9",
                          NULL), ==, 0);
  g_assert_cmpint (dtsim (&o5, &e5, "run", ini, "-o", fresh, "--quiet", "--set",
                          "scenario.seed=9", NULL), ==, 0);
  g_autofree char *replaced = dump (db), *expected = dump (fresh);
  g_assert_cmpstr (replaced, ==, expected);
  g_assert_cmpstr (replaced, !=, good);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
  g_assert_cmpuint (test_count_entries (dir, ""), ==, 3); /* t.db, fresh.db, bad-fashion */
}

static void
reset_sigint (gpointer data G_GNUC_UNUSED)
{
  signal (SIGINT, SIG_DFL);
  signal (SIGTERM, SIG_DFL);
}

/* SIGINT or SIGTERM during a run: the process dies of the signal, the old
 * database is as it was and the temporary file and its journal are gone. */
static void
test_interrupted_run (void)
{
  const char *bin = g_getenv ("DTSIM_BIN");
  g_autofree char *ini = test_data_path ("small.ini");
  const int sigs[] = { SIGINT, SIGTERM };
  for (gsize i = 0; i < G_N_ELEMENTS (sigs); i++)
    {
      g_autofree char *dir = fresh_dir ("interrupted");
      g_autofree char *db = g_build_filename (dir, "t.db", NULL);
      g_autofree char *o = NULL, *e = NULL;
      g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
      g_autofree char *good = dump (db);
      /* far more iterations than it can run before the signal (beyond the
       * default bounds on its trace and events, raised) */
      const char *argv[] = { bin, "run", ini, "-o", db, "--quiet", "--set",
                             "scenario.iterations=100000000", "--set", "trace.detail=iterations",
                             "--set", "trace.max_size=1PB", "--set", "scenario.max_events=1000000000000000",
                             NULL };
      g_autoptr (GError) error = NULL;
      GPid pid;
      g_assert_true (g_spawn_async (dir, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD
                                    | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                                    reset_sigint, NULL, &pid, &error));
      g_assert_no_error (error);
      /* wait until it writes its temporary file (at most 20 s) */
      for (int k = 0; k < 2000 && test_count_entries (dir, ".t.db.") == 0; k++)
        g_usleep (10000);
      g_assert_cmpuint (test_count_entries (dir, ".t.db."), >=, 1);
      g_usleep (100000);
      g_assert_cmpint (kill (pid, sigs[i]), ==, 0);
      int status = 0;
      g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
      g_spawn_close_pid (pid);
      g_assert_true (WIFSIGNALED (status));
      g_assert_cmpint (WTERMSIG (status), ==, sigs[i]);
      g_autofree char *after = dump (db);
      g_assert_cmpstr (good, ==, after);
      g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
      g_assert_cmpuint (test_count_entries (dir, ""), ==, 1);
    }
}

/* Three runs writing one database at once: a run that finds another one
 * writing it is refused (exit 2, the holder named), each other one renames
 * its own complete file over it, so it ends up as one of those, whole
 * (tests/test-tracefiles.c makes sure the runs overlap). */
static void
test_concurrent_runs (void)
{
  const char *bin = g_getenv ("DTSIM_BIN");
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *dir = fresh_dir ("concurrent");
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  GPid pids[3];
  gboolean done[3];
  for (int i = 0; i < 3; i++)
    {
      g_autofree char *seed = g_strdup_printf ("scenario.seed=%d", i + 1);
      const char *argv[] = { bin, "run", ini, "-o", db, "--quiet", "--set", seed, NULL };
      g_autoptr (GError) error = NULL;
      g_assert_true (g_spawn_async (dir, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD
                                    | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pids[i],
                                    &error));
      g_assert_no_error (error);
    }
  for (int i = 0; i < 3; i++)
    {
      int status = 0;
      g_assert_cmpint (waitpid (pids[i], &status, 0), ==, pids[i]);
      g_spawn_close_pid (pids[i]);
      g_assert_true (WIFEXITED (status));
      g_assert_true (WEXITSTATUS (status) == 0 || WEXITSTATUS (status) == 2);
      done[i] = WEXITSTATUS (status) == 0;
    }
  /* one run's database, of one that was not refused: both points done, and
   * one seed */
  g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs WHERE status = 'done'"), ==, 2);
  g_assert_cmpint (count (db, "SELECT COUNT(DISTINCT seed) FROM runs"), ==, 1);
  gint64 seed = count (db, "SELECT seed FROM runs LIMIT 1");
  g_assert_true (seed >= 1 && seed <= 3 && done[seed - 1]);
  g_autofree char *set = g_strdup_printf ("scenario.seed=%" G_GINT64_FORMAT, seed);
  g_autofree char *ref = g_build_filename (dir, "ref.db", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", ref, "--quiet", "--set", set, NULL), ==, 0);
  g_autofree char *got = dump (db), *want = dump (ref);
  g_assert_cmpstr (got, ==, want);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
}

/* --- a failed sweep point fails alone -------------------------------------- */

/* One point fails at run time (corrupt data: bad input, so exit 2), the
 * other succeeds: each run has its own status and error, the healthy one is
 * done with no error, and the failed point did not stop the one after it
 * (--jobs 1, failing point first).  stderr ends with one line per failed
 * point and the count. */
static void
test_point_fails_alone (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  const char *jobs[] = { "1", "2" };
  for (gsize j = 0; j < G_N_ELEMENTS (jobs); j++)
    {
      g_autofree char *dir = fresh_dir ("point-failure");
      g_autofree char *db = g_build_filename (dir, "t.db", NULL);
      g_autofree char *set_dir = corrupt_fashion (dir);
      g_autofree char *o = NULL, *e = NULL;
      g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", "--jobs", jobs[j],
                              "--set", "policy.consistency=bsp", "--set",
                              "sweep.model.dataset=fashion-mnist,synthetic", "--set", set_dir,
                              NULL), ==, 2);
      const guint n = 2, n_failed = 1;
      g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs"), ==, n);
      g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs WHERE id = 1 AND status = 'failed'"
                              " AND name LIKE '%dataset=fashion-mnist' AND error LIKE"
                              " '%small.ini: [model] data_dir: %'"), ==, 1);
      g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs WHERE id = 2 AND status = 'done'"
                              " AND name LIKE '%dataset=synthetic' AND error IS NULL"), ==, 1);
      /* the healthy point ran to its end */
      g_assert_cmpint (count (db, "SELECT updates FROM runs WHERE id = 2"), ==, 20 * 4);
      g_auto (GStrv) lines = g_strsplit (e, "\n", -1);
      g_assert_cmpuint (g_strv_length (lines), ==, n_failed + 2); /* + count, + "" */
      g_assert_true (g_str_has_prefix (lines[0], "dtsim: "));
      g_assert_nonnull (strstr (lines[0], "small.ini: [model] data_dir: "));
      g_assert_true (g_str_has_suffix (lines[0], "(run 1/2: small model.dataset=fashion-mnist)"));
      g_autofree char *summary = g_strdup_printf ("dtsim: %u of %u runs failed", n_failed, n);
      g_assert_true (g_str_has_prefix (lines[1], summary));
      g_assert_nonnull (strstr (lines[1], db));
      g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
    }
}

/* A row that SQLite rejects fails its own run only: another run in the same
 * database, ended after it, is done (before, one error stuck to the whole
 * file and failed every run that ended after it). */
static void
test_row_error_own_run (void)
{
  g_autofree char *dir = fresh_dir ("row-error");
  g_autofree char *path = g_build_filename (dir, "t.db", NULL);
  g_autoptr (GPtrArray) configs = test_load_scenario_text ("[scenario]\nname = r\n", NULL);
  const SimConfig *c = g_ptr_array_index (configs, 0);
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_trace_check_target (path, "-o", &error));
  SimTrace *t = sim_trace_open (path, &error);
  g_assert_no_error (error);
  /* nothing at the target until the trace is closed */
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
  gint64 good = sim_trace_begin_run (t, c, "r.ini", &error);
  gint64 bad = sim_trace_begin_run (t, c, "r.ini", &error);
  g_assert_no_error (error);
  sim_trace_span (t, good, "worker0", "compute", 0, 1, 0, 0, NULL);
  sim_trace_span (t, bad, "worker0", "no-such-kind", 0, 1, 0, 0, NULL); /* CHECK fails */
  sim_trace_span (t, good, "worker0", "send", 1, 2, 0, 8, NULL);
  SimRunSummary s = { .sim_time = 2, .final_loss = NAN, .final_accuracy = NAN,
                      .stop = "iterations" };
  g_assert_false (sim_trace_end_run (t, bad, &s, &error));
  g_assert_error (error, SIM_ERROR, SIM_ERROR_RUNTIME);
  g_assert_nonnull (strstr (error->message, "CHECK constraint failed"));
  sim_trace_fail_run (t, bad, error->message);
  g_clear_error (&error);
  g_assert_true (sim_trace_end_run (t, good, &s, &error));
  g_assert_no_error (error);
  g_assert_true (sim_trace_ok (t, &error));
  g_assert_true (sim_trace_close (t, &error));
  g_assert_no_error (error);
  g_autofree char *q_good = g_strdup_printf ("SELECT COUNT(*) FROM runs WHERE id = %" G_GINT64_FORMAT
                                             " AND status = 'done' AND error IS NULL", good);
  g_autofree char *q_bad = g_strdup_printf ("SELECT COUNT(*) FROM runs WHERE id = %" G_GINT64_FORMAT
                                            " AND status = 'failed' AND error LIKE '%%CHECK%%'", bad);
  g_assert_cmpint (count (path, q_good), ==, 1);
  g_assert_cmpint (count (path, q_bad), ==, 1);
  /* the good run's rows are all there, the rejected one is not */
  g_assert_cmpint (count (path, "SELECT COUNT(*) FROM spans"), ==, 2);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
  /* abandoning a trace leaves the target as it was */
  g_autofree char *before = dump (path);
  t = sim_trace_open (path, &error);
  g_assert_no_error (error);
  /* the temporary file and the lock file */
  g_assert_cmpuint (test_count_entries (dir, ".t.db."), ==, 2);
  sim_trace_abandon (t);
  g_autofree char *after = dump (path);
  g_assert_cmpstr (before, ==, after);
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
}

static void
test_check_main_scenario (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *ini = g_build_filename (src, "scenarios", "consistency.ini", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "check", ini, NULL), ==, 0);
  g_assert_nonnull (strstr (o, "6 runs"));
  g_assert_nonnull (strstr (o, "star"));
  g_assert_nonnull (strstr (o, "17 hosts"));

  /* a catalog device prices by layer kind: check says where the step goes,
   * and the parts add up to the step */
  g_autofree char *r50 = g_build_filename (src, "scenarios", "validation",
                                           "resnet50-a100-tf32-pytorch.ini", NULL);
  g_autofree char *ro = NULL, *re = NULL;
  g_assert_cmpint (dtsim (&ro, &re, "check", r50, NULL), ==, 0);
  const char *kinds = strstr (ro, "step by layer kind: ");
  g_assert_nonnull (kinds);
  const char *step = strstr (ro, "step of batch 256: ");
  g_assert_nonnull (step);
  double want = g_ascii_strtod (step + strlen ("step of batch 256: "), NULL), sum = 0;
  for (const char *k = kinds; (k = strstr (k, " s (")) != NULL; k++)
    {
      const char *num = k;
      while (num > kinds && num[-1] != ' ')
        num--;
      sum += g_ascii_strtod (num, NULL);
    }
  test_assert_close (sum, want, 1e-3);
  g_assert_nonnull (strstr (kinds, "conv "));
  g_assert_nonnull (strstr (kinds, "norm "));
}

/* docs/scenarios.md holds the reference the program prints, verbatim. */
static void
test_keys_documented (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_autofree char *doc = g_build_filename (src, "docs", "scenarios.md", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (doc, &text, NULL, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "keys", NULL), ==, 0);
  g_assert_nonnull (strstr (o, "| `bandwidth` |"));
  if (!strstr (text, o))
    g_error ("docs/scenarios.md is out of date: regenerate its key tables with `dtsim keys`");
}

static void
test_plot (void)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *db = tmp ("p.db");
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_assert_cmpint (dtsim (&o2, &e2, "plot", db, NULL), ==, 0);
  const char *files[] = { "p-loss-time.png", "p-timeline-run1.png", "p-timeline-run2.png" };
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *f = tmp (files[i]);
      g_autofree char *contents = NULL;
      gsize len = 0;
      g_assert_true (g_file_get_contents (f, &contents, &len, NULL));
      g_assert_cmpuint (len, >, 1000);
      g_assert_cmpint (memcmp (contents, "\x89PNG", 4), ==, 0);
      g_assert_nonnull (strstr (o2, files[i]));
    }
  g_autofree char *o3 = NULL, *e3 = NULL;
  g_assert_cmpint (dtsim (&o3, &e3, "plot", db, "--format", "svg", NULL), ==, 0);
  g_autofree char *svg = tmp ("p-loss-time.svg");
  g_autofree char *contents = NULL;
  g_assert_true (g_file_get_contents (svg, &contents, NULL, NULL));
  g_assert_nonnull (strstr (contents, "<svg"));
  g_assert_nonnull (strstr (contents, "simulated time (s)"));
  /* a missing database is bad input */
  g_autofree char *o4 = NULL, *e4 = NULL;
  g_assert_cmpint (dtsim (&o4, &e4, "plot", "nothing.db", NULL), ==, 2);
  g_assert_nonnull (strstr (e4, "nothing.db"));
}

/* --version names the schema the databases it writes carry. */
static void
test_version (void)
{
  g_autofree char *o = NULL, *e = NULL, *o2 = NULL, *e2 = NULL;
  g_assert_cmpint (dtsim (&o, &e, "--version", NULL), ==, 0);
  g_autofree char *want = g_strdup_printf ("(trace schema %d,", SIM_TRACE_SCHEMA_VERSION);
  g_assert_nonnull (strstr (o, want));
  g_autofree char *ini = test_data_path ("small.ini"), *db = tmp ("version.db");
  g_assert_cmpint (dtsim (&o2, &e2, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_assert_cmpint (count (db, "PRAGMA user_version"), ==, SIM_TRACE_SCHEMA_VERSION);
}

/* A batch larger than a worker's shard of the training set (samples /
 * data-parallel parts) would reuse each sample within a step: refused with
 * one line naming [model] batch and the shard size; a batch of exactly the
 * shard runs.  A pipeline's parts are its replicas, not its workers. */
static void
test_bad_batch_over_shard (void)
{
  static const char base[] =
    "[scenario]\nname = b\niterations = 2\n"
    "[cluster]\nworkers = 4\n"
    "[device]\nflops = 1GFLOPS\n"
    "[network]\nbandwidth = 1Gbps\n"
    "[model]\nkind = mlp\nhidden = 8\nfeatures = 15\nclasses = 4\nsamples = 256\n"
    "test_samples = 64\n";
  const struct { const char *rest; int code; const char *shard; } cases[] = {
    /* 256 / 4 workers = 64 */
    { "batch = 65\n[policy]\nkind = allreduce\n", 2, "(256 samples / 4 = 64)" },
    { "batch = 64\n[policy]\nkind = allreduce\n", 0, NULL },
    { "batch = 65\n[policy]\nkind = ps\n", 2, "(256 samples / 4 = 64)" },
    /* 2 stages x 2 replicas: 256 / 2 replicas = 128 */
    { "batch = 128\n[policy]\nkind = pipeline\nstages = 2\nreplicas = 2\nmicrobatches = 2\n",
      0, NULL },
    { "batch = 130\n[policy]\nkind = pipeline\nstages = 2\nreplicas = 2\nmicrobatches = 2\n",
      2, "(256 samples / 2 = 128)" },
  };
  g_autofree char *ini = tmp ("batch.ini");
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = g_strconcat (base, cases[i].rest, NULL);
      g_assert_true (g_file_set_contents (ini, text, -1, NULL));
      g_autofree char *o = NULL, *e = NULL;
      int rc = dtsim (&o, &e, "run", "batch.ini", "-o", "batch.db", "-q", NULL);
      if (rc != cases[i].code)
        g_error ("case %" G_GSIZE_FORMAT ": exit %d, %s", i, rc, e);
      if (cases[i].code == 0)
        continue;
      g_assert_true (g_str_has_prefix (e, "dtsim: batch.ini: [model] batch: "));
      g_assert_nonnull (strstr (e, cases[i].shard));
      g_assert_cmpint (strchr (e, '\n') - e, ==, (int) strlen (e) - 1); /* one line */
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-cli-XXXXXX", NULL);
  g_test_add_func ("/cli/run/deterministic", test_deterministic);
  g_test_add_func ("/cli/run/jobs", test_jobs);
  g_test_add_func ("/cli/run/threads", test_threads);
  g_test_add_func ("/cli/kernels/reproducible", test_kernels_reproducible);
  g_test_add_func ("/cli/kernels/lazy-blas", test_kernels_lazy_blas);
  g_test_add_func ("/cli/calibrate", test_calibrate);
  g_test_add_func ("/cli/run/jobs-failure", test_jobs_failure);
  g_test_add_func ("/cli/run/jobs-tables", test_jobs_tables);
  g_test_add_func ("/cli/run/trace-contents", test_trace_contents);
  g_test_add_func ("/cli/run/json", test_json);
  g_test_add_func ("/cli/run/infeasible-points", test_infeasible_points);
  g_test_add_func ("/cli/labs-by-hand", test_labs_by_hand);
  g_test_add_func ("/cli/frictions", test_frictions);
  g_test_add_func ("/cli/completion-and-man", test_completion_and_man);
  g_test_add_func ("/cli/bad/unknown-key", test_bad_unknown_key);
  g_test_add_func ("/cli/bad/negative-bandwidth", test_bad_negative_bandwidth);
  g_test_add_func ("/cli/bad/unit", test_bad_unit);
  g_test_add_func ("/cli/bad/missing-folder", test_bad_missing_folder);
  g_test_add_func ("/cli/bad/missing-scenario", test_bad_missing_scenario);
  g_test_add_func ("/cli/bad/set", test_bad_set);
  g_test_add_func ("/cli/bad/batch-over-shard", test_bad_batch_over_shard);
  g_test_add_func ("/cli/bad/keeps-old-db", test_bad_keeps_old_db);
  g_test_add_func ("/cli/bad/link", test_bad_link);
  g_test_add_func ("/cli/output/refuse-text", test_refuse_text);
  g_test_add_func ("/cli/output/refuse-scenario", test_refuse_scenario);
  g_test_add_func ("/cli/output/refuse-empty", test_refuse_empty);
  g_test_add_func ("/cli/output/refuse-dev-null", test_refuse_dev_null);
  g_test_add_func ("/cli/output/refuse-directory", test_refuse_directory);
  g_test_add_func ("/cli/output/refuse-fifo", test_refuse_fifo);
  g_test_add_func ("/cli/output/refuse-other-sqlite", test_refuse_other_sqlite);
  g_test_add_func ("/cli/output/refuse-symlink", test_refuse_symlink);
  g_test_add_func ("/cli/output/refuse-trace-db", test_refuse_trace_db);
  g_test_add_func ("/cli/output/failed-run-keeps-db", test_failed_run_keeps_db);
  g_test_add_func ("/cli/output/interrupted", test_interrupted_run);
  g_test_add_func ("/cli/output/concurrent", test_concurrent_runs);
  g_test_add_func ("/cli/run/point-fails-alone", test_point_fails_alone);
  g_test_add_func ("/cli/trace/row-error-own-run", test_row_error_own_run);
  g_test_add_func ("/cli/check/main-scenario", test_check_main_scenario);
  g_test_add_func ("/cli/check/jobs", test_check_jobs);
  g_test_add_func ("/cli/plot/figures", test_plot);
  g_test_add_func ("/cli/docs/keys", test_keys_documented);
  g_test_add_func ("/cli/version", test_version);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
