/*
 * trace-digest.c — prints one line per table of a trace database,
 * `TABLE ROWS SHA256`, the digest over the exact value of every row
 * (views/tracedigest.h says what it covers and leaves out).  Two databases of
 * the same scenario print the same lines when their traces are the same to
 * the last bit:
 *
 *     tools/trace-digest results/consistency.db
 *
 * Exit code 0; 2, with one line on stderr naming the file, for a file that
 * is not a trace it can read; 1 for wrong usage.
 */
#include "config.h"

#include <stdio.h>

#include "views/tracedb.h"
#include "views/tracedigest.h"

int
main (int argc, char **argv)
{
  if (argc != 2 || argv[1][0] == '-')
    {
      fprintf (stderr, "usage: trace-digest DB  (prints TABLE ROWS SHA256 per table)\n");
      return 1;
    }
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) digests = sim_trace_digest (argv[1], &error);
  if (!digests)
    {
      fprintf (stderr, "trace-digest: %s\n", error->message);
      return 2;
    }
  for (guint i = 0; i < digests->len; i++)
    {
      const SimTableDigest *d = g_ptr_array_index (digests, i);
      /* a name from the file, shown as clean text */
      g_autofree char *name = sim_clean_text (d->table, 256);
      printf ("%s %" G_GINT64_FORMAT " %s\n", name, d->rows, d->sha256);
    }
  return fflush (stdout) == 0 ? 0 : 1;
}
