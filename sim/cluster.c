/*
 * cluster.c — one run assembled from its configuration (sim/run.c runs it).
 *
 * The network of a configuration: the policy's hosts on the topology of
 * [network], then the link overrides.  [network] links overrides single
 * links after the topology is built:
 *   links = rack0.up 1Gbps; worker3.down 100Mbps 200us
 * Each entry is a link name (docs/network.md lists each topology's names),
 * its new bandwidth, and optionally its new latency.  The scenario loader
 * builds the network once to check these, so a wrong name is reported before
 * anything runs.
 *
 * The cluster (sim_cluster_new): an engine; that network; the data and the
 * model; the device model (the roofline cost of the model's layers, or the
 * fixed step_time, or the measured host time x measured_scale, times the
 * straggler factor; see device/model.c), whose callbacks live here; the
 * [failures]; the policy, created on all of these and not yet started.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/policy.h"
#include "sim/cluster.h"
#include "config/scenario.h"
#include "config/units.h"
#include "config/catalog.h"

NetTopologyParams
sim_topology_params (const SimConfig *c, GPtrArray *names)
{
  NetTopologyParams p = {
    .n_hosts = (int) names->len,
    .names = (const char *const *) names->pdata,
    /* what the links deliver: 1 x a bandwidth written as a number, unless
     * the scenario gives an efficiency too */
    .bandwidth = c->bandwidth * c->net_efficiency,
    .latency = c->latency,
    .values = c->values,
  };
  return p;
}

static gboolean
apply_overrides (NetNetwork *net, const char *spec, const char *file, GError **error)
{
  g_auto (GStrv) entries = g_strsplit (spec, ";", -1);
  for (int i = 0; entries[i]; i++)
    {
      char *e = g_strstrip (entries[i]);
      if (*e == '\0')
        continue;
      g_auto (GStrv) w = g_strsplit_set (e, " \t", -1);
      const char *parts[3] = { NULL, NULL, NULL };
      int n = 0;
      for (int j = 0; w[j]; j++)
        if (w[j][0] != '\0')
          {
            if (n == 3)
              {
                n = 4;
                break;
              }
            parts[n++] = w[j];
          }
      if (n < 2 || n > 3)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: '%s' is not 'NAME BANDWIDTH [LATENCY]'; write e.g."
                       " links = rack0.up 1Gbps; worker3.down 100Mbps 200us", file, e);
          return FALSE;
        }
      int link = net_network_link_id (net, parts[0]);
      if (link < 0)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: no link named '%s' in this topology; see"
                       " docs/network.md for the link names", file, parts[0]);
          return FALSE;
        }
      double bw, lat = net_network_link_latency (net, link);
      const char *why = NULL;
      if (!sim_parse_quantity (parts[1], SIM_UNIT_BANDWIDTH, &bw, &why) || !(bw > 0))
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: '%s' for %s is not a positive bandwidth; expected"
                       " a bandwidth such as 10Gbps", file, parts[1], parts[0]);
          return FALSE;
        }
      if (parts[2] && (!sim_parse_quantity (parts[2], SIM_UNIT_TIME, &lat, &why) || lat < 0))
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [network] links: '%s' for %s is not a latency; expected a time"
                       " such as 5us", file, parts[2], parts[0]);
          return FALSE;
        }
      net_network_set_link (net, link, bw, lat);
    }
  return TRUE;
}

NetNetwork *
sim_network_build (const SimConfig *c, EngSim *sim, const char *file, GError **error)
{
  const PolPolicyOps *ops = pol_lookup (c->policy);
  g_return_val_if_fail (ops, NULL);
  g_autoptr (GPtrArray) names = ops->host_names ((int) c->workers, (int) c->servers);
  return sim_network_build_hosts (c, sim, names, file, error);
}

NetNetwork *
sim_network_build_hosts (const SimConfig *c, EngSim *sim, GPtrArray *names, const char *file,
                         GError **error)
{
  const NetTopology *topo = net_topology_lookup (c->topology);
  g_return_val_if_fail (topo, NULL);
  NetNetwork *net = net_network_new (sim, c->contention == 0 ? NET_CONTENTION_MAXMIN
                                                             : NET_CONTENTION_NONE);
  net_network_set_flow_classes (net, c->flow_classes == 0);
  NetTopologyParams p = sim_topology_params (c, names);
  g_autoptr (GError) local = NULL;
  if (!topo->build (net, &p, &local))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [network] topology: %s", file,
                   local->message);
      net_network_free (net);
      return NULL;
    }
  if (c->links && !apply_overrides (net, c->links, file, error))
    {
      net_network_free (net);
      return NULL;
    }
  return net;
}

/* A compute time that is not finite (a straggler factor that overflowed,
 * e.g. pareto with a tiny alpha) stops the run: simulated time cannot go
 * on from infinity.  Returns the time, 0 in that case. */
static double
finite_time (SimCluster *cl, double t, double factor)
{
  if (isfinite (t))
    return t;
  if (!cl->bad_time)
    {
      cl->bad_time = TRUE;
      cl->bad_factor = factor;
      eng_stop (cl->sim);
    }
  return 0;
}

/* A part of a worker's step whose device-model cost is `seconds` (measured
 * mode: the host's `host_seconds` x measured_scale instead), times the
 * worker's next straggler factor. */
static double
device_time (SimCluster *cl, int worker, double seconds, double host_seconds)
{
  const SimConfig *c = cl->c;
  double f = sim_stragglers_next (cl->strag, worker);
  if (c->measured && c->step_time < 0)
    return finite_time (cl, host_seconds * c->measured_scale * f, f);
  return finite_time (cl, seconds * f, f);
}

/* PolComputeTime: one whole worker step, on the worker's own device and
 * at its own batch where [cluster] device_mix gives them. */
static double
compute_time (gpointer ctx, int worker, double host_seconds)
{
  SimCluster *cl = ctx;
  double step = cl->step_of ? cl->costs[cl->step_of[worker]].step : cl->cost.step;
  return device_time (cl, worker, step, host_seconds);
}

/* PolScaleTime: a part of a worker step, priced on the first device and
 * scaled to the worker's by the ratio of their whole steps. */
static double
scale_time (gpointer ctx, int worker, double seconds, double host_seconds)
{
  SimCluster *cl = ctx;
  if (cl->kind_ratio)
    seconds *= cl->kind_ratio[cl->c->worker_kind[worker]];
  return device_time (ctx, worker, seconds, host_seconds);
}

/* PolUpdateTime: one optimizer step on n parameters, no straggler. */
static double
update_time (gpointer ctx, gsize n)
{
  SimCluster *cl = ctx;
  return sim_update_seconds (cl->c, n);
}

/* PolLayerSeconds: every layer's forward and backward on n samples. */
static void
layer_seconds (gpointer ctx, int n, double *fwd, double *bwd)
{
  SimCluster *cl = ctx;
  sim_layer_seconds (cl->c, cl->model, n, fwd, bwd);
}

/* The [failures] lists paired up: n = the longer list, the other one has
 * n entries or a single one that applies to all. */
static PolFailure *
failures_of (const SimConfig *c, int *n)
{
  guint nw = c->fail_worker->len, na = c->fail_at->len;
  *n = (nw == 0 || na == 0) ? 0 : (int) MAX (nw, na);
  PolFailure *f = g_new0 (PolFailure, MAX (*n, 1));
  for (int i = 0; i < *n; i++)
    {
      f[i].worker = g_array_index (c->fail_worker, int, nw == 1 ? 0 : i);
      f[i].at = g_array_index (c->fail_at, double, na == 1 ? 0 : i);
      f[i].restart = c->fail_restart;
    }
  return f;
}

/* The data sets, the evaluation prefix and the backend (only where the math
 * runs: timing-only models may be any size), then the model. */
static gboolean
cluster_load_model (SimCluster *cl, GError **error)
{
  const SimConfig *c = cl->c;
  if (c->math)
    {
      if (!sim_data_load (c, &cl->train, &cl->test, error))
        return FALSE;
      /* each sampler draws its batches from its own part of the training
       * set: a batch larger than a part would reuse its samples within
       * every step */
      const PolPolicyOps *ops = pol_lookup (c->policy);
      gint64 parts = ops->data_parts ? ops->data_parts (c->values, c->workers) : c->workers;
      gint64 shard = cl->train->n / MAX (parts, 1);
      if (c->batch > shard)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [model] batch: %" G_GINT64_FORMAT " samples exceed a worker's"
                       " shard of the training set (%d samples / %" G_GINT64_FORMAT
                       " = %" G_GINT64_FORMAT "), so each step would reuse its samples; use"
                       " batch <= %" G_GINT64_FORMAT " or more [model] samples",
                       c->file, c->batch, cl->train->n, parts, shard, shard);
          return FALSE;
        }
      /* the loss is measured on a fixed prefix of the training set */
      cl->eval = *cl->train;
      if (c->eval_samples > 0 && c->eval_samples < cl->eval.n)
        cl->eval.n = (int) c->eval_samples;
      cl->backend = kern_backend_new (c->backend, c->reproducible_math, error);
      if (!cl->backend)
        return FALSE;
    }
  cl->model = sim_model_new (c, cl->backend, error);
  return cl->model != NULL;
}

/* The stragglers and the device times of the model: the step cost, the
 * share of the step at which each layer's gradient is ready. */
static void
cluster_device_times (SimCluster *cl)
{
  const SimConfig *c = cl->c;
  cl->strag = sim_stragglers_new (c);
  sim_step_cost (c, cl->model, &cl->cost);
  double step = cl->cost.step;
  cl->ready = g_new (double, MAX (cl->cost.n_layers, 1));
  cl->recomputed = sim_recompute_mask (c, cl->model);
  for (int l = 0; l < cl->cost.n_layers; l++)
    cl->ready[l] = step > 0 ? cl->cost.grad_ready[l] / step : 1.0;
  if (c->n_kinds == 0)
    return;
  /* one cost per (kind, batch) pair the workers step at: a kind's workers
   * differ by one sample at most, so there are few */
  int W = (int) c->workers;
  cl->step_of = g_new (int, W);
  cl->costs = g_new0 (SimStepCost, 2 * c->n_kinds + 2);
  int *cost_kind = g_new (int, 2 * c->n_kinds + 2);
  gint64 *cost_batch = g_new (gint64, 2 * c->n_kinds + 2);
  int cap = 2 * c->n_kinds + 2;
  for (int w = 0; w < W; w++)
    {
      int k = c->worker_kind[w];
      gint64 b = cl->batches ? cl->batches[w] : c->batch;
      int i = 0;
      while (i < cl->n_costs && !(cost_kind[i] == k && cost_batch[i] == b))
        i++;
      if (i == cl->n_costs)
        {
          if (i == cap)
            {
              cap *= 2;
              cl->costs = g_renew (SimStepCost, cl->costs, cap);
              cost_kind = g_renew (int, cost_kind, cap);
              cost_batch = g_renew (gint64, cost_batch, cap);
            }
          SimConfig kc;
          sim_config_with_kind (&kc, c, k);
          kc.batch = b;
          sim_step_cost (&kc, cl->model, &cl->costs[i]);
          cost_kind[i] = k;
          cost_batch[i] = b;
          cl->n_costs++;
        }
      cl->step_of[w] = i;
    }
  g_free (cost_kind);
  g_free (cost_batch);
  cl->kind_ratio = g_new (double, c->n_kinds);
  for (int k = 0; k < c->n_kinds; k++)
    {
      SimConfig kc;
      sim_config_with_kind (&kc, c, k);
      SimStepCost kcost;
      sim_step_cost (&kc, cl->model, &kcost);
      cl->kind_ratio[k] = step > 0 ? kcost.step / step : 1.0;
      sim_step_cost_clear (&kcost);
    }
}

/* Whether every worker's device runs a part of a step as the first's. */
static gboolean
kinds_alike (const SimCluster *cl)
{
  for (int k = 0; cl->kind_ratio && k < cl->c->n_kinds; k++)
    if (cl->kind_ratio[k] != 1.0)
      return FALSE;
  return cl->batches == NULL;
}

/* The architecture NCCL's bandwidth ceilings are read by: the catalog
 * device's (comm_arch_of_device), with [cluster] device_mix the oldest of
 * its kinds, as NCCL reads the least compute capability; none where any
 * kind is not a GPU it knows. */
static int
cluster_arch (const SimConfig *c)
{
  CommArch arch;

  if (c->n_kinds == 0)
    return comm_arch_of_device (c->device);
  arch = COMM_N_ARCH;
  for (int k = 0; k < c->n_kinds; k++)
    arch = MIN (arch, comm_arch_of_device (c->kinds[k].name));
  return arch;
}

/* With balance = speed, the largest batch still fits a worker's part of
 * the training set. */
static gboolean
cluster_batches_check (SimCluster *cl, GError **error)
{
  const SimConfig *c = cl->c;
  if (!cl->batches || !c->math)
    return TRUE;
  int most = 0;
  for (gint64 w = 0; w < c->workers; w++)
    most = MAX (most, cl->batches[w]);
  gint64 shard = cl->train->n / MAX (c->workers, 1);
  if (most <= shard)
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "%s: [policy] balance: the fastest device's batch of %d samples exceeds a worker's"
               " shard of the training set (%" G_GINT64_FORMAT " samples), so each step would reuse"
               " its samples; lower [model] batch, use more [model] samples or set balance = none",
               c->file, most, shard);
  return FALSE;
}

/* What the policy is created with: the parts of cl, the keys of c, the
 * device times (with cl as their ctx) and `rec`. */
static void
cluster_env (SimCluster *cl, const PolRecorder *rec)
{
  const SimConfig *c = cl->c;
  double step = cl->cost.step;
  cl->env = (PolEnv) {
    .sim = cl->sim,
    .net = cl->net,
    .model = c->math ? cl->model : NULL,
    .train = cl->train,
    .test = cl->test,
    .eval = c->math ? &cl->eval : NULL,
    .n_params = cl->model->ops->n_params (cl->model),
    .fwd_share = step > 0 ? cl->cost.forward / step : 0.5,
    .n_layers = cl->cost.n_layers,
    .layer_lo = cl->cost.layer_lo,
    .layer_ready = cl->ready,
    .workers = (int) c->workers,
    .servers = (int) c->servers,
    .batch = (int) c->batch,
    .partition = (TrainPartition) c->partition,
    .classes_per_worker = (int) c->classes_per_worker,
    .opt = sim_opt_config (c),
    .iterations = c->iterations,
    .eval_every = c->eval_every,
    .target_loss = c->target_loss,
    .target_accuracy = c->target_accuracy,
    .seed = (guint64) c->seed,
    .values = c->values,
    .failures = cl->failures,
    .n_failures = cl->n_failures,
    .server_failures = cl->server_failures,
    .memory_bandwidth = c->memory_bandwidth * c->memory_efficiency,
    .overlap_slowdown = c->overlap_slowdown,
    .value_bytes = sim_precision_mixed (c->precision) ? 2 : 4,
    .grad_bytes = base_values_int (c->values, "policy.gradient_precision") == 1
                  && sim_precision_mixed (c->precision) ? 2 : 4,
    .launch_overhead = c->launch_overhead,
    .step_overhead = c->step_overhead,
    /* one kind of link everywhere but inside the servers of a topology
     * that has them */
    .intra_step_overhead = net_topology_lookup (c->topology)->servers
                             ? c->intra_step_overhead : c->step_overhead,
    .net_overhead = c->net_overhead,
    .nic_latency = c->nic_latency,
    .arch = cluster_arch (c),
    .amd_host = c->host_amd,
    /* the hardware those overheads are for: a catalog link's kind, else
     * a network between nodes and NVLink inside them */
    .hw = c->fabric ? c->step_hw : COMM_HW_NET,
    .intra_hw = !net_topology_lookup (c->topology)->servers
                  ? (c->fabric ? c->step_hw : COMM_HW_NET)
                  : c->intra_fabric ? c->intra_step_hw : COMM_HW_NVLINK,
    .layers = cl->model->layers,
    .recomputed = cl->recomputed,
    .layer_seconds = layer_seconds,
    .scale_time = scale_time,
    .compute_time = compute_time,
    .host_timed = c->measured && c->step_time < 0,
    .same_pace = sim_stragglers_uniform (cl->strag) && !(c->measured && c->step_time < 0)
                 && kinds_alike (cl),
    .batches = cl->batches,
    .update_time = update_time,
    .compute_ctx = cl,
    .rec = *rec,
  };
}

SimCluster *
sim_cluster_new (const SimConfig *c, const PolRecorder *rec, GError **error)
{
  return sim_cluster_new_on (c, rec, NULL, NULL, error);
}

SimCluster *
sim_cluster_new_on (const SimConfig *c, const PolRecorder *rec, EngSim *sim, NetNetwork *net,
                    GError **error)
{
  g_return_val_if_fail (c && rec && (sim == NULL) == (net == NULL), NULL);
  g_autoptr (SimCluster) cl = g_new0 (SimCluster, 1);
  cl->c = c;
  cl->ops = pol_lookup (c->policy);
  g_assert (cl->ops); /* validated by the scenario loader */
  cl->shared_sim = sim != NULL;
  cl->sim = sim ? sim : eng_sim_new ();
  cl->net = net ? net : sim_network_build (c, cl->sim, "scenario", error);
  if (!cl->net)
    return NULL;
  gboolean ok = cluster_load_model (cl, error);
  cl->failures = failures_of (c, &cl->n_failures);
  sim_server_failures (c, &cl->server_failures);
  if (!ok)
    return NULL;
  sim_ckpt_plan (c, cl->model, net_network_n_links (cl->net), &cl->ckpt);
  if (!sim_ckpt_validate (c, &cl->ckpt, error))
    return NULL;
  if (!sim_balanced_batches (c, cl->model, &cl->batches, error)
      || !cluster_batches_check (cl, error))
    return NULL;
  cluster_device_times (cl);
  cluster_env (cl, rec);
  cl->pol = cl->ops->create (&cl->env, error);
  if (!cl->pol)
    return NULL;
  return g_steal_pointer (&cl);
}

void
sim_cluster_free (SimCluster *cl)
{
  if (!cl)
    return;
  if (cl->pol)
    cl->ops->free (cl->pol);
  g_free (cl->ready);
  g_free (cl->recomputed);
  g_free (cl->failures);
  g_free ((gpointer) cl->server_failures.list);
  if (cl->strag)
    sim_stragglers_free (cl->strag);
  sim_step_cost_clear (&cl->cost);
  for (int i = 0; i < cl->n_costs; i++)
    sim_step_cost_clear (&cl->costs[i]);
  g_free (cl->costs);
  g_free (cl->step_of);
  g_free (cl->kind_ratio);
  g_free (cl->batches);
  kern_model_free (cl->model);
  if (cl->backend)
    kern_backend_free (cl->backend);
  kern_dataset_free (cl->train);
  kern_dataset_free (cl->test);
  net_network_free (cl->net);
  if (!cl->shared_sim)
    eng_sim_free (cl->sim);
  g_free (cl);
}
