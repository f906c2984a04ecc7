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
  /* Factor (>= 1) of the next step of `worker`. */
  double (*factor) (SimStragglers *s, int worker);
} SimStragglerOps;

struct SimStragglers {
  const SimStragglerOps *ops;
  double factor;          /* slowdown of a slow step */
  double p;               /* bernoulli: probability of a slow step */
  gboolean *slow;         /* fixed: (workers) TRUE for a slow worker */
  EngRng *rng;            /* (workers) one stream per worker */
  int workers;
};

/* The model the config names, with one stream per worker. */
SimStragglers *sim_stragglers_new (const SimConfig *c);
void sim_stragglers_free (SimStragglers *s);
/* Factor of the next step of `worker`. */
double sim_stragglers_next (SimStragglers *s, int worker);

G_END_DECLS

#endif
