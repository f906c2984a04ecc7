/*
 * engine-private.h — engine hooks for dtsim's own tests, not for simulation
 * code.
 *
 * The event queue numbers schedules with a 32-bit sequence and renumbers the
 * pending events when it runs out (every 2^32 schedules).  Reaching that in a
 * test would take minutes, so a test may lower the limit.
 */
#ifndef DTSIM_ENGINE_PRIVATE_H
#define DTSIM_ENGINE_PRIVATE_H

#include "engine/engine.h"

G_BEGIN_DECLS

/* Renumbers once `limit` schedules have been made (1 <= limit <= 2^32);
 * `limit` must exceed the number of events ever pending at once. */
void eng_sim_set_seq_limit (EngSim *sim, guint64 limit);

G_END_DECLS

#endif /* DTSIM_ENGINE_PRIVATE_H */
