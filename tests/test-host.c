/*
 * test-host.c — the host side of a worker's step (device/model.c,
 * docs/compute.md "The host and the input pipeline" and "Kernel fusion"):
 * a step lasts serial + max(device, batch x input_time / loader cores,
 * framework_time), the loaders' cores being a server's host_cores shared
 * by its GPUs and capped by loader_workers; a run pays the wait once per
 * iteration; a fused chain (a layer and the element-wise layers after it)
 * moves its first input and its last output once and launches one kernel; the host and fusion
 * keys are refused where they make no sense, in one line.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "config/scenario.h"
#include "device/model.h"
#include "kernels/kernels.h"
#include "config/models.h"
#include "sim/load.h"
#include "sim/run.h"
#include "tests/util.h"

/* One layer of 1e9 FLOPs per sample on 1 TFLOP/s at efficiency 1, batch
 * 100: the device's step is 100 x 1e9 / 1e12 = 0.1 s, split 1:2. */
static const char base[] =
  "[scenario]\nname = host\niterations = 3\n"
  "[cluster]\nworkers = 8\n"
  "[device]\nflops = 1TFLOPS\nefficiency = 1\n"
  "[network]\ntopology = nodes\ngpus_per_node = 4\nbandwidth = 100Gbps\nlatency = 1us\n"
  "contention = none\n"
  "[model]\nkind = timing\nparams = 1000\nflops = 1e9\nbatch = 100\n"
  "[policy]\nkind = allreduce\n";

static const double device_step = 100 * 1e9 / 1e12;  /* s, batch x flops / rate */

/* The cost of a step of `text` with `sets` applied. */
static void
step_of (const char *text, const char *const *sets, SimStepCost *cost)
{
  GPtrArray *configs = test_load_scenario_text (text, sets);
  g_assert_cmpuint (configs->len, ==, 1);
  SimConfig *c = g_ptr_array_index (configs, 0);
  KernModel *m = sim_model_new (c, NULL, NULL);
  g_assert_nonnull (m);
  sim_step_cost (c, m, cost);
  kern_model_free (m);
  g_ptr_array_unref (configs);
}

/* Loaders behind the device: the step lasts the loaders' time for its
 * batch, on host_cores / (GPUs of a server) cores, or loader_workers of
 * them; ahead of it, the device's time. */
static void
test_input_closed_form (void)
{
  SimStepCost free_input, cost;
  step_of (base, NULL, &free_input);
  test_assert_close (free_input.step, device_step, 1e-12);
  g_assert_cmpfloat (free_input.host_wait, ==, 0);

  /* 8 workers on servers of 4 GPUs: 16 cores / 4 = 4 cores per GPU;
   * 100 samples x 10 ms / 4 = 0.25 s > 0.1 s */
  const char *const slow[] = { "cluster.host_cores=16", "model.input_time=10ms", NULL };
  step_of (base, slow, &cost);
  double input = 100 * 10e-3 / (16.0 / 4);
  g_assert_cmpint (cost.host.gpus, ==, 4);
  test_assert_close (cost.host.loaders, 16.0 / 4, 1e-12);
  test_assert_close (cost.host.input, input, 1e-12);
  test_assert_close (cost.step, MAX (device_step, input), 1e-12);
  test_assert_close (cost.host_wait, input - device_step, 1e-12);
  /* the wait comes before forward: every gradient is ready that much later */
  for (int l = 0; l < cost.n_layers; l++)
    test_assert_close (cost.grad_ready[l],
                       free_input.grad_ready[l] + (input - device_step), 1e-12);
  sim_step_cost_clear (&cost);

  /* one worker alone on its server has all 16 cores: 100 x 10 ms / 16 =
   * 0.0625 s < 0.1 s, hidden behind the device */
  const char *const alone[] = { "cluster.host_cores=16", "model.input_time=10ms",
                                "cluster.workers=1", NULL };
  step_of (base, alone, &cost);
  g_assert_cmpint (cost.host.gpus, ==, 1);
  test_assert_close (cost.host.input, 100 * 10e-3 / 16.0, 1e-12);
  test_assert_close (cost.step, MAX (device_step, 100 * 10e-3 / 16.0), 1e-12);
  g_assert_cmpfloat (cost.host_wait, ==, 0);
  sim_step_cost_clear (&cost);

  /* loader_workers caps the cores: 2 of the 4 */
  const char *const capped[] = { "cluster.host_cores=16", "model.input_time=1ms",
                                 "model.loader_workers=2", NULL };
  step_of (base, capped, &cost);
  test_assert_close (cost.host.loaders, MIN (2.0, 16.0 / 4), 1e-12);
  test_assert_close (cost.step, MAX (device_step, 100 * 1e-3 / MIN (2.0, 16.0 / 4)), 1e-12);
  sim_step_cost_clear (&cost);

  /* and never raises them: 64 workers asked, 4 cores there */
  const char *const many[] = { "cluster.host_cores=16", "model.input_time=10ms",
                               "model.loader_workers=64", NULL };
  step_of (base, many, &cost);
  test_assert_close (cost.step, MAX (device_step, 100 * 10e-3 / MIN (64.0, 16.0 / 4)), 1e-12);
  sim_step_cost_clear (&cost);

  /* the serial part stays in front, outside the overlap */
  const char *const serial[] = { "cluster.host_cores=16", "model.input_time=10ms",
                                 "device.serial_time=20ms", NULL };
  step_of (base, serial, &cost);
  test_assert_close (cost.step, 20e-3 + MAX (device_step, input), 1e-12);
  sim_step_cost_clear (&cost);
  sim_step_cost_clear (&free_input);
}

/* The host launches ahead of the device: its framework time shows only
 * where it exceeds the device's step, and beside the loaders it is the
 * larger of the two that counts. */
static void
test_framework_time (void)
{
  SimStepCost cost;
  const char *const hidden[] = { "model.framework_time=40ms", NULL };
  step_of (base, hidden, &cost);
  test_assert_close (cost.step, MAX (device_step, 40e-3), 1e-12);
  g_assert_cmpfloat (cost.host_wait, ==, 0);
  sim_step_cost_clear (&cost);

  const char *const shown[] = { "model.framework_time=150ms", NULL };
  step_of (base, shown, &cost);
  test_assert_close (cost.step, MAX (device_step, 150e-3), 1e-12);
  sim_step_cost_clear (&cost);

  const char *const both[] = { "model.framework_time=150ms", "cluster.host_cores=16",
                               "model.input_time=10ms", NULL };
  step_of (base, both, &cost);
  test_assert_close (cost.step, MAX (device_step, MAX (150e-3, 100 * 10e-3 / (16.0 / 4))),
                     1e-12);
  sim_step_cost_clear (&cost);
}

/* A run pays the wait in every iteration: with the network the same, the
 * all-reduce run ends iterations x wait later. */
static void
test_run_pays (void)
{
  SimRunSummary a, b;
  test_run_scenario_text (base, NULL, NULL, &a, NULL);
  const char *const slow[] = { "cluster.host_cores=16", "model.input_time=10ms", NULL };
  test_run_scenario_text (base, slow, NULL, &b, NULL);
  double wait = 100 * 10e-3 / (16.0 / 4) - device_step;
  test_assert_close (b.sim_time - a.sim_time, 3 * wait, 1e-9);
}

/* conv -> norm -> elementwise -> gemm, by the table's cost rule: every line
 * reads 4 I and writes 4 A bytes per sample forward, twice that backward. */
static const char table[] =
  "# input 1000\n"
  "conv 100 2000000 1000 conv\n"
  "bn 2 0 1000 norm\n"
  "relu 0 0 1000 elementwise\n"
  "fc 1000 2000 10 gemm\n";

/* With fusion = elementwise the ReLU runs in the batch norm's kernel: the
 * chain bn, relu reads conv's output and writes relu's once (4 (A_conv +
 * A_relu) forward, twice that backward), the norm's output moves no bytes,
 * and the ReLU pays no kernel overhead.  The convolution still writes its
 * output whole (the norm needs statistics of all of it first), and fc,
 * after an element-wise layer but not one itself, is unchanged. */
static void
test_fusion_bytes (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-host-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "chain.txt", NULL);
  g_assert_true (g_file_set_contents (path, table, -1, NULL));
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = fuse\n[cluster]\nworkers = 1\n"
    "[device]\nflops = 1PFLOPS\nefficiency = 1\nmemory_bandwidth = 1GBps\n"
    "kernel_overhead = 1ms\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 10\n[policy]\nkind = allreduce\n", path);
  const double I = 1000, A_conv = 1000, A_bn = 1000, A_relu = 1000, A_fc = 10;
  for (int fused = 0; fused <= 1; fused++)
    {
      const char *const sets[] = { fused ? "model.fusion=elementwise" : "model.fusion=none",
                                   NULL };
      GPtrArray *configs = test_load_scenario_text (text, sets);
      SimConfig *c = g_ptr_array_index (configs, 0);
      KernModel *m = sim_model_new (c, NULL, NULL);
      g_assert_nonnull (m);
      g_assert_cmpint (m->n_layers, ==, 4);
      double f[4], b[4];
      gboolean j[4];
      for (int l = 0; l < 4; l++)
        sim_layer_bytes (c, m, l, &f[l], &b[l], &j[l]);
      if (!fused)
        {
          test_assert_close (f[0], 4 * (I + A_conv), 1e-12);
          test_assert_close (f[1], 4 * (A_conv + A_bn), 1e-12);
          test_assert_close (f[2], 4 * (A_bn + A_relu), 1e-12);
          for (int l = 0; l < 4; l++)
            g_assert_false (j[l]);
        }
      else
        {
          test_assert_close (f[0], 4 * (I + A_conv), 1e-12);
          test_assert_close (f[1], 4 * A_conv, 1e-12);
          test_assert_close (f[2], 4 * A_relu, 1e-12);
          test_assert_close (f[1] + f[2], 4 * (A_conv + A_relu), 1e-12);
          test_assert_close (b[1] + b[2], 2 * 4 * (A_conv + A_relu), 1e-12);
          g_assert_false (j[0]);
          g_assert_false (j[1]);
          g_assert_true (j[2]);
          g_assert_false (j[3]);
        }
      test_assert_close (f[3], 4 * (A_relu + A_fc), 1e-12);
      /* memory-bound everywhere: the step is bytes / bandwidth plus one
       * kernel overhead per launched pass (8 unfused, 6 fused) */
      SimStepCost cost;
      sim_step_cost (c, m, &cost);
      double bytes = 0;
      for (int l = 0; l < 4; l++)
        bytes += m->layers[l].fwd_bytes_fixed + m->layers[l].bwd_bytes_fixed
                 + 10 * (f[l] + b[l]);
      int launched = fused ? 2 * 3 : 2 * 4;
      test_assert_close (cost.step, bytes / 1e9 + launched * 1e-3, 1e-9);
      sim_step_cost_clear (&cost);
      kern_model_free (m);
      g_ptr_array_unref (configs);
    }
  g_unlink (path);
  g_rmdir (dir);
}

/* Each key where it makes no sense: one line naming [section] key and the
 * fix. */
static void
test_refusals_one_line (void)
{
  static const TestRefusal cases[] = {
    { "batch = 100\n", "batch = 100\ninput_time = 5ms\n",
      "[model] input_time: needs [cluster] host_cores" },
    { "workers = 8\n", "workers = 8\nhost_cores = 40\n",
      "[cluster] host_cores: shares the cores among data loaders, but [model] input_time is 0" },
    { "batch = 100\n", "batch = 100\nloader_workers = 4\n",
      "[model] loader_workers: needs [model] input_time" },
    { "batch = 100\n", "batch = 100\ninput_time = -1ms\n", "[model] input_time" },
    { "batch = 100\n", "batch = 100\ninput_time = 2min\n", "[model] input_time" },
    { "batch = 100\n", "batch = 100\nframework_time = 61s\n", "[model] framework_time" },
    { "workers = 8\n", "workers = 8\nhost_cores = 5000\n", "[cluster] host_cores" },
    { "batch = 100\n", "batch = 100\nloader_workers = -2\n", "[model] loader_workers" },
    { "batch = 100\n", "batch = 100\nfusion = xla\n", "[model] fusion" },
    { "batch = 100\n", "batch = 100\nfusion = elementwise\n",
      "[model] fusion: fusion saves memory traffic, which this run does not price" },
    { "batch = 100\n[policy]\nkind = allreduce\n",
      "batch = 100\nframework_time = 10ms\n[policy]\nkind = pipeline\n",
      "[model] framework_time: [policy] kind = pipeline prices its micro-batches" },
  };
  test_refusals (base, cases, G_N_ELEMENTS (cases));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/host/input/closed-form", test_input_closed_form);
  g_test_add_func ("/host/framework", test_framework_time);
  g_test_add_func ("/host/run-pays", test_run_pays);
  g_test_add_func ("/host/fusion/bytes", test_fusion_bytes);
  g_test_add_func ("/host/refusals", test_refusals_one_line);
  return g_test_run ();
}
