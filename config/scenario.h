/*
 * scenario.h — scenario files: loading, units, validation, overrides, sweeps.
 *
 * A scenario is a GLib key file.  Every key dtsim knows is declared once in a
 * table (scenario.c) with its type, unit, default, bounds and documentation;
 * that table drives parsing, validation, the `params` trace rows and
 * docs/scenarios.md.  Unknown sections and keys are errors.  `--set
 * section.key=value` overrides a key (and removes it from the sweep when it is
 * swept); `--set sweep.section.key=a,b` sets a sweep.  The `[sweep]` section
 * maps `section.key` to comma-separated values; the runs are the cartesian
 * product, in the order the keys appear, the last key varying fastest.
 */
#ifndef DTSIM_CONFIG_SCENARIO_H
#define DTSIM_CONFIG_SCENARIO_H

#include <glib.h>

#include "base/keys.h"
#include "config/simconfig.h"
#include "policies/policy.h"

G_BEGIN_DECLS

/* The name of [trace] detail's value d, as a scenario writes it. */
const char *sim_detail_name (SimDetail d);
/* The name of the choice of value `value` of the enumerated key [section]
 * key, as a scenario writes it (aliases left out), or NULL. */
const char *sim_scenario_choice_name (const char *section, const char *key, int value);

/* Applies the arrival trace `text` (the text of file `csv`, [cluster]
 * arrivals; docs/cluster.md, "An arrival trace") to `jobs` (SimJob*): a
 * header job,arrival[,priority], then one line per job setting its
 * arrival (and priority) and params rows.  Blank lines and lines starting
 * with # are skipped; at most SIM_ARRIVALS_MAX_LINES lines of at most
 * SIM_ARRIVALS_MAX_LINE characters.  FALSE with a one-line
 * SIM_ERROR_INPUT "CSV line N [column K]: what; fix" (an unknown job with
 * the closest name) when the text is not such a trace; the jobs may then
 * hold some of its values. */
gboolean sim_arrivals_apply (GPtrArray *jobs, const char *text, const char *csv,
                             GError **error);

/* Loads `path`, applies the `sets` overrides ("section.key=value", NULL-
 * terminated, may be NULL), validates every key and expands the sweep.
 * Returns a GPtrArray of SimConfig* (one per sweep point, at least one) or
 * NULL with a SIM_ERROR_INPUT error whose message is one line naming the
 * file, the [section] key, what is wrong and how to fix it.  What only a
 * run's assembly can tell (the network a topology builds, whether the model
 * fits its device, the run's estimates) is sim_scenario_load()'s
 * (sim/load.h), which runs this first. */
GPtrArray *sim_scenario_parse (const char *path, const char *const *sets,
                               GError **error);

/* Writes the reference of every key (markdown table rows) to `out`. */
void sim_scenario_write_reference (GString *out);

/* One scenario key, as the reference describes it. */
typedef struct {
  const char *section, *key;
  const char *type;        /* "integer", "number", a unit ("s"), "a \\| b", ... */
  const char *def;         /* default as written; NULL: derived */
  const char *doc;         /* meaning (markdown), registry entries included */
  char **choices;          /* the names it accepts, NULL-terminated; NULL if free */
} SimKeyInfo;

/* Calls fn on every scenario key, in the reference's order. */
void sim_scenario_foreach_key (void (*fn) (const SimKeyInfo *k, gpointer ctx), gpointer ctx);

/* c's [failures] server crashes, paired up as `worker` and `at` are (one
 * entry of either list stands for all), with detect, recover and
 * checkpoint_every; out->list is allocated (free it with g_free). */
void sim_server_failures (const SimConfig *c, PolServerFailures *out);

G_END_DECLS

#endif
