/*
 * filter.c — the registry of the parameter server's push filters ([policy]
 * filter) and the filters themselves, each a few lines: `zero` leaves out
 * the entries of a gradient shard that are exactly zero (a sparse push),
 * `threshold` those whose update is insignificant next to the parameter,
 * remembering them until they add up (Li et al.'s "significantly modified"
 * filter).  Adding a filter is adding its entry here.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/compress.h"
#include "policies/filter.h"

/* "none": every entry sent. */
static const PolFilter none = {
  .name = "none",
  .description = "every entry of a push sent, 4 bytes per float",
};

/* zero: an entry is sent iff it is not zero (-0 is zero); nothing is lost. */
static gsize
zero_apply (const BaseValues *v G_GNUC_UNUSED, double lr G_GNUC_UNUSED, float *g,
            float *e G_GNUC_UNUSED, const float *w G_GNUC_UNUSED, gsize n)
{
  gsize sent = 0;
  for (gsize i = 0; i < n; i++)
    sent += g[i] != 0.0f;
  return sent;
}

static const PolFilter zero = {
  .name = "zero",
  .description = "the entries that are not exactly zero, as (index, value) pairs of 8 bytes "
                 "where that is smaller than the dense shard",
  .source = "M. Li et al.: Scaling distributed machine learning with the parameter server, OSDI 2014",
  .apply = zero_apply,
};

/* threshold: u = g + e (g alone where e is 0, so that nothing changes a
 * bit where nothing was skipped); entry i is skipped iff
 * |lr u_i| < t |w_i| (in double), which keeps u_i in e_i and sends 0;
 * otherwise u_i is sent and e_i becomes 0.  t = 0 skips nothing. */
static gsize
threshold_apply (const BaseValues *v, double lr, float *g, float *e, const float *w, gsize n)
{
  double t = base_values_double (v, "policy.threshold");
  gsize sent = 0;
  for (gsize i = 0; i < n; i++)
    {
      float u = e[i] != 0.0f ? g[i] + e[i] : g[i];
      if (fabs (lr * (double) u) < t * fabs ((double) w[i]))
        {
          e[i] = u;
          g[i] = 0.0f;
        }
      else
        {
          e[i] = 0.0f;
          g[i] = u;
          sent++;
        }
    }
  return sent;
}

static const BaseKey threshold_keys[] = {
  { "policy", "threshold", BASE_KEY_QUANTITY, 0, "0.01", 0, 1e6, 0, NULL, 0,
    "filter = threshold: a push leaves out entry i while abs(lr x (g_i + residual_i)) < threshold x abs(w_i) "
    "(w: the parameters the gradient was computed at) and keeps it in the residual; 0 sends everything.",
    NULL },
  { .section = NULL },
};

static const PolFilter threshold = {
  .name = "threshold",
  .description = "the entries whose update, with what was skipped before, is at least threshold "
                 "x |parameter|; the others are remembered and join the next push",
  .source = "M. Li et al.: Scaling distributed machine learning with the parameter server, "
            "OSDI 2014 (the significantly modified filter)",
  .keys = threshold_keys,
  .feedback = TRUE,
  .apply = threshold_apply,
};

static const PolFilter *const filters[] = {
  &none,
  &zero,
  &threshold,
  NULL,
};

const void *const *
pol_filter_entries (void)
{
  return (const void *const *) filters;
}

const PolFilter *
pol_filter_of (const BaseValues *v)
{
  const char *name = base_values_string (v, "policy.filter");
  const PolFilter *f = name ? base_registry_find (pol_filter_entries (), name) : NULL;
  return f == &none ? NULL : f;
}

double
pol_filter_bytes (gsize n, gsize sent)
{
  return MIN (4.0 * (double) n, 8.0 * (double) sent);
}

gboolean
pol_filter_validate (const PolPolicyOps *policy, const PolCheck *chk, GError **error)
{
  const PolFilter *f = pol_filter_of (chk->values);
  const PolCompressor *cmp = pol_compress_of (chk->values);
  if (f && !policy->filters)
    return pol_key_error (error, "policy", "filter",
                          "%s filters a parameter server's pushes (kind = ps), and kind = %s "
                          "has none; set filter = none or kind = ps", f->name, policy->name);
  if (f && cmp)
    return pol_key_error (error, "policy", "filter",
                          "%s and compression = %s both decide what a push carries and are not "
                          "modelled together; set filter = none or compression = none",
                          f->name, cmp->name);
  if (f && !chk->math)
    return pol_key_error (error, "policy", "filter",
                          "%s needs the real math (the gradient's values decide what is sent), "
                          "which this run does not do; set filter = none or use a model with "
                          "math ([model] kind = softmax, mlp, ... and [kernels] backend = cpu)",
                          f->name);
  for (int i = 0; filters[i]; i++)
    if (filters[i] != f && filters[i]->keys)
      {
        g_autofree char *owner = g_strconcat ("filter = ", filters[i]->name, NULL);
        if (!pol_keys_at_default (chk->values, filters[i]->keys, owner, error))
          return FALSE;
      }
  return TRUE;
}

static const BaseKey filter_key[] = {
  { "policy", "filter", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, 0,
    "kind = ps: which entries of each gradient push are sent (docs/policies.md, \"Filters on the "
    "pushes\"); a filtered push costs min(4n, 8 x sent) bytes; the run's params row "
    "policy.filter_saved tells the share of push bytes saved.",
    pol_filter_entries },
  { .section = NULL },
};

void
pol_filter_keys (GPtrArray *rows)
{
  base_registry_keys (rows, filter_key, pol_filter_entries (),
                      G_STRUCT_OFFSET (PolFilter, keys));
}
