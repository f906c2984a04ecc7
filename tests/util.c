/*
 * util.c — helpers shared by the simulation tests (see util.h).
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>

#include "sim/scenario.h"
#include "tests/util.h"

GPtrArray *
test_load_scenario_text (const char *text, const char *const *sets)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-test-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = sim_scenario_load (path, sets, &error);
  g_assert_no_error (error);
  g_unlink (path);
  g_rmdir (dir);
  return configs;
}

void
test_assert_close (double a, double b, double rel)
{
  if (fabs (a - b) > rel * MAX (fabs (a), fabs (b)))
    g_error ("%.17g != %.17g (relative tolerance %g)", a, b, rel);
}
