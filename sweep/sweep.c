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

#include "kernels/blas.h"
#include "train/lanes.h"
#include "sweep/mpi.h"
#include "sweep/sweep.h"

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
  int rank;              /* the MPI rank running it (0: this process) */
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

/* Seconds between two progress lines when stderr is not a terminal. */
#define SWEEP_LINE_EVERY 30

/* The sweep's progress: on a terminal, a bar redrawn in place (points done /
 * total, the running points with their progress, elapsed time and ETA from
 * the share done); elsewhere (a log file, mpirun's forwarding, a batch
 * job's output) the same as a line of its own, every SWEEP_LINE_EVERY s. */
static void
draw_progress (Point *pts, guint n, guint done, gint64 t0, gboolean tty)
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
  if (tty)
    {
      int width = 24, fill = (int) (width * frac);
      char bar[32];
      memset (bar, '#', fill);
      memset (bar + fill, '.', width - fill);
      bar[width] = '\0';
      fprintf (stderr, "\r\033[K[%s] %u/%u done, running%s, elapsed %s, ETA %s", bar, done, n,
               running->len ? running->str : " -", el, eta);
    }
  else
    fprintf (stderr, "progress: %u/%u done (%.0f%%), running%s, elapsed %s, ETA %s\n", done, n,
             100 * frac, running->len ? running->str : " -", el, eta);
  fflush (stderr);
  g_string_free (running, TRUE);
}

/* The next point to run, its run begun: points whose model does not fit
 * are recorded infeasible on the way (and counted done).  NULL when none is
 * left or the trace no longer takes rows; a point whose run could not be
 * begun keeps its error and makes the trace not ok. */
static Point *
sweep_next_point (Point *pts, guint n, guint *next, SimTrace *trace, const char *path,
                  guint *done, gboolean lines)
{
  while (sim_trace_ok (trace, NULL) && *next < n)
    {
      Point *p = &pts[(*next)++];
      p->run = sim_trace_begin_run (trace, p->c, path, &p->error);
      if (p->run < 0)
        {
          p->run = 0;
          return NULL;
        }
      if (!p->c->infeasible)
        return p;
      /* recorded with its reason; the other points run */
      sim_trace_infeasible_run (trace, p->run, p->c->infeasible);
      (*done)++;
      if (lines)
        fprintf (stderr, "run %u/%u infeasible: %s: %s\n", p->index + 1, n, p->c->name,
                 p->c->infeasible);
    }
  return NULL;
}

/* Starts points in order while this process runs fewer than `jobs` or an
 * MPI rank has a free slot: each gets its run id, then goes to the pool or
 * to that rank.  Returns the number of points now running. */
static guint
sweep_start_points (Point *pts, guint n, guint *next, guint running, guint *local, int jobs,
                    SimTrace *trace, const char *path, GThreadPool *pool, SimMpiHub *hub,
                    guint *done, gboolean lines)
{
  for (;;)
    {
      int rank = *local < (guint) jobs ? 0 : sim_mpi_hub_free_rank (hub);
      if (rank < 0)
        break;
      Point *p = sweep_next_point (pts, n, next, trace, path, done, lines);
      if (!p)
        break;
      running++;
      p->running = TRUE;
      p->rank = rank;
      if (rank == 0)
        {
          (*local)++;
          g_thread_pool_push (pool, p, NULL);
        }
      else
        sim_mpi_hub_send_point (hub, rank, p->index, p->run);
    }
  return running;
}

/* A chunk of rows a pool thread handed over has left the queue: producers
 * waiting on the queue's bound go on. */
static void
sweep_took_chunk (Sweep *sw)
{
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
  g_autofree char *where = p->rank > 0 ? g_strdup_printf (" (rank %d)", p->rank) : NULL;
  if (lines && p->ok)
    fprintf (stderr, "run %u/%u done: %s  sim_time %.6g s  wall %.3g s%s\n", p->index + 1, n,
             p->c->name, p->sum->sim_time, p->sum->wall_time, where ? where : "");
  else if (lines && n > 1) /* a single run's error is the one line at the end */
    fprintf (stderr, "run %u/%u failed: %s: %s\n", p->index + 1, n, p->c->name,
             p->error->message);
  return p->ok;
}

/* Points run at once by this process: --jobs, else its share of the
 * online cores (shared with the other MPI ranks on this host).  Sets the
 * threads each point's math may use from the cores left. */
static int
sweep_jobs (const SimRunOptions *opt, guint n)
{
  int cores = MAX (1, (int) g_get_num_processors () / sim_mpi_local_size ());
  int jobs = opt->jobs > 0 ? opt->jobs : cores;
  jobs = (int) MIN ((guint) MAX (jobs, 1), MAX (n, 1));
  /* points run side by side: one BLAS thread each (applied when OpenBLAS
   * is opened, if it ever is) */
  if (jobs > 1)
    kern_blas_set_threads (1);
  /* the cores the points leave go to each point's independent math
   * (train/lanes.h: the same numbers on any number of threads) */
  train_set_threads (opt->threads > 0 ? opt->threads : MAX (1, cores / jobs));
  return jobs;
}

/* The points of a sweep with their queue and pool, ready to run. */
static Point *
sweep_points (Sweep *sw, GPtrArray *configs, SimRunSummary *sums)
{
  sw->queue = g_async_queue_new ();
  g_mutex_init (&sw->lock);
  g_cond_init (&sw->drained);
  Point *pts = g_new0 (Point, MAX (configs->len, 1));
  for (guint i = 0; i < configs->len; i++)
    {
      pts[i].sw = sw;
      pts[i].index = i;
      pts[i].c = g_ptr_array_index (configs, i);
      pts[i].sum = &sums[i];
    }
  return pts;
}

static void
sweep_clear (Sweep *sw)
{
  g_async_queue_unref (sw->queue);
  g_mutex_clear (&sw->lock);
  g_cond_clear (&sw->drained);
}

/* What an MPI rank said about the points it runs: rows are written, an end
 * or a loss ends the points.  Returns the points that ended (and adds the
 * successful ones to *n_ok). */
static guint
sweep_mpi_event (SimMpiEvent *ev, Point *pts, guint n, SimTrace *trace, gboolean tty,
                 gboolean lines, guint *n_ok)
{
  guint ended = 0;
  Point *p = ev->point < n ? &pts[ev->point] : NULL;
  switch (ev->kind)
    {
    case SIM_MPI_ROWS:
      sim_trace_write_chunk (trace, ev->chunk);
      break;
    case SIM_MPI_PROGRESS:
      g_atomic_int_set (&p->permille, ev->permille);
      break;
    case SIM_MPI_END:
      p->ok = ev->ok;
      *p->sum = ev->sum;
      p->error = g_steal_pointer (&ev->error);
      ended++;
      if (sweep_end_point (p, n, trace, lines))
        (*n_ok)++;
      break;
    case SIM_MPI_LOST:
      for (guint i = 0; i < n; i++)
        if (pts[i].running && pts[i].rank == ev->rank)
          {
            pts[i].ok = FALSE;
            pts[i].error = g_error_copy (ev->error);
            ended++;
            sweep_end_point (&pts[i], n, trace, lines);
          }
      break;
    case SIM_MPI_REFUSED:
      fprintf (stderr, "%sdtsim: %s\n", tty ? "\r\033[K" : "", ev->error->message);
      break;
    default:
      break;
    }
  g_clear_error (&ev->error);
  return ended;
}

guint
sim_sweep_run (GPtrArray *configs, const char *path, SimTrace *trace, const SimRunOptions *opt,
              SimRunSummary *sums, GError **errors)
{
  guint n = configs->len;
  int jobs = sweep_jobs (opt, n);
  Sweep sw = { 0 };
  g_autofree Point *pts = sweep_points (&sw, configs, sums);
  GThreadPool *pool = g_thread_pool_new (sweep_point, &sw, jobs, TRUE, NULL);
  g_assert (pool); /* exclusive threads are created lazily, never fail here */
  /* the digest reads files: only for ranks to compare */
  g_autofree char *digest = sim_mpi_size () > 1 ? sim_sweep_digest (configs, path) : NULL;
  SimMpiHub *hub = digest ? sim_mpi_hub_new (n, digest) : NULL;
  gboolean tty = !opt->quiet && !opt->json && isatty (STDERR_FILENO);
  gboolean lines = !opt->quiet && !opt->json && !tty;
  gint64 t0 = g_get_monotonic_time (), last_draw = 0;
  guint next = 0, running = 0, local = 0, done = 0, n_ok = 0;
  for (;;)
    {
      running = sweep_start_points (pts, n, &next, running, &local, jobs, trace, path, pool,
                                    hub, &done, lines);
      if (running == 0)
        break;
      gint64 now = g_get_monotonic_time ();
      if ((tty && now - last_draw >= 200000)
          || (lines && now - last_draw >= SWEEP_LINE_EVERY * G_USEC_PER_SEC))
        {
          if (last_draw || tty) /* no line before the first interval */
            draw_progress (pts, n, done, t0, tty);
          last_draw = now;
        }
      /* with MPI ranks, their messages are looked at every 2 ms */
      SweepMsg *m = g_async_queue_timeout_pop (sw.queue, hub ? 2000 : 200000);
      SimMpiEvent ev;
      while (sim_mpi_hub_next (hub, &ev))
        {
          guint ended = sweep_mpi_event (&ev, pts, n, trace, tty, lines, &n_ok);
          running -= ended;
          done += ended;
        }
      if (!m)
        continue;
      Point *p = m->p;
      SimTraceChunk *chunk = m->chunk;
      g_free (m);
      if (chunk)
        {
          sim_trace_write_chunk (trace, chunk);
          sweep_took_chunk (&sw);
          continue;
        }
      /* every chunk of p came before its end: its rows are all written */
      running--;
      local--;
      done++;
      if (sweep_end_point (p, n, trace, lines))
        n_ok++;
    }
  if (tty)
    fprintf (stderr, "\r\033[K");
  sim_mpi_hub_free (hub);
  g_thread_pool_free (pool, FALSE, TRUE);
  for (guint i = 0; i < n; i++)
    errors[i] = g_steal_pointer (&pts[i].error);
  sweep_clear (&sw);
  return n_ok;
}

/* Adds file `path`'s name and bytes (when it is a file) to the digest, the
 * first time it is named: points share a catalog, read once. */
static void
digest_file (GChecksum *sum, GHashTable *seen, const char *path)
{
  if (!path || !g_hash_table_add (seen, (gpointer) path))
    return;
  g_autofree char *text = NULL;
  gsize len = 0;
  g_checksum_update (sum, (const guchar *) path, -1);
  if (g_file_test (path, G_FILE_TEST_IS_REGULAR) && g_file_get_contents (path, &text, &len, NULL))
    g_checksum_update (sum, (const guchar *) text, (gssize) len);
}

char *
sim_sweep_digest (GPtrArray *configs, const char *path)
{
  GChecksum *sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  digest_file (sum, seen, path);
  GString *s = g_string_new (NULL);
  for (guint i = 0; configs && i < configs->len; i++)
    {
      const SimConfig *c = g_ptr_array_index (configs, i);
      g_string_printf (s, "\n%s\n%" G_GINT64_FORMAT "\n%s", c->name, c->seed,
                       c->infeasible ? c->infeasible : "");
      /* every resolved key, and the files whose contents are not keys */
      for (guint k = 0; k < c->param_keys->len; k++)
        g_string_append_printf (s, "\n%s=%s", (const char *) g_ptr_array_index (c->param_keys, k),
                                (const char *) g_ptr_array_index (c->param_values, k));
      g_checksum_update (sum, (const guchar *) s->str, (gssize) s->len);
      digest_file (sum, seen, c->catalog);
      digest_file (sum, seen, c->workload);
    }
  g_string_free (s, TRUE);
  char *hex = g_strdup (g_checksum_get_string (sum));
  g_checksum_free (sum);
  return hex;
}

/* A worker whose rank 0 is gone, or that rank 0 dismissed while its points
 * ran: their threads cannot be stopped, so the process ends here. */
static G_NORETURN void
serve_quit (int code, const char *why)
{
  if (why)
    fprintf (stderr, "dtsim: MPI rank %d: %s\n", sim_mpi_rank (), why);
  if (code == 0)
    sim_mpi_end ();
  fflush (NULL);
  _exit (code);
}

/* Takes rank 0's orders until none is waiting: each point it hands this
 * rank goes to POOL (PTS, N points; JOBS slots, RUNNING of them busy).
 * Sets *STOPPING on rank 0's stop; ends the process where an order cannot
 * be followed (PROBLEM: this rank could not load the scenario). */
static void
serve_orders (SimMpiWorker *w, Point *pts, guint n, GThreadPool *pool, const char *problem,
              int jobs, guint *running, gboolean *stopping)
{
  SimMpiOrder o;
  while ((o = sim_mpi_worker_next (w)).kind != SIM_MPI_ORDER_NONE)
    {
      if (o.kind == SIM_MPI_ORDER_LOST)
        serve_quit (1, "no word from rank 0 within the timeout (--rank-timeout); stopping");
      if (o.kind == SIM_MPI_ORDER_STOP)
        {
          *stopping = TRUE;
          if (*running > 0) /* dismissed: rank 0 recorded these points failed */
            serve_quit (0, NULL);
          return;
        }
      /* a point this rank has not run, and only when it has a slot */
      Point *p = o.point < n ? &pts[o.point] : NULL;
      if (!p || p->running || p->rank != 0 || problem || *running >= (guint) jobs)
        serve_quit (1, "rank 0 sent an order this rank cannot follow; stopping");
      p->run = o.run;
      p->running = TRUE;
      p->rank = sim_mpi_rank (); /* marks it taken */
      (*running)++;
      g_thread_pool_push (pool, p, NULL);
    }
}

/* Passes one message of a point's thread on to rank 0: a chunk of rows, or
 * the point's end, which frees its slot (*RUNNING).  Frees M; ends the
 * process when rank 0 does not take it in time. */
static void
serve_forward (SimMpiWorker *w, Sweep *sw, SweepMsg *m, guint *running)
{
  Point *p = m->p;
  SimTraceChunk *chunk = m->chunk;
  g_free (m);
  gboolean sent;
  if (chunk)
    {
      sweep_took_chunk (sw);
      sent = sim_mpi_worker_send_rows (w, p->index, chunk);
    }
  else
    {
      sent = sim_mpi_worker_send_end (w, p->index, p->ok, p->sum, p->error);
      p->running = FALSE;
      g_clear_error (&p->error);
      (*running)--;
    }
  if (!sent)
    serve_quit (1, "rank 0 did not take this rank's results within the timeout "
                   "(--rank-timeout); stopping");
}

int
sim_sweep_serve (GPtrArray *configs, const char *path, const char *problem,
                 const SimRunOptions *opt)
{
  guint n = configs ? configs->len : 0;
  int jobs = sweep_jobs (opt, n);
  g_autofree char *digest = sim_sweep_digest (configs, path);
  SimMpiWorker *w = sim_mpi_worker_new (jobs, n, digest, problem);
  g_autofree SimRunSummary *sums = g_new0 (SimRunSummary, MAX (n, 1));
  Sweep sw = { 0 };
  GPtrArray *none = g_ptr_array_new ();
  g_autofree Point *pts = sweep_points (&sw, configs ? configs : none, sums);
  g_ptr_array_unref (none);
  GThreadPool *pool = g_thread_pool_new (sweep_point, &sw, jobs, TRUE, NULL);
  guint running = 0;
  gboolean stopping = FALSE;
  gint64 last_progress = 0;
  while (!stopping || running > 0)
    {
      serve_orders (w, pts, n, pool, problem, jobs, &running, &stopping);
      if (stopping && running == 0)
        break;
      SweepMsg *m = g_async_queue_timeout_pop (sw.queue, 2000);
      if (m)
        serve_forward (w, &sw, m, &running);
      gint64 now = g_get_monotonic_time ();
      if (now - last_progress >= (gint64) (SIM_MPI_BEAT * 1e6))
        {
          last_progress = now;
          for (guint i = 0; i < n; i++)
            if (pts[i].running
                && !sim_mpi_worker_send_progress (w, i, g_atomic_int_get (&pts[i].permille)))
              serve_quit (1, "rank 0 did not take this rank's progress within the timeout "
                             "(--rank-timeout); stopping");
        }
    }
  g_thread_pool_free (pool, FALSE, TRUE);
  sweep_clear (&sw);
  sim_mpi_worker_free (w);
  return 0;
}
