/*
 * test-mpi.c — a sweep over MPI ranks (sweep/mpi.c, docs/cluster.md), with the
 * mpirun of this machine: `mpirun --oversubscribe -n 4 dtsim run` writes the
 * database `dtsim run --jobs 1` writes, row for row; a worker killed mid-sweep
 * under --enable-recovery loses only its point; without it, the job ends and
 * the good database already at -o survives, with no file left beside it.
 *
 * Skipped, saying so, when dtsim was configured without MPI (CI installs
 * Open MPI, so there it runs).
 */
#include "config.h"

#ifdef HAVE_MPI
#include <mpi.h>
#endif
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep/mpi.h"
#include "sweep/sweep.h"
#include "sim/trace.h"
#include "sim/wire.h"
#include "tests/util.h"
#include "sim/load.h"

static char *tmpdir;

/* The scenario of these tests: tests/data/small.ini, its sweep crossed with
 * three cluster sizes (6 points), each point `iterations` long. */
static char *
scenario (void)
{
  return g_build_filename (g_getenv ("DTSIM_TEST_DATA"), "small.ini", NULL);
}

static char *
tmp (const char *name)
{
  return g_build_filename (tmpdir, name, NULL);
}

#ifdef HAVE_MPI

/* Every table of rows, in the order a run writes them. */
static const char *const row_tables[] = { "params", "metrics", "iterations", "spans", "messages",
                                          "buckets", "failures", "stages", "links", "mesh" };

/* Appends the rows `sql` returns, every value with its type, one line each. */
static void
append_rows (GString *s, sqlite3 *db, const char *sql)
{
  sqlite3_stmt *st = NULL;
  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &st, NULL), ==, SQLITE_OK);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      for (int c = 0; c < sqlite3_column_count (st); c++)
        if (sqlite3_column_type (st, c) == SQLITE_FLOAT)
          g_string_append_printf (s, "%.17g|", sqlite3_column_double (st, c));
        else if (sqlite3_column_type (st, c) == SQLITE_NULL)
          g_string_append (s, "NULL|");
        else
          g_string_append_printf (s, "%s|", (const char *) sqlite3_column_text (st, c));
      g_string_append_c (s, '\n');
    }
  sqlite3_finalize (st);
}

/* Run `run`'s rows of table `table` in their order (run 0: every run's, in
 * run order); for the runs table, every column but the wall-clock time. */
static char *
rows_of (const char *path, const char *table, gint64 run)
{
  sqlite3 *db = NULL;
  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  GString *s = g_string_new (NULL);
  g_autofree char *where = run > 0 ? g_strdup_printf ("WHERE run_id = %" G_GINT64_FORMAT, run)
                                   : g_strdup ("");
  g_autofree char *sql
    = strcmp (table, "runs") == 0
        ? g_strdup ("SELECT id, scenario, name, seed, status, error, stop, sim_time, events,"
                    " iterations, updates, final_loss, final_accuracy, compute, comm, wait,"
                    " version FROM runs ORDER BY id")
        : g_strdup_printf ("SELECT * FROM %s %s ORDER BY run_id, rowid", table, where);
  append_rows (s, db, sql);
  sqlite3_close (db);
  return g_string_free (s, FALSE);
}

/* The environment of mpirun: root may run it (CI is root), and `tag`
 * marks this test's ranks (found in /proc).  In an AddressSanitizer build
 * the ranks check memory but not leaks: Open MPI unloads its components at
 * the end, and what they keep is reported with no frame to tell it from
 * dtsim's (the messages' packing is leak-checked in tests/test-trace). */
static char **
mpi_env (const char *tag)
{
  char **env = g_get_environ ();
  env = g_environ_setenv (env, "OMPI_ALLOW_RUN_AS_ROOT", "1", TRUE);
  env = g_environ_setenv (env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", TRUE);
  const char *asan = g_environ_getenv (env, "ASAN_OPTIONS");
  g_autofree char *no_leaks = g_strdup_printf ("%s%sdetect_leaks=0", asan ? asan : "",
                                               asan && *asan ? ":" : "");
  env = g_environ_setenv (env, "ASAN_OPTIONS", no_leaks, TRUE);
  env = g_environ_setenv (env, "DTSIM_TEST_MPI_TAG", tag, TRUE);
  /* mpirun ends a failed job with SIGTERM, then SIGKILL after this many
   * seconds (1 by default): on a loaded machine a rank may not have run its
   * SIGTERM handler by then, and SIGKILL leaves files no process can
   * remove.  The tests check dtsim's cleanup on SIGTERM, not that race. */
  env = g_environ_setenv (env, "OMPI_MCA_odls_base_sigkill_timeout", "30", TRUE);
  return env;
}

/* mpirun's argument vector: `mpirun_args`, then dtsim and `args`. */
static GPtrArray *
mpi_argv (const char *const *mpirun_args, const char *const *args)
{
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) MPIRUN_PATH);
  g_ptr_array_add (argv, (char *) "--oversubscribe");
  for (int i = 0; mpirun_args[i]; i++)
    g_ptr_array_add (argv, (char *) mpirun_args[i]);
  g_ptr_array_add (argv, (char *) g_getenv ("DTSIM_BIN"));
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  return argv;
}

/* The pid of the process whose environment holds `tag` and MPI rank `rank`,
 * or 0 when there is none (yet). */
static GPid
find_rank (const char *tag, int rank)
{
  g_autofree char *want_tag = g_strdup_printf ("DTSIM_TEST_MPI_TAG=%s", tag);
  g_autofree char *want_rank = g_strdup_printf ("OMPI_COMM_WORLD_RANK=%d", rank);
  GDir *proc = g_dir_open ("/proc", 0, NULL);
  g_assert_nonnull (proc);
  GPid found = 0;
  const char *name;
  while (!found && (name = g_dir_read_name (proc)))
    {
      if (!g_ascii_isdigit (name[0]))
        continue;
      g_autofree char *path = g_build_filename ("/proc", name, "environ", NULL);
      g_autofree char *env = NULL;
      gsize len = 0;
      if (!g_file_get_contents (path, &env, &len, NULL))
        continue;
      gboolean has_tag = FALSE, has_rank = FALSE;
      for (gsize at = 0; at < len; at += strlen (env + at) + 1)
        {
          has_tag = has_tag || strcmp (env + at, want_tag) == 0;
          has_rank = has_rank || strcmp (env + at, want_rank) == 0;
        }
      if (has_tag && has_rank)
        found = (GPid) atoi (name);
    }
  g_dir_close (proc);
  return found;
}

/* Seconds of CPU the process has used (user + system), -1 once it is gone. */
static double
cpu_seconds (GPid pid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return -1;
  /* the fields after the command's closing parenthesis: state is the 1st,
   * utime the 12th, stime the 13th */
  const char *rest = strrchr (stat, ')');
  g_assert_nonnull (rest);
  g_auto (GStrv) f = g_strsplit (rest + 2, " ", 0);
  g_assert_cmpuint (g_strv_length (f), >, 13);
  return (g_ascii_strtod (f[11], NULL) + g_ascii_strtod (f[12], NULL))
         / (double) sysconf (_SC_CLK_TCK);
}

/* Runs mpirun with `args`, kills rank `victim` (with SIGKILL) once it has
 * used `cpu` s of CPU (past its start, so in the middle of its first point),
 * and waits for mpirun; its stderr in *err. */
static void
run_and_kill (const char *const *mpirun_args, const char *const *args, int victim, double cpu,
              char **err)
{
  g_autofree char *tag = g_strdup_printf ("%d-%d", (int) getpid (), g_random_int ());
  g_auto (GStrv) env = mpi_env (tag);
  g_autoptr (GPtrArray) argv = mpi_argv (mpirun_args, args);
  GPid child;
  int err_fd;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_async_with_pipes (tmpdir, (char **) argv->pdata, env,
                                           G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL,
                                           NULL, NULL, &child, NULL, NULL, &err_fd, &error));
  g_assert_no_error (error);
  /* up to 60 s for the rank to start and reach `cpu` */
  GPid pid = 0;
  gboolean killed = FALSE;
  for (int i = 0; i < 6000 && !killed; i++)
    {
      g_usleep (10000);
      if (!pid)
        pid = find_rank (tag, victim);
      if (pid && cpu_seconds (pid) >= cpu)
        killed = kill (pid, SIGKILL) == 0;
    }
  g_assert_true (killed);
  /* mpirun's stderr, to its end, then its exit */
  GString *s = g_string_new (NULL);
  char buf[4096];
  gssize n;
  while ((n = read (err_fd, buf, sizeof buf)) > 0)
    g_string_append_len (s, buf, n);
  close (err_fd);
  int status;
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_spawn_close_pid (child);
  /* mpirun may end before its ranks have: a rank still running its signal
   * handler is still removing its files */
  gboolean left = TRUE;
  for (int i = 0; i < 3000 && left; i++)
    {
      left = FALSE;
      for (int rank = 0; rank < 16 && !left; rank++)
        left = find_rank (tag, rank) != 0;
      if (left)
        g_usleep (10000);
    }
  g_assert_false (left);
  *err = g_string_free (s, FALSE);
}

/* Runs mpirun with `args` to its end, which must be a success; returns its
 * stderr. */
static char *
run_mpi_ok (const char *const *mpirun_args, const char *const *args)
{
  g_auto (GStrv) env = mpi_env ("plain");
  g_autoptr (GPtrArray) argv = mpi_argv (mpirun_args, args);
  int status = 0;
  char *err = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (tmpdir, (char **) argv->pdata, env, G_SPAWN_STDOUT_TO_DEV_NULL,
                               NULL, NULL, NULL, &err, &status, &error));
  g_assert_no_error (error);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    g_error ("mpirun ended with status %d; stderr:\n%s", status, err);
  return err;
}

/* Database `got` holds the rows of `want`, in every table, run by run
 * (wall-clock times aside). */
static void
assert_same_database (const char *got, const char *want)
{
  g_autofree char *runs_want = rows_of (want, "runs", 0), *runs_got = rows_of (got, "runs", 0);
  g_assert_cmpstr (runs_got, ==, runs_want);
  for (gsize i = 0; i < G_N_ELEMENTS (row_tables); i++)
    {
      g_autofree char *a = rows_of (want, row_tables[i], 0), *b = rows_of (got, row_tables[i], 0);
      g_assert_cmpstr (b, ==, a);
    }
}

/* The database of `dtsim run --jobs 1` (one process) of the same sweep. */
static char *
reference (const char *name, const char *const *sets)
{
  g_autofree char *ini = scenario ();
  char *db = tmp (name);
  GPtrArray *args = g_ptr_array_new ();
  const char *head[] = { "run", ini, "-o", db, "--jobs", "1", "--quiet" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (args, (char *) head[i]);
  for (int i = 0; sets[i]; i++)
    g_ptr_array_add (args, (char *) sets[i]);
  g_ptr_array_add (args, NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim_argv (tmpdir, &out, &err, (const char *const *) args->pdata),
                   ==, 0);
  g_ptr_array_unref (args);
  return db;
}

/* The sweep of the row-for-row test: 6 points, messages recorded. */
static const char *const quick[] = { "--set", "sweep.cluster.workers=2,4,8",
                                     "--set", "sweep.policy.consistency=bsp,async",
                                     "--set", "scenario.iterations=200", NULL };

/* The quick sweep's database from one process, made once. */
static const char *
quick_reference (void)
{
  static char *db;
  if (!db)
    db = reference ("quick.db", quick);
  return db;
}

/* Runs the quick sweep with `ranks` ranks of `jobs` slots each into `name`,
 * asserts that it wrote the one-process database, row for row in every
 * table (wall-clock times aside), and returns mpirun's stderr and the
 * number of ranks but 0 that ran a point (each point's line names the rank
 * that ran it, when not rank 0). */
static char *
run_quick (const char *ranks, const char *jobs, const char *name, int *others)
{
  g_autofree char *ini = scenario ();
  g_autofree char *got = tmp (name);
  const char *mpirun_args[] = { "-n", ranks, NULL };
  const char *args[] = { "run", ini, "-o", got, "--jobs", jobs, quick[0], quick[1], quick[2],
                         quick[3], quick[4], quick[5], NULL };
  char *err = run_mpi_ok (mpirun_args, args);
  assert_same_database (got, quick_reference ());
  g_assert_cmpint (test_query_number (got, "SELECT COUNT(*) FROM runs WHERE status = 'done'"),
                   ==, 6);
  *others = 0;
  for (int r = 1; r < atoi (ranks); r++)
    {
      g_autofree char *mark = g_strdup_printf ("(rank %d)", r);
      *others += strstr (err, mark) != NULL;
    }
  return err;
}

/* Four ranks write the database one process writes, and the points went to
 * several ranks. */
static void
test_same_rows (void)
{
  int others;
  g_autofree char *err = run_quick ("4", "1", "four.db", &others);
  /* not trivially equal: the tables of this detail have rows */
  const char *want = quick_reference ();
  g_assert_cmpint (test_query_number (want, "SELECT COUNT(*) FROM messages"), >, 1000);
  g_assert_cmpint (test_query_number (want, "SELECT COUNT(*) FROM links"), >, 0);
  if (others < 2)
    g_error ("points went to %d other ranks; stderr:\n%s", others, err);
}

/* Two ranks of two slots each (--jobs inside a rank): a worker runs two
 * points at once, their rows interleaved in its messages, and the database
 * is still the one process's. */
static void
test_slots (void)
{
  int others;
  g_autofree char *err = run_quick ("2", "2", "slots.db", &others);
  if (others < 1)
    g_error ("rank 1 ran no point; stderr:\n%s", err);
}

/* A rank that read other points (another seed), or none (a file missing
 * there), runs nothing, and rank 0 says which and why in one line each; the
 * sweep is done by the ranks that agree, the same as one process's.  (MPMD:
 * each rank its own command line, as a host with other files would be.) */
static void
test_refused (void)
{
  const char *want = quick_reference ();
  g_autofree char *ini = scenario ();
  g_autofree char *got = tmp ("refused.db");
  g_autofree char *missing = tmp ("nowhere.ini");
  const char *bin = g_getenv ("DTSIM_BIN");
  const char *mpirun_args[] = { "-n", "1", NULL };
  const char *args[] = { "run", ini, "-o", got, "--jobs", "1", quick[0], quick[1], quick[2],
                         quick[3], quick[4], quick[5],
                         ":", "-n", "1", bin, "run", ini, "-o", got, "--jobs", "1", quick[0],
                         quick[1], quick[2], quick[3], quick[4], quick[5], "--set",
                         "scenario.seed=99",
                         ":", "-n", "1", bin, "run", missing, "-o", got, "--jobs", "1",
                         ":", "-n", "1", bin, "run", ini, "-o", got, "--jobs", "1", quick[0],
                         quick[1], quick[2], quick[3], quick[4], quick[5], NULL };
  g_autofree char *err = run_mpi_ok (mpirun_args, args);
  assert_same_database (got, want);
  if (!strstr (err, "dtsim: MPI rank 1 (host ") || !strstr (err, "runs no point: it read other "
                                                                  "points from the scenario")
      || !strstr (err, "dtsim: MPI rank 2 (host ") || !strstr (err, "nowhere.ini")
      || strstr (err, "(rank 1)") || strstr (err, "(rank 2)") || strstr (err, "MPI rank 3"))
    g_error ("ranks 1 and 2 should run nothing, each saying why; stderr:\n%s", err);
}

/* --- a rank that misbehaves ----------------------------------------------------
 *
 * `test-mpi --fake-rank MODE SCENARIO SET...` is started by mpirun beside
 * dtsim as rank 1: it says hello as a worker would (the digest of the
 * scenario read with the --set values SET, one slot, host "fake"), then
 * answers the first point it is given with a message that MODE spoils, and
 * stays alive (beats) until rank 0 says stop. */

static void
send_to_0 (int tag, GByteArray *b)
{
  MPI_Send (b ? b->data : NULL, b ? (int) b->len : 0, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
  if (b)
    g_byte_array_unref (b);
}

/* The one row of another run that the "other-run" mode sends. */
static void
emit_one_metric (SimTrace *t, gint64 run)
{
  sim_trace_metric (t, run, 0.5, 1, 1.0, 0.5, NAN);
}

/* The spoilt answer to point `point` of run `run`. */
static void
fake_answer (const char *mode, guint64 point, gint64 run)
{
  GByteArray *b = g_byte_array_new ();
  if (strcmp (mode, "foreign-point") == 0)
    {
      /* progress of a point it was not given */
      sim_wire_put_u64 (b, point + 1);
      sim_wire_put_u64 (b, 500);
      send_to_0 (SIM_MPI_TAG_PROGRESS, b);
      return;
    }
  sim_wire_put_u64 (b, point);
  if (strcmp (mode, "truncated-end") == 0)
    {
      /* an end that stops after its ok flag */
      sim_wire_put_u64 (b, 1);
      send_to_0 (SIM_MPI_TAG_END, b);
      return;
    }
  if (strcmp (mode, "damaged-rows") == 0)
    {
      /* a table byte that names no table, and a text longer than the message */
      static const guint8 junk[] = { 0xee, 1, 2, 3, 2, 0xff, 0xff, 0xff, 0x7f };
      g_byte_array_append (b, junk, sizeof junk);
      send_to_0 (SIM_MPI_TAG_ROWS, b);
      return;
    }
  g_assert_cmpstr (mode, ==, "other-run");
  /* well-formed rows, but of another run than the point's */
  g_autoptr (GBytes) rows = test_chunk_bytes (emit_one_metric, run + 1);
  gsize len;
  const guint8 *p = g_bytes_get_data (rows, &len);
  g_byte_array_append (b, p, (guint) len);
  send_to_0 (SIM_MPI_TAG_ROWS, b);
}

static int
fake_rank (const char *mode, const char *path, const char *const *sets, int argc, char **argv)
{
  int provided;
  MPI_Init_thread (&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  /* as sim_mpi_start does, with every rank */
  MPI_Comm local;
  MPI_Comm_split_type (MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_free (&local);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) configs = sim_scenario_load (path, sets, &error);
  g_assert_no_error (error);
  g_autofree char *digest = sim_sweep_digest (configs, path);
  GByteArray *hello = g_byte_array_new ();
  sim_wire_put_u64 (hello, 1);
  sim_wire_put_u64 (hello, configs->len);
  sim_wire_put_str (hello, digest);
  sim_wire_put_str (hello, "fake");
  sim_wire_put_str (hello, NULL);
  send_to_0 (SIM_MPI_TAG_HELLO, hello);
  gboolean answered = FALSE;
  for (;;)
    {
      guint8 buf[64];
      MPI_Status st;
      MPI_Recv (buf, sizeof buf, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == SIM_MPI_TAG_STOP)
        break;
      if (st.MPI_TAG == SIM_MPI_TAG_BEAT)
        send_to_0 (SIM_MPI_TAG_BEAT, NULL);
      if (st.MPI_TAG == SIM_MPI_TAG_POINT && !answered)
        {
          int count;
          MPI_Get_count (&st, MPI_BYTE, &count);
          SimWireReader r = { .p = buf, .len = (gsize) count };
          guint64 point = sim_wire_get_u64 (&r);
          gint64 run = (gint64) sim_wire_get_u64 (&r);
          g_assert_false (r.bad);
          fake_answer (mode, point, run);
          answered = TRUE;
        }
    }
  /* rank 0 lost this rank: no one calls MPI_Finalize */
  fflush (NULL);
  _exit (0);
}

/* A rank that sends a damaged message, or one about a point it was not
 * given, is lost at once: the point it had is recorded failed saying so, it
 * gets no other, and rank 0 runs the rest, the same as one process would. */
static void
test_hostile_rank (void)
{
  const char *want = quick_reference ();
  g_autofree char *ini = scenario ();
  const char *self = g_getenv ("DTSIM_TEST_MPI_SELF");
  g_assert_nonnull (self);
  const char *modes[] = { "damaged-rows", "truncated-end", "foreign-point", "other-run" };
  for (gsize m = 0; m < G_N_ELEMENTS (modes); m++)
    {
      g_autofree char *name = g_strdup_printf ("%s.db", modes[m]);
      g_autofree char *got = tmp (name);
      /* the fake rank reads the scenario with the same --set values */
      const char *mpirun_args[] = { "--enable-recovery", "-n", "1", NULL };
      const char *args[] = { "run", ini, "-o", got, "--jobs", "1", quick[0], quick[1], quick[2],
                             quick[3], quick[4], quick[5], ":", "-n", "1", self, "--fake-rank",
                             modes[m], ini, quick[1], quick[3], quick[5], NULL };
      g_autofree char *err = run_mpi_ok (mpirun_args, args);
      g_assert_cmpint (test_query_number (got, "SELECT COUNT(*) FROM runs"), ==, 6);
      gint64 failed = (gint64) test_query_number (got, "SELECT COUNT(*) FROM runs WHERE "
                                                  "status = 'failed' AND error = 'MPI rank 1 "
                                                  "(host fake) was lost while running this "
                                                  "point: it sent a damaged message; the rows "
                                                  "it sent are kept; run the point again'");
      if (failed != 1)
        g_error ("%s: %" G_GINT64_FORMAT " runs failed as expected; stderr:\n%s", modes[m],
                 failed, err);
      /* every other point ran at rank 0, as in one process */
      gint64 lost = (gint64) test_query_number (got, "SELECT id FROM runs WHERE status = 'failed'");
      for (gint64 run = 1; run <= 6; run++)
        for (gsize i = 0; run != lost && i < G_N_ELEMENTS (row_tables); i++)
          {
            g_autofree char *a = rows_of (want, row_tables[i], run);
            g_autofree char *b = rows_of (got, row_tables[i], run);
            g_assert_cmpstr (b, ==, a);
          }
      /* nothing of the damaged message reached the database */
      g_assert_cmpint (test_query_number (got, "SELECT COUNT(*) FROM metrics WHERE run_id = "
                                          "(SELECT id FROM runs WHERE status = 'failed')"), ==, 0);
    }
}

/* The longer sweep of the fault tests: 6 points of about a second of CPU
 * each (an MLP), their iterations recorded. */
static const char *const slow[] = { "--set", "sweep.scenario.seed=1,2,3",
                                    "--set", "cluster.workers=2",
                                    "--set", "scenario.iterations=2500",
                                    "--set", "trace.detail=iterations",
                                    "--set", "model.kind=mlp",
                                    "--set", "model.hidden=256,256",
                                    "--set", "model.batch=32", NULL };
#define SLOW_ARGS slow[0], slow[1], slow[2], slow[3], slow[4], slow[5], slow[6], slow[7], \
                  slow[8], slow[9], slow[10], slow[11], slow[12], slow[13]

/* Under --enable-recovery, a worker killed in the middle of a point loses
 * that point only: it is recorded failed, naming the rank, with the rows
 * that arrived (a prefix of its rows); every other point is the same as in
 * a one-process run. */
static void
test_rank_killed (void)
{
  g_autofree char *want = reference ("slow.db", slow);
  g_autofree char *ini = scenario ();
  g_autofree char *got = tmp ("killed.db");
  const char *mpirun_args[] = { "--enable-recovery", "-n", "4", NULL };
  const char *args[] = { "run", ini, "-o", got, "--jobs", "1", "--rank-timeout", "2", SLOW_ARGS,
                         NULL };
  g_autofree char *err = NULL;
  /* Open MPI's mpirun exits 0 under --enable-recovery whatever rank 0
   * returns: the database and stderr tell */
  run_and_kill (mpirun_args, args, 2, 0.6, &err);
  g_assert_true (g_file_test (got, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpint (test_query_number (got, "SELECT COUNT(*) FROM runs"), ==, 6);
  g_assert_cmpint (test_query_number (got, "SELECT COUNT(*) FROM runs WHERE status = 'failed'"),
                   ==, 1);
  g_assert_cmpint (test_query_number (got, "SELECT COUNT(*) FROM runs WHERE status = 'failed'"
                                      " AND error LIKE 'MPI rank 2 (host %) was lost while "
                                      "running this point: no message from it for 2 s%'"), ==, 1);
  gint64 lost = (gint64) test_query_number (got, "SELECT id FROM runs WHERE status = 'failed'");
  g_autofree char *line = g_strdup_printf ("run %" G_GINT64_FORMAT "/6 failed: ", lost);
  if (!strstr (err, line) || !strstr (err, "MPI rank 2"))
    g_error ("no line for the lost point in stderr:\n%s", err);
  for (gint64 run = 1; run <= 6; run++)
    for (gsize i = 0; i < G_N_ELEMENTS (row_tables); i++)
      {
        g_autofree char *a = rows_of (want, row_tables[i], run);
        g_autofree char *b = rows_of (got, row_tables[i], run);
        if (run != lost)
          g_assert_cmpstr (b, ==, a);
        else if (!g_str_has_prefix (a, b))
          g_error ("run %" G_GINT64_FORMAT "'s %s rows are not a prefix of its rows",
                   run, row_tables[i]);
      }
}

/* Without --enable-recovery mpirun ends the job when a rank dies: rank 0
 * is stopped with SIGTERM before it writes anything, so the database that
 * was at -o is as it was and no temporary file is left beside it. */
static void
test_job_ended (void)
{
  g_autofree char *ini = scenario ();
  g_autofree char *dir = tmp ("ended");
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_autofree char *db = g_build_filename (dir, "kept.db", NULL);
  g_autofree char *o = NULL, *e = NULL;
  g_assert_cmpint (test_run_dtsim (tmpdir, &o, &e, "run", ini, "-o", db, "--quiet", NULL), ==, 0);
  g_autofree char *before = rows_of (db, "runs", 0);
  g_autofree char *metrics_before = rows_of (db, "metrics", 0);
  const char *mpirun_args[] = { "-n", "4", NULL };
  const char *args[] = { "run", ini, "-o", db, "--jobs", "1", SLOW_ARGS, NULL };
  g_autofree char *err = NULL;
  run_and_kill (mpirun_args, args, 1, 0.6, &err);
  g_autofree char *after = rows_of (db, "runs", 0);
  g_autofree char *metrics_after = rows_of (db, "metrics", 0);
  g_assert_cmpstr (after, ==, before);
  g_assert_cmpstr (metrics_after, ==, metrics_before);
  /* the database and nothing else */
  if (test_count_entries (dir, "") != 1)
    {
      g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
      GString *names = g_string_new (NULL);
      for (const char *name; (name = g_dir_read_name (d));)
        g_string_append_printf (names, " %s", name);
      g_error ("beside the database after the job ended:%s\nmpirun's stderr:\n%s",
               names->str, err);
    }
}

#else

static void
test_not_built (void)
{
  g_test_skip ("dtsim was configured without MPI (apt-get install libopenmpi-dev "
               "openmpi-bin, then configure again)");
}

#endif

/* The digest of a scenario's points read with `sets`. */
static char *
digest_of (const char *ini, const char *const *sets)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) configs = sim_scenario_load (ini, sets, &error);
  g_assert_no_error (error);
  return sim_sweep_digest (configs, ini);
}

/* Ranks compare the digest of the points they read (a rank whose points
 * differ runs none): the same scenario gives the same digest; another seed,
 * another value of a key that is not in the points' names, or another
 * catalog file's contents, another. */
static void
test_digest (void)
{
  g_autofree char *ini = scenario ();
  g_autofree char *a = digest_of (ini, NULL), *a2 = digest_of (ini, NULL);
  g_assert_cmpstr (a, ==, a2);
  const char *seed[] = { "scenario.seed=8", NULL };
  const char *lr[] = { "model.lr=0.0123", NULL };
  g_autofree char *b = digest_of (ini, seed), *c = digest_of (ini, lr);
  g_assert_cmpstr (a, !=, b);
  g_assert_cmpstr (a, !=, c);
  /* the same catalog name, another file content */
  g_autofree char *src = g_build_filename (g_getenv ("DTSIM_SRCDIR"), "scenarios",
                                           "hardware.ini", NULL);
  g_autofree char *text = test_read_file (src, NULL);
  g_autofree char *cat = tmp ("catalog.ini");
  g_autofree char *set = g_strdup_printf ("cluster.catalog=%s", cat);
  const char *with_catalog[] = { set, NULL };
  g_assert_true (g_file_set_contents (cat, text, -1, NULL));
  g_autofree char *d = digest_of (ini, with_catalog);
  g_autofree char *edited = g_strconcat (text, "\n# edited on one host\n", NULL);
  g_assert_true (g_file_set_contents (cat, edited, -1, NULL));
  g_autofree char *e = digest_of (ini, with_catalog);
  g_assert_cmpstr (d, !=, e);
}

/* The launchers' variables sweep/mpi.c reads. */
static const char *const launch_vars[] = { "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                           "PMI_SIZE", "PMI_RANK", "PMIX_RANK",
                                           "SLURM_STEP_NUM_TASKS", "SLURM_PROCID",
                                           "SLURM_NTASKS" };

/* Sets the environment to `vars` (NAME, VALUE pairs, NULL-terminated), the
 * other launch variables unset; returns whether it reads as one rank of
 * several, and that rank in *rank. */
static gboolean
launched_with (int *rank, ...)
{
  for (gsize i = 0; i < G_N_ELEMENTS (launch_vars); i++)
    g_unsetenv (launch_vars[i]);
  va_list ap;
  va_start (ap, rank);
  for (const char *name; (name = va_arg (ap, const char *));)
    g_setenv (name, va_arg (ap, const char *), TRUE);
  va_end (ap);
  *rank = sim_mpi_launch_rank ();
  gboolean launched = sim_mpi_launched ();
  for (gsize i = 0; i < G_N_ELEMENTS (launch_vars); i++)
    g_unsetenv (launch_vars[i]);
  return launched;
}

/* Whether a launcher started this process as one of several ranks, read
 * from its environment: mpirun's and srun's steps count; a Slurm batch
 * script (SLURM_NTASKS without a step) and a single rank do not. */
static void
test_launched (void)
{
  int rank = -1;
  g_assert_false (launched_with (&rank, NULL));
  g_assert_cmpint (rank, ==, 0);
  /* sbatch's script with --ntasks=8, dtsim started by hand */
  g_assert_false (launched_with (&rank, "SLURM_NTASKS", "8", "SLURM_PROCID", "0", NULL));
  /* srun's third task of four */
  g_assert_true (launched_with (&rank, "SLURM_NTASKS", "4", "SLURM_STEP_NUM_TASKS", "4",
                               "SLURM_PROCID", "2", NULL));
  g_assert_cmpint (rank, ==, 2);
  /* mpirun -n 1, then -n 3's rank 1 */
  g_assert_false (launched_with (&rank, "OMPI_COMM_WORLD_SIZE", "1",
                                 "OMPI_COMM_WORLD_RANK", "0", NULL));
  g_assert_true (launched_with (&rank, "OMPI_COMM_WORLD_SIZE", "3",
                                "OMPI_COMM_WORLD_RANK", "1", NULL));
  g_assert_cmpint (rank, ==, 1);
}

int
main (int argc, char **argv)
{
#ifdef HAVE_MPI
  if (argc >= 4 && strcmp (argv[1], "--fake-rank") == 0)
    {
      /* the --set values of the sweep follow the scenario's path */
      g_autoptr (GPtrArray) sets = g_ptr_array_new ();
      for (int i = 4; i < argc; i++)
        g_ptr_array_add (sets, argv[i]);
      g_ptr_array_add (sets, NULL);
      return fake_rank (argv[2], argv[3], (const char *const *) sets->pdata, argc, argv);
    }
  g_autofree char *self = g_canonicalize_filename (argv[0], NULL);
  g_setenv ("DTSIM_TEST_MPI_SELF", self, TRUE);
#endif
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-mpi-XXXXXX", NULL);
  g_test_add_func ("/mpi/digest", test_digest);
  g_test_add_func ("/mpi/launched", test_launched);
#ifdef HAVE_MPI
  g_test_add_func ("/mpi/same-rows", test_same_rows);
  g_test_add_func ("/mpi/slots", test_slots);
  g_test_add_func ("/mpi/refused", test_refused);
  g_test_add_func ("/mpi/hostile-rank", test_hostile_rank);
  g_test_add_func ("/mpi/rank-killed", test_rank_killed);
  g_test_add_func ("/mpi/job-ended", test_job_ended);
#else
  g_test_add_func ("/mpi/not-built", test_not_built);
#endif
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
