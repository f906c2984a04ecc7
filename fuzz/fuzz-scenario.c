/*
 * fuzz-scenario.c — libFuzzer target for the scenario loader.
 *
 * Scenario files come from other people (docs/security.md): whatever bytes a
 * file holds, sim_scenario_load() must return configs or a GError, never
 * crash, hang, leak or allocate without bound.  Each input is one scenario
 * file, written to a private temporary file and loaded through the same entry
 * point `dtsim run` and `dtsim check` use: key-file parsing, `--set`
 * overrides, unknown-key checks, [sweep] expansion and the validation of
 * every point (catalog, network built once, model checked).
 *
 * To reach the `--set` path too, the input may start with up to
 * FUZZ_MAX_SETS lines of the form
 *
 *   --set section.key=value
 *
 * which are split off and passed as overrides, exactly as the command line
 * would pass them; the rest of the input is the file.  Seeds without such
 * lines are plain scenarios.
 *
 * Built by `make fuzz` with clang and -fsanitize=fuzzer,address,undefined
 * (docs/security.md, "Fuzzing the scenario loader").
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "sim/scenario.h"

#define FUZZ_MAX_SETS 8
#define FUZZ_SET_PREFIX "--set "

/* Path of this process's scenario file, rewritten for every input. */
static char *fuzz_path;

static void
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

/* Called once by libFuzzer before the first input. */
int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  /* the loader never runs BLAS, but keep OpenBLAS from starting threads */
  setenv ("OPENBLAS_NUM_THREADS", "1", 1);
  /* a g_return_if_fail() tripped by a scenario is a bug: make it a crash */
  g_log_set_default_handler (fuzz_log_handler, NULL);

  GError *error = NULL;
  int fd = g_file_open_tmp ("fuzz-scenario-XXXXXX.ini", &fuzz_path, &error);
  if (fd < 0)
    {
      fprintf (stderr, "fuzz-scenario: cannot create a temporary file: %s\n", error->message);
      abort ();
    }
  close (fd);
  atexit (fuzz_remove_file);
  return 0;
}

/* Writes size bytes of data to fuzz_path, replacing what it held. */
static void
fuzz_write (const uint8_t *data, size_t size)
{
  FILE *f = fopen (fuzz_path, "wb");
  if (!f || (size > 0 && fwrite (data, 1, size, f) != size) || fclose (f) != 0)
    {
      fprintf (stderr, "fuzz-scenario: cannot write %s: %s\n", fuzz_path, g_strerror (errno));
      abort ();
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* split off the leading "--set section.key=value" lines */
  char *sets[FUZZ_MAX_SETS + 1] = { NULL };
  int n_sets = 0;
  size_t pos = 0;
  const size_t plen = strlen (FUZZ_SET_PREFIX);
  while (n_sets < FUZZ_MAX_SETS && size - pos >= plen
         && memcmp (data + pos, FUZZ_SET_PREFIX, plen) == 0)
    {
      const uint8_t *start = data + pos + plen;
      const uint8_t *nl = memchr (start, '\n', size - pos - plen);
      size_t len = nl ? (size_t) (nl - start) : size - pos - plen;
      /* an argv string ends at its first NUL, as the shell would pass it */
      sets[n_sets++] = g_strndup ((const char *) start, len);
      pos += plen + len + (nl ? 1 : 0);
    }

  fuzz_write (data + pos, size - pos);

  GError *error = NULL;
  GPtrArray *configs = sim_scenario_load (fuzz_path, (const char *const *) sets, &error);
  if (configs)
    {
      /* the loader's contract: at least one point, no error set */
      if (configs->len == 0 || error)
        abort ();
      g_ptr_array_unref (configs);
    }
  else
    {
      /* the loader's contract: a failure is a SIM_ERROR_INPUT whose message
       * is one line (dtsim prints it as the one line of a bad input) */
      if (!error || !error->message || !g_error_matches (error, SIM_ERROR, SIM_ERROR_INPUT))
        abort ();
      if (strchr (error->message, '\n'))
        {
          fprintf (stderr, "fuzz-scenario: error message of more than one line: %s\n",
                   error->message);
          abort ();
        }
      g_error_free (error);
    }
  for (int i = 0; i < n_sets; i++)
    g_free (sets[i]);
  return 0;
}
