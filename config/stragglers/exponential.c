/*
 * exponential.c — the straggler model "exponential": the factor is
 * base + Exp(mean), a shifted exponential.
 */
#include "config.h"

#include "config/stragglers.h"

typedef struct {
  double base; /* the smallest factor */
  double mean; /* mean of the exponential part */
} Exponential;

static gpointer
exponential_new (const SimConfig *c)
{
  Exponential *e = g_new (Exponential, 1);
  e->base = base_values_double (c->values, "stragglers.base");
  e->mean = base_values_double (c->values, "stragglers.mean");
  return e;
}

static double
exponential_draw (gconstpointer state, EngRng *rng, int worker G_GNUC_UNUSED)
{
  const Exponential *e = state;
  return e->base + eng_rng_exponential (rng, e->mean);
}

const SimStragglerModel sim_straggler_exponential = {
  .name = "exponential",
  .description = "shifted exponential: base + Exp(mean)",
  .new = exponential_new,
  .free = g_free,
  .draw = exponential_draw,
};
