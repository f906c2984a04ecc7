/*
 * stragglers.c — the straggler models: none, fixed and bernoulli.
 *
 *   none       every step at normal speed;
 *   fixed      the workers listed in [stragglers] slow are always `factor`
 *              times slower;
 *   bernoulli  each step of each worker is `factor` times slower with
 *              probability p, independently (worker w draws from stream
 *              0x57A6 + w of the scenario seed).
 */
#include "config.h"

#include "sim/stragglers.h"

static double
none_factor (SimStragglers *s, int worker)
{
  return 1.0;
}

static double
fixed_factor (SimStragglers *s, int worker)
{
  return s->slow[worker] ? s->factor : 1.0;
}

static double
bernoulli_factor (SimStragglers *s, int worker)
{
  return eng_rng_uniform (&s->rng[worker]) < s->p ? s->factor : 1.0;
}

static const SimStragglerOps models[] = {
  [SIM_STRAG_NONE] = { "none", "every step at normal speed", none_factor },
  [SIM_STRAG_FIXED] = { "fixed", "listed workers are always `factor` times slower", fixed_factor },
  [SIM_STRAG_BERNOULLI] = { "bernoulli", "each step is `factor` times slower with probability p",
                            bernoulli_factor },
};

SimStragglers *
sim_stragglers_new (const SimConfig *c)
{
  SimStragglers *s = g_new0 (SimStragglers, 1);
  s->ops = &models[c->straggler];
  s->factor = c->factor;
  s->p = c->p;
  s->workers = (int) c->workers;
  s->slow = g_new0 (gboolean, s->workers);
  for (guint i = 0; i < c->slow->len; i++)
    s->slow[g_array_index (c->slow, int, i)] = TRUE;
  s->rng = g_new (EngRng, s->workers);
  for (int w = 0; w < s->workers; w++)
    eng_rng_init (&s->rng[w], (guint64) c->seed, 0x57A6u + (guint64) w);
  return s;
}

void
sim_stragglers_free (SimStragglers *s)
{
  if (!s)
    return;
  g_free (s->slow);
  g_free (s->rng);
  g_free (s);
}

double
sim_stragglers_next (SimStragglers *s, int worker)
{
  return s->ops->factor (s, worker);
}
