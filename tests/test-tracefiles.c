/*
 * test-tracefiles.c — the files around a trace database (sim/trace.c,
 * views/tracedb.c; docs/security.md): two runs aimed at one database never
 * lose one of them, a killed run's leftovers go at the next run and a live
 * run's stay, reading a database writes nothing beside it, and a run whose
 * folder disappears says so.
 *
 * The runs are real `dtsim run` processes.  Where a test needs a run to be
 * at a given point (holding its lock, writing its temporary file) it stops
 * it there with SIGSTOP, seen from the files it writes, instead of hoping
 * for a timing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/util.h"

static char *tmpdir;

/* An empty folder `name` in tmpdir. */
static char *
fresh_dir (const char *name)
{
  char *dir = g_build_filename (tmpdir, name, NULL);
  sim_remove_tree (dir);
  g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
  return dir;
}

static void
reset_signals (gpointer data G_GNUC_UNUSED)
{
  signal (SIGINT, SIG_DFL);
  signal (SIGTERM, SIG_DFL);
}

/* A `dtsim run` started in the background, its stderr in a pipe. */
typedef struct {
  GPid pid;
  int err_fd;
  int status;            /* as waitpid() gives it, once reaped */
  gboolean reaped;
  char *err;             /* its stderr, once reaped */
} Child;

/* Starts `dtsim run small.ini -o DB --quiet` with the --set words of
 * `sets` (NULL-terminated, may be NULL) in folder `dir`. */
static void
child_start (Child *c, const char *dir, const char *db, const char *const *sets)
{
  g_autofree char *ini = test_data_path ("small.ini");
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) g_getenv ("DTSIM_BIN"));
  const char *fixed[] = { "run", ini, "-o", db, "--quiet" };
  for (gsize i = 0; i < G_N_ELEMENTS (fixed); i++)
    g_ptr_array_add (argv, (gpointer) fixed[i]);
  for (int i = 0; sets && sets[i]; i++)
    {
      g_ptr_array_add (argv, (gpointer) "--set");
      g_ptr_array_add (argv, (gpointer) sets[i]);
    }
  g_ptr_array_add (argv, NULL);
  memset (c, 0, sizeof *c);
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_async_with_pipes (dir, (char **) argv->pdata, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD
                                           | G_SPAWN_STDOUT_TO_DEV_NULL, reset_signals, NULL,
                                           &c->pid, NULL, NULL, &c->err_fd, &error));
  g_assert_no_error (error);
}

/* Reads what is left of its stderr and reaps it (blocking when `block`);
 * TRUE once it has ended. */
static gboolean
child_reap (Child *c, gboolean block)
{
  if (c->reaped)
    return TRUE;
  pid_t r = waitpid (c->pid, &c->status, block ? 0 : WNOHANG);
  g_assert_cmpint (r, !=, -1);
  if (r == 0)
    return FALSE;
  GString *s = g_string_new (NULL);
  char buf[4096];
  ssize_t n;
  while ((n = read (c->err_fd, buf, sizeof buf)) > 0)
    g_string_append_len (s, buf, n);
  close (c->err_fd);
  g_spawn_close_pid (c->pid);
  c->err = g_string_free (s, FALSE);
  c->reaped = TRUE;
  return TRUE;
}

/* Its exit code; asserts it exited rather than died of a signal. */
static int
child_code (Child *c)
{
  child_reap (c, TRUE);
  g_assert_true (WIFEXITED (c->status));
  return WEXITSTATUS (c->status);
}

static void
child_clear (Child *c)
{
  child_reap (c, TRUE);
  g_free (c->err);
}

/* The pid the lock file `lock` names ("pid N, scenario FILE"), 0 when it is
 * absent or says nothing yet. */
static GPid
lock_pid (const char *lock)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (lock, &text, NULL, NULL) || !g_str_has_prefix (text, "pid "))
    return 0;
  return (GPid) g_ascii_strtoll (text + 4, NULL, 10);
}

static gint64
count (const char *db, const char *sql)
{
  return (gint64) test_query_number (db, sql);
}

/* small.ini's sweep: two points, each of one seed. */
#define POINTS 2

/* The database at `db` holds the whole of one run of seed `seed`: both its
 * points done, and no row of another seed. */
static void
assert_holds_seed (const char *db, int seed)
{
  g_autofree char *sql = g_strdup_printf ("SELECT COUNT(*) FROM runs WHERE status = 'done'"
                                          " AND seed = %d", seed);
  g_assert_cmpint (count (db, sql), ==, POINTS);
  g_assert_cmpint (count (db, "SELECT COUNT(*) FROM runs"), ==, POINTS);
  g_assert_cmpint (count (db, "SELECT COUNT(*) FROM iterations WHERE run_id NOT IN"
                              " (SELECT id FROM runs)"), ==, 0);
}

/* Pairs of runs started at once on one database, with different seeds.
 * Whichever takes the lock is stopped (SIGSTOP) as soon as its pid shows in
 * the lock file, so the two surely overlap: the other must then exit 2 with
 * the one line naming the holder, and once the holder goes on, the database
 * holds the holder's rows, whole.  A pair whose first run ended before the
 * test could stop it (a loaded machine) proves less: it must still lose
 * nothing silently (each run either refused with the line or its rows are
 * the database's, a later complete run replacing an earlier one), and is
 * tried again; at most as many of those as pairs. */
static void
test_lock_pairs (void)
{
  const int pairs = 20;
  g_autofree char *dir = fresh_dir ("pairs");
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_autofree char *lock = g_build_filename (dir, ".t.db.lock", NULL);
  int overlapped = 0, missed = 0;
  for (int k = 0; overlapped < pairs; k++)
    {
      g_assert_cmpint (missed, <=, pairs);
      Child c[2];
      int seeds[2] = { 1000 + 2 * k, 1001 + 2 * k };
      for (int i = 0; i < 2; i++)
        {
          g_autofree char *seed = g_strdup_printf ("scenario.seed=%d", seeds[i]);
          const char *sets[] = { seed, "scenario.iterations=1000", NULL };
          child_start (&c[i], dir, db, sets);
        }
      int holder = -1;
      while (holder < 0 && !(child_reap (&c[0], FALSE) && child_reap (&c[1], FALSE)))
        {
          GPid p = lock_pid (lock);
          for (int i = 0; i < 2 && holder < 0; i++)
            if (p == c[i].pid && !c[i].reaped)
              {
                g_assert_cmpint (kill (p, SIGSTOP), ==, 0);
                /* it still holds the lock: the file it removes before it
                 * lets go still names it */
                if (lock_pid (lock) == p)
                  holder = i;
                else
                  g_assert_cmpint (kill (p, SIGCONT), ==, 0);
              }
          if (holder < 0)
            g_usleep (500);
        }
      if (holder >= 0)
        {
          Child *h = &c[holder], *o = &c[1 - holder];
          g_assert_cmpint (child_code (o), ==, 2);
          g_autofree char *line = g_strdup_printf ("t.db: in use by dtsim run (pid %d, scenario ",
                                                   (int) h->pid);
          g_assert_nonnull (strstr (o->err, line));
          g_assert_nonnull (strstr (o->err, "small.ini); wait for it to finish"));
          g_assert_true (strchr (o->err, '\n') == o->err + strlen (o->err) - 1);
          g_assert_cmpint (kill (h->pid, SIGCONT), ==, 0);
          g_assert_cmpint (child_code (h), ==, 0);
          assert_holds_seed (db, seeds[holder]);
          overlapped++;
        }
      else
        {
          /* both ended before either could be stopped holding the lock */
          int codes[2] = { child_code (&c[0]), child_code (&c[1]) };
          g_assert_true (codes[0] == 0 || codes[1] == 0);
          for (int i = 0; i < 2; i++)
            if (codes[i] == 2)
              g_assert_nonnull (strstr (c[i].err, ": in use by dtsim run (pid "));
            else
              g_assert_cmpint (codes[i], ==, 0);
          int seed = (int) count (db, "SELECT seed FROM runs LIMIT 1");
          g_assert_true ((seed == seeds[0] && codes[0] == 0)
                         || (seed == seeds[1] && codes[1] == 0));
          assert_holds_seed (db, seed);
          missed++;
        }
      child_clear (&c[0]);
      child_clear (&c[1]);
      /* no lock file or temporary left behind by either */
      g_assert_cmpuint (test_count_entries (dir, "."), ==, 0);
    }
  g_test_message ("%d overlapping pairs, %d that did not overlap", overlapped, missed);
}

/* A run killed with SIGKILL leaves its temporary file, its journal and the
 * lock file; the lock itself died with it, so the next run goes ahead, and
 * removes that temporary and journal, but keeps a temporary some live
 * process holds the lock of (as every writer does on its own) and files of
 * other names.  Nothing of the runs is left behind. */
static void
test_stale_temporaries (void)
{
  g_autofree char *dir = fresh_dir ("stale");
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_autofree char *lock = g_build_filename (dir, ".t.db.lock", NULL);
  Child c;
  const char *sets[] = { "scenario.iterations=100000000", "trace.max_size=1PB",
                         "scenario.max_events=1000000000000000", NULL };
  child_start (&c, dir, db, sets);
  /* until it holds the lock and has written rows (at most 120 s: a loaded
   * machine running the rest of the suite may take a while to start it) */
  for (int k = 0; k < 120000 && !(lock_pid (lock) == c.pid
                                  && test_count_entries (dir, ".t.db.") >= 3); k++)
    g_usleep (1000);
  g_assert_cmpint (lock_pid (lock), ==, c.pid);
  g_assert_cmpint (kill (c.pid, SIGKILL), ==, 0);
  child_reap (&c, TRUE);
  g_assert_true (WIFSIGNALED (c.status));
  /* the temporary and the lock file, and the journal when the kill came
   * inside a transaction (it exists only between a batch's first row and
   * its commit) */
  guint left = test_count_entries (dir, ".t.db.");
  g_assert_cmpuint (left, >=, 2);
  g_assert_cmpuint (left, <=, 3);
  g_assert_true (g_file_test (lock, G_FILE_TEST_EXISTS));
  child_clear (&c);

  /* a temporary in use: open and locked by this process */
  g_autofree char *live = g_build_filename (dir, ".t.db.Live00", NULL);
  g_assert_true (g_file_set_contents (live, "", 0, NULL));
  int live_fd = open (live, O_RDONLY);
  g_assert_cmpint (live_fd, >=, 0);
  g_assert_cmpint (flock (live_fd, LOCK_EX | LOCK_NB), ==, 0);
  /* a name the writer never makes: not its to remove */
  g_autofree char *other = g_build_filename (dir, ".t.db.notes", NULL);
  g_assert_true (g_file_set_contents (other, "mine", -1, NULL));

  g_autofree char *out = NULL, *err = NULL;
  g_autofree char *ini = test_data_path ("small.ini");
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "--quiet", NULL), ==,
                   0);
  close (live_fd);
  assert_holds_seed (db, 7);
  /* left: the live temporary and the other file, nothing else of a run */
  g_assert_cmpuint (test_count_entries (dir, "."), ==, 2);
  g_assert_true (g_file_test (live, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (other, G_FILE_TEST_EXISTS));
}

/* A trace set to WAL mode by someone else, in a folder made read-only, is
 * read by export and report, and nothing appears beside it (tests run as
 * root, whom the mode does not stop: the folder's entries are compared).
 * Then a program writing it in WAL mode, with changes not yet in the file
 * itself: the reader sees them, and still creates nothing. */
static void
test_read_wal_readonly (void)
{
  g_autofree char *dir = fresh_dir ("wal");
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_autofree char *csv = g_build_filename (tmpdir, "wal.csv", NULL);
  g_autofree char *html = g_build_filename (tmpdir, "wal.html", NULL);
  g_autofree char *ini = test_data_path ("small.ini");
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", ini, "-o", db, "--quiet", NULL), ==,
                   0);
  sqlite3 *w = NULL;
  g_assert_cmpint (sqlite3_open (db, &w), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (w, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_close (w), ==, SQLITE_OK);
  g_assert_cmpuint (test_count_entries (dir, ""), ==, 1);
  gsize len = 0;
  g_autofree char *before = test_read_file (db, &len);
  g_assert_cmpint (g_chmod (dir, 0555), ==, 0);
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "export", db, "--format", "csv", "-o", csv,
                                   NULL), ==, 0);
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "report", db, "-o", html, NULL), ==, 0);
  g_assert_cmpuint (test_count_entries (dir, ""), ==, 1);
  gsize len_after = 0;
  g_autofree char *after = test_read_file (db, &len_after);
  g_assert_cmpuint (len, ==, len_after);
  g_assert_true (memcmp (before, after, len) == 0);
  g_autofree char *csv_text = test_read_file (csv, NULL);
  g_assert_nonnull (strstr (csv_text, "small"));

  /* a writer in WAL mode, open, its change only in t.db-wal */
  g_assert_cmpint (g_chmod (dir, 0755), ==, 0);
  g_assert_cmpint (sqlite3_open (db, &w), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (w, "PRAGMA wal_autocheckpoint=0;"
                                    "UPDATE runs SET name = 'renamed-in-wal' WHERE id = 1",
                                 NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpuint (test_count_entries (dir, "t.db-"), ==, 2);
  g_assert_cmpint (g_chmod (dir, 0555), ==, 0);
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "export", db, "--format", "csv", "-o", csv,
                                   NULL), ==, 0);
  g_free (csv_text);
  csv_text = test_read_file (csv, NULL);
  g_assert_nonnull (strstr (csv_text, "renamed-in-wal"));
  g_assert_cmpuint (test_count_entries (dir, ""), ==, 3);
  g_assert_cmpint (sqlite3_close (w), ==, SQLITE_OK);
  g_assert_cmpint (g_chmod (dir, 0755), ==, 0);
}

/* The folder of the output removed while the run writes its trace: one
 * line naming the folder and saying it is gone (not SQLite's "attempt to
 * write a readonly database"), exit code 1, wherever the run was when it
 * happened (creating its tables, writing rows, renaming).  The run is
 * stopped while its temporary file exists, the folder removed, and the run
 * let go on. */
static void
test_folder_removed (void)
{
  g_autofree char *dir = fresh_dir ("gone");
  g_autofree char *sub = g_build_filename (dir, "out", NULL);
  g_autofree char *db = g_build_filename (sub, "t.db", NULL);
  for (int attempt = 0;; attempt++)
    {
      g_assert_cmpint (attempt, <, 5);
      g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
      Child c;
      const char *sets[] = { "scenario.iterations=3000", NULL };
      child_start (&c, dir, db, sets);
      /* its lock file and its temporary file */
      while (!child_reap (&c, FALSE) && test_count_entries (sub, ".t.db.") < 2)
        g_usleep (500);
      if (!c.reaped)
        g_assert_cmpint (kill (c.pid, SIGSTOP), ==, 0);
      /* stopped before its end: the trace is not yet renamed into place */
      if (!c.reaped && !g_file_test (db, G_FILE_TEST_EXISTS))
        {
          sim_remove_tree (sub);
          g_assert_cmpint (kill (c.pid, SIGCONT), ==, 0);
          int code = child_code (&c);
          g_test_message ("stderr: %s", c.err);
          g_assert_cmpint (code, ==, 1);
          g_assert_true (g_str_has_prefix (c.err, "dtsim: "));
          g_assert_nonnull (strstr (c.err, "out/t.db: "));
          g_autofree char *named = g_strdup_printf ("'%s' was removed during the run; create"
                                                    " the folder again", sub);
          g_assert_nonnull (strstr (c.err, named));
          g_assert_null (strstr (c.err, "readonly"));
          g_assert_true (strchr (c.err, '\n') == c.err + strlen (c.err) - 1);
          g_assert_false (g_file_test (sub, G_FILE_TEST_EXISTS));
          child_clear (&c);
          break;
        }
      /* it finished before it could be stopped: again, on a fresh folder */
      if (!c.reaped)
        g_assert_cmpint (kill (c.pid, SIGCONT), ==, 0);
      g_assert_cmpint (child_code (&c), ==, 0);
      child_clear (&c);
      sim_remove_tree (sub);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-tracefiles-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  g_test_add_func ("/tracefiles/lock/pairs", test_lock_pairs);
  g_test_add_func ("/tracefiles/stale-temporaries", test_stale_temporaries);
  g_test_add_func ("/tracefiles/read/wal-readonly", test_read_wal_readonly);
  g_test_add_func ("/tracefiles/folder-removed", test_folder_removed);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
