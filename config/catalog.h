/*
 * catalog.h — filling a resolved point's [device] and link keys from the
 * hardware catalog (config/hardware.h).
 */
#ifndef DTSIM_CONFIG_CATALOG_H
#define DTSIM_CONFIG_CATALOG_H

#include "config/simconfig.h"

G_BEGIN_DECLS

/* Fills in [device] and link keys from the catalog where the file left them
 * unset ([cluster] device, [network] fabric and intra_fabric). */
gboolean sim_apply_catalog (SimConfig *c, const char *file, GError **error);

/* *dst = a shallow copy of c (read only: it shares c's pointers and must
 * not be freed) whose [device] figures are those of c's device kind
 * `kind` ([cluster] devices), for pricing a step or checking memory on
 * that kind; c's own figures where c has no kinds. */
void sim_config_with_kind (SimConfig *dst, const SimConfig *c, int kind);

G_END_DECLS

#endif /* DTSIM_CONFIG_CATALOG_H */
