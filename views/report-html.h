/*
 * report-html.h — `dtsim report DB`: one self-contained HTML page of a trace
 * database (docs/plots.md, "The report").
 */
#ifndef DTSIM_VIEWS_REPORT_HTML_H
#define DTSIM_VIEWS_REPORT_HTML_H

#include <glib.h>

G_BEGIN_DECLS

/* Writes the report of database `db` to `out` (NULL: the database's path
 * with .html for its extension).  The page needs nothing outside itself:
 * the figures are SVG images inside it, and its Content-Security-Policy
 * lets it load nothing and run no script.  Returns the exit code (0; 1 a
 * failure while writing or drawing; 2 bad input) and sets *error. */
int sim_report_html (const char *db, const char *out, GError **error);

G_END_DECLS

#endif
