/*
 * bernoulli.c — the straggler model "bernoulli": each step is `factor` times
 * slower with probability p, independently.
 */
#include "config.h"

#include "config/stragglers.h"

typedef struct {
  double factor; /* slowdown of a slow step */
  double p;      /* probability of a slow step */
} Bernoulli;

static const BaseKey keys[] = {
  { .section = "stragglers", .key = "p", .type = BASE_KEY_QUANTITY, .def = "0.1",
    .min = 0, .max = 1, .doc = "Probability that a step is slow (bernoulli)." },
  { .section = NULL },
};

static gpointer
bernoulli_new (const SimConfig *c)
{
  Bernoulli *b = g_new (Bernoulli, 1);
  b->factor = base_values_double (c->values, "stragglers.factor");
  b->p = base_values_double (c->values, "stragglers.p");
  return b;
}

static double
bernoulli_draw (gconstpointer state, EngRng *rng, int worker G_GNUC_UNUSED)
{
  const Bernoulli *b = state;
  return eng_rng_uniform (rng) < b->p ? b->factor : 1.0;
}

const SimStragglerModel sim_straggler_bernoulli = {
  .name = "bernoulli",
  .description = "each step is `factor` times slower with probability p",
  .keys = keys,
  .new = bernoulli_new,
  .free = g_free,
  .draw = bernoulli_draw,
};
