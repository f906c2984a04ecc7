/*
 * coll-auto.c — `algorithm = auto`: not an algorithm but a choice among the
 * registered ones, made for each collective from their cost formulas on the
 * network it runs on, as NCCL's tuner picks an algorithm per message size
 * from its cost model.  docs/collectives.md, "auto", states the rule.
 */
#include "config.h"

#include <math.h>

#include "policies/coll-program.h"

/* The network as the cost formulas see it: rank 0's routes to a rank of
 * its host group and to a rank of another (latencies floored by the step
 * overheads, as the executor charges them), the size of rank 0's group and
 * whether there is more than one group. */
static void
auto_levels (const PolCollArgs *a, PolCollKind kind, PolCollLevels *l,
             gboolean *several)
{
  int g0 = net_network_host_group (a->net, a->hosts[0]);
  int in = -1, out = -1;

  l->kind = kind;
  l->p = a->p;
  l->group = 0;
  l->n = a->n;
  l->elem_bytes = a->elem_bytes;
  l->reduce_per_byte = a->reduce_per_byte;
  for (int r = 0; r < a->p; r++)
    if (net_network_host_group (a->net, a->hosts[r]) == g0)
      {
        l->group++;
        if (r > 0 && in < 0)
          in = r;
      }
    else if (out < 0)
      out = r;
  *several = out >= 0;
  if (in < 0)
    in = out;
  if (out < 0)
    out = in;
  if (in < 0)   /* one rank */
    {
      l->alpha_in = l->alpha_out = 0;
      l->beta_in = l->beta_out = 0;
      return;
    }
  l->alpha_in = MAX (net_network_route_latency (a->net, a->hosts[0], a->hosts[in]),
                     a->intra_step_overhead);
  l->beta_in = 1 / net_network_route_bandwidth (a->net, a->hosts[0], a->hosts[in]);
  l->alpha_out = MAX (net_network_route_latency (a->net, a->hosts[0], a->hosts[out]),
                      *several ? a->step_overhead : a->intra_step_overhead);
  l->beta_out = 1 / net_network_route_bandwidth (a->net, a->hosts[0], a->hosts[out]);
}

/* Seconds `alg` takes on `l` in `channels` channels: its two-level formula
 * where it has one (and the groups divide p), else its formula at the
 * slower level, which the others cross; for the whole buffer, or for one
 * channel's share where the algorithm crosses groups through one route and
 * each channel through another (one NIC per GPU assumed); with the
 * bandwidth terms stretched by its shared_beta where links are shared. */
static double
auto_estimate (const PolCollAlgorithm *alg, const PolCollLevels *l,
               gboolean several, int channels, gboolean shared)
{
  gsize share = alg->one_route
                  ? (l->n + (gsize) channels - 1) / (gsize) channels : l->n;
  double stretch = shared ? MAX (alg->shared_beta, 1.0) : 1.0;

  if (alg->cost_levels && several && l->p % l->group == 0)
    {
      PolCollLevels mine = *l;

      mine.n = share;
      mine.beta_in *= stretch;
      mine.beta_out *= stretch;
      return alg->cost_levels (&mine);
    }
  return alg->cost (l->kind, l->p, 1, share, l->elem_bytes, l->alpha_out,
                    stretch * l->beta_out, l->reduce_per_byte);
}

/* The cheapest algorithm that runs `kind` for `a` among the real ones (the
 * baselines where no other does the kind); ties go to the first in the
 * registry. */
static const PolCollAlgorithm *
auto_choose (const PolCollArgs *a, PolCollKind kind)
{
  const PolCollAlgorithm *best = NULL;
  double best_t = INFINITY;
  PolCollLevels l;
  gboolean several;
  int channels = kind == POL_COLL_ALLREDUCE ? MAX (a->channels, 1) : 1;
  gboolean shared = net_network_contention (a->net) == NET_CONTENTION_MAXMIN;

  auto_levels (a, kind, &l, &several);
  for (int baselines = 0; baselines < 2 && best == NULL; baselines++)
    for (const PolCollAlgorithm *const *it = pol_coll_all (); *it; it++)
      {
        double t;

        if ((*it)->choose != NULL || (*it)->baseline != baselines)
          continue;
        t = auto_estimate (*it, &l, several, channels, shared);
        /* a tie up to rounding (hierarchical with every rank alone is the
         * ring) goes to the first */
        if (!isnan (t) && (best == NULL || t < best_t * (1 - 1e-9)))
          {
            best = *it;
            best_t = t;
          }
      }
  return best;
}

/* The formula of what auto picks on uniform links: the least of the real
 * algorithms' (the baselines' where none does the kind; NaN when no
 * algorithm runs it). */
static double
auto_cost (PolCollKind kind, int p, int group, gsize n, double elem_bytes,
           double alpha, double beta, double gamma)
{
  double best = NAN;

  for (int baselines = 0; baselines < 2 && isnan (best); baselines++)
    for (const PolCollAlgorithm *const *it = pol_coll_all (); *it; it++)
      {
        double t;

        if ((*it)->choose != NULL || (*it)->baseline != baselines)
          continue;
        t = (*it)->cost (kind, p, group, n, elem_bytes, alpha, beta, gamma);
        if (!isnan (t) && (isnan (best) || t < best))
          best = t;
      }
  return best;
}

const PolCollAlgorithm pol_coll_auto = {
  .name = "auto",
  .description = "for each collective, the algorithm whose cost formula is "
                 "least on the network it runs on",
  .source = "per-size choice from a cost model, as NCCL's tuner does "
            "(NCCL src/graph/tuning.cc)",
  .cost = auto_cost,
  .choose = auto_choose,
};
