/*
 * outfile.h — writing an output file whole or not at all (outfile.c).
 */
#ifndef DTSIM_VIEWS_OUTFILE_H
#define DTSIM_VIEWS_OUTFILE_H

#include <stdio.h>
#include <glib.h>

G_BEGIN_DECLS

/* An output being written: standard output, or a hidden file beside `path`.
 * Zero-initialise; close with sim_outfile_close() whatever open returned. */
typedef struct {
  FILE *f;
  char *path;       /* NULL: stdout */
  char *tmp;
  char *shown;
} SimOutFile;

/* Opens `path` (NULL or "-": standard output) for writing.  Bad input (a
 * missing folder, a folder, the file `source` being read) is one
 * SIM_ERROR_INPUT line naming -o. */
gboolean sim_outfile_open (SimOutFile *o, const char *path, const char *source, GError **error);
/* Writes `s` to o. */
gboolean sim_outfile_write (SimOutFile *o, const GString *s, GError **error);
/* Finishes o: renames the hidden file over the path when `ok`, else removes
 * it; TRUE when all of it was written. */
gboolean sim_outfile_close (SimOutFile *o, gboolean ok, GError **error);

/* Removes the folder `dir` and everything below it (a private temporary
 * folder, say).  A symbolic link inside is removed, never followed: one to a
 * folder outside must not empty that folder. */
void sim_remove_tree (const char *dir);

G_END_DECLS

#endif
