/*
 * test-memory.c — the device memory check: what backward keeps of each
 * layer (the layer table's KEEP rule, docs/workloads.md), the framework's
 * reserve, and refusals that name the largest term and a batch that fits.
 *
 * The batches NVIDIA trains ResNet-50 v1.5 with on a 16 GB V100 (112 and
 * 128 in FP32, 256 in mixed precision) must pass the check, as must every
 * point of every published run in scenarios/validation/; a batch far past
 * the device is refused with the batch that fits, which is checked again.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "device/model.h"
#include "kernels/kernels.h"
#include "sim/load.h"
#include "tests/util.h"

/* ResNet-50 on one 16 GB V100 at `batch` and `precision`, timing only. */
static char *
resnet_text (int batch, const char *precision)
{
  return g_strdup_printf ("[scenario]\nname = r\niterations = 1\n"
                          "[cluster]\ndevice = v100-16gb\nworkers = 1\n"
                          "[device]\nprecision = %s\n"
                          "[model]\nkind = timing\nworkload = resnet-50\nbatch = %d\n"
                          "optimizer = momentum\n"
                          "[policy]\nkind = allreduce\n", precision, batch);
}

/* The one config of `text`, which loads and passes the checks. */
static SimConfig *
load_one (const char *text)
{
  SimConfig *c = test_load_one (text);
  g_assert_null (c->infeasible);
  return c;
}

/* NVIDIA's batches fit a 16 GB V100, with the reserve, and its terms add
 * up: the reserve is 0.5 GiB + 5 % of the 16 GB. */
static void
test_resnet_fits (void)
{
  const struct { int batch; const char *precision; } cases[] = {
    { 112, "fp32" }, { 128, "fp32" }, { 256, "fp16" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = resnet_text (cases[i].batch, cases[i].precision);
      SimConfig *c = load_one (text);
      KernModel *m = sim_model_new (c, NULL, NULL);
      g_assert_nonnull (m);
      SimMemoryTerms t;
      sim_memory_terms (c, m, &t);
      g_assert_cmpfloat (c->memory, ==, 16e9);
      g_assert_cmpfloat (t.reserve, ==, SIM_RESERVE_CONTEXT + SIM_RESERVE_FRAGMENTATION * 16e9);
      test_assert_close (t.total, t.params + t.grads + t.state + t.activations + t.reserve,
                         1e-15);
      g_assert_cmpfloat (t.total, <=, c->memory);
      /* the activations are the layers' kept floats, at the precision's size */
      double kept = 0;
      for (int l = 0; l < m->n_layers; l++)
        kept += m->layers[l].activations;
      double size = strcmp (cases[i].precision, "fp32") == 0 ? 4.0 : 2.0;
      test_assert_close (t.activations, size * cases[i].batch * kept, 1e-12);
      kern_model_free (m);
      sim_config_free (c);
    }
}

/* Every point of every scenario in scenarios/validation/ passes the check:
 * each ran on the device it names. */
static void
test_validation_fit (void)
{
  g_autofree char *dir = g_build_filename (g_getenv ("DTSIM_SRCDIR"), "scenarios",
                                           "validation", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  int files = 0;
  for (const char *name; (name = g_dir_read_name (d));)
    {
      if (!g_str_has_suffix (name, ".ini"))
        continue;
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_autoptr (GError) error = NULL;
      GPtrArray *configs = sim_scenario_load (path, NULL, &error);
      if (!configs)
        g_error ("%s: %s", name, error->message);
      for (guint i = 0; i < configs->len; i++)
        {
          const SimConfig *c = g_ptr_array_index (configs, i);
          if (c->infeasible)
            g_error ("%s, point %u: %s", name, i, c->infeasible);
        }
      g_ptr_array_unref (configs);
      files++;
    }
  g_assert_cmpint (files, >, 0);
}

/* ResNet-50 at batch 1024 in FP32 is refused: the activations are the
 * largest term, and the batch the message offers fits, one more does
 * not. */
static void
test_refusal_batch (void)
{
  g_autofree char *text = resnet_text (1024, "fp32");
  g_autofree char *e = test_load_scenario_error (text);
  if (!strstr (e, "does not fit") || !strstr (e, "[cluster] device")
      || !strstr (e, "reserve") || !strstr (e, "are the largest term")
      || !strstr (e, "set [model] recompute = "))
    g_error ("unexpected: %s", e);
  const char *largest = strstr (e, "; activations ");
  g_assert_nonnull (largest);
  const char *at = strstr (e, "lower [model] batch to ");
  g_assert_nonnull (at);
  gint64 fit = g_ascii_strtoll (at + strlen ("lower [model] batch to "), NULL, 10);
  g_assert_cmpint (fit, >, 0);
  g_assert_cmpint (fit, <, 1024);
  g_autofree char *ok = resnet_text ((int) fit, "fp32");
  sim_config_free (load_one (ok));
  g_autofree char *over = resnet_text ((int) fit + 1, "fp32");
  g_autofree char *e2 = test_load_scenario_error (over);
  g_assert_nonnull (strstr (e2, "does not fit"));
}

/* The KEEP rule on a small table: a conv keeps its output C; its norm
 * keeps its own; an in-place ReLU (as wide as its input) keeps nothing;
 * pooling (narrower) keeps its output; a norm marked freed keeps nothing;
 * the add after it runs in place; a GELU marked output keeps its own.
 * The time model reads ACTIVATIONS whatever KEEP says. */
static void
test_keep_rule (void)
{
  const double C = 1000, P = 250;
  g_autofree char *table = g_strdup_printf (
    "# input 300\n"
    "conv 10 100 %g conv\n"
    "bn 2 0 %g norm\n"
    "relu 0 0 %g elementwise\n"
    "pool 0 0 %g elementwise\n"
    "conv2 10 100 %g conv\n"
    "bn2 2 0 %g norm freed\n"
    "add 0 0 %g elementwise\n"
    "gelu 0 0 %g elementwise output\n",
    C, C, C, P, P, P, P, P);
  g_autoptr (GError) error = NULL;
  KernModel *m = kern_timing_parse ("t", table, &error);
  g_assert_no_error (error);
  const double want[] = { C, C, 0, P, P, 0, 0, P };
  g_assert_cmpint (m->n_layers, ==, G_N_ELEMENTS (want));
  for (int l = 0; l < m->n_layers; l++)
    {
      g_assert_cmpfloat (m->layers[l].activations, ==, want[l]);
      /* the time model's bytes: 4 (inputs + ACTIVATIONS) */
      double in = l == 0 ? 300 : m->layers[l - 1].outputs;
      g_assert_cmpfloat (m->layers[l].fwd_bytes, ==, 4.0 * (in + m->layers[l].outputs));
    }
  /* the device's activation term: 4 bytes x batch x (conv + bn + pool +
   * conv2 + gelu) = 4 n (2 C + 3 P) */
  const int n = 8;
  SimConfig *c = load_one ("[model]\nkind = timing\nparams = 1\nflops = 1\nbatch = 8\n");
  SimMemoryTerms t;
  sim_memory_terms (c, m, &t);
  g_assert_cmpfloat (t.activations, ==, 4.0 * n * (2 * C + 3 * P));
  g_assert_cmpfloat (t.reserve, ==, 0);   /* no catalog device, no reserve */
  sim_config_free (c);
  kern_model_free (m);

  /* a KEEP that is none of the three is one line naming it */
  KernModel *bad = kern_timing_parse ("t", "# input 1\nx 0 0 1 elementwise inplce\n", &error);
  g_assert_null (bad);
  g_assert_nonnull (strstr (error->message, "t line 2: KEEP"));
  g_assert_nonnull (strstr (error->message, "inplce"));
  g_assert_null (strchr (error->message, '\n'));
}

/* [device] reserve set by hand replaces the default and is checked with
 * the model: a reserve as large as the device refuses the model, naming
 * the reserve as the largest term and the key to lower. */
static void
test_reserve_key (void)
{
  g_autofree char *base = resnet_text (32, "fp32");
  g_autofree char *one = test_replaced (base, "[device]\n", "[device]\nreserve = 1GiB\n");
  SimConfig *c = load_one (one);
  KernModel *m = sim_model_new (c, NULL, NULL);
  SimMemoryTerms t;
  sim_memory_terms (c, m, &t);
  g_assert_cmpfloat (t.reserve, ==, 1024.0 * 1024 * 1024);
  kern_model_free (m);
  sim_config_free (c);
  g_autofree char *big = test_replaced (base, "[device]\n", "[device]\nreserve = 15.9GB\n");
  g_autofree char *e = test_load_scenario_error (big);
  if (!strstr (e, "reserve 14.8 GiB is the largest term: lower [device] reserve"))
    g_error ("unexpected: %s", e);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/memory/resnet-fits", test_resnet_fits);
  g_test_add_func ("/memory/validation-fit", test_validation_fit);
  g_test_add_func ("/memory/refusal-batch", test_refusal_batch);
  g_test_add_func ("/memory/keep-rule", test_keep_rule);
  g_test_add_func ("/memory/reserve-key", test_reserve_key);
  return g_test_run ();
}
