/*
 * mpi.c — the messages between rank 0 and the workers of a sweep over MPI
 * (sweep/mpi.h, docs/cluster.md).
 *
 * Every message is a few values packed as sim/wire.h says, one tag per
 * kind (SimMpiTag).  Only the calling thread of each rank uses MPI
 * (MPI_THREAD_FUNNELED): the points' pool threads hand their rows to it
 * (sweep/sweep.c).  Nothing waits without a
 * deadline: a send or a receive that does not complete within the timeout
 * means the peer is lost, so a dead rank never hangs the others.  Rank 0
 * reads what the workers send as untrusted: every length is checked and a
 * damaged message loses its sender, not the sweep.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "config/input.h"
#include "sweep/mpi.h"
#include "sim/wire.h"

/* The launchers' variables that give the number of ranks and this one's:
 * Open MPI's mpirun, MPICH's and Intel's (PMI), Slurm's srun (a job step's
 * tasks; not SLURM_NTASKS, which a batch script sees too). */
static const char *const size_vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                         "SLURM_STEP_NUM_TASKS" };
static const char *const rank_vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                         "SLURM_PROCID" };

static int the_rank = 0, the_size = 1, the_local_size = 1;
#ifdef HAVE_MPI
static double the_timeout = SIM_MPI_TIMEOUT;
static gboolean started;
static gboolean workers_stopped; /* rank 0 told them the sweep is over */
/* A rank was lost: MPI_Finalize would wait for it for ever (it waits for
 * every rank), so no rank calls it; rank 0 tells the workers so with STOP. */
static gboolean skip_finalize;
#endif

static int
env_int (const char *const *vars, gsize n)
{
  for (gsize i = 0; i < n; i++)
    {
      const char *v = g_getenv (vars[i]);
      if (v && *v)
        return atoi (v);
    }
  return -1;
}

gboolean
sim_mpi_launched (void)
{
  return env_int (size_vars, G_N_ELEMENTS (size_vars)) > 1;
}

int
sim_mpi_launch_rank (void)
{
  return sim_mpi_launched () ? MAX (0, env_int (rank_vars, G_N_ELEMENTS (rank_vars))) : 0;
}

int
sim_mpi_rank (void)
{
  return the_rank;
}

int
sim_mpi_size (void)
{
  return the_size;
}

int
sim_mpi_local_size (void)
{
  return the_local_size;
}

#ifndef HAVE_MPI

gboolean
sim_mpi_start (double timeout G_GNUC_UNUSED, GError **error)
{
  if (!sim_mpi_launched ())
    return TRUE;
  /* every rank would run the whole sweep: only rank 0 says so */
  the_rank = sim_mpi_launch_rank ();
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "started as one of %d MPI ranks, but this dtsim was built without MPI; "
               "configure it --with-mpi (Debian: apt-get install libopenmpi-dev openmpi-bin), "
               "or run it without mpirun (--jobs uses the cores of one machine)",
               env_int (size_vars, G_N_ELEMENTS (size_vars)));
  return FALSE;
}

void
sim_mpi_end (void)
{
}

SimMpiHub *
sim_mpi_hub_new (guint n_points G_GNUC_UNUSED, const char *digest G_GNUC_UNUSED)
{
  return NULL;
}

int
sim_mpi_hub_free_rank (SimMpiHub *h G_GNUC_UNUSED)
{
  return -1;
}

void
sim_mpi_hub_send_point (SimMpiHub *h G_GNUC_UNUSED, int rank G_GNUC_UNUSED,
                        guint point G_GNUC_UNUSED, gint64 run G_GNUC_UNUSED)
{
  g_assert_not_reached ();
}

gboolean
sim_mpi_hub_next (SimMpiHub *h G_GNUC_UNUSED, SimMpiEvent *ev)
{
  ev->kind = SIM_MPI_NOTHING;
  return FALSE;
}

void
sim_mpi_hub_free (SimMpiHub *h G_GNUC_UNUSED)
{
}

SimMpiWorker *
sim_mpi_worker_new (int capacity G_GNUC_UNUSED, guint n_points G_GNUC_UNUSED,
                    const char *digest G_GNUC_UNUSED, const char *problem G_GNUC_UNUSED)
{
  g_assert_not_reached ();
}

SimMpiOrder
sim_mpi_worker_next (SimMpiWorker *w G_GNUC_UNUSED)
{
  g_assert_not_reached ();
}

gboolean
sim_mpi_worker_send_rows (SimMpiWorker *w G_GNUC_UNUSED, guint point G_GNUC_UNUSED,
                          SimTraceChunk *chunk G_GNUC_UNUSED)
{
  g_assert_not_reached ();
}

gboolean
sim_mpi_worker_send_progress (SimMpiWorker *w G_GNUC_UNUSED, guint point G_GNUC_UNUSED,
                              int permille G_GNUC_UNUSED)
{
  g_assert_not_reached ();
}

gboolean
sim_mpi_worker_send_end (SimMpiWorker *w G_GNUC_UNUSED, guint point G_GNUC_UNUSED,
                         gboolean ok G_GNUC_UNUSED, const SimRunSummary *sum G_GNUC_UNUSED,
                         const GError *error G_GNUC_UNUSED)
{
  g_assert_not_reached ();
}

void
sim_mpi_worker_free (SimMpiWorker *w G_GNUC_UNUSED)
{
}

#else /* HAVE_MPI */


gboolean
sim_mpi_start (double timeout, GError **error)
{
  if (!sim_mpi_launched ())
    return TRUE;
  int provided = 0;
  if (MPI_Init_thread (NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "MPI could not be started");
      return FALSE;
    }
  started = TRUE;
  /* errors come back as codes: a lost peer is handled, not fatal */
  MPI_Comm_set_errhandler (MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank (MPI_COMM_WORLD, &the_rank);
  MPI_Comm_size (MPI_COMM_WORLD, &the_size);
  /* collective: a program that stands in for a rank does it too
   * (tests/test-mpi.c) */
  MPI_Comm local;
  if (MPI_Comm_split_type (MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local)
      == MPI_SUCCESS)
    {
      MPI_Comm_size (local, &the_local_size);
      MPI_Comm_free (&local);
    }
  the_timeout = timeout > 0 ? timeout : SIM_MPI_TIMEOUT;
  return TRUE;
}

/* --- sending and receiving with deadlines ------------------------------------ */

/* Waits for `req` until the timeout; FALSE when it did not complete: the
 * peer is lost.  The request is then cancelled and freed, but MPI may still
 * use its buffer (a matched receive cannot be cancelled): the caller must
 * not free that buffer, and leaves it be, once per lost peer. */
static gboolean
wait_until (MPI_Request *req)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) (the_timeout * 1e6);
  for (;;)
    {
      int done = 0;
      if (MPI_Test (req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return FALSE;
      if (done)
        return TRUE;
      if (g_get_monotonic_time () > deadline)
        {
          MPI_Cancel (req);
          MPI_Request_free (req);
          return FALSE;
        }
      g_usleep (200);
    }
}

/* Sends `len` bytes at p, which must outlive a failed send (wait_until). */
static gboolean
send_bytes (int dest, int tag, const guint8 *p, gsize len)
{
  if (len > G_MAXINT)
    return FALSE;
  MPI_Request req;
  if (MPI_Isend (p, (int) len, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
    return FALSE;
  return wait_until (&req);
}

/* Sends the array and frees it, or leaves it to MPI when the send failed. */
static gboolean
send_array (int dest, int tag, GByteArray *b)
{
  gboolean ok = send_bytes (dest, tag, b->data, b->len);
  if (ok)
    g_byte_array_unref (b);
  return ok;
}

/* A message that arrived: who sent it, its tag and bytes. */
typedef struct {
  int source, tag;
  guint8 *data;
  gsize len;
} Message;

/* The next message from anyone, without waiting for one to arrive: FALSE
 * when none has; *lost_source >= 0 when one began to arrive from a rank
 * that did not finish sending it within the timeout. */
static gboolean
receive_any (Message *m, int *lost_source)
{
  *lost_source = -1;
  int flag = 0;
  MPI_Message handle;
  MPI_Status st;
  if (MPI_Improbe (MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &handle, &st)
      != MPI_SUCCESS || !flag)
    return FALSE;
  int count = 0;
  MPI_Get_count (&st, MPI_BYTE, &count);
  m->source = st.MPI_SOURCE;
  m->tag = st.MPI_TAG;
  m->len = (gsize) MAX (count, 0);
  m->data = g_malloc (MAX (m->len, 1));
  MPI_Request req;
  if (MPI_Imrecv (m->data, count, MPI_BYTE, &handle, &req) != MPI_SUCCESS
      || !wait_until (&req))
    {
      /* m->data is left to MPI (wait_until) */
      *lost_source = m->source;
      return FALSE;
    }
  return TRUE;
}

/* Tells a worker the sweep is over, and whether to skip MPI_Finalize. */
static void
send_stop (int rank)
{
  /* static: the bytes of a send outlive it when it fails */
  static const guint8 lost[2] = { 0, 1 };
  send_bytes (rank, SIM_MPI_TAG_STOP, &lost[skip_finalize ? 1 : 0], 1);
}

void
sim_mpi_end (void)
{
  if (!started)
    return;
  if (the_rank == 0 && !workers_stopped)
    for (int r = 1; r < the_size; r++)
      send_stop (r);
  if (!skip_finalize)
    MPI_Finalize ();
  started = FALSE;
}

/* --- the hub ------------------------------------------------------------------ */

typedef struct {
  gboolean hello;        /* said hello and may run points */
  gboolean refused;      /* runs no point, but stays beaten until the end */
  gboolean gone;         /* lost: gets nothing, its words ignored */
  int capacity, busy;
  char *host;
  gint64 heard;          /* monotonic µs of its last message */
  GHashTable *points;    /* point -> run + 1, of the points it runs */
} Peer;

struct SimMpiHub {
  guint n_points;
  char *digest;
  Peer *peers;           /* [rank], 0 unused */
  gint64 last_beat;
  GQueue pending;        /* SimMpiEvent *, found while checking silences */
};

SimMpiHub *
sim_mpi_hub_new (guint n_points, const char *digest)
{
  if (the_size <= 1)
    return NULL;
  SimMpiHub *h = g_new0 (SimMpiHub, 1);
  h->n_points = n_points;
  h->digest = g_strdup (digest);
  h->peers = g_new0 (Peer, the_size);
  gint64 now = g_get_monotonic_time ();
  for (int r = 1; r < the_size; r++)
    {
      h->peers[r].heard = now;
      h->peers[r].points = g_hash_table_new (g_direct_hash, g_direct_equal);
    }
  g_queue_init (&h->pending);
  return h;
}

int
sim_mpi_hub_free_rank (SimMpiHub *h)
{
  if (!h)
    return -1;
  /* the least busy first, so that points spread over the ranks */
  int best = -1;
  for (int r = 1; r < the_size; r++)
    {
      Peer *p = &h->peers[r];
      if (p->hello && !p->gone && !p->refused && p->busy < p->capacity
          && (best < 0 || p->busy * h->peers[best].capacity < h->peers[best].busy * p->capacity))
        best = r;
    }
  return best;
}

/* The host a rank named, for messages. */
static const char *
peer_host (SimMpiHub *h, int rank)
{
  return h->peers[rank].host ? h->peers[rank].host : "?";
}

/* Rank `rank` is lost: no more points, its messages ignored; the event says
 * why (the receiver fails its points). */
static void
lose (SimMpiHub *h, int rank, SimMpiEvent *ev, const char *why)
{
  Peer *p = &h->peers[rank];
  p->gone = TRUE;
  skip_finalize = TRUE;
  memset (ev, 0, sizeof *ev);
  ev->kind = SIM_MPI_LOST;
  ev->rank = rank;
  g_set_error (&ev->error, SIM_ERROR, SIM_ERROR_RUNTIME,
               "MPI rank %d (host %s) was lost while running this point: %s; the rows it sent "
               "are kept; run the point again", rank, peer_host (h, rank), why);
  g_hash_table_remove_all (p->points);
  p->busy = 0;
  /* if it is only slow, it stops (and drops its points) rather than wait
   * for a rank 0 that no longer listens */
  send_stop (rank);
}

void
sim_mpi_hub_send_point (SimMpiHub *h, int rank, guint point, gint64 run)
{
  Peer *p = &h->peers[rank];
  GByteArray *b = g_byte_array_new ();
  sim_wire_put_u64 (b, point);
  sim_wire_put_u64 (b, (guint64) run);
  p->busy++;
  g_hash_table_insert (p->points, GUINT_TO_POINTER (point), GSIZE_TO_POINTER (run + 1));
  if (!send_array (rank, SIM_MPI_TAG_POINT, b))
    {
      SimMpiEvent *ev = g_new0 (SimMpiEvent, 1);
      lose (h, rank, ev, "it did not take a point");
      g_queue_push_tail (&h->pending, ev);
    }
}

/* A worker's hello: its slots, or why it runs none. */
static gboolean
read_hello (SimMpiHub *h, Message *m, SimWireReader *r, SimMpiEvent *ev)
{
  Peer *p = &h->peers[m->source];
  gint64 capacity = (gint64) sim_wire_get_u64 (r);
  guint64 n = sim_wire_get_u64 (r);
  g_autofree char *digest = sim_wire_get_str (r);
  g_free (p->host);
  p->host = sim_wire_get_str (r);
  if (p->host)
    {
      char *shown = sim_input_printable (p->host);
      g_free (p->host);
      p->host = shown;
    }
  g_autofree char *problem = sim_wire_get_str (r);
  if (r->bad)
    return FALSE;
  const char *why = problem ? NULL
                    : n != h->n_points || g_strcmp0 (digest, h->digest) != 0
                      ? "it read other points from the scenario (its file, a --set or a file "
                        "the scenario names differs there); give every host the same files"
                    : capacity < 1 || capacity > 1 << 20 ? "it offered no slot"
                    : NULL;
  if (problem || why)
    {
      /* it waits for STOP with the others: it cannot end MPI before them
       * (a rank lost later would make that wait for ever) */
      p->refused = TRUE;
      memset (ev, 0, sizeof *ev);
      ev->kind = SIM_MPI_REFUSED;
      ev->rank = m->source;
      g_autofree char *shown = problem ? sim_input_printable (problem) : NULL;
      g_set_error (&ev->error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "MPI rank %d (host %s) runs no point: %s", m->source, peer_host (h, m->source),
                   problem ? shown : why);
      return TRUE;
    }
  p->hello = TRUE;
  p->capacity = (int) capacity;
  ev->kind = SIM_MPI_NOTHING;
  return TRUE;
}

/* A message from a worker as an event; FALSE when it is damaged or names a
 * point the worker was not given. */
static gboolean
read_message (SimMpiHub *h, Message *m, SimMpiEvent *ev)
{
  Peer *p = &h->peers[m->source];
  SimWireReader r = { .p = m->data, .len = m->len };
  memset (ev, 0, sizeof *ev);
  ev->rank = m->source;
  if (m->tag == SIM_MPI_TAG_HELLO)
    return read_hello (h, m, &r, ev);
  if (m->tag == SIM_MPI_TAG_BEAT || p->refused)
    return TRUE;
  if (m->tag != SIM_MPI_TAG_ROWS && m->tag != SIM_MPI_TAG_PROGRESS && m->tag != SIM_MPI_TAG_END)
    return FALSE;
  guint64 point = sim_wire_get_u64 (&r);
  gpointer run1 = r.bad ? NULL : g_hash_table_lookup (p->points, GUINT_TO_POINTER ((guint) point));
  if (!run1 || point >= h->n_points)
    return FALSE;
  ev->point = (guint) point;
  gint64 run = (gint64) GPOINTER_TO_SIZE (run1) - 1;
  if (m->tag == SIM_MPI_TAG_ROWS)
    {
      ev->kind = SIM_MPI_ROWS;
      ev->chunk = sim_trace_chunk_deserialize (m->data + r.at, m->len - r.at, run, NULL);
      return ev->chunk != NULL;
    }
  if (m->tag == SIM_MPI_TAG_PROGRESS)
    {
      ev->kind = SIM_MPI_PROGRESS;
      guint64 permille = sim_wire_get_u64 (&r);
      ev->permille = (int) MIN (permille, 1000);
      return !r.bad;
    }
  ev->kind = SIM_MPI_END;
  ev->ok = sim_wire_get_u64 (&r) != 0;
  SimRunSummary *s = &ev->sum;
  s->sim_time = sim_wire_get_f64 (&r);
  s->wall_time = sim_wire_get_f64 (&r);
  s->events = sim_wire_get_u64 (&r);
  s->iterations = (gint64) sim_wire_get_u64 (&r);
  s->updates = (gint64) sim_wire_get_u64 (&r);
  s->samples = (gint64) sim_wire_get_u64 (&r);
  s->final_loss = sim_wire_get_f64 (&r);
  s->final_accuracy = sim_wire_get_f64 (&r);
  s->compute = sim_wire_get_f64 (&r);
  s->comm = sim_wire_get_f64 (&r);
  s->wait = sim_wire_get_f64 (&r);
  s->useful_time = sim_wire_get_f64 (&r);
  s->failures = (gint64) sim_wire_get_u64 (&r);
  s->lost = sim_wire_get_f64 (&r);
  s->checkpoint_time = sim_wire_get_f64 (&r);
  s->restart_time = sim_wire_get_f64 (&r);
  s->waste = sim_wire_get_f64 (&r);
  g_autofree char *stop = sim_wire_get_str (&r);
  gint64 code = (gint64) sim_wire_get_u64 (&r);
  g_autofree char *message = sim_wire_get_str (&r);
  if (r.bad || (ev->ok && !stop) || (!ev->ok && !message))
    return FALSE;
  s->stop = stop ? g_intern_string (stop) : NULL;
  if (!ev->ok)
    ev->error = g_error_new_literal (SIM_ERROR, (int) CLAMP (code, 0, G_MAXINT), message);
  g_hash_table_remove (p->points, GUINT_TO_POINTER ((guint) point));
  p->busy--;
  return TRUE;
}

/* Sends rank 0's beat to every worker when due. */
static void
send_beats (SimMpiHub *h, gint64 now)
{
  if (now - h->last_beat < (gint64) (SIM_MPI_BEAT * 1e6))
    return;
  h->last_beat = now;
  for (int r = 1; r < the_size; r++)
    if (!h->peers[r].gone)
      send_bytes (r, SIM_MPI_TAG_BEAT, NULL, 0);
}

gboolean
sim_mpi_hub_next (SimMpiHub *h, SimMpiEvent *ev)
{
  memset (ev, 0, sizeof *ev);
  if (!h)
    return FALSE;
  SimMpiEvent *queued = g_queue_pop_head (&h->pending);
  if (queued)
    {
      *ev = *queued;
      g_free (queued);
      return TRUE;
    }
  gint64 now = g_get_monotonic_time ();
  send_beats (h, now);
  Message m;
  int lost = -1;
  /* what has arrived first, so that a rank is never lost for rank 0's own
   * delay in reading it */
  while (receive_any (&m, &lost))
    {
      gboolean ok = m.source > 0 && m.source < the_size && !h->peers[m.source].gone;
      if (ok)
        {
          h->peers[m.source].heard = g_get_monotonic_time ();
          ok = read_message (h, &m, ev);
          if (!ok)
            {
              g_clear_error (&ev->error);
              lose (h, m.source, ev, "it sent a damaged message");
            }
        }
      g_free (m.data);
      if (ok && ev->kind != SIM_MPI_NOTHING)
        return TRUE;
      if (ev->kind == SIM_MPI_LOST)
        return TRUE;
    }
  if (lost > 0 && lost < the_size && !h->peers[lost].gone)
    {
      lose (h, lost, ev, "a message it began to send did not arrive");
      return TRUE;
    }
  now = g_get_monotonic_time ();
  for (int r = 1; r < the_size; r++)
    {
      Peer *p = &h->peers[r];
      if (!p->gone && p->busy > 0 && now - p->heard > (gint64) (the_timeout * 1e6))
        {
          g_autofree char *why = g_strdup_printf ("no message from it for %g s (--rank-timeout)",
                                                  the_timeout);
          lose (h, r, ev, why);
          return TRUE;
        }
    }
  return FALSE;
}

void
sim_mpi_hub_free (SimMpiHub *h)
{
  if (!h)
    return;
  /* at once: the database may take a while to close, and a worker that
   * waits that long on a silent rank 0 would give up */
  for (int r = 1; r < the_size; r++)
    send_stop (r);
  workers_stopped = TRUE;
  for (int r = 1; r < the_size; r++)
    {
      g_free (h->peers[r].host);
      g_hash_table_unref (h->peers[r].points);
    }
  SimMpiEvent *ev;
  while ((ev = g_queue_pop_head (&h->pending)))
    {
      g_clear_error (&ev->error);
      g_free (ev);
    }
  g_free (h->peers);
  g_free (h->digest);
  g_free (h);
}

/* --- a worker ---------------------------------------------------------------- */

struct SimMpiWorker {
  gint64 heard;          /* monotonic µs of rank 0's last message */
  gint64 last_sent;      /* of this rank's last message */
};

SimMpiWorker *
sim_mpi_worker_new (int capacity, guint n_points, const char *digest, const char *problem)
{
  SimMpiWorker *w = g_new0 (SimMpiWorker, 1);
  w->heard = w->last_sent = g_get_monotonic_time ();
  GByteArray *b = g_byte_array_new ();
  sim_wire_put_u64 (b, (guint64) (problem ? 0 : capacity));
  sim_wire_put_u64 (b, n_points);
  sim_wire_put_str (b, digest);
  sim_wire_put_str (b, g_get_host_name ());
  sim_wire_put_str (b, problem);
  send_array (0, SIM_MPI_TAG_HELLO, b);
  return w;
}

SimMpiOrder
sim_mpi_worker_next (SimMpiWorker *w)
{
  SimMpiOrder o = { .kind = SIM_MPI_ORDER_NONE };
  gint64 now = g_get_monotonic_time ();
  if (now - w->last_sent >= (gint64) (SIM_MPI_BEAT * 1e6))
    {
      if (!send_bytes (0, SIM_MPI_TAG_BEAT, NULL, 0))
        {
          o.kind = SIM_MPI_ORDER_LOST;
          return o;
        }
      w->last_sent = now;
    }
  Message m;
  int lost = -1;
  while (receive_any (&m, &lost))
    {
      SimWireReader r = { .p = m.data, .len = m.len };
      int tag = m.tag, source = m.source;
      guint8 data0 = m.len >= 1 ? m.data[0] : 0;
      guint64 point = tag == SIM_MPI_TAG_POINT ? sim_wire_get_u64 (&r) : 0;
      gint64 run = tag == SIM_MPI_TAG_POINT ? (gint64) sim_wire_get_u64 (&r) : 0;
      g_free (m.data);
      if (source != 0)
        continue;
      w->heard = g_get_monotonic_time ();
      if (tag == SIM_MPI_TAG_STOP)
        {
          o.kind = SIM_MPI_ORDER_STOP;
          skip_finalize = skip_finalize || (m.len >= 1 && data0 != 0);
        }
      else if (tag == SIM_MPI_TAG_POINT && !r.bad && point <= G_MAXUINT)
        {
          o.kind = SIM_MPI_ORDER_POINT;
          o.point = (guint) point;
          o.run = run;
        }
      if (o.kind != SIM_MPI_ORDER_NONE)
        return o;
    }
  if (lost == 0 || g_get_monotonic_time () - w->heard > (gint64) (the_timeout * 1e6))
    o.kind = SIM_MPI_ORDER_LOST;
  return o;
}

static gboolean
worker_send (SimMpiWorker *w, int tag, GByteArray *b)
{
  w->last_sent = g_get_monotonic_time ();
  return send_array (0, tag, b);
}

gboolean
sim_mpi_worker_send_rows (SimMpiWorker *w, guint point, SimTraceChunk *chunk)
{
  g_autoptr (GBytes) rows = sim_trace_chunk_serialize (chunk);
  sim_trace_chunk_free (chunk);
  gsize len;
  const guint8 *p = g_bytes_get_data (rows, &len);
  GByteArray *b = g_byte_array_sized_new ((guint) len + 8);
  sim_wire_put_u64 (b, point);
  g_byte_array_append (b, p, (guint) len);
  return worker_send (w, SIM_MPI_TAG_ROWS, b);
}

gboolean
sim_mpi_worker_send_progress (SimMpiWorker *w, guint point, int permille)
{
  GByteArray *b = g_byte_array_new ();
  sim_wire_put_u64 (b, point);
  sim_wire_put_u64 (b, (guint64) permille);
  return worker_send (w, SIM_MPI_TAG_PROGRESS, b);
}

gboolean
sim_mpi_worker_send_end (SimMpiWorker *w, guint point, gboolean ok, const SimRunSummary *s,
                         const GError *error)
{
  GByteArray *b = g_byte_array_new ();
  sim_wire_put_u64 (b, point);
  sim_wire_put_u64 (b, ok ? 1 : 0);
  sim_wire_put_f64 (b, s->sim_time);
  sim_wire_put_f64 (b, s->wall_time);
  sim_wire_put_u64 (b, s->events);
  sim_wire_put_u64 (b, (guint64) s->iterations);
  sim_wire_put_u64 (b, (guint64) s->updates);
  sim_wire_put_u64 (b, (guint64) s->samples);
  sim_wire_put_f64 (b, s->final_loss);
  sim_wire_put_f64 (b, s->final_accuracy);
  sim_wire_put_f64 (b, s->compute);
  sim_wire_put_f64 (b, s->comm);
  sim_wire_put_f64 (b, s->wait);
  sim_wire_put_f64 (b, s->useful_time);
  sim_wire_put_u64 (b, (guint64) s->failures);
  sim_wire_put_f64 (b, s->lost);
  sim_wire_put_f64 (b, s->checkpoint_time);
  sim_wire_put_f64 (b, s->restart_time);
  sim_wire_put_f64 (b, s->waste);
  sim_wire_put_str (b, ok ? s->stop : NULL);
  sim_wire_put_u64 (b, (guint64) (error ? error->code : 0));
  sim_wire_put_str (b, error ? error->message : NULL);
  return worker_send (w, SIM_MPI_TAG_END, b);
}

void
sim_mpi_worker_free (SimMpiWorker *w)
{
  g_free (w);
}

#endif /* HAVE_MPI */
