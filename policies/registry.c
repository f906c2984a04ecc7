/*
 * registry.c — the table of training policies, looked up by name, and the
 * scenario keys and rules several policies share.
 *
 * Adding a policy is adding its file and one line here.
 */
#include "config.h"

#include <string.h>

#include "comm/collectives.h"
#include "policies/compress.h"
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

/* The keys of the collectives that all-reduce, local SGD and the pipeline's
 * replicas run. */
static const BaseKey shared_keys[] = {
  { "policy", "algorithm", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, 0,
    "Collective algorithm of kind = allreduce, local-sgd, pipeline replicas and collective (docs/collectives.md); auto picks, for each collective, the one whose cost formula is least on the network (the run's params and buckets tables say which).", comm_entries },
  { "policy", "channels", BASE_KEY_INT, 0, "1", 1, 64, 0, NULL, 0,
    "All-reduce as this many concurrent collectives, each over its share of the buffer, the ranks in topology order (by node or rack); channel c enters each node at its GPU c, so with [network] nic = gpu each channel crosses nodes through a different NIC, as NCCL's channels do (docs/collectives.md).", NULL },
  { "policy", "compression", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, 0,
    "Gradient compression of kind = allreduce and ps (docs/policies.md): what each worker sends instead of its whole gradient; the math uses what a receiver decodes. With all-reduce the compressed gradients are all-gathered (they cannot be summed on the way).", pol_compress_entries },
  { "policy", "reduce", BASE_KEY_ENUM, 0, "free", 0, 0, 0, reduce_choices, 0,
    "Cost of summing received data in a collective: free, or memory = 3 bytes of memory traffic per byte summed at [device] memory_bandwidth.", NULL },
  { .section = NULL },
};

void
pol_keys (GPtrArray *rows)
{
  base_registry_keys (rows, shared_keys, (const void *const *) policies,
                      G_STRUCT_OFFSET (PolPolicyOps, keys));
  pol_compress_keys (rows);
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

gboolean
pol_validate (const PolPolicyOps *ops, PolCheck *chk, GError **error)
{
  if (base_values_int (chk->values, "policy.reduce") && chk->memory_bandwidth <= 0)
    return pol_key_error (error, "policy", "reduce",
                          "memory needs [device] memory_bandwidth; set it (e.g. 900GBps) or use reduce = free");
  if (!pol_compress_validate (chk->values, ops, error))
    return FALSE;
  if (ops->validate && !ops->validate (chk, error))
    return FALSE;
  for (int i = 0; policies[i]; i++)
    if (policies[i] != ops && policies[i]->foreign && !policies[i]->foreign (chk, error))
      return FALSE;
  return TRUE;
}
