/*
 * test-plan.c — `dtsim plan` end to end on a scaled-down analogue of
 * Megatron-LM's large runs (tests/data/plan-gpt.ini: a 16-block GPT on two
 * DGX A100 nodes with the paper's kind of layout): the ranking is the event
 * engine's (the top row's time is a `dtsim run` of its overrides), the best
 * is at least as fast as the scenario's own layout, a layout refused for
 * memory is refused by `dtsim check` too, the output is deterministic, and
 * bad options are one line and exit 2.
 *
 * The binary and the scenario come from DTSIM_BIN and DTSIM_TEST_DATA.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "sim/trace.h"
#include "tests/json.h"
#include "tests/util.h"

static char *tmpdir;

#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

/* dtsim plan --json on the test scenario, parsed. */
static TjNode *
plan_json (const char *top, char **text)
{
  g_autofree char *ini = test_data_path ("plan-gpt.ini");
  g_autofree char *err = NULL;
  char *out = NULL;
  g_assert_cmpint (dtsim (&out, &err, "plan", ini, "--json", "--top", top, NULL), ==, 0);
  g_autofree char *perr = NULL;
  TjNode *j = tj_parse (out, strlen (out), &perr);
  g_assert_null (perr);
  g_assert_nonnull (j);
  if (text)
    *text = out;
  else
    g_free (out);
  return j;
}

/* `dtsim CMD FILE --set S...` with the overrides of a plan row; returns
 * the exit status. */
static int
run_with_sets (const char *cmd, const TjNode *row, const char *db, char **out, char **err)
{
  g_autofree char *ini = test_data_path ("plan-gpt.ini");
  const TjNode *sets = tj_get (row, "set");
  g_assert_nonnull (sets);
  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (args, g_strdup (cmd));
  g_ptr_array_add (args, g_strdup (ini));
  for (guint i = 0; i < sets->items->len; i++)
    {
      const TjNode *s = g_ptr_array_index (sets->items, i);
      g_ptr_array_add (args, g_strdup ("--set"));
      g_ptr_array_add (args, g_strdup (s->string));
    }
  if (db)
    {
      g_ptr_array_add (args, g_strdup ("--json"));
      g_ptr_array_add (args, g_strdup ("-o"));
      g_ptr_array_add (args, g_strdup (db));
    }
  g_ptr_array_add (args, NULL);
  return test_run_dtsim_argv (tmpdir, out, err, (const char *const *) args->pdata);
}

/* The iteration time `dtsim run` gives: sim_time / iterations of its one
 * run. */
static double
run_iteration_time (const char *out)
{
  g_autofree char *perr = NULL;
  TjNode *j = tj_parse (out, strlen (out), &perr);
  g_assert_null (perr);
  const TjNode *runs = tj_get (j, "runs");
  g_assert_cmpuint (runs->items->len, ==, 1);
  const TjNode *r = g_ptr_array_index (runs->items, 0);
  g_assert_cmpstr (tj_string (r, "status"), ==, "done");
  double t = tj_number (r, "sim_time") / tj_number (r, "iterations");
  tj_free (j);
  return t;
}

/* The rows are in the order of the event engine's times, and the first
 * row's time is exactly what `dtsim run` of its overrides simulates. */
static void
test_top_is_a_run (void)
{
  TjNode *j = plan_json ("3", NULL);
  const TjNode *ranked = tj_get (j, "ranked");
  g_assert_cmpuint (ranked->items->len, ==, 3);
  double last = 0;
  for (guint i = 0; i < ranked->items->len; i++)
    {
      const TjNode *r = g_ptr_array_index (ranked->items, i);
      double t = tj_number (r, "iteration_time");
      g_assert_cmpfloat (t, >, 0);
      g_assert_cmpfloat (t, >=, last);
      last = t;
      g_assert_cmpfloat (tj_number (r, "rank"), ==, i + 1);
    }
  const TjNode *best = g_ptr_array_index (ranked->items, 0);
  g_autofree char *db = g_build_filename (tmpdir, "best.db", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (run_with_sets ("run", best, db, &out, &err), ==, 0);
  g_assert_cmpfloat (run_iteration_time (out), ==, tj_number (best, "iteration_time"));
  tj_free (j);
}

/* The search finds a layout at least as fast as the scenario's own (the
 * paper's kind: tensor 8 in a node, 1F1B, micro-batches of one). */
static void
test_beats_published (void)
{
  TjNode *j = plan_json ("3", NULL);
  const TjNode *best = g_ptr_array_index (tj_get (j, "ranked")->items, 0);
  g_autofree char *ini = test_data_path ("plan-gpt.ini");
  g_autofree char *db = g_build_filename (tmpdir, "published.db", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (dtsim (&out, &err, "run", ini, "--json", "-o", db, NULL), ==, 0);
  g_assert_cmpfloat (tj_number (best, "iteration_time"), <=, run_iteration_time (out));
  tj_free (j);
}

/* A layout the search refused for memory is refused by `dtsim check`, with
 * the same line. */
static void
test_memory_pruned (void)
{
  TjNode *j = plan_json ("1", NULL);
  g_assert_cmpfloat (tj_number (j, "pruned_memory"), >, 0);
  const TjNode *ex = tj_get (j, "memory_example");
  g_assert_nonnull (ex);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (run_with_sets ("check", tj_get (ex, "row"), NULL, &out, &err), ==, 2);
  g_assert_nonnull (strstr (err, tj_string (ex, "why")));
  g_assert_nonnull (strstr (err, "memory"));
  tj_free (j);
}

/* Two searches print the same bytes; the counts add up. */
static void
test_deterministic (void)
{
  char *a = NULL, *b = NULL;
  TjNode *ja = plan_json ("2", &a);
  TjNode *jb = plan_json ("2", &b);
  g_assert_cmpstr (a, ==, b);
  g_assert_cmpfloat (tj_number (ja, "candidates"), ==,
                     tj_number (ja, "fit") + tj_number (ja, "pruned_rules")
                     + tj_number (ja, "pruned_memory"));
  tj_free (ja);
  tj_free (jb);
  g_free (a);
  g_free (b);
}

/* --tensor restricts the search to that size. */
static void
test_restrict_tensor (void)
{
  g_autofree char *ini = test_data_path ("plan-gpt.ini");
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (dtsim (&out, &err, "plan", ini, "--json", "--top", "2", "--tensor", "8",
                          NULL), ==, 0);
  g_autofree char *perr = NULL;
  TjNode *j = tj_parse (out, strlen (out), &perr);
  g_assert_null (perr);
  const TjNode *ranked = tj_get (j, "ranked");
  g_assert_cmpuint (ranked->items->len, >=, 1);
  for (guint i = 0; i < ranked->items->len; i++)
    g_assert_cmpfloat (tj_number (g_ptr_array_index (ranked->items, i), "tensor"), ==, 8);
  tj_free (j);
}

/* A swept scenario (here two prices) is planned point by point: each
 * point's plan is the plan of the scenario with that point's keys set,
 * and the summary names the point whose best costs least. */
static void
test_sweep_points (void)
{
  g_autofree char *ini = test_data_path ("plan-gpt.ini");
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (dtsim (&out, &err, "plan", ini, "--json", "--top", "1", "--quiet",
                          "--set", "sweep.cluster.price=3,2", NULL), ==, 0);
  g_autofree char *perr = NULL;
  TjNode *j = tj_parse (out, strlen (out), &perr);
  g_assert_null (perr);
  const TjNode *points = tj_get (j, "points");
  g_assert_cmpuint (points->items->len, ==, 2);
  const double price[] = { 3, 2 };
  double cost[2];
  for (guint i = 0; i < 2; i++)
    {
      const TjNode *pt = g_ptr_array_index (points->items, i);
      g_autofree char *label = g_strdup_printf ("price=%g", price[i]);
      g_assert_cmpstr (tj_string (pt, "point"), ==, label);
      const TjNode *best = g_ptr_array_index (tj_get (tj_get (pt, "plan"), "ranked")->items, 0);
      /* the same layout as a plan of that price alone */
      g_autofree char *set = g_strdup_printf ("cluster.price=%g", price[i]);
      g_autofree char *o1 = NULL, *e1 = NULL;
      g_assert_cmpint (dtsim (&o1, &e1, "plan", ini, "--json", "--top", "1", "--quiet", "--set",
                              set, NULL), ==, 0);
      TjNode *alone = tj_parse (o1, strlen (o1), &perr);
      const TjNode *ab = g_ptr_array_index (tj_get (alone, "ranked")->items, 0);
      g_assert_cmpstr (tj_string (best, "layout"), ==, tj_string (ab, "layout"));
      g_assert_cmpfloat (tj_number (best, "iteration_time"), ==,
                         tj_number (ab, "iteration_time"));
      cost[i] = tj_number (best, "cost");
      /* price x GPUs x seconds per iteration / 3600 */
      g_assert_cmpfloat_with_epsilon (cost[i], price[i] * 16 * tj_number (best, "iteration_time")
                                      / 3600.0, 1e-12 * cost[i]);
      tj_free (alone);
    }
  tj_free (j);
  g_assert_cmpfloat (cost[1], <, cost[0]);
  g_autofree char *text = NULL;
  g_assert_cmpint (dtsim (&text, &err, "plan", ini, "--top", "1", "--quiet", "--set",
                          "sweep.cluster.price=3,2", NULL), ==, 0);
  g_assert_nonnull (strstr (text, "== point 2 of 2: price=2\n"));
  g_assert_nonnull (strstr (text, "fastest: price=3; cheapest: price=2\n"));
}

/* Bad options and scenarios: exit 2, one line on stderr naming what. */
static void
test_bad_input (void)
{
  g_autofree char *ini = test_data_path ("plan-gpt.ini");
  g_autofree char *small = test_data_path ("small.ini");
  struct { const char *a, *b, *c, *want; } cases[] = {
    { "--top", "0", NULL, "--top" },
    { "--top", "21", NULL, "--top" },
    { "--by", "speed", NULL, "--by" },
    { "--by", "cost", NULL, "[cluster] price" },
    { "--tensor", "-2", NULL, "--tensor" },
    { "--tensor", "3", NULL, "--tensor" },
    { "--set", "policy.kind=allreduce", NULL, "kind = pipeline" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *out = NULL, *err = NULL;
      g_assert_cmpint (dtsim (&out, &err, "plan", ini, cases[i].a, cases[i].b, NULL), ==, 2);
      /* the first line says it (a bad option is followed by the usage) */
      g_autofree char *first = g_strndup (err, strcspn (err, "\n"));
      g_assert_true (g_str_has_prefix (first, "dtsim: "));
      g_assert_nonnull (strstr (first, cases[i].want));
    }
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (dtsim (&out, &err, "plan", small, "--quiet", NULL), ==, 2);
  g_assert_nonnull (strstr (err, "kind = pipeline"));
  g_assert_cmpstr (strchr (err, '\n'), ==, err + strlen (err) - 1);  /* one line */
  g_assert_cmpint (dtsim (&out, &err, "plan", NULL), ==, 2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-plan-XXXXXX", NULL);
  g_test_add_func ("/plan/top-is-a-run", test_top_is_a_run);
  g_test_add_func ("/plan/beats-published", test_beats_published);
  g_test_add_func ("/plan/memory-pruned", test_memory_pruned);
  g_test_add_func ("/plan/deterministic", test_deterministic);
  g_test_add_func ("/plan/restrict-tensor", test_restrict_tensor);
  g_test_add_func ("/plan/sweep-points", test_sweep_points);
  g_test_add_func ("/plan/bad-input", test_bad_input);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
