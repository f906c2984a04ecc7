/*
 * jobs.c — several jobs on one cluster ([job NAME] sections).
 *
 * Each job is a point of its own (config/scenario.c resolves the file's
 * sections with the job's keys set) laid on hosts of one cluster
 * (sim_jobs_place).  The cluster's network carries every job's hosts; each
 * job's policy is created on a view of it (net_network_view_new) that shows
 * the job's hosts as hosts 0, 1, ..., so every policy runs unchanged while
 * the flows of all jobs share the links under max-min.  All jobs run in one
 * engine: a job starts at its arrival and the run ends when every job has
 * done its iterations.  Each job is then run alone on the same cluster and
 * hosts (no rows written), which gives its slowdown.
 *
 * The trace of a run of jobs: its iterations rows number the workers of
 * all jobs in file order (the `jobs` table gives each job's first worker),
 * span actors are "JOB/actor", params rows of a job's own keys are
 * "job.JOB.section.key", mesh ranks follow the workers, metrics rows carry
 * the job's name in their `job` column; buckets, stages, failures and
 * messages are not written.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "sim/cluster.h"
#include "sim/jobs.h"
#include "sim/usage.h"

int
sim_job_hosts_needed (const SimJob *j)
{
  const PolPolicyOps *ops = pol_lookup (j->c->policy);
  g_return_val_if_fail (ops, 0);
  g_autoptr (GPtrArray) names = ops->host_names ((int) j->c->workers, (int) j->c->servers);
  return (int) names->len;
}

/* The jobs in placement order: priority, highest first, then file order. */
static int *
placement_order (const GPtrArray *jobs)
{
  int n = (int) jobs->len;
  int *order = g_new (int, n);
  for (int i = 0; i < n; i++)
    order[i] = i;
  /* insertion sort: stable, and there are at most SIM_MAX_JOBS */
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0; k--)
      {
        const SimJob *a = g_ptr_array_index (jobs, order[k - 1]);
        const SimJob *b = g_ptr_array_index (jobs, order[k]);
        if (a->priority >= b->priority)
          break;
        int t = order[k];
        order[k] = order[k - 1];
        order[k - 1] = t;
      }
  return order;
}

/* placement = given: each job's hosts list, checked. */
static gboolean
place_given (const SimConfig *c, const char *file, int H, const int *need, GPtrArray *place,
             GError **error)
{
  g_autofree int *owner = g_new (int, H);
  for (int h = 0; h < H; h++)
    owner[h] = -1;
  for (guint j = 0; j < c->jobs->len; j++)
    {
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      GArray *p = g_ptr_array_index (place, j);
      g_autofree char *section = g_strdup_printf ("job %s", job->name);
      if (!job->hosts || (int) job->hosts->len != need[j])
        return sim_key_error (error, file, section, "hosts",
                              "job %s lists %d hosts and needs %d (its workers and servers);"
                              " give [job %s] hosts = %d cluster hosts", job->name,
                              job->hosts ? (int) job->hosts->len : 0, need[j], job->name, need[j]);
      for (guint i = 0; i < job->hosts->len; i++)
        {
          int h = g_array_index (job->hosts, int, i);
          if (h >= H)
            return sim_key_error (error, file, section, "hosts",
                                  "host %d is not on the cluster, which has %d (0 .. %d); raise"
                                  " [cluster] hosts or list hosts below %d", h, H, H - 1, H);
          if (owner[h] >= 0)
            {
              const SimJob *o = g_ptr_array_index (c->jobs, owner[h]);
              return sim_key_error (error, file, section, "hosts",
                                    "host %d is job %s's already; give each job hosts of its"
                                    " own", h, o->name);
            }
          owner[h] = (int) j;
          g_array_append_val (p, h);
        }
    }
  return TRUE;
}

/* placement = rail (docs/cluster.md, "Rail-aligned placement"): on a nodes
 * topology of g GPUs per node, a job of n hosts has width w = min (n, g)
 * and rows of w ranks (the last may be shorter).  For an offset o from 0
 * to g - w, each row in turn takes the lowest-numbered node the job does
 * not use yet whose GPUs o .. o + row - 1 are free; of the offsets where
 * every row finds one, the job takes the one whose first row lands on the
 * lowest node (ties: the lowest offset), so its rank i sits on GPU
 * o + i mod w of its node.  Jobs by priority, as packed. */
static gboolean
place_rail (const SimConfig *c, const char *file, int H, const int *need, const int *order,
            GPtrArray *place, GError **error)
{
  /* the topologies that lay GPUs out with a NIC each declare [network] nic */
  if (!net_topology_has_key (c->topology, "nic"))
    return sim_key_error (error, file, "cluster", "placement",
                          "rail placement lays jobs on the GPUs of nodes, and [network]"
                          " topology is %s; set topology = nodes with nic = gpu, or choose"
                          " packed, spread, random or given", c->topology);
  if (base_values_int (c->values, "network.nic") == 0)
    return sim_key_error (error, file, "cluster", "placement",
                          "rail placement needs a NIC per GPU (a rail per GPU index), and"
                          " [network] nic is node; set nic = gpu, or choose packed");
  int g = (int) base_values_int (c->values, "network.gpus_per_node");
  if (g <= 0)
    g = 8;  /* the nodes topology's default */
  int nodes = (H + g - 1) / g;
  g_autofree gboolean *used = g_new0 (gboolean, (gsize) nodes * g);
  for (int h = H; h < nodes * g; h++)
    used[h] = TRUE;  /* the last node's missing GPUs */
  int n = (int) c->jobs->len;
  for (int q = 0; q < n; q++)
    {
      int j = order[q];
      int size = need[j];
      int w = MIN (size, g);
      int rows = (size + w - 1) / w;
      g_autofree int *row_node = g_new (int, rows);
      g_autofree int *best = g_new (int, rows);
      int best_o = -1;
      for (int o = 0; o + w <= g; o++)
        {
          int r;
          for (r = 0; r < rows; r++)
            {
              int cnt = MIN (w, size - r * w);
              row_node[r] = -1;
              for (int k = 0; k < nodes && row_node[r] < 0; k++)
                {
                  gboolean ok = TRUE;
                  for (int p = 0; ok && p < r; p++)
                    ok = row_node[p] != k;
                  for (int l = o; ok && l < o + cnt; l++)
                    ok = !used[k * g + l];
                  if (ok)
                    row_node[r] = k;
                }
              if (row_node[r] < 0)
                break;
            }
          /* the offset whose first row lands on the lowest node */
          if (r == rows && (best_o < 0 || row_node[0] < best[0]))
            {
              best_o = o;
              memcpy (best, row_node, sizeof (int) * rows);
            }
        }
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      if (best_o < 0)
        return sim_key_error (error, file, "cluster", "placement",
                              "rail placement finds no nodes with the same %d free GPU indices"
                              " for job %s (%d hosts, %d GPUs per node); raise [cluster] hosts"
                              " or choose placement = packed", w, job->name, size, g);
      GArray *p = g_ptr_array_index (place, j);
      for (int i = 0; i < size; i++)
        {
          int h = best[i / w] * g + best_o + i % w;
          used[h] = TRUE;
          g_array_append_val (p, h);
        }
    }
  return TRUE;
}

/* The hosts each job needs into need[] and their sum into *sum, or FALSE
 * with *error where the jobs' host lists or counts cannot be placed. */
static gboolean
place_needs (const SimConfig *c, const char *file, int *need, gint64 *sum,
             GError **error)
{
  int n = (int) c->jobs->len;
  *sum = 0;
  for (int j = 0; j < n; j++)
    {
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      need[j] = sim_job_hosts_needed (job);
      *sum += need[j];
      if (job->hosts && c->placement != SIM_PLACE_GIVEN)
        {
          g_autofree char *section = g_strdup_printf ("job %s", job->name);
          return sim_key_error (error, file, section, "hosts",
                                "only [cluster] placement = given reads a job's hosts; set"
                                " placement = given or remove the list");
        }
    }
  if (*sum > SIM_MAX_HOSTS)
    return sim_key_error (error, file, "cluster", "workers",
                          "the jobs need %" G_GINT64_FORMAT " hosts together, more than %d;"
                          " use fewer workers", *sum, SIM_MAX_HOSTS);
  return TRUE;
}

GPtrArray *
sim_jobs_place (const SimConfig *c, const char *file, int *n_hosts, GError **error)
{
  g_return_val_if_fail (c->jobs && c->jobs->len > 0, NULL);
  int n = (int) c->jobs->len;
  g_autofree int *need = g_new (int, n);
  gint64 sum = 0;
  if (!place_needs (c, file, need, &sum, error))
    return NULL;
  int H = c->hosts > 0 ? (int) c->hosts : (int) sum;
  if (H < sum)
    {
      sim_key_error (error, file, "cluster", "hosts",
                     "%d hosts cannot hold the jobs, which need %" G_GINT64_FORMAT " together;"
                     " raise [cluster] hosts to %" G_GINT64_FORMAT " or more (0 = just enough)",
                     H, sum, sum);
      return NULL;
    }
  g_autoptr (GPtrArray) place = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (int j = 0; j < n; j++)
    g_ptr_array_add (place, g_array_new (FALSE, FALSE, sizeof (int)));
  g_autofree int *order = placement_order (c->jobs);
  g_autofree int *hosts = g_new (int, H);
  for (int h = 0; h < H; h++)
    hosts[h] = h;
  switch ((SimPlacement) c->placement)
    {
    case SIM_PLACE_GIVEN:
      if (!place_given (c, file, H, need, place, error))
        return NULL;
      break;
    case SIM_PLACE_RAIL:
      if (!place_rail (c, file, H, need, order, place, error))
        return NULL;
      break;
    case SIM_PLACE_RANDOM:
      {
        /* a stream of its own, so that no other draw moves it */
        EngRng rng;
        eng_rng_init (&rng, (guint64) c->seed, 0x706c616365ULL);
        for (int h = H - 1; h > 0; h--)
          {
            int k = (int) eng_rng_below (&rng, (guint64) h + 1);
            int t = hosts[h];
            hosts[h] = hosts[k];
            hosts[k] = t;
          }
      }
      /* then packed over the shuffled hosts */
      G_GNUC_FALLTHROUGH;
    case SIM_PLACE_PACKED:
      {
        int next = 0;
        for (int o = 0; o < n; o++)
          for (int i = 0; i < need[order[o]]; i++)
            g_array_append_val ((GArray *) g_ptr_array_index (place, order[o]), hosts[next++]);
        break;
      }
    case SIM_PLACE_SPREAD:
      {
        int h = 0;
        while (h < sum)
          for (int o = 0; o < n; o++)
            {
              GArray *p = g_ptr_array_index (place, order[o]);
              if ((int) p->len < need[order[o]])
                g_array_append_val (p, hosts[h++]);
            }
        break;
      }
    }
  *n_hosts = H;
  return g_steal_pointer (&place);
}

NetNetwork *
sim_jobs_network (const SimConfig *c, EngSim *sim, const GPtrArray *place, int n_hosts,
                  const char *file, GError **error)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (int h = 0; h < n_hosts; h++)
    g_ptr_array_add (names, NULL);
  for (guint j = 0; j < c->jobs->len; j++)
    {
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      const PolPolicyOps *ops = pol_lookup (job->c->policy);
      g_autoptr (GPtrArray) local = ops->host_names ((int) job->c->workers,
                                                     (int) job->c->servers);
      const GArray *p = g_ptr_array_index (place, j);
      for (guint i = 0; i < p->len; i++)
        names->pdata[g_array_index (p, int, i)]
          = g_strdup_printf ("%s/%s", job->name, (char *) g_ptr_array_index (local, i));
    }
  for (int h = 0; h < n_hosts; h++)
    if (!names->pdata[h])
      names->pdata[h] = g_strdup_printf ("idle%d", h);
  NetNetwork *net = sim_network_build_hosts (c, sim, names, file, error);
  if (net)
    /* a flow-class collective claims the whole network, which the other
     * jobs' traffic would break */
    net_network_set_flow_classes (net, FALSE);
  return net;
}

typedef struct JobsRun JobsRun;

/* One job in a run of several: what its recorder callbacks see. */
typedef struct {
  JobsRun *jr;
  const SimJob *job;
  int index;             /* in the file */
  int first_worker;      /* its workers' numbers in the iterations table */
  SimCluster *cl;
  gboolean done;         /* its iterations done (or its target reached) */
  double last_loss;
} JobCtx;

struct JobsRun {
  const SimConfig *c;
  SimTrace *trace;       /* NULL: no rows (a job alone) */
  gint64 run;
  const PolRecorder *extra;
  JobCtx *jobs;          /* (c->jobs->len) */
  SimUsage *usage;       /* the `usage` table's windows, or NULL */
};

/* What one job did in a run. */
typedef struct {
  gboolean ran;
  PolResult res;
} JobResult;

static void
job_iteration (gpointer ctx, int worker, gint64 iteration, double start, double end,
               double compute, double comm, double wait, gint64 staleness)
{
  JobCtx *j = ctx;
  JobsRun *jr = j->jr;
  if (jr->trace)
    sim_trace_iteration (jr->trace, jr->run, j->first_worker + worker, iteration, start, end,
                         compute, comm, wait, staleness);
  if (jr->extra && jr->extra->iteration)
    jr->extra->iteration (jr->extra->ctx, j->first_worker + worker, iteration, start, end,
                          compute, comm, wait, staleness);
}

static void
job_span (gpointer ctx, const char *actor, const char *kind, double start, double end,
          gint64 iteration, double bytes, const PolSpanDetail *detail)
{
  JobCtx *j = ctx;
  JobsRun *jr = j->jr;
  g_autofree char *name = g_strdup_printf ("%s/%s", j->job->name, actor);
  if (jr->usage && strcmp (kind, "compute") == 0)
    sim_usage_busy (jr->usage, j->index, start, end);
  if (jr->trace && sim_trace_wants (&sim_table_spans, jr->c->detail))
    sim_trace_span (jr->trace, jr->run, name, kind, start, end, iteration, bytes, detail);
  if (jr->extra && jr->extra->span)
    jr->extra->span (jr->extra->ctx, name, kind, start, end, iteration, bytes, detail);
}

static void
job_metric (gpointer ctx, double t, gint64 step, double loss, double accuracy, double consensus)
{
  JobCtx *j = ctx;
  JobsRun *jr = j->jr;
  const SimConfig *jc = j->job->c;
  if (jr->trace)
    sim_trace_metric_job (jr->trace, jr->run, j->job->name, t, step, loss, accuracy, consensus);
  if (jr->extra && jr->extra->metric)
    jr->extra->metric (jr->extra->ctx, t, step, loss, accuracy, consensus);
  j->last_loss = loss;
  if ((jc->target_loss > 0 && loss <= jc->target_loss)
      || (jc->target_accuracy > 0 && accuracy >= jc->target_accuracy))
    j->done = TRUE;
}

static void
job_progress (gpointer ctx, double t G_GNUC_UNUSED, gint64 done, gint64 total)
{
  JobCtx *j = ctx;
  if (done >= total)
    j->done = TRUE;
}

static void
job_param (gpointer ctx, const char *key, const char *value)
{
  JobCtx *j = ctx;
  JobsRun *jr = j->jr;
  g_autofree char *name = g_strdup_printf ("job.%s.%s", j->job->name, key);
  if (jr->trace)
    sim_trace_param (jr->trace, jr->run, name, value);
}

static void
job_mesh (gpointer ctx, const PolMeshRank *m)
{
  JobCtx *j = ctx;
  JobsRun *jr = j->jr;
  PolMeshRank r = *m;
  r.rank += j->first_worker;
  if (jr->trace && sim_trace_wants (&sim_table_mesh, jr->c->detail))
    sim_trace_mesh (jr->trace, jr->run, &r);
}

/* Starts job `data` at its arrival. */
static void
job_arrives (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED, gpointer data)
{
  JobCtx *j = data;
  j->cl->ops->start (j->cl->pol);
}

/* Starts the `active` of jr's n jobs and runs sim until they are all done,
 * it has nothing left to do, or `limit`.  Jobs arriving at 0 start at
 * once, in file order, as a run of one job starts its policy; the others
 * at their arrival.  A job done stops the engine (as a run of one job
 * would end): it goes on while another has work left. */
static void
jobs_run_engine (EngSim *sim, JobsRun *jr, const gboolean *active, int n, double limit)
{
  for (int j = 0; j < n; j++)
    if (active[j] && jr->jobs[j].job->arrival <= 0)
      jr->jobs[j].cl->ops->start (jr->jobs[j].cl->pol);
    else if (active[j])
      eng_schedule_at (sim, jr->jobs[j].job->arrival, job_arrives, NULL, &jr->jobs[j]);
  for (;;)
    {
      gboolean all = TRUE;
      for (int j = 0; j < n; j++)
        all = all && (!active[j] || jr->jobs[j].done);
      if (all || eng_sim_pending (sim) == 0 || eng_sim_now (sim) >= limit)
        break;
      eng_run (sim, limit);
    }
}

/* Assembles job jc of jr on `net` (its hosts as `place` gives them) and
 * engine `sim`: its recorder, its view of the network, its cluster.
 * FALSE with *error set when the job cannot run here. */
static gboolean
job_assemble (JobsRun *jr, JobCtx *jc, const GPtrArray *place, EngSim *sim,
              NetNetwork *net, GError **error)
{
  const SimConfig *kc = jc->job->c;
  PolRecorder rec = {
    .ctx = jc,
    .want_iterations = (jr->trace && sim_trace_wants (&sim_table_iterations, jr->c->detail))
                       || (jr->extra && jr->extra->want_iterations),
    .want_spans = (jr->trace && sim_trace_wants (&sim_table_spans, jr->c->detail))
                  || jr->usage || (jr->extra && jr->extra->want_spans),
    .iteration = job_iteration,
    .span = job_span,
    .metric = job_metric,
    .param = job_param,
    .progress = job_progress,
    .mesh = job_mesh,
  };
  const GArray *p = g_ptr_array_index (place, jc->index);
  NetNetwork *view = net_network_view_new (net, (int) p->len, (const int *) p->data);
  g_autoptr (GError) local = NULL;
  jc->cl = sim_cluster_new_on (kc, &rec, sim, view, &local);
  if (!jc->cl)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s (job %s)", local->message,
                   jc->job->name);
      return FALSE;
    }
  if (jc->cl->ckpt.on)
    return sim_key_error (error, jr->c->file, "failures", "mtbf",
                          "whole-job failures and checkpoints are not simulated for a job"
                          " of several (job %s); remove them from [failures]",
                          jc->job->name);
  return TRUE;
}

/* Runs the jobs `active` marks (all of c's, or one alone) together on one
 * engine and one cluster laid out as `place`; fills res[j] of each and
 * *events.  FALSE with *error set when a job cannot be assembled. */
static gboolean
run_together (const SimConfig *c, const GPtrArray *place, int n_hosts, const gboolean *active,
              SimTrace *trace, gint64 run, const PolRecorder *extra, JobResult *res,
              guint64 *events, double *end, GError **error)
{
  int n = (int) c->jobs->len;
  JobsRun jr = { .c = c, .trace = trace, .run = run, .extra = extra };
  jr.jobs = g_new0 (JobCtx, n);
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = sim_jobs_network (c, sim, place, n_hosts, c->file, error);
  gboolean ok = net != NULL;
  if (ok && trace && sim_trace_wants (&sim_table_usage, c->detail))
    {
      g_autofree const char **names = g_new (const char *, n);
      for (int j = 0; j < n; j++)
        names[j] = ((const SimJob *) g_ptr_array_index (c->jobs, j))->name;
      jr.usage = sim_usage_new (n, names, net);
      net_network_set_observer (net, sim_usage_transfer, jr.usage);
    }
  int first = 0;
  for (int j = 0; ok && j < n; j++)
    {
      JobCtx *jc = &jr.jobs[j];
      jc->jr = &jr;
      jc->job = g_ptr_array_index (c->jobs, j);
      jc->index = j;
      jc->first_worker = first;
      jc->last_loss = NAN;
      first += (int) jc->job->c->workers;
      if (!active[j])
        continue;
      ok = job_assemble (&jr, jc, place, sim, net, error);
    }
  if (ok)
    {
      jobs_run_engine (sim, &jr, active, n, c->time_limit > 0 ? c->time_limit : INFINITY);
      *events = eng_sim_events (sim);
      *end = eng_sim_now (sim);
      if (jr.usage)
        sim_usage_write (jr.usage, trace, run, *end);
      for (int j = 0; j < n; j++)
        if (active[j])
          {
            jr.jobs[j].cl->ops->finish (jr.jobs[j].cl->pol, &res[j].res);
            res[j].ran = TRUE;
          }
    }
  for (int j = 0; j < n; j++)
    sim_cluster_free (jr.jobs[j].cl);
  net_network_free (net);
  sim_usage_free (jr.usage);
  eng_sim_free (sim);
  g_free (jr.jobs);
  return ok;
}

/* s per round of job j in res: from its arrival to its last update. */
static double
iteration_time (const SimJob *job, const JobResult *r)
{
  if (!r->ran || r->res.rounds <= 0)
    return NAN;
  return (r->res.end_time - job->arrival) / (double) r->res.rounds;
}

gboolean
sim_jobs_run (const SimConfig *c, SimTrace *trace, gint64 run, const PolRecorder *extra,
              SimRunSummary *out, GError **error)
{
  gint64 t0 = g_get_monotonic_time ();
  int n = (int) c->jobs->len;
  int H = 0;
  g_autoptr (GPtrArray) place = sim_jobs_place (c, c->file, &H, error);
  if (!place)
    return FALSE;
  g_autofree gboolean *active = g_new (gboolean, n);
  g_autofree JobResult *shared = g_new0 (JobResult, n);
  g_autofree JobResult *alone = g_new0 (JobResult, n);
  for (int j = 0; j < n; j++)
    active[j] = TRUE;
  guint64 events = 0, ev;
  double end = 0, e;
  if (!run_together (c, place, H, active, trace, run, extra, shared, &events, &end, error))
    return FALSE;
  for (int j = 0; j < n; j++)
    {
      for (int k = 0; k < n; k++)
        active[k] = k == j;
      if (!run_together (c, place, H, active, NULL, 0, NULL, alone, &ev, &e, error))
        return FALSE;
    }
  memset (out, 0, sizeof *out);
  out->final_loss = NAN;
  out->final_accuracy = NAN;
  out->events = events;
  out->stop = "iterations";
  int first = 0;
  for (int j = 0; j < n; j++)
    {
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      const PolResult *r = &shared[j].res;
      if (r->rounds < job->c->iterations && r->reached_target == POL_TARGET_NONE)
        out->stop = "time_limit";
      out->sim_time = MAX (out->sim_time, r->end_time);
      out->iterations += r->rounds;
      out->updates += r->updates;
      out->samples += pol_lookup (job->c->policy)->no_model ? 0 : r->samples;
      out->compute += r->compute;
      out->comm += r->comm;
      out->wait += r->wait;
      const GArray *p = g_ptr_array_index (place, j);
      g_autoptr (GString) hosts = g_string_new (NULL);
      for (guint i = 0; i < p->len; i++)
        g_string_append_printf (hosts, "%s%d", i ? " " : "", g_array_index (p, int, i));
      double busy = r->compute + r->comm + r->wait;
      SimJobRow row = {
        .job = j, .name = job->name, .policy = job->c->policy, .priority = job->priority,
        .first_worker = first, .workers = (int) job->c->workers, .hosts = hosts->str,
        .arrival = job->arrival, .end = r->end_time, .iterations = r->rounds,
        .iteration_time = iteration_time (job, &shared[j]),
        .alone_time = iteration_time (job, &alone[j]),
        .comm_share = busy > 0 ? r->comm / busy : NAN,
        .final_loss = r->final_loss,
      };
      row.slowdown = row.iteration_time / row.alone_time;
      first += (int) job->c->workers;
      if (trace)
        sim_trace_job (trace, run, &row);
      if (r->rounds == 0 && job->c->iterations > 0 && g_strcmp0 (out->stop, "iterations") == 0)
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: [job %s]: the job ended without completing an iteration; check its"
                       " policy keys", c->file, job->name);
          return FALSE;
        }
    }
  out->wall_time = (double) (g_get_monotonic_time () - t0) / 1e6;
  return TRUE;
}
