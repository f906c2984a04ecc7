/*
 * util.c — helpers shared by the simulation tests (see util.h).
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

#include "sim/scenario.h"
#include "tests/util.h"

/* Loads `text` through a temporary file t.ini; the file is gone after. */
static GPtrArray *
load_text (const char *text, const char *const *sets, GError **error)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  GPtrArray *configs = sim_scenario_load (path, sets, error);
  g_unlink (path);
  g_rmdir (dir);
  return configs;
}

GPtrArray *
test_load_scenario_text (const char *text, const char *const *sets)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = load_text (text, sets, &error);
  g_assert_no_error (error);
  return configs;
}

char *
test_load_scenario_error (const char *text)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = load_text (text, NULL, &error);
  g_assert_null (configs);
  g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
  g_assert_nonnull (strstr (error->message, "t.ini"));
  g_assert_null (strchr (error->message, '\n'));
  return g_strdup (error->message);
}

int
test_run_dtsim_argv (const char *cwd, char **out, char **err, const char *const *args)
{
  const char *bin = g_getenv ("DTSIM_BIN");
  g_assert_nonnull (bin);
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) bin);
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (cwd, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               out, err, &status, &error));
  g_assert_no_error (error);
  g_ptr_array_unref (argv);
  g_assert_true (WIFEXITED (status));
  return WEXITSTATUS (status);
}

int
test_run_dtsim (const char *cwd, char **out, char **err, const char *first, ...)
{
  GPtrArray *args = g_ptr_array_new ();
  va_list ap;
  va_start (ap, first);
  for (const char *a = first; a; a = va_arg (ap, const char *))
    g_ptr_array_add (args, (char *) a);
  va_end (ap);
  g_ptr_array_add (args, NULL);
  int status = test_run_dtsim_argv (cwd, out, err, (const char *const *) args->pdata);
  g_ptr_array_unref (args);
  return status;
}

void
test_assert_close (double a, double b, double rel)
{
  if (fabs (a - b) > rel * MAX (fabs (a), fabs (b)))
    g_error ("%.17g != %.17g (relative tolerance %g)", a, b, rel);
}

static int
log2_ceil (int p)
{
  return (int) ceil (log2 ((double) p) - 1e-12);
}

static int
pow2_floor (int p)
{
  return 1 << (int) floor (log2 ((double) p) + 1e-12);
}

double
test_allreduce_closed_form (const char *alg, int p, double N, double alpha, double beta,
                            double gamma)
{
  if (strcmp (alg, "ring") == 0)
    return 2.0 * (p - 1) * alpha + 2.0 * (p - 1) / p * N * beta
           + (double) (p - 1) / p * N * gamma;
  if (strcmp (alg, "tree") == 0)
    return 2.0 * log2_ceil (p) * (alpha + N * beta) + log2_ceil (p) * N * gamma;
  if (strcmp (alg, "naive") == 0)
    return 2 * (alpha + N * beta) + (p - 1) * N * gamma;
  if (strcmp (alg, "halving-doubling") == 0)
    {
      int pp = pow2_floor (p);
      double lg = log2 ((double) pp);
      if (pp == p)
        return 2 * lg * alpha + 2.0 * (p - 1) / p * N * beta
               + (double) (p - 1) / p * N * gamma;
      /* one more step before and after */
      return 2 * (lg + 1) * alpha + 2 * (1 + (double) (pp - 1) / pp) * N * beta
             + (1 + (double) (pp - 1) / pp) * N * gamma;
    }
  g_assert_not_reached ();
}
