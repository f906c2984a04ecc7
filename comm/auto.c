/*
 * auto.c — `algorithm = auto`: not an algorithm but a choice among the
 * registered ones, made for each collective from their cost formulas on the
 * network it runs on, as NCCL's tuner picks an algorithm per message size
 * from its cost model; and `algorithm = nccl`, the same choice among the
 * algorithms NCCL itself implements (CommAlgorithm.nccl), the one to compare
 * with nccl-tests.  The two share every rule but the list, so they share
 * this file.  docs/collectives.md, "auto", states the rule.
 */
#include "config.h"

#include <math.h>

#include "comm/program.h"

/* The network as the cost formulas see it under protocol `pr` for `alg`:
 * rank 0's routes to a rank of its host group and to a rank of another
 * (latencies floored by the step overheads, scaled by the protocol, and
 * for the ring across groups by the network overhead, those across groups
 * plus the NIC's declared latency as the protocol pays it, as the executor
 * charges them; bandwidth terms times the protocol's wire bytes), the size
 * of rank 0's group and whether there is more than one group. */
static void
auto_levels (const CommArgs *a, CommKind kind, const CommProtocol *pr,
             const CommAlgorithm *alg, CommLevels *l, gboolean *several)
{
  CommFamily family = alg->family;
  int g0 = net_network_host_group (a->net, a->hosts[0]);
  int in = -1, out = -1;
  double wire = pr ? pr->wire : 1.0;

  l->kind = kind;
  l->p = a->p;
  l->group = 0;
  l->n = a->n;
  l->elem_bytes = a->elem_bytes;
  l->reduce_per_byte = a->reduce_per_byte;
  l->wire = wire;
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
                     a->intra_step_overhead
                       * comm_protocol_step_scale (pr, family, a->intra_hw));
  l->beta_in = wire / net_network_route_bandwidth (a->net, a->hosts[0], a->hosts[in]);
  l->alpha_out = MAX (net_network_route_latency (a->net, a->hosts[0], a->hosts[out]),
                      *several
                        ? a->step_overhead * comm_protocol_step_scale (pr, family, a->hw)
                        : a->intra_step_overhead
                            * comm_protocol_step_scale (pr, family, a->intra_hw));
  l->beta_out = wire / net_network_route_bandwidth (a->net, a->hosts[0], a->hosts[out]);
  if (*several)   /* as step_floor adds them between host groups */
    l->alpha_out += a->cross_latency
                    + a->nic_latency * comm_protocol_nic_latency_scale (pr);
  if (alg->one_route && *several)   /* as coll_apply_plan charges it */
    l->alpha_in = MAX (l->alpha_in,
                       a->net_overhead * comm_protocol_net_overhead_scale (pr));
}

/* Seconds `alg` takes on `l` in `channels` channels: its two-level formula
 * where it has one (and the groups divide p), else its formula at the
 * slower level, which the others cross; for the whole buffer, or for one
 * channel's share where the algorithm crosses groups through one route and
 * each channel through another (one NIC per GPU assumed); with the
 * bandwidth terms stretched by its shared_beta where links are shared, and
 * no less than 1 / `cap` (s per byte of data: a message's bandwidth
 * ceiling, comm_args_rate_cap, INFINITY for none) for one channel's share,
 * or 1 / (channels x cap) for the whole buffer. */
static double
auto_estimate (const CommAlgorithm *alg, const CommLevels *l,
               gboolean several, int channels, gboolean shared, double cap)
{
  gsize share = alg->one_route
                  ? (l->n + (gsize) channels - 1) / (gsize) channels : l->n;
  double stretch = shared ? MAX (alg->shared_beta, 1.0) : 1.0;
  double least = 1 / (alg->one_route ? cap : cap * channels);   /* 0 for none */

  if (alg->cost_levels && several && l->p % l->group == 0)
    {
      CommLevels mine = *l;

      mine.n = share;
      mine.shared = shared;
      mine.beta_in = MAX (mine.beta_in * stretch, least);
      mine.beta_out = MAX (mine.beta_out * stretch, least);
      return alg->cost_levels (&mine);
    }
  return alg->cost (l->kind, l->p, 1, share, l->elem_bytes, l->alpha_out,
                    MAX (stretch * l->beta_out, least), l->reduce_per_byte);
}

int
comm_channel_paths (const CommArgs *a)
{
  g_return_val_if_fail (a != NULL && a->net != NULL && a->hosts != NULL, 1);
  int g0 = net_network_host_group (a->net, a->hosts[0]), x = -1;
  for (int r = 1; r < a->p && x < 0; r++)
    if (net_network_host_group (a->net, a->hosts[r]) != g0)
      x = r;
  if (x < 0)
    return 1;
  /* the slowest link (the first of equals) of each route out of the
   * group: a NIC of its own per GPU, or one the node's GPUs share */
  g_autoptr (GArray) seen = g_array_new (FALSE, FALSE, sizeof (int));
  int links[64];
  for (int r = 0; r < a->p && seen->len < 64; r++)
    {
      if (net_network_host_group (a->net, a->hosts[r]) != g0
          || a->hosts[r] == a->hosts[x])
        continue;
      int n = net_network_route_links (a->net, a->hosts[r], a->hosts[x], links,
                                       G_N_ELEMENTS (links));
      int best = -1;
      for (int i = 0; i < MIN (n, (int) G_N_ELEMENTS (links)); i++)
        if (best < 0 || net_network_link_bandwidth (a->net, links[i])
                          < net_network_link_bandwidth (a->net, best))
          best = links[i];
      gboolean known = best < 0;
      for (guint i = 0; i < seen->len && !known; i++)
        known = g_array_index (seen, int, i) == best;
      if (!known)
        g_array_append_val (seen, best);
    }
  return MAX ((int) seen->len, 1);
}

/* The channels collective `kind` of `alg` runs in under protocol `pr`:
 * a->channels as given, or (COMM_CHANNELS_AUTO) NCCL's count for its size
 * up to `paths` for an all-reduce and 0 (as given) for the other kinds. */
static int
auto_channels (const CommArgs *a, CommKind kind, const CommAlgorithm *alg,
               const CommProtocol *pr, int paths)
{
  if (a->channels != COMM_CHANNELS_AUTO)
    return a->channels;
  if (kind != COMM_ALLREDUCE)
    return 0;
  return comm_protocol_channels (pr, alg->family, a->p,
                                 (double) a->n * a->elem_bytes, paths);
}

/* Seconds auto estimates for `alg` under `pr` in `channels` channels
 * (NaN where it does not do the kind): its formula on the network as
 * auto_levels sees it, plus the launch overhead scaled by the protocol
 * (left out with no protocol: the same for every algorithm). */
static double
auto_price (const CommArgs *a, CommKind kind, const CommAlgorithm *alg,
            const CommProtocol *pr, int channels)
{
  CommLevels l;
  gboolean several;
  gboolean shared = net_network_contention (a->net) == NET_CONTENTION_MAXMIN;
  double t;

  if (alg->price != NULL)   /* it prices itself on the network */
    return alg->price (a, kind) + (pr != NULL ? a->launch_overhead : 0);
  auto_levels (a, kind, pr, alg, &l, &several);
  t = auto_estimate (alg, &l, several, MAX (channels, 1), shared,
                     comm_args_rate_cap (a, pr, alg->family, MAX (channels, 1)));
  if (pr != NULL)
    t += a->launch_overhead * comm_protocol_launch_scale (pr, alg->family);
  return t;
}

gboolean
comm_plan (const CommAlgorithm *alg, const CommArgs *a, CommKind kind,
           CommPlan *out)
{
  const CommProtocol *given[1];
  const CommProtocol *const *protos = given;
  int n_protos = 1, paths = 1;

  g_return_val_if_fail (alg != NULL && a != NULL && out != NULL, FALSE);
  *out = (CommPlan) { NULL, NULL, 0, NAN };
  given[0] = a->protocol;
  if (a->protocol != NULL && a->protocol->selector)
    for (protos = comm_protocol_candidates (), n_protos = 0; protos[n_protos];)
      n_protos++;
  if (a->channels == COMM_CHANNELS_AUTO && kind == COMM_ALLREDUCE && a->p > 1)
    paths = comm_channel_paths (a);
  if (alg->choose == NULL)
    {
      /* one algorithm: the protocol of least estimate, the first where
       * none is a number (its build then refuses the kind) */
      out->alg = alg;
      if (alg->price != NULL)   /* as below: Simple's overheads only */
        {
          out->channels = a->channels == COMM_CHANNELS_AUTO ? 1 : a->channels;
          out->estimate = auto_price (a, kind, alg, NULL, out->channels);
          return TRUE;
        }
      out->protocol = protos[0];
      out->channels = auto_channels (a, kind, alg, protos[0], paths);
      for (int i = 0; i < n_protos && n_protos > 1; i++)
        {
          int c = auto_channels (a, kind, alg, protos[i], paths);
          double t = auto_price (a, kind, alg, protos[i], c);

          if (!isnan (t) && (isnan (out->estimate) || t < out->estimate * (1 - 1e-9)))
            *out = (CommPlan) { alg, protos[i], c, t };
        }
      return TRUE;
    }
  /* auto: the least over algorithm x protocol among the real algorithms
   * (the baselines where no other does the kind); a tie up to rounding
   * (hierarchical with every rank alone is the ring) goes to the first in
   * the registry, then to the first protocol; nccl: the same among NCCL's */
  for (int baselines = 0; baselines < 2 && out->alg == NULL; baselines++)
    for (const CommAlgorithm *const *it = comm_all (); *it; it++)
      {
        if ((*it)->choose != NULL || (*it)->baseline != baselines
            || (alg->nccl && !(*it)->nccl))
          continue;
        for (int i = 0; i < n_protos; i++)
          {
            /* one that prices itself (through switches that reduce) runs
             * with the overheads as given, Simple's: NCCL runs NVLS under
             * Simple only */
            const CommProtocol *pr = (*it)->price != NULL ? NULL : protos[i];
            int c = pr == NULL && a->channels == COMM_CHANNELS_AUTO
                      ? 1 : auto_channels (a, kind, *it, pr, paths);
            double t = auto_price (a, kind, *it, pr, c);

            if (!isnan (t) && (out->alg == NULL || t < out->estimate * (1 - 1e-9)))
              *out = (CommPlan) { *it, pr, c, t };
          }
      }
  return out->alg != NULL;
}

/* The cheapest algorithm that runs `kind` for `a` (comm_plan's). */
static const CommAlgorithm *
auto_choose (const CommArgs *a, CommKind kind)
{
  extern const CommAlgorithm comm_auto;
  CommPlan plan;

  return comm_plan (&comm_auto, a, kind, &plan) ? plan.alg : NULL;
}

/* The same among NCCL's algorithms. */
static const CommAlgorithm *
nccl_choose (const CommArgs *a, CommKind kind)
{
  extern const CommAlgorithm comm_nccl;
  CommPlan plan;

  return comm_plan (&comm_nccl, a, kind, &plan) ? plan.alg : NULL;
}

/* The cheapest algorithm by `price` among the real ones (the baselines
 * where no other does the kind), its time in *t; NULL when none does it.
 * A tie up to rounding goes to the first in the registry. */
typedef double (*AutoPrice) (const CommAlgorithm *alg, gconstpointer data);

static const CommAlgorithm *
auto_cheapest (AutoPrice price, gconstpointer data, gboolean nccl, double *t)
{
  const CommAlgorithm *best = NULL;

  *t = NAN;
  for (int baselines = 0; baselines < 2 && best == NULL; baselines++)
    for (const CommAlgorithm *const *it = comm_all (); *it; it++)
      {
        double ti;

        if ((*it)->choose != NULL || (*it)->baseline != baselines
            || (nccl && !(*it)->nccl))
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

/* The formula of what auto (nccl: among NCCL's algorithms) picks on
 * uniform links (NaN when no algorithm runs the kind). */
static double
cheapest_cost (gboolean nccl, CommKind kind, int p, int group, gsize n,
               double elem_bytes, double alpha, double beta, double gamma)
{
  AutoUniform u = { kind, p, group, n, elem_bytes, alpha, beta, gamma };
  double t;

  auto_cheapest (price_uniform, &u, nccl, &t);
  return t;
}

static double
auto_cost (CommKind kind, int p, int group, gsize n, double elem_bytes,
           double alpha, double beta, double gamma)
{
  return cheapest_cost (FALSE, kind, p, group, n, elem_bytes, alpha, beta, gamma);
}

static double
nccl_cost (CommKind kind, int p, int group, gsize n, double elem_bytes,
           double alpha, double beta, double gamma)
{
  return cheapest_cost (TRUE, kind, p, group, n, elem_bytes, alpha, beta, gamma);
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

const CommAlgorithm comm_nccl = {
  .name = "nccl",
  .description = "auto's choice among the algorithms NCCL implements (ring, "
                 "double-tree, nvls, nvls-tree), as its tuner chooses by "
                 "size: the one to compare with nccl-tests",
  .source = "NCCL src/graph/tuning.cc (ncclTopoTuneModel), src/enqueue.cc "
            "(topoGetAlgoInfo)",
  .cost = nccl_cost,
  .choose = nccl_choose,
  .nccl = TRUE,
};
