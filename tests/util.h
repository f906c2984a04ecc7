/*
 * util.h — helpers shared by the test programs that run whole simulations.
 */
#ifndef DTSIM_TESTS_UTIL_H
#define DTSIM_TESTS_UTIL_H

#include <glib.h>

/* Loads a scenario given as text (plus `sets` overrides, may be NULL) through
 * the real loader, via a temporary file; asserts it is valid.  Returns the
 * configs (GPtrArray of SimConfig*). */
GPtrArray *test_load_scenario_text (const char *text, const char *const *sets);

/* Loads a scenario given as text, which must fail: asserts a one-line
 * SIM_ERROR_INPUT naming the file and returns its message. */
char *test_load_scenario_error (const char *text);

/* Runs $DTSIM_BIN in folder `cwd` with the arguments (NULL-terminated);
 * returns its exit status, its output in *out and *err. */
int test_run_dtsim (const char *cwd, char **out, char **err, const char *first, ...)
  G_GNUC_NULL_TERMINATED;

/* The same with the arguments in a NULL-terminated array. */
int test_run_dtsim_argv (const char *cwd, char **out, char **err, const char *const *args);

/* Aborts the test unless |a - b| <= rel × max(|a|, |b|). */
void test_assert_close (double a, double b, double rel);

#endif
