/*
 * test-model.c — the device and time model of device/model.c: the roofline
 * picks the right bound, step costs are the sums of layer costs, catalog
 * devices fill in unset keys only, catalog links deliver their raw rate times
 * their efficiency while a written bandwidth is kept exactly, models that do
 * not fit are refused, a
 * timing-only workload matches its closed form under all-reduce, bucket
 * readiness follows the layers, optimizer state lives on the servers, and
 * an unknown workload is refused with the built-in names.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "comm/collectives.h"
#include "policies/policy.h"
#include "sim/cluster.h"
#include "config/hardware.h"
#include "device/model.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"
#include "sim/load.h"

static SimConfig *
load_one (const char *text, const char *const *sets)
{
  GPtrArray *configs = test_load_scenario_text (text, sets);
  g_assert_cmpuint (configs->len, ==, 1);
  SimConfig *c = g_ptr_array_steal_index (configs, 0);
  g_ptr_array_unref (configs);
  return c;
}

static void
test_roofline_bound (void)
{
  const double A = 1e12, M = 1e11;
  /* intensity 100 FLOP/byte > A/M = 10: compute-bound */
  g_assert_cmpfloat (sim_roofline_seconds (1e10, 1e8, A, M), ==, 1e10 / A);
  /* intensity 1 FLOP/byte < 10: memory-bound */
  g_assert_cmpfloat (sim_roofline_seconds (1e8, 1e8, A, M), ==, 1e8 / M);
  /* no bandwidth: FLOPs alone */
  g_assert_cmpfloat (sim_roofline_seconds (1e8, 1e12, A, 0), ==, 1e8 / A);
}

static const char mlp[] =
  "[scenario]\nname = t\niterations = 2\n"
  "[cluster]\nworkers = 2\n"
  "[device]\nflops = 1TFLOPS\nefficiency = 0.5\nmemory_bandwidth = 100GBps\n"
  "[model]\nkind = mlp\nhidden = 256\nfeatures = 784\nclasses = 10\nbatch = 128\n"
  "samples = 512\ntest_samples = 64\n"
  "[policy]\nkind = allreduce\n";

/* A dense layer at batch 128 is compute-bound, its ReLU memory-bound, and
 * the step is the sum of every layer's forward and backward roofline. */
static void
test_roofline_layers (void)
{
  SimConfig *c = load_one (mlp, NULL);
  KernModel *m = sim_model_new (c, NULL, NULL);
  g_assert_nonnull (m);
  const double A = c->flops * c->efficiency, M = c->memory_bandwidth, n = (double) c->batch;
  g_assert_cmpfloat (A, ==, 0.5e12);
  g_assert_cmpfloat (M, ==, 100e9);
  double expect = 0, fwd = 0;
  gboolean saw_compute = FALSE, saw_memory = FALSE;
  for (int l = 0; l < m->n_layers; l++)
    {
      const KernLayer *ly = &m->layers[l];
      double F = ly->fwd_flops_fixed + ly->fwd_flops * n;
      double B = ly->fwd_bytes_fixed + ly->fwd_bytes * n;
      double Fb = ly->bwd_flops_fixed + ly->bwd_flops * n;
      double Bb = ly->bwd_bytes_fixed + ly->bwd_bytes * n;
      fwd += MAX (F / A, B / M);
      expect += MAX (F / A, B / M) + MAX (Fb / A, Bb / M);
      if (strcmp (ly->name, "fc1") == 0)
        {
          g_assert_cmpfloat (F / B, >, A / M); /* intensity above the ridge */
          g_assert_cmpfloat (sim_roofline_seconds (F, B, A, M), ==, F / A);
          saw_compute = TRUE;
        }
      if (strcmp (ly->name, "relu1") == 0)
        {
          g_assert_cmpfloat (F / B, <, A / M);
          g_assert_cmpfloat (sim_roofline_seconds (F, B, A, M), ==, B / M);
          saw_memory = TRUE;
        }
    }
  g_assert_true (saw_compute && saw_memory);
  SimStepCost cost;
  sim_step_cost (c, m, &cost);
  test_assert_close (cost.step, expect, 1e-12);
  test_assert_close (cost.forward, fwd, 1e-12);
  /* the first layer's gradient completes the step; later ones come earlier */
  g_assert_cmpfloat (cost.grad_ready[0], ==, cost.step);
  for (int l = 1; l < cost.n_layers; l++)
    g_assert_cmpfloat (cost.grad_ready[l], <=, cost.grad_ready[l - 1]);
  g_assert_cmpfloat (cost.grad_ready[cost.n_layers - 1], >, cost.forward);
  /* without a memory bandwidth: total FLOPs over achieved FLOP/s */
  c->memory_bandwidth = 0;
  SimStepCost flat;
  sim_step_cost (c, m, &flat);
  g_assert_cmpfloat (flat.step, ==,
                     (m->ops->flops_forward (m, (int) n) + m->ops->flops_backward (m, (int) n)) / A);
  sim_step_cost_clear (&cost);
  sim_step_cost_clear (&flat);
  kern_model_free (m);
  sim_config_free (c);
}

/* Each layer at its kind's rate: a convolution at conv_efficiency, an
 * attention matmul at attention_factor x efficiency, a dense layer at
 * efficiency, every memory term at memory_bandwidth x memory_efficiency,
 * and activations at 2 bytes under bf16 (weights stay 4).  Closed form per
 * layer of a table whose kinds are written out. */
static void
test_roofline_kinds (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-kinds-XXXXXX", NULL);
  g_autofree char *table = g_build_filename (dir, "kinds.txt", NULL);
  /* input 1000 floats; conv 1 GFLOP, attention 0.5 GFLOP, dense 2 GFLOP,
   * a norm and an element-wise pass with no FLOPs */
  g_assert_true (g_file_set_contents (table,
    "# input 1000\nconv 5000 1e9 4000 conv\nbn 64 0 4000 norm\natt 0 5e8 2000 attention\n"
    "relu 0 0 2000 elementwise\nfc 20000 2e9 10\n", -1, NULL));
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = k\niterations = 1\n[cluster]\nworkers = 1\n"
    "[device]\nflops = 100TFLOPS\nefficiency = 0.6\nconv_efficiency = 0.3\n"
    "attention_factor = 0.5\nmemory_bandwidth = 1TBps\nmemory_efficiency = 0.8\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 32\n[policy]\nkind = allreduce\n", table);
  for (int variant = 0; variant < 3; variant++)
    {
      /* fp32; bf16; fp32 with 3 us per layer pass */
      int bf16 = variant == 1;
      double k = variant == 2 ? 3e-6 : 0;
      const char *sets[] = { bf16 ? "device.precision=bf16" : "device.precision=fp32",
                             k > 0 ? "device.kernel_overhead=3us" : NULL, NULL };
      SimConfig *c = load_one (text, sets);
      KernModel *m = sim_model_new (c, NULL, NULL);
      g_assert_nonnull (m);
      const double n = 32, peak = 100e12, M = 1e12 * 0.8, act = bf16 ? 2.0 : 4.0;
      const struct { double params, flops, in, out, eff; } L[] = {
        { 5000, 1e9, 1000, 4000, 0.3 },       /* conv: conv_efficiency */
        { 64, 0, 4000, 4000, 0.6 },           /* norm: memory-bound */
        { 0, 5e8, 4000, 2000, 0.6 * 0.5 },    /* attention */
        { 0, 0, 2000, 2000, 0.6 },            /* element-wise */
        { 20000, 2e9, 2000, 10, 0.6 },        /* dense (no KIND: it has FLOPs) */
      };
      g_assert_cmpint (m->n_layers, ==, 5);
      double want = 0;
      for (int l = 0; l < 5; l++)
        {
          double rate = peak * L[l].eff;
          double fwd = MAX (n * L[l].flops / rate,
                            (4.0 * L[l].params + n * act * (L[l].in + L[l].out)) / M);
          double bwd = MAX (2.0 * n * L[l].flops / rate,
                            (8.0 * L[l].params + 2.0 * n * act * (L[l].in + L[l].out)) / M);
          want += fwd + bwd + 2 * k;
        }
      SimStepCost cost;
      sim_step_cost (c, m, &cost);
      test_assert_close (cost.step, want, 1e-12);
      sim_step_cost_clear (&cost);
      kern_model_free (m);
      sim_config_free (c);
    }
  /* the overhead is a per-layer term: it needs the per-layer model */
  g_autofree char *flat = g_strdup_printf (
    "[scenario]\nname = k\niterations = 1\n[cluster]\nworkers = 1\n"
    "[device]\nflops = 100TFLOPS\nkernel_overhead = 3us\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 32\n[policy]\nkind = allreduce\n", table);
  g_autofree char *msg = test_load_scenario_error (flat);
  g_assert_nonnull (strstr (msg, "[device] kernel_overhead: needs [device] memory_bandwidth"));
  g_unlink (table);
  g_rmdir (dir);
}

/* [model] recompute: selective runs the forward of the norm and
 * element-wise layers again in backward and holds none of their outputs;
 * full runs every forward again and holds the model's input and the
 * largest layer's output.  Closed forms on a five-layer table. */
static void
test_recompute (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-recompute-XXXXXX", NULL);
  g_autofree char *table = g_build_filename (dir, "t.txt", NULL);
  g_assert_true (g_file_set_contents (table,
    "# input 1000\nconv 5000 1e9 4000 conv\nbn 64 0 4000 norm\nrelu 0 0 4000 elementwise\n"
    "att 0 5e8 3000 attention\nfc 20000 2e9 10\n", -1, NULL));
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = r\niterations = 1\n[cluster]\nworkers = 1\n"
    "[device]\nflops = 100TFLOPS\nefficiency = 0.5\nmemory_bandwidth = 1TBps\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 16\noptimizer = adam\n"
    "[policy]\nkind = allreduce\n", table);
  const char *none_sets[] = { "model.recompute=none", NULL };
  SimConfig *c = load_one (text, none_sets);
  KernModel *m = sim_model_new (c, NULL, NULL);
  double fwd[5], bwd[5];
  sim_layer_seconds (c, m, (int) c->batch, fwd, bwd);
  SimStepCost base;
  sim_step_cost (c, m, &base);
  double base_mem = sim_model_memory_bytes (c, m);
  double n = 16, fixed = 4.0 * 25064 * (2 + 2);
  /* the ReLU, as wide as its input, runs in place and keeps nothing */
  test_assert_close (base_mem, fixed + 4 * n * (4000 + 4000 + 0 + 3000 + 10), 1e-12);
  const struct { const char *set; double extra; double kept; } cases[] = {
    { "model.recompute=selective", fwd[1] + fwd[2], 4000 + 3000 + 10 },
    { "model.recompute=full", fwd[0] + fwd[1] + fwd[2] + fwd[3] + fwd[4], 1000 + 4000 },
  };
  for (gsize k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      const char *sets[] = { cases[k].set, NULL };
      SimConfig *r = load_one (text, sets);
      SimStepCost cost;
      sim_step_cost (r, m, &cost);
      test_assert_close (cost.step, base.step + cases[k].extra, 1e-12);
      test_assert_close (cost.forward, base.forward, 1e-12);
      test_assert_close (sim_model_memory_bytes (r, m), fixed + 4 * n * cases[k].kept, 1e-12);
      sim_step_cost_clear (&cost);
      sim_config_free (r);
    }
  sim_step_cost_clear (&base);
  kern_model_free (m);
  sim_config_free (c);
  /* accepted under the pipeline too, which prices it stage by stage
   * (tests/test-pipeline.c) */
  g_autofree char *pipe = g_strdup_printf (
    "[scenario]\nname = r\niterations = 1\n[cluster]\nworkers = 2\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 16\nrecompute = full\n"
    "[policy]\nkind = pipeline\nmicrobatches = 2\n", table);
  GPtrArray *piped = test_load_scenario_text (pipe, NULL);
  g_assert_cmpuint (piped->len, ==, 1);
  g_ptr_array_unref (piped);
  g_unlink (table);
  g_rmdir (dir);
}

/* [cluster] device copies the catalog's figures into the keys not set. */
static void
test_catalog_device (void)
{
  g_autoptr (GError) error = NULL;
  SimCatalog *cat = sim_catalog_load (NULL, &error);
  g_assert_no_error (error);
  const SimDevice *a100 = sim_catalog_device (cat, "a100");
  g_assert_nonnull (a100);

  const char *sets[] = { "cluster.device=a100", NULL };
  SimConfig *c = load_one (mlp, sets);
  g_assert_cmpfloat (c->flops, ==, 1e12);                  /* set in the file */
  g_assert_cmpfloat (c->memory, ==, a100->memory);
  g_assert_cmpfloat (c->efficiency, ==, 0.5);              /* set in the file */
  g_assert_cmpfloat (c->memory_bandwidth, ==, 100e9);      /* set in the file */
  /* the params rows hold the values used */
  gboolean seen = FALSE;
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), "device.memory") == 0)
      {
        g_assert_cmpfloat (g_ascii_strtod (g_ptr_array_index (c->param_values, i), NULL), ==,
                           a100->memory);
        seen = TRUE;
      }
  g_assert_true (seen);
  sim_config_free (c);

  const char *fp32[] = { "cluster.device=a100", NULL };
  c = load_one ("[model]\nbatch = 8\n", fp32);
  g_assert_cmpfloat (c->flops, ==, a100->flops);
  sim_config_free (c);

  const char *bf16[] = { "cluster.device=a100", "device.precision=bf16", NULL };
  c = load_one ("[model]\nbatch = 8\n", bf16);
  g_assert_cmpfloat (c->flops, ==, a100->bf16_flops);
  g_assert_cmpfloat (c->efficiency, ==, a100->efficiency); /* no bf16_efficiency stated */
  g_assert_cmpfloat (c->conv_efficiency, ==, a100->bf16_conv_efficiency);
  g_assert_cmpfloat (c->memory_efficiency, ==, a100->memory_efficiency);
  g_assert_cmpfloat (c->memory_bandwidth, ==, a100->memory_bandwidth);
  sim_config_free (c);

  /* each precision's convolution efficiency; a file's own efficiency keeps
   * convolutions at it */
  const char *tf32[] = { "cluster.device=a100", "device.precision=tf32", NULL };
  c = load_one ("[model]\nbatch = 8\n", tf32);
  g_assert_cmpfloat (c->conv_efficiency, ==, a100->tf32_conv_efficiency);
  g_assert_cmpfloat (c->conv_efficiency, !=, a100->bf16_conv_efficiency);
  sim_config_free (c);
  const char *own[] = { "cluster.device=a100", "device.precision=tf32", "device.efficiency=0.4",
                        NULL };
  c = load_one ("[model]\nbatch = 8\n", own);
  g_assert_cmpfloat (c->efficiency, ==, 0.4);
  g_assert_cmpfloat (c->conv_efficiency, ==, 0);
  sim_config_free (c);

  const SimLinkSpec *hdr = sim_catalog_link (cat, "ib-hdr");
  g_assert_nonnull (hdr);
  const char *fab[] = { "network.fabric=ib-hdr", NULL };
  c = load_one ("[model]\nbatch = 8\n", fab);
  g_assert_cmpfloat (c->bandwidth, ==, hdr->bandwidth);
  g_assert_cmpfloat (c->latency, ==, hdr->latency);
  sim_config_free (c);
  sim_catalog_free (cat);

  g_autofree char *e1 = test_load_scenario_error ("[cluster]\ndevice = a200\n");
  g_assert_nonnull (strstr (e1, "[cluster] device"));
  g_assert_nonnull (strstr (e1, "a100"));  /* lists the choices */
  g_autofree char *e2 = test_load_scenario_error ("[network]\nfabric = carrier-pigeon\n");
  g_assert_nonnull (strstr (e2, "[network] fabric"));
}

/* The params row of `dotted` ("section.key"), as the trace records it. */
static const char *
param_of (const SimConfig *c, const char *dotted)
{
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), dotted) == 0)
      return g_ptr_array_index (c->param_values, i);
  g_error ("no params row %s", dotted);
  return NULL;
}

/* The network `text` describes, built on `sim`. */
static NetNetwork *
network_of (const char *text, const char *const *sets, EngSim *sim, SimConfig **config)
{
  g_autoptr (GError) error = NULL;
  *config = load_one (text, sets);
  NetNetwork *net = sim_network_build (*config, sim, "test", &error);
  g_assert_no_error (error);
  return net;
}

static double
link_bandwidth (const NetNetwork *net, const char *name)
{
  int id = net_network_link_id (net, name);
  g_assert_cmpint (id, >=, 0);
  return net_network_link_bandwidth (net, id);
}

static void
record_end (EngSim *sim, gpointer ctx, gpointer data, const NetTransfer *t)
{
  (void) sim;
  (void) data;
  *(double *) ctx = t->end;
}

/* Simulated seconds `bytes` take from host `src` to host `dst`, alone. */
static double
transfer_time (NetNetwork *net, EngSim *sim, int src, int dst, double bytes)
{
  double start = eng_sim_now (sim), end = -1;
  net_send (net, src, dst, bytes, 0, record_end, &end, NULL);
  eng_run (sim, INFINITY);
  g_assert_cmpfloat (end, >=, start);
  return end - start;
}

static const char nodes_net[] =
  "[cluster]\nworkers = 16\n[model]\nkind = timing\nparams = 1000\nflops = 1000\n"
  "[policy]\nkind = allreduce\n"
  "[network]\ntopology = nodes\ngpus_per_node = 8\nnic = gpu\n";

/* A link named from the catalog carries its raw rate times its efficiency,
 * NVLink inside a node and the NIC between nodes; a transfer alone on its
 * route takes latency + bytes / (raw x efficiency). */
static void
test_catalog_link_efficiency (void)
{
  g_autoptr (SimCatalog) cat = sim_catalog_load (NULL, NULL);
  const SimLinkSpec *nv3 = sim_catalog_link (cat, "nvlink3");
  const SimLinkSpec *hdr = sim_catalog_link (cat, "ib-hdr");
  g_assert_cmpfloat (nv3->bandwidth, ==, 300e9);
  g_assert_cmpfloat (nv3->efficiency, <, 1);
  g_assert_cmpfloat (hdr->efficiency, <, 1);

  const char *sets[] = { "network.fabric=ib-hdr", "network.intra_fabric=nvlink3", NULL };
  EngSim *sim = eng_sim_new ();
  SimConfig *c;
  NetNetwork *net = network_of (nodes_net, sets, sim, &c);
  /* the raw figures stay in the keys, the share beside them */
  g_assert_cmpfloat (c->bandwidth, ==, hdr->bandwidth);
  g_assert_cmpfloat (c->net_efficiency, ==, hdr->efficiency);
  g_assert_cmpfloat (base_values_double (c->values, "network.intra_bandwidth"), ==, 300e9);
  g_assert_cmpfloat (base_values_double (c->values, "network.intra_efficiency"), ==,
                     nv3->efficiency);
  g_assert_cmpfloat (g_ascii_strtod (param_of (c, "network.intra_efficiency"), NULL), ==,
                     nv3->efficiency);
  /* the links carry raw x efficiency: about 230 GB/s of NVLink 3 (NCCL's
   * measured peak) and 24 of HDR's 25 GB/s */
  double nv_bw = 300e9 * nv3->efficiency, nic_bw = 200e9 / 8 * hdr->efficiency;
  g_assert_cmpfloat (link_bandwidth (net, "node0.gpu0.nvlink.up"), ==, nv_bw);
  g_assert_cmpfloat (link_bandwidth (net, "node1.gpu0.nic.down"), ==, nic_bw);
  g_assert_cmpfloat_with_epsilon (nv_bw, 230e9, 1e7);
  g_assert_cmpfloat_with_epsilon (nic_bw, 24e9, 1e3);

  /* worker0 -> worker1: two NVLink hops; worker0 -> worker8: two NIC hops */
  const double bytes = 64e6;
  test_assert_close (transfer_time (net, sim, 0, 1, bytes),
                     2 * nv3->latency + bytes / (nv3->bandwidth * nv3->efficiency), 1e-12);
  test_assert_close (transfer_time (net, sim, 0, 8, bytes),
                     2 * hdr->latency + bytes / (hdr->bandwidth * hdr->efficiency), 1e-12);
  net_network_free (net);
  eng_sim_free (sim);
  sim_config_free (c);
}

/* A bandwidth written as a number is what the links carry, catalog or not,
 * unless the scenario writes an efficiency too; a written efficiency also
 * scales a catalog link's raw rate. */
static void
test_written_bandwidth_kept (void)
{
  g_autoptr (SimCatalog) cat = sim_catalog_load (NULL, NULL);
  const SimLinkSpec *nv3 = sim_catalog_link (cat, "nvlink3");
  const SimLinkSpec *hdr = sim_catalog_link (cat, "ib-hdr");
  struct {
    const char *sets[5];
    double nic, nvlink;  /* bytes/s the links must carry */
  } cases[] = {
    /* numbers alone: exactly them */
    { { "network.bandwidth=10Gbps", "network.intra_bandwidth=100GBps", NULL },
      10e9 / 8, 100e9 },
    /* numbers beside catalog names: still exactly them (the names give the
     * latencies only) */
    { { "network.fabric=ib-hdr", "network.bandwidth=10Gbps", "network.intra_fabric=nvlink3",
        "network.intra_bandwidth=100GBps", NULL },
      10e9 / 8, 100e9 },
    /* a number and an efficiency: their product */
    { { "network.bandwidth=10Gbps", "network.efficiency=0.5", "network.intra_bandwidth=100GBps",
        "network.intra_efficiency=0.25", NULL },
      10e9 / 8 * 0.5, 100e9 * 0.25 },
    /* a catalog name and an efficiency: the raw rate times the written share */
    { { "network.fabric=ib-hdr", "network.efficiency=0.5", "network.intra_fabric=nvlink3",
        "network.intra_efficiency=0.5", NULL },
      hdr->bandwidth * 0.5, nv3->bandwidth * 0.5 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      EngSim *sim = eng_sim_new ();
      SimConfig *c;
      NetNetwork *net = network_of (nodes_net, cases[i].sets, sim, &c);
      g_assert_cmpfloat (link_bandwidth (net, "node0.gpu3.nic.up"), ==, cases[i].nic);
      g_assert_cmpfloat (link_bandwidth (net, "node1.gpu2.nvlink.down"), ==, cases[i].nvlink);
      net_network_free (net);
      eng_sim_free (sim);
      sim_config_free (c);
    }
  /* the default star, nothing named: the default 10 Gb/s exactly */
  EngSim *sim = eng_sim_new ();
  SimConfig *c;
  NetNetwork *net = network_of ("[model]\nbatch = 8\n", NULL, sim, &c);
  g_assert_cmpfloat (link_bandwidth (net, "worker0.up"), ==, 10e9 / 8);
  g_assert_cmpstr (param_of (c, "network.efficiency"), ==, "1");
  net_network_free (net);
  eng_sim_free (sim);
  sim_config_free (c);

  g_autofree char *e = test_load_scenario_error ("[network]\nefficiency = 1.5\n");
  g_assert_nonnull (strstr (e, "[network] efficiency"));
  g_autofree char *e2 = test_load_scenario_error (
    "[network]\ntopology = nodes\nintra_efficiency = 0\n");
  g_assert_nonnull (strstr (e2, "[network] intra_efficiency"));
}

/* A model larger than the device is refused before anything runs, with the
 * numbers. */
static void
test_memory_refused (void)
{
  /* 784-8192-8192-10 with Adam: 73.6 M parameters, x 4 floats x 4 bytes =
   * 1.1 GiB before activations; batch 10^6 adds tens of GiB of activations,
   * more than a P100's 16 GB */
  g_autofree char *e = test_load_scenario_error (
    "[cluster]\ndevice = p100\n"
    "[model]\nkind = mlp\nhidden = 8192,8192\nfeatures = 784\nbatch = 1000000\n"
    "samples = 100\noptimizer = adam\n");
  g_assert_nonnull (strstr (e, "does not fit"));
  g_assert_nonnull (strstr (e, "GiB"));
  g_assert_nonnull (strstr (e, "batch 1000000"));
  g_assert_nonnull (strstr (e, "[cluster] device"));
  /* the same model at a small batch fits */
  SimConfig *c = load_one ("[cluster]\ndevice = p100\n"
                           "[model]\nkind = mlp\nhidden = 8192,8192\nfeatures = 784\n"
                           "batch = 16\noptimizer = adam\n", NULL);
  sim_config_free (c);
  /* without a capacity nothing is checked */
  c = load_one ("[model]\nkind = mlp\nhidden = 8192,8192\nfeatures = 784\nbatch = 1000000\n"
                "[kernels]\nbackend = none\n", NULL);
  sim_config_free (c);
}

/* A timing-only model under all-reduce, one bucket, no contention:
 * every iteration lasts T + C(4P) + U with T = flops × batch / A. */
static void
test_timing_closed_form (void)
{
  const char text[] =
    "[scenario]\nname = t\niterations = 3\n"
    "[cluster]\nworkers = 4\n"
    "[device]\nflops = 2TFLOPS\nefficiency = 0.5\n"
    "[network]\nbandwidth = 100Gbps\nlatency = 2us\ncontention = none\n"
    "[model]\nkind = timing\nparams = 1000000\nflops = 3e9\nbatch = 32\n"
    "[policy]\nkind = allreduce\nalgorithm = ring\nbucket_size = 0\n";
  SimConfig *c = load_one (text, NULL);
  g_assert_false (c->math);
  SimRunSummary sum;
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, NULL, &sum, &error));
  const double A = 2e12 * 0.5, P = 1e6;
  const double T = 3e9 * 32 / A;
  const double C = comm_cost (comm_lookup ("ring"), COMM_ALLREDUCE, 4, (gsize) P, 4,
                                  2 * 2e-6, 8 / 100e9, 0);
  const double U = kern_opt_flops (&kern_opt_sgd, (gsize) P) / A;
  test_assert_close (sum.sim_time, 3 * (T + C + U), 1e-9);
  g_assert_true (isnan (sum.final_loss));
  sim_config_free (c);
}

typedef struct {
  GArray *rows;   /* double pairs: bucket, ready (iteration 0) */
} Buckets;

static void
on_bucket (gpointer ctx, gint64 iteration, int bucket, double bytes G_GNUC_UNUSED, double ready,
           double start G_GNUC_UNUSED, double end G_GNUC_UNUSED,
           const char *algorithm G_GNUC_UNUSED)
{
  Buckets *b = ctx;
  if (iteration == 0)
    {
      double row[2] = { bucket, ready };
      g_array_append_vals (b->rows, row, 2);
    }
}

/* Buckets are ready when the layer holding their first parameter has its
 * gradient: with buckets smaller than the last layer, the first bucket is
 * ready at forward + backward of the loss and the last dense layer. */
static void
test_bucket_layers (void)
{
  const char *sets[] = { "device.memory_bandwidth=0", "policy.bucket_size=40B",
                         "model.hidden=16", "model.features=8", "model.classes=4",
                         "model.batch=8", NULL };
  SimConfig *c = load_one (mlp, sets);
  KernModel *m = sim_model_new (c, NULL, NULL);
  const double A = c->flops * c->efficiency, n = (double) c->batch;
  double fwd = m->ops->flops_forward (m, (int) n) / A;
  /* layers fc1, relu1, fc2, xent: fc2's gradient is complete after the
   * backward of xent and of fc2 */
  g_assert_cmpint (m->n_layers, ==, 4);
  g_assert_cmpstr (m->layers[2].name, ==, "fc2");
  double last = 0;
  for (int l = 2; l < m->n_layers; l++)
    last += (m->layers[l].bwd_flops_fixed + m->layers[l].bwd_flops * n) / A;
  Buckets b = { g_array_new (FALSE, FALSE, sizeof (double)) };
  PolRecorder rec = { .ctx = &b, .bucket = on_bucket };
  SimRunSummary sum;
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, &rec, &sum, &error));
  /* fc2 holds 16 x 4 + 4 = 68 floats; 40-byte buckets hold 10: the first
   * six buckets lie in fc2, bucket 6 starts inside fc2 too ([68-70, ...)),
   * the rest in fc1 */
  guint nb = b.rows->len / 2;
  g_assert_cmpuint (nb, ==, (8 * 16 + 16 + 68 + 9) / 10);
  double *r = (double *) b.rows->data;
  test_assert_close (r[1], fwd + last, 1e-12);                 /* bucket 0 */
  test_assert_close (r[2 * (nb - 1) + 1], m->ops->flops_forward (m, (int) n) / A
                     + m->ops->flops_backward (m, (int) n) / A, 1e-12); /* the last */
  g_assert_cmpfloat (r[1], <, r[2 * (nb - 1) + 1]);
  g_array_unref (b.rows);
  kern_model_free (m);
  sim_config_free (c);
}

/* Adam on a parameter server with 3 shards and one worker is Adam on the
 * whole vector: each shard's state is its own, and Adam is element-wise. */
static void
test_ps_optimizer_state (void)
{
  const char text[] =
    "[scenario]\nname = t\nseed = 3\niterations = 20\n"
    "[cluster]\nworkers = 1\nservers = 3\n"
    "[model]\nfeatures = 6\nclasses = 3\nsamples = 256\ntest_samples = 32\nbatch = 16\n"
    "optimizer = adam\nlr = 0.01\nwarmup = 5\n"
    "[policy]\nkind = ps\n";
  SimConfig *c = load_one (text, NULL);
  SimRunSummary sum;
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, NULL, &sum, &error));

  KernDataset *train = NULL, *test = NULL;
  g_assert_true (sim_data_load (c, &train, &test, NULL));
  KernModel *m = sim_model_new (c, NULL, NULL);
  gsize P = m->ops->n_params (m);
  g_autofree float *params = g_new0 (float, P);
  g_autofree float *grad = g_new0 (float, P);
  m->ops->init (m, params, (guint64) c->seed);
  KernOptConfig oc = sim_opt_config (c);
  KernOptimizer *o = kern_optimizer_new (&oc, P);
  TrainSampler *s = train_samplers_new (train->n, 1, (guint64) c->seed);
  int b = (int) c->batch;
  g_autofree int *idx = g_new (int, b);
  g_autofree float *x = g_new (float, (gsize) b * train->d);
  g_autofree int *y = g_new (int, b);
  for (int it = 0; it < 20; it++)
    {
      train_sampler_next (&s[0], b, idx);
      kern_dataset_gather (train, idx, b, x, y);
      m->ops->loss_grad (m, params, x, y, b, grad);
      kern_optimizer_step (o, params, grad);
    }
  KernDataset eval = *train;
  eval.n = MIN (eval.n, (int) c->eval_samples);
  double loss, acc;
  m->ops->evaluate (m, params, &eval, &loss, &acc);
  test_assert_close (sum.final_loss, loss, 1e-6);
  train_samplers_free (s, 1);
  kern_optimizer_free (o);
  kern_model_free (m);
  kern_dataset_free (train);
  kern_dataset_free (test);
  sim_config_free (c);
}

/* compute_time = measured charges host time; it needs math. */
static void
test_measured (void)
{
  const char *sets[] = { "device.compute_time=measured", "device.measured_scale=1000", NULL };
  SimConfig *c = load_one (mlp, sets);
  SimRunSummary sum;
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, NULL, &sum, &error));
  g_assert_cmpfloat (sum.compute, >, 0);
  g_assert_cmpfloat (sum.sim_time, >, 0);
  sim_config_free (c);
  g_autofree char *e = test_load_scenario_error ("[device]\ncompute_time = measured\n"
                                   "[kernels]\nbackend = none\n");
  g_assert_nonnull (strstr (e, "[device] compute_time"));
}

/* An MLP on Fashion-MNIST, one worker, 600 steps of 64 images (0.64 of an
 * epoch) with momentum: at least 80% accuracy on the official test split.
 * Fails (does not skip) when the data set is not installed. */
static void
test_fashion_mnist_mlp (void)
{
  const char text[] =
    "[scenario]\nname = fm\niterations = 600\n"
    "[cluster]\nworkers = 1\n"
    "[model]\nkind = mlp\nhidden = 128\ndataset = fashion-mnist\nbatch = 64\n"
    "optimizer = momentum\nlr = 0.05\neval_every = 600\n"
    "[policy]\nkind = allreduce\n";
  SimConfig *c = load_one (text, NULL);
  SimRunSummary sum;
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, NULL, &sum, &error));
  g_assert_no_error (error);
  g_test_message ("Fashion-MNIST test accuracy %.4f, training loss %.4f", sum.final_accuracy,
                  sum.final_loss);
  g_assert_cmpfloat (sum.final_accuracy, >=, 0.80);
  sim_config_free (c);

  g_autofree char *e = test_load_scenario_error ("[model]\ndataset = fashion-mnist\ndata_dir = /nonexistent\n");
  g_assert_nonnull (strstr (e, "[model] data_dir"));
  g_assert_nonnull (strstr (e, "apt-get install dataset-fashion-mnist"));
}

/* by-label partitions: enough shards to cover every class. */
static void
test_by_label_bounds (void)
{
  g_autofree char *e = test_load_scenario_error ("[cluster]\nworkers = 4\n"
                                   "[model]\nclasses = 10\npartition = by-label\n"
                                   "classes_per_worker = 2\n");
  g_assert_nonnull (strstr (e, "[model] classes_per_worker"));
  SimConfig *c = load_one ("[cluster]\nworkers = 5\n"
                           "[model]\nclasses = 10\npartition = by-label\n"
                           "classes_per_worker = 2\n", NULL);
  SimRunSummary sum;
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_run_config (c, NULL, 0, NULL, &sum, &error));
  sim_config_free (c);
}

/* scaling-resnet.ini: one GPU is the reference; efficiency never exceeds
 * 1 and falls once the ring leaves the node. */
static void
test_scaling_resnet (void)
{
  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *path = g_build_filename (src, "scenarios", "scaling-resnet.ini", NULL);
  const char *sets[] = { "sweep.cluster.workers=1,8,32", NULL };
  g_autoptr (GError) error = NULL;
  GPtrArray *configs = sim_scenario_load (path, sets, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (configs->len, ==, 3);
  double per_gpu[3];
  for (guint i = 0; i < 3; i++)
    {
      SimConfig *c = g_ptr_array_index (configs, i);
      SimRunSummary sum;
      g_assert_true (sim_run_config (c, NULL, 0, NULL, &sum, &error));
      per_gpu[i] = (double) sum.updates * (double) c->batch / sum.sim_time / (double) c->workers;
    }
  g_assert_cmpfloat (per_gpu[1], <=, per_gpu[0]);
  g_assert_cmpfloat (per_gpu[2], <, per_gpu[1]);   /* across nodes costs more */
  g_assert_cmpfloat (per_gpu[2] / per_gpu[0], >, 0.5);
  g_ptr_array_unref (configs);
}

/* An unknown workload is refused with the built-in names, which come from
 * the resource bundle: exactly the tables in scenarios/workloads/, in a
 * fixed order (resnet-50 before resnet-101), each of which loads. */
static void
test_workload_names (void)
{
  g_autofree char *e = test_load_scenario_error ("[model]\nkind = timing\n"
                                                 "workload = no-such-table\n");
  const char *head = "no built-in workload 'no-such-table' and no such file; use ";
  const char *tail = " or a layer-table file (docs/workloads.md)";
  const char *start = strstr (e, head);
  g_assert_nonnull (start);
  g_assert_true (g_str_has_suffix (e, tail));
  start += strlen (head);
  g_autofree char *list = g_strndup (start, strlen (start) - strlen (tail));
  g_auto (GStrv) names = g_strsplit (list, ", ", -1);

  const char *src = g_getenv ("DTSIM_SRCDIR");
  g_assert_nonnull (src);
  g_autofree char *dir = g_build_filename (src, "scenarios", "workloads", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  guint files = 0;
  for (const char *f; (f = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (f, ".txt"))
      {
        g_autofree char *n = g_strndup (f, strlen (f) - 4);
        g_assert_true (g_strv_contains ((const char *const *) names, n));
        files++;
      }
  g_assert_cmpuint (g_strv_length (names), ==, files);
  g_assert_nonnull (strstr (list, "resnet-50, resnet-101"));

  for (guint i = 0; names[i] != NULL; i++)
    {
      g_autofree char *text = g_strdup_printf ("[model]\nkind = timing\nworkload = %s\n",
                                               names[i]);
      SimConfig *c = load_one (text, NULL);
      sim_config_free (c);
    }
}

static const char transformer[] =
  "[scenario]\nname = t\niterations = 2\n"
  "[cluster]\nworkers = 2\n"
  "[device]\nflops = 1TFLOPS\nefficiency = 0.5\n"
  "[model]\nkind = transformer\nbatch = 4\n"
  "[policy]\nkind = allreduce\n";

/* kind = transformer: with its defaults (GPT-2 small's shape) it is the
 * built-in gpt-2 table, layer for layer; its forward FLOPs per sample are
 * blocks (24 s d^2 + 4 s^2 d) + 2 s d V (Narayanan et al. 2021 without
 * recomputation); its weight shapes chain and, with the norms, cover its
 * parameters (the LM head's is the embedding's, tied); its rules are
 * refused in one line. */
static void
test_transformer (void)
{
  SimConfig *c = load_one (transformer, NULL);
  KernModel *t = sim_model_new (c, NULL, NULL);
  sim_config_free (c);
  const char *gpt2[] = { "model.kind=timing", "model.workload=gpt-2", NULL };
  c = load_one (transformer, gpt2);
  KernModel *w = sim_model_new (c, NULL, NULL);
  sim_config_free (c);
  g_assert_cmpint (t->n_layers, ==, w->n_layers);
  for (int l = 0; l < t->n_layers; l++)
    {
      KernLayer a = t->layers[l], b = w->layers[l];
      a.n_weights = b.n_weights = 0;
      a.heads = b.heads = 0;
      a.kv_heads = b.kv_heads = 0;
      a.vocabulary = b.vocabulary = FALSE;
      memset (a.weight, 0, sizeof a.weight);
      memset (b.weight, 0, sizeof b.weight);
      g_assert_cmpmem (&a, sizeof a, &b, sizeof b);
    }
  kern_model_free (w);
  const double blocks = 12, s = 1024, d = 768, V = 50257;
  g_assert_cmpfloat (t->ops->flops_forward (t, 1), ==,
                     blocks * (24 * s * d * d + 4 * s * s * d) + 2 * s * d * V);
  gsize covered = 0;
  for (int l = 0; l < t->n_layers; l++)
    {
      const KernLayer *ly = &t->layers[l];
      gsize own = 0;
      if (ly->kind == KERN_LAYER_GEMM && ly->params == 0)
        {
          /* the LM head, tied: the embedding's table read transposed */
          g_assert_true (ly->vocabulary);
          g_assert_cmpint (ly->n_weights, ==, 1);
          g_assert_cmpuint (ly->weight[0].offset, ==, 0);
          g_assert_true (ly->weight[0].rows == d && ly->weight[0].cols == V);
          continue;
        }
      for (int q = 0; q < ly->n_weights; q++)
        {
          const KernWeight *v = &ly->weight[q];
          g_assert_cmpuint (v->offset, ==, ly->param_offset + own);
          own += (gsize) v->rows * v->cols + (v->has_bias ? (gsize) v->cols : 0);
        }
      if (ly->kind == KERN_LAYER_GEMM && ly->params > 0)
        {
          /* a projection's input is the width or, for the MLP's second, 4 x width */
          g_assert_cmpint (ly->n_weights, ==, 1);
          g_assert_true (ly->weight[0].rows == d || ly->weight[0].rows == 4 * d);
        }
      g_assert_true (ly->kind == KERN_LAYER_NORM ? own == 0 : own == ly->params);
      covered += ly->kind == KERN_LAYER_NORM ? ly->params : own;
    }
  g_assert_cmpuint (covered, ==, t->ops->n_params (t));
  kern_model_free (t);

  const struct { const char *key, *value, *want; } bad[] = {
    { "heads", "7", "[model] heads" },                  /* 7 does not divide 768 */
    { "positions", "100", "[model] positions" },        /* fewer than the sequence */
    { "blocks", "100000", "[model] blocks" },           /* past its bound: never built */
    { "kv_heads", "5", "[model] kv_heads" },            /* 5 does not divide 12 heads */
    { "kv_heads", "24", "[model] kv_heads" },           /* more than the heads */
    { "ffn", "-1", "[model] ffn" },
    { "activation", "relu", "[model] activation" },
    { "attention", "sparse", "[model] attention" },
    { "shape", "gpt-5", "[model] shape: no shape 'gpt-5'" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *text = g_strdup_printf (
        "[scenario]\nname = t\niterations = 2\n[cluster]\nworkers = 2\n"
        "[device]\nflops = 1TFLOPS\nefficiency = 0.5\n"
        "[model]\nkind = transformer\nbatch = 4\n%s = %s\n[policy]\nkind = allreduce\n",
        bad[i].key, bad[i].value);
      g_autofree char *msg = test_load_scenario_error (text);
      g_assert_nonnull (strstr (msg, bad[i].want));
    }
  /* a transformer key under another kind does nothing: refused */
  g_autofree char *foreign = test_load_scenario_error (
    "[model]\nkind = mlp\nblocks = 4\n");
  g_assert_nonnull (strstr (foreign, "[model] blocks: applies only to kind = transformer"));
}

/* `transformer` with [model] last, for lines to follow. */
static const char transformer_open[] =
  "[scenario]\nname = t\niterations = 2\n"
  "[cluster]\nworkers = 2\n"
  "[device]\nflops = 1TFLOPS\nefficiency = 0.5\n"
  "[policy]\nkind = allreduce\n"
  "[model]\nkind = transformer\nbatch = 4\n";

/* A transformer of `shape` ([model] shape), with `extra` (a scenario's
 * [model] lines, may be "") after it. */
static KernModel *
shaped (const char *shape, const char *extra)
{
  g_autofree char *text = g_strdup_printf ("%sshape = %s\n%s", transformer_open, shape,
                                           extra);
  SimConfig *c = load_one (text, NULL);
  KernModel *m = sim_model_new (c, NULL, NULL);
  sim_config_free (c);
  g_assert_nonnull (m);
  return m;
}

/* The published shapes: each one's parameters are the closed form of its
 * blocks, and come within 0.5% of the count its paper (or model card)
 * gives; its forward FLOPs per sequence are the sum over its matrix
 * products, 2 x tokens x inputs x outputs each, and the attention's two
 * 2 s^2 d products. */
static void
test_transformer_shapes (void)
{
  const struct {
    const char *name;
    double blocks, d, heads, kv, ffn, s, V;
    gboolean llama;      /* SwiGLU, RMSNorm, untied, rotary, no biases */
    double published;    /* parameters */
  } shapes[] = {
    { "gpt3-175b", 96, 12288, 96, 96, 4 * 12288, 2048, 50257, FALSE, 174.6e9 },
    { "llama2-7b", 32, 4096, 32, 32, 11008, 4096, 32000, TRUE, 6.74e9 },
    { "llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000, TRUE, 68.98e9 },
    { "llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256, TRUE, 8.03e9 },
    { "llama3-70b", 80, 8192, 64, 8, 28672, 8192, 128256, TRUE, 70.6e9 },
    { "llama3-405b", 126, 16384, 128, 8, 53248, 8192, 128256, TRUE, 405.9e9 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      double L = shapes[i].blocks, d = shapes[i].d, F = shapes[i].ffn, s = shapes[i].s;
      double V = shapes[i].V, q = d + 2 * shapes[i].kv * (d / shapes[i].heads);
      KernModel *m = shaped (shapes[i].name, "");
      double params = (double) m->ops->n_params (m);
      double want, fwd;
      if (shapes[i].llama)
        {
          /* per block: query/key/value, output, gate + up, down; two RMS
           * scales; then the token table, the untied head, the last scale */
          want = L * (d * q + d * d + d * 2 * F + F * d + 2 * d) + 2 * V * d + d;
          fwd = L * (2 * s * d * q + 4 * s * s * d + 2 * s * d * d + 2 * s * d * 2 * F
                     + 2 * s * F * d) + 2 * s * d * V;
        }
      else
        {
          /* GPT-2's block at d: 12 d^2 + 13 d, learned positions, tied head */
          want = L * (12 * d * d + 13 * d) + V * d + s * d + 2 * d;
          fwd = L * (24 * s * d * d + 4 * s * s * d) + 2 * s * d * V;
        }
      g_assert_cmpfloat (params, ==, want);
      g_assert_cmpfloat (fabs (params - shapes[i].published), <=, 0.005 * shapes[i].published);
      g_assert_cmpfloat (m->ops->flops_forward (m, 1), ==, fwd);
      g_assert_cmpint (m->n_layers, ==, 12 * (int) L + 4);
      kern_model_free (m);
    }
  /* a key the file gives must agree with the shape: the same value is
   * taken, another refused naming the key and the shape */
  KernModel *same = shaped ("llama3-8b", "width = 4096\nactivation = swiglu\n");
  g_assert_cmpuint (same->ops->n_params (same), ==, 8030261248u);
  kern_model_free (same);
  g_autofree char *t1 = g_strdup_printf ("%sshape = llama3-8b\nwidth = 4000\n", transformer_open);
  g_autofree char *m1 = test_load_scenario_error (t1);
  g_assert_nonnull (strstr (m1, "[model] width: 4000 disagrees with shape = llama3-8b, "
                                "which sets width = 4096"));
  g_assert_null (strchr (m1, '\n'));
  g_autofree char *t2 = g_strdup_printf ("%sshape = gpt3-175b\nnorm = rmsnorm\n", transformer_open);
  g_autofree char *m2 = test_load_scenario_error (t2);
  g_assert_nonnull (strstr (m2, "[model] norm: rmsnorm disagrees with shape = gpt3-175b"));
  /* a shape under another kind is refused like any transformer key */
  g_autofree char *m3 = test_load_scenario_error ("[model]\nkind = mlp\nshape = llama3-8b\n");
  g_assert_nonnull (strstr (m3, "[model] shape: applies only to kind = transformer"));
}

/* Each option alone against the defaults (GPT-2 small): ffn and kv_heads
 * change the matrices' widths, swiglu adds a third ffn x width matrix,
 * rmsnorm drops the norms' biases, untied adds V x width, rotary drops the
 * position table, bias = false the projections' biases. */
static void
test_transformer_options (void)
{
  const double B = 12, d = 768, s = 1024, V = 50257;
  KernModel *base = shaped ("", "");
  double p0 = (double) base->ops->n_params (base), f0 = base->ops->flops_forward (base, 1);
  kern_model_free (base);
  const struct { const char *keys; double dparams, dflops; } opts[] = {
    { "ffn = 2048\n", B * (2048 - 4 * d) * (2 * d + 1), B * 2 * 2 * s * d * (2048 - 4 * d) },
    { "kv_heads = 4\n", -B * 2 * (12 - 4) * (d / 12) * (d + 1),
      -B * 2 * s * d * 2 * (12 - 4) * (d / 12) },
    { "activation = swiglu\n", B * (4 * d) * (d + 1), B * 2 * s * d * 4 * d },
    { "norm = rmsnorm\n", -(2 * B + 1) * d, 0 },
    { "head = untied\n", V * d, 0 },
    { "position = rotary\n", -s * d, 0 },
    { "bias = false\n", -B * (3 * d + d + 4 * d + d), 0 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (opts); i++)
    {
      KernModel *m = shaped ("", opts[i].keys);
      g_assert_cmpfloat ((double) m->ops->n_params (m) - p0, ==, opts[i].dparams);
      g_assert_cmpfloat (m->ops->flops_forward (m, 1) - f0, ==, opts[i].dflops);
      kern_model_free (m);
    }
}

/* Sum of the activations kept per sample. */
static double
kept (const KernModel *m)
{
  double a = 0;
  for (int l = 0; l < m->n_layers; l++)
    a += m->layers[l].activations;
  return a;
}

/* attention = flash keeps no s x s matrix: per block the probabilities'
 * heads x s^2 floats (the softmax runs in place over the scores, which keep
 * them) become heads x s softmax statistics; FLOPs and parameters do not
 * change. */
static void
test_transformer_flash (void)
{
  KernModel *dense = shaped ("llama3-8b", "");
  KernModel *flash = shaped ("llama3-8b", "attention = flash\n");
  const double B = 32, a = 32, s = 8192;
  g_assert_cmpfloat (flash->ops->flops_forward (flash, 1), ==,
                     dense->ops->flops_forward (dense, 1));
  g_assert_cmpfloat (flash->ops->flops_backward (flash, 1), ==,
                     dense->ops->flops_backward (dense, 1));
  g_assert_cmpuint (flash->ops->n_params (flash), ==, dense->ops->n_params (dense));
  g_assert_cmpfloat (kept (dense) - kept (flash), ==, B * (a * s * s - a * s));
  for (int b = 0; b < B; b++)
    {
      const KernLayer *score = &flash->layers[1 + 12 * b + 2];
      g_assert_cmpfloat (score->activations, ==, a * s);
      g_assert_cmpfloat (score[1].activations, ==, 0);
    }
  kern_model_free (dense);
  kern_model_free (flash);
}

/* Llama 3 8B cut 8 ways (16 ways would split its 8 key/value heads, and
 * is refused): every block's query/key/value and gate + up
 * projections go by columns, the output and down projections by rows, the
 * attention between them inside (32 heads, 4 per rank); the token table
 * by vocabulary, the untied head by columns.  A rank holds 1/8 of every
 * cut matrix and the whole norms, which is the closed form below. */
static void
test_transformer_tensor (void)
{
  KernModel *m = shaped ("llama3-8b", "");
  const int T = 8;
  PolTpSplit *split = g_new (PolTpSplit, m->n_layers);
  g_autoptr (GError) error = NULL;
  g_assert_true (pol_tensor_split (m->layers, m->n_layers, T, split, &error));
  g_assert_no_error (error);
  g_assert_cmpint (split[0], ==, POL_TP_VOCABULARY);
  g_assert_cmpint (split[m->n_layers - 2], ==, POL_TP_COLUMN);
  for (int b = 0; b < 32; b++)
    {
      const PolTpSplit *blk = &split[1 + 12 * b];
      const PolTpSplit want[12] = { POL_TP_WHOLE, POL_TP_COLUMN, POL_TP_INSIDE, POL_TP_INSIDE,
                                    POL_TP_INSIDE, POL_TP_ROW, POL_TP_WHOLE, POL_TP_WHOLE,
                                    POL_TP_COLUMN, POL_TP_INSIDE, POL_TP_ROW, POL_TP_WHOLE };
      for (int i = 0; i < 12; i++)
        g_assert_cmpint (blk[i], ==, want[i]);
    }
  const double L = 32, d = 4096, q = 4096 + 2 * 8 * 128, F = 14336, V = 128256;
  double rank = L * ((d * q + d * d + d * 2 * F + F * d) / T + 2 * d) + 2 * V * d / T + d;
  gsize n = m->ops->n_params (m);
  g_assert_cmpfloat ((double) pol_tensor_rank_params (m->layers, m->n_layers, n, split, T), ==,
                     rank);
  /* 16 ranks would share its 8 key/value heads: refused, naming them */
  g_autoptr (GError) kv = NULL;
  g_assert_false (pol_tensor_split (m->layers, m->n_layers, 16, split, &kv));
  g_assert_nonnull (strstr (kv->message, "16 does not divide the 8 key/value heads"));
  g_free (split);
  kern_model_free (m);
}

/* GPT-3 (96 blocks, 1,156 layers) and Llama 3 405B (126 blocks, 1,516
 * layers), more than the 1,024 layers a model could once have, load and
 * run one iteration of a 3-D layout (8 replicas x 16 stages x 8 tensor
 * ranks), timing only; the pipeline's balanced stages cover every layer. */
static void
test_transformer_deep (void)
{
  const char *names[] = { "gpt3-175b", "llama3-405b" };
  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *text = g_strdup_printf (
        "[scenario]\nname = deep\niterations = 1\n"
        "[cluster]\nworkers = 1024\n"
        "[device]\nflops = 1PFLOPS\nefficiency = 0.5\n"
        "[model]\nkind = transformer\nshape = %s\nattention = flash\nbatch = 16\n"
        "[policy]\nkind = pipeline\nstages = 16\ntensor = 8\nreplicas = 8\nmicrobatches = 16\n",
        names[i]);
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpint (r->sum.iterations, ==, 1);
      g_assert_cmpfloat (r->sum.sim_time, >, 0);
      g_assert_true (isfinite (r->sum.sim_time));
      test_run_free (r);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/model/roofline/bound", test_roofline_bound);
  g_test_add_func ("/model/roofline/layers", test_roofline_layers);
  g_test_add_func ("/model/roofline/kinds", test_roofline_kinds);
  g_test_add_func ("/model/recompute", test_recompute);
  g_test_add_func ("/model/catalog/device", test_catalog_device);
  g_test_add_func ("/model/catalog/link-efficiency", test_catalog_link_efficiency);
  g_test_add_func ("/model/catalog/written-bandwidth", test_written_bandwidth_kept);
  g_test_add_func ("/model/memory/refused", test_memory_refused);
  g_test_add_func ("/model/timing/closed-form", test_timing_closed_form);
  g_test_add_func ("/model/buckets/layers", test_bucket_layers);
  g_test_add_func ("/model/ps/optimizer-state", test_ps_optimizer_state);
  g_test_add_func ("/model/measured", test_measured);
  g_test_add_func ("/model/fashion-mnist/mlp", test_fashion_mnist_mlp);
  g_test_add_func ("/model/partition/by-label", test_by_label_bounds);
  g_test_add_func ("/model/scenario/scaling-resnet", test_scaling_resnet);
  g_test_add_func ("/model/workload/names", test_workload_names);
  g_test_add_func ("/model/kind/transformer", test_transformer);
  g_test_add_func ("/model/transformer/shapes", test_transformer_shapes);
  g_test_add_func ("/model/transformer/options", test_transformer_options);
  g_test_add_func ("/model/transformer/flash", test_transformer_flash);
  g_test_add_func ("/model/transformer/tensor", test_transformer_tensor);
  g_test_add_func ("/model/transformer/deep", test_transformer_deep);
  return g_test_run ();
}
