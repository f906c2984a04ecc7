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

/* The closed form of an all-reduce of N bytes among p ranks with contention
 * = none, every route of latency alpha (s) and 1/beta bytes/s, gamma s per
 * byte reduced (docs/collectives.md): ring (Patarasuk & Yuan 2009), tree,
 * naive, halving-doubling (Rabenseifner 2004; Thakur et al. 2005 when p is
 * not a power of two).  Ring and halving-doubling assume the element count
 * divisible by p (resp. by the largest power of two <= p). */
double test_allreduce_closed_form (const char *alg, int p, double N, double alpha,
                                   double beta, double gamma);

/* Aborts the test unless |a - b| <= rel × max(|a|, |b|). */
void test_assert_close (double a, double b, double rel);

#endif
