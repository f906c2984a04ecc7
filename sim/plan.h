/*
 * plan.h — `dtsim plan`: a search over the layouts of a large model on a
 * given cluster (data x pipeline x tensor, ZeRO stage, micro-batch size,
 * schedule, recomputation), each candidate validated as `dtsim run` would
 * validate it (the scenario with --set overrides), ranked by an analytic
 * estimate, and the best few simulated with the event engine in-process.
 * docs/plan.md gives the search space, the estimate and the output.
 */
#ifndef DTSIM_SIM_PLAN_H
#define DTSIM_SIM_PLAN_H

#include <glib.h>

#include "config/metrics.h"

G_BEGIN_DECLS

/* The most candidates simulated (--top) and the most candidates a search
 * may enumerate before it is refused (bounds on untrusted options and
 * files: each candidate costs a scenario parse and a model build). */
#define SIM_PLAN_MAX_TOP 20
#define SIM_PLAN_MAX_CANDIDATES 20000
/* The micro-batch sizes tried: powers of two from 1 up to this. */
#define SIM_PLAN_MAX_MICRO 8

typedef struct {
  int top;               /* candidates simulated and printed, 1..SIM_PLAN_MAX_TOP */
  int tensor;            /* only this tensor size; 0 = every one */
  int stages;            /* only this many pipeline stages; 0 = every count */
  gboolean by_cost;      /* rank by cost per iteration ([cluster] price) */
  gboolean progress;     /* one line on stderr per phase (redrawn on a terminal) */
  int jobs;              /* simulations run at once (1: one after another) */
} SimPlanOptions;

/* One candidate layout and what the search learned of it. */
typedef struct {
  int D, P, T;           /* data-parallel replicas, pipeline stages, tensor ranks */
  int zero;              /* [policy] zero */
  int micro;             /* samples per micro-batch */
  int microbatches;      /* micro-batches per replica's batch */
  int chunks;            /* 1: 1f1b; v > 1: interleaved with v chunks */
  int recompute;         /* SimRecompute */
  char **sets;           /* the --set overrides that give this layout (NULL-terminated) */
  double estimate;       /* s per iteration, analytic */
  double bubble;         /* share of the estimate the pipeline bubble takes */
  double exposed;        /* share of the estimate spent in collectives and
                            transfers the compute does not hide */
  double peak_bytes;     /* device memory of the fullest stage's device */
  double memory;         /* bytes of device memory, 0 = not known */
  double time;           /* s per iteration, the event engine's (NAN: not simulated) */
  double cost;           /* per iteration, [cluster] price x workers x time / 3600 (NAN: no price) */
  SimMetrics metrics;    /* of the simulated run */
  char *why_pruned;      /* the first refusal's line, for a pruned candidate */
} SimPlanRow;

typedef struct {
  char *file;
  gint64 workers;
  gint64 global_batch;   /* samples per iteration over all replicas, held fixed */
  gint64 iterations;     /* [scenario] iterations each simulation runs */
  char *device;          /* catalog name or NULL */
  double price;          /* per device-hour, 0 = none */
  guint candidates;      /* layouts enumerated */
  guint pruned_rules;    /* refused by the scenario's rules (divisibility, ...) */
  guint pruned_memory;   /* refused because a stage does not fit device memory */
  GPtrArray *fit;        /* SimPlanRow *: every candidate that fits, by estimate */
  GPtrArray *ranked;     /* SimPlanRow * (borrowed from fit): the simulated, ranked */
  SimPlanRow *memory_example; /* a candidate pruned for memory (may be NULL) */
  gboolean by_cost;
} SimPlan;

/* Searches the layouts of the scenario at `path` (with `sets` applied, as
 * `dtsim run` applies them), estimates every one that passes the checks of
 * `dtsim run`, simulates the best opt->top and ranks them.  NULL with a
 * one-line SIM_ERROR_INPUT error naming the file and key on bad input (a
 * scenario that is not kind = pipeline, a sweep, a bound exceeded, no
 * layout that fits). */
SimPlan *sim_plan_new (const char *path, const char *const *sets, const SimPlanOptions *opt,
                       GError **error);
void sim_plan_free (SimPlan *p);

/* One point of a scenario's [sweep] (a cluster, a device, a price ...) as
 * plan searches it: its label ("cluster.device=a100 ...", "" for a
 * scenario without a sweep) and the --set overrides that fix it (the
 * user's, then each swept key's value), NULL-terminated. */
typedef struct {
  char *label;
  char **sets;
} SimPlanPoint;

/* The points of the scenario at `path` with `sets` applied, in the order
 * `dtsim run` runs them (GPtrArray of SimPlanPoint *, freed with it); NULL
 * with the loader's one-line error on a bad scenario. */
GPtrArray *sim_plan_points (const char *path, const char *const *sets, GError **error);

/* Writes several points' plans (plans[i] searched at points[i]): each
 * point's table (or, with json, {"file", "points": [{"point", "plan"}]})
 * and, with more than one point, which point's best layout trains
 * fastest and which costs least. */
void sim_plan_write_points (GPtrArray *points, SimPlan **plans, gboolean json, GString *out);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimPlan, sim_plan_free)

/* The ranked table (human), or one JSON object (json), appended to out. */
void sim_plan_write (const SimPlan *p, gboolean json, GString *out);

G_END_DECLS

#endif /* DTSIM_SIM_PLAN_H */
