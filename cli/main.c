/*
 * main.c — the `dtsim` command: run, check, plan, plot, export, report, keys, hardware,
 * calibrate, completion, man.
 *
 *   dtsim run FILE.ini [-o DB] [--set section.key=value]... [--json] [--quiet]
 *             [--jobs N] [--threads N] [--rank-timeout S]
 *   mpirun -n N dtsim run FILE.ini ...   (the sweep over MPI ranks: sweep/mpi.h)
 *   dtsim plot DB [-o DIR] [--format png|svg]
 *   dtsim export DB [--format csv|json|perfetto] [-o FILE] [--run N]
 *   dtsim report DB [-o FILE.html]
 *   dtsim check FILE.ini [--set section.key=value]...
 *   dtsim plan FILE.ini [--top K] [--by time|cost] [--tensor T] [--stages P] [--json]
 *   dtsim hardware [FILE]
 *   dtsim calibrate MEASURED.csv -o CATALOG.ini [--catalog BASE.ini] [--force]
 *
 * Exit codes: 0 success, 1 failure while running, 2 bad input (one line on
 * stderr names the file, the [section] key, what is wrong and the fix).
 */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/blas.h"
#include "kernels/cuda.h"
#include "netmodel/netmodel.h"
#include "policies/policy.h"
#include "sim/cluster.h"
#include "config/hardware.h"
#include "config/input.h"
#include "device/model.h"
#include "sweep/mpi.h"
#include "sim/calibrate.h"
#include "base/spell.h"
#include "config/docgen.h"
#include "sim/estimate.h"
#include "sim/jobs.h"
#include "views/export.h"
#include "views/report-html.h"
#include "views/plot.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "sim/trace.h"
#include "sim/load.h"
#include "sim/plan.h"
#include "sweep/launch.h"

static const char usage[] =
  "usage:\n"
  "  dtsim run FILE.ini [-o DB] [--set section.key=value]... [--json] [--quiet]\n"
  "            [--jobs N]    # sweep points at once (default: the online cores)\n"
  "            [--threads N] # host threads per point (default: the cores left)\n"
  "  mpirun -n N dtsim run FILE.ini ...  # the sweep's points over N MPI ranks\n"
  "            [--rank-timeout S]  # a rank silent this long is lost (default: 60)\n"
  "  dtsim check FILE.ini [--set section.key=value]...\n"
  "  dtsim plan FILE.ini [--top K] [--by time|cost] [--tensor T] [--stages P] [--json]\n"
  "                            # search data x pipeline x tensor layouts, simulate the best\n"
  "  dtsim plot DB [-o DIR] [--format png|svg]\n"
  "  dtsim export DB [--format csv|json|perfetto] [-o FILE] [--run N]\n"
  "                            # runs as a table (csv, json) or a timeline (perfetto)\n"
  "  dtsim report DB [-o FILE.html]  # one self-contained page: runs, params, figures\n"
  "  dtsim keys                # the reference of every scenario key (markdown)\n"
  "  dtsim hardware [FILE]     # the hardware catalog (built-in, or FILE) as tables\n"
  "  dtsim calibrate MEASURED.csv -o CATALOG.ini [--catalog BASE.ini] [--force]\n"
  "                            # fit device efficiencies to measured step times\n"
  "  dtsim completion bash     # the bash completion script (make install installs it)\n"
  "  dtsim man                 # the manual page, roff (make install installs it)\n"
  "  dtsim --version\n"
  "Scenario keys: docs/scenarios.md.  Trace schema: docs/trace.md.\n"
  "Hardware catalog: docs/hardware.md.\n";

/* Prints the error on one line: a control character that came from the
 * input (a newline in a --set value, a name) is shown escaped, e.g. \n. */
static int
die (GError *error, int code)
{
  g_autofree char *line = sim_input_printable (error->message);
  fprintf (stderr, "dtsim: %s\n", line);
  g_error_free (error);
  return code;
}

static int
bad_usage (const char *what)
{
  if (sim_mpi_launch_rank () == 0) /* under mpirun, once */
    fprintf (stderr, "dtsim: %s\n%s", what, usage);
  return 2;
}

/* Parses the options of a subcommand; leaves positional arguments in argv. */
static gboolean
parse (int *argc, char ***argv, GOptionEntry *entries, const char *what)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new (what);
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_help_enabled (ctx, TRUE);
  /* --help: what the command does and examples, as the manual page says */
  g_autofree char *name = g_strndup (what, strcspn (what, " "));
  const char *doc, *examples;
  if (sim_command_help (name, &doc, &examples))
    {
      g_auto (GStrv) lines = g_strsplit (examples, "\n", -1);
      g_autofree char *joined = g_strjoinv ("\n  ", lines);
      g_autofree char *description = g_strdup_printf ("Examples:\n  %s", joined);
      g_option_context_set_summary (ctx, doc);
      g_option_context_set_description (ctx, description);
    }
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error))
    {
      if (sim_mpi_launch_rank () == 0) /* under mpirun, once */
        fprintf (stderr, "dtsim: %s\n%s", error->message, usage);
      return FALSE;
    }
  return TRUE;
}

static int
cmd_run (int argc, char **argv)
{
  g_autofree char *db = NULL;
  g_auto (GStrv) sets = NULL;
  gboolean json = FALSE, quiet = FALSE;
  int jobs = -1;   /* -1: not given */
  int threads = -1;
  double rank_timeout = SIM_MPI_TIMEOUT;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &db, "Trace database to write (default: [trace] db, else results/NAME.db with NAME the [scenario] name)", "DB" },
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key",
      "section.key=value" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress and no table", NULL },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
      "Sweep points run at once (default: the online cores)", "N" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads,
      "Host threads each point's math may use (default: the online cores / jobs; "
      "the results are the same)", "N" },
    { "rank-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &rank_timeout,
      "Under mpirun: seconds of silence after which an MPI rank is lost (default: 60)", "S" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "run FILE.ini"))
    return 2;
  if (!(rank_timeout > 0) || rank_timeout > 1e6)
    return bad_usage ("--rank-timeout: needs a number of seconds above 0 (default: 60)");
  if (jobs == 0 || jobs < -1)
    return bad_usage ("--jobs: needs a number of points at least 1 (default: the online cores)");
  if (threads == 0 || threads < -1)
    return bad_usage ("--threads: needs a number of threads at least 1 "
                      "(default: the online cores / jobs)");
  if (argc != 2)
    return bad_usage ("run needs exactly one scenario file");
  SimRunOptions opt = { .db = db, .json = json, .quiet = quiet, .jobs = jobs,
                        .threads = threads };
  GError *error = NULL;
  if (!sim_mpi_start (rank_timeout, &error))
    {
      /* every rank would say it: rank 0 does */
      if (sim_mpi_rank () > 0)
        {
          g_error_free (error);
          return 2;
        }
      return die (error, 2);
    }
  int code = sim_run_scenario (argv[1], (const char *const *) sets, &opt, &error);
  sim_mpi_end ();
  if (code != 0)
    return die (error, code);
  return 0;
}

/* dtsim check's list of runs, then what they will cost the host (memory
 * and events of the first run, trace size of all) against the bounds. */
static void
check_runs (GPtrArray *configs)
{
  GError *error = NULL;
  const SimConfig *c = g_ptr_array_index (configs, 0);
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *ci = g_ptr_array_index (configs, i);
      if (ci->infeasible)
        printf ("  run %u: %s: infeasible, will be recorded without running: %s\n", i + 1,
                ci->name, ci->infeasible);
      else
        printf ("  run %u: %s\n", i + 1, ci->name);
    }
  /* what the runs will cost the host, against the bounds */
  double trace = SIM_ESTIMATE_EMPTY_TRACE;
  for (guint i = 0; i < configs->len; i++)
    {
      const SimConfig *ci = g_ptr_array_index (configs, i);
      SimEstimate e;
      if (ci->infeasible || !sim_estimate (ci, &e, &error))
        {
          g_clear_error (&error);
          continue;
        }
      trace += e.trace_bytes;
      if (i == 0)
        printf ("host: %.4g GB of memory at most (max_memory %.4g GB: %.4g transfers in flight, "
                "%.4g GB of real math), %.4g events (max_events %.4g); trace rows: %.4g "
                "iterations, %.4g spans, %.4g messages\n",
                e.host_bytes / 1e9, ci->max_memory / 1e9, e.in_flight, e.math_bytes / 1e9,
                e.events, (double) ci->max_events, e.iteration_rows, e.spans, e.messages);
    }
  printf ("trace: about %.4g MB at detail %s (max_size %.4g MB)\n", trace / 1e6,
          sim_detail_name (c->detail), c->trace_max_size / 1e6);
}

/* dtsim check's line on what will do the math, as runs.kernel records it. */
static void
check_kernels (const SimConfig *c)
{
  g_autofree char *kernel = kern_backend_kernel_name (c->backend, c->reproducible_math);
  printf ("kernels: %s backend, %s%s\n", c->backend, kernel,
          c->reproducible_math ? " (reproducible: the same bits on every CPU)"
          : strcmp (c->backend, "cpu") == 0
            ? " (last bits depend on the CPU; [kernels] reproducible = true gives the"
              " same bits everywhere)"
            : " (last bits depend on the device)");
}

/* dtsim check's line on where the step of model M goes, by layer kind (the
 * roofline prices each kind at its own rate: docs/compute.md). */
static void
check_layer_kinds (const SimConfig *c, KernModel *m)
{
  g_autofree double *fwd = g_new (double, m->n_layers);
  g_autofree double *bwd = g_new (double, m->n_layers);
  sim_layer_seconds (c, m, (int) c->batch, fwd, bwd);
  double by_kind[KERN_LAYER_N_KINDS] = { 0 }, total = 0;
  for (int l = 0; l < m->n_layers; l++)
    {
      by_kind[m->layers[l].kind] += fwd[l] + bwd[l];
      total += fwd[l] + bwd[l];
    }
  g_autoptr (GString) line = g_string_new ("  step by layer kind:");
  for (int k = 0; k < KERN_LAYER_N_KINDS; k++)
    if (by_kind[k] > 0)
      g_string_append_printf (line, "%s %s %.4g s (%.0f%%)",
                              line->str[line->len - 1] == ':' ? "" : ",",
                              kern_layer_kind_name ((KernLayerKind) k), by_kind[k],
                              100 * by_kind[k] / total);
  printf ("%s\n", line->str);
}

/* dtsim check's line per share of model M on its own device: what the
 * memory check priced. */
static void
check_shares (const SimConfig *c, KernModel *m)
{
  int n;
  PolShares *plan;
  SimStageMemory *st = sim_shares_memory (c, m, &n, &plan);
  const double G = 1024.0 * 1024.0 * 1024.0;
  for (int s = 0; s < n; s++)
    {
      g_autofree char *layers = pol_share_layers (&plan->share[s]);
      printf ("  %s %d: layers %s, %" G_GSIZE_FORMAT " parameters; device memory "
              "%.4g GiB = parameters %.4g + gradients %.4g + optimizer state %.4g + "
              "activations %.4g (%d stashed micro-batches of %d samples%s) + reserve %.4g\n",
              plan->unit, s, layers, st[s].params, st[s].total / G,
              st[s].param_bytes / G, st[s].grad_bytes / G, st[s].opt_bytes / G,
              st[s].act_bytes / G, st[s].slots, st[s].microbatch,
              plan->share[s].chunks > 1 ? " in its chunks" : "", st[s].reserve / G);
    }
  g_free (st);
  pol_shares_free (plan);
}

/* dtsim check's line on what a worker's device holds, term by term, and
 * what ZeRO shards of it. */
static void
check_memory_terms (const SimConfig *c, KernModel *m)
{
  SimMemoryTerms t;
  sim_memory_terms (c, m, &t);
  const double G = 1024.0 * 1024.0 * 1024.0;
  g_autofree char *gathered = t.zero >= 3 ? g_strdup_printf (" + gathered parameters %.4g",
                                                             t.gathered / G)
                                          : g_strdup ("");
  static const char *const sharded[] = {
    "nothing sharded", "optimizer state sharded", "gradients and optimizer state sharded",
    "parameters, gradients and optimizer state sharded"
  };
  g_autofree char *experts = t.experts > 1
    ? g_strdup_printf ("an expert rank's share (the dense parameters and 1/%d of the "
                       "experts'; their activations at capacity_factor); ", t.experts)
    : g_strdup ("");
  g_autofree char *zero = pol_lookup (c->policy)->zero
    ? g_strdup_printf ("; %s%szero %d: %s over %" G_GINT64_FORMAT " data-parallel ranks",
                       t.tensor > 1 ? "a tensor rank's share; " : "", experts, t.zero,
                       sharded[t.zero], c->workers / t.tensor)
    : g_strdup ("");
  printf ("  device memory per worker: %.4g GiB = parameters %.4g + gradients %.4g + optimizer "
          "state %.4g%s + activations %.4g + reserve %.4g (%g + %g + %g bytes per "
          "parameter%s)\n",
          t.total / G, t.params / G, t.grads / G, t.state / G, gathered, t.activations / G,
          t.reserve / G, t.param_bytes, t.grad_bytes, t.state_bytes, zero);
}

/* The expert axis of dtsim check's layout line ([policy] experts > 1):
 * the D data-parallel ranks as D / EP x EP, and what an expert group's
 * all-to-alls move in a step at e bytes a value. */
static void
check_experts_layout (const SimConfig *c, const KernModel *m, gint64 D, double e,
                      GString *line)
{
  PolExperts ex = { .ep = 1 };
  if (pol_lookup (c->policy)->experts)
    pol_experts_of (c->values, m->layers, m->n_layers, &ex);
  if (ex.ep <= 1)
    return;
  double a2a = 0;
  for (int l = 0; l < m->n_layers; l++)
    if (pol_experts_first (m->layers, l))
      a2a += 4 * pol_experts_alltoall_floats (m->layers, l, &ex) * (double) c->batch;
  g_string_append_printf (line, " (%" G_GINT64_FORMAT " x %d expert ranks: %d of the %d "
                          "experts of a layer on each; a step's all-to-alls %.4g MB per "
                          "rank; %.3g%% of the tokens' expert choices dropped, the busiest "
                          "rank %.3g x an even share)", D / ex.ep, ex.ep,
                          ex.experts / ex.ep, ex.experts, a2a * e / 1e6, 100 * ex.dropped,
                          ex.load);
}

/* dtsim check's line on a data-parallel run's layout: ranks per axis, the
 * tensor groups and where they sit (inside one server of the topology?),
 * and what each axis moves in a step. */
static void
check_layout (const SimConfig *c, KernModel *m)
{
  int T = (int) base_values_int (c->values, "policy.tensor");
  /* a pipeline's stages: each tensor group holds a stage of a replica */
  gboolean stages = pol_lookup (c->policy)->shares != NULL;
  gint64 S = stages ? MAX (base_values_int (c->values, "policy.stages"), 1) : 1;
  gint64 D = c->workers / T / S, groups = c->workers / T;
  gint64 zero = base_values_int (c->values, "policy.zero");
  double e = sim_precision_mixed (c->precision) ? 2 : 4;
  g_autoptr (GString) line = g_string_new (NULL);
  g_string_append_printf (line, "  layout: %" G_GINT64_FORMAT " data-parallel rank%s", D,
                          D == 1 ? "" : "s");
  if (stages)
    g_string_append_printf (line, " x %" G_GINT64_FORMAT " pipeline stage%s", S,
                            S == 1 ? "" : "s");
  g_string_append_printf (line, " x %d tensor rank%s", T, T == 1 ? "" : "s");
  check_experts_layout (c, m, D, e, line);
  if (T > 1)
    {
      /* tensor groups are T consecutive workers: do they share a server? */
      EngSim *sim = eng_sim_new ();
      g_autoptr (GError) error = NULL;
      NetNetwork *net = sim_network_build (c, sim, "scenario", &error);
      gint64 across = 0;
      for (gint64 g = 0; net && g < groups; g++)
        for (int t = 1; t < T; t++)
          if (net_network_host_group (net, (int) (g * T + t))
              != net_network_host_group (net, (int) (g * T)))
            {
              across++;
              break;
            }
      gboolean servers = net_topology_lookup (c->topology)->servers;
      g_string_append_printf (line, "; tensor groups of %d consecutive workers%s%s", T,
                              !servers ? "" : !net ? ", placement unknown"
                              : across == 0 ? ", each inside one server"
                              : ", some across servers", "");
      if (servers && across > 0)
        g_string_append_printf (line, " (%" G_GINT64_FORMAT " of %" G_GINT64_FORMAT ")", across,
                                groups);
      if (net)
        net_network_free (net);
      eng_sim_free (sim);
      g_autofree PolTpSplit *split = g_new (PolTpSplit, MAX (m->n_layers, 1));
      if (pol_tensor_split (m->layers, m->n_layers, T, split, NULL))
        {
          int n;
          gboolean sequence = base_values_int (c->values, "policy.sequence_parallel") != 0;
          g_autofree gboolean *mask = sim_recompute_mask (c, m);
          g_autofree PolTpCollective *coll
            = pol_tensor_collectives (m->layers, m->n_layers, split, sequence, mask, &n);
          double values = 0;
          for (int i = 0; i < n; i++)
            values += coll[i].floats * (double) c->batch;
          /* a pipeline's replica runs its batch through its S groups */
          g_string_append_printf (line, "; a step's tensor collectives: %d %s, %.4g MB in all "
                                  "per %s", n, sequence ? "reduce-scatters and all-gathers"
                                                        : "all-reduces",
                                  values * e / 1e6, stages ? "replica" : "group");
        }
    }
  gsize P = m->ops->n_params (m);
  double g = base_values_int (c->values, "policy.gradient_precision") ? e : 4;
  g_string_append_printf (line, "; the data groups reduce %.4g MB of gradients a step in all (%s)",
                          g * (double) P / 1e6,
                          zero ? "reduce-scatter, then all-gather of the parameters"
                               : "all-reduce");
  printf ("%s\n", line->str);
}

/* dtsim check's lines on the model of C: one step's cost and the device
 * memory it needs, then the kernels, the layer kinds and the shares. */
static void
check_model (const SimConfig *c)
{
  KernModel *m = sim_model_new (c, NULL, NULL);
  if (!m)
    return;
  SimStepCost cost;
  sim_step_cost (c, m, &cost);
  gsize P = m->ops->n_params (m);
  double mem = sim_model_memory_bytes (c, m);
  g_autofree char *of = c->memory > 0
    ? g_strdup_printf (" of %.4g GiB%s%s", c->memory / (1024.0 * 1024.0 * 1024.0),
                       c->device ? " on " : "", c->device ? c->device : "")
    : g_strdup ("");
  g_autofree char *what
    = c->math ? g_strdup (c->workload ? c->workload : m->ops->name)
      : c->workload ? g_strdup_printf ("%s (timing only)", c->workload)
      : sim_model_kind (c)->math
        ? g_strdup_printf ("%s (timing only: [kernels] backend = none)", m->ops->name)
      : !sim_model_kind (c)->reads_workload
        ? g_strdup_printf ("%s (timing only)", sim_model_kind (c)->name)
        : g_strdup ("timing only ([model] params and flops)");
  printf ("model: %s, %d layer%s, %" G_GSIZE_FORMAT " parameters; step of batch %"
          G_GINT64_FORMAT ": %.6g s (serial %.6g s, host wait %.6g s, forward %.6g s), %.4g GFLOP; update %.6g s; "
          "device memory needed %s%.4g GiB%s\n",
          what, m->n_layers, m->n_layers == 1 ? "" : "s", P, c->batch, cost.step,
          cost.serial, cost.host_wait, cost.forward,
          (m->ops->flops_forward (m, (int) c->batch)
           + m->ops->flops_backward (m, (int) c->batch)) / 1e9,
          cost.update,
          pol_lookup (c->policy)->shares ? "by the whole model on one device " : "",
          mem / (1024.0 * 1024.0 * 1024.0), of);
  if (cost.host.input > 0 || cost.host.framework > 0)
    printf ("input pipeline: %d GPU%s of a server share %" G_GINT64_FORMAT " cores, loaders on %.4g cores per GPU; "
            "input %.6g s and framework %.6g s per step beside the device's %.6g s: the "
            "step waits %.6g s for its host\n",
            cost.host.gpus, cost.host.gpus == 1 ? "" : "s", c->host_cores, cost.host.loaders,
            cost.host.input, cost.host.framework, cost.forward + cost.backward,
            cost.host_wait);
  if (!pol_lookup (c->policy)->shares)
    check_memory_terms (c, m);
  if (pol_lookup (c->policy)->zero)
    check_layout (c, m);
  if (c->math)
    check_kernels (c);
  if (c->step_time < 0 && c->memory_bandwidth > 0 && m->n_layers > 0)
    check_layer_kinds (c, m);
  check_shares (c, m);
  g_autofree char *placement = sim_model_describe (c, m);
  if (placement)
    fputs (placement, stdout);
  sim_step_cost_clear (&cost);
  kern_model_free (m);
}

/* dtsim check's line on a job that fails (sim/checkpoint.h): its MTBF,
 * the checkpoint's size, write and restart times, Young's and Daly's
 * intervals and the first-order expected waste at the run's interval.
 * FALSE with *error set where the plan breaks a rule (sim_ckpt_validate). */
static gboolean
check_failures (const SimConfig *c, GError **error)
{
  if (!(c->fail_mtbf > 0 || c->fail_link_mtbf > 0 || c->fail_job_at->len > 0))
    return TRUE;
  KernModel *m = sim_model_new (c, NULL, NULL);
  EngSim *sim = eng_sim_new ();
  NetNetwork *net = sim_network_build (c, sim, c->file, error);
  if (!net)
    {
      eng_sim_free (sim);
      if (m)
        kern_model_free (m);
      return FALSE;
    }
  SimCkptPlan p;
  sim_ckpt_plan (c, m, net_network_n_links (net), &p);
  net_network_free (net);
  eng_sim_free (sim);
  if (m)
    kern_model_free (m);
  if (!sim_ckpt_validate (c, &p, error))
    return FALSE;
  printf ("failures: %g devices and %g cables, job MTBF M = %.4g s (%.4g h); checkpoint of "
          "%.4g GB written in C = %.4g s, restart R = %.4g s; Young's interval sqrt(2CM) = "
          "%.4g s (Daly's higher-order %.4g s); at the interval of %.4g s (%s) the expected "
          "waste C/tau + tau/(2M) + R/M is %.2f%% of the useful time (goodput %.2f%%)\n",
          p.devices, p.cables, p.mtbf, p.mtbf / 3600.0, p.size / 1e9, p.write, p.restart,
          p.young, p.daly, p.interval, c->ckpt_interval > 0 ? "given" : BASE_KEY_AUTO_NAME,
          100.0 * p.waste, 100.0 / (1.0 + p.waste));
  return TRUE;
}


/* dtsim check's lines about the jobs of a scenario of several: their
 * placement on the H hosts of the cluster and each job's hosts (the first
 * 16, then how many more). */
static void
check_jobs (const SimConfig *c, const GPtrArray *place, int H)
{
  printf ("jobs: %u on a cluster of %d hosts, placement %s\n", c->jobs->len, H,
          sim_scenario_choice_name ("cluster", "placement", c->placement));
  for (guint j = 0; j < c->jobs->len; j++)
    {
      const SimJob *job = g_ptr_array_index (c->jobs, j);
      const GArray *hosts = g_ptr_array_index (place, j);
      GString *list = g_string_new (NULL);
      for (guint i = 0; i < MIN (hosts->len, 16u); i++)
        g_string_append_printf (list, " %d", g_array_index (hosts, int, i));
      if (hosts->len > 16)
        g_string_append_printf (list, " and %u more", hosts->len - 16);
      printf ("  %s: %" G_GINT64_FORMAT " workers, kind = %s, arrives at %g s, priority %"
              G_GINT64_FORMAT "; hosts%s\n", job->name, job->c->workers, job->c->policy,
              job->arrival, job->priority, list->str);
      g_string_free (list, TRUE);
    }
}
static int
cmd_check (int argc, char **argv)
{
  g_auto (GStrv) sets = NULL;
  GOptionEntry entries[] = {
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key",
      "section.key=value" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "check FILE.ini"))
    return 2;
  if (argc != 2)
    return bad_usage ("check needs exactly one scenario file");
  GError *error = NULL;
  g_autoptr (GPtrArray) configs = sim_scenario_load (argv[1], (const char *const *) sets, &error);
  if (!configs)
    return die (error, 2);
  const SimConfig *c = g_ptr_array_index (configs, 0);
  printf ("%s: valid, %u run%s, trace to %s\n", argv[1], configs->len,
          configs->len == 1 ? "" : "s", c->db);
  check_runs (configs);
  const NetTopology *t = net_topology_lookup (c->topology);
  const PolPolicyOps *p = pol_lookup (c->policy);
  g_autoptr (GPtrArray) names = NULL;
  if (c->jobs && c->jobs->len > 0)
    {
      /* several jobs: the cluster holds them all, laid out as placed */
      int H = 0;
      g_autoptr (GPtrArray) place = sim_jobs_place (c, argv[1], &H, &error);
      if (!place)
        return die (error, 2);
      check_jobs (c, place, H);
      names = g_ptr_array_new_with_free_func (g_free);
      for (int h = 0; h < H; h++)
        g_ptr_array_add (names, g_strdup_printf ("host%d", h));
    }
  else
    names = p->host_names ((int) c->workers, (int) c->servers);
  NetTopologyParams tp = sim_topology_params (c, names);
  g_autofree char *summary = t->summary ? t->summary (&tp) : NULL;
  printf ("network: %s Contention: %s. Flow classes: %s.%s%s\n",
          summary ? summary : t->description,
          sim_scenario_choice_name ("network", "contention", c->contention),
          sim_scenario_choice_name ("network", "flow_classes", c->flow_classes),
          c->links ? " Link overrides: " : "",
          c->links ? c->links : "");
  /* a timing-only run computes no gradient, whatever the policy's words */
  printf ("policy: %s: %s%s\n", p->name, p->description,
          c->math ? "" : " (here timing only: no gradient is computed, only its time)");
  /* what one step costs on the device (first run) */
  check_model (c);
  if (!check_failures (c, &error))
    return die (error, 2);
  return 0;
}

static int
cmd_plan (int argc, char **argv)
{
  g_auto (GStrv) sets = NULL;
  g_autofree char *by = NULL;
  gboolean json = FALSE, quiet = FALSE;
  int top = 5, tensor = 0, stages = 0, jobs = 0;
  GOptionEntry entries[] = {
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key",
      "section.key=value" },
    { "top", 'k', 0, G_OPTION_ARG_INT, &top, "Layouts simulated and ranked (default: 5)", "K" },
    { "by", 0, 0, G_OPTION_ARG_STRING, &by, "Rank by time (default) or cost", "time|cost" },
    { "tensor", 0, 0, G_OPTION_ARG_INT, &tensor, "Only layouts of tensor size T", "T" },
    { "stages", 0, 0, G_OPTION_ARG_INT, &stages, "Only layouts of P pipeline stages", "P" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress lines", NULL },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
      "Layouts simulated at once (default: the online cores)", "N" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "plan FILE.ini"))
    return 2;
  if (top < 1 || top > SIM_PLAN_MAX_TOP)
    return bad_usage ("--top: needs a number of layouts from 1 to 20 (default: 5)");
  if (by && strcmp (by, "time") != 0 && strcmp (by, "cost") != 0)
    return bad_usage ("--by: rank by time or cost (default: time)");
  if (tensor < 0 || tensor > SIM_MAX_HOSTS || stages < 0 || stages > SIM_MAX_HOSTS)
    return bad_usage ("--tensor, --stages: need a size of 1 or more that divides the workers");
  if (jobs < 0 || jobs > SIM_PLAN_MAX_TOP)
    return bad_usage ("--jobs: needs a number of simulations at once from 1 to 20 "
                      "(default: the online cores)");
  if (jobs == 0)
    jobs = (int) MIN (g_get_num_processors (), SIM_PLAN_MAX_TOP);
  if (argc != 2)
    return bad_usage ("plan needs exactly one scenario file");
  SimPlanOptions opt = { .top = top, .tensor = tensor, .stages = stages,
                         .by_cost = by && strcmp (by, "cost") == 0, .progress = !quiet,
                         .jobs = jobs };
  GError *error = NULL;
  g_autoptr (GPtrArray) points = sim_plan_points (argv[1], (const char *const *) sets, &error);
  if (!points)
    return die (error, 2);
  /* a sweep (clusters, devices, prices): one search per point */
  g_autofree SimPlan **plans = g_new0 (SimPlan *, points->len);
  int code = 0;
  for (guint i = 0; i < points->len && code == 0; i++)
    {
      const SimPlanPoint *pt = g_ptr_array_index (points, i);
      if (points->len > 1 && !quiet)
        fprintf (stderr, "plan: point %u of %u: %s\n", i + 1, points->len, pt->label);
      plans[i] = sim_plan_new (argv[1], (const char *const *) pt->sets, &opt, &error);
      if (!plans[i])
        code = die (error, 2);
    }
  if (code == 0)
    {
      g_autoptr (GString) out = g_string_new (NULL);
      sim_plan_write_points (points, plans, json, out);
      fputs (out->str, stdout);
    }
  for (guint i = 0; i < points->len; i++)
    g_clear_pointer (&plans[i], sim_plan_free);
  return code;
}

static int
cmd_plot (int argc, char **argv)
{
  g_autofree char *dir = NULL, *format = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &dir, "Folder for the figures", "DIR" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format, "png (default) or svg", "FORMAT" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "plot DB"))
    return 2;
  if (argc != 2)
    return bad_usage ("plot needs exactly one trace database");
  GError *error = NULL;
  int code = sim_plot (argv[1], dir, format ? format : "png", &error);
  if (code != 0)
    return die (error, code);
  return 0;
}

static int
cmd_export (int argc, char **argv)
{
  g_autofree char *out = NULL, *format = NULL;
  gint64 run = 0;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "File to write (default: standard output)",
      "FILE" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format,
      "csv (default): one row per run; json: the same rows; perfetto: a timeline for"
      " ui.perfetto.dev", "FORMAT" },
    { "run", 0, 0, G_OPTION_ARG_INT64, &run, "Export run N only (default: every run)", "N" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "export DB"))
    return 2;
  if (argc != 2)
    return bad_usage ("export needs exactly one trace database");
  if (run < 0)
    return bad_usage ("--run: a run id is 1 or more");
  GError *error = NULL;
  int code = sim_export (argv[1], format ? format : "csv", out, run, &error);
  if (code != 0)
    return die (error, code);
  return 0;
}

static int
cmd_report (int argc, char **argv)
{
  g_autofree char *out = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &out,
      "HTML file to write (default: the database's path with .html)", "FILE" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "report DB"))
    return 2;
  if (argc != 2)
    return bad_usage ("report needs exactly one trace database");
  GError *error = NULL;
  int code = sim_report_html (argv[1], out, &error);
  if (code != 0)
    return die (error, code);
  return 0;
}

static int
cmd_hardware (int argc, char **argv)
{
  GOptionEntry entries[] = { { NULL } };
  if (!parse (&argc, &argv, entries, "hardware [FILE]"))
    return 2;
  if (argc > 2)
    return bad_usage ("hardware takes at most one catalog file");
  GError *error = NULL;
  g_autoptr (SimCatalog) catalog = sim_catalog_load (argc == 2 ? argv[1] : NULL, &error);
  if (!catalog)
    return die (error, 2);
  g_autoptr (GString) out = g_string_new (NULL);
  sim_catalog_write_tables (catalog, out);
  fputs (out->str, stdout);
  return 0;
}

static int
cmd_calibrate (int argc, char **argv)
{
  g_autofree char *out = NULL, *base = NULL;
  gboolean force = FALSE;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Calibrated catalog to write",
      "CATALOG.ini" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &force,
      "Write the catalog even when the fit predicts the steps worse than the base", NULL },
    { "catalog", 0, 0, G_OPTION_ARG_FILENAME, &base,
      "Catalog to start from (default: the built-in one)", "BASE.ini" },
    { NULL }
  };
  if (!parse (&argc, &argv, entries, "calibrate MEASURED.csv"))
    return 2;
  if (argc != 2)
    return bad_usage ("calibrate needs exactly one file of measured steps "
                      "(device,precision,workload,batch,seconds[,optimizer])");
  if (!out)
    return bad_usage ("calibrate needs -o CATALOG.ini, the catalog to write");
  GError *error = NULL;
  g_autoptr (GString) report = g_string_new (NULL);
  if (!sim_calibrate (argv[1], base, out, force, report, &error))
    {
      fputs (report->str, stdout);  /* the table that shows why, when there is one */
      return die (error, 2);
    }
  fputs (report->str, stdout);
  return 0;
}

/* --help of the commands without options (keys, man, completion): what
 * they do and examples; FALSE when this is not such a call. */
static gboolean
plain_help (const char *cmd, int argc, char **argv)
{
  if (!(strcmp (cmd, "keys") == 0 || strcmp (cmd, "man") == 0 || strcmp (cmd, "completion") == 0)
      || argc < 3 || (strcmp (argv[2], "--help") != 0 && strcmp (argv[2], "-h") != 0))
    return FALSE;
  const char *doc, *examples;
  sim_command_help (cmd, &doc, &examples);
  g_auto (GStrv) lines = g_strsplit (examples, "\n", -1);
  g_autofree char *joined = g_strjoinv ("\n  ", lines);
  printf ("Usage:\n  dtsim %s%s\n\n%s\n\nExamples:\n  %s\n", cmd,
          strcmp (cmd, "completion") == 0 ? " bash" : "", doc, joined);
  return TRUE;
}

/* Exit status 2 for a command that is none, with the one meant. */
static int
unknown_command (const char *cmd)
{
  BaseSpell sp;
  base_spell_init (&sp, cmd);
  for (const char *const *n = sim_command_names (); *n; n++)
    base_spell_offer (&sp, *n);
  const char *best = base_spell_best (&sp);
  g_autofree char *msg = best ? g_strdup_printf ("unknown command '%s'; did you mean %s?", cmd,
                                                 best)
                              : g_strdup_printf ("unknown command '%s'", cmd);
  return bad_usage (msg);
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  /* Each simulated worker's products are small, and one thread gives the
   * same float results on every host; OPENBLAS_NUM_THREADS still wins.
   * Applied when OpenBLAS is opened, which a timing-only run never does. */
  if (!g_getenv ("OPENBLAS_NUM_THREADS"))
    kern_blas_set_threads (1);
  if (argc < 2)
    return bad_usage ("no command given");
  const char *cmd = argv[1];
  if (strcmp (cmd, "--version") == 0 || strcmp (cmd, "version") == 0)
    {
      g_autofree char *blas = kern_openblas_describe ();
      printf ("dtsim %s (trace schema %d, CUDA devices: %d)\n"
              "real math on the CPU: fixed-order products (reproducible, the default); "
              "with [kernels] reproducible = false: %s\n",
              PACKAGE_VERSION, SIM_TRACE_SCHEMA_VERSION, kern_cuda_device_count (), blas);
      return 0;
    }
  if (strcmp (cmd, "--help") == 0 || strcmp (cmd, "help") == 0 || strcmp (cmd, "-h") == 0)
    {
      fputs (usage, stdout);
      return 0;
    }
  if (plain_help (cmd, argc, argv))
    return 0;
  if (strcmp (cmd, "keys") == 0)
    {
      g_autoptr (GString) ref = g_string_new (NULL);
      sim_scenario_write_reference (ref);
      fputs (ref->str, stdout);
      return 0;
    }
  if (strcmp (cmd, "man") == 0)
    {
      g_autoptr (GString) page = g_string_new (NULL);
      sim_write_man (page);
      fputs (page->str, stdout);
      return 0;
    }
  if (strcmp (cmd, "completion") == 0)
    {
      if (argc != 3 || strcmp (argv[2], "bash") != 0)
        return bad_usage ("completion: give the shell: dtsim completion bash");
      g_autoptr (GString) script = g_string_new (NULL);
      sim_write_bash_completion (script);
      fputs (script->str, stdout);
      return 0;
    }
  argv[1] = argv[0];
  if (strcmp (cmd, "run") == 0)
    return cmd_run (argc - 1, argv + 1);
  if (strcmp (cmd, "check") == 0)
    return cmd_check (argc - 1, argv + 1);
  if (strcmp (cmd, "plan") == 0)
    return cmd_plan (argc - 1, argv + 1);
  if (strcmp (cmd, "plot") == 0)
    return cmd_plot (argc - 1, argv + 1);
  if (strcmp (cmd, "export") == 0)
    return cmd_export (argc - 1, argv + 1);
  if (strcmp (cmd, "report") == 0)
    return cmd_report (argc - 1, argv + 1);
  if (strcmp (cmd, "hardware") == 0)
    return cmd_hardware (argc - 1, argv + 1);
  if (strcmp (cmd, "calibrate") == 0)
    return cmd_calibrate (argc - 1, argv + 1);
  return unknown_command (cmd);
}
