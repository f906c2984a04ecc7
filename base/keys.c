/*
 * keys.c — the table of resolved registry-key values (base/keys.h).
 *
 * A table holds the values set so far and the names its key rows declare.
 * A setter checks its name against the declared names before storing; a
 * getter finds a set value first and checks the name only when none is set,
 * so reading a set key costs one hash lookup, as it did before names were
 * checked.
 */
#include "config.h"

#include "base/keys.h"

#include <string.h>

typedef enum { V_INT, V_DOUBLE, V_STRING, V_LIST } ValueKind;

typedef struct {
  ValueKind kind;
  gint64 i;
  double d;
  char *s;
  GArray *a;
} Value;

struct BaseValues {
  GHashTable *map;      /* "section.key" -> Value; every name is declared */
  GHashTable *declared; /* set of "section.key" the key rows declare */
};

static void
value_free (gpointer p)
{
  Value *x = p;
  g_free (x->s);
  if (x->a)
    g_array_unref (x->a);
  g_free (x);
}

BaseValues *
base_values_new (const GPtrArray *rows)
{
  g_return_val_if_fail (rows != NULL, NULL);
  BaseValues *v = g_new0 (BaseValues, 1);
  v->map = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, value_free);
  v->declared = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < rows->len; i++)
    {
      const BaseKey *k = g_ptr_array_index (rows, i);
      if (k->offset == 0)
        g_hash_table_add (v->declared, g_strconcat (k->section, ".", k->key, NULL));
    }
  return v;
}

void
base_values_free (BaseValues *v)
{
  if (!v)
    return;
  g_hash_table_unref (v->map);
  g_hash_table_unref (v->declared);
  g_free (v);
}

gboolean
base_values_declares (const BaseValues *v, const char *name)
{
  g_return_val_if_fail (v && name, FALSE);
  return g_hash_table_contains (v->declared, name);
}

/* Aborts unless v is a table that declares `name`: a lookup of a name no key
 * row declares is a misspelling in the code, which no scenario can cause. */
static void
check_declared (const BaseValues *v, const char *name)
{
  if (!name)
    g_error ("scenario key lookup without a name");
  if (!v)
    g_error ("scenario key %s looked up in no table (NULL): pass the run's values", name);
  if (!g_hash_table_contains (v->declared, name))
    g_error ("scenario key %s is declared nowhere: no key row of its table names it; "
             "correct the name or declare it in its registry's keys", name);
}

static Value *
put (BaseValues *v, const char *name, ValueKind kind)
{
  check_declared (v, name);
  Value *x = g_new0 (Value, 1);
  x->kind = kind;
  g_hash_table_replace (v->map, g_strdup (name), x);
  return x;
}

void
base_values_set_int (BaseValues *v, const char *name, gint64 x)
{
  put (v, name, V_INT)->i = x;
}

void
base_values_set_double (BaseValues *v, const char *name, double x)
{
  put (v, name, V_DOUBLE)->d = x;
}

void
base_values_set_string (BaseValues *v, const char *name, const char *s)
{
  put (v, name, V_STRING)->s = g_strdup (s);
}

void
base_values_set_list (BaseValues *v, const char *name, GArray *a)
{
  put (v, name, V_LIST)->a = g_array_ref (a);
}

static const Value *
get (const BaseValues *v, const char *name, ValueKind kind)
{
  const Value *x = v && name ? g_hash_table_lookup (v->map, name) : NULL;
  if (!x)
    check_declared (v, name);
  g_return_val_if_fail (!x || x->kind == kind, NULL);
  return x;
}

gint64
base_values_int (const BaseValues *v, const char *name)
{
  const Value *x = get (v, name, V_INT);
  return x ? x->i : 0;
}

double
base_values_double (const BaseValues *v, const char *name)
{
  const Value *x = get (v, name, V_DOUBLE);
  return x ? x->d : 0.0;
}

const char *
base_values_string (const BaseValues *v, const char *name)
{
  const Value *x = get (v, name, V_STRING);
  return x ? x->s : NULL;
}

const GArray *
base_values_list (const BaseValues *v, const char *name)
{
  static GArray *empty; /* shared, never written */
  const Value *x = get (v, name, V_LIST);
  if (x)
    return x->a;
  if (g_once_init_enter (&empty))
    g_once_init_leave (&empty, g_array_new (FALSE, FALSE, sizeof (int)));
  return empty;
}

gboolean
base_values_has (const BaseValues *v, const char *name)
{
  check_declared (v, name);
  return g_hash_table_contains (v->map, name);
}

gconstpointer
base_registry_find (const void *const *entries, const char *name)
{
  g_return_val_if_fail (name != NULL, NULL);
  for (int i = 0; entries[i]; i++)
    if (strcmp (*(char *const *) entries[i], name) == 0)
      return entries[i];
  return NULL;
}

static void
add_rows (GPtrArray *rows, const BaseKey *k)
{
  for (; k && k->section; k++)
    g_ptr_array_add (rows, (gpointer) k);
}

void
base_registry_keys (GPtrArray *rows, const BaseKey *shared, const void *const *entries,
                    gsize keys_offset)
{
  add_rows (rows, shared);
  for (int i = 0; entries[i]; i++)
    add_rows (rows, *(const BaseKey *const *) ((const char *) entries[i] + keys_offset));
}
