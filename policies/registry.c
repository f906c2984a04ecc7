/*
 * registry.c — the table of training policies, looked up by name.
 *
 * Adding a policy is adding its file and one line here.  Also the evaluation
 * every policy reports its metrics with.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/policy.h"

static const PolPolicyOps *const policies[] = {
  &pol_ps_ops,
  &pol_allreduce_ops,
  &pol_local_sgd_ops,
  &pol_pipeline_ops,
  NULL,
};

const PolPolicyOps *
pol_lookup (const char *name)
{
  return base_registry_find ((const void *const *) policies, name);
}

const char *const *
pol_names (void)
{
  static const char *const *names;
  return base_registry_names (&names, (const void *const *) policies);
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
