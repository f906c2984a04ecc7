/*
 * stragglers.c — the straggler models (docs/stragglers.md is the reference).
 *
 * A model is one entry of the table below: a name, a description and a draw
 * function giving the factor of one step of one worker.  Worker w draws from
 * its own stream (stream 0x57A6 + w of the scenario seed), so its factors do
 * not depend on how many steps the other workers take.
 *
 *   none         1;
 *   fixed        `factor` for the workers listed in `slow`, else 1;
 *   bernoulli    `factor` with probability p, else 1;
 *   exponential  base + Exp(mean)                (shifted exponential);
 *   lognormal    base + mean * exp(sigma Z - sigma^2/2) (Z standard normal:
 *                the added part has mean `mean`);
 *   pareto       scale * U^(-1/alpha)            (U uniform in (0, 1]).
 *
 * With `persistent`, each worker draws once, when the model is created (in
 * worker order, from its own stream), and keeps that factor for the run.
 */
#include "config.h"

#include <math.h>

#include "sim/stragglers.h"

static double
none_draw (SimStragglers *s G_GNUC_UNUSED, int worker G_GNUC_UNUSED)
{
  return 1.0;
}

static double
fixed_draw (SimStragglers *s, int worker)
{
  return s->slow[worker] ? s->factor : 1.0;
}

static double
bernoulli_draw (SimStragglers *s, int worker)
{
  return eng_rng_uniform (&s->rng[worker]) < s->p ? s->factor : 1.0;
}

static double
exponential_draw (SimStragglers *s, int worker)
{
  return s->base + eng_rng_exponential (&s->rng[worker], s->mean);
}

static double
lognormal_draw (SimStragglers *s, int worker)
{
  double z = eng_rng_normal (&s->rng[worker]);
  return s->base + s->mean * exp (s->sigma * z - 0.5 * s->sigma * s->sigma);
}

static double
pareto_draw (SimStragglers *s, int worker)
{
  double u = 1.0 - eng_rng_uniform (&s->rng[worker]); /* (0, 1] */
  return s->scale * pow (u, -1.0 / s->alpha);
}

/* Indexed by SimStragglerModel. */
static const SimStragglerOps models[] = {
  [SIM_STRAG_NONE] = { "none", "every step at normal speed", none_draw },
  [SIM_STRAG_FIXED] = { "fixed", "listed workers are always `factor` times slower", fixed_draw },
  [SIM_STRAG_BERNOULLI] = { "bernoulli", "each step is `factor` times slower with probability p",
                            bernoulli_draw },
  [SIM_STRAG_EXPONENTIAL] = { "exponential", "shifted exponential: base + Exp(mean)",
                              exponential_draw },
  [SIM_STRAG_LOGNORMAL] = { "lognormal", "shifted log-normal: base + a log-normal of mean `mean`",
                            lognormal_draw },
  [SIM_STRAG_PARETO] = { "pareto", "Pareto of scale x_m = scale and shape alpha", pareto_draw },
};

SimStragglers *
sim_stragglers_new (const SimConfig *c)
{
  SimStragglers *s = g_new0 (SimStragglers, 1);
  g_return_val_if_fail ((gsize) c->straggler < G_N_ELEMENTS (models), NULL);
  s->ops = &models[c->straggler];
  s->factor = c->factor;
  s->p = c->p;
  s->base = c->strag_base;
  s->mean = c->strag_mean;
  s->sigma = c->strag_sigma;
  s->scale = c->strag_scale;
  s->alpha = c->strag_alpha;
  s->workers = (int) c->workers;
  s->slow = g_new0 (gboolean, s->workers);
  for (guint i = 0; i < c->slow->len; i++)
    s->slow[g_array_index (c->slow, int, i)] = TRUE;
  s->rng = g_new (EngRng, s->workers);
  for (int w = 0; w < s->workers; w++)
    eng_rng_init (&s->rng[w], (guint64) c->seed, 0x57A6u + (guint64) w);
  if (c->strag_persistent)
    {
      s->fixed = g_new (double, s->workers);
      for (int w = 0; w < s->workers; w++)
        s->fixed[w] = s->ops->factor (s, w);
    }
  return s;
}

void
sim_stragglers_free (SimStragglers *s)
{
  if (!s)
    return;
  g_free (s->slow);
  g_free (s->rng);
  g_free (s->fixed);
  g_free (s);
}

double
sim_stragglers_next (SimStragglers *s, int worker)
{
  g_return_val_if_fail (worker >= 0 && worker < s->workers, 1.0);
  if (s->fixed)
    return s->fixed[worker];
  return s->ops->factor (s, worker);
}

const SimStragglerOps *
sim_stragglers_model (int model)
{
  if (model < 0 || (gsize) model >= G_N_ELEMENTS (models))
    return NULL;
  return &models[model];
}
