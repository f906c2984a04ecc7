/*
 * registry.c — the table of training policies, looked up by name, and the
 * scenario keys and rules several policies share.
 *
 * Adding a policy is adding its file and one line here.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "comm/collectives.h"
#include "policies/compress.h"
#include "policies/filter.h"
#include "policies/policy.h"

extern const PolPolicyOps pol_ps_ops;        /* ps.c */
extern const PolPolicyOps pol_allreduce_ops; /* allreduce.c */
extern const PolPolicyOps pol_local_sgd_ops; /* localsgd.c */
extern const PolPolicyOps pol_pipeline_ops;  /* pipeline.c */
extern const PolPolicyOps pol_collective_ops; /* collective.c */
extern const PolPolicyOps pol_gossip_ops;    /* gossip.c */
extern const PolPolicyOps pol_fedavg_ops;    /* fedavg.c */
extern const PolPolicyOps pol_hogwild_ops;   /* hogwild.c */
extern const PolPolicyOps pol_exchange_ops;  /* exchange.c */

static const PolPolicyOps *const policies[] = {
  &pol_ps_ops,
  &pol_allreduce_ops,
  &pol_local_sgd_ops,
  &pol_pipeline_ops,
  &pol_collective_ops,
  &pol_gossip_ops,
  &pol_fedavg_ops,
  &pol_hogwild_ops,
  &pol_exchange_ops,
  NULL,
};

const PolPolicyOps *
pol_lookup (const char *name)
{
  return base_registry_find ((const void *const *) policies, name);
}

const void *const *
pol_entries (void)
{
  return (const void *const *) policies;
}

static const BaseChoice reduce_choices[] = {
  { "free", 0, FALSE }, { "memory", 1, FALSE }, { NULL, 0, FALSE },
};

/* The most ranks of a tensor group ([policy] tensor's bound). */
#define POL_MAX_TENSOR 1024

static const BaseChoice gradient_choices[] = {
  { "fp32", 0, FALSE }, { "training", 1, FALSE }, { NULL, 0, FALSE },
};

/* [policy] channels = auto (COMM_CHANNELS_AUTO, stored as 0) */
static const BaseChoice channel_choices[] = {
  { "auto", 0, FALSE }, { NULL, 0, FALSE },
};

static const BaseChoice bool_choices[] = {
  { "false", FALSE, FALSE }, { "true", TRUE, FALSE }, { NULL, 0, FALSE },
};

/* The keys of the collectives that all-reduce, local SGD and the pipeline's
 * replicas run. */
static const BaseKey shared_keys[] = {
  { "policy", "algorithm", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, 0,
    "Collective algorithm of kind = allreduce, local-sgd, pipeline replicas and collective (docs/collectives.md); auto picks, for each collective, the one whose cost formula is least on the network (the run's params and buckets tables say which).", comm_entries },
  { "policy", "channels", BASE_KEY_INT, 0, BASE_KEY_AUTO_NAME, 1, 64, 0, channel_choices, 0,
    "All-reduce as this many concurrent collectives, each over its share of the buffer, the ranks in topology order (by node or rack); channel c enters each node at its GPU c, so with [network] nic = gpu each channel crosses nodes through a different NIC, as NCCL's channels do. auto: as NCCL picks them, one per NIC route out of a node (1 on one node or with one NIC per node), fewer for small buffers (docs/collectives.md, Channels).", NULL },
  { "policy", "protocol", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, 0,
    "NCCL wire protocol of the collectives (docs/collectives.md, Protocols): ll, ll128 or simple, each with its step latency and its bytes on the wire; auto picks, for each collective, the protocol (and with algorithm = auto the algorithm) of least estimated time, as NCCL does by size.", comm_protocol_entries },
  { "policy", "compression", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, 0,
    "Gradient compression of kind = allreduce and ps (docs/policies.md): what each worker sends instead of its whole gradient; the math uses what a receiver decodes. With all-reduce the compressed gradients are all-gathered (they cannot be summed on the way).", pol_compress_entries },
  { "policy", "reduce", BASE_KEY_ENUM, 0, "free", 0, 0, 0, reduce_choices, 0,
    "Cost of summing received data in a collective: free, or memory = 3 bytes of memory traffic per byte summed at [device] memory_bandwidth.", NULL },
  { "policy", "tensor", BASE_KEY_INT, 0, "1", 1, POL_MAX_TENSOR, 0, NULL, 0,
    "Tensor-parallel size T (kind = allreduce or pipeline; Megatron style, docs/policies.md): each layer pair's weights cut T ways among T consecutive workers, with an all-reduce of activations after each pair in forward and of their gradients in backward; allreduce: workers = data-parallel ranks x T; pipeline: each stage of each replica is a group of T workers, workers = replicas x stages x T.", NULL },
  { "policy", "sequence_parallel", BASE_KEY_ENUM, 0, "false", 0, 0, 0, bool_choices, 0,
    "tensor > 1: the tensor all-reduces become reduce-scatters and all-gathers, and the layers outside the cut pairs (norms, residual adds) run on 1/T of the sequence.", NULL },
  { "policy", "zero", BASE_KEY_INT, 0, "0", 0, 3, 0, NULL, 0,
    "ZeRO stage (kind = allreduce, and pipeline up to 2 over its replicas), sharding the training state over the data-parallel ranks (docs/policies.md): 0 = none; 1 = optimizer state (gradients reduce-scattered, each rank updates its shard, parameters all-gathered); 2 = gradients too; 3 = parameters too (all-gathered before each layer's forward and backward; kind = allreduce only).", NULL },
  { "policy", "prefetch", BASE_KEY_ENUM, 0, "true", 0, 0, 0, bool_choices, 0,
    "zero = 3: issue a layer's all-gather when the layer before it (forward) or after it (backward) starts, overlapping its compute; false = when that layer ends.", NULL },
  { "policy", "gradient_precision", BASE_KEY_ENUM, 0, "fp32", 0, 0, 0, gradient_choices, 0,
    "kind = allreduce and pipeline: the values their gradient reductions carry (all-reduces, ZeRO's reduce-scatters and all-gathers): fp32 (4 bytes, as PyTorch's DDP with automatic mixed precision and Megatron-LM in bf16 reduce them) or training (the [device] precision's: 2 bytes under bf16 and fp16, as Megatron-LM in fp16 and DeepSpeed reduce them).", NULL },
  { "policy", "layout", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, 0,
    "Device layout DPxPPxTP, e.g. 4x8x8: data-parallel x pipeline x tensor ranks (kind = pipeline: sets replicas, stages and tensor; kind = allreduce: PP = 1, sets tensor); their product must be [cluster] workers.  Empty = use [policy] replicas, stages and tensor.", NULL },
  { .section = NULL },
};

void
pol_keys (GPtrArray *rows)
{
  base_registry_keys (rows, shared_keys, (const void *const *) policies,
                      G_STRUCT_OFFSET (PolPolicyOps, keys));
  pol_compress_keys (rows);
  pol_filter_keys (rows);
  pol_experts_keys (rows);
}

char *
pol_failure_names (void)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; policies[i]; i++)
    if (policies[i]->failures)
      g_string_append_printf (s, "%s%s", s->len ? " or " : "", policies[i]->name);
  return g_string_free (s, FALSE);
}

char *
pol_job_failure_names (void)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; policies[i]; i++)
    if (policies[i]->job_failures)
      g_string_append_printf (s, "%s%s", s->len ? " or " : "", policies[i]->name);
  return g_string_free (s, FALSE);
}

char *
pol_server_failure_names (void)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; policies[i]; i++)
    if (policies[i]->server_failures)
      g_string_append_printf (s, "%s%s", s->len ? " or " : "", policies[i]->name);
  return g_string_free (s, FALSE);
}

/* Reads "DPxPPxTP" into dim[3]; FALSE unless three positive integers. */
static gboolean
parse_layout (const char *text, gint64 dim[3])
{
  const char *p = text;
  for (int i = 0; i < 3; i++)
    {
      if (i > 0 && *p++ != 'x')
        return FALSE;
      if (!g_ascii_isdigit (*p))
        return FALSE;
      char *end;
      guint64 v = g_ascii_strtoull (p, &end, 10);
      if (v < 1 || v > 1000000)
        return FALSE;
      dim[i] = (gint64) v;
      p = end;
    }
  return *p == '\0';
}

/* [policy] layout: sets replicas, stages and tensor (pipeline) or tensor
 * (allreduce, PP = 1), refusing a layout that is not the workers' or that
 * disagrees with one of those keys given a value of its own. */
static gboolean
resolve_layout (const PolPolicyOps *ops, PolCheck *chk, GError **error)
{
  const char *text = base_values_string (chk->values, "policy.layout");
  if (!text || !*text)
    return TRUE;
  gint64 dim[3];
  if (!parse_layout (text, dim))
    return pol_key_error (error, "policy", "layout",
                          "\"%s\" is not DPxPPxTP; write three positive integers joined by "
                          "x, e.g. 4x8x8 (data x pipeline x tensor)", text);
  /* a policy whose stages hold shares of the model has a pipeline axis */
  gboolean pipeline = ops->shares != NULL;
  if (!ops->tensor)
    return pol_key_error (error, "policy", "layout",
                          "applies only to kind = pipeline or allreduce; remove it or set kind");
  if (!pipeline && dim[1] != 1)
    return pol_key_error (error, "policy", "layout",
                          "%s has %" G_GINT64_FORMAT " pipeline stages, which kind = %s does "
                          "not run; use kind = pipeline or a layout DPx1xTP", text, dim[1],
                          ops->name);
  if (dim[2] > POL_MAX_TENSOR)
    return pol_key_error (error, "policy", "layout",
                          "%s has %" G_GINT64_FORMAT " tensor ranks, more than the %d [policy] "
                          "tensor allows; use fewer", text, dim[2], POL_MAX_TENSOR);
  if (dim[0] * dim[1] * dim[2] != chk->workers)
    return pol_key_error (error, "policy", "layout",
                          "%s is %" G_GINT64_FORMAT " workers but [cluster] workers = %"
                          G_GINT64_FORMAT "; make DP x PP x TP equal to workers", text,
                          dim[0] * dim[1] * dim[2], chk->workers);
  /* the keys it sets, with the value each holds when not given */
  static const struct { const char *key; gint64 unset; int dim; gboolean pipeline; } keys[] = {
    { "replicas", 1, 0, TRUE }, { "stages", 0, 1, TRUE }, { "tensor", 1, 2, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (keys[i].pipeline && !pipeline)
        continue;
      g_autofree char *name = g_strconcat ("policy.", keys[i].key, NULL);
      gint64 v = base_values_int (chk->values, name);
      if (v != keys[i].unset && v != dim[keys[i].dim])
        return pol_key_error (error, "policy", "layout",
                              "%s gives %" G_GINT64_FORMAT " for [policy] %s, which says %"
                              G_GINT64_FORMAT "; remove one of them or make them agree", text,
                              dim[keys[i].dim], keys[i].key, v);
      pol_check_resolve_int (chk, name, dim[keys[i].dim]);
    }
  return TRUE;
}

/* An algorithm reduced in the switches (CommAlgorithm.in_switch) runs
 * only where the topology has them: one whose nodes can have a switch
 * that reduces ([network] nvswitch), set so, and across nodes, where the
 * algorithm needs it, a fabric that reduces (ib_sharp); on whole nodes;
 * and for ZeRO's reduce-scatter and all-gather, inside one node. */
static gboolean
check_switch_algorithm (const PolCheck *chk, const char *name, GError **error)
{
  const CommAlgorithm *alg = name ? comm_lookup (name) : NULL;
  gint64 g;

  if (alg == NULL || !alg->in_switch)
    return TRUE;
  if (!net_topology_has_key (chk->topology, "nvswitch")
      || base_values_int (chk->values, "network.nvswitch") == 0)
    return pol_key_error (error, "policy", "algorithm",
                          "%s needs a switch that reduces inside each node, which this "
                          "network has not; set [network] topology = nodes and nvswitch = "
                          "sharp, or use another algorithm (e.g. auto)", name);
  g = pol_gpus_per_node (chk->values);
  if (alg->fabric_sharp && chk->workers > g
      && base_values_int (chk->values, "network.ib_sharp") == 0)
    return pol_key_error (error, "policy", "algorithm",
                          "%s across %" G_GINT64_FORMAT " nodes needs a fabric that "
                          "reduces; set [network] ib_sharp = true, or use nvls-tree",
                          name, (chk->workers + g - 1) / g);
  if (chk->workers > g && base_values_int (chk->values, "policy.zero") > 0)
    return pol_key_error (error, "policy", "algorithm",
                          "%s does reduce-scatter and all-gather inside one node only, not "
                          "across %" G_GINT64_FORMAT " nodes (zero > 0 needs them); use auto "
                          "or ring", name, (chk->workers + g - 1) / g);
  if (chk->workers > g && chk->workers % g != 0)
    return pol_key_error (error, "policy", "algorithm",
                          "%s needs whole nodes, but %" G_GINT64_FORMAT " workers fill "
                          "nodes of %" G_GINT64_FORMAT " unevenly; use a multiple of "
                          "gpus_per_node", name, chk->workers, g);
  return TRUE;
}

gint64
pol_gpus_per_node (const BaseValues *values)
{
  gint64 g = base_values_int (values, "network.gpus_per_node");

  return g > 0 ? g : 8;
}

gboolean
pol_validate (const PolPolicyOps *ops, PolCheck *chk, GError **error)
{
  if (!resolve_layout (ops, chk, error))
    return FALSE;
  if (!ops->tensor && (base_values_int (chk->values, "policy.tensor") != 1
                       || base_values_int (chk->values, "policy.sequence_parallel")))
    return pol_key_error (error, "policy", base_values_int (chk->values, "policy.tensor") != 1
                                           ? "tensor" : "sequence_parallel",
                          "applies only to kind = allreduce or pipeline; remove it or set "
                          "kind = allreduce or pipeline");
  gint64 zero = base_values_int (chk->values, "policy.zero");
  if (!ops->zero && base_values_int (chk->values, "policy.gradient_precision") != 0)
    return pol_key_error (error, "policy", "gradient_precision",
                          "applies only to kind = allreduce or pipeline (their gradient "
                          "reductions); remove it or set kind = allreduce");
  if (!ops->zero && zero != 0)
    return pol_key_error (error, "policy", "zero",
                          "applies only to kind = allreduce or pipeline (the data-parallel "
                          "ranks shard their state); remove it or set kind = allreduce");
  const char *name = base_values_string (chk->values, "policy.algorithm");
  const CommAlgorithm *alg = zero > 0 ? comm_lookup (name) : NULL;
  if (alg && (!comm_does (alg, COMM_REDUCE_SCATTER) || !comm_does (alg, COMM_ALLGATHER)))
    return pol_key_error (error, "policy", "zero",
                          "%" G_GINT64_FORMAT " needs reduce-scatter and all-gather, which "
                          "[policy] algorithm = %s does not run; use ring, halving-doubling "
                          "or auto, or zero = 0", zero, name);
  if (!base_values_int (chk->values, "policy.prefetch") && zero != 3)
    return pol_key_error (error, "policy", "prefetch",
                          "applies only with zero = 3 (parameters gathered layer by layer); "
                          "remove it or set zero = 3");
  if (base_values_int (chk->values, "policy.sequence_parallel")
      && base_values_int (chk->values, "policy.tensor") == 1)
    return pol_key_error (error, "policy", "sequence_parallel",
                          "applies only with tensor > 1; remove it or set tensor");
  if (base_values_int (chk->values, "policy.reduce") && chk->memory_bandwidth <= 0)
    return pol_key_error (error, "policy", "reduce",
                          "memory needs [device] memory_bandwidth; set it (e.g. 900GBps) or use reduce = free");
  if (!pol_compress_validate (chk->values, ops, error))
    return FALSE;
  if (!pol_filter_validate (ops, chk, error))
    return FALSE;
  if (!pol_experts_validate (ops, chk, error))
    return FALSE;
  if (ops->validate && !ops->validate (chk, error))
    return FALSE;
  if (!check_switch_algorithm (chk, base_values_string (chk->values, "policy.algorithm"),
                               error))
    return FALSE;
  for (int i = 0; policies[i]; i++)
    if (policies[i] != ops && policies[i]->foreign && !policies[i]->foreign (chk, error))
      return FALSE;
  return TRUE;
}
