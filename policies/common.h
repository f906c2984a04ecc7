/*
 * common.h — the plumbing every training policy shares (policies/common.c);
 * private to policies/.
 *
 * A policy keeps its own copy of the PolEnv and, beside it, a PolRun: the
 * counters every policy reports the same way (applied gradients, the
 * evaluation schedule, the end of the run, the summed iteration times).  The
 * helpers below are the one place where they are updated, evaluated and
 * turned into trace rows and a PolResult, so that every policy writes the
 * same rows for the same events.
 */
#ifndef DTSIM_POLICIES_COMMON_H
#define DTSIM_POLICIES_COMMON_H

#include <glib.h>

#include "comm/collectives.h"
#include "policies/policy.h"

G_BEGIN_DECLS

/* What every policy counts over a run. */
typedef struct {
  const PolEnv *env;       /* the policy's own copy, which outlives this */
  gint64 ranks;            /* workers whose gradients a round applies:
                            * env->workers, or a tensor-parallel run's
                            * data-parallel ranks */
  gint64 updates;          /* gradients applied in all */
  gint64 samples;          /* samples whose forward and backward ended in
                            * an applied gradient (every policy adds its
                            * own count beside `updates`) */
  gint64 next_eval;        /* evaluate once `updates` reaches it */
  double end_time;         /* s, at the last update (valid once finished) */
  gboolean finished;       /* the run is over: last update or target reached */
  PolTarget reached_target; /* the target an evaluation reached, if any */
  double sum_compute, sum_comm, sum_wait; /* s, over completed worker
                                             iterations */
  /* The workers' consensus distance, reported with every evaluation (NULL:
   * every worker holds the same model, NAN is reported) */
  double (*consensus) (gpointer ctx);
  gpointer consensus_ctx;
} PolRun;

/* Defaults env->eval_every, when it is not positive, to once per round of
 * env->workers gradients, in whole rounds so that a run evaluates at most
 * POL_DEFAULT_EVALS times; then makes `run` count from zero for that env,
 * which it borrows. */
#define POL_DEFAULT_EVALS 100
void pol_run_init (PolRun *run, PolEnv *env);
/* pol_run_init() for a run whose rounds apply `ranks` gradients (fewer
 * than its workers: tensor groups), which eval_every's default, the
 * progress and the rounds count in. */
void pol_run_init_ranks (PolRun *run, PolEnv *env, gint64 ranks);
/* Evaluates `params` (NULL without math) at the current simulated time and
 * reports the metric; when it reached a target (loss or accuracy),
 * finishes the run now and stops the engine. */
void pol_run_record_metric (PolRun *run, const float *params);
/* The start of a run: the initial model's metric at time 0, and the first
 * evaluation due after eval_every applied gradients. */
void pol_run_start (PolRun *run, const float *params);
/* Reports progress: `updates` of iterations x workers applied gradients at
 * simulated time t. */
void pol_run_progress (const PolRun *run, double t);
/* Adds worker w's finished iteration to the sums and reports it (times in
 * simulated seconds; end - start == compute + comm + wait). */
void pol_run_iteration (PolRun *run, int w, gint64 iteration, double start,
                        double end, double compute, double comm, double wait,
                        gint64 staleness);
/* Whether pol_run_round_end() evaluates now: eval_every more gradients
 * have been applied since the last evaluation, or this is the `last`
 * (for a policy whose evaluated model costs work to assemble). */
gboolean pol_run_eval_due (const PolRun *run, gboolean last);
/* Gradients have been applied (`updates` counts them): a synchronous
 * round's, or one asynchronous update.  Evaluates `params` when
 * pol_run_eval_due(), and finishes the run (now, stopping the engine) when
 * it is the `last`.  Returns TRUE when the run goes on, FALSE when it has
 * finished (here or earlier). */
gboolean pol_run_round_end (PolRun *run, const float *params, gboolean last);
/* Fills in the result: counters (samples included), end time (now when not
 * finished), the final evaluation of `params`; rounds = updates / workers.
 * With a dynamic loss scale, reports the skipped gradients and the final
 * scale as params rows (numerics.skipped_gradients, .final_loss_scale). */
void pol_run_finish (const PolRun *run, const float *params, PolResult *out);

/* Host names "worker0" ... "worker{W-1}" (no servers; caller frees). */
GPtrArray *pol_worker_host_names (int workers, int servers);
/* Reports a span of `actor` when env's recorder wants spans and b > a. */
void pol_span (const PolEnv *env, const char *actor, const char *kind,
               double a, double b, gint64 iteration, double bytes);
/* pol_span() for worker w (actor "worker<w>"). */
void pol_worker_span (const PolEnv *env, int w, const char *kind, double a,
                      double b, gint64 iteration, double bytes);
/* pol_worker_span() with what a pipeline stage's compute also tells. */
void pol_worker_span_detail (const PolEnv *env, int w, const char *kind, double a, double b,
                             gint64 iteration, double bytes, const PolSpanDetail *detail);

/* Rounds x (n floats) to the format of [numerics] communication, as a
 * transfer carries them (nothing without math or in fp32). */
void pol_wire_round (const PolEnv *env, float *x, gsize n);
/* Whether pol_wire_round changes anything: the math runs and [numerics]
 * communication is not fp32. */
gboolean pol_wire_rounds (const PolEnv *env);

/* The collective algorithm [policy] algorithm names; NULL (and an error naming it) when
 * none has that name. */
const CommAlgorithm *pol_env_algorithm (const PolEnv *env, GError **error);
/* Starts an all-reduce with `alg` of n floats among the p ranks on hosts
 * (bufs: p buffers of n floats summed in place, or NULL for timing only),
 * its transfers tagged `tag`, env's reduction cost; `done` as in
 * comm_start().  The algorithm was validated when the policy was
 * created, so a failure to start is a bug and aborts. */
void pol_allreduce_start (const PolEnv *env, const CommAlgorithm *alg,
                          int p, const int *hosts, float *const *bufs,
                          gsize n, int tag, CommDone done, gpointer ctx,
                          gpointer data);

/* [policy] channels as CommArgs takes it: auto (0 in the values) is
 * COMM_CHANNELS_AUTO. */
int pol_channels (const BaseValues *values);
/* [policy] protocol (auto is the selector), or NULL where the values hold
 * none (tables built by hand): the overheads charged as given. */
const CommProtocol *pol_protocol (const BaseValues *values);

/* The arguments of a collective of n floats among the p ranks on hosts, as
 * env gives them: its reduction cost, overheads and channels, root 0. */
CommArgs pol_comm_args (const PolEnv *env, int p, const int *hosts,
                           float *const *bufs, gsize n, int tag);

/* pol_comm_args() for a timing-only collective on one channel (the
 * reduce-scatters, all-gathers and tensor collectives, which [policy]
 * channels does not cut), its values elem_bytes each (0: env's gradient
 * values). */
CommArgs pol_collective_args (const PolEnv *env, int p, const int *hosts, gsize n,
                              double elem_bytes, int tag);
/* Starts a collective of `kind` with those arguments and `alg`, which was
 * resolved to run that kind (a failure to start is a bug and aborts);
 * `done` as in comm_start(). */
void pol_collective_start (const PolEnv *env, const CommAlgorithm *alg, CommKind kind, int p,
                           const int *hosts, gsize n, double elem_bytes, int tag,
                           CommDone done, gpointer ctx, gpointer data);

/* The algorithm pol_allreduce_start() runs for alg (what `auto` picks for
 * these ranks and n floats, else alg). */
const CommAlgorithm *pol_allreduce_resolve (const PolEnv *env,
                                               const CommAlgorithm *alg,
                                               int p, const int *hosts,
                                               gsize n);

/* Reports every rank of `mesh`, the mesh env's workers are laid on, with
 * the name of its host in env->net (PolRecorder.mesh): a policy with a
 * mesh calls it once, from its start. */
void pol_report_mesh (const PolEnv *env, const TrainMesh *mesh);

/* Where alg is a selector (auto), reports what it chose as the run's
 * params row policy.algorithm_chosen. */
/* Records in the params table what comm_plan resolves for collective
 * `kind` of `alg` with arguments `a`: policy.protocol_chosen where the
 * protocol is auto, policy.channels_chosen where the channels are. */
void pol_report_plan (const PolEnv *env, const CommAlgorithm *alg,
                      const CommArgs *a, CommKind kind);
void pol_report_algorithm (const PolEnv *env, const CommAlgorithm *alg,
                           const CommAlgorithm *chosen);

G_END_DECLS

#endif /* DTSIM_POLICIES_COMMON_H */
