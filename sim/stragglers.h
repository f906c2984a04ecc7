/*
 * stragglers.h — slowdown factors of worker steps.
 *
 * A straggler model gives, for each step of each worker, the factor by which
 * that step's compute time is multiplied (1 = normal speed).  Models are
 * registered by name; each worker draws from its own seeded stream, so the
 * factors of one worker do not depend on how many steps the others take.
 */
#ifndef DTSIM_SIM_STRAGGLERS_H
#define DTSIM_SIM_STRAGGLERS_H

#include <glib.h>

#include "engine/engine.h"
#include "sim/scenario.h"

G_BEGIN_DECLS

typedef struct SimStragglers SimStragglers;

typedef struct {
  const char *name;
  const char *description;
  /* Factor (> 0; 1 = normal speed) of the next step of `worker`, drawn
   * from the worker's own stream where the model is random. */
  double (*factor) (SimStragglers *s, int worker);
} SimStragglerOps;

struct SimStragglers {
  const SimStragglerOps *ops;
  double factor;          /* slowdown of a slow step */
  double p;               /* bernoulli: probability of a slow step */
  double base;            /* exponential, lognormal: shift of the factor */
  double mean;            /* exponential, lognormal: mean of the added part */
  double sigma;           /* lognormal: deviation of the factor's logarithm */
  double scale;           /* pareto: x_m, the smallest factor */
  double alpha;           /* pareto: shape (> 0; <= 1 has no finite mean) */
  double *fixed;          /* persistent: (workers) the factor drawn once; else NULL */
  gboolean *slow;         /* fixed: (workers) TRUE for a slow worker */
  EngRng *rng;            /* (workers) one stream per worker */
  int workers;
};

/* The model the config names, with one stream per worker. */
SimStragglers *sim_stragglers_new (const SimConfig *c);
void sim_stragglers_free (SimStragglers *s);
/* Factor of the next step of `worker`. */
double sim_stragglers_next (SimStragglers *s, int worker);
/* The model registered under SimStragglerModel `model`, or NULL. */
const SimStragglerOps *sim_stragglers_model (int model);

G_END_DECLS

#endif
