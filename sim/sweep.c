/*
 * sweep.c — running the points of a sweep in parallel (--jobs), with the one
 * progress display of `dtsim run`.
 *
 * Each point is assembled and run in a pool thread with its own engine,
 * network, data, model and policy (sim_run_config), writing its rows to a
 * trace buffer (sim/trace.c) whose chunks go through a GAsyncQueue to the
 * calling thread, the only one that touches SQLite.  Run ids are assigned in
 * point order when a point is started, so the database holds the same rows
 * whatever the number of threads (rows of different runs may interleave in
 * rowid order; each run's rows keep their order).  On a terminal one bar
 * covers the whole sweep; elsewhere each finished point prints one line.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
#include <cblas.h>
#endif

#include "policies/parallel.h"
#include "sim/sweep.h"

typedef struct Sweep Sweep;

/* One point of a sweep, from its start to its report. */
typedef struct {
  Sweep *sw;
  guint index;           /* point order, from 0 */
  const SimConfig *c;
  gint64 run;            /* its runs.id */
  SimRunSummary *sum;    /* where its summary goes */
  gboolean ok;
  GError *error;         /* why it failed */
  gint permille;         /* progress of the running point, atomic */
  gboolean running;      /* started and not yet ended (writer's view) */
} Point;

/* What a pool thread hands to the writer: rows, or the end of a point. */
typedef struct {
  Point *p;
  SimTraceChunk *chunk;  /* NULL: the point has ended */
} SweepMsg;

/* Chunks waiting in the queue beyond which producers wait for the writer
 * (bounds the memory a sweep holds: chunks are ~4096 rows). */
#define SWEEP_MAX_PENDING 64

struct Sweep {
  GAsyncQueue *queue;    /* SweepMsg *, to the writer */
  GMutex lock;           /* guards pending */
  GCond drained;
  int pending;           /* chunks in the queue */
};

static void
sweep_sink (SimTraceChunk *chunk, gpointer data)
{
  Point *p = data;
  Sweep *sw = p->sw;
  g_mutex_lock (&sw->lock);
  while (sw->pending >= SWEEP_MAX_PENDING)
    g_cond_wait (&sw->drained, &sw->lock);
  sw->pending++;
  g_mutex_unlock (&sw->lock);
  SweepMsg *m = g_new (SweepMsg, 1);
  m->p = p;
  m->chunk = chunk;
  g_async_queue_push (sw->queue, m);
}

static void
sweep_progress (gpointer ctx, double t G_GNUC_UNUSED, gint64 done, gint64 total)
{
  Point *p = ctx;
  g_atomic_int_set (&p->permille, (int) (1000.0 * (double) done / (double) MAX (total, 1)));
}

/* Pool thread: runs one point against a trace buffer. */
static void
sweep_point (gpointer data, gpointer user G_GNUC_UNUSED)
{
  Point *p = data;
  SimTrace *buf = sim_trace_new_buffer (sweep_sink, p);
  PolRecorder extra = { .ctx = p, .progress = sweep_progress };
  p->ok = sim_run_config (p->c, buf, p->run, &extra, p->sum, &p->error);
  sim_trace_flush (buf);
  sim_trace_free_buffer (buf);
  SweepMsg *m = g_new0 (SweepMsg, 1);
  m->p = p;
  g_async_queue_push (p->sw->queue, m);
}

static void
format_seconds (char *buf, gsize n, double s)
{
  if (s < 60)
    g_snprintf (buf, n, "%.0fs", s);
  else if (s < 3600)
    g_snprintf (buf, n, "%dm%02ds", (int) s / 60, (int) s % 60);
  else
    g_snprintf (buf, n, "%dh%02dm", (int) s / 3600, ((int) s % 3600) / 60);
}

/* The sweep's progress line on a terminal: points done / total, the running
 * points with their progress, elapsed time and ETA (from the share done). */
static void
draw_bar (Point *pts, guint n, guint done, gint64 t0)
{
  double frac = done;
  GString *running = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    if (pts[i].running)
      {
        int pm = g_atomic_int_get (&pts[i].permille);
        frac += pm / 1000.0;
        if (running->len < 40)
          g_string_append_printf (running, " %u:%d%%", i + 1, pm / 10);
        else if (!g_str_has_suffix (running->str, "..."))
          g_string_append (running, " ...");
      }
  frac /= n;
  double elapsed = (double) (g_get_monotonic_time () - t0) / 1e6;
  char el[32], eta[32] = "?";
  format_seconds (el, sizeof el, elapsed);
  if (frac > 0)
    format_seconds (eta, sizeof eta, elapsed * (1 - frac) / frac);
  int width = 24, fill = (int) (width * frac);
  char bar[32];
  memset (bar, '#', fill);
  memset (bar + fill, '.', width - fill);
  bar[width] = '\0';
  fprintf (stderr, "\r\033[K[%s] %u/%u done, running%s, elapsed %s, ETA %s", bar, done, n,
           running->len ? running->str : " -", el, eta);
  fflush (stderr);
  g_string_free (running, TRUE);
}

/* Starts points in order while fewer than `jobs` run and the trace takes
 * rows: each gets its run id, then goes to the pool.  A point whose run
 * could not be begun keeps its error and stops the starting (the trace is
 * then no longer ok).  Returns the number of points now running. */
static guint
sweep_start_points (Point *pts, guint n, guint *next, guint running, int jobs,
                    SimTrace *trace, const char *path, GThreadPool *pool, guint *done,
                    gboolean lines)
{
  while (sim_trace_ok (trace, NULL) && running < (guint) jobs && *next < n)
    {
      Point *p = &pts[(*next)++];
      p->run = sim_trace_begin_run (trace, p->c, path, &p->error);
      if (p->run < 0)
        {
          p->run = 0;
          break;
        }
      if (p->c->infeasible)
        {
          /* recorded with its reason; the other points run */
          sim_trace_infeasible_run (trace, p->run, p->c->infeasible);
          (*done)++;
          if (lines)
            fprintf (stderr, "run %u/%u infeasible: %s: %s\n", p->index + 1, n, p->c->name,
                     p->c->infeasible);
          continue;
        }
      running++;
      p->running = TRUE;
      g_thread_pool_push (pool, p, NULL);
    }
  return running;
}

/* Writes one chunk of rows a pool thread handed over, and lets producers
 * waiting on the queue's bound go on. */
static void
sweep_write_chunk (Sweep *sw, SimTrace *trace, SimTraceChunk *chunk)
{
  sim_trace_write_chunk (trace, chunk);
  g_mutex_lock (&sw->lock);
  sw->pending--;
  g_cond_broadcast (&sw->drained);
  g_mutex_unlock (&sw->lock);
}

/* Point p has ended and all its rows are written: records its end (or its
 * failure) in the trace and, with `lines`, prints its line.  Returns
 * whether it succeeded. */
static gboolean
sweep_end_point (Point *p, guint n, SimTrace *trace, gboolean lines)
{
  p->running = FALSE;
  if (p->ok && !sim_trace_end_run (trace, p->run, p->sum, &p->error))
    p->ok = FALSE;
  if (!p->ok)
    sim_trace_fail_run (trace, p->run, p->error->message);
  if (lines && p->ok)
    fprintf (stderr, "run %u/%u done: %s  sim_time %.6g s  wall %.3g s\n", p->index + 1, n,
             p->c->name, p->sum->sim_time, p->sum->wall_time);
  else if (lines && n > 1) /* a single run's error is the one line at the end */
    fprintf (stderr, "run %u/%u failed: %s: %s\n", p->index + 1, n, p->c->name,
             p->error->message);
  return p->ok;
}

guint
sim_sweep_run (GPtrArray *configs, const char *path, SimTrace *trace, const SimRunOptions *opt,
              SimRunSummary *sums, GError **errors)
{
  guint n = configs->len;
  int jobs = opt->jobs > 0 ? opt->jobs : (int) g_get_num_processors ();
  jobs = (int) MIN ((guint) MAX (jobs, 1), n);
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
  /* points run side by side: one BLAS thread each */
  if (jobs > 1)
    openblas_set_num_threads (1);
#endif
  /* the cores the points leave go to each point's independent math
   * (policies/parallel.h: the same numbers on any number of threads) */
  pol_parallel_set_threads (opt->threads > 0 ? opt->threads
                                             : MAX (1, (int) g_get_num_processors () / jobs));
  Sweep sw = { .queue = g_async_queue_new () };
  g_mutex_init (&sw.lock);
  g_cond_init (&sw.drained);
  g_autofree Point *pts = g_new0 (Point, n);
  for (guint i = 0; i < n; i++)
    {
      pts[i].sw = &sw;
      pts[i].index = i;
      pts[i].c = g_ptr_array_index (configs, i);
      pts[i].sum = &sums[i];
    }
  GThreadPool *pool = g_thread_pool_new (sweep_point, &sw, jobs, TRUE, NULL);
  g_assert (pool); /* exclusive threads are created lazily, never fail here */
  gboolean tty = !opt->quiet && !opt->json && isatty (STDERR_FILENO);
  gboolean lines = !opt->quiet && !opt->json && !tty;
  gint64 t0 = g_get_monotonic_time (), last_draw = 0;
  guint next = 0, running = 0, done = 0, n_ok = 0;
  for (;;)
    {
      running = sweep_start_points (pts, n, &next, running, jobs, trace, path, pool, &done,
                                    lines);
      if (running == 0)
        break;
      if (tty && g_get_monotonic_time () - last_draw >= 200000)
        {
          draw_bar (pts, n, done, t0);
          last_draw = g_get_monotonic_time ();
        }
      SweepMsg *m = g_async_queue_timeout_pop (sw.queue, 200000);
      if (!m)
        continue;
      Point *p = m->p;
      SimTraceChunk *chunk = m->chunk;
      g_free (m);
      if (chunk)
        {
          sweep_write_chunk (&sw, trace, chunk);
          continue;
        }
      /* every chunk of p came before its end: its rows are all written */
      running--;
      done++;
      if (sweep_end_point (p, n, trace, lines))
        n_ok++;
    }
  if (tty)
    fprintf (stderr, "\r\033[K");
  g_thread_pool_free (pool, FALSE, TRUE);
  for (guint i = 0; i < n; i++)
    errors[i] = g_steal_pointer (&pts[i].error);
  g_async_queue_unref (sw.queue);
  g_mutex_clear (&sw.lock);
  g_cond_clear (&sw.drained);
  return n_ok;
}
