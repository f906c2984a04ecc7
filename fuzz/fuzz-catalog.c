/*
 * fuzz-catalog.c — libFuzzer target for the hardware catalog loader.
 *
 * A catalog comes from other people as a scenario does (`[cluster] catalog`,
 * `dtsim hardware FILE`; docs/security.md): whatever bytes the file holds,
 * sim_catalog_load() must return a catalog or a one-line SIM_ERROR_INPUT
 * error, never crash, hang, leak or allocate without bound.  Each input is
 * one catalog file, written to a private temporary file and loaded through
 * the same entry point dtsim uses: sim_input_read_text (regular file, size,
 * NUL bytes, UTF-8), the key-file checks and parsing, then every device and
 * link entry's keys, units and bounds.  A catalog that loads is then printed
 * as `dtsim hardware FILE` prints it (sim_catalog_write_tables), looked up by
 * each of its names, and freed.
 *
 * Built by `make fuzz` with clang and -fsanitize=fuzzer,address,undefined
 * (docs/fuzzing.md).
 */
#include <math.h>

#include "fuzz/fuzz-common.h"
#include "config/hardware.h"
#include "config/scenario.h"

#define TARGET "fuzz-catalog"

/* Called once by libFuzzer before the first input. */
int
LLVMFuzzerInitialize (int *argc G_GNUC_UNUSED, char ***argv G_GNUC_UNUSED)
{
  fuzz_init_glib ();
  fuzz_tmp_create (TARGET, "fuzz-catalog-XXXXXX.ini");
  return 0;
}

/* Aborts with `what` unless `ok`: an entry that loaded breaks a promise of
 * config/hardware.h. */
static void
fuzz_expect (gboolean ok, const char *name, const char *what)
{
  if (!ok)
    {
      fprintf (stderr, TARGET ": entry '%s' loaded with %s\n", name, what);
      abort ();
    }
}

/* The bounds config/hardware.h states for every field of a loaded catalog, and
 * what a run then does with it: look each entry up by name. */
static void
fuzz_check_catalog (const SimCatalog *c)
{
  guint n_devices = sim_catalog_n_devices (c), n_links = sim_catalog_n_links (c);
  if (n_devices + n_links == 0)
    abort ();
  for (guint i = 0; i < n_devices; i++)
    {
      const SimDevice *d = sim_catalog_device_at (c, i);
      fuzz_expect (d->name && d->description, d->name, "a NULL name or description");
      fuzz_expect (isfinite (d->flops) && d->flops > 0, d->name, "flops not > 0");
      fuzz_expect (isfinite (d->memory_bandwidth) && d->memory_bandwidth > 0, d->name,
                   "memory_bandwidth not > 0");
      fuzz_expect (d->tf32_flops >= 0 && d->bf16_flops >= 0 && d->fp16_flops >= 0
                   && d->memory >= 0 && isfinite (d->tf32_flops) && isfinite (d->bf16_flops)
                   && isfinite (d->fp16_flops) && isfinite (d->memory),
                   d->name, "a negative or infinite optional figure");
      fuzz_expect (d->efficiency > 0 && d->efficiency <= 1, d->name,
                   "efficiency outside (0, 1]");
      /* names are unique up to ASCII case only if the loader says so: the
       * lookup must at least find an entry of that name */
      const SimDevice *found = sim_catalog_device (c, d->name);
      fuzz_expect (found && g_ascii_strcasecmp (found->name, d->name) == 0, d->name,
                   "a name its lookup does not find");
    }
  for (guint i = 0; i < n_links; i++)
    {
      const SimLinkSpec *l = sim_catalog_link_at (c, i);
      fuzz_expect (l->name && l->description && l->kind, l->name,
                   "a NULL name, description or kind");
      fuzz_expect (g_strv_contains (sim_link_kinds (), l->kind), l->name, "an unknown kind");
      fuzz_expect (isfinite (l->bandwidth) && l->bandwidth > 0, l->name, "bandwidth not > 0");
      fuzz_expect (isfinite (l->latency) && l->latency >= 0, l->name, "latency not >= 0");
      fuzz_expect (l->efficiency > 0 && l->efficiency <= 1, l->name,
                   "efficiency outside (0, 1]");
      const SimLinkSpec *found = sim_catalog_link (c, l->name);
      fuzz_expect (found && g_ascii_strcasecmp (found->name, l->name) == 0, l->name,
                   "a name its lookup does not find");
      fuzz_expect (isfinite (l->sharp_bandwidth) && l->sharp_bandwidth >= 0, l->name,
                   "sharp_bandwidth not >= 0");
    }
  for (guint i = 0; i < sim_catalog_n_servers (c); i++)
    {
      const SimServer *v = sim_catalog_server_at (c, i);
      fuzz_expect (v->name && v->description, v->name, "a NULL name or description");
      fuzz_expect (sim_catalog_device (c, v->device) && sim_catalog_link (c, v->intra_fabric)
                   && sim_catalog_link (c, v->fabric), v->name,
                   "a device or link the catalog does not hold");
      fuzz_expect (v->gpus >= 1 && v->gpus <= 1024 && v->gpus == floor (v->gpus), v->name,
                   "gpus not a whole number in [1, 1024]");
      fuzz_expect (v->nics == 1 || v->nics == v->gpus, v->name,
                   "nics neither 1 nor one per GPU");
      const SimServer *found = sim_catalog_server (c, v->name);
      fuzz_expect (found && g_ascii_strcasecmp (found->name, v->name) == 0, v->name,
                   "a name its lookup does not find");
    }
  for (guint i = 0; i < sim_catalog_n_kinds (c); i++)
    {
      const SimLinkKind *k = sim_catalog_kind_at (c, i);
      fuzz_expect (k->name && k->description, k->name, "a NULL name or description");
      fuzz_expect (g_strv_contains (sim_link_kinds (), k->name), k->name, "an unknown kind");
      fuzz_expect (k->efficiency > 0 && k->efficiency <= 1, k->name,
                   "efficiency outside (0, 1]");
      fuzz_expect (isfinite (k->step_overhead) && k->step_overhead >= 0, k->name,
                   "step_overhead not >= 0");
      fuzz_expect (sim_catalog_kind (c, k->name) == k, k->name,
                   "a kind its lookup does not find");
    }
  double launch = sim_catalog_launch_overhead (c);
  fuzz_expect (isfinite (launch) && launch >= 0, "[collectives]", "launch_overhead not >= 0");
  g_free (sim_catalog_names (c, TRUE));
  g_free (sim_catalog_names (c, FALSE));
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  fuzz_tmp_write (TARGET, data, size);

  GError *error = NULL;
  SimCatalog *c = sim_catalog_load (fuzz_path, &error);
  if (!c)
    {
      fuzz_check_error (TARGET, error, SIM_ERROR, SIM_ERROR_INPUT);
      return 0;
    }
  if (error)
    abort ();
  fuzz_check_catalog (c);

  /* what `dtsim hardware FILE` prints: every line printable */
  GString *out = g_string_new (NULL);
  sim_catalog_write_tables (c, out);
  for (const unsigned char *p = (const unsigned char *) out->str; *p; p++)
    if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
      {
        fprintf (stderr, TARGET ": the tables hold control character 0x%02x\n", *p);
        abort ();
      }
  g_string_free (out, TRUE);
  sim_catalog_free (c);
  return 0;
}
