/*
 * checkpoint.h — whole-job failures of a synchronous job, its checkpoints
 * and restarts (docs/policies.md, "Job failures and checkpoints").
 *
 * A synchronous job (all-reduce, pipeline, 3-D) stops whole when one of its
 * devices or cables fails, and goes on from its last checkpoint after a
 * restart.  dtsim runs the policy unfailed (its useful timeline, time u),
 * then composes the job's wall-clock timeline from it: useful work cut into
 * segments of `interval` useful seconds, each followed by a checkpoint
 * write of `write` seconds; a failure loses everything since the last
 * completed checkpoint and costs `restart` seconds before the segment runs
 * again.  Every instant of the useful timeline maps to the wall-clock time
 * of its last (kept) execution: sim_timeline_wall().
 *
 * The formulas of the first-order model (Young 1974, Daly 2006) are here
 * too, for `dtsim check` and the expected time to train.
 */
#ifndef DTSIM_SIM_CHECKPOINT_H
#define DTSIM_SIM_CHECKPOINT_H

#include <glib.h>

#include "kernels/kernels.h"
#include "config/simconfig.h"

G_BEGIN_DECLS

/* The RNG stream of the drawn failures (ASCII of "ckpt"): no other draw
 * uses it, so turning failures on moves no other random value. */
#define SIM_CKPT_STREAM G_GUINT64_CONSTANT (0x636b7074)

/* Young's interval: sqrt (2 C M), with C the write time and M the job's
 * mean time between failures (both seconds). */
double sim_young_daly (double write, double mtbf);

/* Daly's higher-order interval (Daly 2006, eq. 37): for C < 2M,
 * sqrt (2 C M) (1 + sqrt (C / (2M)) / 3 + C / (18 M)) - C; else M. */
double sim_daly_interval (double write, double mtbf);

/* The first-order expected overhead of checkpointing every `interval`
 * seconds of useful work, per second of useful work:
 * C / tau + tau / (2M) + R / M.  0 when mtbf is infinite and write 0. */
double sim_ckpt_waste (double write, double interval, double restart, double mtbf);

/* The exact expected wall time to complete `len` seconds of work (plus
 * nothing else) when failures arrive as a Poisson process of mean gap
 * `mtbf`, each costing a restart of `restart` seconds that a failure also
 * interrupts (and starts again): e^(R/M) (e^(len/M) - 1) M. */
double sim_ckpt_expected_attempt (double len, double restart, double mtbf);

/* What a job's failures and checkpoints cost, from its configuration. */
typedef struct {
  gboolean on;           /* [failures] mtbf, link_mtbf or job_at is set */
  double devices;        /* devices of the job (workers, servers placed) */
  double cables;         /* full-duplex cables of its topology (links / 2) */
  double mtbf;           /* s, the job's M: 1 / (devices / mtbf + cables /
                            link_mtbf); INFINITY without drawn failures */
  double size;           /* bytes of one checkpoint */
  double write;          /* s, C = size / checkpoint_bandwidth */
  double restart;        /* s, R = reschedule + size / checkpoint_bandwidth */
  double interval;       /* s, tau: [failures] checkpoint_interval, or
                            Young's where auto (INFINITY: never) */
  double young;          /* s, sqrt (2 C M) (INFINITY when M is) */
  double daly;           /* s, sim_daly_interval */
  double waste;          /* sim_ckpt_waste at interval */
} SimCkptPlan;

/* Bytes of the checkpoint of model m under c: the parameters and the
 * optimizer state the memory model counts (sim_memory_terms' bytes per
 * parameter and of optimizer state per parameter), one copy of each
 * parameter whatever the data-parallel replicas and ZeRO shards; or
 * [failures] checkpoint_size where given. */
double sim_ckpt_size (const SimConfig *c, const KernModel *m);

/* Fills *p from c, its model m (may be NULL: size then from
 * checkpoint_size, else 0) and the number of links of its topology. */
void sim_ckpt_plan (const SimConfig *c, const KernModel *m, int n_links, SimCkptPlan *p);

/* The rules of a plan that need the model and the topology: FALSE with a
 * one-line SIM_ERROR_INPUT message naming c's file and the [failures] key
 * when auto has nothing to go on (no write time, or no failure rate), when
 * a write or a restart would take more than 1e12 s, or
 * when a segment, its write and a restart would take more than 5 job
 * MTBFs (the job would rarely get past one: e^5 ~ 150 tries each). */
gboolean sim_ckpt_validate (const SimConfig *c, const SimCkptPlan *p, GError **error);

/* What one stretch of the wall-clock timeline is (the `outages` table). */
typedef enum {
  SIM_OUTAGE_CHECKPOINT, /* a checkpoint write that completed */
  SIM_OUTAGE_LOST,       /* work (and a partial write) a failure undid */
  SIM_OUTAGE_RESTART,    /* a restart, complete or cut by a failure */
} SimOutageKind;

typedef struct {
  SimOutageKind kind;
  double start, end;     /* s of wall-clock time */
  double useful;         /* s of useful time where it happened: the
                            checkpoint's, or the one the job went back to */
  gboolean failure;      /* a failure ended it (LOST, cut RESTART) */
} SimOutage;

typedef struct SimTimeline SimTimeline;

/* A timeline of segments of `interval` useful seconds each followed by a
 * write of `write` seconds, failures at the n sorted wall times `at` and,
 * where mtbf is finite, drawn as a Poisson process of mean gap mtbf on
 * stream SIM_CKPT_STREAM of `seed`, each followed by `restart` seconds. */
SimTimeline *sim_timeline_new (double interval, double write, double restart,
                               const double *at, int n, double mtbf, guint64 seed);
void sim_timeline_free (SimTimeline *tl);

/* Composes every segment that ends strictly before useful time u with its
 * checkpoint: the run went past it, so they are final. */
void sim_timeline_settle (SimTimeline *tl, double u);
/* Composes the rest: the run's useful timeline ended at `end` (no
 * checkpoint after the last segment). */
void sim_timeline_finish (SimTimeline *tl, double end);
/* The useful time up to which sim_timeline_wall() is final. */
double sim_timeline_settled (const SimTimeline *tl);

/* The wall-clock time of useful instant u's kept execution.  At a
 * checkpoint's useful time, `after` FALSE gives the instant before its
 * write (an end of something), TRUE the instant after it (a start). */
double sim_timeline_wall (const SimTimeline *tl, double u, gboolean after);

/* The most segments, and the most outages, a timeline keeps (24 and 40
 * bytes each): a run past them is refused (sim_timeline_truncated). */
#define SIM_CKPT_MAX_ROWS 1000000

/* Whether more segments or outages came than SIM_CKPT_MAX_ROWS: the
 * wall-clock times past them are not kept, and the run is refused. */
gboolean sim_timeline_truncated (const SimTimeline *tl);

/* The stretches composed so far, in wall-clock order. */
const SimOutage *sim_timeline_outages (const SimTimeline *tl, int *n);

/* Totals once finished: wall-clock time, failures, and seconds of
 * checkpoint writes, lost work and restarts. */
typedef struct {
  double useful, elapsed;
  gint64 failures, checkpoints;
  double checkpoint, lost, restart;
} SimTimelineTotals;
void sim_timeline_totals (const SimTimeline *tl, SimTimelineTotals *out);

G_END_DECLS

#endif
