/*
 * resource.c — a single FIFO server on top of the event queue.
 *
 * Jobs wait in a ring buffer in request order.  The job at the head is in
 * service while `serving` is set; its completion event pops it, adds its
 * service time to the busy total, calls its done callback, and then starts
 * the next job (if the callback has not already started one by requesting
 * a job on this idle server).  Start and end times therefore follow the
 * Lindley recursion: start_j = max(request_j, end_{j-1}),
 * end_j = start_j + service_j.
 */
#include "engine/engine.h"

typedef struct {
  double service;   /* seconds */
  EngJobDone done;
  gpointer ctx;
  gpointer data;
} EngJob;

struct EngResource {
  EngSim *sim;
  EngJob *ring;        /* ring buffer of waiting jobs, head in service */
  gsize cap;           /* ring capacity, a power of two */
  gsize head;          /* index of the oldest job */
  gsize count;         /* jobs waiting or in service */
  gboolean serving;    /* the head job is in service */
  double start;        /* seconds: when the head job's service began */
  EngEventId done_ev;  /* completion event of the head job, while serving */
  double busy;         /* seconds of service of completed jobs */
};

static void start_next (EngResource *res);

static void
on_complete (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  EngResource *res = ctx;
  EngJob job = res->ring[res->head];
  double end = eng_sim_now (sim);
  double start = res->start;

  res->head = (res->head + 1) & (res->cap - 1);
  res->count--;
  res->serving = FALSE;
  res->done_ev = 0;
  res->busy += end - start;
  if (job.done != NULL)
    job.done (sim, job.ctx, job.data, start, end);
  if (!res->serving && res->count > 0)
    start_next (res);
}

static void
start_next (EngResource *res)
{
  const EngJob *job = &res->ring[res->head];

  res->serving = TRUE;
  res->start = eng_sim_now (res->sim);
  res->done_ev = eng_schedule (res->sim, job->service, on_complete, res, NULL);
}

/* Creates an idle server on `sim` (which must outlive it). */
EngResource *
eng_resource_new (EngSim *sim)
{
  EngResource *res;

  g_return_val_if_fail (sim != NULL, NULL);
  res = g_new0 (EngResource, 1);
  res->sim = sim;
  res->cap = 16;
  res->ring = g_new (EngJob, res->cap);
  return res;
}

/* Frees the server.  The job in service is cancelled and waiting jobs are
 * dropped; none of their callbacks is called.  NULL is accepted. */
void
eng_resource_free (EngResource *res)
{
  if (res == NULL)
    return;
  if (res->serving)
    eng_cancel (res->sim, res->done_ev);
  g_free (res->ring);
  g_free (res);
}

/* Queues a job of `service` seconds (>= 0).  It starts now if the server is
 * idle, otherwise when every earlier job has completed; `done` (may be
 * NULL) is called at its completion with its start and end times. */
void
eng_resource_request (EngResource *res, double service, EngJobDone done,
                      gpointer ctx, gpointer data)
{
  EngJob *job;

  g_return_if_fail (res != NULL);
  g_return_if_fail (service >= 0.0); /* also rejects NaN */

  if (res->count == res->cap)
    {
      /* Unroll the ring into a buffer twice the size. */
      EngJob *ring = g_new (EngJob, res->cap * 2);
      gsize i;
      for (i = 0; i < res->count; i++)
        ring[i] = res->ring[(res->head + i) & (res->cap - 1)];
      g_free (res->ring);
      res->ring = ring;
      res->head = 0;
      res->cap *= 2;
    }
  job = &res->ring[(res->head + res->count) & (res->cap - 1)];
  job->service = service;
  job->done = done;
  job->ctx = ctx;
  job->data = data;
  res->count++;
  if (!res->serving)
    start_next (res);
}

/* Seconds of service given to completed jobs. */
double
eng_resource_busy_time (const EngResource *res)
{
  g_return_val_if_fail (res != NULL, 0.0);
  return res->busy;
}

/* Jobs waiting or in service. */
gsize
eng_resource_queued (const EngResource *res)
{
  g_return_val_if_fail (res != NULL, 0);
  return res->count;
}
