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

/* Aborts the test unless |a - b| <= rel × max(|a|, |b|). */
void test_assert_close (double a, double b, double rel);

#endif
