/*
 * model.c — what a step of a scenario's model costs on its device, and
 * whether the model fits the device's memory.
 *
 * Time: a layer costs max(F / (flops x efficiency), B / memory_bandwidth)
 * for its forward and again for its backward (docs/kernels.md gives each
 * layer's F and B).  Without a memory bandwidth every layer is compute-bound
 * and a step costs (F_fwd + F_bwd) / (flops x efficiency), summed over FLOPs
 * first so the result does not depend on how finely a model is cut into
 * layers.  [device] step_time, when set, fixes the step and keeps the
 * layers' FLOP shares for where inside it each gradient is ready.
 * [device] serial_time is added before the forward pass of every step,
 * whichever of the two priced the rest (Amdahl's serial part).
 *
 * Memory: a worker's device must hold its parameters, gradients, optimizer
 * state and stashed activations within [device] memory: the whole model at
 * the batch, or, for a policy that spreads the model over its workers (its
 * `shares` hook, e.g. a pipeline's stages), each share on its own device
 * with the micro-batches the policy says it stashes.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/tensor.h"
#include "policies/policy.h"
#include "config/models.h"
#include "config/stragglers.h"
#include "config/scenario.h"
#include "device/model.h"
#include "config/catalog.h"
#include "netmodel/netmodel.h"

double
sim_roofline_seconds (double flops, double bytes, double achieved, double bandwidth)
{
  double t = flops / achieved;
  if (bandwidth > 0)
    t = MAX (t, bytes / bandwidth);
  return t;
}

/* Bytes per sample of activation traffic relative to 4-byte floats: 2-byte
 * values under bf16, fp16 and fp8 (whose tensors between kernels are
 * bf16). */
static double
activation_scale (const SimConfig *c)
{
  return sim_precision_mixed (c->precision) ? 0.5 : 1.0;
}

/* One pass of layer ly over n samples: `flops`, and bytes_fixed (weights,
 * in 4-byte floats) + n x bytes_sample (activations, at the precision's
 * size), at its kind's rate (docs/compute.md); a pass fused into the
 * kernel of the layer before it (`joined`) pays no kernel_overhead. */
static double
layer_pass_seconds (const SimConfig *c, const KernLayer *ly, double flops, double bytes_fixed,
                    double bytes_sample, double n, gboolean joined)
{
  double conv = c->conv_efficiency > 0 ? c->conv_efficiency : c->efficiency;
  double eff = ly->kind == KERN_LAYER_CONV ? conv
               : ly->kind == KERN_LAYER_CONV3X3
                 ? (c->conv3x3_efficiency > 0 ? c->conv3x3_efficiency : conv)
               : ly->kind == KERN_LAYER_ATTENTION ? c->efficiency * c->attention_factor
               : c->efficiency;
  double rate = c->flops * eff;
  /* fp8: the linear layers' products at the fp8 peak; attention's batched
   * products, convolutions and the rest stay at bf16's */
  if (c->precision == SIM_PREC_FP8 && ly->kind == KERN_LAYER_GEMM)
    rate = c->fp8_flops * (c->fp8_efficiency > 0 ? c->fp8_efficiency : c->efficiency);
  return (joined ? 0 : c->kernel_overhead)
         + sim_roofline_seconds (flops, bytes_fixed + bytes_sample * n * activation_scale (c),
                                 rate, c->memory_bandwidth * c->memory_efficiency);
}

/* Whether layer l of m runs inside the kernel of the layer before it under
 * fusion = elementwise: an element-wise layer after a matrix product, a
 * convolution, a norm or another element-wise layer (the producer's
 * epilogue applies it).  A norm never does: it needs statistics of its
 * whole input before it can normalise any of it, so its input is written
 * and read back; it heads a chain of its own. */
static gboolean
fused_into_previous (const KernModel *m, int l)
{
  if (l <= 0 || l >= m->n_layers || m->layers[l].kind != KERN_LAYER_ELEMENTWISE)
    return FALSE;
  KernLayerKind p = m->layers[l - 1].kind;
  return p == KERN_LAYER_GEMM || p == KERN_LAYER_CONV || p == KERN_LAYER_CONV3X3
         || p == KERN_LAYER_ATTENTION || p == KERN_LAYER_ELEMENTWISE || p == KERN_LAYER_NORM;
}

void
sim_layer_bytes (const SimConfig *c, const KernModel *m, int l, double *fwd, double *bwd,
                 gboolean *joined)
{
  const KernLayer *ly = &m->layers[l];
  *fwd = ly->fwd_bytes;
  *bwd = ly->bwd_bytes;
  *joined = FALSE;
  if (c->fusion != SIM_FUSION_ELEMENTWISE)
    return;
  /* a chain is a layer with the element-wise layers fused after it: what
   * passes between two of its layers stays on chip */
  gboolean in = fused_into_previous (m, l);
  gboolean out = fused_into_previous (m, l + 1);
  double drop = 0;                      /* floats per sample not moved */
  if (in)
    drop += m->layers[l - 1].outputs;   /* its input is not read */
  if (out)
    drop += ly->outputs;                /* its output is not written */
  *fwd = MAX (0.0, ly->fwd_bytes - 4.0 * drop);
  *bwd = MAX (0.0, ly->bwd_bytes - 2.0 * 4.0 * drop);
  *joined = in;
}

/* Whether layer ly's forward runs again in backward ([model] recompute). */
static gboolean
recomputed (const SimConfig *c, const KernLayer *ly)
{
  return c->recompute == SIM_RECOMPUTE_FULL
         || (c->recompute == SIM_RECOMPUTE_SELECTIVE
             && (ly->kind == KERN_LAYER_ELEMENTWISE || ly->kind == KERN_LAYER_NORM));
}

KernOptConfig
sim_opt_config (const SimConfig *c)
{
  KernOptConfig o = {
    .kind = kern_opt_lookup (c->optimizer),
    .lr = c->lr,
    .momentum = c->momentum,
    .beta1 = c->beta1,
    .beta2 = c->beta2,
    .eps = c->eps,
    .warmup = c->warmup,
  };
  return o;
}

double
sim_update_seconds (const SimConfig *c, gsize n)
{
  const KernOptKind *kind = kern_opt_lookup (c->optimizer);
  return sim_roofline_seconds (kern_opt_flops (kind, n), kern_opt_bytes (kind, n),
                               c->flops * c->efficiency,
                               c->memory_bandwidth * c->memory_efficiency);
}

int
sim_host_gpus (const SimConfig *c)
{
  const NetTopology *topo = c->topology ? net_topology_lookup (c->topology) : NULL;
  gint64 g = 1;
  if (topo && topo->servers)
    {
      g = c->values ? base_values_int (c->values, "network.gpus_per_node") : 0;
      if (g <= 0)
        g = SIM_HOST_DEFAULT_GPUS;
    }
  return (int) MAX (1, MIN (g, c->workers));
}

double
sim_host_wait (const SimConfig *c, double device, SimHostCost *out)
{
  SimHostCost h = { 0 };
  if (c->host_cores > 0)
    {
      h.gpus = sim_host_gpus (c);
      h.cores = (double) c->host_cores / h.gpus;
      h.loaders = c->loader_workers > 0 ? MIN ((double) c->loader_workers, h.cores) : h.cores;
      h.input = (double) c->batch * c->input_time / h.loaders;
    }
  h.framework = c->framework_time;
  /* loaders prefetch and the host runs ahead of the device: the step
   * lasts max(device, input, framework) */
  double wait = MAX (0.0, MAX (h.input, h.framework) - device);
  if (out)
    *out = h;
  return wait;
}

void
sim_step_cost (const SimConfig *c, const KernModel *m, SimStepCost *out)
{
  memset (out, 0, sizeof *out);
  int L = m->n_layers;
  double n = (double) c->batch;
  double achieved = c->flops * c->efficiency, bw = c->memory_bandwidth;
  out->n_layers = L;
  out->layer_lo = g_new (gsize, MAX (L, 1));
  out->grad_ready = g_new (double, MAX (L, 1));
  double *bwd = g_new (double, MAX (L, 1));
  double f_fwd = 0, f_bwd = 0, t_fwd = 0, t_bwd = 0;
  for (int l = 0; l < L; l++)
    {
      const KernLayer *ly = &m->layers[l];
      double ff = ly->fwd_flops_fixed + ly->fwd_flops * n;
      double fb = ly->bwd_flops_fixed + ly->bwd_flops * n;
      double bf, bb;
      gboolean joined;
      sim_layer_bytes (c, m, l, &bf, &bb, &joined);
      double tf = layer_pass_seconds (c, ly, ff, ly->fwd_bytes_fixed, bf, n, joined);
      f_fwd += ff;
      t_fwd += tf;
      bwd[l] = layer_pass_seconds (c, ly, fb, ly->bwd_bytes_fixed, bb, n, joined);
      /* recomputation: the layer's forward again, just before its backward */
      if (recomputed (c, ly))
        {
          fb += ff;
          bwd[l] += tf;
        }
      f_bwd += fb;
      t_bwd += bwd[l];
      out->layer_lo[l] = ly->param_offset;
    }
  double step;
  if (c->step_time >= 0 || bw <= 0)
    {
      /* layer times in proportion to FLOPs */
      double total = f_fwd + f_bwd;
      step = c->step_time >= 0 ? c->step_time : total / achieved;
      double scale = total > 0 ? step / total : 0;
      out->forward = total > 0 ? f_fwd * scale : step / 2;
      for (int l = 0; l < L; l++)
        {
          const KernLayer *ly = &m->layers[l];
          double ff = recomputed (c, ly) ? ly->fwd_flops_fixed + ly->fwd_flops * n : 0;
          bwd[l] = (ly->bwd_flops_fixed + ly->bwd_flops * n + ff) * scale;
        }
    }
  else
    {
      step = t_fwd + t_bwd;
      out->forward = t_fwd;
    }
  out->backward = step - out->forward;
  /* the serial part ([device] serial_time) comes first, then the wait for
   * the host (input or framework behind the device), then forward, then
   * backward from the last layer to the first */
  out->serial = c->serial_time;
  out->host_wait = sim_host_wait (c, step, &out->host);
  double t = out->serial + out->host_wait + out->forward;
  out->step = out->serial + out->host_wait + step;
  for (int l = L - 1; l >= 0; l--)
    {
      t += bwd[l];
      out->grad_ready[l] = l == 0 ? out->step : MIN (t, out->step);
    }
  g_free (bwd);
  out->update = sim_update_seconds (c, m->ops->n_params (m));
}

void
sim_step_cost_clear (SimStepCost *cost)
{
  g_free (cost->layer_lo);
  g_free (cost->grad_ready);
  memset (cost, 0, sizeof *cost);
}

/* The bytes of activations a worker's device holds for m at c's batch and
 * recompute, at the precision's size; layer l's cut `div[l]` ways (NULL:
 * none, the whole model). */
static double
activation_bytes (const SimConfig *c, const KernModel *m, const double *div)
{
  gsize P = m->ops->n_params (m);
  int per = kern_opt_state_per_param (kern_opt_lookup (c->optimizer));
  double act;
  if (!div)
    {
      double fixed = 4.0 * (double) P * (2.0 + per);
      act = kern_model_memory_bytes (m, (int) c->batch, (gsize) per * P) - fixed;
    }
  else
    {
      act = 0;
      for (int l = 0; l < m->n_layers; l++)
        act += m->layers[l].activations / div[l];
      act *= 4.0 * (double) c->batch;
    }
  if (c->recompute != SIM_RECOMPUTE_NONE && m->n_layers > 0)
    {
      /* floats per sample held: selective, the layers not recomputed; full,
       * the model's input (4(I + A) bytes of the first layer's forward)
       * and the largest layer's output while it is recomputed */
      double kept = 0, largest = 0;
      for (int l = 0; l < m->n_layers; l++)
        {
          const KernLayer *ly = &m->layers[l];
          double a = ly->activations / (div ? div[l] : 1.0);
          largest = MAX (largest, a);
          if (!recomputed (c, ly))
            kept += a;
        }
      if (c->recompute == SIM_RECOMPUTE_FULL)
        kept = (m->layers[0].fwd_bytes / 4.0 - m->layers[0].activations) / (div ? div[0] : 1.0)
               + largest;
      act = 4.0 * (double) c->batch * kept;
    }
  return act * activation_scale (c);
}

/* The most parameters zero = 3 holds gathered at once: a layer's with
 * parameters, and with prefetch the next such layer's too. */
static gsize
gathered_params (const KernModel *m, gboolean prefetch)
{
  gsize NP = m->ops->n_params (m), most = 0, before = 0;
  for (int l = 0; l < m->n_layers; l++)
    {
      gsize hi = l + 1 < m->n_layers ? m->layers[l + 1].param_offset : NP;
      gsize here = hi - m->layers[l].param_offset;
      if (here == 0)
        continue;
      most = MAX (most, here + (prefetch ? before : 0));
      before = here;
    }
  return m->n_layers > 0 ? most : NP;
}

void
sim_memory_terms (const SimConfig *c, const KernModel *m, SimMemoryTerms *out)
{
  double P = (double) m->ops->n_params (m);
  int per = kern_opt_state_per_param (kern_opt_lookup (c->optimizer));
  gboolean mixed = sim_precision_mixed (c->precision);
  const PolPolicyOps *ops = pol_lookup (c->policy);
  /* the whole model on one device: a policy that spreads it (its shares)
   * has its own terms, sim_shares_memory */
  gboolean data = ops->zero && !ops->shares;
  int zero = data ? (int) base_values_int (c->values, "policy.zero") : 0;
  int T = data ? (int) base_values_int (c->values, "policy.tensor") : 1;
  double N = zero > 0 ? (double) (c->workers / T) : 1;
  memset (out, 0, sizeof *out);
  out->zero = zero;
  out->ranks = (gint64) N;
  out->tensor = T;
  g_autofree double *div = NULL;
  if (T > 1)
    {
      /* a tensor rank's share of the parameters and activations */
      g_autofree PolTpSplit *split = g_new (PolTpSplit, MAX (m->n_layers, 1));
      gboolean sequence = base_values_int (c->values, "policy.sequence_parallel") != 0;
      if (pol_tensor_split (m->layers, m->n_layers, T, split, NULL))
        {
          P = (double) pol_tensor_rank_params (m->layers, m->n_layers, m->ops->n_params (m),
                                               split, T);
          div = g_new (double, MAX (m->n_layers, 1));
          for (int l = 0; l < m->n_layers; l++)
            div[l] = split[l] != POL_TP_WHOLE || sequence ? T : 1;
        }
    }
  /* an expert rank's share ([policy] experts = EP > 1): the dense
   * parameters and E / EP experts'; sharded over the N ranks the dense
   * ones over N and the experts' over the N / EP ranks holding them, that
   * is P / N of the whole in all; its experts' activations at the
   * capacity (capacity_factor x their even share of the tokens) */
  PolExperts ex = { .ep = 1 };
  if (data && ops->experts)
    pol_experts_of (c->values, m->layers, m->n_layers, &ex);
  double Pshard = P / N;
  out->experts = ex.ep > 1 ? ex.ep : 1;
  if (ex.ep > 1)
    {
      gsize NP = m->ops->n_params (m);
      P = (double) pol_experts_rank_params (m->layers, m->n_layers, NP, ex.ep);
      Pshard = (double) NP / N;
      if (!div)
        {
          div = g_new (double, MAX (m->n_layers, 1));
          for (int l = 0; l < m->n_layers; l++)
            div[l] = 1;
        }
      for (int l = 0; l < m->n_layers; l++)
        if (m->layers[l].experts > 1)
          div[l] /= ex.capacity;
    }
  out->param_bytes = mixed ? 2 : 4;
  out->grad_bytes = out->param_bytes;
  out->state_bytes = 4.0 * per + (mixed ? 4 : 0);
  out->params = out->param_bytes * (zero >= 3 ? Pshard : P);
  out->grads = out->grad_bytes * (zero >= 2 ? Pshard : P);
  out->state = out->state_bytes * (zero >= 1 ? Pshard : P);
  if (zero >= 3)
    out->gathered = out->param_bytes
                    * (double) gathered_params (m, base_values_int (c->values, "policy.prefetch"));
  out->activations = activation_bytes (c, m, div);
  out->reserve = sim_memory_reserve (c);
  out->total = out->params + out->grads + out->state + out->gathered + out->activations
               + out->reserve;
}

double
sim_memory_reserve (const SimConfig *c)
{
  return c->reserve > 0 ? c->reserve : 0.0;
}

double
sim_model_memory_bytes (const SimConfig *c, const KernModel *m)
{
  SimMemoryTerms t;
  sim_memory_terms (c, m, &t);
  return t.total;
}

gboolean *
sim_recompute_mask (const SimConfig *c, const KernModel *m)
{
  if (c->recompute == SIM_RECOMPUTE_NONE || m->n_layers < 1)
    return NULL;
  gboolean *mask = g_new (gboolean, m->n_layers);
  for (int l = 0; l < m->n_layers; l++)
    mask[l] = recomputed (c, &m->layers[l]);
  return mask;
}

/* A model and the scenario that prices its layers, for PolLayerSeconds,
 * with the layers recomputed in backward. */
typedef struct {
  const SimConfig *c;
  const KernModel *m;
  gboolean *recomputed;       /* sim_recompute_mask */
} LayerCtx;

static void
layer_ctx_seconds (gpointer ctx, int n, double *fwd, double *bwd)
{
  const LayerCtx *lc = ctx;
  sim_layer_seconds (lc->c, lc->m, n, fwd, bwd);
}

/* What the policy's model hooks see: the same layer costs sim/cluster.c
 * hands the policy when it runs. */
static PolModelInfo
model_info (const SimConfig *c, LayerCtx *lc)
{
  return (PolModelInfo) {
    .values = c->values,
    .model = lc->m,
    .workers = c->workers,
    .servers = c->servers,
    .batch = c->batch,
    .seed = c->seed,
    .failures = (c->fail_worker != NULL && c->fail_worker->len > 0)
                || (c->fail_server != NULL && c->fail_server->len > 0),
    .host_timed = c->measured && c->step_time < 0,
    .math = c->math && sim_model_kind (c)->math,
    .recomputed = lc->recomputed,
    .layer_seconds = layer_ctx_seconds,
    .ctx = lc,
    .flow_classes = c->flow_classes == 0 && c->detail != SIM_DETAIL_MESSAGES
                    && (c->links == NULL || *c->links == '\0'),
    .topology = c->topology,
    .same_pace = sim_straggler_lookup (base_values_string (c->values, "stragglers.model"))->uniform
                 && !(c->measured && c->step_time < 0),
  };
}

SimStageMemory *
sim_shares_memory (const SimConfig *c, const KernModel *m, int *n, PolShares **plan)
{
  const PolPolicyOps *ops = pol_lookup (c->policy);
  *n = 0;
  if (plan)
    *plan = NULL;
  if (!ops->shares)
    return NULL;
  g_autofree gboolean *mask = sim_recompute_mask (c, m);
  LayerCtx lc = { c, m, mask };
  PolModelInfo mi = model_info (c, &lc);
  PolShares *sh = ops->shares (&mi);
  g_return_val_if_fail (sh != NULL, NULL);
  int L = m->n_layers;
  gsize NP = m->ops->n_params (m);
  int per = kern_opt_state_per_param (kern_opt_lookup (c->optimizer));
  /* with tensor groups, a share is one tensor rank's: its cut of each
   * layer's parameters (the policy's shares cut the activations) */
  int T = ops->tensor ? (int) base_values_int (c->values, "policy.tensor") : 1;
  gboolean mixed = sim_precision_mixed (c->precision);
  int zero = ops->zero ? (int) base_values_int (c->values, "policy.zero") : 0;
  double R = MAX (1.0, (double) base_values_int (c->values, "policy.replicas"));
  g_autofree PolTpSplit *split = NULL;
  if (T > 1)
    {
      split = g_new (PolTpSplit, MAX (L, 1));
      if (!pol_tensor_split (m->layers, L, T, split, NULL))
        g_clear_pointer (&split, g_free);
    }
  SimStageMemory *out = g_new0 (SimStageMemory, sh->n);
  for (int s = 0; s < sh->n; s++)
    {
      const PolShare *x = &sh->share[s];
      SimStageMemory *st = &out[s];
      st->first = x->first;
      st->last = x->last;
      /* the parameters of each of its groups of layers */
      for (int k = 0; k < MAX (x->chunks, 1); k++)
        {
          int first = x->chunks > 1 ? x->chunk_first[k] : x->first;
          int last = x->chunks > 1 ? x->chunk_last[k] : x->last;
          gsize lo = m->layers[first].param_offset;
          gsize hi = last + 1 < L ? m->layers[last + 1].param_offset : NP;
          st->params += split ? pol_tensor_rank_params (m->layers + first, last - first + 1, hi,
                                                        split + first, T)
                              : hi - lo;
        }
      st->slots = x->slots;
      st->microbatch = x->microbatch;
      st->stash_bytes = x->stash_bytes;
      /* the bytes per parameter of sim_memory_terms; ZeRO shards over the
       * replicas */
      st->param_bytes = (mixed ? 2.0 : 4.0) * (double) st->params;
      st->grad_bytes = st->param_bytes / (zero >= 2 ? R : 1);
      st->opt_bytes = (4.0 * per + (mixed ? 4.0 : 0.0)) * (double) st->params
                      / (zero >= 1 ? R : 1);
      st->act_bytes = x->act_bytes;
      st->reserve = sim_memory_reserve (c);
      st->total = st->param_bytes + st->grad_bytes + st->opt_bytes + st->act_bytes
                  + st->reserve;
    }
  *n = sh->n;
  if (plan)
    *plan = sh;
  else
    pol_shares_free (sh);
  return out;
}

void
sim_layer_seconds (const SimConfig *c, const KernModel *m, int n, double *fwd, double *bwd)
{
  double achieved = c->flops * c->efficiency, bw = c->memory_bandwidth;
  double scale = 0;
  if (c->step_time >= 0)
    {
      /* the fixed step at the full batch, shared out in proportion to FLOPs */
      double total = m->ops->flops_forward (m, (int) c->batch)
                     + m->ops->flops_backward (m, (int) c->batch);
      scale = total > 0 ? c->step_time / total : 0;
    }
  for (int l = 0; l < m->n_layers; l++)
    {
      const KernLayer *ly = &m->layers[l];
      double ff = ly->fwd_flops_fixed + ly->fwd_flops * n;
      double fb = ly->bwd_flops_fixed + ly->bwd_flops * n;
      if (c->step_time >= 0)
        {
          fwd[l] = ff * scale;
          bwd[l] = fb * scale;
        }
      else
        {
          double bf, bb;
          gboolean joined;
          sim_layer_bytes (c, m, l, &bf, &bb, &joined);
          fwd[l] = bw > 0 ? layer_pass_seconds (c, ly, ff, ly->fwd_bytes_fixed, bf, n, joined)
                          : ff / achieved;
          bwd[l] = bw > 0 ? layer_pass_seconds (c, ly, fb, ly->bwd_bytes_fixed, bb, n, joined)
                          : fb / achieved;
        }
      if (recomputed (c, ly))
        bwd[l] += fwd[l];
    }
}

static double
gib (double bytes)
{
  return bytes / (1024.0 * 1024.0 * 1024.0);
}

/* Which key the capacity came from: [device] memory, or the catalog entry
 * [cluster] device names. */
static const char *
memory_key (const SimConfig *c)
{
  if (c->devices)
    return "[cluster] device_mix";
  return g_hash_table_contains (c->given, "device.memory") || !c->device ? "[device] memory" : "[cluster] device";
}

/* One term of a device's memory, for the refusal's wording. */
typedef struct {
  const char *name;
  double bytes;
} MemTerm;

/* The index of the largest of n terms. */
static int
largest_term (const MemTerm *t, int n)
{
  int k = 0;
  for (int i = 1; i < n; i++)
    if (t[i].bytes > t[k].bytes)
      k = i;
  return k;
}

/* The largest batch, a multiple of `step` samples, at which `fixed` bytes
 * and the activations (`act` bytes at `batch` samples, linear in them) fit
 * in `memory` bytes; 0 when none does. */
static gint64
fitting_batch (double fixed, double act, gint64 batch, gint64 step, double memory)
{
  if (act <= 0 || batch < 1 || step < 1 || fixed >= memory)
    return 0;
  double per = act / (double) batch;          /* bytes per sample */
  double most = floor ((memory - fixed) / per);
  gint64 b = most >= (double) batch ? batch : (gint64) most;
  b -= b % step;
  while (b > 0 && fixed + per * (double) b > memory)
    b -= step;
  return b;
}

/* Whether every device's share of m fits in c's memory under c. */
static gboolean
fits (const SimConfig *c, const KernModel *m)
{
  if (!pol_lookup (c->policy)->shares)
    {
      SimMemoryTerms t;
      sim_memory_terms (c, m, &t);
      return t.total <= c->memory;
    }
  int n;
  SimStageMemory *st = sim_shares_memory (c, m, &n, NULL);
  gboolean ok = TRUE;
  for (int s = 0; s < n; s++)
    ok = ok && st[s].total <= c->memory;
  g_free (st);
  return ok;
}

/* The refusal's advice, appended to `out`: the largest of the n terms by
 * name, then the keys that would make the model fit, those that would
 * fit at once first: a batch that fits (`fit` > 0), a recompute mode that
 * does, the keys that shard or cut the model, and `extra` (a policy's
 * own advice, or NULL). */
static void
memory_advice (GString *out, const SimConfig *c, const KernModel *m, const MemTerm *terms,
               int n, gint64 fit, const char *extra)
{
  int k = largest_term (terms, n);
  g_string_append_printf (out, "; %s %.3g GiB %s the largest term: ", terms[k].name,
                          gib (terms[k].bytes),
                          terms[k].name[strlen (terms[k].name) - 1] == 's' ? "are" : "is");
  gboolean first = TRUE;
#define OR(...) (g_string_append (out, first ? "" : ", or "), first = FALSE, \
                 g_string_append_printf (out, __VA_ARGS__))
  const PolPolicyOps *ops = pol_lookup (c->policy);
  gboolean state = strcmp (terms[k].name, "parameters") == 0
                   || strcmp (terms[k].name, "gradients") == 0
                   || strcmp (terms[k].name, "optimizer state") == 0;
  gint64 zero = ops->zero ? base_values_int (c->values, "policy.zero") : 3;
  if (strcmp (terms[k].name, "reserve") == 0)
    OR ("lower [device] reserve");
  if (state && zero < 3)
    OR ("use a higher [policy] zero (now %" G_GINT64_FORMAT ")", zero);
  if (fit > 0)
    OR ("lower [model] batch to %" G_GINT64_FORMAT, fit);
  static const struct { int mode; const char *name; } modes[] = {
    { SIM_RECOMPUTE_SELECTIVE, "selective" }, { SIM_RECOMPUTE_FULL, "full" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (modes); i++)
    {
      if (modes[i].mode <= c->recompute)
        continue;
      SimConfig r = *c;      /* the same scenario, read only, another mode */
      r.recompute = modes[i].mode;
      if (fits (&r, m))
        {
          OR ("set [model] recompute = %s", modes[i].name);
          break;
        }
    }
  /* tensor parallelism cuts the layers whose weight shapes are known */
  gboolean cut = FALSE;
  for (int l = 0; l < m->n_layers && !cut; l++)
    cut = m->layers[l].n_weights > 0;
  if (ops->tensor && cut)
    OR ("use a larger [policy] tensor (now %" G_GINT64_FORMAT ")",
        MAX (base_values_int (c->values, "policy.tensor"), 1));
  if (extra)
    OR ("%s", extra);
  OR ("use a device with more memory");
#undef OR
}

/* Every share of the model, on its own device, fits in [device] memory;
 * the first that does not is named with its terms, the largest of them
 * and a batch at which every share would fit. */
static gboolean
shares_memory_check (const SimConfig *c, const KernModel *m, const char *file,
                     GError **error)
{
  int n;
  PolShares *plan;
  SimStageMemory *st = sim_shares_memory (c, m, &n, &plan);
  int bad = -1;
  gint64 fit = c->batch;
  for (int s = 0; s < n; s++)
    {
      const SimStageMemory *x = &st[s];
      if (x->total > c->memory && bad < 0)
        bad = s;
      /* the stashed micro-batches are linear in the batch: whole
       * micro-batches of the same count */
      gint64 step = x->microbatch > 0 ? MAX (c->batch / x->microbatch, 1) : 1;
      fit = MIN (fit, fitting_batch (x->total - x->act_bytes, x->act_bytes, c->batch, step,
                                     c->memory));
    }
  if (bad >= 0)
    {
      const SimStageMemory *x = &st[bad];
      g_autofree char *layers = pol_share_layers (&plan->share[bad]);
      MemTerm terms[] = {
        { "parameters", x->param_bytes }, { "gradients", x->grad_bytes },
        { "optimizer state", x->opt_bytes }, { "activations", x->act_bytes },
        { "reserve", x->reserve },
      };
      g_autoptr (GString) advice = g_string_new (NULL);
      memory_advice (advice, c, m, terms, G_N_ELEMENTS (terms), fit, plan->advice);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INFEASIBLE,
                   "%s: %s: %s %s %d (layers %s) does not fit in %.3g GiB of "
                   "device memory: parameters %.3g GiB + gradients %.3g GiB + optimizer state "
                   "%.3g GiB + activations %.3g GiB (%d stashed micro-batches of %d samples, %s) "
                   "+ reserve %.3g GiB = %.3g GiB%s",
                   file, memory_key (c), c->policy, plan->unit, bad, layers,
                   gib (c->memory), gib (x->param_bytes), gib (x->grad_bytes),
                   gib (x->opt_bytes), gib (x->act_bytes), x->slots, x->microbatch, plan->note,
                   gib (x->reserve), gib (x->total), advice->str);
    }
  g_free (st);
  pol_shares_free (plan);
  return bad < 0;
}

/* The whole model, on every worker's device, fits in [device] memory;
 * else the refusal names its terms, the largest of them, and a batch that
 * would fit. */
static gboolean
whole_memory_check (const SimConfig *c, const KernModel *m, const char *file, GError **error)
{
  SimMemoryTerms t;
  sim_memory_terms (c, m, &t);
  if (t.total <= c->memory)
    return TRUE;
  g_autofree char *gathered = t.zero >= 3 ? g_strdup_printf (" + gathered parameters %.3g GiB",
                                                             gib (t.gathered))
                                          : g_strdup ("");
  MemTerm terms[] = {
    { "parameters", t.params }, { "gradients", t.grads }, { "optimizer state", t.state },
    { "gathered parameters", t.gathered }, { "activations", t.activations },
    { "reserve", t.reserve },
  };
  gint64 fit = fitting_batch (t.total - t.activations, t.activations, c->batch, 1, c->memory);
  g_autoptr (GString) advice = g_string_new (NULL);
  memory_advice (advice, c, m, terms, G_N_ELEMENTS (terms), fit, "choose a smaller model");
  g_set_error (error, SIM_ERROR, SIM_ERROR_INFEASIBLE,
               "%s: %s: the model does not fit in %.3g GiB of device memory: "
               "parameters %.3g GiB + gradients %.3g GiB + optimizer state %.3g GiB%s + "
               "activations %.3g GiB (batch %" G_GINT64_FORMAT ") + reserve %.3g GiB "
               "= %.3g GiB%s",
               file, memory_key (c), gib (c->memory), gib (t.params), gib (t.grads),
               gib (t.state), gathered, gib (t.activations), c->batch, gib (t.reserve),
               gib (t.total), advice->str);
  return FALSE;
}

/* The rules [policy] kind's entry has about the model. */
static gboolean
policy_model_check (const SimConfig *c, const KernModel *m, const char *file, GError **error)
{
  const PolPolicyOps *ops = pol_lookup (c->policy);
  if (ops->zero && c->overlap_slowdown > 0
      && g_hash_table_contains (c->given, "device.overlap_slowdown")
      && (base_values_int (c->values, "policy.zero") == 3
          || base_values_int (c->values, "policy.tensor") > 1))
    return sim_key_error (error, file, "device", "overlap_slowdown",
                          "not modelled with [policy] zero = 3 or tensor > 1 (their collectives "
                          "interleave with every layer's compute); remove it, or use zero <= 2 "
                          "and tensor = 1");
  g_autofree gboolean *mask = sim_recompute_mask (c, m);
  LayerCtx lc = { c, m, mask };
  PolModelInfo mi = model_info (c, &lc);
  g_autoptr (GError) local = NULL;
  if (ops->check_model && !ops->check_model (&mi, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", file, local->message);
      return FALSE;
    }
  /* then the math's own tensor plan, whose refusals (a T the GPT's
   * vocabulary cannot share) come before the run rather than when the
   * policy builds it */
  gint64 T = base_values_int (c->values, "policy.tensor");
  if (!ops->tensor || !c->math || T <= 1)
    return TRUE;
  KernTensorPlan *plan = kern_tensor_plan_new (m, (int) T, &local);
  if (plan == NULL)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", file, local->message);
      return FALSE;
    }
  kern_tensor_plan_free (plan);
  return TRUE;
}

/* A step, an update and every layer must take a finite time: a tiny
 * efficiency or peak passes its bound and then divides to infinity. */
static gboolean
step_cost_check (const SimConfig *c, const KernModel *m, const char *file, GError **error)
{
  SimStepCost cost;
  sim_step_cost (c, m, &cost);
  gboolean ok = isfinite (cost.step) && cost.step >= 0 && isfinite (cost.update);
  for (int l = 0; ok && l < cost.n_layers; l++)
    ok = isfinite (cost.grad_ready[l]);
  double step = cost.step, update = cost.update;
  sim_step_cost_clear (&cost);
  if (ok)
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "%s: [device] efficiency: a worker step would take %g s and an update %g s "
               "(FLOPs / (flops x efficiency = %g FLOP/s)); raise [device] flops or efficiency "
               "to a real device's figure", file, step, update, c->flops * c->efficiency);
  return FALSE;
}

void
sim_model_host_memory (const SimConfig *c, const KernModel *m, double *state, double *data)
{
  *state = *data = 0;
  if (!c->math || !sim_model_kind (c)->math)
    return;
  double features = sim_model_inputs (c);
  double samples = sim_dataset_samples (c);
  *data = samples * (features + 1) * 4.0;
  /* the host's math is float32 whatever [device] precision says */
  gsize P = m->ops->n_params (m);
  int per = kern_opt_state_per_param (kern_opt_lookup (c->optimizer));
  double per_worker = kern_model_memory_bytes (m, (int) c->batch, (gsize) per * P);
  double hosts = (double) (c->workers + c->servers);
  const PolPolicyOps *ops = pol_lookup (c->policy);
  LayerCtx lc = { c, m, NULL };
  PolModelInfo mi = model_info (c, &lc);
  *state = ops->host_bytes ? ops->host_bytes (&mi, per_worker) : hosts * per_worker;
}

char *
sim_model_describe (const SimConfig *c, const KernModel *m)
{
  const PolPolicyOps *ops = pol_lookup (c->policy);
  LayerCtx lc = { c, m, NULL };
  PolModelInfo mi = model_info (c, &lc);
  PolServerFailures sf;
  sim_server_failures (c, &sf);
  mi.server_failures = &sf;
  char *text = ops->describe ? ops->describe (&mi) : NULL;
  g_free ((gpointer) sf.list);
  return text;
}

void
sim_model_work (const SimConfig *c, const KernModel *m, PolWork *out)
{
  const PolPolicyOps *ops = pol_lookup (c->policy);
  LayerCtx lc = { c, m, NULL };
  PolModelInfo mi = model_info (c, &lc);
  if (ops->work)
    ops->work (&mi, out);
  else
    pol_work_default (&mi, out);
}

/* The real math holds every worker's model, gradients, optimizer state and
 * activations, and the data set, in host memory; a run that would need more
 * than SIM_MAX_HOST_BYTES is refused before it starts rather than aborting
 * when an allocation fails.  Timing-only runs hold none of it. */
static gboolean
host_memory_check (const SimConfig *c, const KernModel *m, const char *file, GError **error)
{
  double state, data;
  sim_model_host_memory (c, m, &state, &data);
  double need = data + state;
  if (need <= SIM_MAX_HOST_BYTES)
    return TRUE;
  double hosts = (double) (c->workers + c->servers);
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "%s: [kernels] backend: the real math of this run needs about %.3g GiB of host "
               "memory (%.3g GiB of models, gradients, optimizer state and activations for %.0f "
               "hosts + %.3g GiB of data), over the limit of %.3g GiB; use backend = none "
               "for timing only, or a smaller model, batch, data set or cluster",
               file, gib (need), gib (state), hosts, gib (data), gib (SIM_MAX_HOST_BYTES));
  return FALSE;
}

/* [model] kind against [model] workload, params and flops: a timing model
 * needs a layer table or both figures; only it reads a layer table. */
static gboolean
model_kind_check (SimConfig *c, const char *file, GError **error)
{
  if (!sim_model_kind (c)->reads_workload)
    {
      if (!c->workload)
        return TRUE;
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] workload: only kind = timing reads a layer table; remove workload or set kind = timing",
                   file);
      return FALSE;
    }
  if (!c->workload && !(c->model_params >= 1 && c->model_flops > 0))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] workload: kind = timing needs a layer table (workload = resnet-50, ...) or both params and flops",
                   file);
      return FALSE;
    }
  return TRUE;
}

/* The model c describes, built once without data: its layer count, its
 * step's cost, the policy's rules about it, and the device and host memory
 * it needs. */
/* The model fits on c's device, or with [cluster] device_mix on every kind at
 * the largest batch one of its workers steps (balance = speed gives the
 * faster devices more samples); a kind whose share does not fit is named. */
static gboolean
kinds_memory_check (const SimConfig *c, const KernModel *m, const char *file, GError **error)
{
  gboolean shares = pol_lookup (c->policy)->shares != NULL;
  if (c->n_kinds == 0)
    return !(c->memory > 0) || (shares ? shares_memory_check (c, m, file, error)
                                       : whole_memory_check (c, m, file, error));
  g_autofree int *batches = NULL;
  if (!sim_balanced_batches (c, m, &batches, error))
    return FALSE;
  for (int k = 0; k < c->n_kinds; k++)
    {
      SimConfig kc;
      sim_config_with_kind (&kc, c, k);
      if (!(kc.memory > 0))
        continue;
      if (batches)
        {
          kc.batch = 0;
          for (gint64 w = 0; w < c->workers; w++)
            if (c->worker_kind[w] == k)
              kc.batch = MAX (kc.batch, batches[w]);
        }
      g_autoptr (GError) local = NULL;
      if (shares ? shares_memory_check (&kc, m, file, &local)
                 : whole_memory_check (&kc, m, file, &local))
        continue;
      g_set_error (error, local->domain, local->code, "%s (on the %s workers, batch %"
                   G_GINT64_FORMAT ")", local->message, kc.device, kc.batch);
      return FALSE;
    }
  return TRUE;
}

/* Descending remainders, then ascending worker: the largest-remainder
 * order of [policy] balance = speed. */
typedef struct {
  double rem;
  gint64 w;
} Remainder;

static int
remainder_order (const void *a, const void *b)
{
  const Remainder *x = a, *y = b;
  if (x->rem != y->rem)
    return x->rem > y->rem ? -1 : 1;
  return x->w < y->w ? -1 : x->w > y->w;
}

gboolean
sim_balanced_batches (const SimConfig *c, const KernModel *m, int **out, GError **error)
{
  *out = NULL;
  if (c->balance != SIM_BALANCE_SPEED || c->n_kinds == 0)
    return TRUE;
  /* each kind's samples per second at the scenario's batch */
  double *speed = g_new (double, c->n_kinds);
  for (int k = 0; k < c->n_kinds; k++)
    {
      SimConfig kc;
      sim_config_with_kind (&kc, c, k);
      SimStepCost cost;
      sim_step_cost (&kc, m, &cost);
      speed[k] = cost.step > 0 ? (double) c->batch / cost.step : 1.0;
      sim_step_cost_clear (&cost);
    }
  gint64 W = c->workers, G = c->batch * W;
  double total = 0;
  for (gint64 w = 0; w < W; w++)
    total += speed[c->worker_kind[w]];
  int *b = g_new (int, W);
  Remainder *r = g_new (Remainder, W);
  gint64 given = 0;
  for (gint64 w = 0; w < W; w++)
    {
      double q = (double) G * speed[c->worker_kind[w]] / total;
      double f = floor (q);
      b[w] = (int) f;
      given += b[w];
      r[w] = (Remainder) { q - f, w };
    }
  /* the samples the floors left, one each to the largest remainders */
  qsort (r, (size_t) W, sizeof *r, remainder_order);
  for (gint64 i = 0; given < G && i < W; i++, given++)
    b[r[i].w]++;
  g_free (r);
  g_free (speed);
  for (gint64 w = 0; w < W; w++)
    if (b[w] < 1)
      {
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: [policy] balance: worker %" G_GINT64_FORMAT " (%s) gets no sample of the global batch of %"
                     G_GINT64_FORMAT " when it is shared by speed; raise [model] batch or set balance = none",
                     c->file, w, c->kinds[c->worker_kind[w]].name, G);
        g_free (b);
        return FALSE;
      }
  *out = b;
  return TRUE;
}

static gboolean
model_fits_check (const SimConfig *c, const char *file, GError **error)
{
  const KernModelKind *kind = sim_model_kind (c);
  gboolean timing = !kind->math;
  const char *depth = kind->depth_key ? kind->depth_key : timing ? "workload" : "hidden";
  g_autoptr (GError) local = NULL;
  KernModel *m = sim_model_new (c, NULL, &local);
  if (!m)
    {
      /* a kind with math names its own key ("[model] features: ..."); a
       * layer table's errors are the workload's */
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s%s", file,
                   local->message[0] == '[' ? "" : "[model] workload: ", local->message);
      return FALSE;
    }
  gboolean ok = TRUE;
  if (m->n_layers > SIM_MAX_LAYERS)
    {
      /* the pipeline's exact balancing costs stages x (layers - stages + 1) */
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] %s: %d layers%s, more than the %d a model may have; "
                   "merge layers into fewer, larger ones", file, depth,
                   m->n_layers, timing ? "" : " (a linear layer and a ReLU per hidden width)",
                   SIM_MAX_LAYERS);
      ok = FALSE;
    }
  if (ok && c->kernel_overhead > 0 && c->memory_bandwidth <= 0)
    ok = sim_key_error (error, file, "device", "kernel_overhead",
                        "needs [device] memory_bandwidth (the per-layer model prices it); set "
                        "memory_bandwidth, or [cluster] device");
  ok = ok && step_cost_check (c, m, file, error) && policy_model_check (c, m, file, error);
  ok = ok && kinds_memory_check (c, m, file, error);
  ok = ok && host_memory_check (c, m, file, error);
  kern_model_free (m);
  return ok;
}

/* The data set is there for every worker, and a by-label partition can
 * deal its classes out. */
static gboolean
data_check (const SimConfig *c, const char *file, GError **error)
{
  gint64 n_train;
  if (!sim_dataset_check (c, file, &n_train, error))
    return FALSE;
  if (c->partition != TRAIN_PARTITION_BY_LABEL)
    return TRUE;
  int k = sim_model_classes (c);
  if (c->classes_per_worker > k)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] classes_per_worker: %" G_GINT64_FORMAT
                   " but the data set has %d classes; use at most %d",
                   file, c->classes_per_worker, k, k);
      return FALSE;
    }
  if (c->workers * c->classes_per_worker < k)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] classes_per_worker: %" G_GINT64_FORMAT " workers x %"
                   G_GINT64_FORMAT " classes each cannot cover the data set's %d classes; "
                   "raise classes_per_worker to at least %" G_GINT64_FORMAT " or use partition = iid",
                   file, c->workers, c->classes_per_worker, k,
                   (k + c->workers - 1) / c->workers);
      return FALSE;
    }
  if (c->workers * c->classes_per_worker > n_train)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [model] classes_per_worker: %" G_GINT64_FORMAT " shards per worker for %"
                   G_GINT64_FORMAT " workers exceed the %" G_GINT64_FORMAT
                   " training samples; lower it", file, c->classes_per_worker, c->workers,
                   n_train);
      return FALSE;
    }
  return TRUE;
}

/* The backend the math runs on can start here. */
static gboolean
backend_check (const SimConfig *c, const char *file, GError **error)
{
  g_autoptr (GError) e = NULL;
  KernBackend *be = kern_backend_new (c->backend, c->reproducible_math, &e);
  if (!be && strcmp (c->backend, "cpu") == 0)
    {
      /* only the OpenBLAS products can be missing: the fixed-order ones
       * need no library */
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [kernels] reproducible: false needs OpenBLAS, which is not available "
                   "here: %s; or use reproducible = true",
                   file, e->message);
      return FALSE;
    }
  if (!be)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [kernels] backend: %s is not available here: %s; use backend = cpu",
                   file, c->backend, e->message);
      return FALSE;
    }
  kern_backend_free (be);
  return TRUE;
}

gboolean
sim_model_check (SimConfig *c, const char *file, GError **error)
{
  if (!model_kind_check (c, file, error) || !model_fits_check (c, file, error))
    return FALSE;
  if (!c->math && c->measured)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [device] compute_time: measured times the real math, but this run does none ([kernels] backend = none or [model] kind = timing); use compute_time = model",
                   file);
      return FALSE;
    }
  return !c->math || (data_check (c, file, error) && backend_check (c, file, error));
}
