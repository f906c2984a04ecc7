/*
 * pareto.c — the straggler model "pareto": the factor is
 * scale * U^(-1/alpha), U uniform in (0, 1], a Pareto law of scale
 * x_m = scale and shape alpha (heavy-tailed; alpha <= 1 has no finite mean).
 */
#include "config.h"

#include <math.h>

#include "config/stragglers.h"
#include "base/fmath.h"

typedef struct {
  double scale; /* x_m, the smallest factor */
  double alpha; /* shape, > 0 */
} Pareto;

static const BaseKey keys[] = {
  { .section = "stragglers", .key = "scale", .type = BASE_KEY_QUANTITY, .def = "1",
    .min = 0, .max = BASE_BIG, .open = BASE_OPEN_MIN,
    .doc = "pareto: x_m, the smallest factor." },
  { .section = "stragglers", .key = "alpha", .type = BASE_KEY_QUANTITY, .def = "2",
    .min = 0, .max = BASE_BIG, .open = BASE_OPEN_MIN,
    .doc = "pareto: shape (> 0); alpha <= 1 has an infinite mean (allowed), median scale x 2^(1/alpha)." },
  { .section = NULL },
};

static gpointer
pareto_new (const SimConfig *c)
{
  Pareto *p = g_new (Pareto, 1);
  p->scale = base_values_double (c->values, "stragglers.scale");
  p->alpha = base_values_double (c->values, "stragglers.alpha");
  return p;
}

static double
pareto_draw (gconstpointer state, EngRng *rng, int worker G_GNUC_UNUSED)
{
  const Pareto *p = state;
  double u = 1.0 - eng_rng_uniform (rng); /* (0, 1] */
  return p->scale * base_pow (u, -1.0 / p->alpha);
}

const SimStragglerModel sim_straggler_pareto = {
  .name = "pareto",
  .description = "Pareto of scale x_m = scale and shape alpha: scale x U^(-1/alpha)",
  .keys = keys,
  .new = pareto_new,
  .free = g_free,
  .draw = pareto_draw,
};
