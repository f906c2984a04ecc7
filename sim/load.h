/*
 * load.h — a scenario loaded for running: parsed and validated
 * (config/scenario.h), then checked against what its runs would assemble.
 */
#ifndef DTSIM_SIM_LOAD_H
#define DTSIM_SIM_LOAD_H

#include <glib.h>

#include "config/simconfig.h"

G_BEGIN_DECLS

/* sim_scenario_parse(), then for each point: its network is built once (a
 * topology's own rules, link names) and its model checked against its device
 * (a point that does not fit is marked infeasible: c->infeasible); a
 * scenario none of whose points fits is bad input, and so is one whose
 * estimated trace, host memory or events exceed its bounds (sim/estimate.h).
 * Returns the points, or NULL with a one-line SIM_ERROR_INPUT error. */
GPtrArray *sim_scenario_load (const char *path, const char *const *sets,
                              GError **error);

G_END_DECLS

#endif /* DTSIM_SIM_LOAD_H */
