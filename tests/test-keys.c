/*
 * test-keys.c — the table of registry-key values (base/keys.h): what a
 * declared key without a value reads as, and that a name no key row declares
 * (or a lookup in no table) aborts instead of reading as 0.
 *
 * The undeclared names below are passed through variables, never as a
 * literal in the call, so that tests/test-keys-declared.sh (which checks
 * every literal name against `dtsim keys`) leaves them alone.  And "did
 * you mean": the edit distance behind it, and the suggestion a misspelt
 * section, key, value or sweep name gets.
 */
#include "config.h"

#include <string.h>

#include "base/keys.h"
#include "base/spell.h"
#include "netmodel/netmodel.h"
#include "policies/policy.h"
#include "config/stragglers.h"
#include "tests/util.h"

/* Rows of every kind a table holds, and one row of a SimConfig field
 * (offset not 0), which a BaseValues never holds. */
static const BaseKey rows_of_test[] = {
  { .section = "policy", .key = "staleness", .type = BASE_KEY_INT, .def = "0", .max = 100 },
  { .section = "policy", .key = "size", .type = BASE_KEY_QUANTITY, .unit = BASE_UNIT_SIZE,
    .def = "0", .max = BASE_BIG },
  { .section = "stragglers", .key = "model", .type = BASE_KEY_STRING, .def = "" },
  { .section = "stragglers", .key = "slow", .type = BASE_KEY_INTLIST, .def = "", .max = 100 },
  { .section = "cluster", .key = "workers", .type = BASE_KEY_INT, .def = "1", .max = 100,
    .offset = sizeof (double) },
  { .section = NULL },
};

/* One near miss of a declared name, and the SimConfig field's name. */
static const char *const misspelt = "policy.stalenes";
static const char *const field_name = "cluster.workers";

static BaseValues *
table_new (void)
{
  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  for (const BaseKey *k = rows_of_test; k->section; k++)
    g_ptr_array_add (rows, (gpointer) k);
  return base_values_new (rows);
}

/* A declared key without a value reads as 0, NULL or an empty list, and
 * base_values_has says it holds none; once set, it reads back. */
static void
test_declared_absent (void)
{
  g_autoptr (BaseValues) v = table_new ();
  g_assert_true (base_values_declares (v, "policy.staleness"));
  g_assert_false (base_values_has (v, "policy.staleness"));
  g_assert_cmpint (base_values_int (v, "policy.staleness"), ==, 0);
  g_assert_cmpfloat (base_values_double (v, "policy.size"), ==, 0.0);
  g_assert_null (base_values_string (v, "stragglers.model"));
  g_assert_cmpuint (base_values_list (v, "stragglers.slow")->len, ==, 0);

  g_autoptr (GArray) slow = g_array_new (FALSE, FALSE, sizeof (int));
  int w = 3;
  g_array_append_val (slow, w);
  base_values_set_int (v, "policy.staleness", 5);
  base_values_set_double (v, "policy.size", 4096.0);
  base_values_set_string (v, "stragglers.model", "fixed");
  base_values_set_list (v, "stragglers.slow", slow);
  g_assert_true (base_values_has (v, "policy.staleness"));
  g_assert_cmpint (base_values_int (v, "policy.staleness"), ==, 5);
  g_assert_cmpfloat (base_values_double (v, "policy.size"), ==, 4096.0);
  g_assert_cmpstr (base_values_string (v, "stragglers.model"), ==, "fixed");
  g_assert_cmpuint (base_values_list (v, "stragglers.slow")->len, ==, 1);
  g_assert_cmpint (g_array_index (base_values_list (v, "stragglers.slow"), int, 0), ==, w);
}

/* A row whose value is a SimConfig field (offset not 0) is not the table's:
 * its name is not declared there. */
static void
test_field_rows_left_out (void)
{
  g_autoptr (BaseValues) v = table_new ();
  g_assert_false (base_values_declares (v, field_name));
  g_assert_false (base_values_declares (v, misspelt));
}

/* Every way of naming a key: each must check the name. */
typedef enum {
  OP_INT, OP_DOUBLE, OP_STRING, OP_LIST, OP_HAS,
  OP_SET_INT, OP_SET_DOUBLE, OP_SET_STRING, OP_SET_LIST, N_OPS
} Op;
static const char *const op_names[N_OPS] = {
  "int", "double", "string", "list", "has", "set-int", "set-double", "set-string", "set-list",
};

static void
apply (Op op, BaseValues *v, const char *name)
{
  g_autoptr (GArray) a = g_array_new (FALSE, FALSE, sizeof (int));
  switch (op)
    {
    case OP_INT: (void) base_values_int (v, name); break;
    case OP_DOUBLE: (void) base_values_double (v, name); break;
    case OP_STRING: (void) base_values_string (v, name); break;
    case OP_LIST: (void) base_values_list (v, name); break;
    case OP_HAS: (void) base_values_has (v, name); break;
    case OP_SET_INT: base_values_set_int (v, name, 1); break;
    case OP_SET_DOUBLE: base_values_set_double (v, name, 1.0); break;
    case OP_SET_STRING: base_values_set_string (v, name, "x"); break;
    case OP_SET_LIST: base_values_set_list (v, name, a); break;
    case N_OPS: g_assert_not_reached ();
    }
}

/* An undeclared name aborts, naming the key, whether or not other keys hold
 * values; the child prints a line before the call, which the parent must
 * not see after it (the call does not return). */
static void
test_undeclared_aborts (gconstpointer data)
{
  Op op = (Op) GPOINTER_TO_INT (data);
  if (g_test_subprocess ())
    {
      g_autoptr (BaseValues) v = table_new ();
      base_values_set_int (v, "policy.staleness", 2);
      apply (op, v, misspelt);
      g_print ("returned from the lookup\n");
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*scenario key policy.stalenes is declared nowhere*");
  g_test_trap_assert_stdout_unmatched ("*returned from the lookup*");
}

/* The name of a SimConfig field is not a table key either. */
static void
test_field_name_aborts (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr (BaseValues) v = table_new ();
      (void) base_values_int (v, field_name);
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*scenario key cluster.workers is declared nowhere*");
}

/* No table at all is a mistake of the caller too, even for a declared name. */
static void
test_null_table_aborts (void)
{
  if (g_test_subprocess ())
    {
      (void) base_values_int (NULL, "policy.staleness");
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*scenario key policy.staleness looked up in no table*");
}

static void
declared_in (gpointer row, gpointer values)
{
  const BaseKey *k = row;
  g_autofree char *name = g_strconcat (k->section, ".", k->key, NULL);
  if (!base_values_declares (values, name))
    g_error ("%s: a registry row the loaded table does not declare", name);
}

/* The loader's table declares every row the registries declare and none of
 * config/scenario.c's own SimConfig fields; a misspelt name aborts there too. */
static void
test_loader_declares_registry_keys (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr (GPtrArray) configs = test_load_scenario_text ("[cluster]\nworkers = 2\n", NULL);
      const SimConfig *c = g_ptr_array_index (configs, 0);
      (void) base_values_int (c->values, misspelt);
      return;
    }
  g_autoptr (GPtrArray) configs = test_load_scenario_text ("[cluster]\nworkers = 2\n", NULL);
  const SimConfig *c = g_ptr_array_index (configs, 0);
  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  net_topology_keys (rows);
  pol_keys (rows);
  sim_stragglers_keys (rows);
  g_assert_cmpuint (rows->len, >, 0);
  g_ptr_array_foreach (rows, declared_in, c->values);
  g_assert_false (base_values_declares (c->values, field_name));
  g_assert_false (base_values_declares (c->values, "scenario.seed"));

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*scenario key policy.stalenes is declared nowhere*");
}

/* A topology given no table reads a shared one declaring the topology keys
 * with none set (each key at its default); one given a table reads that. */
static void
test_topology_default_table (void)
{
  NetTopologyParams p = { 0 };
  const BaseValues *d = net_topology_values (&p);
  g_assert_nonnull (d);
  g_assert_true (base_values_declares (d, "network.rack_size"));
  g_assert_true (base_values_declares (d, "network.intra_bandwidth"));
  g_assert_false (base_values_has (d, "network.rack_size"));
  g_assert_cmpint (base_values_int (d, "network.rack_size"), ==, 0);
  g_assert_true (net_topology_values (&p) == d);

  g_autoptr (BaseValues) own = net_topology_values_new ();
  base_values_set_int (own, "network.rack_size", 4);
  p.values = own;
  g_assert_true (net_topology_values (&p) == own);
  g_assert_cmpint (base_values_int (net_topology_values (&p), "network.rack_size"), ==, 4);
}

/* The optimal string alignment distance, case aside: one edit for an
 * insertion, a deletion, a substitution or a swap of neighbours. */
static void
test_spell_distance (void)
{
  g_assert_cmpint (base_spell_distance ("hidden", "hidden"), ==, 0);
  g_assert_cmpint (base_spell_distance ("Hidden", "hidden"), ==, 0);
  g_assert_cmpint (base_spell_distance ("hiden", "hidden"), ==, 1);
  g_assert_cmpint (base_spell_distance ("hidddden", "hidden"), ==, 2);
  g_assert_cmpint (base_spell_distance ("netwrok", "network"), ==, 1);
  g_assert_cmpint (base_spell_distance ("ab", "ba"), ==, 1);
  g_assert_cmpint (base_spell_distance ("", "abc"), ==, 3);
  g_assert_cmpint (base_spell_distance ("kitten", "sitting"), ==, 3);
  BaseSpell sp;
  base_spell_init (&sp, "rng");
  const char *names[] = { "ring", "tree", "naive" };
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    base_spell_offer (&sp, names[i]);
  g_assert_cmpstr (base_spell_best (&sp), ==, "ring");
  base_spell_init (&sp, "zzzzzz");
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    base_spell_offer (&sp, names[i]);
  g_assert_null (base_spell_best (&sp));
}

/* Each misspelling is refused in one line that suggests the name meant;
 * a name far from every one gets no suggestion. */
static void
test_did_you_mean (void)
{
  struct {
    const char *text, *want;
  } cases[] = {
    { "[model]\nhiden = 64\n", "[model] hiden: unknown key; did you mean hidden?" },
    { "[netwrok]\nlatency = 1us\n", "unknown section [netwrok]; did you mean [network]?" },
    { "[policy]\nkind = allreduc\n", "unknown value 'allreduc'; did you mean allreduce?" },
    { "[sweep]\npolicy.consistancy = bsp, ssp\n",
      "[sweep] policy.consistancy: not a scenario key; did you mean policy.consistency?" },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      g_autofree char *msg = test_load_scenario_error (cases[k].text);
      if (!strstr (msg, cases[k].want))
        g_error ("case %zu: %s\n  does not say: %s", k, msg, cases[k].want);
    }
  g_autofree char *far = test_load_scenario_error ("[model]\nzzzzzzzz = 1\n");
  g_assert_null (strstr (far, "did you mean"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/keys/values/declared-absent", test_declared_absent);
  g_test_add_func ("/keys/values/field-rows-left-out", test_field_rows_left_out);
  for (int op = 0; op < N_OPS; op++)
    {
      g_autofree char *path = g_strdup_printf ("/keys/values/undeclared/%s", op_names[op]);
      g_test_add_data_func (path, GINT_TO_POINTER (op), test_undeclared_aborts);
    }
  g_test_add_func ("/keys/values/field-name", test_field_name_aborts);
  g_test_add_func ("/keys/values/null-table", test_null_table_aborts);
  g_test_add_func ("/keys/loader/declares-registry-keys", test_loader_declares_registry_keys);
  g_test_add_func ("/keys/topology/default-table", test_topology_default_table);
  g_test_add_func ("/keys/spell/distance", test_spell_distance);
  g_test_add_func ("/keys/spell/did-you-mean", test_did_you_mean);
  return g_test_run ();
}
