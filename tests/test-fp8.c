/*
 * test-fp8.c — [device] precision = fp8 (docs/compute.md, "FP8"): the
 * linear layers' matrix products at fp8_flops x fp8_efficiency, attention's
 * products and every other layer at the bf16 figures (flops, efficiency),
 * activations and memory as bf16 mixed precision; the catalog's fp8 figures
 * taken for a device that has them and refused, in one line, for one that
 * does not; the new keys bounded and refused where they price nothing.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "config/hardware.h"
#include "config/models.h"
#include "config/scenario.h"
#include "device/model.h"
#include "kernels/kernels.h"
#include "tests/util.h"

/* Two linear layers around attention's scores and their softmax, FLOPs
 * per sample forward (backward is twice forward: docs/workloads.md). */
static const char table[] =
  "# input 1000\n"
  "fc1 1000 4000000 1000 gemm\n"
  "score 0 1000000 1000 attention\n"
  "soft 0 0 1000 elementwise\n"
  "fc2 1000 2000000 10 gemm\n";
static const double F_gemm = 4e6 + 2e6, F_att = 1e6;   /* FLOPs per sample, forward */
static const double n = 10;                            /* batch */
static const double R = 1e15, e = 0.5, af = 0.8;       /* bf16 peak, efficiency, attention */
static const double R8 = 2e15, e8 = 0.4;               /* fp8 peak and efficiency */

static char *table_dir, *table_path;

/* The scenario over the table: a memory bandwidth so large that every
 * layer is bound by its FLOPs (bytes / 1e30 B/s is below 1e-20 s). */
static char *
scenario (void)
{
  return g_strdup_printf (
    "[scenario]\nname = fp8\n[cluster]\nworkers = 1\n"
    "[device]\nprecision = fp8\nflops = 1PFLOPS\nefficiency = 0.5\nattention_factor = 0.8\n"
    "fp8_flops = 2PFLOPS\nfp8_efficiency = 0.4\nmemory_bandwidth = 1e30\nmemory = 80GB\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 10\noptimizer = adam\n"
    "[policy]\nkind = allreduce\n", table_path);
}

static SimConfig *
load (const char *text, const char *const *sets, GPtrArray **keep)
{
  *keep = test_load_scenario_text (text, sets);
  g_assert_cmpuint ((*keep)->len, ==, 1);
  return g_ptr_array_index (*keep, 0);
}

static double
step_seconds (const char *const *sets)
{
  g_autofree char *text = scenario ();
  GPtrArray *configs;
  SimConfig *c = load (text, sets, &configs);
  KernModel *m = sim_model_new (c, NULL, NULL);
  g_assert_nonnull (m);
  SimStepCost cost;
  sim_step_cost (c, m, &cost);
  double t = cost.step;
  sim_step_cost_clear (&cost);
  kern_model_free (m);
  g_ptr_array_unref (configs);
  return t;
}

/* Forward plus backward (three times forward's FLOPs) of n samples: the
 * gemm layers at the fp8 rate, attention at bf16's times its factor. */
static void
test_closed_form (void)
{
  double fp8 = step_seconds (NULL);
  test_assert_close (fp8, 3 * n * (F_gemm / (R8 * e8) + F_att / (R * e * af)), 1e-12);

  /* fp8_efficiency = 0: the linear layers at the fp8 peak times efficiency */
  const char *const same[] = { "device.fp8_efficiency=0", NULL };
  test_assert_close (step_seconds (same),
                     3 * n * (F_gemm / (R8 * e) + F_att / (R * e * af)), 1e-12);

  /* bf16: every product at the bf16 peak; fp8 shortens only the linear
   * layers' share */
  const char *const bf16[] = { "device.precision=bf16", "device.fp8_flops=0",
                               "device.fp8_efficiency=0", NULL };
  double b = step_seconds (bf16);
  test_assert_close (b, 3 * n * (F_gemm / (R * e) + F_att / (R * e * af)), 1e-12);
  test_assert_close (b - fp8, 3 * n * F_gemm * (1 / (R * e) - 1 / (R8 * e8)), 1e-9);
}

/* Memory: fp8 holds what bf16 mixed precision holds (2-byte working
 * weights and gradients, an fp32 master copy beside the optimizer's state,
 * 2-byte activations); the fp8 casts of the weights are transient. */
static void
test_memory_as_bf16 (void)
{
  g_autofree char *text = scenario ();
  const char *const bf16[] = { "device.precision=bf16", "device.fp8_flops=0",
                               "device.fp8_efficiency=0", NULL };
  GPtrArray *ka, *kb;
  SimConfig *a = load (text, NULL, &ka);
  SimConfig *b = load (text, bf16, &kb);
  KernModel *m = sim_model_new (a, NULL, NULL);
  SimMemoryTerms ta, tb;
  sim_memory_terms (a, m, &ta);
  sim_memory_terms (b, m, &tb);
  double P = (double) m->ops->n_params (m);
  g_assert_cmpfloat (ta.param_bytes, ==, 2);
  g_assert_cmpfloat (ta.grad_bytes, ==, 2);
  g_assert_cmpfloat (ta.state_bytes, ==, 4.0 * 2 + 4);   /* Adam's two moments + master */
  test_assert_close (ta.params + ta.grads + ta.state, (2 + 2 + 12) * P, 1e-12);
  test_assert_close (ta.activations, tb.activations, 1e-12);
  test_assert_close (ta.total, tb.total, 1e-12);
  kern_model_free (m);
  g_ptr_array_unref (ka);
  g_ptr_array_unref (kb);
}

/* [cluster] device = h100 under fp8: the catalog's fp8 peak and efficiency
 * for the linear layers, its bf16 figures for the rest. */
static void
test_catalog (void)
{
  g_autoptr (SimCatalog) cat = sim_catalog_load (NULL, NULL);
  const SimDevice *d = sim_catalog_device (cat, "h100");
  g_assert_nonnull (d);
  g_assert_cmpfloat (d->fp8_flops, ==, 2 * d->bf16_flops);   /* the datasheet's 2:1 */
  g_autofree char *text = g_strdup_printf (
    "[scenario]\nname = h\n[cluster]\nworkers = 1\ndevice = h100\n[device]\nprecision = fp8\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 10\n[policy]\nkind = allreduce\n",
    table_path);
  GPtrArray *keep;
  SimConfig *c = load (text, NULL, &keep);
  g_assert_cmpfloat (c->flops, ==, d->bf16_flops);
  g_assert_cmpfloat (c->efficiency, ==, d->bf16_efficiency > 0 ? d->bf16_efficiency
                                                                : d->efficiency);
  g_assert_cmpfloat (c->fp8_flops, ==, d->fp8_flops);
  g_assert_cmpfloat (c->fp8_efficiency, ==, d->fp8_efficiency);
  g_ptr_array_unref (keep);
}

/* Each refusal: one line naming the file, [section] key and the fix. */
static void
test_refusals_one_line (void)
{
  g_autofree char *text = scenario ();
  static const TestRefusal cases[] = {
    { "fp8_flops = 2PFLOPS\n", "",
      "[device] fp8_flops: precision = fp8 runs the linear layers at the fp8 peak, which is "
      "not set; set fp8_flops" },
    { "precision = fp8\n", "precision = bf16\n",
      "[device] fp8_flops: prices fp8 matrix products, but [device] precision is not fp8; "
      "set precision = fp8 or remove fp8_flops" },
    { "precision = fp8\nflops = 1PFLOPS\nefficiency = 0.5\nattention_factor = 0.8\n"
      "fp8_flops = 2PFLOPS\n",
      "precision = fp16\nflops = 1PFLOPS\nefficiency = 0.5\nattention_factor = 0.8\n",
      "[device] fp8_efficiency: prices fp8 matrix products" },
    { "fp8_efficiency = 0.4\n", "fp8_efficiency = 1.5\n", "[device] fp8_efficiency" },
    { "fp8_efficiency = 0.4\n", "fp8_efficiency = -0.1\n", "[device] fp8_efficiency" },
    { "fp8_flops = 2PFLOPS\n", "fp8_flops = -1PFLOPS\n", "[device] fp8_flops" },
    { "precision = fp8\n", "precision = fp4\n", "[device] precision" },
    { "memory_bandwidth = 1e30\n", "",
      "[device] precision: fp8 prices the linear layers apart from the rest, layer by layer, "
      "which needs [device] memory_bandwidth" },
  };
  test_refusals (text, cases, G_N_ELEMENTS (cases));

  /* a catalog device without an fp8 peak, the file setting none */
  g_autofree char *a100 = g_strdup_printf (
    "[scenario]\nname = a\n[cluster]\nworkers = 1\ndevice = a100\n[device]\nprecision = fp8\n"
    "[model]\nkind = timing\nworkload = %s\nbatch = 10\n[policy]\nkind = allreduce\n",
    table_path);
  g_autofree char *msg = test_load_scenario_error (a100);
  g_assert_nonnull (strstr (msg, "[device] precision: device 'a100' has no fp8 peak (fp8_flops) "
                                 "in the catalog; use precision = bf16 or set [device] fp8_flops"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  table_dir = g_dir_make_tmp ("dtsim-fp8-XXXXXX", NULL);
  table_path = g_build_filename (table_dir, "products.txt", NULL);
  g_assert_true (g_file_set_contents (table_path, table, -1, NULL));
  g_test_add_func ("/fp8/closed-form", test_closed_form);
  g_test_add_func ("/fp8/memory-as-bf16", test_memory_as_bf16);
  g_test_add_func ("/fp8/catalog", test_catalog);
  g_test_add_func ("/fp8/refusals", test_refusals_one_line);
  int rc = g_test_run ();
  g_unlink (table_path);
  g_rmdir (table_dir);
  g_free (table_path);
  g_free (table_dir);
  return rc;
}
