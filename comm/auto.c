/*
 * auto.c — `algorithm = auto`: not an algorithm but a choice among the
 * registered ones, made for each collective from their cost formulas on the
 * network it runs on, as NCCL's tuner picks an algorithm per message size
 * from its cost model.  docs/collectives.md, "auto", states the rule.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"

/* The network as the cost formulas see it: rank 0's routes to a rank of
 * its host group and to a rank of another (latencies floored by the step
 * overheads, as the executor charges them), the size of rank 0's group and
 * whether there is more than one group. */
static void
auto_levels (const CommArgs *a, CommKind kind, CommLevels *l,
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
auto_estimate (const CommAlgorithm *alg, const CommLevels *l,
               gboolean several, int channels, gboolean shared)
{
  gsize share = alg->one_route
                  ? (l->n + (gsize) channels - 1) / (gsize) channels : l->n;
  double stretch = shared ? MAX (alg->shared_beta, 1.0) : 1.0;

  if (alg->cost_levels && several && l->p % l->group == 0)
    {
      CommLevels mine = *l;

      mine.n = share;
      mine.beta_in *= stretch;
      mine.beta_out *= stretch;
      return alg->cost_levels (&mine);
    }
  return alg->cost (l->kind, l->p, 1, share, l->elem_bytes, l->alpha_out,
                    stretch * l->beta_out, l->reduce_per_byte);
}

/* An algorithm's time as one of auto's callers prices it (NaN when it does
 * not do the kind). */
typedef double (*AutoPrice) (const CommAlgorithm *alg, gconstpointer data);

/* The cheapest algorithm by `price` among the real ones (the baselines
 * where no other does the kind), its time in *t; NULL when none does it.
 * A tie up to rounding (hierarchical with every rank alone is the ring)
 * goes to the first in the registry. */
static const CommAlgorithm *
auto_cheapest (AutoPrice price, gconstpointer data, double *t)
{
  const CommAlgorithm *best = NULL;

  *t = NAN;
  for (int baselines = 0; baselines < 2 && best == NULL; baselines++)
    for (const CommAlgorithm *const *it = comm_all (); *it; it++)
      {
        double ti;

        if ((*it)->choose != NULL || (*it)->baseline != baselines)
          continue;
        ti = price (*it, data);
        if (!isnan (ti) && (best == NULL || ti < *t * (1 - 1e-9)))
          {
            best = *it;
            *t = ti;
          }
      }
  return best;
}

/* What auto_choose prices on. */
typedef struct {
  CommLevels l;
  gboolean several, shared;
  int channels;
  const CommArgs *a;
} AutoNetwork;

/* An algorithm that runs itself through switches that reduce prices
 * itself on the network (NaN where it lacks them); the others by their
 * formulas. */
static double
price_network (const CommAlgorithm *alg, gconstpointer data)
{
  const AutoNetwork *w = data;

  if (alg->price != NULL)
    return alg->price (w->a, w->l.kind);
  return auto_estimate (alg, &w->l, w->several, w->channels, w->shared);
}

/* The cheapest algorithm that runs `kind` for `a`. */
static const CommAlgorithm *
auto_choose (const CommArgs *a, CommKind kind)
{
  AutoNetwork w;
  double t;

  w.a = a;
  w.channels = kind == COMM_ALLREDUCE ? MAX (a->channels, 1) : 1;
  w.shared = net_network_contention (a->net) == NET_CONTENTION_MAXMIN;
  auto_levels (a, kind, &w.l, &w.several);
  return auto_cheapest (price_network, &w, &t);
}

/* What auto_cost prices on: uniform links. */
typedef struct {
  CommKind kind;
  int p, group;
  gsize n;
  double elem_bytes, alpha, beta, gamma;
} AutoUniform;

static double
price_uniform (const CommAlgorithm *alg, gconstpointer data)
{
  const AutoUniform *u = data;

  /* uniform links say nothing of a switch that reduces */
  if (alg->price != NULL)
    return NAN;
  return alg->cost (u->kind, u->p, u->group, u->n, u->elem_bytes, u->alpha,
                    u->beta, u->gamma);
}

/* The formula of what auto picks on uniform links (NaN when no algorithm
 * runs the kind). */
static double
auto_cost (CommKind kind, int p, int group, gsize n, double elem_bytes,
           double alpha, double beta, double gamma)
{
  AutoUniform u = { kind, p, group, n, elem_bytes, alpha, beta, gamma };
  double t;

  auto_cheapest (price_uniform, &u, &t);
  return t;
}

const CommAlgorithm comm_auto = {
  .name = "auto",
  .description = "for each collective, the algorithm whose cost formula is "
                 "least on the network it runs on",
  .source = "per-size choice from a cost model, as NCCL's tuner does "
            "(NCCL src/graph/tuning.cc)",
  .cost = auto_cost,
  .choose = auto_choose,
};
