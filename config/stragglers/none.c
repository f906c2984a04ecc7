/*
 * none.c — the straggler model "none": every step at normal speed.
 */
#include "config.h"

#include "config/stragglers.h"

static double
none_draw (gconstpointer state G_GNUC_UNUSED, EngRng *rng G_GNUC_UNUSED,
           int worker G_GNUC_UNUSED)
{
  return 1.0;
}

const SimStragglerModel sim_straggler_none = {
  .name = "none",
  .description = "every step at normal speed",
  .draw = none_draw,
  .uniform = TRUE,
};
