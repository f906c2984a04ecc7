/*
 * netmodel-private.h — netmodel hooks for dtsim's own tests and benchmarks,
 * not for simulation code.
 *
 * The network re-shares only the flows a change can affect (see
 * network.c).  These hooks let a test switch back to re-sharing every flow
 * at every change, make the region give way to its component sooner,
 * compare the incremental rates with a full progressive filling, count the
 * flows re-filled and watch a flow's completion event.
 */
#ifndef DTSIM_NETMODEL_PRIVATE_H
#define DTSIM_NETMODEL_PRIVATE_H

#include "netmodel/netmodel.h"

G_BEGIN_DECLS

/* With `full` set, every change of the sharing set re-shares every sharing
 * flow over every active link (the reference algorithm) instead of the
 * region of flows the change can affect.  Rates are the same up to
 * rounding. */
void net_network_set_full_recompute (NetNetwork *net, gboolean full);

/* Fillings a region that fails its checks gets before it takes in its whole
 * connected component (passes >= 1; 1 = at the first failure). */
void net_network_set_region_passes (NetNetwork *net, guint passes);

/* Runs a full progressive filling over all sharing flows, changing nothing,
 * and returns the largest relative difference between its rates and the
 * rates the flows have now (0 when no flow is sharing). */
double net_network_rate_error (NetNetwork *net);

/* The pending event (latency or completion) of the first unfinished transfer
 * with tag `tag`, or 0 when there is no such transfer or event. */
EngEventId net_network_flow_event (const NetNetwork *net, int tag);

/* Completion events scheduled so far (first schedules and moves). */
guint64 net_network_reschedules (const NetNetwork *net);

/* Flows whose rates re-sharing has computed so far (one per flow per
 * progressive filling it took part in; the rate checks of
 * net_network_rate_error() not counted): how much work the changes of the
 * sharing set caused. */
guint64 net_network_refilled (const NetNetwork *net);

G_END_DECLS

#endif /* DTSIM_NETMODEL_PRIVATE_H */
