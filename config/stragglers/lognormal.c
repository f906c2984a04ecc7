/*
 * lognormal.c — the straggler model "lognormal": the factor is
 * base + mean * exp(sigma Z - sigma^2/2), Z standard normal, so that the
 * added part has mean `mean`.
 */
#include "config.h"

#include <math.h>

#include "config/stragglers.h"
#include "base/fmath.h"

typedef struct {
  double base;  /* the smallest factor */
  double mean;  /* mean of the log-normal part */
  double sigma; /* deviation of that part's logarithm */
} Lognormal;

static const BaseKey keys[] = {
  { .section = "stragglers", .key = "sigma", .type = BASE_KEY_QUANTITY, .def = "0.5",
    .min = 0, .max = BASE_BIG,
    .doc = "lognormal: standard deviation of the factor's natural logarithm." },
  { .section = NULL },
};

static gpointer
lognormal_new (const SimConfig *c)
{
  Lognormal *l = g_new (Lognormal, 1);
  l->base = base_values_double (c->values, "stragglers.base");
  l->mean = base_values_double (c->values, "stragglers.mean");
  l->sigma = base_values_double (c->values, "stragglers.sigma");
  return l;
}

static double
lognormal_draw (gconstpointer state, EngRng *rng, int worker G_GNUC_UNUSED)
{
  const Lognormal *l = state;
  double z = eng_rng_normal (rng);
  return l->base + l->mean * base_exp (l->sigma * z - 0.5 * l->sigma * l->sigma);
}

const SimStragglerModel sim_straggler_lognormal = {
  .name = "lognormal",
  .description = "shifted log-normal: base + mean x exp(sigma Z - sigma^2/2)",
  .keys = keys,
  .new = lognormal_new,
  .free = g_free,
  .draw = lognormal_draw,
};
