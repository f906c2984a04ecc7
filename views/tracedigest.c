/*
 * tracedigest.c — a SHA-256 per table of a trace database (tracedigest.h).
 *
 * What goes into a table's digest, so that a reader can reproduce it: the
 * text "columns" and each kept column's name, each followed by a NUL; then
 * every row, in the order of ORDER BY all its kept columns, each value as a
 * tag byte and its content: 'n' for NULL; 'i' and the integer in decimal;
 * 'r' and the 16 lowercase hex digits of the double's IEEE 754 bits (so a
 * change in the last bit shows, and no locale or printf rounding enters);
 * 't' or 'b', the length in decimal, ':' and the bytes of a text or a blob;
 * each value ends with a NUL and each row with a newline.
 */
#include "config.h"

#include <sqlite3.h>
#include <string.h>

#include "config/simconfig.h"
#include "views/tracedb.h"
#include "views/tracedigest.h"

/* Columns that differ between two runs of one scenario on one build. */
static const struct {
  const char *table, *column;
} host_columns[] = {
  { "runs", "wall_time" },   /* host seconds */
  { "runs", "version" },     /* the dtsim that wrote it */
};

void
sim_table_digest_free (SimTableDigest *d)
{
  if (!d)
    return;
  g_free (d->table);
  g_free (d->sha256);
  g_free (d);
}

static gboolean
is_host_column (const char *table, const char *column)
{
  for (gsize i = 0; i < G_N_ELEMENTS (host_columns); i++)
    if (strcmp (host_columns[i].table, table) == 0
        && strcmp (host_columns[i].column, column) == 0)
      return TRUE;
  return FALSE;
}

/* Appends `name` to `sql` as an SQL identifier: in double quotes, a double
 * quote within it doubled (the name comes from the file). */
static void
append_identifier (GString *sql, const char *name)
{
  g_string_append_c (sql, '"');
  for (const char *c = name; *c; c++)
    {
      if (*c == '"')
        g_string_append_c (sql, '"');
      g_string_append_c (sql, *c);
    }
  g_string_append_c (sql, '"');
}

/* The kept columns of `table`, in their order; NULL with *error set. */
static GPtrArray *
kept_columns (SimTraceDb *t, const char *table, GError **error)
{
  g_autoptr (GPtrArray) cols = g_ptr_array_new_with_free_func (g_free);
  sqlite3_stmt *st = sim_tracedb_prepare (t, "SELECT name FROM pragma_table_info (?1)"
                                          " ORDER BY cid", error);
  if (!st || !sim_tracedb_bind_text (t, st, 1, table, error))
    {
      sqlite3_finalize (st);
      return NULL;
    }
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      const char *c = sim_tracedb_text (st, 0);
      if (!is_host_column (table, c))
        g_ptr_array_add (cols, g_strdup (c));
    }
  sqlite3_finalize (st);
  return rc < 0 ? NULL : g_steal_pointer (&cols);
}

/* Feeds value i of the current row of `st` to `sum`, as the file header
 * says. */
static void
digest_value (GChecksum *sum, sqlite3_stmt *st, int i)
{
  char head[64];
  switch (sqlite3_column_type (st, i))
    {
    case SQLITE_NULL:
      g_checksum_update (sum, (const guchar *) "n", 2);   /* with its NUL */
      return;
    case SQLITE_INTEGER:
      g_snprintf (head, sizeof head, "i%" G_GINT64_FORMAT,
                  (gint64) sqlite3_column_int64 (st, i));
      g_checksum_update (sum, (const guchar *) head, strlen (head) + 1);
      return;
    case SQLITE_FLOAT:
      {
        double v = sqlite3_column_double (st, i);
        guint64 bits;
        memcpy (&bits, &v, sizeof bits);
        g_snprintf (head, sizeof head, "r%016" G_GINT64_MODIFIER "x", bits);
        g_checksum_update (sum, (const guchar *) head, strlen (head) + 1);
        return;
      }
    default:
      {
        gboolean text = sqlite3_column_type (st, i) == SQLITE_TEXT;
        const void *p = text ? (const void *) sqlite3_column_text (st, i)
                             : sqlite3_column_blob (st, i);
        int n = sqlite3_column_bytes (st, i);
        g_snprintf (head, sizeof head, "%c%d:", text ? 't' : 'b', n);
        g_checksum_update (sum, (const guchar *) head, strlen (head));
        if (n > 0)
          g_checksum_update (sum, p, n);
        g_checksum_update (sum, (const guchar *) "", 1);
      }
    }
}

/* The digest of one table; NULL with *error set. */
static SimTableDigest *
digest_table (SimTraceDb *t, const char *table, GError **error)
{
  g_autoptr (GPtrArray) cols = kept_columns (t, table, error);
  if (!cols)
    return NULL;
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_checksum_update (sum, (const guchar *) "columns", 8);
  g_autoptr (GString) sql = g_string_new ("SELECT ");
  for (guint i = 0; i < cols->len; i++)
    {
      const char *c = g_ptr_array_index (cols, i);
      g_checksum_update (sum, (const guchar *) c, strlen (c) + 1);
      if (i)
        g_string_append (sql, ", ");
      append_identifier (sql, c);
    }
  g_string_append (sql, " FROM ");
  append_identifier (sql, table);
  for (guint i = 0; i < cols->len; i++)
    g_string_append_printf (sql, "%s%u", i ? ", " : " ORDER BY ", i + 1);
  sqlite3_stmt *st = sim_tracedb_prepare (t, sql->str, error);
  if (!st)
    return NULL;
  gint64 rows = 0;
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      for (guint i = 0; i < cols->len; i++)
        digest_value (sum, st, (int) i);
      g_checksum_update (sum, (const guchar *) "\n", 1);
      rows++;
    }
  sqlite3_finalize (st);
  if (rc < 0)
    return NULL;
  SimTableDigest *d = g_new0 (SimTableDigest, 1);
  d->table = g_strdup (table);
  d->rows = rows;
  d->sha256 = g_strdup (g_checksum_get_string (sum));
  return d;
}

/* The names of the ordinary tables of t, sorted; NULL with *error set. */
static GPtrArray *
table_names (SimTraceDb *t, GError **error)
{
  sqlite3_stmt *st = sim_tracedb_prepare (t, "SELECT name FROM sqlite_master WHERE type ="
                                          " 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'"
                                          " ORDER BY name", error);
  if (!st)
    return NULL;
  g_autoptr (GPtrArray) tables = g_ptr_array_new_with_free_func (g_free);
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    g_ptr_array_add (tables, g_strdup (sim_tracedb_text (st, 0)));
  sqlite3_finalize (st);
  return rc < 0 ? NULL : g_steal_pointer (&tables);
}

GPtrArray *
sim_trace_digest (const char *path, GError **error)
{
  g_return_val_if_fail (path, NULL);
  static const SimTraceTable required[] = { { "runs", { "id", NULL } } };
  SimTraceDb t = { 0 };
  g_autoptr (GPtrArray) out = NULL;
  g_autoptr (GPtrArray) tables = NULL;
  if (sim_tracedb_open (&t, path, "digest", required, G_N_ELEMENTS (required), error)
      && (tables = table_names (&t, error)))
    {
      out = g_ptr_array_new_with_free_func ((GDestroyNotify) sim_table_digest_free);
      for (guint i = 0; i < tables->len; i++)
        {
          SimTableDigest *d = digest_table (&t, g_ptr_array_index (tables, i), error);
          if (!d)
            {
              g_clear_pointer (&out, g_ptr_array_unref);
              break;
            }
          g_ptr_array_add (out, d);
        }
    }
  sim_tracedb_close (&t);
  return g_steal_pointer (&out);
}
