/*
 * filter.h — the parameter server's push filters ([policy] filter,
 * docs/policies.md, "Filters on the pushes").
 *
 * A filter decides, entry by entry, which values of a worker's gradient
 * shard a push carries (M. Li et al., "Scaling distributed machine learning
 * with the parameter server", OSDI 2014, section 4.2: user-defined filters
 * that leave out zero or insignificant updates).  A filtered push is sent as
 * (4-byte key index, 4-byte value) pairs when that is smaller than the dense
 * shard, so it costs min(4n, 8 x sent) bytes; the server applies what
 * arrives, a skipped entry counting as zero.  Each filter is an entry of the
 * registry in filter.c.
 */
#ifndef DTSIM_FILTER_H
#define DTSIM_FILTER_H

#include <glib.h>

#include "base/keys.h"
#include "policies/policy.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;          /* as in [policy] filter */
  const char *description;
  const char *source;        /* the paper it follows; NULL = none */
  const BaseKey *keys;       /* its own keys (NULL-section row ends them),
                                or NULL */
  /* Keeps a residual: what it skipped joins the next push of that entry. */
  gboolean feedback;
  /* Leaves in g[0..n) what the push carries, a skipped entry set to 0, and
   * returns how many entries are sent.  w[0..n): the parameters the
   * gradient was computed at; lr: [model] lr; with `feedback`, e[0..n) is
   * the residual, added to g before the decision and left holding what was
   * skipped. */
  gsize (*apply) (const BaseValues *v, double lr, float *g, float *e, const float *w,
                  gsize n);
} PolFilter;

/* The filter [policy] filter names, or NULL for none. */
const PolFilter *pol_filter_of (const BaseValues *v);
/* The registry, NULL-terminated, for [policy] filter (BaseKey.entries). */
const void *const *pol_filter_entries (void);
/* Bytes on the wire of a push of n floats of which `sent` are sent:
 * min(4n, 8 x sent). */
double pol_filter_bytes (gsize n, gsize sent);
/* [policy] filter only under a policy that filters its pushes (`policy`'s
 * entry sets `filters`), with real math (chk->math), without [policy]
 * compression; each filter's own keys only with it.  FALSE with a POL_ERROR
 * "[policy] key: what is wrong; the fix". */
gboolean pol_filter_validate (const PolPolicyOps *policy, const PolCheck *chk, GError **error);
/* Appends [policy] filter and the filters' own keys (const BaseKey *) to
 * rows. */
void pol_filter_keys (GPtrArray *rows);

G_END_DECLS

#endif /* DTSIM_FILTER_H */
