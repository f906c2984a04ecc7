/*
 * outfile.c — a file written whole or not at all: a hidden file beside the
 * target, synced and renamed over it at the end, removed on failure (a
 * symlink at the target is replaced, never written through); or standard
 * output.  `dtsim export` and `dtsim report` write through it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "views/outfile.h"
#include "config/simconfig.h"
#include "views/tracedb.h"

gboolean
sim_outfile_open (SimOutFile *o, const char *path, const char *source, GError **error)
{
  if (!path || strcmp (path, "-") == 0)
    {
      o->f = stdout;
      return TRUE;
    }
  o->shown = sim_clean_text (path, 4096);
  o->path = g_strdup (path);
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  GStatBuf sb, sd;
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: %s: its folder does not exist; create it or choose another", o->shown);
      return FALSE;
    }
  if (g_stat (path, &sb) == 0 && S_ISDIR (sb.st_mode))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: %s is a folder; name the file to write, e.g. %s/runs.csv", o->shown,
                   o->shown);
      return FALSE;
    }
  if (source && g_stat (path, &sb) == 0 && g_stat (source, &sd) == 0
      && sb.st_dev == sd.st_dev && sb.st_ino == sd.st_ino)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: %s is the database being read; write to another file", o->shown);
      return FALSE;
    }
  g_autofree char *name = g_strdup_printf (".%s.XXXXXX", base);
  o->tmp = g_build_filename (dir, name, NULL);
  int fd = g_mkstemp_full (o->tmp, O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0 || !(o->f = fdopen (fd, "w")))
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "-o: %s: cannot write in its folder (%s); check its permissions", o->shown,
                   g_strerror (e));
      g_clear_pointer (&o->tmp, g_free);
      return FALSE;
    }
  return TRUE;
}

gboolean
sim_outfile_write (SimOutFile *o, const GString *s, GError **error)
{
  if (s->len && fwrite (s->str, 1, s->len, o->f) != s->len)
    {
      int e = errno;
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot write (%s)",
                   o->shown ? o->shown : "standard output", g_strerror (e));
      return FALSE;
    }
  return TRUE;
}

gboolean
sim_outfile_close (SimOutFile *o, gboolean ok, GError **error)
{
  if (!o->f)
    goto done;
  if (o->f == stdout)
    {
      if (fflush (stdout) != 0 && ok)
        {
          int e = errno;
          g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "standard output: cannot write (%s)",
                       g_strerror (e));
          ok = FALSE;
        }
      goto done;
    }
  if (fflush (o->f) != 0 || fsync (fileno (o->f)) != 0)
    {
      if (ok)
        {
          int e = errno;
          g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot write (%s)", o->shown,
                       g_strerror (e));
        }
      ok = FALSE;
    }
  if (fclose (o->f) != 0 && ok)
    {
      int e = errno;
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot write (%s)", o->shown,
                   g_strerror (e));
      ok = FALSE;
    }
  if (ok && g_rename (o->tmp, o->path) != 0)
    {
      int e = errno;
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot replace it (%s)", o->shown,
                   g_strerror (e));
      ok = FALSE;
    }
  if (!ok)
    g_unlink (o->tmp);
done:
  g_free (o->path);
  g_free (o->tmp);
  g_free (o->shown);
  return ok;
}

void
sim_remove_tree (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d)))
    {
      g_autofree char *p = g_build_filename (dir, n, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_DIR) && !g_file_test (p, G_FILE_TEST_IS_SYMLINK))
        sim_remove_tree (p);
      else
        g_unlink (p);
    }
  if (d)
    g_dir_close (d);
  g_rmdir (dir);
}
