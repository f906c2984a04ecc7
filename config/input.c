/*
 * input.c — reading untrusted text files: regular files of bounded size, UTF-8
 * without NUL bytes, and key files without repeated groups, repeated keys or
 * locale keys (see input.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/input.h"
#include "config/simconfig.h"

static gboolean G_GNUC_PRINTF (3, 4)
fail (GError **error, const char *file, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", file, msg);
  return FALSE;
}

static const char *
file_kind (mode_t m)
{
  if (S_ISDIR (m))
    return "a directory";
  if (S_ISFIFO (m))
    return "a FIFO";
  if (S_ISCHR (m))
    return "a character device";
  if (S_ISBLK (m))
    return "a block device";
  if (S_ISSOCK (m))
    return "a socket";
  return "not a regular file";
}

char *
sim_input_read_text (const char *path, const char *what, GError **error)
{
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    {
      int e = errno;
      fail (error, path, e == ENOENT ? "no such %s; check the path" : "cannot open the %s: %s",
            what, g_strerror (e));
      return NULL;
    }
  struct stat st;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    {
      fail (error, path, "%s, not a %s; give a regular text file", file_kind (st.st_mode), what);
      close (fd);
      return NULL;
    }
  if (st.st_size > SIM_INPUT_MAX_BYTES)
    {
      fail (error, path, "%" G_GINT64_FORMAT " bytes, more than the %d a %s may hold; "
            "is it the right file?", (gint64) st.st_size, SIM_INPUT_MAX_BYTES, what);
      close (fd);
      return NULL;
    }
  /* a regular file read with O_NONBLOCK behaves as a blocking one */
  gsize cap = (gsize) st.st_size + 1, len = 0;
  char *buf = g_malloc (cap + 1);
  for (;;)
    {
      ssize_t n = read (fd, buf + len, cap - len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int e = errno;
          fail (error, path, "cannot read the %s: %s", what, g_strerror (e));
          g_free (buf);
          close (fd);
          return NULL;
        }
      if (n == 0)
        break;
      len += (gsize) n;
      if (len > SIM_INPUT_MAX_BYTES)
        {
          /* the file grew while being read */
          fail (error, path, "more than the %d bytes a %s may hold; is it the right file?",
                SIM_INPUT_MAX_BYTES, what);
          g_free (buf);
          close (fd);
          return NULL;
        }
      if (len == cap)
        {
          cap = MIN (cap * 2, (gsize) SIM_INPUT_MAX_BYTES + 1);
          buf = g_realloc (buf, cap + 1);
        }
    }
  close (fd);
  buf[len] = '\0';
  if (memchr (buf, '\0', len))
    {
      fail (error, path, "holds a NUL byte at offset %" G_GSIZE_FORMAT "; a %s is text",
            (gsize) ((char *) memchr (buf, '\0', len) - buf), what);
      g_free (buf);
      return NULL;
    }
  const char *bad = NULL;
  if (!g_utf8_validate (buf, (gssize) len, &bad))
    {
      int line = 1;
      for (const char *p = buf; p < bad; p++)
        line += *p == '\n';
      fail (error, path, "line %d is not UTF-8 text; save the %s as UTF-8", line, what);
      g_free (buf);
      return NULL;
    }
  return buf;
}

gboolean
sim_input_is_one_line (const char *s)
{
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return FALSE;
  return TRUE;
}

char *
sim_input_printable (const char *s)
{
  GString *out = g_string_sized_new (strlen (s));
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    switch (*p)
      {
      case '\t': g_string_append (out, "\\t"); break;
      case '\n': g_string_append (out, "\\n"); break;
      case '\r': g_string_append (out, "\\r"); break;
      case '\f': g_string_append (out, "\\f"); break;
      case '\v': g_string_append (out, "\\v"); break;
      default:
        if (*p < 0x20 || *p == 0x7f)
          g_string_append_printf (out, "\\x%02x", *p);
        else
          g_string_append_c (out, (char) *p);
      }
  return g_string_free (out, FALSE);
}

gboolean
sim_input_check_keyfile (const char *text, const char *file, const char *group_fix,
                         GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GHashTable) groups = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GHashTable) keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *group = NULL;
  for (int i = 0; lines[i]; i++)
    {
      char *line = g_strstrip (lines[i]);
      gsize n = strlen (line);
      int lineno = i + 1;
      if (n == 0 || line[0] == '#')
        continue;
      const char *eq = strchr (line, '=');
      gboolean is_group = line[0] == '[' && line[n - 1] == ']';
      /* a group name ends up in messages and tables, and a line that is
       * neither a group nor a key = value pair ends up in GKeyFile's error:
       * either holding a control character is refused here, with a message
       * that names the line without quoting it (the blanks GKeyFile quotes
       * around a line are made visible by sim_input_printable) */
      if ((is_group || !group || !eq) && !sim_input_is_one_line (line))
        return fail (error, file, "line %d holds a control character (a tab or an escape); "
                     "write it with printable characters only", lineno);
      if (is_group)
        {
          g_free (group);
          group = g_strndup (line + 1, n - 2);
          gpointer first = g_hash_table_lookup (groups, group);
          if (first)
            return fail (error, file, "[%s] appears twice (lines %d and %d); %s", group,
                         GPOINTER_TO_INT (first), lineno, group_fix);
          g_hash_table_insert (groups, g_strdup (group), GINT_TO_POINTER (lineno));
          continue;
        }
      if (!group || !eq)
        continue; /* GKeyFile reports these */
      g_autofree char *key = g_strstrip (g_strndup (line, eq - line));
      /* keys and values end up in labels, tables and progress lines on a
       * terminal: no escape sequence or tab inside them rides along (nor
       * into this message: a key holding one is not quoted) */
      g_autofree char *value = g_strstrip (g_strdup (eq + 1));
      if (!sim_input_is_one_line (key))
        return fail (error, file, "[%s]: line %d holds a control character (a tab or an "
                     "escape) inside its key; write it with printable characters only",
                     group, lineno);
      if (!sim_input_is_one_line (value))
        return fail (error, file, "[%s] %s: line %d holds a control character (a tab or an "
                     "escape) inside its value; write it with printable characters only",
                     group, key, lineno);
      if (strchr (key, '['))
        return fail (error, file, "[%s] %s: line %d: localised keys are not supported; "
                     "write the key without [...]", group, key, lineno);
      g_autofree char *id = g_strdup_printf ("%s\n%s", group, key);
      gpointer first = g_hash_table_lookup (keys, id);
      if (first)
        return fail (error, file, "[%s] %s: set twice (lines %d and %d); keep one",
                     group, key, GPOINTER_TO_INT (first), lineno);
      g_hash_table_insert (keys, g_steal_pointer (&id), GINT_TO_POINTER (lineno));
    }
  return TRUE;
}
