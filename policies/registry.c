/*
 * registry.c — the table of training policies, looked up by name, and the
 * scenario keys and rules several policies share.
 *
 * Adding a policy is adding its file and one line here.  Also the evaluation
 * every policy reports its metrics with.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
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

static const PolPolicyOps *const policies[] = {
  &pol_ps_ops,
  &pol_allreduce_ops,
  &pol_local_sgd_ops,
  &pol_pipeline_ops,
  &pol_collective_ops,
  &pol_gossip_ops,
  &pol_fedavg_ops,
  &pol_hogwild_ops,
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
  { "policy", "algorithm", BASE_KEY_NAME, 0, "auto", 0, 0, 0, NULL, 0,
    "Collective algorithm of kind = allreduce, local-sgd, pipeline replicas and collective (docs/collectives.md); auto picks, for each collective, the one whose cost formula is least on the network (the run's params and buckets tables say which).", comm_entries },
  { "policy", "channels", BASE_KEY_INT, 0, "1", 1, 64, 0, NULL, 0,
    "All-reduce as this many concurrent collectives, each over its share of the buffer, the ranks in topology order (by node or rack); channel c enters each node at its GPU c, so with [network] nic = gpu each channel crosses nodes through a different NIC, as NCCL's channels do (docs/collectives.md).", NULL },
  { "policy", "compression", BASE_KEY_NAME, 0, "none", 0, 0, 0, NULL, 0,
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

G_DEFINE_QUARK (pol-error, pol_error)

gboolean
pol_key_error (GError **error, const char *section, const char *key, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, POL_ERROR, 0, "[%s] %s: %s", section, key, msg);
  return FALSE;
}

void
pol_check_resolve_int (PolCheck *chk, const char *name, gint64 v)
{
  base_values_set_int (chk->values, name, v);
  if (chk->resolved)
    chk->resolved (chk->ctx, name, v);
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
  if (!pol_compress_validate (chk->values, ops->name, error))
    return FALSE;
  if (ops->validate && !ops->validate (chk, error))
    return FALSE;
  for (int i = 0; policies[i]; i++)
    if (policies[i] != ops && policies[i]->foreign && !policies[i]->foreign (chk, error))
      return FALSE;
  return TRUE;
}

gboolean
pol_keys_at_default (const BaseValues *v, const BaseKey *keys, const char *owner,
                     GError **error)
{
  for (const BaseKey *k = keys; k->section; k++)
    {
      g_return_val_if_fail (k->type == BASE_KEY_INT || k->type == BASE_KEY_QUANTITY, FALSE);
      g_autofree char *name = g_strconcat (k->section, ".", k->key, NULL);
      double x = k->type == BASE_KEY_INT ? (double) base_values_int (v, name)
                                         : base_values_double (v, name);
      if (x != g_ascii_strtod (k->def, NULL))
        return pol_key_error (error, k->section, k->key,
                              "applies only to %s; remove it or set %s", owner, owner);
    }
  return TRUE;
}

double
pol_reduce_per_byte (const PolEnv *env)
{
  return base_values_int (env->values, "policy.reduce") ? 3.0 / env->memory_bandwidth : 0.0;
}

void
pol_shares_free (PolShares *s)
{
  if (!s)
    return;
  g_free (s->share);
  g_free (s->note);
  g_free (s->advice);
  g_free (s);
}

void
pol_evaluate (const PolEnv *env, const float *params, double *loss, double *accuracy)
{
  double unused;
  if (!env->model)
    {
      *loss = *accuracy = NAN;
      return;
    }
  env->model->ops->evaluate (env->model, params, env->eval, loss, &unused);
  env->model->ops->evaluate (env->model, params, env->test, &unused, accuracy);
}

void
pol_work_default (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  *out = (PolWork) { .messages = 2 * W, .spans = 4 * W, .iteration_rows = W,
                     .bucket_rows = 0, .in_flight = 2 * W };
}
