/*
 * mpi.h — a sweep's points spread over MPI ranks (docs/cluster.md).
 *
 * Under `mpirun -n N dtsim run FILE.ini`, rank 0 is the hub: it runs points
 * itself (--jobs at a time) and hands the others out one at a time to the
 * ranks as their slots free up, receives each point's rows and its end, and
 * alone writes the database (sweep/sweep.c).  The other ranks are workers:
 * each loads the same scenario, says how many points it runs at once, runs
 * the points it is handed and sends their rows back.  Without MPI (not built
 * with it, or not started by a launcher) there is one rank and nothing here
 * does anything.
 *
 * Faults: every rank hears from every other it works with at least every
 * SIM_MPI_BEAT seconds; a worker silent for the timeout is lost, and the
 * points it was running are recorded failed with the reason (not re-run: a
 * point that kills its process would kill every rank it was handed to).  A
 * worker that no longer hears from rank 0 stops.
 */
#ifndef DTSIM_SWEEP_MPI_H
#define DTSIM_SWEEP_MPI_H

#include <glib.h>

#include "sim/trace.h"

G_BEGIN_DECLS

/* The messages, by MPI tag; each is values packed as sim/wire.h says.  A
 * worker says hello, then sends rows, progress and ends of the points it is
 * given, and a beat when it has sent nothing for SIM_MPI_BEAT s. */
typedef enum {
  SIM_MPI_TAG_HELLO = 1, /* worker -> 0: slots, points, digest, host, problem (text or NULL) */
  SIM_MPI_TAG_POINT,     /* 0 -> worker: point, run */
  SIM_MPI_TAG_ROWS,      /* worker -> 0: point, then a chunk's bytes (sim/trace.h) */
  SIM_MPI_TAG_PROGRESS,  /* worker -> 0: point, permille */
  SIM_MPI_TAG_END,       /* worker -> 0: point, ok, the summary's fields, stop (text),
                            error code, error message (text) */
  SIM_MPI_TAG_BEAT,      /* either way, no values: alive */
  SIM_MPI_TAG_STOP,      /* 0 -> worker: one byte, 1 when a rank was lost (then no
                            rank calls MPI_Finalize) */
} SimMpiTag;

/* Seconds between the messages that tell a rank its peer is alive. */
#define SIM_MPI_BEAT 0.5
/* Default seconds of silence after which a peer is lost. */
#define SIM_MPI_TIMEOUT 60.0

/* Whether an MPI launcher (mpirun, mpiexec, srun) started this process as
 * one of several ranks: read from the environment, without MPI. */
gboolean sim_mpi_launched (void);
/* This process's rank as the launcher's environment gives it, before MPI
 * starts (0 when not launched): the ranks but 0 keep quiet about bad
 * usage, which every rank would print. */
int sim_mpi_launch_rank (void);
/* Starts MPI when launched (sim_mpi_launched); otherwise does nothing.
 * FALSE (SIM_ERROR_INPUT) when launched but dtsim was built without MPI.
 * `timeout`: seconds of silence after which a peer is lost. */
gboolean sim_mpi_start (double timeout, GError **error);
/* This process's rank (0 when MPI is not started) and the ranks' count (1). */
int sim_mpi_rank (void);
int sim_mpi_size (void);
/* The ranks on this host (1 when MPI is not started): the default --jobs of
 * each is the online cores shared among them. */
int sim_mpi_local_size (void);
/* Rank 0: tells every worker to stop.  Every rank: ends MPI.  Nothing when
 * MPI was not started. */
void sim_mpi_end (void);

/* --- rank 0: the hub ------------------------------------------------------ */

typedef struct SimMpiHub SimMpiHub;

typedef enum {
  SIM_MPI_NOTHING,
  SIM_MPI_ROWS,          /* rows of a point: .chunk (owned by the receiver) */
  SIM_MPI_END,           /* a point ended: .ok, .sum, .error (owned) */
  SIM_MPI_PROGRESS,      /* a running point's progress: .permille */
  SIM_MPI_LOST,          /* rank .rank is lost: .error says why; its points
                            are the receiver's to fail */
  SIM_MPI_REFUSED,       /* rank .rank runs no point: .error says why */
} SimMpiEventKind;

typedef struct {
  SimMpiEventKind kind;
  int rank;
  guint point;
  SimTraceChunk *chunk;
  gboolean ok;
  SimRunSummary sum;     /* .stop an interned string */
  int permille;
  GError *error;
} SimMpiEvent;

/* The hub of a sweep of n points whose digest (sim_sweep_digest) every
 * worker must share; a worker with another digest runs nothing. */
SimMpiHub *sim_mpi_hub_new (guint n_points, const char *digest);
/* A worker rank with a free slot, or -1. */
int sim_mpi_hub_free_rank (SimMpiHub *h);
/* Hands point `point`, whose rows go to run `run`, to `rank`. */
void sim_mpi_hub_send_point (SimMpiHub *h, int rank, guint point, gint64 run);
/* The next event, without waiting: FALSE when there is none.  Checks the
 * workers' silence and sends rank 0's beats. */
gboolean sim_mpi_hub_next (SimMpiHub *h, SimMpiEvent *ev);
/* Tells every worker the sweep is over and frees the hub. */
void sim_mpi_hub_free (SimMpiHub *h);

/* --- the other ranks: workers --------------------------------------------- */

typedef struct SimMpiWorker SimMpiWorker;

typedef enum {
  SIM_MPI_ORDER_NONE,
  SIM_MPI_ORDER_POINT,   /* run .point, its rows to run .run */
  SIM_MPI_ORDER_STOP,    /* the sweep is over (or this rank was dismissed) */
  SIM_MPI_ORDER_LOST,    /* rank 0 has been silent for the timeout */
} SimMpiOrderKind;

typedef struct {
  SimMpiOrderKind kind;
  guint point;
  gint64 run;
} SimMpiOrder;

/* Says hello to rank 0: how many points this rank runs at once (0 with a
 * `problem`: it runs none, and rank 0 says why), the sweep's size and
 * digest. */
SimMpiWorker *sim_mpi_worker_new (int capacity, guint n_points, const char *digest,
                                  const char *problem);
/* The next order from rank 0, without waiting; sends this rank's beat when
 * it is due. */
SimMpiOrder sim_mpi_worker_next (SimMpiWorker *w);
/* Sends a point's rows (frees the chunk), its progress, its end.  FALSE when
 * rank 0 is lost (the send did not complete within the timeout). */
gboolean sim_mpi_worker_send_rows (SimMpiWorker *w, guint point, SimTraceChunk *chunk);
gboolean sim_mpi_worker_send_progress (SimMpiWorker *w, guint point, int permille);
gboolean sim_mpi_worker_send_end (SimMpiWorker *w, guint point, gboolean ok,
                                  const SimRunSummary *sum, const GError *error);
void sim_mpi_worker_free (SimMpiWorker *w);

G_END_DECLS

#endif
