/*
 * util.c — helpers shared by the simulation tests (see util.h).
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

#include "sim/run.h"
#include "config/scenario.h"
#include "kernels/rng.h"
#include "tests/util.h"
#include "sim/load.h"

/* A test program run by hand (build/tests/test-labs -p /labs/NAME, as
 * docs/labs/README.md says) gets what `make check` would give it: the source
 * tree, its test data and the dtsim of this build.  Set before main(), so
 * every test sees them; a value in the environment wins. */
static void __attribute__ ((constructor))
test_environment_defaults (void)
{
  g_setenv ("DTSIM_SRCDIR", TEST_SRCDIR, FALSE);
  g_setenv ("DTSIM_TEST_DATA", TEST_SRCDIR "/tests/data", FALSE);
  g_setenv ("DTSIM_BIN", TEST_BUILDDIR "/dtsim", FALSE);
  g_setenv ("DTSIM_CUDA_PLUGIN", TEST_BUILDDIR "/dtsim-cuda.so", FALSE);
  g_setenv ("OPENBLAS_NUM_THREADS", "1", FALSE);
}

/* Loads `text` through a temporary file t.ini; the file is gone after. */
static GPtrArray *
load_text (const char *text, const char *const *sets, GError **error)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  GPtrArray *configs = sim_scenario_load (path, sets, error);
  g_unlink (path);
  g_rmdir (dir);
  return configs;
}

GPtrArray *
test_load_scenario_text (const char *text, const char *const *sets)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = load_text (text, sets, &error);
  g_assert_no_error (error);
  return configs;
}

SimConfig *
test_load_one (const char *text)
{
  GPtrArray *configs = test_load_scenario_text (text, NULL);
  g_assert_cmpuint (configs->len, ==, 1);
  SimConfig *c = g_ptr_array_steal_index (configs, 0);
  g_ptr_array_unref (configs);
  return c;
}

void
test_run_scenario_text (const char *text, const char *const *sets, const PolRecorder *rec,
                        SimRunSummary *sum, SimConfig **config_out)
{
  g_autoptr (GPtrArray) configs = test_load_scenario_text (text, sets);
  g_assert_cmpuint (configs->len, ==, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (g_ptr_array_index (configs, 0), NULL, 0, rec,
                                 sum, &error));
  g_assert_no_error (error);
  if (config_out)
    *config_out = g_ptr_array_steal_index (configs, 0);
}

static void
collect_iteration (gpointer ctx, int worker, gint64 iteration, double start, double end,
                   double compute, double comm, double wait, gint64 staleness)
{
  TestRun *r = ctx;
  TestRow row = { worker, iteration, start, end, compute, comm, wait, staleness };
  g_array_append_val (r->rows, row);
}

static void
collect_metric (gpointer ctx, double t, gint64 step, double loss, double accuracy,
                double consensus)
{
  TestRun *r = ctx;
  TestMetric m = { t, step, loss, accuracy, consensus };
  g_array_append_val (r->metrics, m);
}

static void
collect_param (gpointer ctx, const char *key, const char *value)
{
  TestRun *r = ctx;
  g_hash_table_replace (r->params, g_strdup (key), g_strdup (value));
}

TestRun *
test_run_collect (const char *text, const char *const *sets)
{
  TestRun *r = g_new0 (TestRun, 1);
  r->rows = g_array_new (FALSE, FALSE, sizeof (TestRow));
  r->metrics = g_array_new (FALSE, FALSE, sizeof (TestMetric));
  r->params = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  PolRecorder rec = { .ctx = r, .want_iterations = TRUE, .iteration = collect_iteration,
                      .metric = collect_metric, .param = collect_param };
  test_run_scenario_text (text, sets, &rec, &r->sum, NULL);
  return r;
}

void
test_run_free (TestRun *r)
{
  g_array_unref (r->rows);
  g_array_unref (r->metrics);
  g_hash_table_unref (r->params);
  g_free (r);
}

char *
test_load_scenario_error (const char *text)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = load_text (text, NULL, &error);
  g_assert_null (configs);
  g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "t.ini"));
  g_assert_null (strchr (error->message, '\n'));
  return g_strdup (error->message);
}

int
test_run_dtsim_argv (const char *cwd, char **out, char **err, const char *const *args)
{
  const char *bin = g_getenv ("DTSIM_BIN");
  g_assert_nonnull (bin);
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) bin);
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  int status = 0;
  g_autoptr (GError) error = NULL;
  /* a test reuses its o and e from one run to the next */
  if (out)
    g_clear_pointer (out, g_free);
  if (err)
    g_clear_pointer (err, g_free);
  g_assert_true (g_spawn_sync (cwd, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               out, err, &status, &error));
  g_assert_no_error (error);
  g_ptr_array_unref (argv);
  g_assert_true (WIFEXITED (status));
  return WEXITSTATUS (status);
}

int
test_run_dtsim (const char *cwd, char **out, char **err, const char *first, ...)
{
  GPtrArray *args = g_ptr_array_new ();
  va_list ap;
  va_start (ap, first);
  for (const char *a = first; a; a = va_arg (ap, const char *))
    g_ptr_array_add (args, (char *) a);
  va_end (ap);
  g_ptr_array_add (args, NULL);
  int status = test_run_dtsim_argv (cwd, out, err, (const char *const *) args->pdata);
  g_ptr_array_unref (args);
  return status;
}

double
test_query_number (const char *db, const char *sql)
{
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  if (sqlite3_prepare_v2 (h, sql, -1, &st, NULL) != SQLITE_OK)
    g_error ("%s: %s", sql, sqlite3_errmsg (h));
  if (sqlite3_step (st) != SQLITE_ROW || sqlite3_column_type (st, 0) == SQLITE_NULL)
    g_error ("no value: %s", sql);
  double v = sqlite3_column_double (st, 0);
  sqlite3_finalize (st);
  sqlite3_close (h);
  return v;
}

guint
test_count_entries (const char *dir, const char *prefix)
{
  g_autoptr (GError) error = NULL;
  GDir *d = g_dir_open (dir, 0, &error);
  g_assert_no_error (error);
  guint n = 0;
  const char *name;
  while ((name = g_dir_read_name (d)))
    if (g_str_has_prefix (name, prefix))
      n++;
  g_dir_close (d);
  return n;
}

char *
test_data_path (const char *name)
{
  const char *d = g_getenv ("DTSIM_TEST_DATA");
  g_assert_nonnull (d);
  return g_build_filename (d, name, NULL);
}

char *
test_read_file (const char *path, gsize *len)
{
  char *text = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_get_contents (path, &text, len, &error));
  g_assert_no_error (error);
  return text;
}


/* The sink of test_chunk_bytes's buffer: keeps the first chunk. */
static void
keep_first_chunk (SimTraceChunk *chunk, gpointer data)
{
  SimTraceChunk **first = data;
  if (*first)
    sim_trace_chunk_free (chunk);
  else
    *first = chunk;
}

GBytes *
test_chunk_bytes (void (*emit) (SimTrace *t, gint64 run), gint64 run)
{
  SimTraceChunk *chunk = NULL;
  SimTrace *b = sim_trace_new_buffer (keep_first_chunk, &chunk);
  emit (b, run);
  sim_trace_flush (b);
  sim_trace_free_buffer (b);
  g_assert_nonnull (chunk);
  GBytes *bytes = sim_trace_chunk_serialize (chunk);
  sim_trace_chunk_free (chunk);
  return bytes;
}

double
test_harmonic (int n)
{
  double h = 0;
  for (int k = 1; k <= n; k++)
    h += 1.0 / k;
  return h;
}

void
test_assert_close (double a, double b, double rel)
{
  if (fabs (a - b) > rel * MAX (fabs (a), fabs (b)))
    g_error ("%.17g != %.17g (relative tolerance %g)", a, b, rel);
}

static int
log2_ceil (int p)
{
  return (int) ceil (log2 ((double) p) - 1e-12);
}

static int
pow2_floor (int p)
{
  return 1 << (int) floor (log2 ((double) p) + 1e-12);
}

double
test_allreduce_closed_form (const char *alg, int p, double N, double alpha, double beta,
                            double gamma)
{
  /* hierarchical: every rank alone on these networks, a plain ring */
  if (strcmp (alg, "ring") == 0 || strcmp (alg, "hierarchical") == 0)
    return 2.0 * (p - 1) * alpha + 2.0 * (p - 1) / p * N * beta
           + (double) (p - 1) / p * N * gamma;
  if (strcmp (alg, "tree") == 0)
    return 2.0 * log2_ceil (p) * (alpha + N * beta) + log2_ceil (p) * N * gamma;
  if (strcmp (alg, "naive") == 0)
    return 2 * (alpha + N * beta) + (p - 1) * N * gamma;
  if (strcmp (alg, "halving-doubling") == 0)
    {
      int pp = pow2_floor (p);
      double lg = log2 ((double) pp);
      if (pp == p)
        return 2 * lg * alpha + 2.0 * (p - 1) / p * N * beta
               + (double) (p - 1) / p * N * gamma;
      /* one more step before and after */
      return 2 * (lg + 1) * alpha + 2 * (1 + (double) (pp - 1) / pp) * N * beta
             + (1 + (double) (pp - 1) / pp) * N * gamma;
    }
  if (strcmp (alg, "butterfly") == 0)
    {
      /* log2 p' rounds of the whole buffer; with p - p' extra ranks one
       * round more (the fold's first step), and the fold's last step
       * alpha + N beta too when p - p' > p'/2 */
      int pp = pow2_floor (p), e = p - pp;
      double lg = log2 ((double) pp), round = alpha + N * (beta + gamma);
      if (e == 0)
        return lg * round;
      if (2 * e <= pp)
        return (lg + 1) * round;
      return (lg + 2) * (alpha + N * beta) + (lg + 1) * N * gamma;
    }
  g_assert_not_reached ();
}

char *
test_replaced (const char *text, const char *from, const char *to)
{
  const char *at = strstr (text, from);
  g_assert_nonnull (at);
  return g_strdup_printf ("%.*s%s%s", (int) (at - text), text, to, at + strlen (from));
}

char *
test_replaced_free (char *text, const char *from, const char *to)
{
  char *out = test_replaced (text, from, to);
  g_free (text);
  return out;
}

/* Runs `text` saved as dir/NAME.ini into dir/NAME.db with the extra
 * arguments `extra` (NULL-terminated); returns the database's path. */
static char *
run_text_into (const char *dir, const char *text, const char *name, const char *const *extra)
{
  g_autofree char *file = g_strdup_printf ("%s.ini", name);
  g_autofree char *base = g_strdup_printf ("%s.db", name);
  g_autofree char *ini = g_build_filename (dir, file, NULL);
  char *db = g_build_filename (dir, base, NULL);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *const head[] = { "run", ini, "-o", db, "--quiet" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (argv, (gpointer) head[i]);
  for (const char *const *e = extra; e && *e; e++)
    g_ptr_array_add (argv, (gpointer) *e);
  g_ptr_array_add (argv, NULL);
  g_autofree char *out = NULL, *err = NULL;
  int rc = test_run_dtsim_argv (dir, &out, &err, (const char *const *) argv->pdata);
  if (rc != 0)
    g_error ("%s: exit %d: %s", name, rc, err);
  return db;
}

char *
test_run_messages (const char *dir, const char *text, const char *name)
{
  const char *const sets[] = { "--set", "trace.detail=messages", "--set",
                               "scenario.iterations=1", NULL };
  return run_text_into (dir, text, name, sets);
}

char *
test_run_text (const char *dir, const char *text, const char *name)
{
  return run_text_into (dir, text, name, NULL);
}

void
test_refusals (const char *base, const TestRefusal *cases, gsize n)
{
  for (gsize k = 0; k < n; k++)
    {
      g_autofree char *text = test_replaced (base, cases[k].from, cases[k].to);
      g_autofree char *msg = test_load_scenario_error (text);
      if (!strstr (msg, cases[k].want))
        g_error ("case %zu: %s\n  does not say: %s", k, msg, cases[k].want);
      g_assert_null (strchr (msg, '\n'));
    }
}

char *
test_tables_digest (const char *db, const char *const *tables)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *d = sim_trace_digest (db, &error);
  g_assert_no_error (error);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < d->len; i++)
    {
      const SimTableDigest *t = g_ptr_array_index (d, i);
      if (g_strv_contains (tables, t->table))
        g_string_append_printf (s, "%s %" G_GINT64_FORMAT " %s\n", t->table, t->rows,
                                t->sha256);
    }
  g_ptr_array_unref (d);
  return g_string_free (s, FALSE);
}

void
test_random_tokens (float *x, int n, int S, int V, guint64 seed)
{
  KernRng rng;
  kern_rng_init (&rng, seed, 1);
  for (int i = 0; i < n * (S + 1); i++)
    x[i] = (float) kern_rng_below (&rng, (guint64) V);
}

float *
test_noisy_params (KernModel *m, guint64 seed)
{
  gsize P = m->ops->n_params (m);
  float *w = g_new (float, P);
  m->ops->init (m, w, seed);
  KernRng rng;
  kern_rng_init (&rng, seed, 2);
  for (gsize i = 0; i < P; i++)
    w[i] += (float) (0.3 * kern_rng_normal (&rng));
  return w;
}

void
test_stages_match (KernModel *m, const float *params, const float *x, const int *y, int B,
                   int M, const int *counts, int n_stages)
{
  g_assert_true (M >= 1 && B % M == 0 && (M & (M - 1)) == 0);
  int n = B / M, d = m->d;
  gsize P = m->ops->n_params (m);
  KernStage **st = g_new (KernStage *, n_stages);
  float **act = g_new0 (float *, n_stages + 1), **dact = g_new0 (float *, n_stages + 1);
  int first = 0;
  for (int s = 0; s < n_stages; s++)
    {
      st[s] = kern_stage_new (m, first, first + counts[s] - 1, n, M, 1.0f / (float) B);
      g_assert_nonnull (st[s]);
      kern_stage_set_params (st[s], params);
      first += counts[s];
      /* boundary s + 1: every micro-batch's output of stage s */
      act[s + 1] = g_new (float, (gsize) B * MAX (st[s]->out_width, 1));
      dact[s + 1] = g_new (float, (gsize) B * MAX (st[s]->out_width, 1));
    }
  g_assert_cmpint (first, ==, m->n_layers);
  double *loss = g_new (double, M);
  for (int i = 0; i < M; i++)
    for (int s = 0; s < n_stages; s++)
      {
        gsize row = (gsize) i * n;
        const float *in = s == 0 ? x + row * d : act[s] + row * st[s]->in_width;
        float *out = s + 1 < n_stages ? act[s + 1] + row * st[s]->out_width : NULL;
        loss[i] = kern_stage_forward (st[s], i, in, x + row * d, y + row, out);
      }
  for (int i = 0; i < M; i++)
    for (int s = n_stages - 1; s >= 0; s--)
      {
        gsize row = (gsize) i * n;
        const float *dout = s + 1 < n_stages ? dact[s + 1] + row * st[s]->out_width : NULL;
        float *din = s > 0 ? dact[s] + row * st[s]->in_width : NULL;
        kern_stage_backward (st[s], i, dout, din);
      }
  float *got = g_new0 (float, P), *want = g_new0 (float, P), *g = g_new (float, P);
  for (int s = 0; s < n_stages; s++)
    kern_stage_take_grad (st[s], got);
  for (int i = 0; i < M; i++)
    {
      gsize row = (gsize) i * n;
      double l = m->ops->loss_grad (m, params, x + row * d, y + row, n, g);
      if (memcmp (&l, &loss[i], sizeof l) != 0)
        g_error ("stages: micro-batch %d of %d, %d stages: loss %a staged, %a whole", i, M,
                 n_stages, loss[i], l);
      for (gsize j = 0; j < P; j++)
        want[j] += g[j] * (1.0f / (float) M);
    }
  for (gsize j = 0; j < P; j++)
    if (memcmp (&got[j], &want[j], sizeof (float)) != 0)
      g_error ("stages: parameter %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT ": %a staged, "
               "%a whole", j, P, got[j], want[j]);
  for (int s = 0; s < n_stages; s++)
    {
      kern_stage_free (st[s]);
      g_free (act[s + 1]);
      g_free (dact[s + 1]);
    }
  g_free (st);
  g_free (act);
  g_free (dact);
  g_free (loss);
  g_free (got);
  g_free (want);
  g_free (g);
}

void
test_assert_same_runs (const TestRun *a, const TestRun *b)
{
  g_assert_cmpuint (a->metrics->len, ==, b->metrics->len);
  for (guint i = 0; i < a->metrics->len; i++)
    {
      const TestMetric *x = &g_array_index (a->metrics, TestMetric, i);
      const TestMetric *y = &g_array_index (b->metrics, TestMetric, i);
      g_assert_cmpmem (&x->loss, sizeof x->loss, &y->loss, sizeof y->loss);
      g_assert_cmpmem (&x->accuracy, sizeof x->accuracy, &y->accuracy, sizeof y->accuracy);
      g_assert_cmpfloat (x->t, ==, y->t);
    }
  g_assert_cmpmem (&a->sum.final_loss, sizeof (double), &b->sum.final_loss, sizeof (double));
  g_assert_cmpfloat (a->sum.sim_time, ==, b->sum.sim_time);
}
