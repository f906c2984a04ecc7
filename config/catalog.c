/*
 * catalog.c — a scenario's [cluster] device and server, [network] fabric
 * and intra_fabric, applied from the hardware catalog.
 *
 * [cluster] device copies the catalog entry's peak (of the chosen [device]
 * precision), efficiency, memory bandwidth and capacity into the [device]
 * keys the file did not set itself; [network] fabric and intra_fabric do the
 * same for link bandwidths, latencies and efficiencies (an efficiency only
 * with the catalog's bandwidth: a bandwidth the file writes is kept exactly,
 * unless it writes an efficiency too); an intra_fabric whose switches
 * reduce (sharp_bandwidth) sets [network] nvswitch = sharp and
 * nvls_bandwidth where the file did not; [cluster] server names a device,
 * both fabrics, gpus_per_node and nic for the nodes topology, where the file
 * set none.  The resolved values replace the
 * defaults in the run's `params` rows, so a trace says which figures were
 * used.
 *
 * [cluster] device_mix lists several catalog entries with a count each, in
 * worker order ("a100 x 8, h100 x 8"): each entry's figures are taken as
 * [cluster] device takes them, into a SimDeviceKind of its own, and the
 * first entry's also into the [device] keys (what the servers run on, and
 * what the params rows show).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "config/catalog.h"
#include "config/hardware.h"
#include "comm/collectives.h"
#include "netmodel/netmodel.h"

/* Replaces the params-row text of "section.key" in c. */
static void
set_param_text (SimConfig *c, const char *dotted, double v)
{
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), dotted) == 0)
      {
        g_free (g_ptr_array_index (c->param_values, i));
        g_ptr_array_index (c->param_values, i) = g_strdup_printf ("%.17g", v);
        return;
      }
}

/* Replaces the params-row text of "section.key" in c with `text`. */
static void
set_param_string (SimConfig *c, const char *dotted, const char *text)
{
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), dotted) == 0)
      {
        g_free (g_ptr_array_index (c->param_values, i));
        g_ptr_array_index (c->param_values, i) = g_strdup (text);
        return;
      }
}

static gboolean
given (const SimConfig *c, const char *dotted)
{
  return g_hash_table_contains (c->given, dotted);
}

/* Sets *field (and its params row) to v unless the file set the key. */
static void
take (SimConfig *c, const char *dotted, double *field, double v)
{
  if (given (c, dotted))
    return;
  *field = v;
  set_param_text (c, dotted, v);
}

/* Where a catalog link's figures go: their keys ("section.key") and the
 * fields that hold them. */
typedef struct {
  const char *bandwidth_key, *latency_key, *efficiency_key;
  double *bandwidth, *latency, *efficiency;
} LinkTarget;

/* Takes the raw bandwidth, the latency and the efficiency of catalog link
 * `name` (named by [network] `key`) into `t` where the file left them unset.
 * The efficiency goes with the catalog's bandwidth only: a bandwidth written
 * as a number is what the scenario wants its links to carry. */
static gboolean
take_link (SimConfig *c, const SimCatalog *cat, const char *file, const char *key,
           const char *name, const LinkTarget *t, GError **error)
{
  const SimLinkSpec *l = sim_catalog_link (cat, name);
  if (!l)
    {
      g_autofree char *names = sim_catalog_names (cat, FALSE);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [network] %s: unknown link '%s'; use one of: %s (dtsim hardware lists them)",
                   file, key, name, names);
      return FALSE;
    }
  if (!given (c, t->bandwidth_key))
    take (c, t->efficiency_key, t->efficiency, l->efficiency);
  take (c, t->bandwidth_key, t->bandwidth, l->bandwidth);
  take (c, t->latency_key, t->latency, l->latency);
  return TRUE;
}

/* [network] intra_fabric: the nodes topology's own keys, in c->values. */
static gboolean
take_intra_link (SimConfig *c, const SimCatalog *cat, const char *file, GError **error)
{
  double bw = base_values_double (c->values, "network.intra_bandwidth");
  double lat = base_values_double (c->values, "network.intra_latency");
  double eff = base_values_double (c->values, "network.intra_efficiency");
  LinkTarget t = { "network.intra_bandwidth", "network.intra_latency",
                   "network.intra_efficiency", &bw, &lat, &eff };
  if (!take_link (c, cat, file, "intra_fabric", c->intra_fabric, &t, error))
    return FALSE;
  base_values_set_double (c->values, "network.intra_bandwidth", bw);
  base_values_set_double (c->values, "network.intra_latency", lat);
  base_values_set_double (c->values, "network.intra_efficiency", eff);
  /* a fabric whose switches reduce (NVLink SHARP) says so, and at what
   * rate, unless the file says otherwise */
  const SimLinkSpec *l = sim_catalog_link (cat, c->intra_fabric);
  if (l->sharp_bandwidth > 0 && !given (c, "network.nvswitch"))
    {
      base_values_set_int (c->values, "network.nvswitch", 1);
      set_param_string (c, "network.nvswitch", "sharp");
    }
  if (l->sharp_bandwidth > 0 && !given (c, "network.nvls_bandwidth"))
    {
      base_values_set_double (c->values, "network.nvls_bandwidth", l->sharp_bandwidth);
      set_param_text (c, "network.nvls_bandwidth", l->sharp_bandwidth);
    }
  return TRUE;
}

/* [cluster] device: the entry's figures at c's precision into the [device]
 * keys the file left unset. */
static gboolean
take_device (SimConfig *c, const SimCatalog *cat, const char *file, GError **error)
{
  static const char *const prec[] = { "fp32", "tf32", "bf16", "fp16", "fp8" };
  const SimDevice *d = sim_catalog_device (cat, c->device);
  if (!d)
    {
      g_autofree char *names = sim_catalog_names (cat, TRUE);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [cluster] device: unknown device '%s'; use one of: %s (dtsim hardware lists them)",
                   file, c->device, names);
      return FALSE;
    }
  /* fp8: the linear layers at the fp8 figures, every other layer at
   * bf16's, which fill the keys below */
  gboolean fp8 = c->precision == SIM_PREC_FP8;
  SimDevicePrecision dp = sim_device_precision (d, fp8 ? SIM_PREC_BF16 : c->precision);
  double peak = dp.peak;
  if (fp8 && !(d->fp8_flops > 0) && !given (c, "device.fp8_flops"))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [device] precision: device '%s' has no fp8 peak (fp8_flops) in the catalog; use precision = bf16 or set [device] fp8_flops",
                   file, c->device);
      return FALSE;
    }
  if (!(peak > 0) && !given (c, "device.flops"))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [device] precision: device '%s' has no %s peak in the catalog; use precision = fp32 or set [device] flops",
                   file, c->device, prec[fp8 ? SIM_PREC_BF16 : c->precision]);
      return FALSE;
    }
  if (fp8)
    {
      take (c, "device.fp8_flops", &c->fp8_flops, d->fp8_flops);
      take (c, "device.fp8_efficiency", &c->fp8_efficiency,
            d->fp8_efficiency > 0 ? d->fp8_efficiency
            : dp.efficiency > 0   ? dp.efficiency : d->efficiency);
    }
  take (c, "device.flops", &c->flops, peak);
  take (c, "device.efficiency", &c->efficiency,
        dp.efficiency > 0 ? dp.efficiency : d->efficiency);
  /* a file that sets efficiency itself keeps convolutions at it */
  if (!given (c, "device.efficiency"))
    take (c, "device.conv_efficiency", &c->conv_efficiency, dp.conv_efficiency);
  /* the catalog's 3 x 3 figure is FP32's (Winograd), and goes with its
   * convolution figure */
  if (!given (c, "device.efficiency") && !given (c, "device.conv_efficiency")
      && c->precision == SIM_PREC_FP32)
    take (c, "device.conv3x3_efficiency", &c->conv3x3_efficiency, d->conv3x3_efficiency);
  take (c, "device.attention_factor", &c->attention_factor,
        d->attention_factor > 0 ? d->attention_factor : 1.0);
  take (c, "device.memory_efficiency", &c->memory_efficiency,
        d->memory_efficiency > 0 ? d->memory_efficiency : 1.0);
  take (c, "device.kernel_overhead", &c->kernel_overhead, d->kernel_overhead);
  take (c, "device.overlap_slowdown", &c->overlap_slowdown, d->overlap_slowdown);
  take (c, "device.memory_bandwidth", &c->memory_bandwidth, d->memory_bandwidth);
  take (c, "device.memory", &c->memory, d->memory);
  /* the framework's share of a catalog device's memory */
  if (c->memory > 0)
    take (c, "device.reserve", &c->reserve,
          SIM_RESERVE_CONTEXT + SIM_RESERVE_FRAGMENTATION * c->memory);
  /* a catalog of the user's own may price its devices; the built-in
   * one does not */
  if (d->price > 0)
    take (c, "cluster.price", &c->price, d->price);
  return TRUE;
}

/* The [device] figures of c as a SimDeviceKind. */
static void
kind_from (SimDeviceKind *k, const SimConfig *c)
{
  k->flops = c->flops;
  k->efficiency = c->efficiency;
  k->conv_efficiency = c->conv_efficiency;
  k->conv3x3_efficiency = c->conv3x3_efficiency;
  k->attention_factor = c->attention_factor;
  k->memory_efficiency = c->memory_efficiency;
  k->kernel_overhead = c->kernel_overhead;
  k->overlap_slowdown = c->overlap_slowdown;
  k->memory_bandwidth = c->memory_bandwidth;
  k->memory = c->memory;
  k->reserve = c->reserve;
  k->price = c->price;
}

void
sim_config_with_kind (SimConfig *dst, const SimConfig *c, int kind)
{
  *dst = *c;
  if (kind < 0 || kind >= c->n_kinds)
    return;
  const SimDeviceKind *k = &c->kinds[kind];
  dst->device = k->name;
  dst->flops = k->flops;
  dst->efficiency = k->efficiency;
  dst->conv_efficiency = k->conv_efficiency;
  dst->conv3x3_efficiency = k->conv3x3_efficiency;
  dst->attention_factor = k->attention_factor;
  dst->memory_efficiency = k->memory_efficiency;
  dst->kernel_overhead = k->kernel_overhead;
  dst->overlap_slowdown = k->overlap_slowdown;
  dst->memory_bandwidth = k->memory_bandwidth;
  dst->memory = k->memory;
  dst->reserve = k->reserve;
  dst->price = k->price;
}

static gboolean G_GNUC_PRINTF (3, 4)
devices_error (GError **error, const char *file, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [cluster] device_mix: %s", file, msg);
  return FALSE;
}

/* Parses entry e of [cluster] device_mix, "NAME x COUNT" or "NAME" (one
 * worker), into k (its name and count). */
static gboolean
parse_device_entry (const char *e, SimDeviceKind *k, const char *file, GError **error)
{
  g_auto (GStrv) w = g_strsplit_set (e, " \t", -1);
  const char *parts[4] = { NULL, NULL, NULL, NULL };
  int n = 0;
  for (int j = 0; w[j]; j++)
    if (w[j][0] != '\0')
      {
        if (n == 3)
          return devices_error (error, file, "'%s' is not 'NAME x COUNT'; write e.g. devices = a100 x 8, h100 x 8", e);
        parts[n++] = w[j];
      }
  if (n == 2 || (n == 3 && g_ascii_strcasecmp (parts[1], "x") != 0))
    return devices_error (error, file, "'%s' is not 'NAME x COUNT'; write e.g. devices = a100 x 8, h100 x 8", e);
  gint64 count = 1;
  if (n == 3)
    {
      char *end = NULL;
      errno = 0;
      count = g_ascii_strtoll (parts[2], &end, 10);
      if (errno || end == parts[2] || *end != '\0' || count < 1 || count > SIM_MAX_HOSTS)
        return devices_error (error, file, "'%s': the count '%s' is not a whole number of workers from 1 to %d; write e.g. a100 x 8",
                              e, parts[2], SIM_MAX_HOSTS);
    }
  k->name = g_strdup (parts[0]);
  k->count = count;
  return TRUE;
}

/* [cluster] device_mix: its entries, each one's figures from the catalog as
 * take_device takes them (into a copy of c whose params rows are left
 * alone), every worker's kind, and the first kind's figures into c. */
static gboolean
take_devices (SimConfig *c, const SimCatalog *cat, const char *file, GError **error)
{
  if (c->device)
    return devices_error (error, file, "set together with [cluster] device; give one device for every worker (device) or a list of them (device_mix), not both");
  /* "+" separates entries too: a sweep's values are split at commas */
  g_auto (GStrv) entries = g_strsplit_set (c->devices, ",+", -1);
  GArray *kinds = g_array_new (FALSE, TRUE, sizeof (SimDeviceKind));
  gint64 total = 0;
  gboolean ok = TRUE;
  for (int i = 0; ok && entries[i]; i++)
    {
      char *e = g_strstrip (entries[i]);
      if (*e == '\0')
        {
          ok = devices_error (error, file, "entry %d is empty; write e.g. devices = a100 x 8, h100 x 8", i + 1);
          break;
        }
      if (kinds->len == SIM_MAX_DEVICE_KINDS)
        {
          ok = devices_error (error, file, "more than %d entries; list each run of workers of one kind once, e.g. a100 x 64", SIM_MAX_DEVICE_KINDS);
          break;
        }
      SimDeviceKind k = { 0 };
      if (!(ok = parse_device_entry (e, &k, file, error)))
        break;
      total += k.count;
      g_array_append_val (kinds, k);
      if (!sim_catalog_device (cat, k.name))
        {
          g_autofree char *names = sim_catalog_names (cat, TRUE);
          ok = devices_error (error, file, "unknown device '%s'; use one of: %s (dtsim hardware lists them)",
                              k.name, names);
          break;
        }
      /* its figures, as [cluster] device would set them */
      SimConfig kc = *c;
      g_autoptr (GPtrArray) no_rows = g_ptr_array_new ();
      kc.device = k.name;
      kc.param_keys = no_rows;
      kc.param_values = no_rows;
      g_autoptr (GError) local = NULL;
      if (!(ok = take_device (&kc, cat, file, &local)))
        {
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s (entry '%s' of [cluster] device_mix)",
                       local->message, k.name);
          break;
        }
      kind_from (&g_array_index (kinds, SimDeviceKind, kinds->len - 1), &kc);
    }
  if (ok && total != c->workers)
    ok = devices_error (error, file, "the counts sum to %" G_GINT64_FORMAT " workers, but [cluster] workers = %"
                        G_GINT64_FORMAT "; make them equal", total, c->workers);
  c->n_kinds = (int) kinds->len;
  c->kinds = (SimDeviceKind *) g_array_free (kinds, FALSE);
  if (!ok)
    return FALSE;
  c->worker_kind = g_new (int, c->workers);
  for (int k = 0, w = 0; k < c->n_kinds; k++)
    for (gint64 i = 0; i < c->kinds[k].count; i++)
      c->worker_kind[w++] = k;
  /* the first kind's figures are the [device] keys (the servers' device) */
  c->device = g_strdup (c->kinds[0].name);
  ok = take_device (c, cat, file, error);
  g_clear_pointer (&c->device, g_free);
  return ok;
}

/* [cluster] server: the entry's device, fabrics, GPUs per node and NICs
 * into the keys the file left unset; the nodes topology only. */
static gboolean
take_server (SimConfig *c, const SimCatalog *cat, const char *file, GError **error)
{
  const SimServer *v = sim_catalog_server (cat, c->server);
  if (!v)
    {
      GString *names = g_string_new (NULL);
      for (guint i = 0; i < sim_catalog_n_servers (cat); i++)
        g_string_append_printf (names, "%s%s", i ? ", " : "", sim_catalog_server_at (cat, i)->name);
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [cluster] server: unknown server '%s'; use one of: %s (dtsim hardware "
                   "lists them)", file, c->server, names->len ? names->str : "(none in this catalog)");
      g_string_free (names, TRUE);
      return FALSE;
    }
  if (!net_topology_has_key (c->topology, "gpus_per_node") || !net_topology_has_key (c->topology, "nic"))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: [cluster] server: %s is a server of %.0f GPUs, laid out by the nodes "
                   "topology; set [network] topology = nodes", file, v->name, v->gpus);
      return FALSE;
    }
  if (!c->device && !c->devices)
    {
      c->device = g_strdup (v->device);
      set_param_string (c, "cluster.device", v->device);
    }
  if (!c->intra_fabric)
    {
      c->intra_fabric = g_strdup (v->intra_fabric);
      set_param_string (c, "network.intra_fabric", v->intra_fabric);
    }
  if (!c->fabric)
    {
      c->fabric = g_strdup (v->fabric);
      set_param_string (c, "network.fabric", v->fabric);
    }
  if (!given (c, "network.gpus_per_node"))
    {
      base_values_set_int (c->values, "network.gpus_per_node", (gint64) v->gpus);
      g_autofree char *g = g_strdup_printf ("%.0f", v->gpus);
      set_param_string (c, "network.gpus_per_node", g);
    }
  if (!given (c, "network.nic"))
    {
      gboolean per_gpu = v->nics == v->gpus && v->gpus > 1;
      base_values_set_int (c->values, "network.nic", per_gpu);
      set_param_string (c, "network.nic", per_gpu ? "gpu" : "node");
    }
  return TRUE;
}

gboolean
sim_apply_catalog (SimConfig *c, const char *file, GError **error)
{
  if (!c->device && !c->devices && !c->fabric && !c->intra_fabric && !c->server)
    return TRUE;
  g_autoptr (GError) local = NULL;
  SimCatalog *cat = sim_catalog_load (c->catalog, &local);
  if (!cat)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [cluster] catalog: %s", file,
                   local->message);
      return FALSE;
    }
  gboolean ok = TRUE;
  if (c->server)
    ok = take_server (c, cat, file, error);
  if (ok && c->device)
    ok = take_device (c, cat, file, error);
  if (ok && c->devices)
    ok = take_devices (c, cat, file, error);
  if (ok && c->fabric)
    {
      LinkTarget t = { "network.bandwidth", "network.latency", "network.efficiency",
                       &c->bandwidth, &c->latency, &c->net_efficiency };
      ok = take_link (c, cat, file, "fabric", c->fabric, &t, error);
      if (ok)
        take (c, "network.step_overhead", &c->step_overhead,
              sim_catalog_step_overhead (cat, sim_catalog_link (cat, c->fabric)->kind));
      if (ok)
        c->step_hw = comm_hw_of_kind (sim_catalog_link (cat, c->fabric)->kind);
    }
  if (ok && c->intra_fabric)
    {
      ok = take_intra_link (c, cat, file, error);
      if (ok)
        take (c, "network.intra_step_overhead", &c->intra_step_overhead,
              sim_catalog_step_overhead (cat, sim_catalog_link (cat, c->intra_fabric)->kind));
      if (ok)
        c->intra_step_hw = comm_hw_of_kind (sim_catalog_link (cat, c->intra_fabric)->kind);
    }
  if (ok && (c->fabric || c->intra_fabric))
    {
      take (c, "network.launch_overhead", &c->launch_overhead,
            sim_catalog_launch_overhead (cat));
      take (c, "network.net_overhead", &c->net_overhead, sim_catalog_net_overhead (cat));
    }
  sim_catalog_free (cat);
  return ok;
}
