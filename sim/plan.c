/*
 * plan.c — `dtsim plan`: the layouts of a pipeline scenario searched,
 * validated, estimated, and the best simulated.
 *
 * Every candidate is the scenario with a handful of --set overrides
 * ([policy] layout, zero, microbatches, schedule, chunks; [model] batch,
 * recompute), parsed by the loader and checked against its device by
 * sim_model_check, so a candidate passes exactly the rules a `dtsim run`
 * of it would (no rule is written twice).  The survivors are ranked by a
 * closed-form estimate of an iteration built from the project's own costs:
 * the layers' roofline seconds (sim_layer_seconds, recomputation
 * included), a tensor rank's share of them (pol_tensor_split), the stages
 * as the policy cuts them (sim_shares_memory), the 1F1B bubble (P - 1) / v
 * operations, and the collectives priced by their algorithm's alpha-beta
 * cost (comm_cost) on the routes of the scenario's network.  The best
 * `top` are then run with the event engine, without a trace, and ranked
 * by its iteration time (docs/plan.md).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/collectives.h"
#include "config/scenario.h"
#include "config/units.h"
#include "policies/policy.h"
#include "device/model.h"
#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "sim/cluster.h"
#include "sim/load.h"
#include "sim/plan.h"
#include "sim/run.h"

/* [model] recompute's value as a scenario writes it. */
static const char *
recompute_name (int rc)
{
  return sim_scenario_choice_name ("model", "recompute", rc);
}

/* What the search holds while it runs. */
typedef struct {
  const char *path;
  const char *const *sets;   /* the user's overrides, applied first */
  const SimPlanOptions *opt;
  SimPlan *plan;
  NetNetwork *net;           /* the scenario's network, for route costs */
  EngSim *sim;
  int server;                /* workers per server (host group of worker 0) */
  gint64 blocks;             /* [model] blocks of a transformer, else 0 */
  gboolean sequence;         /* [policy] sequence_parallel given true */
  double e;                  /* bytes per activation value (training precision) */
  double g;                  /* bytes per gradient value reduced */
  guint done;                /* candidates looked at, for the progress line */
  gboolean overflow;         /* more than SIM_PLAN_MAX_CANDIDATES to look at */
  gboolean tty;
} Search;

static void
row_free (gpointer p)
{
  SimPlanRow *r = p;
  g_strfreev (r->sets);
  g_free (r->why_pruned);
  g_free (r);
}

void
sim_plan_free (SimPlan *p)
{
  if (!p)
    return;
  g_free (p->file);
  g_free (p->device);
  if (p->ranked)
    g_ptr_array_unref (p->ranked);
  if (p->fit)
    g_ptr_array_unref (p->fit);
  if (p->memory_example)
    row_free (p->memory_example);
  g_free (p);
}

/* One line on stderr: redrawn in place on a terminal, else printed as is
 * (the search prints one per phase there). */
static void
progress (const Search *s, gboolean phase, const char *fmt, ...) G_GNUC_PRINTF (3, 4);
static void
progress (const Search *s, gboolean phase, const char *fmt, ...)
{
  if (!s->opt->progress || (!phase && !s->tty))
    return;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *line = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (s->tty)
    fprintf (stderr, "\r%s\033[K%s", line, phase ? "\n" : "");
  else
    fprintf (stderr, "%s\n", line);
  fflush (stderr);
}

/* Whether the override "section.key=value" sets a key every candidate
 * sets for itself (the layout, batch, schedule, recompute). */
static gboolean
plan_sets_key (const char *kv)
{
  static const char *const keys[] = {
    "policy.layout", "policy.replicas", "policy.stages", "policy.tensor", "policy.zero",
    "model.global_batch", "model.batch", "policy.microbatches", "policy.schedule",
    "policy.chunks", "model.recompute", "policy.sequence_parallel" };
  gsize n = strcspn (kv, "=");
  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    if (strlen (keys[i]) == n && strncmp (kv, keys[i], n) == 0)
      return TRUE;
  return FALSE;
}

/* The overrides that make candidate r of the scenario: the user's, then
 * the layout's own. */
static char **
candidate_sets (const Search *s, const SimPlanRow *r, gint64 batch)
{
  GPtrArray *own = g_ptr_array_new ();
  g_ptr_array_add (own, g_strdup_printf ("policy.layout=%dx%dx%d", r->D, r->P, r->T));
  g_ptr_array_add (own, g_strdup_printf ("policy.replicas=%d", r->D));
  g_ptr_array_add (own, g_strdup_printf ("policy.stages=%d", r->P));
  g_ptr_array_add (own, g_strdup_printf ("policy.tensor=%d", r->T));
  g_ptr_array_add (own, g_strdup_printf ("policy.zero=%d", r->zero));
  g_ptr_array_add (own, g_strdup ("model.global_batch=0"));
  g_ptr_array_add (own, g_strdup_printf ("model.batch=%" G_GINT64_FORMAT, batch));
  g_ptr_array_add (own, g_strdup_printf ("policy.microbatches=%d", r->microbatches));
  g_ptr_array_add (own, g_strdup_printf ("policy.schedule=%s",
                                         r->chunks > 1 ? "interleaved" : "1f1b"));
  g_ptr_array_add (own, g_strdup_printf ("policy.chunks=%d", r->chunks));
  g_ptr_array_add (own, g_strdup_printf ("model.recompute=%s", recompute_name (r->recompute)));
  if (s->sequence)
    g_ptr_array_add (own, g_strdup_printf ("policy.sequence_parallel=%s",
                                           r->T > 1 ? "true" : "false"));
  /* the user's overrides first, less those the layout sets itself */
  GPtrArray *a = g_ptr_array_new ();
  for (const char *const *u = s->sets; u && *u; u++)
    if (!plan_sets_key (*u))
      g_ptr_array_add (a, g_strdup (*u));
  for (guint i = 0; i < own->len; i++)
    g_ptr_array_add (a, g_ptr_array_index (own, i));
  g_ptr_array_free (own, TRUE);
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_free (a, FALSE);
}

/* Alpha (s) and beta (s/byte) of the route from worker 0 to worker `to`;
 * FALSE where there is none (to = 0, or beyond the hosts). */
static gboolean
route_cost (const Search *s, int to, double *alpha, double *beta)
{
  if (to <= 0 || to >= net_network_n_hosts (s->net))
    return FALSE;
  double bw = net_network_route_bandwidth (s->net, 0, to);
  *alpha = net_network_route_latency (s->net, 0, to);
  *beta = bw > 0 ? 1.0 / bw : 0;
  return TRUE;
}

/* Seconds a tensor group spends in its collectives for one micro-batch of
 * the whole model (every stage's together), ring-priced on the route
 * between its first two ranks. */
static double
tensor_seconds (const Search *s, const SimConfig *c, const KernModel *m,
                const PolTpSplit *split, int T, int micro)
{
  double alpha, beta;
  if (T <= 1 || !route_cost (s, 1, &alpha, &beta))
    return 0;
  g_autofree gboolean *mask = sim_recompute_mask (c, m);
  int n;
  gboolean sequence = base_values_int (c->values, "policy.sequence_parallel") != 0;
  g_autofree PolTpCollective *coll
    = pol_tensor_collectives (m->layers, m->n_layers, split, sequence, mask, &n);
  double t = 0;
  for (int i = 0; i < n; i++)
    t += comm_cost (&comm_ring, coll[i].kind, T, (gsize) (coll[i].floats * micro), s->e, alpha,
                    beta, 0);
  return t;
}

/* Seconds of the data-parallel reduction of `params` parameters among D
 * replicas (the same tensor rank of the same stage, P x T workers apart):
 * a ring all-reduce, or with ZeRO a reduce-scatter then an all-gather. */
static double
data_seconds (const Search *s, const SimPlanRow *r, double params)
{
  double alpha, beta;
  if (r->D <= 1 || !route_cost (s, r->P * r->T, &alpha, &beta))
    return 0;
  if (r->zero == 0)
    return comm_cost (&comm_ring, COMM_ALLREDUCE, r->D, (gsize) params, s->g, alpha, beta, 0);
  return comm_cost (&comm_ring, COMM_REDUCE_SCATTER, r->D, (gsize) params, s->g, alpha, beta, 0)
         + comm_cost (&comm_ring, COMM_ALLGATHER, r->D, (gsize) params, s->e, alpha, beta, 0);
}

/* Seconds of one micro-batch's forward and backward on the busiest stage
 * (a tensor rank's share of each layer); sets r's peak memory and *params
 * to the parameters of that stage's device. */
static double
stage_seconds (const SimConfig *c, const KernModel *m, const PolTpSplit *split,
               SimPlanRow *r, double *params)
{
  g_autofree double *fwd = g_new (double, MAX (m->n_layers, 1));
  g_autofree double *bwd = g_new (double, MAX (m->n_layers, 1));
  sim_layer_seconds (c, m, r->micro, fwd, bwd);
  gboolean sequence = base_values_int (c->values, "policy.sequence_parallel") != 0;
  int n;
  PolShares *sh;
  SimStageMemory *st = sim_shares_memory (c, m, &n, &sh);
  double worst = 0;
  r->peak_bytes = 0;
  *params = 0;
  for (int i = 0; i < n; i++)
    {
      const PolShare *p = &sh->share[i];
      double t = 0;
      for (int k = 0; k < p->chunks; k++)
        for (int l = p->chunk_first[k]; l <= p->chunk_last[k]; l++)
          t += (fwd[l] + bwd[l])
               * (r->T > 1 && (split[l] != POL_TP_WHOLE || sequence) ? 1.0 / r->T : 1.0);
      worst = MAX (worst, t);
      r->peak_bytes = MAX (r->peak_bytes, st[i].total);
      *params = MAX (*params, (double) st[i].params);
    }
  g_free (st);
  pol_shares_free (sh);
  return worst;
}

/* The analytic iteration of candidate r (parsed and checked as c): the
 * pipeline's (m + (P - 1) / v) operations of the busiest stage with its
 * share of the tensor collectives, then the data-parallel reduction and
 * the update of that stage's parameters. */
static void
estimate (const Search *s, const SimConfig *c, SimPlanRow *r)
{
  g_autoptr (GError) error = NULL;
  KernModel *m = sim_model_new (c, NULL, &error);
  if (!m)
    {
      r->estimate = INFINITY;
      return;
    }
  g_autofree PolTpSplit *split = g_new0 (PolTpSplit, MAX (m->n_layers, 1));
  if (r->T > 1)
    pol_tensor_split (m->layers, m->n_layers, r->T, split, NULL);
  double params;
  double op = stage_seconds (c, m, split, r, &params);
  double tensor = tensor_seconds (s, c, m, split, r->T, r->micro) / r->P;
  double ops = r->microbatches + (double) (r->P - 1) / r->chunks;
  double data = data_seconds (s, r, params);
  double update = sim_update_seconds (c, (gsize) params);
  r->estimate = (op + tensor) * ops + data + update;
  r->bubble = r->estimate > 0 ? (op + tensor) * (ops - r->microbatches) / r->estimate : 0;
  r->exposed = r->estimate > 0 ? (tensor * ops + data) / r->estimate : 0;
  r->memory = c->memory;
  kern_model_free (m);
}

/* Parses candidate r as `dtsim run` would and checks it against its
 * device; estimates it when it passes, else counts why not.  Takes r. */
static void
consider (Search *s, SimPlanRow *r, gint64 batch)
{
  SimPlan *p = s->plan;
  p->candidates++;
  if (++s->done % 64 == 0)
    progress (s, FALSE, "plan: %u layouts looked at, %u fit", s->done, p->fit->len);
  r->time = NAN;
  r->cost = NAN;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) configs = batch > 0
    ? sim_scenario_parse (s->path, (const char *const *) r->sets, &error) : NULL;
  SimConfig *c = configs ? g_ptr_array_index (configs, 0) : NULL;
  if (c && sim_model_check (c, s->path, &error))
    {
      estimate (s, c, r);
      g_ptr_array_add (p->fit, r);
      return;
    }
  if (error && g_error_matches (error, SIM_ERROR, SIM_ERROR_INFEASIBLE))
    {
      p->pruned_memory++;
      if (!p->memory_example)
        {
          r->why_pruned = g_strdup (error->message);
          p->memory_example = r;
          return;
        }
    }
  else
    p->pruned_rules++;
  row_free (r);
}

/* The candidates of one (D, P, T): every micro-batch size dividing the
 * replica's batch, schedule, ZeRO stage and recomputation. */
static void
enumerate_layout (Search *s, int D, int P, int T)
{
  SimPlan *p = s->plan;
  /* the global batch must share out among the replicas */
  gint64 batch = p->global_batch % D == 0 ? p->global_batch / D : 0;
  for (int micro = 1; micro <= SIM_PLAN_MAX_MICRO; micro *= 2)
    for (int v = 1; v <= 4; v *= 2)
      for (int zero = 0; zero <= (D > 1 ? 3 : 0); zero++)
        for (int rc = 0; rc < 3; rc++)
          {
            if ((batch > 0 && batch % micro != 0) || (batch == 0 && micro > 1)
                || (v > 1 && (P < 2 || (s->blocks > 0 && s->blocks % (P * v) != 0))))
              continue;
            if (p->candidates >= SIM_PLAN_MAX_CANDIDATES)
              {
                s->overflow = TRUE;
                return;
              }
            SimPlanRow *r = g_new0 (SimPlanRow, 1);
            *r = (SimPlanRow) { .D = D, .P = P, .T = T, .zero = zero, .micro = micro,
                                .microbatches = batch > 0 ? (int) (batch / micro) : 1,
                                .chunks = v, .recompute = rc };
            r->sets = candidate_sets (s, r, MAX (batch, 1));
            consider (s, r, batch);
          }
}

/* Every (D, P, T) of the workers: T dividing a server's workers, P
 * dividing the rest (and the blocks of a transformer, as Megatron-LM
 * asks), D what is left. */
static void
enumerate (Search *s)
{
  gint64 W = s->plan->workers;
  for (int T = 1; T <= s->server; T++)
    {
      if (s->server % T != 0 || W % T != 0 || (s->opt->tensor && T != s->opt->tensor))
        continue;
      for (gint64 P = 1; P <= W / T; P++)
        {
          if ((W / T) % P != 0 || (s->opt->stages && P != s->opt->stages)
              || (s->blocks > 0 && s->blocks % P != 0))
            continue;
          enumerate_layout (s, (int) (W / T / P), (int) P, T);
        }
    }
}

/* The workers of one server: those in worker 0's host group (all of a
 * topology without servers: then tensor groups up to 8). */
static int
server_size (const NetNetwork *net, gint64 workers)
{
  int n = 0;
  for (gint64 h = 0; h < workers; h++)
    n += net_network_host_group (net, (int) h) == net_network_host_group (net, 0);
  return n <= 1 || n == workers ? (int) MIN (workers, 8) : n;
}

/* What the search needs of the scenario itself: one point, kind =
 * pipeline, no stage_layers (the search cuts the stages), the global batch
 * and the network. */
static gboolean
read_base (Search *s, GError **error)
{
  g_autoptr (GPtrArray) configs = sim_scenario_load (s->path, s->sets, error);
  if (!configs)
    return FALSE;
  const SimConfig *c = g_ptr_array_index (configs, 0);
  if (configs->len != 1)
    {
      g_autofree char *key = g_strdup (c->swept && c->swept->len
                                       ? (const char *) g_ptr_array_index (c->swept, 0) : "");
      key[strcspn (key, "=")] = '\0';
      return sim_key_error (error, s->path, "sweep", key,
                            "plan searches the layouts of one run, and the scenario sweeps %u "
                            "points; remove the [sweep] section (or --set the key)",
                            configs->len);
    }
  /* the policy that cuts the model into stages of tensor groups */
  if (!pol_lookup (c->policy)->shares)
    return sim_key_error (error, s->path, "policy", "kind",
                          "plan searches data x pipeline x tensor layouts, which kind = "
                          "pipeline runs, not kind = %s; set kind = pipeline", c->policy);
  if (g_hash_table_contains (c->given, "policy.stage_layers"))
    return sim_key_error (error, s->path, "policy", "stage_layers",
                          "plan cuts the stages of each layout itself; remove stage_layers");
  SimPlan *p = s->plan;
  p->workers = c->workers;
  p->global_batch = c->batch * MAX (base_values_int (c->values, "policy.replicas"), 1);
  p->iterations = c->iterations;
  p->device = g_strdup (c->device);
  p->price = c->price;
  if (s->opt->by_cost && !(c->price > 0))
    return sim_key_error (error, s->path, "cluster", "price",
                          "--by cost needs a price per GPU-hour; set [cluster] price "
                          "(e.g. 2.5) or rank --by time");
  /* a transformer's blocks: the stages (and chunks) divide them */
  s->blocks = base_values_declares (c->values, "model.blocks")
              && (g_hash_table_contains (c->given, "model.blocks")
                  || g_hash_table_contains (c->given, "model.shape"))
              ? base_values_int (c->values, "model.blocks") : 0;
  s->sequence = base_values_int (c->values, "policy.sequence_parallel") != 0;
  s->e = sim_precision_mixed (c->precision) ? 2 : 4;
  s->g = base_values_int (c->values, "policy.gradient_precision") ? s->e : 4;
  s->sim = eng_sim_new ();
  s->net = sim_network_build (c, s->sim, s->path, error);
  if (!s->net)
    return FALSE;
  s->server = server_size (s->net, c->workers);
  if (s->opt->tensor && s->server % s->opt->tensor != 0)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: --tensor %d does not divide the %d "
                   "workers of a server (tensor groups stay inside one); use a divisor of %d",
                   s->path, s->opt->tensor, s->server, s->server);
      return FALSE;
    }
  return TRUE;
}

/* Two candidates in a fixed order of their fields (tensor, pipeline,
 * micro-batch, chunks, zero, recompute): ties in the rankings are broken
 * so, never by where the rows happen to live in memory. */
static int
layout_order (const SimPlanRow *a, const SimPlanRow *b)
{
  const int ka[] = { a->T, a->P, a->micro, a->chunks, a->zero, a->recompute };
  const int kb[] = { b->T, b->P, b->micro, b->chunks, b->zero, b->recompute };
  for (gsize i = 0; i < G_N_ELEMENTS (ka); i++)
    if (ka[i] != kb[i])
      return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

static int
by_estimate (gconstpointer pa, gconstpointer pb)
{
  const SimPlanRow *a = *(SimPlanRow *const *) pa, *b = *(SimPlanRow *const *) pb;
  if (a->estimate != b->estimate)
    return a->estimate < b->estimate ? -1 : 1;
  return layout_order (a, b);
}

static int
by_time (gconstpointer pa, gconstpointer pb)
{
  const SimPlanRow *a = *(SimPlanRow *const *) pa, *b = *(SimPlanRow *const *) pb;
  if (a->time != b->time)
    return a->time < b->time ? -1 : 1;
  return by_estimate (pa, pb);
}

/* Runs candidate r with the event engine, loaded as `dtsim run` loads it
 * (network, memory, the run's bounds), without a trace.  FALSE with
 * r->why_pruned set where it cannot run. */
static gboolean
simulate (const Search *s, SimPlanRow *r)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) configs
    = sim_scenario_load (s->path, (const char *const *) r->sets, &error);
  SimRunSummary sum = { 0 };
  const SimConfig *c = configs ? g_ptr_array_index (configs, 0) : NULL;
  if (!c || !sim_run_config (c, NULL, 1, NULL, &sum, &error) || sum.iterations <= 0)
    {
      r->why_pruned = g_strdup (error ? error->message : "no iteration completed");
      return FALSE;
    }
  r->time = sum.sim_time / (double) sum.iterations;
  SimMetricsIn in;
  sim_metrics_inputs_of (c, &in);
  in.samples = sum.samples >= 0 ? (double) sum.samples : NAN;
  in.sim_time = sum.sim_time;
  sim_metrics_compute (&in, &r->metrics);
  r->cost = c->price > 0 ? c->price * (double) in.devices * r->time / 3600.0 : NAN;
  return TRUE;
}

/* A candidate to simulate on a pool thread, and whether it ran. */
typedef struct {
  const Search *s;
  SimPlanRow *r;
  gboolean ok;
} PlanJob;

static void
simulate_job (gpointer data, gpointer user G_GNUC_UNUSED)
{
  PlanJob *j = data;
  j->ok = simulate (j->s, j->r);
}

/* Simulates the best candidates by estimate until opt->top have run (or
 * none is left), `jobs` at once: each run is independent of the others
 * and of the order they finish in, and the rows are added in estimate
 * order, so the result is the same for any number of jobs. */
static void
simulate_best (Search *s, int jobs)
{
  SimPlan *p = s->plan;
  guint next = 0;
  while ((int) p->ranked->len < s->opt->top && next < p->fit->len)
    {
      guint want = (guint) s->opt->top - p->ranked->len;
      guint n = MIN (want, p->fit->len - next);
      g_autofree PlanJob *job = g_new0 (PlanJob, n);
      progress (s, FALSE, "plan: simulating %u layouts (%d at once)", n, MAX (jobs, 1));
      GThreadPool *pool = jobs > 1 ? g_thread_pool_new (simulate_job, NULL, jobs, TRUE, NULL)
                                   : NULL;
      for (guint k = 0; k < n; k++)
        {
          job[k] = (PlanJob) { s, g_ptr_array_index (p->fit, next + k), FALSE };
          if (pool)
            g_thread_pool_push (pool, &job[k], NULL);
          else
            simulate_job (&job[k], NULL);
        }
      if (pool)
        g_thread_pool_free (pool, FALSE, TRUE);
      for (guint k = 0; k < n; k++)
        if (job[k].ok)
          g_ptr_array_add (p->ranked, job[k].r);
      next += n;
    }
}

SimPlan *
sim_plan_new (const char *path, const char *const *sets, const SimPlanOptions *opt,
              GError **error)
{
  g_autoptr (SimPlan) p = g_new0 (SimPlan, 1);
  p->file = g_strdup (path);
  p->fit = g_ptr_array_new_with_free_func (row_free);
  p->ranked = g_ptr_array_new ();
  p->by_cost = opt->by_cost;
  Search s = { .path = path, .sets = sets, .opt = opt, .plan = p,
               .tty = opt->progress && isatty (STDERR_FILENO) };
  gboolean ok = read_base (&s, error);
  if (ok)
    {
      progress (&s, TRUE, "plan: %s: %" G_GINT64_FORMAT " workers, global batch %"
                G_GINT64_FORMAT "; searching layouts", path, p->workers, p->global_batch);
      enumerate (&s);
    }
  if (s.net)
    net_network_free (s.net);
  if (s.sim)
    eng_sim_free (s.sim);
  if (!ok)
    return NULL;
  if (s.overflow)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: more than %d layouts to search on %"
                   G_GINT64_FORMAT " workers; restrict the search with --tensor T or --stages P",
                   path, SIM_PLAN_MAX_CANDIDATES, p->workers);
      return NULL;
    }
  if (p->fit->len == 0)
    {
      sim_key_error (error, path, "cluster", "workers",
                     "no layout of the %" G_GINT64_FORMAT " workers fits (%u refused by the "
                     "scenario's rules, %u by device memory); use more workers or a larger "
                     "device", p->workers, p->pruned_rules, p->pruned_memory);
      return NULL;
    }
  g_ptr_array_sort (p->fit, by_estimate);
  progress (&s, TRUE, "plan: %u layouts, %u fit (%u refused by the rules, %u by memory); "
            "simulating the best %d", p->candidates, p->fit->len, p->pruned_rules,
            p->pruned_memory, opt->top);
  simulate_best (&s, opt->jobs);
  progress (&s, TRUE, "plan: simulated %u layouts", p->ranked->len);
  /* cost per iteration is price x workers x time: the same order */
  g_ptr_array_sort (p->ranked, by_time);
  return g_steal_pointer (&p);
}

static const char *
schedule_text (const SimPlanRow *r, char *buf, gsize n)
{
  if (r->chunks > 1)
    g_snprintf (buf, n, "interleaved v%d", r->chunks);
  else
    g_snprintf (buf, n, "1f1b");
  return buf;
}

static void
write_json_row (GString *out, const SimPlanRow *r, int rank)
{
  const double G = 1024.0 * 1024.0 * 1024.0;
  g_string_append_printf (out, "{\"rank\": %d, \"layout\": \"%dx%dx%d\", \"data\": %d, "
                          "\"pipeline\": %d, \"tensor\": %d, \"zero\": %d, \"micro_batch\": %d, "
                          "\"microbatches\": %d, \"schedule\": \"%s\", \"chunks\": %d, "
                          "\"recompute\": \"%s\", ", rank, r->D, r->P, r->T, r->D, r->P, r->T,
                          r->zero, r->micro, r->microbatches,
                          r->chunks > 1 ? "interleaved" : "1f1b", r->chunks,
                          recompute_name (r->recompute));
  const char *keys[] = { "iteration_time", "estimate", "tokens_per_s", "samples_per_s", "mfu",
                         "memory_gib", "headroom_gib", "cost", "bubble_share",
                         "exposed_comm_share" };
  double vals[] = { r->time, r->estimate, r->metrics.tokens_per_s, r->metrics.samples_per_s,
                    r->metrics.mfu, r->peak_bytes / G,
                    r->memory > 0 ? (r->memory - r->peak_bytes) / G : NAN, r->cost,
                    r->bubble, r->exposed };
  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (isfinite (vals[i]))
        g_string_append_printf (out, "\"%s\": %.17g, ", keys[i], vals[i]);
      else
        g_string_append_printf (out, "\"%s\": null, ", keys[i]);
    }
  g_string_append (out, "\"set\": [");
  for (char **k = r->sets; *k; k++)
    {
      sim_append_json_string (out, *k);
      if (k[1])
        g_string_append (out, ", ");
    }
  g_string_append (out, "]}");
}

static void
write_json (const SimPlan *p, GString *out)
{
  g_string_append (out, "{\"file\": ");
  sim_append_json_string (out, p->file);
  g_string_append_printf (out, ", \"workers\": %" G_GINT64_FORMAT ", \"global_batch\": %"
                          G_GINT64_FORMAT ", \"by\": \"%s\", \"candidates\": %u, \"fit\": %u, "
                          "\"pruned_rules\": %u, \"pruned_memory\": %u, \"ranked\": [",
                          p->workers, p->global_batch, p->by_cost ? "cost" : "time",
                          p->candidates, p->fit->len, p->pruned_rules, p->pruned_memory);
  for (guint i = 0; i < p->ranked->len; i++)
    {
      write_json_row (out, g_ptr_array_index (p->ranked, i), (int) i + 1);
      if (i + 1 < p->ranked->len)
        g_string_append (out, ", ");
    }
  g_string_append (out, "], \"memory_example\": ");
  if (p->memory_example)
    {
      g_string_append (out, "{\"why\": ");
      sim_append_json_string (out, p->memory_example->why_pruned);
      g_string_append (out, ", \"row\": ");
      write_json_row (out, p->memory_example, 0);
      g_string_append (out, "}");
    }
  else
    g_string_append (out, "null");
  g_string_append (out, "}\n");
}

static void
write_table (const SimPlan *p, GString *out)
{
  const double G = 1024.0 * 1024.0 * 1024.0;
  g_string_append_printf (out, "plan: %s: %" G_GINT64_FORMAT " workers%s%s, global batch %"
                          G_GINT64_FORMAT " held fixed\n", p->file, p->workers,
                          p->device ? " of " : "", p->device ? p->device : "", p->global_batch);
  g_string_append_printf (out, "searched %u layouts: %u fit, %u refused by the scenario's "
                          "rules, %u by device memory; simulated the best %u by estimate, "
                          "ranked by %s\n", p->candidates, p->fit->len, p->pruned_rules,
                          p->pruned_memory, p->ranked->len,
                          p->by_cost ? "cost per iteration" : "iteration time");
  g_string_append_printf (out, "%-4s %-11s %-4s %-5s %-14s %-9s %11s %11s %6s %9s %9s %10s  %s\n",
                          "rank", "DPxPPxTP", "zero", "micro", "schedule", "recompute",
                          "iteration", "tokens/s", "MFU", "memory", "headroom", "cost", "why");
  for (guint i = 0; i < p->ranked->len; i++)
    {
      const SimPlanRow *r = g_ptr_array_index (p->ranked, i);
      char layout[48], sched[32], cost[32];
      g_snprintf (layout, sizeof layout, "%dx%dx%d", r->D, r->P, r->T);
      g_snprintf (cost, sizeof cost, isfinite (r->cost) ? "%.4g" : "-", r->cost);
      double head = r->memory > 0 ? (r->memory - r->peak_bytes) / G : NAN;
      g_string_append_printf (out, "%-4u %-11s %-4d %-5d %-14s %-9s %9.4g s %11.4g %5.1f%% "
                              "%5.1f GiB %5.1f GiB %10s  bubble %.0f%%, exposed comm %.0f%%, "
                              "headroom %.0f%%\n", i + 1, layout, r->zero, r->micro,
                              schedule_text (r, sched, sizeof sched),
                              recompute_name (r->recompute), r->time, r->metrics.tokens_per_s,
                              100 * r->metrics.mfu, r->peak_bytes / G, head, cost,
                              100 * r->bubble, 100 * r->exposed,
                              r->memory > 0 ? 100 * (r->memory - r->peak_bytes) / r->memory
                                            : NAN);
    }
  if (p->ranked->len > 0)
    {
      const SimPlanRow *best = g_ptr_array_index (p->ranked, 0);
      g_autofree char *line = g_strjoinv (" --set ", best->sets + 0);
      g_string_append_printf (out, "the best as a run: dtsim run %s --set %s\n", p->file, line);
    }
}

void
sim_plan_write (const SimPlan *p, gboolean json, GString *out)
{
  if (json)
    write_json (p, out);
  else
    write_table (p, out);
}

static void
point_free (gpointer data)
{
  SimPlanPoint *pt = data;
  g_free (pt->label);
  g_strfreev (pt->sets);
  g_free (pt);
}

/* The point's overrides: the user's, then "a=x", "b=y" for each swept
 * "a/b=x/y" (fixing a swept key removes it from the sweep). */
static SimPlanPoint *
point_new (const SimConfig *c, const char *const *sets)
{
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  GString *label = g_string_new (NULL);
  if (sets)
    g_strv_builder_addv (b, (const char **) sets);
  for (guint i = 0; c->swept && i < c->swept->len; i++)
    {
      const char *kv = g_ptr_array_index (c->swept, i);
      const char *eq = strchr (kv, '=');
      g_autofree char *keys = g_strndup (kv, (gsize) (eq - kv));
      g_auto (GStrv) names = g_strsplit (keys, "/", -1);
      g_auto (GStrv) vals = g_strsplit (eq + 1, "/", -1);
      for (int q = 0; names[q] && vals[q]; q++)
        {
          g_autofree char *kv1 = g_strdup_printf ("%s=%s", g_strstrip (names[q]),
                                                  g_strstrip (vals[q]));
          g_strv_builder_add (b, kv1);
          /* labelled by what the plan does not choose, by its short name */
          if (plan_sets_key (kv1))
            continue;
          const char *dot = strchr (names[q], '.');
          g_string_append_printf (label, "%s%s=%s", label->len ? " " : "",
                                  dot ? dot + 1 : names[q], vals[q]);
        }
    }
  SimPlanPoint *pt = g_new0 (SimPlanPoint, 1);
  pt->label = g_string_free (label, FALSE);
  pt->sets = g_strv_builder_end (b);
  return pt;
}

GPtrArray *
sim_plan_points (const char *path, const char *const *sets, GError **error)
{
  g_autoptr (GPtrArray) configs = sim_scenario_load (path, sets, error);
  if (!configs)
    return NULL;
  GPtrArray *points = g_ptr_array_new_with_free_func (point_free);
  for (guint i = 0; i < configs->len; i++)
    g_ptr_array_add (points, point_new (g_ptr_array_index (configs, i), sets));
  return points;
}

/* The best simulated row of a plan (NULL: none simulated). */
static const SimPlanRow *
plan_best (const SimPlan *p)
{
  return p && p->ranked->len > 0 ? g_ptr_array_index (p->ranked, 0) : NULL;
}

/* A point's best: its time and cost to train, or per iteration. */
static double
point_time (const SimPlanRow *r)
{
  return isfinite (r->metrics.train_time) ? r->metrics.train_time : r->time;
}

static double
point_cost (const SimPlanRow *r)
{
  return isfinite (r->metrics.cost) ? r->metrics.cost : r->cost;
}

/* With several points: each point's best, its time to train and cost
 * where the scenario gives tokens or epochs and a price, and which wins. */
static void
write_points_summary (GPtrArray *points, SimPlan **plans, GString *out)
{
  g_string_append_printf (out, "\nbest layout of each of the %u points:\n", points->len);
  int fastest = -1, cheapest = -1;
  for (guint i = 0; i < points->len; i++)
    {
      const SimPlanRow *r = plan_best (plans[i]);
      const SimPlanPoint *pt = g_ptr_array_index (points, i);
      if (!r)
        {
          g_string_append_printf (out, "  %s: no layout could be simulated\n", pt->label);
          continue;
        }
      g_string_append_printf (out, "  %s: %dx%dx%d, %.4g s per iteration, %.4g tokens/s, "
                              "MFU %.1f%%", pt->label, r->D, r->P, r->T, r->time,
                              r->metrics.tokens_per_s, 100 * r->metrics.mfu);
      if (isfinite (r->metrics.train_time))
        {
          g_autofree char *train = sim_metrics_format_time (r->metrics.train_time);
          g_string_append_printf (out, ", time to train %s, GPU-hours %.4g", train,
                                  r->metrics.device_hours);
        }
      if (isfinite (r->metrics.cost))
        g_string_append_printf (out, ", cost %.4g", r->metrics.cost);
      else if (isfinite (r->cost))
        g_string_append_printf (out, ", cost %.4g per iteration", r->cost);
      g_string_append (out, "\n");
      /* to train where [scenario] tokens or epochs say how long, else per
       * iteration */
      double t = point_time (r), c = point_cost (r);
      if (fastest < 0 || t < point_time (plan_best (plans[fastest])))
        fastest = (int) i;
      if (isfinite (c) && (cheapest < 0 || c < point_cost (plan_best (plans[cheapest]))))
        cheapest = (int) i;
    }
  if (fastest < 0)
    return;
  const SimPlanPoint *f = g_ptr_array_index (points, fastest);
  g_string_append_printf (out, "fastest: %s", f->label);
  if (cheapest >= 0)
    g_string_append_printf (out, "; cheapest: %s",
                            ((SimPlanPoint *) g_ptr_array_index (points, cheapest))->label);
  g_string_append (out, "\n");
}

void
sim_plan_write_points (GPtrArray *points, SimPlan **plans, gboolean json, GString *out)
{
  if (points->len == 1)
    {
      sim_plan_write (plans[0], json, out);
      return;
    }
  if (json)
    {
      g_string_append (out, "{\"file\": ");
      sim_append_json_string (out, plans[0]->file);
      g_string_append (out, ", \"points\": [");
    }
  for (guint i = 0; i < points->len; i++)
    {
      const SimPlanPoint *pt = g_ptr_array_index (points, i);
      if (json)
        {
          g_string_append_printf (out, "%s{\"point\": ", i ? ", " : "");
          sim_append_json_string (out, pt->label);
          g_string_append (out, ", \"plan\": ");
          write_json (plans[i], out);
          /* write_json ends its object with a newline */
          g_string_truncate (out, out->len - 1);
          g_string_append (out, "}");
        }
      else
        {
          g_string_append_printf (out, "%s== point %u of %u: %s\n", i ? "\n" : "", i + 1,
                                  points->len, pt->label);
          write_table (plans[i], out);
        }
    }
  if (json)
    g_string_append (out, "]}\n");
  else
    write_points_summary (points, plans, out);
}
