/*
 * compress.c — the registry of gradient compressors ([policy]
 * compression).  Adding one is adding its file and one line here.
 */
#include "config.h"

#include <string.h>

#include "policies/compress.h"
#include "policies/policy.h"

extern const PolCompressor pol_compress_top_k;  /* compress-topk.c */
extern const PolCompressor pol_compress_qsgd;   /* compress-qsgd.c */
extern const PolCompressor pol_compress_sign;   /* compress-sign.c */

/* "none": every float as it is. */
static const PolCompressor none = {
  .name = "none",
  .description = "every gradient sent whole, 4 bytes per float",
};

static const PolCompressor *const compressors[] = {
  &none,
  &pol_compress_top_k,
  &pol_compress_qsgd,
  &pol_compress_sign,
  NULL,
};

const void *const *
pol_compress_entries (void)
{
  return (const void *const *) compressors;
}

const PolCompressor *
pol_compress_of (const BaseValues *v)
{
  const char *name = base_values_string (v, "policy.compression");
  const PolCompressor *c = name ? base_registry_find (pol_compress_entries (), name) : NULL;
  return c == &none ? NULL : c;
}

gboolean
pol_compress_validate (const BaseValues *v, const PolPolicyOps *policy, GError **error)
{
  const PolCompressor *cmp = pol_compress_of (v);
  if (cmp && !policy->compresses)
    return pol_key_error (error, "policy", "compression",
                          "%s applies to kind = allreduce and ps, not %s; set compression = none",
                          cmp->name, policy->name);
  for (int i = 0; compressors[i]; i++)
    if (compressors[i] != cmp && compressors[i]->keys)
      {
        g_autofree char *owner = g_strconcat ("compression = ", compressors[i]->name, NULL);
        if (!pol_keys_at_default (v, compressors[i]->keys, owner, error))
          return FALSE;
      }
  return TRUE;
}

void
pol_compress_keys (GPtrArray *rows)
{
  base_registry_keys (rows, NULL, pol_compress_entries (), G_STRUCT_OFFSET (PolCompressor, keys));
}
