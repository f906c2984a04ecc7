/*
 * perfetto.c — `dtsim export DB --format perfetto`: Chrome trace event JSON
 * (the format Perfetto and chrome://tracing open; docs/trace.md, "Timelines
 * in Perfetto").
 *
 * Each run is a process (pid = run id, named "run N: NAME").  Each actor of
 * its spans (worker3, server0, ...) is a track holding its spans as slices
 * (a B and an E event, named by the span's kind, with the iteration and the
 * bytes as arguments); a pipeline worker's track also names its stage and
 * replica.  Spans of one actor that overlap go to further tracks of that
 * actor ("worker3 #2"), so that every track's slices nest properly.  Each
 * message is a slice on its sender's "sends" track and on its receiver's
 * "receives" track, joined by a flow arrow (s at the send, f at the
 * arrival, one id per message); all-reduce buckets are slices on a track of
 * their own.  Timestamps are microseconds of simulated time.  In a run of
 * several jobs (table jobs) the actors of each job ("JOB/worker3") are the
 * threads of a process of their own, SIM_PERFETTO_JOB_PID (run, job),
 * named "run N: job JOB"; links, buckets and counters stay in the run's.
 *
 * Text from the database (names, kinds, tags) is cleaned and JSON-escaped;
 * rows whose times are not finite, or end before they start, are left out
 * and counted in one line on stderr.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "views/perfetto.h"
#include "config/simconfig.h"
#include "config/units.h"

/* Where the tracks of one actor sort: its spans, then its sends, then its
 * receives, each kind with its lanes. */
enum { TRACK_SPANS = 0, TRACK_SENDS = 1, TRACK_RECVS = 2, TRACK_KINDS = 3 };

/* One run being written. */
typedef struct {
  SimTraceDb *t;
  GString *s;            /* events not yet written */
  FILE *f;
  gint64 pid;
  gboolean first;        /* no event written yet (no comma before it) */
  GHashTable *actors;    /* clean name -> Actor */
  GHashTable *stage_of;  /* actor name -> SimTraceStage * (pipeline workers) */
  int n_actors;
  gboolean detail;       /* spans have phase, microbatch, first_layer, last_layer */
  gboolean routes;       /* messages have route, and the links table names them */
  GHashTable *links;     /* link id (GINT_TO_POINTER) -> Link */
  gint64 skipped;        /* rows left out: bad times */
  gint64 crowded;        /* spans left out: too many overlapping */
  gboolean write_failed;
} Writer;

typedef struct {
  int index;                                  /* in the sorted actors */
  gint64 pid;                                 /* its process: the run's or its job's */
  char *name;
  double *ends[TRACK_KINDS];                  /* (SIM_PERFETTO_MAX_LANES) */
  int lanes[TRACK_KINDS];                     /* lanes opened */
} Actor;

/* One step of a counter: at `t`, add `delta`. */
typedef struct {
  double t, delta;
} Step;

/* A link the run's messages crossed: a track of its own, and its load. */
typedef struct {
  Actor *track;
  double bandwidth;      /* bytes/s */
  GArray *steps;         /* Step: the messages' mean rates on it */
} Link;

static void
actor_free (Actor *a)
{
  for (int k = 0; k < TRACK_KINDS; k++)
    g_free (a->ends[k]);
  g_free (a->name);
  g_free (a);
}

static void
link_free (Link *l)
{
  actor_free (l->track);
  g_array_unref (l->steps);
  g_free (l);
}

static void
flush (Writer *w)
{
  if (w->s->len && fwrite (w->s->str, 1, w->s->len, w->f) != w->s->len)
    w->write_failed = TRUE;
  g_string_truncate (w->s, 0);
}

/* Opens an event: {"ph":PH,"pid":PID,"tid":TID; the caller adds the rest
 * and the closing brace. */
static void
event (Writer *w, char ph, gint64 pid, gint64 tid)
{
  g_string_append_printf (w->s, "%s\n{\"ph\":\"%c\",\"pid\":%" G_GINT64_FORMAT ",\"tid\":%"
                          G_GINT64_FORMAT, w->first ? "" : ",", ph, pid, tid);
  w->first = FALSE;
  if (w->s->len > (1 << 20))
    flush (w);
}

static void
ts (Writer *w, double seconds)
{
  g_string_append (w->s, ",\"ts\":");
  sim_append_double (w->s, seconds * 1e6);
}

/* The track id of lane `lane` of track kind `kind` of actor a. */
static gint64
tid_of (const Actor *a, int kind, int lane)
{
  return 1 + (gint64) a->index * TRACK_KINDS * SIM_PERFETTO_MAX_LANES
         + (gint64) kind * SIM_PERFETTO_MAX_LANES + lane;
}

/* Names a new track. */
static void
name_track (Writer *w, const Actor *a, int kind, int lane)
{
  gint64 tid = tid_of (a, kind, lane);
  static const char *const suffix[] = { "", " sends", " receives" };
  const SimTraceStage *stage = g_hash_table_lookup (w->stage_of, a->name);
  g_autoptr (GString) name = g_string_new (a->name);
  if (stage && kind == TRACK_SPANS)
    g_string_append_printf (name, " (stage %" G_GINT64_FORMAT ", replica %" G_GINT64_FORMAT ")",
                            stage->stage, stage->replica);
  g_string_append (name, suffix[kind]);
  if (lane > 0)
    g_string_append_printf (name, " #%d", lane + 1);
  event (w, 'M', a->pid, tid);
  g_string_append (w->s, ",\"name\":\"thread_name\",\"args\":{\"name\":");
  sim_append_json_string (w->s, name->str);
  g_string_append (w->s, "}}");
  event (w, 'M', a->pid, tid);
  g_string_append_printf (w->s, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%"
                          G_GINT64_FORMAT "}}", tid);
}

/* The lane of a's kind-`kind` tracks free at `start` (opening one, named,
 * if none is), noting it busy until `end`; -1 when every lane is busy. */
static int
lane_for (Writer *w, Actor *a, int kind, double start, double end)
{
  if (!a->ends[kind])
    a->ends[kind] = g_new (double, SIM_PERFETTO_MAX_LANES);
  for (int l = 0; l < SIM_PERFETTO_MAX_LANES; l++)
    {
      if (l == a->lanes[kind])
        {
          a->lanes[kind]++;
          name_track (w, a, kind, l);
        }
      else if (a->ends[kind][l] > start)
        continue;
      a->ends[kind][l] = end;
      return l;
    }
  return -1;
}

/* Natural order of actor names: worker2 before worker10. */
static gint
natural_compare (gconstpointer pa, gconstpointer pb)
{
  const char *a = *(const char *const *) pa, *b = *(const char *const *) pb;
  while (*a && *b)
    {
      if (g_ascii_isdigit (*a) && g_ascii_isdigit (*b))
        {
          const char *ea = a, *eb = b;
          while (*a == '0' && g_ascii_isdigit (a[1]))
            a++;
          while (*b == '0' && g_ascii_isdigit (b[1]))
            b++;
          while (g_ascii_isdigit (*ea))
            ea++;
          while (g_ascii_isdigit (*eb))
            eb++;
          if (ea - a != eb - b)
            return (ea - a) < (eb - b) ? -1 : 1;
          int c = strncmp (a, b, (gsize) (ea - a));
          if (c)
            return c;
          a = ea;
          b = eb;
          continue;
        }
      if (*a != *b)
        return (unsigned char) *a < (unsigned char) *b ? -1 : 1;
      a++;
      b++;
    }
  return *a ? 1 : *b ? -1 : 0;
}

/* Whether [a, b] are usable times; counts the row as skipped if not. */
static gboolean
good_times (Writer *w, double a, double b)
{
  if (isfinite (a) && isfinite (b) && b >= a)
    return TRUE;
  w->skipped++;
  return FALSE;
}

/* Names process `pid`, job `job` of the run being written, and sorts it
 * after the run's own. */
static void
name_process (Writer *w, gint64 pid, const char *job)
{
  g_autofree char *title = g_strdup_printf ("run %" G_GINT64_FORMAT ": job %s", w->pid, job);
  event (w, 'M', pid, 0);
  g_string_append (w->s, ",\"name\":\"process_name\",\"args\":{\"name\":");
  sim_append_json_string (w->s, title);
  g_string_append (w->s, "}}");
  event (w, 'M', pid, 0);
  g_string_append_printf (w->s, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%"
                          G_GINT64_FORMAT "}}", pid);
}

/* The processes of the run's jobs (a run of several jobs, table jobs):
 * clean job name -> pid SIM_PERFETTO_JOB_PID (run, job) (GSIZE_TO_POINTER);
 * empty for a run of one job or a trace without the table; NULL with
 * *error on a database error. */
static GHashTable *
job_processes (Writer *w, GError **error)
{
  GHashTable *jobs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  static const char *const cols[] = { "run_id", "job", "name", NULL };
  int has = sim_tracedb_has (w->t, "jobs", cols, error);
  if (has <= 0)
    {
      if (has < 0)
        g_clear_pointer (&jobs, g_hash_table_unref);
      return jobs;
    }
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (w->t, "SELECT job, name FROM jobs WHERE run_id = ? ORDER BY job",
                           error);
  if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
    {
      g_hash_table_unref (jobs);
      return NULL;
    }
  int rc;
  while ((rc = sim_tracedb_step (w->t, st, error)) == SQLITE_ROW)
    {
      gint64 j = sqlite3_column_int64 (st, 0);
      if (j < 0 || j >= SIM_MAX_JOBS)
        continue;
      char *name = sim_clean_text (sim_tracedb_text (st, 1), 120);
      g_hash_table_insert (jobs, name, GSIZE_TO_POINTER ((gsize) SIM_PERFETTO_JOB_PID (w->pid, j)));
    }
  if (rc < 0)
    g_clear_pointer (&jobs, g_hash_table_unref);
  return jobs;
}

static gboolean
load_actors (Writer *w, gboolean messages, GError **error)
{
  g_autofree char *sql = g_strdup_printf (
    "SELECT actor FROM spans WHERE run_id = ?1%s",
    messages ? " UNION SELECT src FROM messages WHERE run_id = ?1"
               " UNION SELECT dst FROM messages WHERE run_id = ?1" : "");
  g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (w->t, sql, error);
  if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
    return FALSE;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  GHashTable *seen = g_hash_table_new (g_str_hash, g_str_equal);
  int rc;
  while ((rc = sim_tracedb_step (w->t, st, error)) == SQLITE_ROW)
    {
      char *n = sim_clean_text (sim_tracedb_text (st, 0), 120);
      if (g_hash_table_contains (seen, n))
        {
          g_free (n);
          continue;
        }
      g_hash_table_add (seen, n);
      g_ptr_array_add (names, n);
    }
  g_hash_table_unref (seen);
  if (rc < 0)
    return FALSE;
  g_ptr_array_sort (names, natural_compare);
  g_autoptr (GHashTable) jobs = job_processes (w, error);
  if (!jobs)
    return FALSE;
  g_autoptr (GHashTable) named = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < names->len; i++)
    {
      Actor *a = g_new0 (Actor, 1);
      a->index = (int) i;
      a->name = g_strdup (g_ptr_array_index (names, i));
      a->pid = w->pid;
      const char *slash = strchr (a->name, '/');
      if (slash)
        {
          g_autofree char *job = g_strndup (a->name, (gsize) (slash - a->name));
          gpointer pid;
          if (g_hash_table_lookup_extended (jobs, job, NULL, &pid))
            {
              a->pid = GPOINTER_TO_SIZE (pid);
              if (!g_hash_table_contains (named, pid))
                {
                  g_hash_table_add (named, pid);
                  name_process (w, a->pid, job);
                }
            }
        }
      g_hash_table_insert (w->actors, a->name, a);
    }
  w->n_actors = (int) names->len;
  return TRUE;
}

/* The links of the run (table links), each a track after the actors' and
 * the buckets'. */
static gboolean
load_links (Writer *w, GError **error)
{
  static const char *const cols[] = { "run_id", "link", "name", "bandwidth", NULL };
  static const char *const mcols[] = { "route", NULL };
  int has = sim_tracedb_has (w->t, "links", cols, error);
  int routed = has > 0 ? sim_tracedb_has (w->t, "messages", mcols, error) : 0;
  if (has < 0 || routed < 0)
    return FALSE;
  w->routes = has > 0 && routed > 0;
  if (!w->routes)
    return TRUE;
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (w->t, "SELECT link, name, bandwidth FROM links WHERE run_id = ?"
                                 " ORDER BY link", error);
  if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
    return FALSE;
  int rc, k = 0;
  while ((rc = sim_tracedb_step (w->t, st, error)) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      double bw = sqlite3_column_double (st, 2);
      if (id < 0 || id > G_MAXINT || !(bw > 0 && isfinite (bw))
          || g_hash_table_contains (w->links, GINT_TO_POINTER ((int) id)))
        continue;
      Link *l = g_new0 (Link, 1);
      l->track = g_new0 (Actor, 1);
      l->track->index = w->n_actors + 1 + k++;
      l->track->pid = w->pid;
      g_autofree char *name = sim_clean_text (sim_tracedb_text (st, 1), 120);
      l->track->name = g_strdup_printf ("link %s", name);
      l->bandwidth = bw;
      l->steps = g_array_new (FALSE, FALSE, sizeof (Step));
      g_hash_table_insert (w->links, GINT_TO_POINTER ((int) id), l);
    }
  return rc >= 0;
}

static Actor *
actor_of (Writer *w, sqlite3_stmt *st, int col)
{
  g_autofree char *n = sim_clean_text (sim_tracedb_text (st, col), 120);
  return g_hash_table_lookup (w->actors, n);
}

static void
slice (Writer *w, gint64 pid, gint64 tid, double a, double b, const char *name, const char *cat,
       const char *args)
{
  event (w, 'B', pid, tid);
  ts (w, a);
  g_string_append (w->s, ",\"name\":");
  sim_append_json_string (w->s, name);
  g_string_append_printf (w->s, ",\"cat\":\"%s\",\"args\":{%s}}", cat, args);
  event (w, 'E', pid, tid);
  ts (w, b);
  g_string_append (w->s, "}");
}

static gboolean
write_spans (Writer *w, GError **error)
{
  g_autofree char *sql = g_strdup_printf (
    "SELECT actor, kind, start, end, iteration, bytes, %s FROM spans WHERE run_id = ?"
    " ORDER BY actor, start, end", w->detail ? "phase, microbatch, first_layer, last_layer"
                                             : "NULL, NULL, NULL, NULL");
  g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (w->t, sql, error);
  if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
    return FALSE;
  int rc;
  while ((rc = sim_tracedb_step (w->t, st, error)) == SQLITE_ROW)
    {
      Actor *a = actor_of (w, st, 0);
      double s0 = sqlite3_column_double (st, 2), s1 = sqlite3_column_double (st, 3);
      if (!a || !good_times (w, s0, s1))
        continue;
      int lane = lane_for (w, a, TRACK_SPANS, s0, s1);
      if (lane < 0)
        {
          w->crowded++;
          continue;
        }
      /* a pipeline stage's compute is named by its phase */
      gboolean phased = sqlite3_column_type (st, 6) != SQLITE_NULL;
      g_autofree char *kind = sim_clean_text (sim_tracedb_text (st, phased ? 6 : 1), 40);
      g_autoptr (GString) args = g_string_new (NULL);
      double bytes = sqlite3_column_double (st, 5);
      g_string_append_printf (args, "\"bytes\":%.17g", isfinite (bytes) ? bytes : 0.0);
      static const char *const ints[] = { "iteration", NULL, NULL, "microbatch", "first_layer",
                                          "last_layer" };
      for (int c = 4; c <= 9; c++)
        if (ints[c - 4] && sqlite3_column_type (st, c) != SQLITE_NULL)
          g_string_append_printf (args, ",\"%s\":%" G_GINT64_FORMAT, ints[c - 4],
                                  (gint64) sqlite3_column_int64 (st, c));
      slice (w, a->pid, tid_of (a, TRACK_SPANS, lane), s0, s1, kind, phased ? "compute" : "span",
             args->str);
    }
  return rc >= 0;
}

static gint
step_compare (gconstpointer pa, gconstpointer pb)
{
  const Step *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  /* what ends at t ends before what starts at t */
  return (a->delta > b->delta) - (a->delta < b->delta);
}

/* Emits counter `name` of the process: the running sum of `steps` (sorted
 * here), one value per distinct time, as {"unit": value}. */
static void
counter (Writer *w, const char *name, const char *unit, GArray *steps, double scale)
{
  g_array_sort (steps, step_compare);
  double v = 0, peak = 0;
  for (guint i = 0; i < steps->len; i++)
    {
      const Step *s = &g_array_index (steps, Step, i);
      v += s->delta;
      peak = MAX (peak, fabs (v));
      if (i + 1 < steps->len && g_array_index (steps, Step, i + 1).t == s->t)
        continue;
      /* sums of rates that cancel leave rounding: show them as 0 */
      double shown = fabs (v) <= 1e-9 * peak ? 0 : v * scale;
      event (w, 'C', w->pid, 0);
      ts (w, s->t);
      g_string_append (w->s, ",\"name\":");
      sim_append_json_string (w->s, name);
      g_string_append (w->s, ",\"args\":{");
      sim_append_json_string (w->s, unit);
      g_string_append_c (w->s, ':');
      sim_append_double (w->s, shown);
      g_string_append (w->s, "}}");
    }
}

static gint
link_order (gconstpointer a, gconstpointer b)
{
  return ((const Link *) a)->track->index - ((const Link *) b)->track->index;
}

/* A message's slice on track TID, from S0 to S1, named NAME with ARGS (JSON
 * members), and its flow's end there: leaving the send (SIDE 0) as it
 * starts, entering the receive (SIDE 1) as it ends. */
static void
message_events (Writer *w, gint64 pid, gint64 tid, int side, double s0, double s1, gint64 id,
                const char *name, const char *args)
{
  event (w, 'B', pid, tid);
  ts (w, s0);
  g_string_append (w->s, ",\"name\":");
  sim_append_json_string (w->s, name);
  g_string_append_printf (w->s, ",\"cat\":\"message\",\"args\":{%s}}", args);
  /* the flow: leaves the send as it starts, enters the receive as
   * it ends (bound to the slice enclosing each point) */
  event (w, side ? 'f' : 's', pid, tid);
  ts (w, side ? s1 : s0);
  g_string_append_printf (w->s, ",\"name\":\"message\",\"cat\":\"message\",\"id\":%"
                          G_GINT64_FORMAT "%s}", id, side ? ",\"bp\":\"e\"" : "");
  event (w, 'E', pid, tid);
  ts (w, s1);
  g_string_append (w->s, "}");
}

/* The links a message crossed (ROUTE: link ids, space-separated), from S0
 * to S1: a slice on each link's track, and its mean rate, BYTES over the
 * time, added to the link's rate steps. */
static void
message_links (Writer *w, const char *route, double s0, double s1, double bytes,
               const char *name, const char *args)
{
  g_auto (GStrv) hops = g_strsplit (route, " ", 64);
  double rate = s1 > s0 ? bytes / (s1 - s0) : NAN;
  for (int h = 0; hops[h]; h++)
    {
      char *end = NULL;
      gint64 lid = g_ascii_strtoll (hops[h], &end, 10);
      Link *lk = end && *end == '\0' && lid >= 0 && lid <= G_MAXINT
                 ? g_hash_table_lookup (w->links, GINT_TO_POINTER ((int) lid)) : NULL;
      if (!lk)
        continue;
      int ll = lane_for (w, lk->track, TRACK_SPANS, s0, s1);
      if (ll >= 0)
        slice (w, w->pid, tid_of (lk->track, TRACK_SPANS, ll), s0, s1, name, "link", args);
      else
        w->crowded++;
      if (isfinite (rate) && rate > 0)
        {
          Step up = { s0, rate }, down = { s1, -rate };
          g_array_append_val (lk->steps, up);
          g_array_append_val (lk->steps, down);
        }
    }
}

/* Each link's use: a counter of its messages' mean rates over its
 * bandwidth, links in track order. */
static void
link_use (Writer *w)
{
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, w->links);
  g_autoptr (GList) order = NULL;
  while (g_hash_table_iter_next (&it, &key, &value))
    order = g_list_prepend (order, value);
  order = g_list_sort (order, link_order);
  for (GList *e = order; e; e = e->next)
    {
      Link *lk = e->data;
      if (lk->steps->len == 0)
        continue;
      g_autofree char *cname = g_strdup_printf ("%s utilisation", lk->track->name);
      counter (w, cname, "%", lk->steps, 100 / lk->bandwidth);
    }
}

/* Messages: a slice on the sender's sends and one on the receiver's
 * receives, and a flow from the first to the second. */
static gboolean
write_messages (Writer *w, GError **error)
{
  /* messages whose send was left out (too crowded): their receive is too,
   * so that every flow has both ends */
  g_autoptr (GHashTable) dropped = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                                          NULL);
  for (int side = 0; side < 2; side++)
    {
      g_autofree char *sql = g_strdup_printf (
        "SELECT src, dst, bytes, start, end, tag, rowid, %s FROM messages WHERE run_id = ?"
        " ORDER BY %s, start, end, rowid", w->routes ? "route" : "NULL", side ? "dst" : "src");
      g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (w->t, sql, error);
      if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
        return FALSE;
      int rc;
      while ((rc = sim_tracedb_step (w->t, st, error)) == SQLITE_ROW)
        {
          Actor *a = actor_of (w, st, side);
          double s0 = sqlite3_column_double (st, 3), s1 = sqlite3_column_double (st, 4);
          if (!a || !(side ? isfinite (s0) && isfinite (s1) && s1 >= s0 : good_times (w, s0, s1)))
            continue;
          gint64 id = sqlite3_column_int64 (st, 6);
          if (side && g_hash_table_contains (dropped, &id))
            continue;
          int kind = side ? TRACK_RECVS : TRACK_SENDS;
          int lane = lane_for (w, a, kind, s0, s1);
          if (lane < 0 && !side)
            {
              w->crowded++;
              g_hash_table_add (dropped, g_memdup2 (&id, sizeof id));
              continue;
            }
          if (lane < 0)
            {
              /* the receive has no room: its flow ends on the first track */
              event (w, 'f', a->pid, tid_of (a, kind, 0));
              ts (w, s1);
              g_string_append_printf (w->s, ",\"name\":\"message\",\"cat\":\"message\",\"id\":%"
                                      G_GINT64_FORMAT ",\"bp\":\"e\"}", id);
              w->crowded++;
              continue;
            }
          g_autofree char *src = sim_clean_text (sim_tracedb_text (st, 0), 120);
          g_autofree char *dst = sim_clean_text (sim_tracedb_text (st, 1), 120);
          g_autofree char *tag = sim_clean_text (sim_tracedb_text (st, 5), 40);
          double bytes = sqlite3_column_double (st, 2);
          g_autoptr (GString) args = g_string_new (NULL);
          g_string_append (args, "\"from\":");
          sim_append_json_string (args, src);
          g_string_append (args, ",\"to\":");
          sim_append_json_string (args, dst);
          g_string_append_printf (args, ",\"bytes\":%.17g", isfinite (bytes) ? bytes : 0.0);
          g_autofree char *name = g_strdup_printf ("%s %s %s", *tag ? tag : "message",
                                                   side ? "from" : "to", side ? src : dst);
          gint64 tid = tid_of (a, kind, lane);
          message_events (w, a->pid, tid, side, s0, s1, id, name, args->str);
          /* the links it crossed: a slice on each, and its mean rate */
          if (side || sqlite3_column_type (st, 7) == SQLITE_NULL)
            continue;
          message_links (w, sim_tracedb_text (st, 7), s0, s1, bytes, name, args->str);
        }
      if (rc < 0)
        return FALSE;
    }
  link_use (w);
  return TRUE;
}

/* Counters: each pipeline worker's stashed micro-batches (+1 as a forward
 * starts, -1 as a backward ends), and each sender's rate (every message in
 * flight counted at its mean rate, bytes / (end - start)). */
static gboolean
write_counters (Writer *w, gboolean messages, GError **error)
{
  for (int k = 0; k < 2; k++)
    {
      if (k == 0 && !w->detail)
        continue;
      if (k == 1 && !messages)
        break;
      const char *sql = k == 0
        ? "SELECT actor, start, end, phase = 'forward' FROM spans WHERE run_id = ?"
          " AND phase IS NOT NULL ORDER BY actor"
        : "SELECT src, start, end, bytes FROM messages WHERE run_id = ? AND end > start"
          " ORDER BY src";
      g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (w->t, sql, error);
      if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
        return FALSE;
      g_autoptr (GArray) steps = g_array_new (FALSE, FALSE, sizeof (Step));
      g_autofree char *actor = NULL;
      int rc;
      do
        {
          rc = sim_tracedb_step (w->t, st, error);
          if (rc < 0)
            return FALSE;
          g_autofree char *a = rc == SQLITE_ROW ? sim_clean_text (sim_tracedb_text (st, 0), 120)
                                                : NULL;
          if (actor && (!a || strcmp (a, actor) != 0) && steps->len)
            {
              g_autofree char *name = g_strdup_printf (k ? "%s sending" : "%s stash", actor);
              counter (w, name, k ? "Gbit/s" : "micro-batches", steps, k ? 8e-9 : 1);
              g_array_set_size (steps, 0);
            }
          if (!a)
            break;
          g_free (actor);
          actor = g_steal_pointer (&a);
          double s0 = sqlite3_column_double (st, 1), s1 = sqlite3_column_double (st, 2);
          if (!isfinite (s0) || !isfinite (s1) || s1 < s0)
            continue;
          if (k == 0)
            {
              Step s = sqlite3_column_int (st, 3) ? (Step) { s0, 1 } : (Step) { s1, -1 };
              g_array_append_val (steps, s);
            }
          else
            {
              double rate = sqlite3_column_double (st, 3) / (s1 - s0);
              if (!isfinite (rate))
                continue;
              Step up = { s0, rate }, down = { s1, -rate };
              g_array_append_val (steps, up);
              g_array_append_val (steps, down);
            }
        }
      while (TRUE);
    }
  return TRUE;
}

/* All-reduce buckets, on a track after the actors'. */
static gboolean
write_buckets (Writer *w, GError **error)
{
  static const char *const cols[] = { "run_id", "iteration", "bucket", "bytes", "ready", "start",
                                      "end", NULL };
  int has = sim_tracedb_has (w->t, "buckets", cols, error);
  if (has <= 0)
    return has == 0;
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (w->t, "SELECT iteration, bucket, bytes, ready, start, end FROM"
                                 " buckets WHERE run_id = ? ORDER BY start, end", error);
  if (!st || !sim_tracedb_rebind (w->t, st, w->pid, error))
    return FALSE;
  Actor bk = { .index = w->n_actors, .pid = w->pid, .name = (char *) "all-reduce buckets" };
  int rc;
  while ((rc = sim_tracedb_step (w->t, st, error)) == SQLITE_ROW)
    {
      double s0 = sqlite3_column_double (st, 4), s1 = sqlite3_column_double (st, 5);
      if (!good_times (w, s0, s1))
        continue;
      int lane = lane_for (w, &bk, TRACK_SPANS, s0, s1);
      if (lane < 0)
        {
          w->crowded++;
          continue;
        }
      double bytes = sqlite3_column_double (st, 2), ready = sqlite3_column_double (st, 3);
      g_autofree char *name = g_strdup_printf ("bucket %" G_GINT64_FORMAT,
                                               (gint64) sqlite3_column_int64 (st, 1));
      g_autofree char *args = g_strdup_printf (
        "\"iteration\":%" G_GINT64_FORMAT ",\"bytes\":%.17g,\"ready_us\":%.17g",
        (gint64) sqlite3_column_int64 (st, 0), isfinite (bytes) ? bytes : 0.0,
        isfinite (ready) ? ready * 1e6 : 0.0);
      slice (w, w->pid, tid_of (&bk, TRACK_SPANS, lane), s0, s1, name, "bucket", args);
    }
  g_free (bk.ends[TRACK_SPANS]);
  return rc >= 0;
}

static gboolean
write_run (Writer *w, const char *name, GError **error)
{
  g_autofree char *title = g_strdup_printf ("run %" G_GINT64_FORMAT ": %s", w->pid, name);
  event (w, 'M', w->pid, 0);
  g_string_append (w->s, ",\"name\":\"process_name\",\"args\":{\"name\":");
  sim_append_json_string (w->s, title);
  g_string_append (w->s, "}}");
  event (w, 'M', w->pid, 0);
  g_string_append_printf (w->s, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%"
                          G_GINT64_FORMAT "}}", w->pid);
  static const char *const mcols[] = { "run_id", "src", "dst", "bytes", "start", "end", "tag",
                                       NULL };
  int messages = sim_tracedb_has (w->t, "messages", mcols, error);
  static const char *const scols[] = { "run_id", "actor", "kind", "start", "end", "iteration",
                                       "bytes", NULL };
  int spans = messages < 0 ? -1 : sim_tracedb_has (w->t, "spans", scols, error);
  if (spans < 0)
    return FALSE;
  if (!spans)
    return TRUE;
  static const char *const dcols[] = { "phase", "microbatch", "first_layer", "last_layer",
                                       NULL };
  int detail = sim_tracedb_has (w->t, "spans", dcols, error);
  if (detail < 0)
    return FALSE;
  w->detail = detail > 0;
  gboolean ok = load_actors (w, messages > 0, error)
                && (w->stage_of = sim_tracedb_stages (w->t, w->pid, error)) != NULL
                && (messages == 0 || load_links (w, error))
                && write_spans (w, error) && (messages == 0 || write_messages (w, error))
                && write_buckets (w, error) && write_counters (w, messages > 0, error);
  return ok;
}

int
sim_perfetto_write (SimTraceDb *t, FILE *f, gint64 run, GError **error)
{
  g_autoptr (sqlite3_stmt) runs
    = sim_tracedb_prepare (t, "SELECT id, name FROM runs WHERE ?1 <= 0 OR id = ?1 ORDER BY id",
                           error);
  if (!runs || !sim_tracedb_check (t, sqlite3_bind_int64 (runs, 1, run), error))
    return 2;
  Writer w = { .t = t, .f = f, .s = g_string_new ("{\"displayTimeUnit\":\"ms\",\"traceEvents\":["),
               .first = TRUE };
  int rc, n = 0;
  gboolean ok = TRUE;
  while (ok && (rc = sim_tracedb_step (t, runs, error)) == SQLITE_ROW)
    {
      n++;
      w.pid = sqlite3_column_int64 (runs, 0);
      g_autofree char *name = sim_clean_text (sim_tracedb_text (runs, 1), 120);
      w.actors = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                        (GDestroyNotify) actor_free);
      w.stage_of = NULL;
      w.links = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                       (GDestroyNotify) link_free);
      w.routes = FALSE;
      ok = write_run (&w, name, error);
      g_hash_table_unref (w.actors);
      g_clear_pointer (&w.stage_of, g_hash_table_unref);
      g_hash_table_unref (w.links);
    }
  int code = !ok || rc < 0 ? 2 : 0;
  if (code == 0 && run > 0 && n == 0)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "--run: %s has no run %" G_GINT64_FORMAT "; `dtsim export %s` lists them",
                   t->shown, run, t->shown);
      code = 2;
    }
  g_string_append (w.s, "\n]}\n");
  if (code == 0)
    flush (&w);
  g_string_free (w.s, TRUE);
  if (code == 0 && (w.write_failed || ferror (f)))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "cannot write the trace (disk full?)");
      code = 1;
    }
  if (code == 0 && w.skipped)
    g_printerr ("dtsim: %s: %" G_GINT64_FORMAT " rows with times that are not finite or end"
                " before they start were left out\n", t->shown, w.skipped);
  if (code == 0 && w.crowded)
    g_printerr ("dtsim: %s: %" G_GINT64_FORMAT " spans or messages overlapping more than %d"
                " others of the same actor were left out\n", t->shown, w.crowded,
                SIM_PERFETTO_MAX_LANES);
  return code;
}
