/*
 * stragglers.c — the registry of straggler models (docs/stragglers.md is the
 * reference), and what every model shares.
 *
 * A model is one file of config/stragglers/ and one line in the table below.
 * Worker w draws from its own stream (stream 0x57A6 + w of the scenario
 * seed), so its factors do not depend on how many steps the other workers
 * take.  With `persistent`, each worker draws once, when the model is
 * created (in worker order, from its own stream), and keeps that factor for
 * the run.
 */
#include "config.h"

#include "config/stragglers.h"

extern const SimStragglerModel sim_straggler_none;
extern const SimStragglerModel sim_straggler_fixed;
extern const SimStragglerModel sim_straggler_bernoulli;
extern const SimStragglerModel sim_straggler_exponential;
extern const SimStragglerModel sim_straggler_lognormal;
extern const SimStragglerModel sim_straggler_pareto;

static const SimStragglerModel *const models[] = {
  &sim_straggler_none,
  &sim_straggler_fixed,
  &sim_straggler_bernoulli,
  &sim_straggler_exponential,
  &sim_straggler_lognormal,
  &sim_straggler_pareto,
  NULL,
};

static const BaseChoice bool_choices[] = {
  { "false", FALSE, FALSE }, { "true", TRUE, FALSE }, { NULL, 0, FALSE } };

/* The keys every model has, and the ones several models read. */
static const BaseKey shared_keys[] = {
  { .section = "stragglers", .key = "model", .type = BASE_KEY_NAME, .def = NULL,
    .entries = sim_straggler_entries,
    .doc = "Factor multiplying a step's compute time (docs/stragglers.md)." },
  { .section = "stragglers", .key = "factor", .type = BASE_KEY_QUANTITY, .def = "4",
    .min = 1, .max = BASE_BIG, .doc = "Slowdown of a slow step (>= 1)." },
  { .section = "stragglers", .key = "base", .type = BASE_KEY_QUANTITY, .def = "1",
    .min = 0, .max = BASE_BIG,
    .doc = "exponential, lognormal: the smallest factor, added to the random part." },
  { .section = "stragglers", .key = "mean", .type = BASE_KEY_QUANTITY, .def = "1",
    .min = 0, .max = BASE_BIG, .open = BASE_OPEN_MIN,
    .doc = "exponential, lognormal: mean of the random part added to base." },
  { .section = "stragglers", .key = "persistent", .type = BASE_KEY_ENUM, .def = "false",
    .choices = bool_choices,
    .doc = "true: each worker draws its factor once and keeps it for the whole run; false: a fresh draw per step." },
  { .section = NULL },
};

struct SimStragglers {
  const SimStragglerModel *model;
  gpointer state;         /* the model's parameters */
  double *fixed;          /* persistent: (workers) the factor drawn once; else NULL */
  EngRng *rng;            /* (workers) one stream per worker */
  int workers;
};

const SimStragglerModel *
sim_straggler_lookup (const char *name)
{
  return base_registry_find ((const void *const *) models, name);
}

const void *const *
sim_straggler_entries (void)
{
  return (const void *const *) models;
}

void
sim_stragglers_keys (GPtrArray *rows)
{
  base_registry_keys (rows, shared_keys, (const void *const *) models,
                      G_STRUCT_OFFSET (SimStragglerModel, keys));
}

gboolean
sim_stragglers_validate (const SimConfig *c, GError **error)
{
  const SimStragglerModel *m =
    sim_straggler_lookup (base_values_string (c->values, "stragglers.model"));
  g_return_val_if_fail (m != NULL, FALSE);
  return !m->validate || m->validate (c, error);
}

SimStragglers *
sim_stragglers_new (const SimConfig *c)
{
  const SimStragglerModel *m =
    sim_straggler_lookup (base_values_string (c->values, "stragglers.model"));
  g_return_val_if_fail (m != NULL, NULL);
  SimStragglers *s = g_new0 (SimStragglers, 1);
  s->model = m;
  s->state = m->new ? m->new (c) : NULL;
  s->workers = (int) c->workers;
  s->rng = g_new (EngRng, s->workers);
  for (int w = 0; w < s->workers; w++)
    eng_rng_init (&s->rng[w], (guint64) c->seed, 0x57A6u + (guint64) w);
  if (base_values_int (c->values, "stragglers.persistent"))
    {
      s->fixed = g_new (double, s->workers);
      for (int w = 0; w < s->workers; w++)
        s->fixed[w] = m->draw (s->state, &s->rng[w], w);
    }
  return s;
}

void
sim_stragglers_free (SimStragglers *s)
{
  if (!s)
    return;
  if (s->model->free)
    s->model->free (s->state);
  g_free (s->rng);
  g_free (s->fixed);
  g_free (s);
}

gboolean
sim_stragglers_uniform (const SimStragglers *s)
{
  g_return_val_if_fail (s != NULL, FALSE);
  return s->model->uniform;
}

double
sim_stragglers_next (SimStragglers *s, int worker)
{
  g_return_val_if_fail (worker >= 0 && worker < s->workers, 1.0);
  if (s->fixed)
    return s->fixed[worker];
  return s->model->draw (s->state, &s->rng[worker], worker);
}
