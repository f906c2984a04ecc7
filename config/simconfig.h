/*
 * simconfig.h — one resolved point of a scenario (SimConfig), the error
 * domain every floor of the application reports with, and the limits a
 * scenario is held to.
 *
 * The loader (config/scenario.h) fills SimConfigs; everything above it
 * (device costs, assembly, distribution) reads them, and the registry
 * entries of config/ (straggler models, model kinds, data sets) check and
 * build from them, without knowing how a file is parsed.
 */
#ifndef DTSIM_CONFIG_SIMCONFIG_H
#define DTSIM_CONFIG_SIMCONFIG_H

#include <glib.h>

#include "base/keys.h"

G_BEGIN_DECLS

#define SIM_ERROR sim_error_quark ()
GQuark sim_error_quark (void);
typedef enum {
  SIM_ERROR_INPUT,   /* bad scenario, key, value or file: exit code 2 */
  SIM_ERROR_RUNTIME, /* failure while running (I/O, SQLite): exit code 1 */
  SIM_ERROR_INFEASIBLE /* the model does not fit the device's memory: a
                        * sweep records the point `infeasible` and runs the
                        * others; a lone run is bad input (exit code 2) */
} SimErrorCode;

/* Limits on what one scenario may ask for (docs/security.md gives the
 * measurements behind them): the hosts the policy places on the network
 * (workers, and servers where it has them); the pairs of a worker and a
 * server it places (every worker exchanges a shard with every server in
 * each step, so their transfers in flight grow with the product); and the
 * points of a sweep. */
#define SIM_MAX_HOSTS 131072
#define SIM_MAX_SERVER_PAIRS (4096 * 4096)
#define SIM_MAX_SWEEP_POINTS 10000
/* The most layers a model may have (MLP or layer table). */
#define SIM_MAX_LAYERS 16384
/* The most host memory (bytes) the real math of one run may need: its
 * models, gradients, optimizer states, activations and data set. */
#define SIM_MAX_HOST_BYTES (16.0 * 1024 * 1024 * 1024)
/* The default [device] reserve of a catalog device with memory: the CUDA
 * context and the libraries' handles and workspaces (bytes), plus this
 * share of the capacity for the caching allocator's fragmentation
 * (docs/compute.md, "Device memory"). */
#define SIM_RESERVE_CONTEXT (512.0 * 1024 * 1024)
#define SIM_RESERVE_FRAGMENTATION 0.05

/* [device] precision.  fp8 is Transformer Engine's recipe: the linear
 * layers' matrix products in fp8, everything else in bf16 (docs/compute.md,
 * "FP8"). */
typedef enum {
  SIM_PREC_FP32, SIM_PREC_TF32, SIM_PREC_BF16, SIM_PREC_FP16, SIM_PREC_FP8
} SimPrecision;
#define SIM_N_PRECISIONS 5

/* Whether `precision` (SimPrecision) is mixed-precision training: 2-byte
 * activations and working weights beside an fp32 master copy (bf16, fp16,
 * and fp8, whose tensors between kernels are bf16). */
static inline gboolean
sim_precision_mixed (int precision)
{
  return precision == SIM_PREC_BF16 || precision == SIM_PREC_FP16 || precision == SIM_PREC_FP8;
}
/* [model] recompute (docs/compute.md, "Activation recomputation"). */
typedef enum { SIM_RECOMPUTE_NONE, SIM_RECOMPUTE_SELECTIVE, SIM_RECOMPUTE_FULL } SimRecompute;
/* [model] fusion: whether chains of element-wise layers run as one kernel. */
typedef enum { SIM_FUSION_NONE, SIM_FUSION_ELEMENTWISE } SimFusion;
/* [kernels] reproducible: auto (what the backend does by default), true,
 * false. */
typedef enum { SIM_REPRODUCIBLE_AUTO, SIM_REPRODUCIBLE_TRUE, SIM_REPRODUCIBLE_FALSE } SimReproducible;
/* [policy] balance: how a heterogeneous cluster shares the global batch. */
typedef enum { SIM_BALANCE_NONE, SIM_BALANCE_SPEED } SimBalance;
/* The most entries [cluster] device_mix may list. */
#define SIM_MAX_DEVICE_KINDS 64

/* One kind of device of [cluster] device_mix: the [device] figures its
 * catalog entry gives (the file's own [device] keys win, as with
 * [cluster] device), and how many workers it has. */
typedef struct {
  char *name;            /* catalog name as written */
  gint64 count;          /* workers on it, >= 1 */
  double flops, efficiency, conv_efficiency, conv3x3_efficiency, attention_factor;
  double memory_efficiency, kernel_overhead, overlap_slowdown;
  double memory_bandwidth; /* bytes/s */
  double memory;         /* bytes */
  double reserve;        /* bytes, < 0 = the default */
  double price;          /* per device-hour */
} SimDeviceKind;

typedef enum {
  SIM_DETAIL_SUMMARY, SIM_DETAIL_ITERATIONS, SIM_DETAIL_SPANS, SIM_DETAIL_MESSAGES
} SimDetail;

/* One fully resolved run: every key has its value (given or default). */
typedef struct {
  /* [scenario] */
  char *name;            /* run name: scenario name plus swept values */
  char *scenario_name;   /* [scenario] name */
  char *file;            /* the scenario file it came from (names it in errors) */
  gint64 seed;
  gint64 iterations;     /* rounds: a run applies iterations*workers gradients */
  double time_limit;     /* seconds, 0 = none */
  double max_memory;     /* bytes of host memory a run may be estimated
                            to need (sim/estimate.h) */
  gint64 max_events;     /* engine events a run may be estimated to take */
  double target_loss;    /* stop when the evaluated loss reaches it, 0 = none */
  double target_accuracy; /* stop when the test accuracy reaches it, 0 = none */
  double train_tokens;   /* tokens to train on (time to train), 0 = none */
  double train_epochs;   /* passes over the training set (time to
                            train), 0 = none */
  /* [cluster] */
  gint64 workers;
  gint64 servers;        /* parameter-server shards, one host each */
  char *device;          /* catalog name, NULL = the [device] keys alone */
  char *devices;         /* [cluster] device_mix as written, NULL = one
                            device for every worker */
  int n_kinds;           /* entries of devices (0 without) */
  SimDeviceKind *kinds;  /* (n_kinds) in the order written */
  int *worker_kind;      /* (workers) worker w runs on kinds[worker_kind[w]];
                            NULL without devices */
  char *server;          /* catalog server, NULL = none: its device, GPUs
                            per node and links where the file sets none */
  char *catalog;         /* hardware catalog file, NULL = built-in */
  double price;          /* per device-hour, the user's currency, 0 = none */
  int host_amd;          /* [cluster] host_cpu = amd (NCCL's LL ceiling
                            across nodes is its CPU maker's) */
  gint64 host_cores;     /* CPU cores of a server, shared by its GPUs' data
                            loaders; 0 = the host is not modelled */
  /* [device] */
  double flops;          /* peak FLOP/s (under fp8: the bf16 peak, which
                            every layer but the linear ones runs at) */
  double efficiency;     /* share of peak matrix products achieve, (0, 1] */
  double fp8_flops;      /* FLOP/s, dense fp8 peak the linear layers' matrix
                            products run at under precision = fp8; 0 = none */
  double fp8_efficiency; /* share of fp8_flops they achieve; 0 = efficiency */
  double conv_efficiency; /* share of peak convolutions achieve; 0 = efficiency */
  double conv3x3_efficiency; /* the same for 3 x 3 stride-1 convolutions,
                                by their direct FLOPs (Winograd: may pass
                                1); 0 = conv_efficiency */
  double attention_factor; /* attention matmuls reach this share of it */
  double memory_efficiency; /* share of memory_bandwidth kernels achieve */
  double kernel_overhead; /* seconds every layer pass adds to its roofline */
  double overlap_slowdown; /* compute takes 1 + this as long while a
                              collective runs on the device */
  double step_time;      /* seconds per step; < 0 = use FLOPs */
  double serial_time;    /* seconds per step that do not parallelise, added */
  double memory_bandwidth; /* bytes/s, 0 = not modelled */
  double memory;         /* bytes of device memory, 0 = not checked */
  double reserve;        /* bytes of it the framework keeps for itself
                            (context, workspaces, fragmentation); < 0 =
                            the default, sim_memory_reserve */
  int precision;         /* SimPrecision: which peak [cluster] device gives */
  gboolean measured;     /* compute_time = measured: host time x scale */
  double measured_scale; /* factor applied to measured host seconds */
  /* [network] */
  char *topology;
  double bandwidth;      /* bytes/s per link and direction, raw: the links
                            carry bandwidth x net_efficiency */
  double net_efficiency; /* share of bandwidth the links deliver, (0, 1] */
  double latency;        /* seconds per link */
  int contention;        /* NetContention */
  int flow_classes;      /* 0 = auto, 1 = off ([network] flow_classes) */
  char *links;           /* per-link overrides, NULL = none */
  char *fabric;          /* catalog link for every link, NULL = none */
  char *intra_fabric;    /* nodes: catalog link inside a node, NULL = none */
  double launch_overhead;     /* s, once per collective */
  double step_overhead;       /* s, least latency of a collective's message
                                 between nodes (CommArgs) */
  double intra_step_overhead; /* nodes: the same inside a node */
  double net_overhead;        /* s, least time of every step of a ring
                                 across nodes (CommArgs) */
  double nic_latency;         /* s, latency the NIC between nodes declares
                                 to NCCL (CommArgs) */
  int step_hw, intra_step_hw; /* CommHw of the catalog link kinds of fabric
                                 and intra_fabric (read where these are
                                 named) */
  /* [model] */
  char *model_kind;      /* linear | softmax | mlp | timing */
  GArray *hidden;        /* int widths of the MLP's hidden layers */
  char *workload;        /* timing: built-in table name or file, NULL = params/flops */
  double model_params;   /* timing without workload: float32 parameters */
  double model_flops;    /* timing without workload: FLOPs per sample, fwd + bwd */
  char *dataset;         /* synthetic | fashion-mnist */
  char *data_dir;        /* fashion-mnist directory */
  int partition;         /* TrainPartition: iid | by-label */
  gint64 classes_per_worker; /* by-label */
  char *optimizer;       /* a KernOptKind's name (kern_opt_lookup) */
  int recompute;         /* SimRecompute: activations recomputed in backward */
  double momentum, beta1, beta2, eps;
  gint64 warmup;         /* steps of learning-rate warm-up */
  gint64 batch;          /* samples per worker step */
  gint64 global_batch;   /* samples per step over all workers, 0 = unset */
  double input_time;     /* CPU seconds to load, decode and augment one
                            sample on one core; 0 = free input */
  gint64 loader_workers; /* data-loader processes per GPU, one core each;
                            0 = as many as its share of host_cores */
  double framework_time; /* host seconds per step of framework work
                            (launches, optimizer, Python), overlapped with
                            the device's step; 0 = none */
  int fusion;            /* SimFusion: element-wise chains fused or not */
  double lr;
  gint64 eval_every;     /* evaluate every this many applied gradients */
  gint64 eval_samples;   /* training samples the loss is measured on, 0 = all */
  gint64 samples, test_samples, features, classes;
  double separation;
  /* [policy]: its other keys are in `values`, declared by the policies */
  char *policy;          /* kind: a policy's name (policies/registry.c) */
  int balance;           /* SimBalance: [policy] balance */
  /* [failures] */
  GArray *fail_worker;   /* int worker ids, one per failure (or one for all) */
  GArray *fail_at;       /* double seconds, one per failure (or one for all) */
  double fail_restart;   /* seconds from a failure until the worker is back */
  GArray *fail_server;   /* int server ids, one per crash (or one for all) */
  GArray *fail_server_at; /* double seconds, one per crash (or one for all) */
  double fail_detect;    /* seconds from a server crash to its takeover */
  int fail_recover;      /* PolRecover: what a restarted server holds */
  gint64 fail_checkpoint_every; /* iterations between checkpoints, 0 = none */
  /* whole-job failures of a synchronous job (sim/checkpoint.h) */
  double fail_mtbf;      /* s, mean time between failures of one device, 0 = none */
  double fail_link_mtbf; /* s, the same of one cable, 0 = none */
  GArray *fail_job_at;   /* double wall-clock seconds of given job failures */
  char *fail_ckpt_interval; /* checkpoint_interval as written: auto or a time */
  double ckpt_interval;  /* resolved: s, 0 = auto (Young's) */
  double fail_ckpt_size; /* bytes of a checkpoint, 0 = the model state's */
  double fail_ckpt_bandwidth; /* bytes/s the job writes and reads checkpoints at */
  double fail_reschedule; /* s from a job failure until it is placed again */
  /* [kernels] */
  gboolean math;         /* backend cpu or cuda: TRUE; none: timing only */
  char *backend;         /* cpu | cuda | none */
  int reproducible;      /* SimReproducible: [kernels] reproducible as given */
  gboolean reproducible_math;   /* resolved: products in the fixed order */
  /* [numerics]: KernFormat values, docs/kernels.md */
  int num_weights, num_gradients, num_communication, num_activations;
  char *loss_scale_text; /* [numerics] loss_scale as given: a number or "dynamic" */
  double loss_scale;     /* resolved: the static scale, or the initial one */
  gboolean loss_scale_dynamic;  /* the scale moves with overflows */
  gint64 growth_interval; /* clean gradients before a dynamic scale doubles */
  double initial_scale;  /* a dynamic scale's first value */
  /* [trace] */
  SimDetail detail;
  char *db;              /* output database path */
  double trace_max_size; /* bytes the database may be estimated to take */
  /* the keys registry entries declare (straggler models, topologies, ...),
   * by "section.key" */
  BaseValues *values;
  /* every resolved key as "section.key" -> text, in table order */
  GPtrArray *param_keys;   /* char* */
  GPtrArray *param_values; /* char* */
  GPtrArray *swept;        /* char* "section.key=value" labels of this point */
  char *infeasible;        /* why this point cannot run (it does not fit
                              device memory), NULL when it can */
  GHashTable *given;       /* "section.key" set in the file (or --set, sweep) */
  /* several jobs on one cluster ([job NAME] sections, docs/cluster.md,
   * "Several jobs"): NULL for a scenario of one job */
  GPtrArray *jobs;         /* SimJob*, in the order the file writes them */
  int placement;           /* [cluster] placement (SimPlacement) */
  gint64 hosts;            /* [cluster] hosts: the cluster's hosts, 0 = the
                              jobs' hosts together */
} SimConfig;

/* How the jobs' hosts are laid on the cluster ([cluster] placement). */
typedef enum {
  SIM_PLACE_PACKED,        /* jobs one after another on consecutive hosts */
  SIM_PLACE_SPREAD,        /* jobs dealt host by host, round robin */
  SIM_PLACE_RANDOM,        /* a seeded shuffle of the cluster's hosts */
  SIM_PLACE_GIVEN,         /* each job's [job NAME] hosts list */
  SIM_PLACE_RAIL,          /* rank i of a job on GPU i mod w of its nodes
                              (nodes topology, nic = gpu) */
} SimPlacement;

/* Most [job NAME] sections a scenario may hold. */
#define SIM_MAX_JOBS 64
/* Most characters of a job's name. */
#define SIM_MAX_JOB_NAME 32
/* Most lines of an arrival trace ([cluster] arrivals): a header, a line
 * per job and room for comments and blank lines. */
#define SIM_ARRIVALS_MAX_LINES 256
/* Most characters of one line of an arrival trace. */
#define SIM_ARRIVALS_MAX_LINE 256

/* One job of a scenario of several: its own resolved keys (the file's
 * sections with its [job NAME] overrides applied) and its place. */
typedef struct {
  char *name;              /* [A-Za-z0-9_-], 1 .. SIM_MAX_JOB_NAME */
  double arrival;          /* s of simulated time at which it starts */
  gint64 priority;         /* placed before jobs of lower priority */
  GArray *hosts;           /* int: [job NAME] hosts (placement = given),
                              or NULL */
  SimConfig *c;            /* the job's keys (owned) */
} SimJob;

void sim_config_free (SimConfig *c);
/* Frees a job and its config. */
void sim_job_free (SimJob *j);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimConfig, sim_config_free)

/* Sets a SIM_ERROR_INPUT error "FILE: [SECTION] KEY: MESSAGE" and returns
 * FALSE: the one-line form of every scenario error, for the validate hooks
 * of registry entries. */
gboolean sim_key_error (GError **error, const char *file, const char *section,
                        const char *key, const char *fmt, ...) G_GNUC_PRINTF (5, 6);

/* Checks that every index of `list` (ints, read from [section] key) names
 * one of c's workers. */
gboolean sim_config_check_workers (const SimConfig *c, const GArray *list,
                                   const char *section, const char *key,
                                   GError **error);

G_END_DECLS

#endif /* DTSIM_CONFIG_SIMCONFIG_H */
