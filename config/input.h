/*
 * input.h — reading files that come from other people.
 *
 * Scenario files, hardware catalogs and layer tables are exchanged between
 * students and colleagues, so dtsim reads them as untrusted text: only a
 * regular file (never a FIFO, a device or a directory, which could block or
 * never end), of at most SIM_INPUT_MAX_BYTES, holding UTF-8 text without NUL
 * bytes.  A key file's text is also scanned for what GLib's parser would
 * accept silently: a group or a key given twice (GKeyFile merges the one and
 * keeps the last of the other) and locale keys such as `workers[fr]`.
 * docs/security.md lists these limits.
 */
#ifndef DTSIM_CONFIG_INPUT_H
#define DTSIM_CONFIG_INPUT_H

#include <glib.h>

G_BEGIN_DECLS

/* The largest text file dtsim reads: scenario, catalog, layer table (bytes). */
#define SIM_INPUT_MAX_BYTES (4 * 1024 * 1024)

/* Reads the text file `path` (`what` names it in errors, e.g. "scenario
 * file") into a NUL-terminated string.  Refuses anything but a regular file
 * (without blocking on a FIFO), a file over SIM_INPUT_MAX_BYTES, NUL bytes
 * and invalid UTF-8, with a SIM_ERROR_INPUT error of one line naming the file
 * and the fix.  Free the result with g_free. */
char *sim_input_read_text (const char *path, const char *what, GError **error);

/* Scans the text of a GLib key file for a group or a key given twice, for
 * locale keys (`key[xx]`) and for control characters inside a key, a
 * value, a group name or any other line but a comment (a tab or an escape;
 * whitespace around a key or a value is fine); `file` names
 * it in the error, `group_fix` is the
 * advice for a repeated group.  Returns FALSE with a SIM_ERROR_INPUT error
 * naming the lines. */
gboolean sim_input_check_keyfile (const char *text, const char *file, const char *group_fix,
                                  GError **error);

/* TRUE when `s` holds no control character (below 0x20, or 0x7f). */
gboolean sim_input_is_one_line (const char *s);

/* A copy of `s` with every control character written as a C escape (\t,
 * \r, \x1b...), for quoting a message of a library (GKeyFile) that may
 * hold a piece of an input in one line of ours.  Free with g_free. */
char *sim_input_printable (const char *s);

G_END_DECLS

#endif
