/*
 * compress.h — gradient compression for the data-parallel and
 * parameter-server policies ([policy] compression, docs/policies.md,
 * "Gradient compression").
 *
 * A compressor turns a worker's gradient (n floats) into fewer bytes on the
 * wire and tells what a receiver decodes from them; the math then uses the
 * decoded gradient, so a run shows what the compression costs in accuracy
 * as well as what it saves in time.  Each compressor is one file,
 * policies/compress-<name>.c, listed in the registry of compress.c.
 */
#ifndef DTSIM_COMPRESS_H
#define DTSIM_COMPRESS_H

#include <glib.h>

#include "base/keys.h"
#include "engine/engine.h"
#include "policies/policy.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;          /* as in [policy] compression */
  const char *description;
  const char *source;        /* the paper it follows; NULL = none */
  const BaseKey *keys;       /* its own keys (NULL-section row ends them),
                                or NULL */
  /* Keeps an error-feedback memory: what it did not send is added to the
   * next gradient. */
  gboolean feedback;
  /* Bytes on the wire for a gradient of n floats. */
  double (*wire_bytes) (const BaseValues *v, gsize n);
  /* Replaces g[0..n) by what a receiver decodes.  With `feedback`, e[0..n)
   * is the memory: g + e is what is compressed, and e is left holding the
   * part not sent.  rng: the sender's stream (stochastic rounding). */
  void (*apply) (const BaseValues *v, float *g, float *e, gsize n, EngRng *rng);
} PolCompressor;

/* The first random stream of the compressors (worker w uses this + w),
 * apart from the samplers' and the stragglers'. */
#define POL_COMPRESS_STREAM G_GUINT64_CONSTANT (0xC0A9000000)

/* The compressor [policy] compression names, or NULL for none. */
const PolCompressor *pol_compress_of (const BaseValues *v);
/* The registry, NULL-terminated, for [policy] compression (BaseKey.entries). */
const void *const *pol_compress_entries (void);
/* [policy] compression only for the policies that model it (those whose
 * entry sets `compresses`, the one running being `policy`), and each compressor's own keys only
 * with it: a value away from the key's default is refused otherwise.
 * FALSE with a POL_ERROR. */
gboolean pol_compress_validate (const BaseValues *v, const PolPolicyOps *policy,
                                GError **error);
/* Appends the compressors' own keys (const BaseKey *) to rows. */
void pol_compress_keys (GPtrArray *rows);

G_END_DECLS

#endif /* DTSIM_COMPRESS_H */
