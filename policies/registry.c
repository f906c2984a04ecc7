/*
 * registry.c — the table of training policies, looked up by name.
 *
 * Adding a policy is adding its file and one line here.
 */
#include "config.h"

#include <string.h>

#include "policies/policy.h"

static const PolPolicyOps *const policies[] = {
  &pol_ps_ops,
  &pol_allreduce_ops,
  NULL,
};

const PolPolicyOps *
pol_lookup (const char *name)
{
  for (int i = 0; policies[i]; i++)
    if (strcmp (policies[i]->name, name) == 0)
      return policies[i];
  return NULL;
}
