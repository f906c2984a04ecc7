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
 * (docs/fuzzing.md).
 */
#include "fuzz/fuzz-common.h"
#include "config/scenario.h"
#include "sim/load.h"

#define TARGET "fuzz-scenario"
#define FUZZ_MAX_SETS 8
#define FUZZ_SET_PREFIX "--set "

/* Called once by libFuzzer before the first input. */
int
LLVMFuzzerInitialize (int *argc G_GNUC_UNUSED, char ***argv G_GNUC_UNUSED)
{
  fuzz_init_glib ();
  fuzz_tmp_create (TARGET, "fuzz-scenario-XXXXXX.ini");
  return 0;
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

  fuzz_tmp_write (TARGET, data + pos, size - pos);

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
