/*
 * hardware.h — the hardware catalog: named devices (CPUs, GPUs) and named
 * links (Ethernet, InfiniBand, PCIe, NVLink) with their vendor figures.
 *
 * A catalog is a GLib key file with one `[device:NAME]` or `[link:NAME]`
 * group per entry (and `[server:NAME]` groups naming a server's parts among
 * them) (scenarios/hardware.ini, whose figures and sources are
 * listed in docs/hardware.md), plus what is true of a whole kind of link
 * rather than of one product: a `[kind:NAME]` group per link kind (the share
 * of the raw rate an application gets, the overhead of one collective step)
 * and one `[collectives]` group (the overhead of launching a collective).  That file is compiled into dtsim with
 * GResource, so the built-in catalog needs no installed data; a scenario or
 * `dtsim hardware FILE` may load another file of the same form instead.
 * Loading is strict: unknown groups and keys, missing keys, quantities
 * without units, values of the wrong kind and out-of-range values are all
 * errors, reported on one line naming the file, the [group] key and the fix.
 */
#ifndef DTSIM_CONFIG_HARDWARE_H
#define DTSIM_CONFIG_HARDWARE_H

#include <glib.h>

G_BEGIN_DECLS

/* One compute device, as a worker or server of a simulated cluster runs on. */
typedef struct {
  char *name;              /* catalog name, e.g. "a100" */
  char *description;       /* one line: model, form factor, how figures derive */
  double flops;            /* FLOP/s, peak FP32 on the vector units, > 0 */
  double tf32_flops;       /* FLOP/s, dense TF32 tensor-core peak, 0 = none */
  double bf16_flops;       /* FLOP/s, dense BF16 tensor-core peak, 0 = none */
  double fp16_flops;       /* FLOP/s, dense FP16 peak (tensor cores where
                              present), 0 = none */
  double fp8_flops;        /* FLOP/s, dense FP8 tensor-core peak, 0 = none */
  double memory_bandwidth; /* bytes/s, peak DRAM/HBM bandwidth, > 0 */
  double memory;           /* bytes, capacity as the vendor states it,
                              0 = not stated (CPUs share host memory) */
  double efficiency;       /* share of the FP32 peak matrix products
                              achieve, in (0, 1] */
  double tf32_efficiency;  /* share of each tensor-core peak they achieve,
                              0 = not stated: efficiency */
  double bf16_efficiency;
  double fp16_efficiency;
  double fp8_efficiency;   /* of the FP8 peak: linear layers' products */
  double conv_efficiency;  /* share of each peak convolutions achieve, 0 =
                              not stated: the efficiency of that peak */
  double tf32_conv_efficiency;
  double bf16_conv_efficiency;
  double fp16_conv_efficiency;
  double conv3x3_efficiency; /* FP32 3 x 3 stride-1 convolutions, by their
                                direct FLOPs (Winograd), 0 = not stated:
                                conv_efficiency */
  double attention_factor; /* attention matmuls' share of the matrix
                              products' rate, 0 = not stated: 1 */
  double kernel_overhead;  /* seconds each layer pass adds, 0 = none */
  double memory_efficiency; /* share of memory_bandwidth kernels achieve,
                               0 = not stated: 1 */
  double overlap_slowdown; /* compute takes 1 + this as long while a
                              collective runs on the device, 0 = none */
  double price;            /* per device-hour in the user's currency, the
                              default of [cluster] price; 0 = none */
} SimDevice;

/* Device d's figures for one precision (0 fp32, 1 tf32, 2 bf16, 3 fp16,
 * 4 fp8: SimPrecision's order): its peak (0 = none) and, as the catalog
 * states them (0 = not stated), the dense and the convolution efficiency
 * (none for fp8, whose convolutions run in bf16). */
typedef struct {
  double peak;
  double efficiency;
  double conv_efficiency;
} SimDevicePrecision;

SimDevicePrecision sim_device_precision (const SimDevice *d, int precision);

/* One kind of link (a cable, a bus, a GPU's NVLink ports together). */
typedef struct {
  char *name;              /* catalog name, e.g. "ib-hdr" */
  char *description;       /* one line: standard, lanes, encoding */
  char *kind;              /* ethernet | infiniband | pcie | nvlink */
  double bandwidth;        /* bytes/s in each direction, after line encoding, > 0 */
  double latency;          /* seconds, one-way, added by one hop, >= 0 */
  double efficiency;       /* share of `bandwidth` an application gets after
                              packet and protocol headers, in (0, 1]: the
                              entry's own `efficiency`, else its kind's, else
                              1 (a catalog that states neither) */
  double sharp_bandwidth;  /* bytes/s per GPU at which the switches this
                              link runs through reduce (NVLink SHARP),
                              0 = they do not reduce */
} SimLinkSpec;

/* One server: a [server:NAME] group, the parts a scenario's [cluster]
 * server brings (docs/hardware.md, "Servers"). */
typedef struct {
  char *name;              /* catalog name, e.g. "dgx-h100" */
  char *description;       /* one line: the product and its parts */
  char *device;            /* catalog device of its GPUs */
  double gpus;             /* GPUs per server, a whole number >= 1 */
  char *intra_fabric;      /* catalog link joining its GPUs */
  char *fabric;            /* catalog link of its NICs */
  double nics;             /* NICs per server: 1, or one per GPU */
} SimServer;

/* What is true of every link of one kind: a [kind:NAME] group. */
typedef struct {
  char *name;              /* ethernet | infiniband | pcie | nvlink */
  char *description;       /* one line: what the figures count, measured where */
  double efficiency;       /* default share of a link's bandwidth delivered,
                              in (0, 1] */
  double step_overhead;    /* seconds NCCL's cost model charges one step of
                              a collective over this kind (its per-step
                              latency, the hop's own latency included), >= 0 */
} SimLinkKind;

typedef struct SimCatalog SimCatalog;

/* Loads the catalog at `path`, or the built-in one when `path` is NULL.
 * Returns NULL with a SIM_ERROR_INPUT error (config/scenario.h) whose message is
 * one line naming the file, the [group] key, what is wrong and the fix. */
SimCatalog *sim_catalog_load (const char *path, GError **error);
/* The text of the catalog at `path`, or of the built-in one (NULL); NULL
 * with an error when the file cannot be read. */
char *sim_catalog_text (const char *path, GError **error);

void sim_catalog_free (SimCatalog *catalog);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimCatalog, sim_catalog_free)

/* Where the catalog came from: its path, or "built-in hardware.ini". */
const char *sim_catalog_source (const SimCatalog *catalog);

/* The entry called `name` (ASCII case ignored), or NULL if there is none. */
const SimDevice *sim_catalog_device (const SimCatalog *catalog, const char *name);
const SimLinkSpec *sim_catalog_link (const SimCatalog *catalog, const char *name);

/* The names of every device (devices = TRUE) or link, in catalog order,
 * joined by ", ": for "choose one of ..." messages.  Free with g_free. */
char *sim_catalog_names (const SimCatalog *catalog, gboolean devices);

/* Entries in catalog (file) order, for listing: index < the count. */
guint sim_catalog_n_devices (const SimCatalog *catalog);
const SimDevice *sim_catalog_device_at (const SimCatalog *catalog, guint index);
guint sim_catalog_n_links (const SimCatalog *catalog);
const SimLinkSpec *sim_catalog_link_at (const SimCatalog *catalog, guint index);

/* The [server:NAME] entry called `name` (ASCII case ignored), or NULL;
 * its device and links are entries of the same catalog. */
const SimServer *sim_catalog_server (const SimCatalog *catalog, const char *name);
/* The server entries in catalog order, for listing: index < the count. */
guint sim_catalog_n_servers (const SimCatalog *catalog);
const SimServer *sim_catalog_server_at (const SimCatalog *catalog, guint index);

/* The kinds a link may have, NULL-terminated. */
const char *const *sim_link_kinds (void);

/* The [kind:NAME] group of link kind `kind` (ASCII case ignored), or NULL
 * where the catalog has none (then its links deliver their full bandwidth
 * unless they state an efficiency, and its overheads are 0). */
const SimLinkKind *sim_catalog_kind (const SimCatalog *catalog, const char *kind);
/* The [kind:NAME] groups in catalog order, for listing: index < the count. */
guint sim_catalog_n_kinds (const SimCatalog *catalog);
const SimLinkKind *sim_catalog_kind_at (const SimCatalog *catalog, guint index);

/* Collective overheads, which a scenario naming a catalog link takes as
 * its [network] launch_overhead, step_overhead and intra_step_overhead
 * (docs/hardware.md).  The per-step latency of a
 * collective over links of `kind` (SimLinkKind.step_overhead), seconds; 0
 * where the catalog has no [kind:NAME] group for it. */
double sim_catalog_step_overhead (const SimCatalog *catalog, const char *kind);
/* Seconds launching one collective costs, whatever its size and links;
 * 0 where the catalog has no [collectives] group. */
double sim_catalog_launch_overhead (const SimCatalog *catalog);
/* Seconds NCCL's network overhead costs every step of a ring whose ranks
 * span several nodes ([network] net_overhead); 0 where the catalog's
 * [collectives] group gives none. */
double sim_catalog_net_overhead (const SimCatalog *catalog);

/* Writes the catalog as aligned plain-text tables (devices, links, link
 * kinds, then the launch overhead) with human units to `out`: what `dtsim
 * hardware` prints. */
void sim_catalog_write_tables (const SimCatalog *catalog, GString *out);

G_END_DECLS

#endif
