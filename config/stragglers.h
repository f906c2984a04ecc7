/*
 * stragglers.h — slowdown factors of worker steps.
 *
 * A straggler model gives, for each step of each worker, the factor by which
 * that step's compute time is multiplied (1 = normal speed).  Each model is
 * one file of config/stragglers/ defining one SimStragglerModel, listed once in
 * the registry of config/stragglers.c; its scenario keys, its cross-key rules
 * and its documentation travel with it.  Each worker draws from its own
 * seeded stream, so the factors of one worker do not depend on how many
 * steps the others take.
 */
#ifndef DTSIM_CONFIG_STRAGGLERS_H
#define DTSIM_CONFIG_STRAGGLERS_H

#include <glib.h>

#include "base/keys.h"
#include "engine/engine.h"
#include "config/simconfig.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;         /* as written in [stragglers] model */
  const char *description;  /* one line */
  const char *source;       /* paper or document it follows; NULL = none */
  const BaseKey *keys;      /* its own [stragglers] keys, ending with a row
                             * whose section is NULL; NULL = none */
  /* Cross-key rules, given the resolved config (its keys in c->values);
   * NULL = none.  Errors are SIM_ERROR_INPUT, made with sim_key_error(). */
  gboolean (*validate) (const SimConfig *c, GError **error);
  /* Its parameters read from c->values (NULL = it needs none). */
  gpointer (*new) (const SimConfig *c);
  void (*free) (gpointer state);
  /* Factor (> 0; 1 = normal speed) of the next step of `worker`, drawn
   * from `rng`, the worker's own stream, where the model is random. */
  double (*draw) (gconstpointer state, EngRng *rng, int worker);
  /* Every factor it draws is 1: all workers compute at the same pace. */
  gboolean uniform;
} SimStragglerModel;

typedef struct SimStragglers SimStragglers;

/* The model [stragglers] model names, with one stream per worker. */
SimStragglers *sim_stragglers_new (const SimConfig *c);
void sim_stragglers_free (SimStragglers *s);
/* Factor of the next step of `worker`. */
double sim_stragglers_next (SimStragglers *s, int worker);
/* Whether every factor s gives is 1 (its model is uniform). */
gboolean sim_stragglers_uniform (const SimStragglers *s);

/* The registered model of that name, or NULL. */
const SimStragglerModel *sim_straggler_lookup (const char *name);
/* The registered models (SimStragglerModel *), NULL-terminated. */
const void *const *sim_straggler_entries (void);
/* Appends (const BaseKey *) every [stragglers] key: the ones all models
 * share, then each model's own. */
void sim_stragglers_keys (GPtrArray *rows);
/* The cross-key rules of the model c names. */
gboolean sim_stragglers_validate (const SimConfig *c, GError **error);

G_END_DECLS

#endif
