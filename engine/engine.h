/*
 * engine.h — dtsim's discrete-event engine.
 *
 * The engine owns the simulated clock and a queue of pending events ordered
 * by (time, insertion sequence): two events at the same simulated time fire
 * in the order they were scheduled, so every run of the same scenario fires
 * the same events in the same order.  It also provides seeded random-number
 * streams (one per simulated entity, derived from the scenario seed) and FIFO
 * resources (a server that serves one job at a time, in arrival order).
 *
 * The engine knows nothing of networks or machine learning.  Handlers receive
 * the engine itself plus two opaque pointers chosen by whoever scheduled them.
 */
#ifndef DTSIM_ENGINE_H
#define DTSIM_ENGINE_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct EngSim EngSim;

/* Identifies a scheduled event so that it can be cancelled.  Never 0. */
typedef guint64 EngEventId;

/* An event handler: `ctx` and `data` are the pointers given when the event was
 * scheduled.  Handlers may schedule and cancel other events. */
typedef void (*EngHandler) (EngSim *sim, gpointer ctx, gpointer data);

/* Creates an engine whose clock reads 0 s and whose queue is empty. */
EngSim *eng_sim_new (void);
void eng_sim_free (EngSim *sim);

/* Current simulated time, seconds. */
double eng_sim_now (const EngSim *sim);

/* Number of events fired so far (cancelled events are not counted). */
guint64 eng_sim_events (const EngSim *sim);

/* Number of events scheduled and neither fired nor cancelled. */
gsize eng_sim_pending (const EngSim *sim);

/* Schedules `handler` at now + `delay` (seconds, >= 0). */
EngEventId eng_schedule (EngSim *sim, double delay, EngHandler handler,
                         gpointer ctx, gpointer data);

/* Schedules `handler` at absolute time `time` (seconds, >= now). */
EngEventId eng_schedule_at (EngSim *sim, double time, EngHandler handler,
                            gpointer ctx, gpointer data);

/* Cancels a pending event.  Returns TRUE if it was pending (it will never
 * fire), FALSE if it already fired, was already cancelled, or is unknown. */
gboolean eng_cancel (EngSim *sim, EngEventId id);

/* Fires the earliest pending event.  Returns FALSE if the queue was empty. */
gboolean eng_step (EngSim *sim);

/* Fires events in order until the queue is empty, eng_stop() is called, or
 * the next event lies after `until` (seconds; use INFINITY for no limit; the
 * clock then stays at the time of the last fired event).  Returns the number
 * of events fired by this call. */
guint64 eng_run (EngSim *sim, double until);

/* Makes the current eng_run() return after the running handler. */
void eng_stop (EngSim *sim);

/* End-of-instant hooks: work that many events of one instant make necessary
 * but that need be done only once, when the instant is over (the network
 * re-shares bandwidth once however many flows joined or left at that time).
 * A requested hook runs after the last event at the current time has fired
 * and before the clock moves on or eng_step()/eng_run() returns for want of
 * events; it may schedule events (at the current time too) and request
 * hooks again.  Hooks are not events: eng_sim_events() does not count them. */
typedef void (*EngFlush) (EngSim *sim, gpointer ctx);
/* Registers `fn` with `ctx`; returns its id (never 0). */
guint eng_flush_register (EngSim *sim, EngFlush fn, gpointer ctx);
/* The hook `id` never runs again. */
void eng_flush_unregister (EngSim *sim, guint id);
/* Asks for hook `id` to run at the end of the current instant (once, however
 * often it is asked). */
void eng_flush_request (EngSim *sim, guint id);

/* --- Random-number streams ---------------------------------------------
 * xoshiro256** seeded through SplitMix64 from (seed, stream): the same pair
 * always yields the same sequence, and distinct streams are independent for
 * every practical purpose.  Give each simulated entity its own stream so that
 * adding an entity does not perturb the draws of the others.  The generator's
 * step is base/rng.h's, shared with the kernels; the seeding and the
 * distributions below are the engine's own. */
typedef struct {
  guint64 s[4];   /* xoshiro256** state (base/rng.h), never all zero */
} EngRng;

void eng_rng_init (EngRng *rng, guint64 seed, guint64 stream);
guint64 eng_rng_u64 (EngRng *rng);
/* Uniform in [0, 1), 53 random bits. */
double eng_rng_uniform (EngRng *rng);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
guint64 eng_rng_below (EngRng *rng, guint64 n);
/* Exponential with the given mean (> 0). */
double eng_rng_exponential (EngRng *rng, double mean);
/* Standard normal N(0, 1). */
double eng_rng_normal (EngRng *rng);
/* Fisher–Yates shuffle of n ints in place. */
void eng_rng_shuffle (EngRng *rng, int *v, gsize n);

/* --- FIFO resource -------------------------------------------------------
 * A single server: jobs are served one at a time in the order they were
 * requested (ties broken by request order).  A job requested while the server
 * is idle starts at once. */
typedef struct EngResource EngResource;

/* Called when a job completes.  `start` and `end` are the simulated times
 * (seconds) at which its service began and ended. */
typedef void (*EngJobDone) (EngSim *sim, gpointer ctx, gpointer data,
                            double start, double end);

EngResource *eng_resource_new (EngSim *sim);
void eng_resource_free (EngResource *res);

/* Queues a job that occupies the server for `service` seconds (>= 0). */
void eng_resource_request (EngResource *res, double service, EngJobDone done,
                           gpointer ctx, gpointer data);

/* Seconds the server has spent serving jobs, completed ones only. */
double eng_resource_busy_time (const EngResource *res);
/* Jobs waiting or in service. */
gsize eng_resource_queued (const EngResource *res);

G_END_DECLS

#endif /* DTSIM_ENGINE_H */
