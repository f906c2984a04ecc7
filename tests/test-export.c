/*
 * test-export.c — `dtsim export` (docs/analysis.md, docs/trace.md): the CSV
 * and JSON tables hold what the database holds, one row per run with the
 * swept keys as columns and throughput and scaling by their formulas; the
 * Perfetto timeline follows the trace event format's rules; hostile
 * databases and outputs are handled as the safety rules say.  The readers
 * (export, plot, report) cost the same number of queries whatever the number
 * of runs, and virtual machine steps linear in them.  A run of several jobs
 * gets a row per job with a job column; other traces get no such column.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#include "views/export.h"
#include "views/plot.h"
#include "views/report-html.h"
#include "views/tracedb.h"
#include "config/units.h"
#include "tests/json.h"
#include "tests/util.h"

static char *tmpdir;

#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

static const char sweep_ini[] =
  "[scenario]\nname = ex\nseed = 3\niterations = 4\n"
  "[cluster]\nworkers = 2\n"
  "[device]\nflops = 1GFLOPS\nstep_time = 1ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 256\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = allreduce\n"
  "[trace]\ndetail = spans\n"
  "[sweep]\ncluster.workers = 1, 2, 4\nmodel.lr = 0.1, 0.05\n";

static char *
path_in (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* Runs the sweep once into sweep.db; returns its path. */
static char *
sweep_db (void)
{
  char *db = path_in ("sweep.db");
  if (g_file_test (db, G_FILE_TEST_EXISTS))
    return db;
  g_autofree char *ini = path_in ("sweep.ini");
  g_assert_true (g_file_set_contents (ini, sweep_ini, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "sweep.ini", "-o", "sweep.db", "-q", NULL), ==, 0);
  return db;
}

/* RFC 4180 rows of `text`. */
static GPtrArray *
csv_rows (const char *text)
{
  GPtrArray *rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  GPtrArray *row = g_ptr_array_new_with_free_func (g_free);
  GString *cell = g_string_new (NULL);
  gboolean quoted = FALSE, any = FALSE;
  for (const char *c = text; *c; c++)
    {
      if (quoted)
        {
          if (*c == '"' && c[1] == '"')
            g_string_append_c (cell, *c++);
          else if (*c == '"')
            quoted = FALSE;
          else
            g_string_append_c (cell, *c);
          continue;
        }
      if (*c == '"')
        quoted = any = TRUE;
      else if (*c == ',')
        {
          g_ptr_array_add (row, g_string_free (cell, FALSE));
          cell = g_string_new (NULL);
        }
      else if (*c == '\r' && c[1] == '\n')
        {
          c++;
          g_ptr_array_add (row, g_string_free (cell, FALSE));
          cell = g_string_new (NULL);
          g_ptr_array_add (rows, row);
          row = g_ptr_array_new_with_free_func (g_free);
        }
      else
        {
          g_assert_true (*c != '\n' && *c != '\r'); /* line breaks only inside quotes */
          g_string_append_c (cell, *c);
        }
    }
  g_assert_false (quoted);
  g_assert_cmpuint (row->len, ==, 0); /* every row ends with CRLF */
  g_assert_cmpuint (cell->len, ==, 0);
  (void) any;
  g_string_free (cell, TRUE);
  g_ptr_array_unref (row);
  return rows;
}

static int
column (GPtrArray *header, const char *name)
{
  for (guint i = 0; i < header->len; i++)
    if (strcmp (g_ptr_array_index (header, i), name) == 0)
      return (int) i;
  g_error ("no column %s", name);
}

static double
cell_number (GPtrArray *row, int i)
{
  const char *s = g_ptr_array_index (row, i);
  return *s ? g_ascii_strtod (s, NULL) : NAN;
}

static double
run_number (const char *db, gint64 run, const char *what)
{
  g_autofree char *q = g_strdup_printf ("SELECT %s FROM runs WHERE id = %" G_GINT64_FORMAT, what,
                                        run);
  return test_query_number (db, q);
}

/* One row per run; the swept keys as columns; samples/s = updates x batch /
 * sim_time (all-reduce: every gradient is one worker's batch); scaling = (samples/s / W) over that of the run with the fewest
 * workers and the same lr. */
static void
test_csv (void)
{
  g_autofree char *db = sweep_db ();
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "export", "sweep.db", NULL), ==, 0);
  g_autoptr (GPtrArray) rows = csv_rows (o);
  g_assert_cmpuint (rows->len, ==, 1 + 6);
  GPtrArray *h = g_ptr_array_index (rows, 0);
  int id = column (h, "run"), st = column (h, "status"), w = column (h, "cluster.workers");
  int lr = column (h, "model.lr"), sim = column (h, "sim_time"), sps = column (h, "samples_per_s");
  int sc = column (h, "scaling_efficiency"), upd = column (h, "updates");
  g_assert_cmpint (id, ==, 0);
  g_assert_cmpint (w, <, sim); /* swept keys before the summary */
  for (guint r = 1; r < rows->len; r++)
    {
      GPtrArray *row = g_ptr_array_index (rows, r);
      g_assert_cmpuint (row->len, ==, h->len);
      gint64 run = (gint64) cell_number (row, id);
      g_assert_cmpint (run, ==, (gint64) r);
      g_assert_cmpstr (g_ptr_array_index (row, st), ==, "done");
      g_assert_cmpfloat (cell_number (row, sim), ==, run_number (db, run, "sim_time"));
      g_assert_cmpfloat (cell_number (row, upd), ==, run_number (db, run, "updates"));
      double want = cell_number (row, upd) * 8 / cell_number (row, sim);
      test_assert_close (cell_number (row, sps), want, 1e-12);
      /* the base: the fewest workers with the same lr */
      double base = NAN;
      for (guint b = 1; b < rows->len; b++)
        {
          GPtrArray *o2 = g_ptr_array_index (rows, b);
          if (strcmp (g_ptr_array_index (o2, lr), g_ptr_array_index (row, lr)) == 0
              && cell_number (o2, w) == 1)
            base = cell_number (o2, sps);
        }
      test_assert_close (cell_number (row, sc),
                         cell_number (row, sps) / cell_number (row, w) / base, 1e-12);
    }
}

/* The same rows as JSON: numbers as numbers, missing values null. */
static void
test_json (void)
{
  g_autofree char *db = sweep_db ();
  g_autofree char *o = NULL, *e = NULL, *co = NULL;
  g_assert_cmpint (dtsim (&o, &e, "export", "sweep.db", "--format", "json", NULL), ==, 0);
  g_assert_cmpint (dtsim (&co, &e, "export", "sweep.db", "--format", "csv", NULL), ==, 0);
  g_autofree char *err = NULL;
  TjNode *doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  g_assert_cmpint (doc->type, ==, TJ_ARRAY);
  g_autoptr (GPtrArray) rows = csv_rows (co);
  g_assert_cmpuint (doc->items->len, ==, rows->len - 1);
  GPtrArray *h = g_ptr_array_index (rows, 0);
  for (guint i = 0; i < doc->items->len; i++)
    {
      const TjNode *r = g_ptr_array_index (doc->items, i);
      GPtrArray *row = g_ptr_array_index (rows, i + 1);
      g_assert_cmpuint (r->keys->len, ==, h->len); /* the CSV's columns, in its order */
      for (guint k = 0; k < h->len; k++)
        {
          g_assert_cmpstr (g_ptr_array_index (r->keys, k), ==, g_ptr_array_index (h, k));
          const TjNode *v = g_ptr_array_index (r->items, k);
          const char *c = g_ptr_array_index (row, k);
          if (v->type == TJ_NUMBER)
            g_assert_cmpfloat (v->number, ==, g_ascii_strtod (c, NULL));
          else if (v->type == TJ_STRING)
            g_assert_cmpstr (v->string, ==, c);
          else
            {
              g_assert_cmpint (v->type, ==, TJ_NULL);
              g_assert_cmpstr (c, ==, "");
            }
        }
      g_assert_cmpint (tj_get (r, "cluster.workers")->type, ==, TJ_NUMBER);
      g_assert_cmpint (tj_get (r, "final_loss")->type, ==, TJ_NUMBER);
      g_assert_cmpint (tj_get (r, "error")->type, ==, TJ_NULL);
    }
  tj_free (doc);
}

/* Checks a trace event file against the format's rules and returns its
 * events; counts slices (B) and flows. */
static TjNode *
check_trace_events (const char *text, int *slices, int *flows)
{
  g_autofree char *err = NULL;
  TjNode *doc = tj_parse (text, strlen (text), &err);
  if (!doc)
    g_error ("not JSON: %s", err);
  const TjNode *ev = tj_get (doc, "traceEvents");
  g_assert_nonnull (ev);
  g_assert_cmpint (ev->type, ==, TJ_ARRAY);
  g_autoptr (GHashTable) stacks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                         (GDestroyNotify) g_ptr_array_unref);
  g_autoptr (GHashTable) last_ts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GHashTable) starts = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                                         g_free);
  g_autoptr (GHashTable) finished = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                                           NULL);
  *slices = *flows = 0;
  for (guint i = 0; i < ev->items->len; i++)
    {
      const TjNode *e = g_ptr_array_index (ev->items, i);
      const char *ph = tj_string (e, "ph");
      g_assert_nonnull (ph);
      g_assert_true (strlen (ph) == 1 && strchr ("BEMsfC", ph[0]));
      double pid = tj_number (e, "pid"), tid = tj_number (e, "tid");
      g_assert_true (isfinite (pid) && isfinite (tid));
      if (ph[0] == 'M')
        {
          g_assert_nonnull (tj_get (e, "args"));
          continue;
        }
      double ts = tj_number (e, "ts");
      g_assert_true (isfinite (ts) && ts >= 0); /* microseconds of simulated time */
      if (ph[0] == 'C')
        {
          g_assert_nonnull (tj_string (e, "name"));
          continue;
        }
      g_autofree char *track = g_strdup_printf ("%.0f/%.0f", pid, tid);
      double *last = g_hash_table_lookup (last_ts, track);
      if (last)
        g_assert_cmpfloat (ts, >=, *last); /* time order within a track */
      g_hash_table_insert (last_ts, g_strdup (track), g_memdup2 (&ts, sizeof ts));
      if (ph[0] == 's' || ph[0] == 'f')
        {
          gint64 id = (gint64) tj_number (e, "id");
          if (ph[0] == 's')
            {
              g_assert_false (g_hash_table_contains (starts, &id));
              g_hash_table_insert (starts, g_memdup2 (&id, sizeof id),
                                   g_memdup2 (&ts, sizeof ts));
              (*flows)++;
            }
          else
            {
              double *s = g_hash_table_lookup (starts, &id);
              g_assert_nonnull (s); /* an f follows its s */
              g_assert_cmpfloat (ts, >=, *s);
              g_assert_false (g_hash_table_contains (finished, &id));
              g_hash_table_add (finished, g_memdup2 (&id, sizeof id));
            }
          continue;
        }
      GPtrArray *stack = g_hash_table_lookup (stacks, track);
      if (!stack)
        {
          stack = g_ptr_array_new_with_free_func (g_free);
          g_hash_table_insert (stacks, g_strdup (track), stack);
        }
      if (ph[0] == 'B')
        {
          g_assert_nonnull (tj_string (e, "name"));
          g_ptr_array_add (stack, g_strdup (tj_string (e, "name")));
          (*slices)++;
        }
      else
        {
          g_assert_cmpuint (stack->len, >, 0); /* every E closes a B */
          g_ptr_array_remove_index (stack, stack->len - 1);
        }
    }
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, stacks);
  while (g_hash_table_iter_next (&it, &k, &v))
    g_assert_cmpuint (((GPtrArray *) v)->len, ==, 0); /* every B has its E */
  g_assert_cmpuint (g_hash_table_size (finished), ==, g_hash_table_size (starts));
  return doc;
}

/* A pipeline with messages: forward and backward slices with their
 * micro-batch and layers, stage names, one slice per span, two per message
 * with a flow between, stash counters back at 0. */
static void
test_perfetto (void)
{
  g_autofree char *ini = g_build_filename (g_getenv ("DTSIM_SRCDIR"), "scenarios",
                                           "pipeline.ini", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", "pl.db", "-q", "--set",
                          "trace.detail=messages", NULL), ==, 0);
  g_autofree char *db = path_in ("pl.db");
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "export", "pl.db", "--format", "perfetto", "--run", "2",
                          "-o", "pl.json", NULL), ==, 0);
  g_assert_cmpstr (o, ==, "");
  g_autofree char *json = path_in ("pl.json");
  g_autofree char *text = test_read_file (json, NULL);
  int slices, flows;
  TjNode *doc = check_trace_events (text, &slices, &flows);
  double spans = test_query_number (db, "SELECT COUNT(*) FROM spans WHERE run_id = 2");
  double msgs = test_query_number (db, "SELECT COUNT(*) FROM messages WHERE run_id = 2");
  g_assert_cmpfloat (spans, >, 0);
  g_assert_cmpfloat (msgs, >, 0);
  /* a slice per span, two per message (sender, receiver), one per link of
   * its route */
  double hops = test_query_number (db, "SELECT SUM(length(route) - length(replace(route, ' ',"
                                       " '')) + 1) FROM messages WHERE run_id = 2 AND route IS"
                                       " NOT NULL");
  g_assert_cmpfloat (hops, >=, msgs);
  g_assert_cmpint (slices, ==, (int) (spans + 2 * msgs + hops));
  g_assert_cmpint (flows, ==, (int) msgs);
  const TjNode *ev = tj_get (doc, "traceEvents");
  int fwd = 0, bwd = 0, stage_names = 0, stash = 0, link_tracks = 0, util = 0;
  g_autoptr (GHashTable) stash_last = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < ev->items->len; i++)
    {
      const TjNode *x = g_ptr_array_index (ev->items, i);
      const char *ph = tj_string (x, "ph"), *name = tj_string (x, "name");
      g_assert_cmpfloat (tj_number (x, "pid"), ==, 2);
      if (ph[0] == 'B' && (strcmp (name, "forward") == 0 || strcmp (name, "backward") == 0))
        {
          const TjNode *args = tj_get (x, "args");
          g_assert_true (isfinite (tj_number (args, "microbatch")));
          g_assert_cmpfloat (tj_number (args, "first_layer"), <=, tj_number (args, "last_layer"));
          g_assert_true (isfinite (tj_number (args, "iteration")));
          *(name[0] == 'f' ? &fwd : &bwd) += 1;
        }
      if (ph[0] == 'M' && strcmp (name, "thread_name") == 0
          && strstr (tj_string (tj_get (x, "args"), "name"), "(stage "))
        stage_names++;
      if (ph[0] == 'M' && strcmp (name, "thread_name") == 0
          && g_str_has_prefix (tj_string (tj_get (x, "args"), "name"), "link "))
        link_tracks++;
      if (ph[0] == 'C' && g_str_has_suffix (name, " utilisation"))
        {
          g_assert_cmpfloat (tj_number (tj_get (x, "args"), "%"), >=, 0);
          util++;
        }
      if (ph[0] == 'C' && g_str_has_suffix (name, " stash"))
        {
          double n = tj_number (tj_get (x, "args"), "micro-batches");
          g_assert_cmpfloat (n, >=, 0);
          g_hash_table_insert (stash_last, (gpointer) name, GINT_TO_POINTER ((int) n + 1));
          stash++;
        }
    }
  double computes = test_query_number (db, "SELECT COUNT(*) FROM spans WHERE run_id = 2 AND"
                                           " kind = 'compute' AND phase IS NOT NULL");
  g_assert_cmpint (fwd + bwd, ==, (int) computes);
  g_assert_cmpint (fwd, ==, bwd);
  g_assert_cmpfloat (stage_names, ==,
                     test_query_number (db, "SELECT COUNT(*) FROM stages WHERE run_id = 2"));
  g_assert_cmpint (stash, >, 0);
  /* every link the messages crossed has its track and its use */
  g_assert_cmpint (link_tracks, >=,
                   (int) test_query_number (db, "SELECT COUNT(*) FROM links WHERE run_id = 2"));
  g_assert_cmpint (util, >, 0);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, stash_last);
  while (g_hash_table_iter_next (&it, &k, &v))
    g_assert_cmpint (GPOINTER_TO_INT (v), ==, 1); /* every stash empties by the end */
  tj_free (doc);
}

/* A copy of the sweep's database, `name` in tmpdir, changed by `sql`. */
static void
hostile_copy (const char *name, const char *sql)
{
  g_autofree char *db = sweep_db ();
  g_autofree char *copy = path_in (name);
  g_autofree char *bytes = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (db, &bytes, &len, NULL));
  g_assert_true (g_file_set_contents (copy, bytes, (gssize) len, NULL));
  sqlite3 *h = NULL;
  g_assert_cmpint (sqlite3_open (copy, &h), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (h, sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (h);
}

/* Text a spreadsheet would run, control characters, quotes and commas in a
 * database's names and params: quoted, ' before a formula, valid JSON. */
static void
test_hostile_text (void)
{
  hostile_copy ("hostile.db", "UPDATE runs SET name = '=HYPERLINK(\"http://x\",\"a,b\")'"
                              " || char(10) || 'line' WHERE id = 1;"
                              "UPDATE params SET value = '@SUM(1)' || char(27) || '[1m'"
                              " WHERE key = 'model.lr' AND run_id = 2;"
                              "UPDATE runs SET error = '-2+3' WHERE id = 3;");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "export", "hostile.db", NULL), ==, 0);
  g_autoptr (GPtrArray) rows = csv_rows (o);
  GPtrArray *h0 = g_ptr_array_index (rows, 0), *r1 = g_ptr_array_index (rows, 1);
  GPtrArray *r2 = g_ptr_array_index (rows, 2), *r3 = g_ptr_array_index (rows, 3);
  g_assert_cmpstr (g_ptr_array_index (r1, column (h0, "name")), ==,
                   "'=HYPERLINK(\"http://x\",\"a,b\") line");
  g_assert_cmpstr (g_ptr_array_index (r2, column (h0, "model.lr")), ==, "'@SUM(1) [1m");
  g_assert_cmpstr (g_ptr_array_index (r3, column (h0, "error")), ==, "'-2+3");
  g_assert_null (strchr (o, 27));
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "export", "hostile.db", "--format", "json", NULL), ==, 0);
  g_autofree char *err = NULL;
  TjNode *doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  const TjNode *first = g_ptr_array_index (doc->items, 0);
  g_assert_cmpstr (tj_string (first, "name"), ==, "=HYPERLINK(\"http://x\",\"a,b\") line");
  tj_free (doc);
  g_clear_pointer (&o, g_free);
  g_assert_cmpint (dtsim (&o, &e, "export", "hostile.db", "--format", "perfetto", NULL), ==, 0);
  int slices, flows;
  tj_free (check_trace_events (o, &slices, &flows));
}

/* Bad input: one line, exit 2, nothing written, a file at -o unchanged; -o
 * never replaces the database, and replaces a symlink without following it. */
static void
test_bad_input (void)
{
  g_autofree char *db = sweep_db ();
  g_autofree char *keep = path_in ("keep.csv");
  g_assert_true (g_file_set_contents (keep, "precious\n", -1, NULL));
  g_autofree char *notes = path_in ("notes.txt");
  g_assert_true (g_file_set_contents (notes, "not a database\n", -1, NULL));
  struct {
    const char *args[8];
    const char *says;
  } cases[] = {
    { { "export", "notes.txt", "-o", "keep.csv", NULL }, "not a SQLite database" },
    { { "export", "missing.db", "-o", "keep.csv", NULL }, "no such trace database" },
    { { "export", "sweep.db", "--format", "xml", "-o", "keep.csv", NULL }, "use csv, json or perfetto" },
    { { "export", "sweep.db", "--run", "99", "-o", "keep.csv", NULL }, "has no run 99" },
    { { "export", "sweep.db", "-o", "sweep.db", NULL }, "is the database being read" },
    { { "export", "sweep.db", "-o", "no-such-dir/x.csv", NULL }, "its folder does not exist" },
    { { "export", "sweep.db", "-o", ".", NULL }, "is a folder" },
  };
  g_autofree char *before = test_read_file (db, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *o = NULL, *e = NULL;
      g_assert_cmpint (test_run_dtsim_argv (tmpdir, &o, &e, cases[i].args), ==, 2);
      if (!strstr (e, cases[i].says))
        g_error ("case %zu: '%s' lacks '%s'", i, e, cases[i].says);
      g_assert_cmpint ((int) (strchr (e, '\n') - e), ==, (int) strlen (e) - 1); /* one line */
      g_autofree char *k = test_read_file (keep, NULL);
      g_assert_cmpstr (k, ==, "precious\n");
      g_assert_cmpuint (test_count_entries (tmpdir, ".keep.csv."), ==, 0);
    }
  g_autofree char *after = test_read_file (db, NULL);
  g_assert_true (strcmp (before, after) == 0);
  /* a symlink at -o is replaced by the file, its target left alone */
  g_autofree char *target = path_in ("target.txt");
  g_autofree char *link = path_in ("link.csv");
  g_assert_true (g_file_set_contents (target, "target\n", -1, NULL));
  g_assert_cmpint (symlink (target, link), ==, 0);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "export", "sweep.db", "-o", "link.csv", NULL), ==, 0);
  g_assert_false (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
  g_autofree char *t = test_read_file (target, NULL);
  g_assert_cmpstr (t, ==, "target\n");
  g_autofree char *l = test_read_file (link, NULL);
  g_assert_true (g_str_has_prefix (l, "run,name,status"));
}

/* Chromium, Debian's `chromium`; NULL when absent. */
static char *
chromium (void)
{
  char *c = g_find_program_in_path ("chromium");
  return c ? c : g_find_program_in_path ("chromium-browser");
}

/* Runs headless Chromium on `url` with `what` (e.g. --dump-dom); returns
 * its stdout, and its stderr in *err. */
static char *
headless (const char *bin, const char *what, const char *url, char **err)
{
  g_autofree char *profile = path_in ("chromium-profile");
  g_autofree char *dir_arg = g_strdup_printf ("--user-data-dir=%s", profile);
  const char *argv[] = { bin, "--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                         dir_arg, "--enable-logging=stderr", "--v=0",
                         "--window-size=1200,2400", what, url, NULL };
  char *o = NULL;
  int status = -1;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (tmpdir, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &o, err,
                               &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  return o;
}

/* dtsim report: one HTML file needing nothing else (a policy that loads
 * nothing and runs nothing, the figures inside it), holding the run table;
 * a real browser loads it with no console message and draws it. */
static void
test_report (void)
{
  g_autofree char *db = sweep_db ();
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "report", "sweep.db", NULL), ==, 0);
  g_autofree char *html = path_in ("sweep.html");
  g_assert_cmpstr (g_strstrip (o), ==, "sweep.html"); /* the path, as given */
  g_autofree char *page = test_read_file (html, NULL);
  g_assert_true (g_str_has_prefix (page, "<!DOCTYPE html>"));
  g_assert_nonnull (strstr (page, "Content-Security-Policy\" content=\"default-src 'none'; "
                                  "img-src data:"));
  g_assert_null (strstr (page, "<script"));
  g_assert_null (strstr (page, "http:"));
  g_assert_null (strstr (page, "https:"));
  g_assert_nonnull (strstr (page, "<table id=\"runs\">"));
  g_assert_nonnull (strstr (page, "<img alt=\"Training loss against simulated time\" "
                                  "src=\"data:image/svg+xml;base64,"));
  g_assert_nonnull (strstr (page, "<figure id=\"fig-timeline-run1\">"));
  g_autofree char *bin = chromium ();
  if (!bin)
    {
      /* CI installs it (bootstrap.sh): there this is a failure */
      if (g_getenv ("CI"))
        g_error ("chromium is not installed; bootstrap.sh installs it");
      g_test_skip ("chromium is not installed (apt-get install chromium)");
      return;
    }
  g_autofree char *url = g_strdup_printf ("file://%s", html);
  g_autofree char *shot = path_in ("screenshot.png");
  g_autofree char *shot_arg = g_strdup_printf ("--screenshot=%s", shot);
  g_autofree char *err = NULL, *err2 = NULL;
  g_autofree char *out = headless (bin, shot_arg, url, &err);
  if (strstr (err, ":CONSOLE"))
    g_error ("the page logged to the console: %s", err);
  gsize len = 0;
  g_autofree char *png = NULL;
  g_assert_true (g_file_get_contents (shot, &png, &len, NULL));
  g_assert_cmpuint (len, >, 10000);
  g_assert_true (memcmp (png, "\x89PNG", 4) == 0);
  /* the DOM the browser built holds the run table: one row per run, with
   * each run's simulated time as the database has it */
  g_autofree char *dom = headless (bin, "--dump-dom", url, &err2);
  g_assert_null (strstr (err2, ":CONSOLE"));
  const char *table = strstr (dom, "<table id=\"runs\">");
  g_assert_nonnull (table);
  for (gint64 run = 1; run <= 6; run++)
    {
      g_autofree char *cell = g_strdup_printf ("<td class=\"n\">%.6g</td>",
                                               run_number (db, run, "sim_time"));
      if (!strstr (table, cell))
        g_error ("run %" G_GINT64_FORMAT ": %s not in the page's table", run, cell);
    }
}

/* A database's text reaches the page as text: escaped, never markup. */
static void
test_report_hostile (void)
{
  hostile_copy ("evil.db", "UPDATE runs SET status = 'failed', error ="
                           " '<script>alert(1)</script><img src=x onerror=alert(2)>'"
                           " WHERE id = 2; UPDATE params SET value ="
                           " '\"><script>x</script>' WHERE key = 'model.lr' AND run_id = 3;");
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "report", "evil.db", "-o", "evil.html", NULL), ==, 0);
  g_autofree char *html = path_in ("evil.html");
  g_autofree char *page = test_read_file (html, NULL);
  g_assert_null (strstr (page, "<script"));
  g_assert_null (strstr (page, "<img src=x"));
  g_assert_nonnull (strstr (page, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  g_assert_nonnull (strstr (page, "&quot;&gt;&lt;script&gt;x"));
  /* not a database: one line, exit 2, no page */
  g_autofree char *notes = path_in ("notes.txt");
  g_assert_true (g_file_set_contents (notes, "text\n", -1, NULL));
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "report", "notes.txt", "-o", "n.html", NULL), ==, 2);
  g_assert_nonnull (strstr (e, "not a SQLite database"));
  g_autofree char *nh = path_in ("n.html");
  g_assert_false (g_file_test (nh, G_FILE_TEST_EXISTS));
}

/* The text of the page's first paragraph (tags removed). */
static char *
lead_text (const char *page)
{
  const char *a = strstr (page, "<p class=\"lead\" id=\"answer\">");
  g_assert_nonnull (a);
  const char *b = strstr (a, "</p>");
  g_assert_nonnull (b);
  GString *t = g_string_new (NULL);
  gboolean tag = FALSE;
  for (const char *c = a; c < b; c++)
    {
      if (*c == '<')
        tag = TRUE;
      else if (*c == '>')
        tag = FALSE;
      else if (!tag)
        g_string_append_c (t, *c);
    }
  return g_string_free (t, FALSE);
}

/* How many times `needle` occurs in `hay`. */
static guint
occurrences (const char *hay, const char *needle)
{
  guint n = 0;
  for (const char *c = strstr (hay, needle); c; c = strstr (c + 1, needle))
    n++;
  return n;
}

/* The report's first paragraph names the best run by time per iteration
 * (sim_time / iterations, the first of equals) with its label, the keys
 * that differ; it draws the timelines of at most the baseline, the best
 * and the worst, and says how to draw the others. */
static void
test_report_answer (void)
{
  g_autofree char *db = sweep_db ();
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "report", "sweep.db", "-o", "answer.html", NULL), ==, 0);
  g_autofree char *html = path_in ("answer.html");
  g_autofree char *page = test_read_file (html, NULL);
  /* the title is [scenario] name */
  g_assert_nonnull (strstr (page, "<h1>ex</h1>"));
  gint64 n = (gint64) test_query_number (db, "SELECT COUNT(*) FROM runs");
  g_assert_cmpint (n, ==, 6);
  gint64 best = 0;
  double lowest = INFINITY;
  for (gint64 run = 1; run <= n; run++)
    {
      double per = run_number (db, run, "sim_time / iterations");
      if (per < lowest)
        {
          lowest = per;
          best = run;
        }
    }
  g_autofree char *q_w = g_strdup_printf ("SELECT value FROM params WHERE run_id = %"
                                          G_GINT64_FORMAT " AND key = 'cluster.workers'", best);
  g_autofree char *q_lr = g_strdup_printf ("SELECT value FROM params WHERE run_id = %"
                                           G_GINT64_FORMAT " AND key = 'model.lr'", best);
  g_autofree char *label = g_strdup_printf ("workers=%g lr=%g (run %" G_GINT64_FORMAT ")",
                                            test_query_number (db, q_w),
                                            test_query_number (db, q_lr), best);
  g_autofree char *lead = lead_text (page);
  const char *answer = strstr (lead, "Answer: ");
  g_assert_nonnull (answer);
  if (!g_str_has_prefix (answer + strlen ("Answer: "), label))
    g_error ("the answer does not start with the best run '%s': %s", label, lead);
  g_assert_nonnull (strstr (lead, "per iteration"));
  /* at most 3 timelines (baseline, best, worst) of the 6 runs with spans,
   * the baseline among them, and a line on drawing the others */
  guint shown = occurrences (page, "<figure id=\"fig-timeline-run");
  g_assert_cmpuint (shown, >=, 1);
  g_assert_cmpuint (shown, <=, 3);
  g_assert_nonnull (strstr (page, "<figure id=\"fig-timeline-run1\">"));
  g_autofree char *best_fig = g_strdup_printf ("<figure id=\"fig-timeline-run%" G_GINT64_FORMAT
                                               "\">", best);
  g_assert_nonnull (strstr (page, best_fig));
  g_autofree char *more = g_strdup_printf ("The timelines of the %" G_GINT64_FORMAT " other runs",
                                           n - shown);
  g_assert_nonnull (strstr (page, more));
  g_assert_nonnull (strstr (page, "dtsim plot sweep.db -o DIR"));
}

/* A joint sweep whose first key never changes (policy.kind/policy.algorithm
 * = allreduce/ring, allreduce/tree): the runs are labelled by the algorithm
 * only, in the first paragraph, the table and the figures' keys. */
static void
test_report_labels (void)
{
  g_autofree char *text = test_replaced (sweep_ini, "model.lr = 0.1, 0.05\n",
                                         "policy.kind/policy.algorithm = allreduce/ring,"
                                         " allreduce/tree\n");
  g_autofree char *ini = path_in ("joint.ini");
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "joint.ini", "-o", "joint.db", "-q", NULL), ==, 0);
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "report", "joint.db", NULL), ==, 0);
  g_autofree char *html = path_in ("joint.html");
  g_autofree char *page = test_read_file (html, NULL);
  g_autofree char *lead = lead_text (page);
  g_assert_nonnull (strstr (lead, "differing in workers and algorithm"));
  g_assert_nonnull (strstr (lead, " algorithm="));
  g_assert_null (strstr (lead, "kind"));
  g_assert_null (strstr (lead, "policy."));
  g_assert_nonnull (strstr (page, "<th title=\"policy.algorithm\">algorithm</th>"));
  g_assert_null (strstr (page, "<th title=\"policy.kind\">"));
  /* the figures say the same: the loss figure's key, read in its SVG */
  const char *img = strstr (page, "<figure id=\"fig-loss-time\">");
  g_assert_nonnull (img);
  const char *b64 = strstr (img, "base64,") + strlen ("base64,");
  g_autofree char *enc = g_strndup (b64, strcspn (b64, "\""));
  gsize len = 0;
  g_autofree guchar *svg = g_base64_decode (enc, &len);
  g_autofree char *svgs = g_strndup ((const char *) svg, len);
  g_assert_nonnull (strstr (svgs, "algorithm=tree"));
  g_assert_null (strstr (svgs, "kind="));
  g_assert_null (strstr (svgs, "allreduce/"));
}

/* The width in px of the SVG `svg` (its width attribute). */
static double
svg_width (const char *svg)
{
  const char *w = strstr (svg, " width=\"");
  g_assert_nonnull (w);
  return g_ascii_strtod (w + strlen (" width=\""), NULL);
}

/* The shipped straggler study with spans (24 runs): a page of bounded size
 * (the figures inline, 3 timelines, not 24) whose figures fit a page's
 * width. */
static void
test_report_size (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *ini = g_build_filename (src, "scenarios", "stragglers.ini", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "--set", "trace.detail=spans", "-o",
                          "stragglers.db", "-q", NULL), ==, 0);
  g_clear_pointer (&o, g_free);
  g_clear_pointer (&e, g_free);
  g_assert_cmpint (dtsim (&o, &e, "report", "stragglers.db", NULL), ==, 0);
  g_autofree char *html = path_in ("stragglers.html");
  gsize size = 0;
  g_autofree char *page = test_read_file (html, &size);
  /* 24 timelines of 24 runs made it 9 MB; 3 of them and thinned CDFs
   * keep it under 2 MiB */
  g_assert_cmpuint (size, <, 2 << 20);
  g_assert_cmpuint (occurrences (page, "<figure id=\"fig-timeline-run"), <=, 3);
  /* every figure at most 1000 px wide, the breakdown of 24 bars among them */
  guint figures = 0;
  gboolean breakdown = FALSE;
  for (const char *f = strstr (page, "<figure id=\"fig-"); f; f = strstr (f + 1, "<figure id=\"fig-"))
    {
      const char *b64 = strstr (f, "base64,") + strlen ("base64,");
      g_autofree char *enc = g_strndup (b64, strcspn (b64, "\""));
      gsize len = 0;
      g_autofree guchar *svg = g_base64_decode (enc, &len);
      g_autofree char *svgs = g_strndup ((const char *) svg, len);
      double w = svg_width (svgs);
      if (w > 1000)
        g_error ("figure %.30s is %g px wide", f + strlen ("<figure id=\""), w);
      breakdown = breakdown || g_str_has_prefix (f, "<figure id=\"fig-breakdown\"");
      figures++;
    }
  g_assert_true (breakdown);
  g_assert_cmpuint (figures, >=, 4);
}

/* A timing-only sweep of 2 x `n` points into `name`; returns its path. */
static char *
timing_sweep (const char *name, int n)
{
  GString *serial = g_string_new (NULL);
  for (int i = 1; i <= n; i++)
    g_string_append_printf (serial, "%s%dus", i > 1 ? ", " : "", i);
  g_autofree char *text
    = g_strdup_printf ("[scenario]\nname = big\nseed = 1\niterations = 2\n"
                       "[cluster]\nworkers = 2\n"
                       "[device]\nflops = 15TFLOPS\nefficiency = 0.5\n"
                       "[network]\ntopology = star\nbandwidth = 100Gbps\n"
                       "[model]\nkind = timing\nparams = 1000000\nflops = 1e9\nbatch = 32\n"
                       "[policy]\nkind = allreduce\nalgorithm = ring\n"
                       "[kernels]\nbackend = none\n"
                       "[trace]\ndetail = iterations\n"
                       "[sweep]\ndevice.serial_time = %s\nnetwork.latency = 1us, 2us\n",
                       serial->str);
  g_string_free (serial, TRUE);
  g_autofree char *ini_name = g_strconcat (name, ".ini", NULL);
  g_autofree char *ini = path_in (ini_name);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  char *db = path_in (name);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  return db;
}

static void
sink_figure (gpointer ctx, const char *figure G_GNUC_UNUSED, const char *path G_GNUC_UNUSED,
             const char *digest G_GNUC_UNUSED)
{
  (*(int *) ctx)++;
}

static void
sink_line (gpointer ctx G_GNUC_UNUSED, const char *a G_GNUC_UNUSED, const char *b G_GNUC_UNUSED)
{
}

static void
sink_note (gpointer ctx G_GNUC_UNUSED, const char *line G_GNUC_UNUSED)
{
}

/* The statements and VM steps that export (csv, json), plot and report run
 * on `db`, in cost[0..3] and steps[0..3]. */
static void
reader_costs (const char *db, guint64 *cost, guint64 *steps)
{
  g_autofree char *csv = path_in ("cost.csv"), *json = path_in ("cost.json");
  g_autofree char *html = path_in ("cost.html"), *figs = path_in ("cost-figures");
  int drawn = 0;
  SimPlotSink sink = { sink_figure, sink_line, sink_note, &drawn, NULL };
  for (int k = 0; k < 4; k++)
    {
      guint64 s0, v0, s1, v1;
      g_autoptr (GError) err = NULL;
      sim_tracedb_counts (&s0, &v0);
      int code = k == 0 ? sim_export (db, "csv", csv, 0, &err)
                 : k == 1 ? sim_export (db, "json", json, 0, &err)
                 : k == 2 ? sim_plot_to (db, figs, "svg", &sink, &err)
                 : sim_report_html (db, html, &err);
      g_assert_no_error (err);
      g_assert_cmpint (code, ==, 0);
      sim_tracedb_counts (&s1, &v1);
      cost[k] = s1 - s0;
      steps[k] = v1 - v0;
    }
  /* the plot drew something (iteration-cdf and breakdown) */
  g_assert_cmpint (drawn, >=, 2);
}

/* Twice the runs: the same number of queries (a constant per table, none
 * per run or per key) and at most 2.2 times the VM steps (linear, with room
 * for an n log n sort), where one query per run and key made them grow with
 * the square of the runs. */
static void
test_readers_linear (void)
{
  const int n = 60;
  g_autofree char *small = timing_sweep ("lin1.db", n), *large = timing_sweep ("lin2.db", 2 * n);
  guint64 cost1[4], steps1[4], cost2[4], steps2[4];
  reader_costs (small, cost1, steps1);
  reader_costs (large, cost2, steps2);
  const char *what[] = { "csv", "json", "plot", "report" };
  for (int k = 0; k < 4; k++)
    {
      g_test_message ("%s: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " statements, %"
                      G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT " VM steps", what[k], cost1[k],
                      cost2[k], steps1[k], steps2[k]);
      g_assert_cmpuint (cost1[k], >, 0);
      g_assert_cmpuint (cost2[k], ==, cost1[k]);
      g_assert_cmpfloat ((double) steps2[k], <=, 2.2 * (double) steps1[k]);
    }
}

/* --- throughput of every policy ------------------------------------------ */

/* One policy's scenario and the samples its run trains on, in closed form:
 * what the run table, --json and both exports must divide by sim_time. */
typedef struct {
  const char *name;
  const char *policy;         /* the [policy] section's lines */
  double (*samples) (void);   /* NAN: the policy trains nothing */
} Throughput;

/* The shared part of the scenarios: I iterations, W workers, B samples a
 * batch, N training samples. */
enum { TP_I = 3, TP_W = 4, TP_B = 8, TP_N = 256 };

static const char tp_base[] =
  "[scenario]\nname = tp\nseed = 3\niterations = 3\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\n"
  "[model]\nkind = mlp\nhidden = 16\nfeatures = 15\nclasses = 4\nsamples = 256\n"
  "test_samples = 64\nbatch = 8\n"
  "[policy]\n";

/* PS (every consistency), all-reduce, local SGD, gossip, Hogwild: the run
 * ends after I x W gradients, each of one worker's batch of B samples. */
static double
tp_per_gradient (void)
{
  return (double) TP_I * TP_W * TP_B;
}

/* FedAvg, fraction 1/2, 2 local epochs: each round, W/2 clients each take
 * ceil(2 x (N / W) / B) local steps of B samples. */
static double
tp_fedavg (void)
{
  return (double) TP_I * (TP_W / 2) * ceil (2.0 * (TP_N / TP_W) / TP_B) * TP_B;
}

/* Pipeline, 2 stages x 2 replicas, 4 micro-batches of B / 4: per iteration
 * replicas x micro-batches x micro-batch size samples, each once however
 * many stages it crosses. */
static double
tp_pipeline (void)
{
  return (double) TP_I * 2 * 4 * (TP_B / 4);
}

static double
tp_none (void)
{
  return NAN;
}

static const Throughput throughputs[] = {
  { "ps-bsp", "kind = ps\nconsistency = bsp\n", tp_per_gradient },
  { "ps-ssp", "kind = ps\nconsistency = ssp\nstaleness = 2\n", tp_per_gradient },
  { "ps-async", "kind = ps\nconsistency = async\n", tp_per_gradient },
  { "allreduce", "kind = allreduce\n", tp_per_gradient },
  { "local-sgd", "kind = local-sgd\nsync_every = 2\n", tp_per_gradient },
  { "gossip", "kind = gossip\n", tp_per_gradient },
  { "hogwild", "kind = hogwild\n", tp_per_gradient },
  { "fedavg", "kind = fedavg\nfraction = 0.5\nlocal_epochs = 2\n", tp_fedavg },
  { "pipeline", "kind = pipeline\nstages = 2\nreplicas = 2\nmicrobatches = 4\n", tp_pipeline },
  { "collective", "kind = collective\nsize = 1MB\n", tp_none },
};

/* The field of the table's first run row under the header `title` (the
 * columns are right-aligned: the field ends where the title ends); "" when
 * the header has no such column. */
static char *
table_field (const char *out, const char *title)
{
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  g_assert_nonnull (lines[0]);
  g_assert_nonnull (lines[1]);
  const char *at = strstr (lines[0], title);
  if (!at)
    return g_strdup ("");
  gsize end = (gsize) (at - lines[0]) + strlen (title);
  g_assert_cmpuint (strlen (lines[1]), >=, end);
  gsize start = end;
  while (start > 0 && lines[1][start - 1] != ' ')
    start--;
  return g_strndup (lines[1] + start, end - start);
}

/* A run's JSON object (of --json or of the JSON export) gives samples_per_s
 * = want / its sim_time, or null where want is NAN (nothing trained). */
static void
assert_json_throughput (const TjNode *r, double want)
{
  const TjNode *sps = tj_get (r, "samples_per_s");
  g_assert_nonnull (sps);
  if (isnan (want))
    g_assert_cmpint (sps->type, ==, TJ_NULL);
  else
    test_assert_close (sps->number, want / tj_number (r, "sim_time"), 1e-12);
}

/* samples/s = the closed form's samples / sim_time in the run table, the
 * JSON of --json, and the CSV and JSON exports; no figure where the policy
 * trains nothing. */
static void
test_throughput (gconstpointer data)
{
  const Throughput *tp = data;
  g_autofree char *ini_name = g_strdup_printf ("tp-%s.ini", tp->name);
  g_autofree char *db_name = g_strdup_printf ("tp-%s.db", tp->name);
  g_autofree char *ini = path_in (ini_name), *db = path_in (db_name);
  g_autofree char *text = g_strconcat (tp_base, tp->policy, NULL);
  g_assert_true (g_file_set_contents (ini, text, -1, NULL));
  double want = tp->samples ();

  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", ini_name, "-o", db_name, NULL), ==, 0);
  double sim_time = run_number (db, 1, "sim_time");
  g_assert_cmpfloat (sim_time, >, 0);
  g_autofree char *cell = table_field (o, "samples/s");
  if (isnan (want))
    {
      g_assert_null (strstr (o, "samples/s"));
      g_assert_cmpfloat (test_query_number (db, "SELECT samples IS NULL FROM runs"), ==, 1);
    }
  else
    {
      g_assert_nonnull (strstr (o, "samples/s"));
      /* printed with 6 significant digits: within half a unit of the 6th */
      test_assert_close (g_ascii_strtod (cell, NULL), want / sim_time, 5e-6);
      g_assert_cmpfloat (run_number (db, 1, "samples"), ==, want);
    }

  g_assert_cmpint (dtsim (&o, &e, "run", ini_name, "-o", db_name, "--json", NULL), ==, 0);
  g_autofree char *err = NULL;
  TjNode *doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  const TjNode *runs = tj_get (doc, "runs");
  g_assert_nonnull (runs);
  assert_json_throughput (g_ptr_array_index (runs->items, 0), want);
  tj_free (doc);

  g_assert_cmpint (dtsim (&o, &e, "export", db_name, NULL), ==, 0);
  g_autoptr (GPtrArray) rows = csv_rows (o);
  g_assert_cmpuint (rows->len, ==, 2);
  GPtrArray *h = g_ptr_array_index (rows, 0), *row = g_ptr_array_index (rows, 1);
  double csv_sps = cell_number (row, column (h, "samples_per_s"));
  if (isnan (want))
    g_assert_true (isnan (csv_sps));
  else
    test_assert_close (csv_sps, want / cell_number (row, column (h, "sim_time")), 1e-12);

  g_assert_cmpint (dtsim (&o, &e, "export", db_name, "--format", "json", NULL), ==, 0);
  doc = tj_parse (o, strlen (o), &err);
  g_assert_null (err);
  assert_json_throughput (g_ptr_array_index (doc->items, 0), want);
  tj_free (doc);
}

/* --- shares of huge times ------------------------------------------------ */

/* Shares of parts near DBL_MAX, whose sum overflows: finite, by the
 * formula x_i / sum x_j (with sum = DBL_MAX x 2.5 here, computed on the
 * parts over the largest), summing to 1; NAN for no time or an infinite
 * part. */
static void
test_shares_unit (void)
{
  const double big[] = { DBL_MAX, DBL_MAX, DBL_MAX / 2 };
  double share[3];
  sim_time_shares (big, 3, share);
  test_assert_close (share[0], 1 / (1 + 1 + 0.5), 1e-15);
  test_assert_close (share[1], 1 / (1 + 1 + 0.5), 1e-15);
  test_assert_close (share[2], 0.5 / (1 + 1 + 0.5), 1e-15);
  const double zero[] = { 0, 0, 0 }, inf[] = { 1, INFINITY, 0 };
  sim_time_shares (zero, 3, share);
  g_assert_true (isnan (share[0]) && isnan (share[1]) && isnan (share[2]));
  sim_time_shares (inf, 3, share);
  g_assert_true (isnan (share[0]) && isnan (share[1]) && isnan (share[2]));
}

/* A device of 1e-300 FLOP/s with real math: steps of ~1e300 s whose summed
 * worker time overflows.  The run table's compute/comm/wait shares are the
 * export's (to their printed digit) and finite. */
static void
test_shares_huge (void)
{
  g_autofree char *ini = path_in ("huge.ini"), *db = path_in ("huge.db");
  g_autofree char *text = g_strconcat (tp_base, "kind = allreduce\n", NULL);
  g_autofree char *slow = NULL;
  {
    g_auto (GStrv) parts = g_strsplit (text, "flops = 1GFLOPS", 2);
    slow = g_strjoinv ("flops = 1e-300", parts);
  }
  g_assert_true (g_file_set_contents (ini, slow, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "huge.ini", "-o", "huge.db", NULL), ==, 0);
  g_assert_cmpfloat (run_number (db, 1, "compute + comm + wait"), >, 1e300);
  g_auto (GStrv) lines = g_strsplit (o, "\n", -1);
  g_auto (GStrv) fields = g_strsplit_set (g_strstrip (lines[1]), " ", -1);
  /* run, sim time, iters, loss, accuracy, compute, comm, wait (no spaces
   * inside: empty fields are the runs of blanks between them) */
  GPtrArray *cells = g_ptr_array_new ();
  for (int i = 0; fields[i]; i++)
    if (*fields[i])
      g_ptr_array_add (cells, fields[i]);
  g_assert_cmpuint (cells->len, >=, 8);
  g_assert_cmpint (dtsim (&o, &e, "export", "huge.db", NULL), ==, 0);
  g_autoptr (GPtrArray) rows = csv_rows (o);
  GPtrArray *h = g_ptr_array_index (rows, 0), *row = g_ptr_array_index (rows, 1);
  const char *cols[] = { "compute_share", "comm_share", "wait_share" };
  double sum = 0;
  for (int k = 0; k < 3; k++)
    {
      const char *cell = g_ptr_array_index (cells, 5 + k);
      g_assert_true (g_str_has_suffix (cell, "%"));
      double table = g_ascii_strtod (cell, NULL), exported = cell_number (row, column (h, cols[k]));
      g_assert_true (isfinite (exported));
      /* printed to 0.1 %: within half of that */
      g_assert_cmpfloat (fabs (table - 100 * exported), <=, 0.05 + 1e-9);
      sum += exported;
    }
  test_assert_close (sum, 1, 1e-12);
  g_ptr_array_unref (cells);
}

/* Two real-math jobs (softmax) sharing one star, the second with a batch
 * of its own. */
static const char jobs_ini[] =
  "[scenario]\nname = pair\niterations = 4\nseed = 5\n"
  "[network]\ntopology = star\nbandwidth = 10Gbps\nlatency = 5us\n"
  "[model]\nkind = softmax\nbatch = 16\n[policy]\nkind = allreduce\n"
  "[job a]\ncluster.workers = 2\n[job b]\ncluster.workers = 2\nmodel.batch = 8\n";

/* `db` exported as `format` into tmpdir/NAME; its text. */
static char *
exported (const char *db, const char *format, const char *name)
{
  g_autofree char *out = path_in (name), *o = NULL, *e = NULL;
  if (dtsim (&o, &e, "export", db, "--format", format, "-o", out, NULL) != 0)
    g_error ("dtsim export: %s", e);
  char *text = NULL;
  g_assert_true (g_file_get_contents (out, &text, NULL, NULL));
  return text;
}

/* A job's last evaluation's accuracy, as the database holds it. */
static double
job_accuracy (const char *db, const char *job)
{
  g_autofree char *q = g_strdup_printf ("SELECT accuracy FROM metrics WHERE run_id = 1 AND"
                                        " job = '%s' ORDER BY sim_time DESC, step DESC"
                                        " LIMIT 1", job);
  return test_query_number (db, q);
}

/* A run of several jobs: after the run's row (job empty), a row per job
 * carrying its name, its end, iterations, final loss and last accuracy. */
static void
test_jobs (void)
{
  g_autofree char *ini = path_in ("pair.ini");
  g_assert_true (g_file_set_contents (ini, jobs_ini, -1, NULL));
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (dtsim (&o, &e, "run", "pair.ini", "-o", "pair.db", "-q", NULL), ==, 0);
  g_autofree char *db = path_in ("pair.db");
  const char *names[] = { "", "a", "b" };
  g_autofree char *csv = exported (db, "csv", "pair.csv");
  g_autoptr (GPtrArray) rows = csv_rows (csv);
  g_assert_cmpuint (rows->len, ==, 1 + 3);
  GPtrArray *h = g_ptr_array_index (rows, 0);
  int job = column (h, "job");
  g_assert_cmpint (job, ==, column (h, "stop") + 1);
  int loss = column (h, "final_loss"), acc = column (h, "final_accuracy");
  int t = column (h, "sim_time"), it = column (h, "iterations");
  for (guint i = 1; i < rows->len; i++)
    {
      GPtrArray *r = g_ptr_array_index (rows, i);
      g_assert_cmpstr (g_ptr_array_index (r, 0), ==, "1");
      g_assert_cmpstr (g_ptr_array_index (r, job), ==, names[i - 1]);
      if (i == 1)
        {
          g_assert_cmpfloat (cell_number (r, t), ==, run_number (db, 1, "sim_time"));
          continue;
        }
      g_autofree char *w = g_strdup_printf ("FROM jobs WHERE run_id = 1 AND name = '%s'",
                                            names[i - 1]);
      g_autofree char *qe = g_strconcat ("SELECT end ", w, NULL);
      g_autofree char *qi = g_strconcat ("SELECT iterations ", w, NULL);
      g_autofree char *ql = g_strconcat ("SELECT final_loss ", w, NULL);
      g_assert_cmpfloat (cell_number (r, t), ==, test_query_number (db, qe));
      g_assert_cmpfloat (cell_number (r, it), ==, test_query_number (db, qi));
      g_assert_cmpfloat (cell_number (r, loss), ==, test_query_number (db, ql));
      g_assert_cmpfloat (cell_number (r, acc), ==, job_accuracy (db, names[i - 1]));
      g_assert_true (isfinite (cell_number (r, loss)));
    }
  /* the jobs' losses differ (their batches do) */
  g_assert_cmpstr (g_ptr_array_index ((GPtrArray *) g_ptr_array_index (rows, 2), loss), !=,
                   g_ptr_array_index ((GPtrArray *) g_ptr_array_index (rows, 3), loss));
  /* JSON: the same rows, "job" null for the run's own */
  g_autofree char *json = exported (db, "json", "pair.json");
  char *err = NULL;
  TjNode *doc = tj_parse (json, strlen (json), &err);
  g_assert_null (err);
  g_assert_cmpuint (doc->items->len, ==, 3);
  g_assert_cmpint (tj_get (g_ptr_array_index (doc->items, 0), "job")->type, ==, TJ_NULL);
  for (guint i = 1; i < 3; i++)
    {
      const TjNode *r = g_ptr_array_index (doc->items, i);
      g_assert_cmpstr (tj_string (r, "job"), ==, names[i]);
      g_assert_cmpfloat (tj_number (r, "final_accuracy"), ==, job_accuracy (db, names[i]));
    }
  tj_free (doc);
  /* a run of one job, and the same trace as version 10 wrote it (no jobs
   * table, no metrics.job): no job column, nothing new */
  g_autofree char *one = path_in ("one.ini");
  g_autofree char *text = test_replaced (jobs_ini, "[job a]", "[cluster]\nworkers = 2\n[x]");
  g_autofree char *cut = g_strndup (text, strstr (text, "[x]") - text);
  g_assert_true (g_file_set_contents (one, cut, -1, NULL));
  g_assert_cmpint (dtsim (&o, &e, "run", "one.ini", "-o", "one.db", "-q", NULL), ==, 0);
  g_autofree char *one_db = path_in ("one.db");
  g_autofree char *one_csv = exported (one_db, "csv", "one.csv");
  g_assert_true (g_str_has_prefix (one_csv, "run,name,status,error,stop,sim_time,"));
  g_autofree char *one_json = exported (one_db, "json", "one.json");
  g_assert_null (strstr (one_json, "\"job\""));
  sqlite3 *d = NULL;
  g_assert_cmpint (sqlite3_open (db, &d), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (d, "DROP TABLE jobs; ALTER TABLE metrics DROP COLUMN job;"
                                    " PRAGMA user_version = 10", NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (d);
  g_autofree char *old_csv = exported (db, "csv", "old.csv");
  g_autoptr (GPtrArray) old_rows = csv_rows (old_csv);
  g_assert_cmpuint (old_rows->len, ==, 2);
  g_assert_true (g_str_has_prefix (old_csv, "run,name,status,error,stop,sim_time,"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-export-XXXXXX", NULL);
  g_test_add_func ("/export/csv", test_csv);
  g_test_add_func ("/export/json", test_json);
  g_test_add_func ("/export/perfetto", test_perfetto);
  g_test_add_func ("/export/hostile-text", test_hostile_text);
  g_test_add_func ("/export/bad-input", test_bad_input);
  g_test_add_func ("/export/report", test_report);
  g_test_add_func ("/export/report-hostile", test_report_hostile);
  g_test_add_func ("/export/report/answer", test_report_answer);
  g_test_add_func ("/export/report/labels", test_report_labels);
  g_test_add_func ("/export/report/size", test_report_size);
  g_test_add_func ("/export/readers-linear", test_readers_linear);
  g_test_add_func ("/export/jobs", test_jobs);
  g_test_add_func ("/export/shares/unit", test_shares_unit);
  g_test_add_func ("/export/shares/huge", test_shares_huge);
  for (gsize i = 0; i < G_N_ELEMENTS (throughputs); i++)
    {
      g_autofree char *path = g_strdup_printf ("/export/throughput/%s", throughputs[i].name);
      g_test_add_data_func (path, &throughputs[i], test_throughput);
    }
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
