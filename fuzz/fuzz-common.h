/*
 * fuzz-common.h — what the libFuzzer targets of fuzz/ share: GLib warnings
 * and criticals made fatal in a way libFuzzer reports, a private temporary
 * file that each input is written to, and the check that a refused input
 * got a one-line error.  Included by one harness per binary, so everything
 * here is static (and G_GNUC_UNUSED where a target may not need it).  See
 * docs/fuzzing.md.
 */
#ifndef DTSIM_FUZZ_COMMON_H
#define DTSIM_FUZZ_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

/* Path of this process's input file, rewritten for every input; NULL for a
 * target that parses text in memory. */
static char *fuzz_path;

G_GNUC_UNUSED static void
fuzz_remove_file (void)
{
  if (fuzz_path)
    unlink (fuzz_path);
  g_free (fuzz_path);
  fuzz_path = NULL;
}

/* GLib's own fatal path raises SIGTRAP, which libFuzzer does not catch:
 * warnings, criticals and errors abort() here instead, so the fuzzer reports
 * them as crashes with a stack and keeps the input. */
static void
fuzz_log_handler (const char *domain, GLogLevelFlags level, const char *message,
                  gpointer data)
{
  g_log_default_handler (domain, level, message, data);
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    abort ();
}

/* Setup every target does once, from LLVMFuzzerInitialize: no BLAS threads
 * (no parser runs BLAS; keep OpenBLAS from starting them anyway), and a
 * g_return_if_fail() or warning tripped by an input made a crash. */
static void
fuzz_init_glib (void)
{
  setenv ("OPENBLAS_NUM_THREADS", "1", 1);
  g_log_set_default_handler (fuzz_log_handler, NULL);
}

/* Creates fuzz_path from `template` (g_file_open_tmp's form, e.g.
 * "fuzz-catalog-XXXXXX.ini"), removed at exit.  `target` names the harness
 * in the message of a failure, which aborts. */
G_GNUC_UNUSED static void
fuzz_tmp_create (const char *target, const char *template)
{
  GError *error = NULL;
  int fd = g_file_open_tmp (template, &fuzz_path, &error);
  if (fd < 0)
    {
      fprintf (stderr, "%s: cannot create a temporary file: %s\n", target, error->message);
      abort ();
    }
  close (fd);
  atexit (fuzz_remove_file);
}

/* Writes size bytes of data to fuzz_path, replacing what it held. */
G_GNUC_UNUSED static void
fuzz_tmp_write (const char *target, const uint8_t *data, size_t size)
{
  FILE *f = fopen (fuzz_path, "wb");
  if (!f || (size > 0 && fwrite (data, 1, size, f) != size) || fclose (f) != 0)
    {
      fprintf (stderr, "%s: cannot write %s: %s\n", target, fuzz_path, g_strerror (errno));
      abort ();
    }
}

/* The contract of every loader on a refused input: an error of the expected
 * domain and code (code < 0: any code of the domain) whose message is one
 * line without control characters, since dtsim prints it as the one line of
 * a bad input on a terminal.  Aborts otherwise; frees the error. */
G_GNUC_UNUSED static void
fuzz_check_error (const char *target, GError *error, GQuark domain, int code)
{
  if (!error || !error->message || error->domain != domain
      || (code >= 0 && error->code != code))
    {
      fprintf (stderr, "%s: failure without the expected error (%s)\n", target,
               error ? error->message : "no error set");
      abort ();
    }
  for (const unsigned char *p = (const unsigned char *) error->message; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      {
        fprintf (stderr, "%s: error message holding control character 0x%02x: %s\n",
                 target, *p, error->message);
        abort ();
      }
  g_error_free (error);
}

#endif /* DTSIM_FUZZ_COMMON_H */
