/*
 * model.h — what a worker's device is and what its model costs on it.
 *
 * The hardware catalog fills in the [device] and fabric keys a scenario left
 * unset; the model a scenario names is built (without data) to check that it
 * fits in device memory; the roofline time model turns the model's layers
 * into simulated seconds: a layer of F FLOPs moving B bytes takes
 * max(F / (flops x efficiency), B / memory_bandwidth) (the memory term only
 * where a bandwidth is known).  The host's speed never enters, unless the
 * scenario asks for compute_time = measured.
 */
#ifndef DTSIM_DEVICE_MODEL_H
#define DTSIM_DEVICE_MODEL_H

#include <glib.h>

#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "policies/policy.h"
#include "config/models.h"
#include "config/simconfig.h"

G_BEGIN_DECLS

/* Seconds of a kernel of `flops` FLOPs and `bytes` bytes of memory traffic on
 * a device achieving `achieved` FLOP/s with memory bandwidth `bandwidth`
 * bytes/s (0 = no memory term). */
double sim_roofline_seconds (double flops, double bytes, double achieved,
                             double bandwidth);

/* The host of a worker's GPU, per step (docs/compute.md, "The host and
 * the input pipeline"). */
typedef struct {
  int gpus;              /* GPUs of its server sharing host_cores */
  double cores;          /* host_cores / gpus */
  double loaders;        /* cores its loaders use: min(loader_workers,
                          * cores), or cores */
  double input;          /* s, batch x input_time / loaders: the loaders'
                          * time for one step's batch (0 = not modelled) */
  double framework;      /* s, [model] framework_time */
} SimHostCost;

/* GPUs per server sharing one host's cores: [network] gpus_per_node
 * (SIM_HOST_DEFAULT_GPUS when 0) on a topology whose host groups are
 * servers, 1 on the others, at most [cluster] workers. */
#define SIM_HOST_DEFAULT_GPUS 8
int sim_host_gpus (const SimConfig *c);

/* Seconds a step whose device part (forward and backward) lasts `device`
 * waits for its host: max(0, max(input, framework) - device), the loaders
 * having prefetched the batch and the host having launched the kernels
 * while the device ran the step before.  *out (may be NULL) receives the
 * terms. */
double sim_host_wait (const SimConfig *c, double device, SimHostCost *out);

/* Bytes per sample of layer l of m's forward (*fwd) and backward (*bwd)
 * under c's [model] fusion, and whether the pass runs inside the kernel of
 * the layer before it (*joined: no kernel overhead of its own).  Without
 * fusion the layer's own fwd_bytes and bwd_bytes.  With fusion =
 * elementwise an element-wise layer after a matrix product, convolution,
 * norm or element-wise layer runs in that layer's kernel: it drops 4 x
 * (its input's outputs) bytes forward and twice that backward, and the
 * layer before it drops 4 x its own outputs (twice backward), never below
 * 0 (docs/compute.md, "Kernel fusion"). */
void sim_layer_bytes (const SimConfig *c, const KernModel *m, int l, double *fwd, double *bwd,
                      gboolean *joined);

/* Host-independent cost of one worker step of c's model at c's batch. */
typedef struct {
  double step;           /* s, serial + host_wait + forward + backward */
  double serial;         /* s, [device] serial_time: the part that does not
                          * parallelise, before forward */
  double host_wait;      /* s, after serial, before forward: the time the
                          * device waits for its host (sim_host_wait) */
  SimHostCost host;      /* the host's terms */
  double forward;        /* s, all layers' forward */
  double backward;       /* s, all layers' backward */
  int n_layers;
  gsize *layer_lo;       /* (n_layers) first parameter of layer l */
  double *grad_ready;    /* (n_layers) s after the step's start at which
                          * layer l's gradient is complete (backward runs
                          * from the last layer to the first) */
  double update;         /* s, one optimizer step on all parameters */
} SimStepCost;

void sim_step_cost (const SimConfig *c, const KernModel *m, SimStepCost *out);

/* [policy] balance = speed with [cluster] devices: *out receives a new
 * array of the workers' batches (free with g_free), the global batch G =
 * batch x workers shared in proportion to each worker's device speed
 * v_k = batch / (its step at batch, sim_step_cost): worker w gets
 * floor(G v_w / sum v) samples, and the G - sum of those floors left over
 * go one each to the workers of the largest remainders G v_w / sum v -
 * floor(...), ties to the lower worker.  *out = NULL without balancing.
 * FALSE with an error naming [policy] balance when a worker would get no
 * sample. */
gboolean sim_balanced_batches (const SimConfig *c, const KernModel *m, int **out,
                               GError **error);
void sim_step_cost_clear (SimStepCost *cost);

/* Seconds of each layer's forward (fwd[l]) and backward (bwd[l]) on n
 * samples on c's device (n_layers each): the roofline of its FLOPs and
 * bytes, or with [device] step_time its FLOPs' share of step_time at c's
 * batch.  The pipeline prices its micro-batches with it. */
void sim_layer_seconds (const SimConfig *c, const KernModel *m, int n, double *fwd,
                        double *bwd);

/* Seconds of one optimizer step on n parameters on c's device. */
double sim_update_seconds (const SimConfig *c, gsize n);

/* The optimizer of c. */
KernOptConfig sim_opt_config (const SimConfig *c);

/* What a worker's device holds to train the whole of m as c describes it,
 * by term, in bytes.  With Psi parameters, N = workers ranks sharing the
 * state ([policy] zero > 0, else 1) and K bytes of optimizer state per
 * parameter (4 per optimizer float, plus a 4-byte master copy under bf16
 * and fp16), the ZeRO paper's terms (Rajbhandari et al., SC 2020), Psi
 * being a tensor rank's share with [policy] tensor = T (and N the workers
 * over T):
 * parameters 2 Psi under bf16 and fp16 (4 Psi otherwise), divided by N at
 * zero 3; gradients as much, divided by N from zero 2; optimizer state
 * K Psi, divided by N from zero 1.  Zero 3 also holds a layer's gathered
 * parameters (with prefetch, the next layer's too); activations as the
 * batch and recompute make them, a cut layer's (every layer's with
 * sequence parallelism) 1/T on a tensor rank, the floats each layer keeps
 * for backward (KernLayer.activations: docs/workloads.md, "What backward
 * keeps"); and the framework's reserve, sim_memory_reserve. */
typedef struct {
  int zero;              /* [policy] zero of a policy that shards, else 0 */
  int tensor;            /* [policy] tensor: T, 1 without */
  int experts;           /* [policy] experts: EP, 1 without; with EP > 1
                            Psi is the dense parameters and E / EP
                            experts', sharded P / N in all, and the expert
                            layers' activations are at capacity_factor x */
  gint64 ranks;          /* N: data-parallel ranks sharing the state (1 at
                            zero 0) */
  double param_bytes;    /* bytes per parameter: 2 (bf16, fp16) or 4 */
  double grad_bytes;     /* bytes per gradient, as param_bytes */
  double state_bytes;    /* K */
  double params, grads, state, gathered, activations;
  double reserve;        /* sim_memory_reserve */
  double total;          /* their sum, reserve included */
} SimMemoryTerms;

/* Bytes of device memory the framework keeps for itself on each device of
 * c ([device] reserve: CUDA context, library workspaces, the allocator's
 * fragmentation), 0 where it is unset and no catalog device gave one. */
double sim_memory_reserve (const SimConfig *c);

void sim_memory_terms (const SimConfig *c, const KernModel *m, SimMemoryTerms *out);

/* Bytes a worker's device holds to train the whole of m as c describes it:
 * sim_memory_terms' total.  (A policy that spreads the model over its
 * workers: sim_shares_memory.) */
double sim_model_memory_bytes (const SimConfig *c, const KernModel *m);
/* Bytes of host memory the real math of a run of c needs: *state for the
 * models, gradients, optimizer states and activations its policy holds,
 * *data for the data set; both 0 for a timing-only run. */
void sim_model_host_memory (const SimConfig *c, const KernModel *m, double *state,
                            double *data);
/* What one iteration of c's policy does (its `work` hook, or
 * pol_work_default), for the model m. */
/* The policy's lines for `dtsim check` on how it places model m (its
 * `describe` hook), or NULL (caller frees). */
char *sim_model_describe (const SimConfig *c, const KernModel *m);
void sim_model_work (const SimConfig *c, const KernModel *m, PolWork *out);

/* Whether each layer of m runs its forward again in backward under c's
 * [model] recompute: a new array of m->n_layers entries, or NULL when none
 * does (recompute = none). */
gboolean *sim_recompute_mask (const SimConfig *c, const KernModel *m);

/* What one device holds of a model that [policy] kind spreads over its
 * workers (a pipeline's stage; with [policy] tensor = T > 1, one tensor
 * rank of it: its cut of the stage's layers, pol_tensor_rank_params, and
 * its share of the stashed activations), in bytes: its parameters, their
 * gradients, the optimizer's state for them, and the micro-batches it
 * stashes at its peak. */
typedef struct {
  int first, last;       /* its layers, inclusive (with chunks: the first of
                          * its first chunk, the last of its last) */
  gsize params;          /* float32 parameters */
  int slots;             /* micro-batches (interleaved: chunk and
                          * micro-batch pairs) stashed at the peak */
  int microbatch;        /* samples per micro-batch */
  double stash_bytes;    /* per micro-batch, in all its chunks */
  double param_bytes;    /* P x params (sim_memory_terms' bytes per
                          * parameter: 2 under bf16 and fp16, else 4) */
  double grad_bytes;     /* as many, 1/replicas of them with [policy]
                          * zero = 2 */
  double opt_bytes;      /* K x params, 1/replicas of them from zero = 1 */
  double act_bytes;      /* most bytes stashed at once (slots x
                          * stash_bytes with one chunk) */
  double reserve;        /* sim_memory_reserve */
  double total;          /* their sum, reserve included */
} SimStageMemory;

/* The memory of each device's share of m under c's policy (its `shares`
 * hook), cut as the policy cuts it: a new array of *n entries; NULL and
 * *n = 0 when every worker holds the whole model (sim_model_memory_bytes).
 * *plan (when plan is not NULL) receives the policy's PolShares, for its
 * wording (pol_shares_free).  c must have passed the scenario checks. */
SimStageMemory *sim_shares_memory (const SimConfig *c, const KernModel *m, int *n,
                                   PolShares **plan);

/* Checks that need the model: servers at most one per parameter, the model
 * fits in [device] memory (for a pipeline: every stage on its own device), the data set is installed, by-label bounds, the
 * backend is available.  Errors name `file` and the key to change. */
gboolean sim_model_check (SimConfig *c, const char *file, GError **error);

G_END_DECLS

#endif
