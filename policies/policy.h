/*
 * policy.h — training schedules: how workers and servers exchange parameters
 * and gradients over the simulated network while the real math runs.
 *
 * A policy is a table of callbacks registered by name (PolPolicyOps): a
 * schedule that decides when its workers step (train/step.h, the worker
 * step: how a gradient is computed) and when collectives run (comm/), on
 * the ranks of a device mesh (train/mesh.h).  It knows nothing of scenario
 * files or SQLite.  What it observes (iterations, spans, metrics, progress)
 * goes to a PolRecorder that the caller supplies, and simulated compute
 * time comes from a callback the caller supplies too (the device model,
 * device/, and the straggler models, config/stragglers/).
 */
#ifndef DTSIM_POLICY_H
#define DTSIM_POLICY_H

#include <glib.h>

#include "base/keys.h"
#include "comm/collectives.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "netmodel/netmodel.h"
#include "train/mesh.h"
#include "train/sampler.h"

G_BEGIN_DECLS

typedef enum { POL_BSP, POL_SSP, POL_ASYNC } PolConsistency;

/* Pipeline schedules (docs/policies.md, "Pipeline"). */
typedef enum { POL_SCHEDULE_GPIPE, POL_SCHEDULE_1F1B, POL_SCHEDULE_INTERLEAVED } PolSchedule;

/* What one pipeline stage worker did over a run (the trace's `stages`
 * table).  Times in simulated seconds, summed over completed iterations. */
typedef struct {
  int replica, stage, worker;
  int first_layer, last_layer;  /* its layers, inclusive; with chunks, the
                                 * first of its first chunk and the last of
                                 * its last (it holds v groups in between) */
  gsize params;                 /* float32 parameters it holds */
  double flops;                 /* FLOPs of its forwards + backwards per
                                 * iteration, recomputed forwards included */
  int peak_stash;               /* most micro-batches (with chunks: chunk
                                 * and micro-batch pairs) stashed at once */
  double activation_bytes;      /* most bytes stashed at once */
  double boundary_bytes;        /* bytes it sends forward per micro-batch,
                                 * all its chunks together */
  double compute;               /* forward, backward and optimizer time */
  double idle;                  /* the rest of its iterations (bubble) */
} PolStageStats;

/* What a span of pipeline compute also tells (docs/trace.md, spans). */
typedef struct {
  const char *phase;          /* "forward" or "backward" */
  gint64 microbatch;          /* its micro-batch in the iteration */
  int first_layer, last_layer; /* the stage's layers, inclusive */
} PolSpanDetail;

/* One rank of a run's device mesh (the trace's `mesh` table). */
typedef struct {
  int rank;                   /* its rank on the mesh (train/mesh.h) */
  const char *host;           /* the name of the host it runs on */
  int coord[TRAIN_N_AXES];    /* its coordinate along each axis, 0 where
                               * the axis has size 1 */
} PolMeshRank;

/* Where a policy reports what happened.  Any callback may be NULL. */
typedef struct {
  gpointer ctx;
  gboolean want_iterations; /* call `iteration` */
  gboolean want_spans;      /* call `span` */
  /* One finished worker iteration; times in simulated seconds, and
   * end - start == compute + comm + wait. */
  void (*iteration) (gpointer ctx, int worker, gint64 iteration, double start,
                     double end, double compute, double comm, double wait,
                     gint64 staleness);
  /* One interval of an actor's activity: kind is compute, send, recv, wait,
   * update or idle; bytes 0 where none moved; detail NULL but for a
   * pipeline stage's forward or backward. */
  void (*span) (gpointer ctx, const char *actor, const char *kind,
                double start, double end, gint64 iteration, double bytes,
                const PolSpanDetail *detail);
  /* An evaluation of the global model at simulated time t after `step`
   * applied gradients. */
  void (*metric) (gpointer ctx, double t, gint64 step, double loss,
                  double accuracy, double consensus);
  /* One gradient bucket's all-reduce: `ready` when every worker had produced
   * it, `start` and `end` of its collective, the collective algorithm that
   * ran it (all-reduce policy). */
  void (*bucket) (gpointer ctx, gint64 iteration, int bucket, double bytes,
                  double ready, double start, double end,
                  const char *algorithm);
  /* A value of the run the policy settled when it started (e.g. the
   * algorithm `auto` chose), as a params row "key" = "value". */
  void (*param) (gpointer ctx, const char *key, const char *value);
  /* A worker failure: the worker was down from `start` to `end` (its
   * restart), during its iteration `iteration`; `lost` names what it lost:
   * compute (the step it was computing), send (the gradient in flight), recv
   * (parameters it was waiting for) or idle (nothing: it was down already or
   * between phases). */
  void (*failure) (gpointer ctx, int worker, double start, double end,
                   gint64 iteration, const char *lost);
  /* A parameter-server crash: server `server` went down at `start`;
   * `detected` is when the next servers of its chains took its ranges over
   * (replication >= 2; NAN without replication) and `end` its restart;
   * `iteration` the least count of gradients applied there of any worker;
   * `lost` names what it lost: keys (its keys' values, restored at the
   * restart as [failures] recover says) or ranges (its place as primary or
   * copy of its ranges, taken over). */
  void (*server_failure) (gpointer ctx, int server, double start, double detected,
                          double end, gint64 iteration, const char *lost);
  /* Called after every applied gradient: `done` of `total`. */
  void (*progress) (gpointer ctx, double t, gint64 done, gint64 total);
  /* One pipeline stage worker's summary, once per worker when the run
   * finishes (pipeline policy). */
  void (*stage) (gpointer ctx, const PolStageStats *st);
  /* One rank of the mesh the policy lays its workers on, once per rank in
   * rank order when the run starts (pol_report_mesh; the policies without
   * a mesh report none). */
  void (*mesh) (gpointer ctx, const PolMeshRank *rank);
} PolRecorder;

/* Simulated seconds of a worker's step (device model, straggler factor);
 * called once per step, in simulated-time order.  `host_seconds` is the wall
 * time the step's real math took on this host (0 without math); only the
 * measured compute-time mode uses it. */
typedef double (*PolComputeTime) (gpointer ctx, int worker, double host_seconds);
/* Simulated seconds of one optimizer step on n parameters. */
typedef double (*PolUpdateTime) (gpointer ctx, gsize n);
/* Simulated seconds of a part of a worker's step whose device-model cost
 * is `seconds` (the straggler factor applied, one draw per call); in the
 * measured compute-time mode the measured `host_seconds` instead. */
typedef double (*PolScaleTime) (gpointer ctx, int worker, double seconds,
                                double host_seconds);

/* Fills fwd[l] and bwd[l] (n_layers each) with the simulated seconds of
 * layer l's forward and backward on n samples (device model, no
 * straggler); the pipeline prices its stages with it. */
typedef void (*PolLayerSeconds) (gpointer ctx, int n, double *fwd, double *bwd);

/* One worker failure (docs/policies.md, "Worker failures"). */
typedef struct {
  int worker;
  double at;                  /* simulated seconds */
  double restart;             /* seconds until the worker is back */
} PolFailure;

/* What a parameter server holds when it comes back from a crash without
 * replication ([failures] recover; docs/policies.md, "Server failures"). */
typedef enum {
  POL_RECOVER_REINIT,         /* the model's initial values of its keys */
  POL_RECOVER_CHECKPOINT,     /* its keys' values at its last checkpoint */
} PolRecover;

/* One parameter-server crash. */
typedef struct {
  int server;
  double at;                  /* simulated seconds */
  double restart;             /* seconds until the server is back */
} PolServerFailure;

/* The server crashes of a run and how they are handled ([failures]
 * server, server_at, restart, detect, recover, checkpoint_every). */
typedef struct {
  const PolServerFailure *list; /* (n) in any order */
  int n;
  double detect;              /* seconds from a crash to its takeover
                               * (replication >= 2) */
  PolRecover recover;         /* replication = 1 */
  gint64 checkpoint_every;    /* recover = checkpoint: iterations between
                               * checkpoints, >= 1 */
} PolServerFailures;

/* Everything a policy needs to run.  Pointers are borrowed. */
typedef struct {
  EngSim *sim;
  NetNetwork *net;            /* built with the policy's host names */
  KernModel *model;           /* NULL: timing only, no math */
  const KernDataset *train;   /* NULL when model is NULL */
  const KernDataset *test;
  const KernDataset *eval;    /* training samples the loss is evaluated on */
  gsize n_params;             /* float32 parameters of the model */
  double fwd_share;           /* share of a step spent in forward, [0, 1] */
  /* Layers in parameter order: layer l holds parameters [layer_lo[l],
   * layer_lo[l+1]) and its gradient is complete at the share layer_ready[l]
   * of the step (backward runs from the last layer to the first). */
  int n_layers;
  const gsize *layer_lo;
  const double *layer_ready;
  int workers;
  int servers;                /* parameter-server shards */
  int batch;                  /* samples per worker step */
  /* (workers) samples of worker w's step under [policy] balance = speed
   * (they sum to batch x workers); NULL: batch each */
  const int *batches;
  TrainPartition partition;     /* how the training set is shared out */
  int classes_per_worker;     /* by-label */
  KernOptConfig opt;          /* optimizer applied where updates happen */
  gint64 iterations;          /* run ends after iterations*workers gradients */
  gint64 eval_every;          /* applied gradients between evaluations */
  double target_loss;         /* stop when reached; 0 = never */
  double target_accuracy;     /* stop when reached, in (0, 1]; 0 = never */
  guint64 seed;
  /* The policy's own keys ([policy] ..., as its `keys` rows declare them)
   * by "section.key"; each policy reads its own in `create`. */
  const BaseValues *values;
  const PolFailure *failures; /* (n_failures) in any order */
  int n_failures;
  PolServerFailures server_failures; /* parameter-server crashes */
  double memory_bandwidth;    /* bytes/s of a device's memory, 0 = not
                               * modelled ([policy] reduce = memory) */
  double value_bytes;         /* bytes of an activation or gradient value on
                               * the wire in the training precision: 2
                               * under bf16 and fp16, else 4 (tensor
                               * parallelism's collectives) */
  double grad_bytes;          /* bytes of a gradient value in a reduction
                               * ([policy] gradient_precision): 4, or
                               * value_bytes; 0 is taken as 4 */
  double overlap_slowdown;    /* [device] overlap_slowdown: compute takes
                               * 1 + this as long while a collective runs
                               * on the device */
  /* Collective overheads ([network] launch_overhead, step_overhead,
   * intra_step_overhead, net_overhead, nic_latency; CommArgs), s */
  double launch_overhead, step_overhead, intra_step_overhead, net_overhead;
  double nic_latency;
  int hw, intra_hw;           /* CommHw those overheads are for (CommArgs) */
  int arch;                   /* CommArch of the devices: which of NCCL's
                               * bandwidth ceilings apply (CommArgs) */
  gboolean amd_host;          /* the servers' CPUs are AMD's (CommArgs) */
  const KernLayer *layers;    /* (n_layers) the model's layer table */
  const gboolean *recomputed; /* (n_layers) TRUE where the layer's forward
                               * runs again in its backward ([model]
                               * recompute; layer_seconds counts it); NULL
                               * when none does */
  PolLayerSeconds layer_seconds; /* with compute_ctx */
  PolScaleTime scale_time;
  PolComputeTime compute_time;
  gboolean host_timed;        /* compute_time uses the host's time of the
                               * math (compute_time = measured) */
  gboolean same_pace;         /* scale_time gives every worker the same
                               * time for the same work (no straggler
                               * model, not measured): workers whose work
                               * is alike run alike */
  PolUpdateTime update_time;
  gpointer compute_ctx;       /* of compute_time and update_time */
  PolRecorder rec;
} PolEnv;

/* The target an evaluation reached, stopping the run. */
typedef enum {
  POL_TARGET_NONE,
  POL_TARGET_LOSS,            /* [scenario] target_loss */
  POL_TARGET_ACCURACY,        /* [scenario] target_accuracy */
} PolTarget;

/* What a finished (or stopped) run reports. */
typedef struct {
  gint64 updates;             /* gradients applied in all */
  /* Samples that went through a forward and a backward whose gradient was
   * applied: updates x batch for the data-parallel policies, replicas x
   * batch per iteration for the pipeline (its stages share each sample),
   * 0 for a policy that trains nothing.  Throughput is samples / end_time. */
  gint64 samples;
  gint64 rounds;              /* updates / workers, rounded down */
  double end_time;            /* simulated seconds at the last update */
  double final_loss;          /* NAN when no math ran */
  double final_accuracy;
  PolTarget reached_target;   /* which target stopped the run, if any */
  double compute, comm, wait; /* summed over completed worker iterations, s */
} PolResult;

typedef struct PolPolicy PolPolicy;

/* The errors of the policies' hooks: messages are "[section] key: what is
 * wrong and how to fix it" (the caller prefixes the file). */
#define POL_ERROR pol_error_quark ()
GQuark pol_error_quark (void);

/* [network] gpus_per_node of `values` with its default resolved (0 means
 * 8 GPUs per node, as the nodes topology reads it). */
gint64 pol_gpus_per_node (const BaseValues *values);

/* Sets a POL_ERROR error "[SECTION] KEY: MESSAGE" and returns FALSE. */
gboolean pol_key_error (GError **error, const char *section, const char *key,
                        const char *fmt, ...) G_GNUC_PRINTF (4, 5);

/* What a policy's `validate` hook sees of a scenario: its keys and the
 * figures its cross-key rules involve. */
typedef struct PolCheck PolCheck;
struct PolCheck {
  BaseValues *values;         /* every registry key of the run */
  gint64 workers, servers;    /* servers resolved (0 became workers) */
  gint64 batch;               /* samples per worker step */
  int n_failures;             /* [failures] entries */
  int n_server_failures;      /* [failures] server entries */
  gboolean detect_given;      /* [failures] detect is not its default */
  PolRecover recover;         /* [failures] recover */
  gint64 checkpoint_every;    /* [failures] checkpoint_every */
  double memory_bandwidth;    /* [device] memory_bandwidth, 0 = none */
  const char *topology;       /* [network] topology, NULL = unset */
  gboolean math;              /* the real math runs (model, backend and
                               * policy all have it) */
  /* Records a key whose value the hook derived (e.g. a 0 that means "as
   * many as fit"), so that the run's params show it; with ctx. */
  void (*resolved) (gpointer ctx, const char *name, gint64 value);
  gpointer ctx;
};

/* Whether every key of `keys` (INT or QUANTITY rows, ending with a NULL
 * section) holds its default in v; else FALSE with the POL_ERROR "[section]
 * key: applies only to OWNER; remove it or set OWNER" (owner e.g. "kind =
 * fedavg"): for keys that would silently do nothing elsewhere. */
gboolean pol_keys_at_default (const BaseValues *v, const BaseKey *keys, const char *owner,
                              GError **error);

/* Sets `name` to v in chk's values and reports it through chk->resolved. */
void pol_check_resolve_int (PolCheck *chk, const char *name, gint64 v);

/* --- tensor parallelism: the cut (policies/tensor.c) --- */

/* How a layer is cut among the ranks of a tensor group. */
typedef enum {
  POL_TP_WHOLE,     /* every rank computes it whole (replicated) */
  POL_TP_COLUMN,    /* its weight split by columns: outputs cut T ways */
  POL_TP_INSIDE,    /* between a column and its row layer: works on the
                       column layer's split outputs (attention, GELU) */
  POL_TP_ROW,       /* its weight split by rows: a partial sum of every
                       output on each rank */
  POL_TP_VOCABULARY /* a token embedding cut by vocabulary: each rank looks
                       up its own rows, an all-reduce sums the outputs; or
                       an LM head's loss over its outputs cut by vocabulary
                       (three small all-reduces: the maximum, the sum of
                       the exponentials, the target's logit) */
} PolTpSplit;

/* split[l] (n_layers) for layers cut T ways; FALSE with a POL_ERROR naming
 * [policy] tensor when T does not divide a cut width. */
gboolean pol_tensor_split (const KernLayer *layers, int n_layers, int T, PolTpSplit *split,
                           GError **error);

/* The parameters one rank of the group holds: a 1/T share of every cut
 * layer's (a row layer's bias whole), every whole layer's. */
gsize pol_tensor_rank_params (const KernLayer *layers, int n_layers, gsize n_params,
                              const PolTpSplit *split, int T);

/* The activation floats per sample one rank keeps for backward: a cut
 * layer's 1/T, a whole layer's all (1/T too with sequence parallelism). */
double pol_tensor_rank_activations (const KernLayer *layers, int n_layers,
                                    const PolTpSplit *split, int T, gboolean sequence);

/* One collective of a step on each tensor group: kind and floats per
 * sample of the buffer (the whole buffer, as CommArgs n counts it). */
typedef struct {
  CommKind kind;
  double floats;         /* per sample: the layer's output or input (a
                            sequence of tokens for a transformer) */
  gboolean backward;
} PolTpCollective;

/* The collectives of one step, in order (n_out of them, a new array): in
 * forward, an all-gather of a column layer's input with sequence
 * parallelism; after a row layer (and a vocabulary-cut embedding) a
 * reduction of its outputs, an all-reduce, or a reduce-scatter with
 * sequence parallelism; after a loss over a vocabulary-cut LM head three
 * all-reduces of a value per token.  In backward, from the last layer: a
 * recomputed layer's (recomputed[l], NULL = none) forward collectives
 * again, an all-gather of a row layer's outputs with sequence parallelism,
 * then after a column layer (but the model's first without sequence
 * parallelism) the reduction of its input gradient. */
PolTpCollective *pol_tensor_collectives (const KernLayer *layers, int n_layers,
                                         const PolTpSplit *split, gboolean sequence,
                                         const gboolean *recomputed, int *n_out);

/* --- expert parallelism (policies/experts.c) --- */

/* The expert layers of a model as [policy] experts, capacity_factor and
 * routing place them. */
typedef struct {
  int experts;           /* E of the model's expert layers; 0 = none */
  int top_k;             /* experts each token runs */
  int ep;                /* [policy] experts: ranks of an expert group */
  double capacity;       /* [policy] capacity_factor */
  double dropped;        /* share of the token-expert assignments dropped
                            (over capacity); 0 unless ep > 1 */
  double load;           /* the busiest rank's assignments over an even
                            share (1 / ep of them): 1 when even, more on
                            the hot expert's rank; 1 unless ep > 1 */
  double hot;            /* share of the assignments expert 0 computes */
} PolExperts;

/* Adds the expert axis' [policy] keys to rows (BaseKey pointers). */
void pol_experts_keys (GPtrArray *rows);
/* The share p_i of the token-expert assignments the router sends expert
 * i of E: 1/E, or (routing = zipf, exponent s) (i+1)^-s / sum_j (j+1)^-s. */
double pol_experts_share (const BaseValues *v, int E, int i);
/* Fills ex for the model's layers under v: the capacity of expert i is a
 * share c/E of the assignments (c = capacity_factor), it computes
 * min(p_i, c/E), the rest is dropped; rank r holds experts
 * [r E/EP, (r+1) E/EP) and its load is EP x the sum of what they compute. */
void pol_experts_of (const BaseValues *v, const KernLayer *layers, int n_layers,
                     PolExperts *ex);
/* Values per sample one rank sends in one all-to-all around the run of
 * expert layers holding layer l (a dispatch or a combine, forward or
 * backward): tokens x top_k x width x load (every block at the busiest
 * rank's size); 0 when l is not an expert layer or ex->ep <= 1. */
double pol_experts_alltoall_floats (const KernLayer *layers, int l, const PolExperts *ex);
/* What runs the all-to-alls: alg where it does all-to-all (not auto),
 * else the first registered algorithm that does. */
const CommAlgorithm *pol_experts_alltoall_algorithm (const CommAlgorithm *alg);
/* Whether layer l is the first (last) of a run of expert layers: the
 * dispatch comes before the first, the combine after the last. */
gboolean pol_experts_first (const KernLayer *layers, int l);
gboolean pol_experts_last (const KernLayer *layers, int n_layers, int l);
/* The parameters in [lo, hi) that belong to expert layers. */
gsize pol_experts_params_in (const KernLayer *layers, int n_layers, gsize n_params, gsize lo,
                             gsize hi);
/* The parameters one rank of an expert group of ep holds: the dense ones
 * and 1/ep of the experts'. */
gsize pol_experts_rank_params (const KernLayer *layers, int n_layers, gsize n_params, int ep);

/* The model as a run will place it, for the `check_model` and `shares`
 * hooks. */
typedef struct {
  const BaseValues *values;
  const KernModel *model;     /* layers, n_layers, ops->n_params */
  gint64 workers, servers, batch;
  guint64 seed;               /* [scenario] seed */
  gboolean failures;          /* [failures] lists some */
  const PolServerFailures *server_failures; /* [failures] server crashes;
                               * NULL where none is known (the memory and
                               * work hooks) */
  gboolean host_timed;        /* compute_time = measured */
  gboolean math;              /* the run computes the model's real math (a
                               * kind with math, [kernels] backend not none) */
  const gboolean *recomputed; /* (n_layers) as PolEnv's; NULL = none */
  PolLayerSeconds layer_seconds;
  gpointer ctx;               /* of layer_seconds */
  gboolean flow_classes;      /* collectives may run as flow classes:
                               * [network] flow_classes = auto, no trace of
                               * every message, no [network] links */
  const char *topology;       /* [network] topology */
  gboolean same_pace;         /* as PolEnv's: no straggler model, not
                               * measured */
} PolModelInfo;

/* One device's part of the model when a policy spreads the model over its
 * workers (the `shares` hook). */
typedef struct {
  int first, last;            /* its layers, inclusive: the first of its
                               * first chunk, the last of its last */
  int chunks;                 /* groups of consecutive layers it holds (an
                               * interleaved pipeline's v; 1 otherwise) */
  int *chunk_first;           /* (chunks) each group's first layer */
  int *chunk_last;            /* (chunks) and its last, inclusive */
  int microbatch;             /* samples per stashed micro-batch */
  int slots;                  /* micro-batches (with chunks > 1: chunk and
                               * micro-batch pairs) stashed at its peak */
  double stash_bytes;         /* bytes one micro-batch holds stashed in all
                               * its chunks */
  double act_bytes;           /* most bytes it holds stashed at once */
} PolShare;

/* The shares of every device (one group of workers repeats them). */
typedef struct {
  int n;
  PolShare *share;            /* (n) */
  const char *unit;           /* what one share is called, e.g. "stage" */
  char *note;                 /* said beside the stash, e.g. "1f1b" */
  char *advice;               /* the fixes to try first when one does not fit */
} PolShares;

void pol_shares_free (PolShares *s);
/* The layers of share `sh` as people read them: "3-5", or with chunks
 * "0-1, 4-5" (caller frees). */
char *pol_share_layers (const PolShare *sh);

/* What a policy's schedule does in one iteration ([scenario] iterations
 * counts them), for the run's estimates of trace size, host memory and
 * events (sim/estimate.c): upper-ish counts, from the keys alone. */
typedef struct {
  double messages;            /* transfers (messages rows) */
  double spans;               /* spans rows */
  double iteration_rows;      /* iterations rows */
  double bucket_rows;         /* buckets rows */
  double in_flight;           /* most transfers in flight at once, in the
                               * whole run (each holds a flow and its
                               * events until its last byte arrives) */
  double state_bytes;         /* host bytes its own state holds beyond the
                               * real math's (host_bytes) and the transfers */
  double class_messages;      /* of `messages`, those of collectives that
                               * run as flow classes */
  double class_events;        /* the engine events those collectives take
                               * instead (comm_class_events) */
} PolWork;

/* The expert axis' rules on the model: experts > 1 needs expert layers
 * whose E it divides. */
gboolean pol_experts_check_model (const PolModelInfo *mi, GError **error);

/* The default of a policy without a `work` hook: every worker computes,
 * sends to and receives from one peer in each iteration. */
void pol_work_default (const PolModelInfo *mi, PolWork *out);

typedef struct {
  const char *name;
  const char *description;
  const char *source;          /* paper or document it follows; NULL = none */
  /* Its scenario keys, ending with a row whose section is NULL; NULL =
   * none.  Keys several policies read are in policies/registry.c. */
  const BaseKey *keys;
  gboolean failures;           /* simulates [failures] */
  gboolean server_failures;    /* simulates [failures] server crashes */
  gboolean job_failures;       /* synchronous: stops whole at a failure, so
                                * [failures] mtbf, link_mtbf and job_at
                                * apply (sim/checkpoint.h) */
  gboolean no_model;           /* trains nothing: the run loads no data set
                                * and runs no math, whatever [model] and
                                * [kernels] say */
  gboolean compresses;         /* sends its gradients through [policy]
                                * compression */
  gboolean filters;            /* filters its pushes as [policy] filter
                                * says (policies/filter.h) */
  gboolean zero;               /* shards its training state over its
                                * workers as [policy] zero says, and its
                                * gradient reductions carry [policy]
                                * gradient_precision values */
  gboolean tensor;             /* cuts layers among tensor groups as
                                * [policy] tensor and sequence_parallel say */
  gboolean experts;            /* spreads a mixture of experts' experts over
                                * its data-parallel ranks as [policy]
                                * experts says */
  gboolean no_numerics;        /* runs math the worker step does not (a
                                * pipeline's stages): refuses [numerics] */
  gboolean balances;           /* shares its global batch among devices of
                                * several kinds by their speeds as [policy]
                                * balance = speed says */
  gboolean layer_steps;        /* prices its steps layer by layer (a
                                * pipeline's micro-batches), so the host's
                                * whole-step terms ([model] input_time,
                                * framework_time) do not apply */
  gboolean wire_numerics;      /* rounds what its transfers carry as
                                * [numerics] communication says
                                * (pol_wire_round) */
  const char *no_wire;         /* without wire_numerics: why, for the line
                                * that refuses [numerics] communication
                                * (NULL: a generic one) */
  gboolean updates_not_samples; /* updates x batch is not the samples it
                                * trained on (a trace without its samples
                                * counted has no throughput) */
  /* Its cross-key rules (NULL = none); FALSE with a POL_ERROR. */
  gboolean (*validate) (PolCheck *chk, GError **error);
  /* The rules its keys keep when another policy runs (NULL = none): a key
   * that would silently do nothing there is refused. */
  gboolean (*foreign) (const PolCheck *chk, GError **error);
  /* Its rules about the model (NULL = none); FALSE with a POL_ERROR. */
  gboolean (*check_model) (const PolModelInfo *mi, GError **error);
  /* Bytes of host memory its real math holds for the model as `mi` places
   * it, `per_model` being one copy of the parameters, gradients, optimizer
   * state and a batch's activations (NULL: one per worker and server). */
  double (*host_bytes) (const PolModelInfo *mi, double per_model);
  /* Lines `dtsim check` prints about how it places the model (NULL =
   * none), each ending in a newline (caller frees). */
  char *(*describe) (const PolModelInfo *mi);
  /* How it spreads the model over devices (NULL: every worker holds the
   * whole model and runs whole batches).  Called after check_model. */
  PolShares *(*shares) (const PolModelInfo *mi);
  /* What one iteration of its schedule does for `mi` (NULL:
   * pol_work_default); counts only, it runs nothing. */
  void (*work) (const PolModelInfo *mi, PolWork *out);
  /* The run table's figure of merit when samples per second mean nothing
   * (NULL: samples/s, and scaling efficiency on a sweep over workers): its
   * column title, and its value for a run of `workers` whose iterations
   * took `seconds` each. */
  const char *figure;
  double (*figure_of) (const BaseValues *values, gint64 workers,
                       double seconds);
  /* How many parts the training set is cut into, each drawn by one
   * sampler (docs/policies.md, "Data partitioning"), for a run of
   * `workers` with these keys (NULL: one per worker).  A worker's batch
   * must fit in its part. */
  gint64 (*data_parts) (const BaseValues *values, gint64 workers);
  /* What went wrong and what to change, "[section] key: ...", when a run
   * reached its iteration count without applying a single gradient (NULL:
   * a line of the caller's; the run fails either way). */
  const char *no_update_hint;
  /* Names of the tags it gives its transfers (for the messages table). */
  const char *const *tag_names;
  int n_tags;
  /* Host names this policy needs, in host-id order (caller frees). */
  GPtrArray *(*host_names) (int workers, int servers);
  PolPolicy *(*create) (const PolEnv *env, GError **error);
  /* Schedules the first events; the caller then runs the engine. */
  void (*start) (PolPolicy *p);
  /* Fills in the result (final evaluation of the global model). */
  void (*finish) (PolPolicy *p, PolResult *out);
  void (*free) (PolPolicy *p);
} PolPolicyOps;

/* The expert axis' rules on the keys alone (pol_validate calls it):
 * experts > 1 only under a policy with `experts`, with tensor = 1, zero <= 2,
 * no compression, dividing the data-parallel ranks; capacity_factor > 0;
 * capacity_factor, routing and zipf only with experts > 1, zipf only with
 * routing = zipf. */
gboolean pol_experts_validate (const PolPolicyOps *ops, PolCheck *chk, GError **error);

/* The samplers of env's workers over env->train, by env->partition
 * (train/sampler.h). */
TrainSampler *pol_samplers_for_env (const PolEnv *env);

/* Evaluates `params` (n_params) as every policy reports it: mean loss over
 * env->eval and accuracy over env->test, the parameters read in [numerics]
 * weights' format as the steps read them; NAN for both without math. */
void pol_evaluate (const PolEnv *env, const float *params, double *loss,
                   double *accuracy);

/* The tag of the messages of a data-parallel all-reduce (allreduce.c),
 * which the pipeline's replicas run too. */
extern const char pol_allreduce_tag[];

/* The registered policies (PolPolicyOps *), NULL-terminated. */
const void *const *pol_entries (void);
/* The registered policy of that name, or NULL. */
const PolPolicyOps *pol_lookup (const char *name);
/* Appends the scenario keys of every policy (const BaseKey *) to rows. */
void pol_keys (GPtrArray *rows);
/* The rules every policy shares, then those of `ops` (its validate). */
gboolean pol_validate (const PolPolicyOps *ops, PolCheck *chk, GError **error);
/* The names of the policies that simulate [failures], joined by " or ". */
char *pol_failure_names (void);
/* The kinds that honour whole-job failures (job_failures), joined by " or ";
 * free with g_free(). */
char *pol_job_failure_names (void);
/* The names of the policies that simulate server crashes, joined by " or ". */
char *pol_server_failure_names (void);
/* s per byte combined in a collective ([policy] reduce and the device's
 * memory bandwidth). */
double pol_reduce_per_byte (const PolEnv *env);

/* The policies themselves are named only by the registry
 * (policies/registry.c); the plumbing they share is private to policies/:
 * common.h. */

/* The pipeline's schedule and cut, which tests and the policy share
 * (docs/policies.md, "Pipeline"). */

/* Splits n_layers layers of costs cost[] (finite, >= 0) into `stages`
 * contiguous non-empty groups minimising the largest group's summed cost,
 * exactly (the cut of the dynamic programme over the last cut: scanning
 * from the last stage backwards, each cut is the earliest that keeps the
 * least largest group of the layers before the stage's end), in
 * O(stages x (n_layers - stages + 1)) time and about
 * 2 sqrt(stages) x (n_layers - stages + 1) doubles.  Writes the layer count
 * of each stage into count[] (stages).  1 <= stages <= n_layers. */
void pol_pipeline_partition (const double *cost, int n_layers, int stages, int *count);
/* The order stage s of p, holding v chunks, runs its 2mv operations in:
 * ops[k] = c m + i for the forward of micro-batch i through its chunk c,
 * -(c m + i + 1) for its backward.  GPipe: F0 .. F(m-1), B0 .. B(m-1);
 * 1F1B: w = min(p - s - 1, m) forwards, then m - w pairs F(w + j), B(j),
 * then the remaining w backwards (v = 1 for both).  Interleaved with v = 1:
 * the 1F1B order; with v > 1 (m a multiple of p): Megatron-LM's, whose
 * j-th forward (and j-th backward) is micro-batch (j div pv) p + j mod p,
 * through chunk (j mod pv) div p (backward: v - 1 minus that), with
 * w = 2(p - s - 1) + (v - 1)p warm-up forwards (all mv when m = p), then
 * pairs of a forward and a backward, then the remaining backwards. */
void pol_pipeline_ops_order (PolSchedule schedule, int p, int v, int s, int m, int *ops);
/* Layers per stage of a p-stage pipeline over n_layers layers (count[],
 * p entries): stage_layers when given (non-NULL), else
 * pol_pipeline_partition() on the costs layer_fwd[l] + layer_bwd[l] (the
 * layers' seconds on one micro-batch).  Where `layers` (may be NULL) marks
 * some layers `joined`, the partition cuts before the others only: each
 * unmarked layer and the joined ones after it are one piece, whose cost
 * is their sum (p at most the pieces).  The policy and the device-memory
 * check (device/model.c) both cut the model with it. */
void pol_pipeline_stage_counts (const int *stage_layers, const double *layer_fwd,
                                const double *layer_bwd, const KernLayer *layers,
                                int n_layers, int p, int *count);
/* The places a pipeline may cut `layers` (n_layers): the layers not
 * `joined`, the first always among them. */
int pol_pipeline_pieces (const KernLayer *layers, int n_layers);
/* The stash of stage s of p (v chunks, m micro-batches) as its operations
 * run in pol_pipeline_ops_order's order: a micro-batch is stashed in a
 * chunk from the start of its forward there to the end of its backward,
 * holding chunk_bytes[c] (v entries).  Returns the most (chunk,
 * micro-batch) pairs stashed at once; *peak_bytes (when not NULL) gets the
 * most bytes, sum over chunks of pairs x chunk_bytes[c], and chunk_peak[c]
 * (v entries, when not NULL) the most micro-batches chunk c holds at once.
 * GPipe: m; 1F1B: min(p - s, m); interleaved, v > 1:
 * min(2(p - s - 1) + (v - 1)p + 1, mv), mv when m = p. */
int pol_pipeline_stash_peak (PolSchedule schedule, int p, int v, int s, int m,
                             const double *chunk_bytes, double *peak_bytes, int *chunk_peak);
/* Bytes a stage (or chunk) of layers [first, last] stashes per micro-batch
 * of n samples, from its forward to its backward: 4 n (i + sum of the
 * activations of its layers that are not recomputed), i the floats per
 * sample it received (outputs of layer first - 1; 0 for first = 0, whose
 * first layer's activations, holding the model's input, are kept even when
 * recomputed).  recomputed (n_layers) may be NULL: none is. */
double pol_pipeline_stash_bytes (const KernLayer *layers, const gboolean *recomputed, int first,
                                 int last, int n);

G_END_DECLS

#endif /* DTSIM_POLICY_H */
