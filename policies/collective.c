/*
 * collective.c — one collective operation, run `iterations` times: the
 * course's broadcast, scatter, gather, all-gather, all-to-all, reduce,
 * reduce-scatter and all-reduce as a scenario ([policy] kind = collective).
 *
 * The workers are the ranks (rank w on host worker<w>).  Every iteration
 * starts when the previous one has ended on every rank; each rank's buffer
 * holds `size` bytes of float32 (n = size / 4 elements).  With verify = true
 * the buffers are real: seeded values, fresh at every iteration, moved by
 * the algorithm over the simulated network, and the result is checked
 * element by element against the operation's definition (comm_check)
 * when the iteration ends; a difference is a bug of dtsim and aborts the
 * run.  With verify = false the same bytes are charged and no data move.
 * The policy trains nothing: the run loads no data set and runs no model.
 *
 * Trace: one iteration row per rank per operation (its time is all comm),
 * a send span over it, and every transfer in `messages`
 * (docs/policies.md, "Collective").
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"

/* verify = true moves real buffers: a copy of the inputs beside the
 * buffers, 2 x workers x size bytes in all, at most this many. */
#define COLL_MAX_VERIFY_BYTES (2.0 * 1024 * 1024 * 1024)

/* All-to-all makes p(p-1) transfers per operation, each a stored step at
 * both ends: at most as many as the parameter server's worker-server pairs
 * (4,096 ranks). */
#define COLL_MAX_ALLTOALL_PAIRS (4096.0 * 4096.0)

typedef struct {
  PolEnv env;
  const CommAlgorithm *alg;
  CommKind kind;
  int root;
  gsize n;                 /* floats per rank */
  int *hosts;              /* (workers) */
  float **bufs;            /* (workers) n floats each, or NULL */
  float **in;              /* (workers) the inputs of the iteration, or NULL */
  gint64 iter;             /* iteration in progress */
  double iter_start;       /* s */
  PolRun run;
} CollPolicy;

static void start_iteration (EngSim *sim, gpointer ctx, gpointer data);

/* Fresh seeded inputs for iteration `iter`: rank w's stream is
 * (seed, iter x workers + w), uniform in [-1, 1). */
static void
fill_inputs (CollPolicy *cp)
{
  int W = cp->env.workers;

  for (int w = 0; w < W; w++)
    {
      EngRng rng;

      eng_rng_init (&rng, cp->env.seed, (guint64) (cp->iter * W + w));
      for (gsize i = 0; i < cp->n; i++)
        cp->in[w][i] = (float) (2 * eng_rng_uniform (&rng) - 1);
      memcpy (cp->bufs[w], cp->in[w], cp->n * sizeof (float));
    }
}

/* The operation has ended on every rank: checks its result, records the
 * ranks' iteration and goes on to the next. */
static void
on_done (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollPolicy *cp = ctx;
  double now = eng_sim_now (sim);
  int W = cp->env.workers, rank;
  gsize elem;

  if (cp->bufs != NULL
      && !comm_check (cp->kind, W, cp->n, cp->root,
                          (const float *const *) cp->in,
                          (const float *const *) cp->bufs, &rank, &elem))
    g_error ("%s by %s, iteration %" G_GINT64_FORMAT ": rank %d element %"
             G_GSIZE_FORMAT " differs from the definition (a bug of dtsim)",
             comm_kind_name (cp->kind), cp->alg->name, cp->iter, rank,
             elem);
  for (int w = 0; w < W; w++)
    {
      pol_run_iteration (&cp->run, w, cp->iter, cp->iter_start, now, 0,
                         now - cp->iter_start, 0, 0);
      pol_worker_span (&cp->env, w, "send", cp->iter_start, now, cp->iter,
                       (double) cp->n * 4);
    }
  cp->run.updates += W;
  pol_run_progress (&cp->run, now);
  if (!pol_run_round_end (&cp->run, NULL,
                          cp->iter + 1 >= cp->env.iterations))
    return;
  cp->iter++;
  start_iteration (sim, cp, NULL);
}

/* The operation's arguments: the environment's, with its root, and
 * channels only for all-reduce. */
static CommArgs
coll_args (CollPolicy *cp)
{
  CommArgs a = pol_comm_args (&cp->env, cp->env.workers, cp->hosts, cp->bufs,
                                 cp->n, 0);

  a.root = cp->root;
  if (cp->kind != COMM_ALLREDUCE)
    a.channels = 0;
  return a;
}

static void
start_iteration (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  CollPolicy *cp = ctx;
  CommArgs a = coll_args (cp);
  g_autoptr (GError) error = NULL;

  cp->iter_start = eng_sim_now (sim);
  if (cp->bufs != NULL)
    fill_inputs (cp);
  /* validate checked that the algorithm does the operation */
  if (!comm_start (cp->alg, &a, cp->kind, on_done, cp, NULL, &error))
    g_error ("%s", error->message);
}

static PolPolicy *
coll_create (const PolEnv *env, GError **error)
{
  const CommAlgorithm *alg = pol_env_algorithm (env, error);
  CollPolicy *cp;
  int W = env->workers;

  if (!alg)
    return NULL;
  cp = g_new0 (CollPolicy, 1);
  cp->env = *env;
  cp->alg = alg;
  cp->kind = (CommKind) base_values_int (env->values, "policy.operation");
  cp->root = (int) base_values_int (env->values, "policy.root");
  cp->n = (gsize) (base_values_double (env->values, "policy.size") / 4);
  pol_run_init (&cp->run, &cp->env);
  cp->hosts = g_new (int, W);
  for (int w = 0; w < W; w++)
    cp->hosts[w] = w;
  if (base_values_int (env->values, "policy.verify"))
    {
      cp->bufs = g_new (float *, W);
      cp->in = g_new (float *, W);
      for (int w = 0; w < W; w++)
        {
          cp->bufs[w] = g_new (float, MAX (cp->n, 1));
          cp->in[w] = g_new (float, MAX (cp->n, 1));
        }
    }
  return (PolPolicy *) cp;
}

static void
coll_start (PolPolicy *p)
{
  CollPolicy *cp = (CollPolicy *) p;
  CommArgs a = coll_args (cp);

  pol_report_algorithm (&cp->env, cp->alg, comm_resolve (cp->alg, &a, cp->kind));
  pol_report_plan (&cp->env, cp->alg, &a, cp->kind);
  pol_run_start (&cp->run, NULL);
  eng_schedule (cp->env.sim, 0, start_iteration, cp, NULL);
}

static void
coll_finish (PolPolicy *p, PolResult *out)
{
  CollPolicy *cp = (CollPolicy *) p;

  pol_run_finish (&cp->run, NULL, out);
}

static void
coll_free (PolPolicy *p)
{
  CollPolicy *cp = (CollPolicy *) p;

  if (!cp)
    return;
  for (int w = 0; cp->bufs && w < cp->env.workers; w++)
    {
      g_free (cp->bufs[w]);
      g_free (cp->in[w]);
    }
  g_free (cp->bufs);
  g_free (cp->in);
  g_free (cp->hosts);
  g_free (cp);
}

/* In CommKind order (collectives.h). */
static const BaseChoice operation_choices[] = {
  { "all-reduce", COMM_ALLREDUCE, FALSE },
  { "reduce-scatter", COMM_REDUCE_SCATTER, FALSE },
  { "all-gather", COMM_ALLGATHER, FALSE },
  { "broadcast", COMM_BROADCAST, FALSE },
  { "reduce", COMM_REDUCE, FALSE },
  { "scatter", COMM_SCATTER, FALSE },
  { "gather", COMM_GATHER, FALSE },
  { "all-to-all", COMM_ALLTOALL, FALSE },
  { NULL, 0, FALSE },
};

static const BaseChoice bool_choices[] = {
  { "false", FALSE, FALSE }, { "true", TRUE, FALSE }, { NULL, 0, FALSE },
};

static const BaseKey coll_keys[] = {
  { "policy", "operation", BASE_KEY_ENUM, 0, "all-reduce", 0, 0, 0, operation_choices, 0,
    "kind = collective: the operation every rank runs (docs/collectives.md).", NULL },
  { "policy", "root", BASE_KEY_INT, 0, "0", 0, 1e9, 0, NULL, 0,
    "kind = collective: the rank that broadcast and scatter send from and reduce and gather collect on (and the driver of naive).", NULL },
  { "policy", "size", BASE_KEY_QUANTITY, BASE_UNIT_SIZE, "100MB", 4, BASE_BIG, 0, NULL, 0,
    "kind = collective: bytes of float32 in each rank's buffer.", NULL },
  { "policy", "verify", BASE_KEY_ENUM, 0, "true", 0, 0, 0, bool_choices, 0,
    "kind = collective: move real buffers and check each result against the operation's definition; false = timing only.", NULL },
  { .section = NULL },
};

/* The algorithm does the operation; the root is a rank; real buffers fit. */
static gboolean
coll_validate (PolCheck *chk, GError **error)
{
  CommKind kind = (CommKind) base_values_int (chk->values, "policy.operation");
  const char *name = base_values_string (chk->values, "policy.algorithm");
  const CommAlgorithm *alg = name ? comm_lookup (name) : NULL;
  gint64 root = base_values_int (chk->values, "policy.root");
  double size = base_values_double (chk->values, "policy.size");
  double bytes = 2 * (double) chk->workers * size;

  if (alg && !comm_does (alg, kind))
    {
      g_autoptr (GString) ok = g_string_new (NULL);

      for (const CommAlgorithm *const *a = comm_all (); *a; a++)
        if (comm_does (*a, kind))
          g_string_append_printf (ok, "%s%s", ok->len ? ", " : "", (*a)->name);
      return pol_key_error (error, "policy", "algorithm",
                            "%s does not do %s; use one that does: %s", alg->name,
                            comm_kind_name (kind), ok->str);
    }
  /* reduced in the switches: reduce-scatter and all-gather inside a node */
  if (alg && alg->in_switch && kind != COMM_ALLREDUCE
      && chk->workers > pol_gpus_per_node (chk->values))
    return pol_key_error (error, "policy", "algorithm",
                          "%s does %s inside one node only, not across %" G_GINT64_FORMAT
                          " nodes; use auto", alg->name, comm_kind_name (kind),
                          (chk->workers + pol_gpus_per_node (chk->values) - 1)
                          / pol_gpus_per_node (chk->values));
  if (kind == COMM_ALLTOALL
      && (double) chk->workers * (double) (chk->workers - 1) > COLL_MAX_ALLTOALL_PAIRS)
    return pol_key_error (error, "policy", "operation",
                          "all-to-all among %" G_GINT64_FORMAT " workers makes %.4g transfers "
                          "per operation, more than the %.4g a run may have; use at most 4096 "
                          "workers", chk->workers,
                          (double) chk->workers * (double) (chk->workers - 1),
                          COLL_MAX_ALLTOALL_PAIRS);
  if (kind != COMM_ALLREDUCE && base_values_int (chk->values, "policy.channels") > 1)
    return pol_key_error (error, "policy", "channels",
                          "channels apply to all-reduce only, not %s; set channels = 1 or "
                          "operation = all-reduce", comm_kind_name (kind));
  if (root >= chk->workers)
    return pol_key_error (error, "policy", "root",
                          "%" G_GINT64_FORMAT " is not a rank of the %" G_GINT64_FORMAT
                          " workers; use 0 to %" G_GINT64_FORMAT,
                          root, chk->workers, chk->workers - 1);
  if (base_values_int (chk->values, "policy.verify") && bytes > COLL_MAX_VERIFY_BYTES)
    return pol_key_error (error, "policy", "verify",
                          "real buffers for %" G_GINT64_FORMAT " ranks of %.4g bytes need %.4g "
                          "bytes of memory, more than the %.4g allowed; set verify = false "
                          "(timing only) or use a smaller size",
                          chk->workers, size, bytes, COLL_MAX_VERIFY_BYTES);
  return TRUE;
}

/* Bus bandwidth in GB/s as nccl-tests reports it: size / time, times the
 * share of the data each rank's link must carry in the best algorithm, so
 * that the figure compares with the link's rate whatever p is: 2(p-1)/p
 * for all-reduce, (p-1)/p for reduce-scatter, all-gather and all-to-all
 * (and scatter and gather), 1 for broadcast and reduce. */
static double
coll_bus_bandwidth (const BaseValues *values, gint64 workers, double seconds)
{
  CommKind kind = (CommKind) base_values_int (values, "policy.operation");
  double size = base_values_double (values, "policy.size");
  double p = (double) workers, factor;

  switch (kind)
    {
    case COMM_ALLREDUCE:
      factor = 2 * (p - 1) / p;
      break;
    case COMM_BROADCAST:
    case COMM_REDUCE:
      factor = 1;
      break;
    default:
      factor = (p - 1) / p;
      break;
    }
  return seconds > 0 ? size / seconds * factor / 1e9 : 0;
}

static const char *const coll_tags[] = { "collective" };

/* The operation once an iteration, every rank's transfers possibly in
 * flight at once; with verify, every rank's buffer, its input and the
 * expected result. */
static void
coll_work (const PolModelInfo *mi, PolWork *out)
{
  double W = (double) mi->workers;
  CommKind kind = (CommKind) base_values_int (mi->values, "policy.operation");
  gsize n = (gsize) (base_values_double (mi->values, "policy.size") / 4);
  /* auto counted as one channel: its count depends on the size */
  int C = (int) MAX (base_values_int (mi->values, "policy.channels"), 1);
  const char *alg = base_values_string (mi->values, "policy.algorithm");
  double messages = comm_messages (alg, kind, (int) W, n, C);
  /* an algorithm that sends everything at once (naive) and an all-to-all
   * put every transfer in flight; the others a transfer per rank and
   * channel at a time */
  const CommAlgorithm *ca = comm_lookup (alg);
  gboolean at_once = kind == COMM_ALLTOALL || (ca && ca->all_at_once);
  *out = (PolWork) { .messages = messages, .spans = W, .iteration_rows = W,
                     .in_flight = at_once ? messages : MIN (messages, W * C),
                     .state_bytes = base_values_int (mi->values, "policy.verify")
                                    ? 3 * W * 4.0 * (double) n : 0 };
}

const PolPolicyOps pol_collective_ops = {
  .work = coll_work,
  .name = "collective",
  .description = "one collective operation among the workers, run iterations times on real "
                 "buffers checked against its definition, or timing only",
  .source = "R. Thakur, R. Rabenseifner & W. Gropp: Optimization of collective "
            "communication operations in MPICH, IJHPCA 19(1), 2005",
  .keys = coll_keys,
  .no_model = TRUE,
  .updates_not_samples = TRUE,
  .validate = coll_validate,
  .figure = "bus GB/s",
  .figure_of = coll_bus_bandwidth,
  .tag_names = coll_tags,
  .n_tags = G_N_ELEMENTS (coll_tags),
  .host_names = pol_worker_host_names,
  .create = coll_create,
  .start = coll_start,
  .finish = coll_finish,
  .free = coll_free,
};
