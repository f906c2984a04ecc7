/*
 * launch.c — `dtsim run`: loads the scenario, checks the output path, runs
 * the points (sweep/sweep.c), puts the database in place and prints the
 * report (sim/report.c).  Under mpirun, ranks other than 0 run the points
 * rank 0 hands them instead (sweep/mpi.h).
 */
#include "config.h"

#include <glib/gstdio.h>

#include "sweep/launch.h"
#include "sweep/mpi.h"
#include "sweep/sweep.h"
#include "sim/load.h"
#include "sim/report.h"

/* The folder of the output database `db`, made where dtsim makes it: the
 * default results/ folder, and the folder -o names when its parent exists
 * (as mkdir would, and as plot -o does).  FALSE with an input error when it
 * is missing and may not be made. */
static gboolean
output_folder (const char *db, const char *dir, const char *path, const SimRunOptions *opt,
               GError **error)
{
  if (g_file_test (dir, G_FILE_TEST_IS_DIR))
    return TRUE;
  g_autofree char *parent = g_path_get_dirname (dir);
  if (!opt->db && g_str_has_prefix (db, "results/") && g_mkdir_with_parents (dir, 0755) == 0)
    return TRUE;
  if (opt->db && g_file_test (parent, G_FILE_TEST_IS_DIR) && g_mkdir (dir, 0755) == 0)
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
               "%s: directory '%s' does not exist%s; create it or choose another path",
               opt->db ? "-o" : path, dir, opt->db ? " and neither does its parent" : "");
  return FALSE;
}

/* After the points ran: the new file replaces the old one only when complete
 * and worth it (every point recorded, done or failed, and at least one
 * done), then the report.  Returns the exit code. */
static int
finish (SimTrace *trace, GPtrArray *configs, SimRunSummary *sums, GError **errors,
        guint n_ok, const char *db, const char *dir, const SimRunOptions *opt, GError **error)
{
  guint n = configs->len;
  gboolean failed = FALSE;
  for (guint i = 0; i < n; i++)
    failed = failed || errors[i] != NULL;
  g_autoptr (GError) db_error = NULL;
  if (!sim_trace_ok (trace, &db_error))
    {
      sim_trace_abandon (trace);
      /* when the folder went away, so did the database that was there */
      if (g_file_test (dir, G_FILE_TEST_IS_DIR))
        g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s; %s was left as it was",
                     db_error->message, db);
      else
        g_propagate_error (error, g_steal_pointer (&db_error));
      return 1;
    }
  if (n_ok == 0)
    {
      sim_trace_abandon (trace);
      return sim_report_failures (configs, errors, db, FALSE, error);
    }
  if (!sim_trace_close (trace, error))
    return 1;
  int code = 0;
  if (failed)
    code = sim_report_failures (configs, errors, db, TRUE, error);
  /* the database holds every point: --json tells each one's status */
  if (opt->json)
    sim_report_json (configs, sums, errors, db);
  else if (!opt->quiet && !failed)
    sim_report_table (configs, sums, db);
  return code;
}

int
sim_run_scenario (const char *path, const char *const *sets,
                  const SimRunOptions *opt, GError **error)
{
  if (sim_mpi_rank () > 0)
    {
      /* a worker of rank 0's sweep: it reports what went wrong here */
      g_autoptr (GError) problem = NULL;
      g_autoptr (GPtrArray) mine = sim_scenario_load (path, sets, &problem);
      return sim_sweep_serve (mine, path, problem ? problem->message : NULL, opt);
    }
  g_autoptr (GPtrArray) configs = sim_scenario_load (path, sets, error);
  if (!configs)
    return 2;
  const SimConfig *first = g_ptr_array_index (configs, 0);
  const char *db = opt->db ? opt->db : first->db;
  g_autofree char *dir = g_path_get_dirname (db);
  g_autofree char *what = opt->db ? g_strdup ("-o") : g_strdup_printf ("%s: [trace] db", path);
  if (!opt->db && !first->db[0])
    return 2;
  if (!output_folder (db, dir, path, opt, error))
    return 2;
  /* only a dtsim trace is replaced; checked before anything runs */
  if (!sim_trace_check_target (db, what, error))
    return 2;
  /* refused (exit 2) while another run writes the same database */
  SimTrace *trace = sim_trace_open_run (db, path, error);
  if (!trace)
    return error && g_error_matches (*error, SIM_ERROR, SIM_ERROR_INPUT) ? 2 : 1;
  guint n = configs->len;
  g_autofree SimRunSummary *sums = g_new0 (SimRunSummary, n);
  g_autofree GError **errors = g_new0 (GError *, n);
  guint n_ok = sim_sweep_run (configs, path, trace, opt, sums, errors);
  int code = finish (trace, configs, sums, errors, n_ok, db, dir, opt, error);
  for (guint i = 0; i < n; i++)
    g_clear_error (&errors[i]);
  return code;
}
