/*
 * test-hardware.c — the hardware catalog (config/hardware.c): the built-in
 * catalog's entries and the arithmetic behind its derived figures; every
 * figure of docs/hardware.md's tables against the catalog, so the page and
 * the file cannot drift; the built-in catalog against
 * $DTSIM_SRCDIR/scenarios/hardware.ini, so the compiled-in copy is current;
 * one-line errors for every kind of bad catalog; and the `dtsim hardware`
 * command ($DTSIM_BIN).
 *
 * Expected figures are written as the vendor's numbers and the arithmetic
 * that turns them into SI base units (bits/s divided by 8, bidirectional
 * totals halved, sparse peaks halved).
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "config/hardware.h"
#include "config/scenario.h"
#include "config/units.h"
#include "tests/util.h"

/* Asserts that `got` equals `want` to 1e-12 relative (exactly at 0). */
#define assert_rel(got, want) \
  g_assert_cmpfloat_with_epsilon ((got), (want), 1e-12 * fabs ((double) (want)) + 1e-300)

/* Asserts that string `hay` contains `needle`, printing both if not. */
#define assert_contains(hay, needle) \
  assert_contains_at (__FILE__, __LINE__, G_STRFUNC, #hay, (hay), (needle))

static void
assert_contains_at (const char *file, int line, const char *func, const char *expr,
                    const char *hay, const char *needle)
{
  if (hay && strstr (hay, needle))
    return;
  g_autofree char *msg = g_strdup_printf ("%s = \"%s\" does not contain \"%s\"", expr,
                                          hay ? hay : "(null)", needle);
  g_assertion_message (G_LOG_DOMAIN, file, line, func, msg);
}

static char *tmpdir;

static const char *
srcdir (void)
{
  const char *d = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (d);
  return d;
}

static SimCatalog *
builtin (void)
{
  g_autoptr (GError) error = NULL;
  SimCatalog *c = sim_catalog_load (NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (c);
  return c;
}

static const SimDevice *
device_of (const SimCatalog *c, const char *name)
{
  const SimDevice *d = sim_catalog_device (c, name);
  if (!d)
    g_error ("no device '%s' in %s", name, sim_catalog_source (c));
  return d;
}

static const SimLinkSpec *
link_of (const SimCatalog *c, const char *name)
{
  const SimLinkSpec *l = sim_catalog_link (c, name);
  if (!l)
    g_error ("no link '%s' in %s", name, sim_catalog_source (c));
  return l;
}

/* ------------------------------------------------------ built-in catalog -- */

static void
test_builtin_entries (void)
{
  g_autoptr (SimCatalog) c = builtin ();
  g_assert_cmpstr (sim_catalog_source (c), ==, "built-in hardware.ini");
  const char *devices[] = { "xeon-8380-core", "xeon-8380", "epyc-7763-core", "epyc-7763",
                            "p100", "v100", "a100", "h100" };
  for (gsize i = 0; i < G_N_ELEMENTS (devices); i++)
    {
      const SimDevice *d = device_of (c, devices[i]);
      g_assert_cmpstr (d->name, ==, devices[i]);
      g_assert_cmpuint (strlen (d->description), >, 0);
      g_assert_cmpfloat (d->flops, >, 0);
      g_assert_cmpfloat (d->memory_bandwidth, >, 0);
      g_assert_cmpfloat (d->efficiency, >, 0);
      g_assert_cmpfloat (d->efficiency, <=, 1);
    }
  struct { const char *name, *kind; } links[] = {
    { "10gbe", "ethernet" }, { "25gbe", "ethernet" }, { "100gbe", "ethernet" },
    { "200gbe", "ethernet" }, { "400gbe", "ethernet" },
    { "ib-edr", "infiniband" }, { "ib-hdr", "infiniband" }, { "ib-ndr", "infiniband" },
    { "pcie3-x16", "pcie" }, { "pcie4-x16", "pcie" }, { "pcie5-x16", "pcie" },
    { "nvlink2", "nvlink" }, { "nvlink3", "nvlink" }, { "nvlink4", "nvlink" },
    { "nvswitch3", "nvlink" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (links); i++)
    {
      const SimLinkSpec *l = link_of (c, links[i].name);
      g_assert_cmpstr (l->kind, ==, links[i].kind);
      g_assert_cmpfloat (l->bandwidth, >, 0);
      g_assert_cmpfloat (l->latency, >=, 0);
    }
  /* the listing walks exactly the entries the names string lists */
  g_autofree char *dnames = sim_catalog_names (c, TRUE);
  g_auto (GStrv) dsplit = g_strsplit (dnames, ", ", -1);
  g_assert_cmpuint (g_strv_length (dsplit), ==, sim_catalog_n_devices (c));
  for (guint i = 0; i < sim_catalog_n_devices (c); i++)
    g_assert_cmpstr (sim_catalog_device_at (c, i)->name, ==, dsplit[i]);
  g_autofree char *lnames = sim_catalog_names (c, FALSE);
  g_auto (GStrv) lsplit = g_strsplit (lnames, ", ", -1);
  g_assert_cmpuint (g_strv_length (lsplit), ==, sim_catalog_n_links (c));
  for (guint i = 0; i < sim_catalog_n_links (c); i++)
    g_assert_cmpstr (sim_catalog_link_at (c, i)->name, ==, lsplit[i]);
}

/* The arithmetic behind the figures, written out (docs/hardware.md). */
static void
test_builtin_derivations (void)
{
  g_autoptr (SimCatalog) c = builtin ();
  /* CPUs: FMA units x FP32 lanes x 2 FLOP x base clock; DDR4-3200 x 8 channels x 8 bytes */
  double ddr4_socket = 8 * 3200e6 * 8;
  assert_rel (device_of (c, "xeon-8380-core")->flops, 2 * 16 * 2 * 2.30e9);
  assert_rel (device_of (c, "xeon-8380")->flops, 40 * (2 * 16 * 2 * 2.30e9));
  assert_rel (device_of (c, "xeon-8380")->memory_bandwidth, ddr4_socket);
  assert_rel (device_of (c, "xeon-8380-core")->memory_bandwidth, ddr4_socket / 40);
  assert_rel (device_of (c, "epyc-7763-core")->flops, 2 * 8 * 2 * 2.45e9);
  assert_rel (device_of (c, "epyc-7763")->flops, 64 * (2 * 8 * 2 * 2.45e9));
  assert_rel (device_of (c, "epyc-7763")->memory_bandwidth, ddr4_socket);
  assert_rel (device_of (c, "epyc-7763-core")->memory_bandwidth, ddr4_socket / 64);
  g_assert_cmpfloat (device_of (c, "xeon-8380")->memory, ==, 0); /* CPUs share host memory */

  /* GPUs: the datasheets' figures; H100 tensor peaks are the sparse ones halved */
  const SimDevice *a100 = device_of (c, "a100");
  assert_rel (a100->flops, 19.5e12);
  assert_rel (a100->tf32_flops, 156e12);
  assert_rel (a100->bf16_flops, 312e12);
  assert_rel (a100->memory_bandwidth, 2039e9);
  assert_rel (a100->memory, 80e9);
  const SimDevice *h100 = device_of (c, "h100");
  assert_rel (h100->flops, 67e12);
  assert_rel (h100->tf32_flops, 989e12 / 2);
  assert_rel (h100->bf16_flops, 1979e12 / 2);
  assert_rel (h100->memory_bandwidth, 3.35e12);
  const SimDevice *v100 = device_of (c, "v100");
  assert_rel (v100->flops, 15.7e12);
  assert_rel (v100->fp16_flops, 125e12);
  g_assert_cmpfloat (v100->tf32_flops, ==, 0); /* Volta tensor cores: FP16 only */
  g_assert_cmpfloat (v100->bf16_flops, ==, 0);
  assert_rel (v100->memory_bandwidth, 900e9);
  assert_rel (v100->memory, 32e9);
  const SimDevice *p100 = device_of (c, "p100");
  assert_rel (p100->flops, 10.6e12);
  assert_rel (p100->memory_bandwidth, 732e9);
  assert_rel (p100->memory, 16e9);

  /* networks: bits per second / 8 */
  assert_rel (link_of (c, "10gbe")->bandwidth, 10e9 / 8);
  assert_rel (link_of (c, "400gbe")->bandwidth, 400e9 / 8);
  assert_rel (link_of (c, "ib-edr")->bandwidth, 100e9 / 8);
  assert_rel (link_of (c, "ib-hdr")->bandwidth, 200e9 / 8);
  assert_rel (link_of (c, "ib-ndr")->bandwidth, 400e9 / 8);
  /* PCIe x16: 16 lanes x GT/s x 128/130 / 8, rounded to the MB/s in the catalog */
  g_assert_cmpfloat_with_epsilon (link_of (c, "pcie3-x16")->bandwidth, 16 * 8e9 * 128 / 130 / 8, 1e6);
  g_assert_cmpfloat_with_epsilon (link_of (c, "pcie4-x16")->bandwidth, 16 * 16e9 * 128 / 130 / 8, 1e6);
  g_assert_cmpfloat_with_epsilon (link_of (c, "pcie5-x16")->bandwidth, 16 * 32e9 * 128 / 130 / 8, 1e6);
  /* NVLink: the vendors' bidirectional totals, halved */
  assert_rel (link_of (c, "nvlink1")->bandwidth, 160e9 / 2);
  assert_rel (link_of (c, "nvlink2")->bandwidth, 300e9 / 2);
  assert_rel (link_of (c, "nvlink3")->bandwidth, 600e9 / 2);
  assert_rel (link_of (c, "nvlink4")->bandwidth, 900e9 / 2);
  assert_rel (link_of (c, "ib-hdr")->latency, 600e-9);

  /* what links deliver: every kind has its group; a link without its own
   * efficiency has its kind's */
  for (const char *const *k = sim_link_kinds (); *k; k++)
    g_assert_nonnull (sim_catalog_kind (c, *k));
  assert_rel (link_of (c, "ib-hdr")->efficiency, 24e9 / 25e9);  /* 24 of 25 GB/s per HDR NIC */
  assert_rel (link_of (c, "ib-edr")->efficiency, 12e9 / 12.5e9);
  assert_rel (link_of (c, "200gbe")->efficiency, sim_catalog_kind (c, "ethernet")->efficiency);
  assert_rel (link_of (c, "pcie4-x16")->efficiency, sim_catalog_kind (c, "pcie")->efficiency);
  g_assert_cmpfloat_with_epsilon (link_of (c, "pcie4-x16")->efficiency, 25e9 / 31.508e9, 0.005);
  assert_rel (sim_catalog_kind (c, "nvlink")->efficiency, 20.0 / 25.0);  /* 128-byte payloads */
  /* TCP/IPv4 with timestamps in 1500-byte frames: 1448 of 1538 bytes on the line */
  g_assert_cmpfloat_with_epsilon (link_of (c, "10gbe")->efficiency, 1448.0 / (1500 + 14 + 4 + 8 + 12),
                                  5e-5);
  /* NCCL's measured peaks: 230 of 300 GB/s (A100), 370 of 450 GB/s (H100) */
  g_assert_cmpfloat_with_epsilon (link_of (c, "nvlink3")->efficiency, 230.0 / 300, 5e-6);
  g_assert_cmpfloat_with_epsilon (link_of (c, "nvlink4")->efficiency, 370.0 / 450, 5e-6);
  /* NVLink SHARP: NVLS's 480 GB/s busbw on 8 H100 is 480 / (2 x 7/8) of
   * algorithm bandwidth, each GPU moving N (1 + 1/8) each way through the
   * switch; plain NVLink's switches do not reduce */
  g_assert_cmpfloat_with_epsilon (link_of (c, "nvswitch3")->sharp_bandwidth,
                                  480e9 / (2 * 7.0 / 8) * (1 + 1.0 / 8), 1e-4 * 308.57e9);
  g_assert_cmpfloat (link_of (c, "nvlink4")->sharp_bandwidth, ==, 0);
  g_assert_cmpfloat (link_of (c, "nvswitch3")->efficiency, ==, link_of (c, "nvlink4")->efficiency);
  /* NCCL tuning.cc, ring, Simple protocol: hwLat per step, baseLat per collective */
  assert_rel (sim_catalog_step_overhead (c, "nvlink"), 3.4e-6);
  assert_rel (sim_catalog_step_overhead (c, "pcie"), 5.7e-6);
  assert_rel (sim_catalog_step_overhead (c, "infiniband"), 14e-6);
  assert_rel (sim_catalog_step_overhead (c, "ethernet"), 14e-6);
  assert_rel (sim_catalog_launch_overhead (c), 8.4e-6);
  /* tuning.cc, getNetOverhead: Intel hosts (and the default) */
  assert_rel (sim_catalog_net_overhead (c), 1e-6);
}

/* ------------------------------------------- docs/hardware.md's tables -- */

/* The text of a table cell without citations ("[N3]") and backticks. */
static char *
cell_text (const char *cell)
{
  GString *s = g_string_new (NULL);
  int depth = 0;
  for (const char *p = cell; *p; p++)
    {
      if (*p == '[')
        depth++;
      else if (*p == ']' && depth > 0)
        depth--;
      else if (depth == 0 && *p != '`')
        g_string_append_c (s, *p);
    }
  return g_strstrip (g_string_free (s, FALSE));
}

/* The rows of the markdown table whose header starts with `header`: a
 * GPtrArray of GStrv, each the row's cells, stripped (leading and trailing
 * '|' dropped), the header and separator rows left out. */
static GPtrArray *
docs_table (const char *text, const char *header)
{
  GPtrArray *rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  int i = 0;
  while (lines[i] && !g_str_has_prefix (lines[i], header))
    i++;
  if (!lines[i])
    g_error ("docs/hardware.md has no table starting '%s'", header);
  for (i += 2; lines[i] && lines[i][0] == '|'; i++)
    {
      g_auto (GStrv) parts = g_strsplit (lines[i], "|", -1);
      guint n = g_strv_length (parts);
      g_assert_cmpuint (n, >=, 3);
      GPtrArray *cells = g_ptr_array_new ();
      for (guint k = 1; k + 1 < n; k++)
        g_ptr_array_add (cells, cell_text (parts[k]));
      g_ptr_array_add (cells, NULL);
      g_ptr_array_add (rows, g_ptr_array_free (cells, FALSE));
    }
  return rows;
}

/* A figure of the docs table: "-" is 0 (none), else a quantity of `kind`. */
static double
docs_figure (const char *text, SimUnitKind kind, const char *row, const char *column)
{
  if (strcmp (text, "-") == 0)
    return 0.0;
  double v = NAN;
  const char *why = NULL;
  if (!sim_parse_quantity (text, kind, &v, &why))
    g_error ("docs/hardware.md, %s, %s: '%s' is not %s", row, column, text, why);
  return v;
}

/* Fails naming the row and column when the docs and the catalog differ. */
static void
check_figure (const char *row, const char *column, double docs, double catalog)
{
  if (fabs (docs - catalog) > 1e-12 * fabs (catalog))
    g_error ("docs/hardware.md, %s, %s: the table says %.17g, the catalog %.17g; "
             "make them agree", row, column, docs, catalog);
}

static void
test_docs_match (void)
{
  g_autoptr (SimCatalog) c = builtin ();
  g_autofree char *path = g_build_filename (srcdir (), "docs", "hardware.md", NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, &error));
  g_assert_no_error (error);

  g_autoptr (GPtrArray) effs = docs_table (text, "| name | conv FP32 |");
  g_assert_cmpuint (effs->len, ==, sim_catalog_n_devices (c));
  for (guint r = 0; r < effs->len; r++)
    {
      char **cells = g_ptr_array_index (effs, r);
      g_assert_cmpuint (g_strv_length (cells), ==, 10);
      const SimDevice *d = device_of (c, cells[0]);
      check_figure (d->name, "overlap slowdown",
                    docs_figure (cells[9], SIM_UNIT_NONE, d->name, "overlap slowdown"),
                    d->overlap_slowdown);
      check_figure (d->name, "kernel overhead",
                    docs_figure (cells[8], SIM_UNIT_TIME, d->name, "kernel overhead"),
                    d->kernel_overhead);
      const struct { const char *column; double v; } cols[] = {
        { "conv FP32", d->conv_efficiency }, { "conv TF32", d->tf32_conv_efficiency },
        { "conv BF16", d->bf16_conv_efficiency }, { "conv FP16", d->fp16_conv_efficiency },
        { "conv3x3 FP32", d->conv3x3_efficiency }, { "attention factor", d->attention_factor },
        { "memory efficiency", d->memory_efficiency },
      };
      for (gsize k = 0; k < G_N_ELEMENTS (cols); k++)
        check_figure (d->name, cols[k].column,
                      docs_figure (cells[k + 1], SIM_UNIT_NONE, d->name, cols[k].column),
                      cols[k].v);
    }

  g_autoptr (GPtrArray) devices = docs_table (text, "| name | FP32 |");
  g_assert_cmpuint (devices->len, ==, sim_catalog_n_devices (c));
  for (guint r = 0; r < devices->len; r++)
    {
      char **cells = g_ptr_array_index (devices, r);
      g_assert_cmpuint (g_strv_length (cells), ==, 9);
      const SimDevice *d = device_of (c, cells[0]);
      check_figure (d->name, "FP32", docs_figure (cells[1], SIM_UNIT_COMPUTE, d->name, "FP32"), d->flops);
      check_figure (d->name, "TF32", docs_figure (cells[2], SIM_UNIT_COMPUTE, d->name, "TF32"), d->tf32_flops);
      check_figure (d->name, "BF16", docs_figure (cells[3], SIM_UNIT_COMPUTE, d->name, "BF16"), d->bf16_flops);
      check_figure (d->name, "FP16", docs_figure (cells[4], SIM_UNIT_COMPUTE, d->name, "FP16"), d->fp16_flops);
      check_figure (d->name, "FP8", docs_figure (cells[5], SIM_UNIT_COMPUTE, d->name, "FP8"), d->fp8_flops);
      check_figure (d->name, "memory bandwidth",
                    docs_figure (cells[6], SIM_UNIT_BANDWIDTH, d->name, "memory bandwidth"),
                    d->memory_bandwidth);
      check_figure (d->name, "memory", docs_figure (cells[7], SIM_UNIT_SIZE, d->name, "memory"), d->memory);
      check_figure (d->name, "efficiency",
                    docs_figure (cells[8], SIM_UNIT_NONE, d->name, "efficiency"), d->efficiency);
    }

  g_autoptr (GPtrArray) links = docs_table (text, "| name | kind |");
  g_assert_cmpuint (links->len, ==, sim_catalog_n_links (c));
  for (guint r = 0; r < links->len; r++)
    {
      char **cells = g_ptr_array_index (links, r);
      g_assert_cmpuint (g_strv_length (cells), ==, 5);
      const SimLinkSpec *l = link_of (c, cells[0]);
      g_assert_cmpstr (cells[1], ==, l->kind);
      check_figure (l->name, "bandwidth",
                    docs_figure (cells[2], SIM_UNIT_BANDWIDTH, l->name, "bandwidth"), l->bandwidth);
      check_figure (l->name, "latency",
                    docs_figure (cells[3], SIM_UNIT_TIME, l->name, "latency"), l->latency);
      check_figure (l->name, "efficiency",
                    docs_figure (cells[4], SIM_UNIT_NONE, l->name, "efficiency"), l->efficiency);
    }

  /* Servers: every entry's parts, as the catalog names them */
  g_autoptr (GPtrArray) servers = docs_table (text, "| name | device | GPUs |");
  g_assert_cmpuint (servers->len, ==, sim_catalog_n_servers (c));
  for (guint r = 0; r < servers->len; r++)
    {
      char **cells = g_ptr_array_index (servers, r);
      g_assert_cmpuint (g_strv_length (cells), ==, 6);
      const SimServer *v = sim_catalog_server (c, cells[0]);
      if (!v)
        g_error ("docs/hardware.md, Servers: no [server:%s] in the catalog", cells[0]);
      g_assert_cmpstr (cells[1], ==, v->device);
      check_figure (v->name, "GPUs", docs_figure (cells[2], SIM_UNIT_NONE, v->name, "GPUs"),
                    v->gpus);
      g_assert_cmpstr (cells[3], ==, v->intra_fabric);
      g_assert_cmpstr (cells[4], ==, v->fabric);
      check_figure (v->name, "NICs", docs_figure (cells[5], SIM_UNIT_NONE, v->name, "NICs"),
                    v->nics);
      /* its parts are entries of the catalog */
      g_assert_nonnull (sim_catalog_device (c, v->device));
      g_assert_nonnull (sim_catalog_link (c, v->intra_fabric));
      g_assert_nonnull (sim_catalog_link (c, v->fabric));
    }

  /* What links deliver: every kind's group, and the launch overhead */
  g_autoptr (GPtrArray) kinds = docs_table (text, "| kind | efficiency | step overhead |");
  g_assert_cmpuint (kinds->len, ==, sim_catalog_n_kinds (c));
  for (guint r = 0; r < kinds->len; r++)
    {
      char **cells = g_ptr_array_index (kinds, r);
      g_assert_cmpuint (g_strv_length (cells), ==, 3);
      const SimLinkKind *k = sim_catalog_kind (c, cells[0]);
      if (!k)
        g_error ("docs/hardware.md, What links deliver: no [kind:%s] in the catalog", cells[0]);
      check_figure (k->name, "efficiency",
                    docs_figure (cells[1], SIM_UNIT_NONE, k->name, "efficiency"), k->efficiency);
      check_figure (k->name, "step overhead",
                    docs_figure (cells[2], SIM_UNIT_TIME, k->name, "step overhead"),
                    k->step_overhead);
    }
  g_autoptr (GPtrArray) launch = docs_table (text, "| collective | launch overhead | network overhead |");
  g_assert_cmpuint (launch->len, ==, 1);
  char **cells = g_ptr_array_index (launch, 0);
  g_assert_cmpuint (g_strv_length (cells), ==, 3);
  check_figure ("collectives", "launch overhead",
                docs_figure (cells[1], SIM_UNIT_TIME, "collectives", "launch overhead"),
                sim_catalog_launch_overhead (c));
  check_figure ("collectives", "network overhead",
                docs_figure (cells[2], SIM_UNIT_TIME, "collectives", "network overhead"),
                sim_catalog_net_overhead (c));
}

/* The table parser itself: citations and backticks go, "-" is none. */
static void
test_docs_parser (void)
{
  g_autoptr (GPtrArray) rows = docs_table ("intro\n| name | kind | bandwidth per direction | latency |\n"
                                           "| --- | --- | --- | --- |\n"
                                           "| `x` | pcie | 1.5 GB/s [P1, L2] | - |\n\nafter\n",
                                           "| name | kind |");
  g_assert_cmpuint (rows->len, ==, 1);
  char **cells = g_ptr_array_index (rows, 0);
  g_assert_cmpstr (cells[0], ==, "x");
  g_assert_cmpstr (cells[2], ==, "1.5 GB/s");
  assert_rel (docs_figure (cells[2], SIM_UNIT_BANDWIDTH, "x", "bandwidth"), 1.5e9);
  g_assert_cmpfloat (docs_figure (cells[3], SIM_UNIT_TIME, "x", "latency"), ==, 0.0);
}

/* ------------------------------------ built-in = scenarios/hardware.ini -- */

static void
test_builtin_matches_file (void)
{
  g_autoptr (SimCatalog) b = builtin ();
  g_autofree char *path = g_build_filename (srcdir (), "scenarios", "hardware.ini", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SimCatalog) f = sim_catalog_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (sim_catalog_source (f), ==, path);
  g_assert_cmpuint (sim_catalog_n_devices (b), ==, sim_catalog_n_devices (f));
  g_assert_cmpuint (sim_catalog_n_links (b), ==, sim_catalog_n_links (f));
  for (guint i = 0; i < sim_catalog_n_devices (b); i++)
    {
      const SimDevice *x = sim_catalog_device_at (b, i), *y = sim_catalog_device_at (f, i);
      g_assert_cmpstr (x->name, ==, y->name);
      g_assert_cmpstr (x->description, ==, y->description);
      g_assert_cmpfloat (x->flops, ==, y->flops);
      g_assert_cmpfloat (x->tf32_flops, ==, y->tf32_flops);
      g_assert_cmpfloat (x->bf16_flops, ==, y->bf16_flops);
      g_assert_cmpfloat (x->fp16_flops, ==, y->fp16_flops);
      g_assert_cmpfloat (x->memory_bandwidth, ==, y->memory_bandwidth);
      g_assert_cmpfloat (x->memory, ==, y->memory);
      g_assert_cmpfloat (x->efficiency, ==, y->efficiency);
    }
  for (guint i = 0; i < sim_catalog_n_links (b); i++)
    {
      const SimLinkSpec *x = sim_catalog_link_at (b, i), *y = sim_catalog_link_at (f, i);
      g_assert_cmpstr (x->name, ==, y->name);
      g_assert_cmpstr (x->description, ==, y->description);
      g_assert_cmpstr (x->kind, ==, y->kind);
      g_assert_cmpfloat (x->bandwidth, ==, y->bandwidth);
      g_assert_cmpfloat (x->latency, ==, y->latency);
      g_assert_cmpfloat (x->efficiency, ==, y->efficiency);
    }
  g_assert_cmpuint (sim_catalog_n_kinds (b), ==, sim_catalog_n_kinds (f));
  for (guint i = 0; i < sim_catalog_n_kinds (b); i++)
    {
      const SimLinkKind *x = sim_catalog_kind_at (b, i), *y = sim_catalog_kind_at (f, i);
      g_assert_cmpstr (x->name, ==, y->name);
      g_assert_cmpstr (x->description, ==, y->description);
      g_assert_cmpfloat (x->efficiency, ==, y->efficiency);
      g_assert_cmpfloat (x->step_overhead, ==, y->step_overhead);
    }
  g_assert_cmpfloat (sim_catalog_launch_overhead (b), ==, sim_catalog_launch_overhead (f));
}

/* -------------------------------------------------------------- lookup -- */

static void
test_lookup (void)
{
  g_autoptr (SimCatalog) c = builtin ();
  g_assert_true (sim_catalog_device (c, "A100") == sim_catalog_device (c, "a100"));
  g_assert_true (sim_catalog_link (c, "IB-HDR") == sim_catalog_link (c, "ib-hdr"));
  g_assert_null (sim_catalog_device (c, "a200"));
  g_assert_null (sim_catalog_device (c, "ib-hdr")); /* a link is not a device */
  g_assert_null (sim_catalog_link (c, "a100"));
  g_autofree char *names = sim_catalog_names (c, TRUE);
  assert_contains (names, "p100, v100, v100-16gb, a100, a100-40gb, h100");
  g_autofree char *lnames = sim_catalog_names (c, FALSE);
  assert_contains (lnames, "ib-edr, ib-hdr, ib-ndr");
  g_assert_true (g_strv_contains (sim_link_kinds (), "nvlink"));
}

/* ------------------------------------------------------- bad catalogs -- */

static char *
write_catalog (const char *name, const char *text)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  return path;
}

#define GOOD_DEVICE \
  "[device:x]\ndescription = test\nflops = 1TFLOPS\nmemory_bandwidth = 1GBps\nefficiency = 0.5\n"
#define GOOD_LINK "[link:y]\nkind = pcie\ndescription = test\nbandwidth = 1GBps\nlatency = 1us\n"
#define GOOD_KIND "[kind:pcie]\ndescription = test\nefficiency = 0.75\nstep_overhead = 5us\n"
#define GOOD_COLLECTIVES "[collectives]\ndescription = test\nlaunch_overhead = 8us\n"

typedef struct {
  const char *test;   /* test path suffix */
  const char *text;   /* the catalog */
  const char *where;  /* "[group] key" the message must name, or NULL */
  const char *what;   /* and the explanation or fix it must hold */
} BadCase;

static const BadCase bad_cases[] = {
  { "unknown-key", GOOD_DEVICE "flop = 1TFLOPS\n", "[device:x] flop",
    "unknown key; did you mean flops? the keys of a device are: description, flops," },
  { "missing-key", "[device:x]\ndescription = test\nflops = 1TFLOPS\nefficiency = 0.5\n",
    "[device:x] memory_bandwidth", "missing; every device needs it, e.g. memory_bandwidth = 2039GBps" },
  { "missing-latency", "[link:y]\nkind = pcie\ndescription = t\nbandwidth = 1GBps\n",
    "[link:y] latency", "missing; every link needs it, e.g. latency = 600ns" },
  { "bad-unit", GOOD_LINK "[link:z]\nkind = nvlink\ndescription = t\nbandwidth = 5ms\nlatency = 1us\n",
    "[link:z] bandwidth", "'5ms' is not valid; expected a bandwidth such as 10Gbps" },
  { "no-unit", "[device:x]\ndescription = t\nflops = 19.5e12\nmemory_bandwidth = 1GBps\nefficiency = 0.5\n",
    "[device:x] flops", "'19.5e12' has no unit; write it with one, e.g. 19.5TFLOPS" },
  { "negative", GOOD_DEVICE "memory = -80GB\n", "[device:x] memory",
    "'-80GB' must be greater than 0 bytes" },
  { "server-device", GOOD_LINK "[server:s]\ndescription = t\ndevice = nope\ngpus = 8\n"
    "intra_fabric = y\nfabric = y\nnics = 8\n", "[server:s] device", "unknown device 'nope'" },
  { "server-link", GOOD_DEVICE GOOD_LINK "[server:s]\ndescription = t\ndevice = x\ngpus = 8\n"
    "intra_fabric = y\nfabric = nope\nnics = 8\n", "[server:s] fabric", "unknown link 'nope'" },
  { "server-nics", GOOD_DEVICE GOOD_LINK "[server:s]\ndescription = t\ndevice = x\ngpus = 8\n"
    "intra_fabric = y\nfabric = y\nnics = 4\n", "[server:s] nics",
    "4 NICs for 8 GPUs; dtsim lays one NIC per server or one per GPU: write nics = 1 or nics = 8" },
  { "server-gpus", GOOD_DEVICE GOOD_LINK "[server:s]\ndescription = t\ndevice = x\ngpus = 2.5\n"
    "intra_fabric = y\nfabric = y\nnics = 1\n", "[server:s] gpus",
    "expected a whole number, found 2.5" },
  { "server-missing", GOOD_DEVICE GOOD_LINK "[server:s]\ndescription = t\ndevice = x\n",
    "[server:s] gpus", "missing" },
  { "sharp-unit", GOOD_LINK "sharp_bandwidth = 300\n", "[link:y] sharp_bandwidth",
    "'300' has no unit; write it with one, e.g. 308.57GBps" },
  { "sharp-zero", GOOD_LINK "sharp_bandwidth = 0GBps\n", "[link:y] sharp_bandwidth",
    "must be greater than 0 bytes/s" },
  { "zero-bandwidth", "[link:y]\nkind = pcie\ndescription = t\nbandwidth = 0GBps\nlatency = 1us\n",
    "[link:y] bandwidth", "must be greater than 0 bytes/s" },
  { "negative-latency", "[link:y]\nkind = pcie\ndescription = t\nbandwidth = 1GBps\nlatency = -1us\n",
    "[link:y] latency", "'-1us' must be at least 0 s" },
  { "efficiency", "[device:x]\ndescription = t\nflops = 1TFLOPS\nmemory_bandwidth = 1GBps\nefficiency = 1.5\n",
    "[device:x] efficiency", "'1.5' must be in (0, 1]" },
  { "empty-value", GOOD_DEVICE "tf32_flops =\n", "[device:x] tf32_flops",
    "empty value; give one, e.g. tf32_flops = 156TFLOPS, or remove the key" },
  { "kind", "[link:y]\nkind = token-ring\ndescription = t\nbandwidth = 1GBps\nlatency = 1us\n",
    "[link:y] kind", "unknown kind 'token-ring'; use one of: ethernet, infiniband, pcie, nvlink" },
  { "group", GOOD_DEVICE "[gpu:z]\nflops = 1TFLOPS\n", NULL,
    "unknown group [gpu:z]; a catalog has only [device:NAME] and [link:NAME] groups" },
  { "group-help", GOOD_DEVICE "[gpu:z]\nflops = 1TFLOPS\n", NULL,
    "groups, plus [server:NAME], [kind:NAME] and [collectives] (see docs/hardware.md)" },
  { "name", "[device:A 100]\ndescription = t\n", NULL,
    "[device:A 100]: 'A 100' is not a valid name; use lower-case letters" },
  { "twice-group", GOOD_DEVICE "\n" GOOD_DEVICE, NULL,
    "[device:x] appears twice (lines 1 and 7); give each entry its own name" },
  { "twice-key", GOOD_DEVICE "flops = 2TFLOPS\n", "[device:x] flops",
    "set twice (lines 3 and 6); keep one" },
  { "syntax", "flops = 1TFLOPS\n", NULL, "cannot read hardware catalog:" },
  { "kind-name", GOOD_LINK "[kind:token-ring]\ndescription = t\nefficiency = 0.5\nstep_overhead = 1us\n",
    NULL, "[kind:token-ring]: unknown link kind 'token-ring'; use one of: ethernet, infiniband, pcie, nvlink" },
  { "kind-missing", GOOD_LINK "[kind:pcie]\ndescription = t\nefficiency = 0.5\n",
    "[kind:pcie] step_overhead", "missing; every link kind needs it, e.g. step_overhead = 3.4us" },
  { "kind-unknown-key", GOOD_LINK GOOD_KIND "bandwidth = 1GBps\n", "[kind:pcie] bandwidth",
    "unknown key; the keys of a link kind are: description, efficiency, step_overhead" },
  { "kind-percent", GOOD_LINK "[kind:pcie]\ndescription = t\nefficiency = 80%\nstep_overhead = 1us\n",
    "[kind:pcie] efficiency", "'80%' is not valid; expected" },
  { "step-overhead-unit", GOOD_LINK "[kind:pcie]\ndescription = t\nefficiency = 0.8\nstep_overhead = 3.4\n",
    "[kind:pcie] step_overhead", "'3.4' has no unit; write it with one, e.g. 3.4us" },
  { "collectives-name", GOOD_LINK "[collectives:nccl]\ndescription = t\nlaunch_overhead = 8us\n", NULL,
    "[collectives:nccl]: the [collectives] group takes no name; write [collectives]" },
  { "collectives-missing", GOOD_LINK "[collectives]\ndescription = t\n",
    "[collectives] launch_overhead",
    "missing; every [collectives] group needs it, e.g. launch_overhead = 8.4us" },
  { "collectives-twice", GOOD_LINK GOOD_COLLECTIVES GOOD_COLLECTIVES, NULL,
    "[collectives] appears twice" },
  { "empty", "# nothing\n", NULL, "no entries;" },
};

static void
test_bad (gconstpointer data)
{
  const BadCase *bc = data;
  g_autofree char *name = g_strdup_printf ("%s.ini", bc->test);
  g_autofree char *path = write_catalog (name, bc->text);
  g_autoptr (GError) error = NULL;
  g_autoptr (SimCatalog) c = sim_catalog_load (path, &error);
  g_assert_null (c);
  g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
  g_assert_null (strchr (error->message, '\n')); /* one line */
  g_assert_true (g_str_has_prefix (error->message, path));
  if (bc->where)
    {
      g_autofree char *where = g_strdup_printf ("%s: %s: ", path, bc->where);
      assert_contains (error->message, where);
    }
  assert_contains (error->message, bc->what);
  g_unlink (path);
}

static void
test_bad_missing_file (void)
{
  g_autofree char *path = g_build_filename (tmpdir, "nowhere.ini", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_null (sim_catalog_load (path, &error));
  g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
  g_autofree char *want = g_strdup_printf ("%s: no such hardware catalog; check the path", path);
  g_assert_cmpstr (error->message, ==, want);
}

/* Reproducers of fuzz/fuzz-catalog's findings (tests/data/fuzz/, listed in
 * docs/fuzzing.md): each is refused with one line of printable text holding
 * `what`. */
typedef struct {
  const char *file;     /* under tests/data/fuzz/ */
  const char *what;     /* substring of the message */
} FuzzCase;

static const FuzzCase fuzz_cases[] = {
  /* a DEL in a key was quoted in the message */
  { "catalog-control-in-key.ini",
    ": [link:y]: line 3 holds a control character (a tab or an escape) inside its key; "
    "write it with printable characters only" },
  /* GKeyFile quoted the line it could not parse, escape sequence and all: the
   * error set the terminal's title */
  { "catalog-escape-line.ini",
    ": line 3 holds a control character (a tab or an escape); write it with printable "
    "characters only" },
  /* and the tab before a line it could not parse (GKeyFile's own words
   * after ours may be translated: only the quoted line is asserted) */
  { "catalog-blank-control-line.ini", ": cannot read hardware catalog: " },
  { "catalog-blank-control-line.ini", "\\tflops 1TFLOPS" },
  /* and the form feeds after a group, which GKeyFile does not strip */
  { "catalog-formfeed-group.ini", ": cannot read hardware catalog: " },
  { "catalog-formfeed-group.ini", "[link:y]\\f\\f" },
};

static void
test_fuzz (gconstpointer data)
{
  const FuzzCase *fc = data;
  g_autofree char *path = g_build_filename (srcdir (), "tests", "data", "fuzz", fc->file, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SimCatalog) c = sim_catalog_load (path, &error);
  g_assert_null (c);
  g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
  g_assert_true (g_str_has_prefix (error->message, path));
  assert_contains (error->message, fc->what);
  for (const char *p = error->message; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      g_error ("control character 0x%02x in \"%s\"", *p, error->message);
}

/* A small valid catalog: optional keys may be left out, units may vary. */
static void
test_good_small (void)
{
  g_autofree char *path = write_catalog ("small.ini",
                                         "# comment\n" GOOD_DEVICE "memory = 1GiB\n\n" GOOD_LINK);
  g_autoptr (GError) error = NULL;
  g_autoptr (SimCatalog) c = sim_catalog_load (path, &error);
  g_assert_no_error (error);
  const SimDevice *x = device_of (c, "x");
  assert_rel (x->flops, 1e12);
  g_assert_cmpfloat (x->tf32_flops, ==, 0);
  assert_rel (x->memory, 1024.0 * 1024 * 1024);
  assert_rel (link_of (c, "y")->latency, 1e-6);
  g_assert_cmpuint (sim_catalog_n_devices (c), ==, 1);
  g_assert_cmpuint (sim_catalog_n_links (c), ==, 1);
  g_unlink (path);
}

/* A bad efficiency, of a kind or of a link, is refused with exactly this
 * line: the file, the [group] key, the value, the range and a valid value. */
static void
test_bad_efficiency_message (void)
{
  struct { const char *text, *want; } cases[] = {
    { GOOD_LINK "[kind:pcie]\ndescription = t\nefficiency = 1.2\nstep_overhead = 1us\n",
      "[kind:pcie] efficiency: '1.2' must be in (0, 1]; write a share such as efficiency = 0.8" },
    { GOOD_LINK "[kind:pcie]\ndescription = t\nefficiency = 0\nstep_overhead = 1us\n",
      "[kind:pcie] efficiency: '0' must be in (0, 1]; write a share such as efficiency = 0.8" },
    { "[link:y]\nkind = nvlink\ndescription = t\nbandwidth = 1GBps\nlatency = 1us\n"
      "efficiency = -0.5\n",
      "[link:y] efficiency: '-0.5' must be in (0, 1]; write a share such as efficiency = 0.76667" },
    { GOOD_LINK "[kind:pcie]\ndescription = t\nefficiency =\nstep_overhead = 1us\n",
      "[kind:pcie] efficiency: empty value; give one, e.g. efficiency = 0.8" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = write_catalog ("efficiency.ini", cases[i].text);
      g_autoptr (GError) error = NULL;
      g_autoptr (SimCatalog) c = sim_catalog_load (path, &error);
      g_assert_null (c);
      g_assert_error (error, SIM_ERROR, SIM_ERROR_INPUT);
      g_autofree char *want = g_strdup_printf ("%s: %s", path, cases[i].want);
      g_assert_cmpstr (error->message, ==, want);
      g_unlink (path);
    }
}

/* A link takes its own efficiency, else its kind's, else 1; the overheads
 * are the kind's and the [collectives] group's, 0 where absent. */
static void
test_good_kinds (void)
{
  g_autofree char *path = write_catalog (
    "kinds.ini", GOOD_LINK
    "[link:own]\nkind = pcie\ndescription = t\nbandwidth = 2GBps\nlatency = 1us\nefficiency = 0.5\n"
    "[link:nv]\nkind = nvlink\ndescription = t\nbandwidth = 3GBps\nlatency = 1us\n"
    GOOD_KIND GOOD_COLLECTIVES);
  g_autoptr (GError) error = NULL;
  g_autoptr (SimCatalog) c = sim_catalog_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (link_of (c, "y")->efficiency, ==, 0.75);   /* the kind's, written after it */
  g_assert_cmpfloat (link_of (c, "own")->efficiency, ==, 0.5);  /* its own wins */
  g_assert_cmpfloat (link_of (c, "nv")->efficiency, ==, 1.0);   /* no [kind:nvlink]: raw */
  g_assert_cmpuint (sim_catalog_n_kinds (c), ==, 1);
  const SimLinkKind *k = sim_catalog_kind (c, "PCIe");
  g_assert_true (k == sim_catalog_kind_at (c, 0));
  g_assert_cmpstr (k->name, ==, "pcie");
  g_assert_cmpstr (k->description, ==, "test");
  g_assert_null (sim_catalog_kind (c, "nvlink"));
  assert_rel (sim_catalog_step_overhead (c, "pcie"), 5e-6);
  g_assert_cmpfloat (sim_catalog_step_overhead (c, "nvlink"), ==, 0.0);
  assert_rel (sim_catalog_launch_overhead (c), 8e-6);
  /* a [collectives] group without net_overhead (written before it) */
  g_assert_cmpfloat (sim_catalog_net_overhead (c), ==, 0.0);
  g_unlink (path);

  /* no [kind:] and no [collectives]: every figure as before, overheads 0 */
  g_autofree char *plain = write_catalog ("plain.ini", GOOD_LINK);
  g_autoptr (SimCatalog) p = sim_catalog_load (plain, &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (link_of (p, "y")->efficiency, ==, 1.0);
  g_assert_cmpuint (sim_catalog_n_kinds (p), ==, 0);
  g_assert_cmpfloat (sim_catalog_launch_overhead (p), ==, 0.0);
  g_assert_cmpfloat (sim_catalog_net_overhead (p), ==, 0.0);
  g_unlink (plain);
}

/* -------------------------------------------------------- dtsim hardware -- */

/* dtsim with the arguments (NULL-terminated), run in tmpdir. */
#define dtsim(out, err, ...) test_run_dtsim (tmpdir, (out), (err), __VA_ARGS__)

static void
test_cli_builtin (void)
{
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (dtsim (&out, &err, "hardware", NULL), ==, 0);
  g_assert_cmpstr (err, ==, "");
  assert_contains (out, "Devices (built-in hardware.ini");
  assert_contains (out, "Links (");
  /* every entry has its row, starting with its name */
  g_autoptr (SimCatalog) c = builtin ();
  for (guint i = 0; i < sim_catalog_n_devices (c); i++)
    {
      g_autofree char *row = g_strdup_printf ("\n%s ", sim_catalog_device_at (c, i)->name);
      assert_contains (out, row);
    }
  for (guint i = 0; i < sim_catalog_n_links (c); i++)
    {
      g_autofree char *row = g_strdup_printf ("\n%s ", sim_catalog_link_at (c, i)->name);
      assert_contains (out, row);
    }
  /* h100 in human units, its columns aligned under the header's */
  assert_contains (out, "\nh100 ");
  assert_contains (out, "67 TFLOP/s");
  assert_contains (out, "989.5 TFLOP/s");
  assert_contains (out, "3.35 TB/s");
  assert_contains (out, "50 GB/s");
  assert_contains (out, "(400 Gb/s)");
  /* nvlink3: its efficiency and what it delivers; the kinds; the launch */
  assert_contains (out, "0.76667     230 GB/s");
  assert_contains (out, "\nLink kinds (");
  assert_contains (out, "\nnvlink      0.8         3.4 us\n");
  assert_contains (out, "\nCollectives: launch overhead 8.4 us per collective, network "
                   "overhead 1 us per step of a ring across nodes\n");
  const char *header = strstr (out, "name ");
  const char *h100 = strstr (out, "\nh100 ") + 1;
  g_assert_cmpint (strstr (header, "FP32") - header, ==, strstr (h100, "67 TFLOP/s") - h100);

  g_autofree char *help = NULL;
  g_assert_cmpint (dtsim (&help, NULL, "--help", NULL), ==, 0);
  assert_contains (help, "dtsim hardware [FILE]");
}

static void
test_cli_file (void)
{
  g_autofree char *good = write_catalog ("cli.ini", GOOD_DEVICE GOOD_LINK);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (dtsim (&out, &err, "hardware", good, NULL), ==, 0);
  g_autofree char *title = g_strdup_printf ("Devices (%s;", good);
  assert_contains (out, title);
  assert_contains (out, "\nx ");
  assert_contains (out, "\ny ");

  g_autofree char *bad = write_catalog ("cli-bad.ini", GOOD_DEVICE "memory = 2\n");
  g_autofree char *out2 = NULL, *err2 = NULL;
  g_assert_cmpint (dtsim (&out2, &err2, "hardware", bad, NULL), ==, 2);
  g_assert_cmpstr (out2, ==, "");
  g_autofree char *want = g_strdup_printf ("dtsim: %s: [device:x] memory: '2' has no unit", bad);
  g_assert_true (g_str_has_prefix (err2, want));
  g_assert_cmpuint (strchr (err2, '\n') - err2, ==, strlen (err2) - 1); /* one line */

  g_autofree char *out3 = NULL, *err3 = NULL;
  g_assert_cmpint (dtsim (&out3, &err3, "hardware", good, good, NULL), ==, 2);
  assert_contains (err3, "hardware takes at most one catalog file");
  g_unlink (good);
  g_unlink (bad);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-hardware-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);

  g_test_add_func ("/hardware/builtin/entries", test_builtin_entries);
  g_test_add_func ("/hardware/builtin/derivations", test_builtin_derivations);
  g_test_add_func ("/hardware/builtin/matches-file", test_builtin_matches_file);
  g_test_add_func ("/hardware/docs/parser", test_docs_parser);
  g_test_add_func ("/hardware/docs/matches-catalog", test_docs_match);
  g_test_add_func ("/hardware/lookup", test_lookup);
  g_test_add_func ("/hardware/good/small", test_good_small);
  for (gsize i = 0; i < G_N_ELEMENTS (bad_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/hardware/bad/%s", bad_cases[i].test);
      g_test_add_data_func (name, &bad_cases[i], test_bad);
    }
  g_test_add_func ("/hardware/bad/missing-file", test_bad_missing_file);
  g_test_add_func ("/hardware/bad/efficiency-message", test_bad_efficiency_message);
  g_test_add_func ("/hardware/good/kinds", test_good_kinds);
  for (gsize i = 0; i < G_N_ELEMENTS (fuzz_cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/hardware/fuzz/%s/%" G_GSIZE_FORMAT,
                                               fuzz_cases[i].file, i);
      g_test_add_data_func (name, &fuzz_cases[i], test_fuzz);
    }
  g_test_add_func ("/hardware/cli/builtin", test_cli_builtin);
  g_test_add_func ("/hardware/cli/file", test_cli_file);

  int rc = g_test_run ();
  g_rmdir (tmpdir);
  g_free (tmpdir);
  return rc;
}
