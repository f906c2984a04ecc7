/*
 * fuzz-workload.c — libFuzzer target for the layer-table parser.
 *
 * A layer table comes from other people as a scenario does (`[model]
 * workload = FILE`; docs/security.md, docs/workloads.md): whatever text it
 * holds, kern_timing_parse() must return a model or a one-line
 * KERN_TIMING_ERROR, never crash, hang, leak or allocate without bound.
 * Each input is one table's text.  dtsim reads a table file with
 * sim_input_read_text(), which refuses NUL bytes and text that is not UTF-8
 * before the parser sees it, so the harness passes the input up to its
 * first NUL byte and skips inputs that are not UTF-8: the parser is only
 * ever given such text.  A model that parses is then used as a run uses it
 * (n_params, flops_forward and flops_backward at a few batch sizes, every
 * layer, kern_model_memory_bytes, init on a small model) and freed.
 *
 * Built by `make fuzz` with clang and -fsanitize=fuzzer,address,undefined
 * (docs/fuzzing.md).
 */
#include <math.h>

#include "fuzz/fuzz-common.h"
#include "kernels/kernels.h"

#define TARGET "fuzz-workload"

/* init() writes n_params floats: called only on models up to this size. */
#define FUZZ_INIT_MAX_PARAMS (1u << 16)

/* Called once by libFuzzer before the first input. */
int
LLVMFuzzerInitialize (int *argc G_GNUC_UNUSED, char ***argv G_GNUC_UNUSED)
{
  fuzz_init_glib ();
  return 0;
}

/* Aborts with `what` unless `ok`: a model that parsed breaks a promise of
 * kernels.h or docs/workloads.md. */
static void
fuzz_expect (gboolean ok, int layer, const char *what)
{
  if (!ok)
    {
      fprintf (stderr, TARGET ": layer %d: %s\n", layer, what);
      abort ();
    }
}

/* The cost rule of docs/workloads.md, checked layer by layer, and the calls
 * a run makes on the model. */
static void
fuzz_check_model (KernModel *m)
{
  fuzz_expect (m->ops && m->ops->n_params && m->ops->flops_forward
               && m->ops->flops_backward && m->ops->free, -1, "an incomplete ops table");
  fuzz_expect (m->n_layers >= 1 && m->layers != NULL, -1, "no layers");
  fuzz_expect (m->d == 0 && m->k == 0 && !m->ops->loss_grad && !m->ops->evaluate, -1,
               "math in a timing-only model");
  gsize offset = 0;
  for (int i = 0; i < m->n_layers; i++)
    {
      const KernLayer *l = &m->layers[i];
      fuzz_expect (memchr (l->name, '\0', sizeof l->name) != NULL && l->name[0] != '\0', i,
                   "a name that is empty or not terminated");
      fuzz_expect (l->param_offset == offset, i, "parameters not laid out one after another");
      fuzz_expect (l->params <= G_MAXSIZE - offset, i, "a parameter total that overflows");
      offset += l->params;
      fuzz_expect (isfinite (l->fwd_flops) && l->fwd_flops >= 0, i, "FWD_FLOPS not finite >= 0");
      fuzz_expect (isfinite (l->outputs) && l->outputs >= 0, i,
                   "ACTIVATIONS not finite >= 0");
      fuzz_expect (l->bwd_flops == 2.0 * l->fwd_flops, i, "backward not twice forward");
      fuzz_expect (l->fwd_flops_fixed == 0 && l->bwd_flops_fixed == 0, i,
                   "a fixed FLOP term");
      fuzz_expect (l->activations == l->outputs || l->activations == 0, i,
                   "kept floats neither ACTIVATIONS nor 0 (KEEP)");
    }
  gsize P = m->ops->n_params (m);
  fuzz_expect (P == offset, -1, "n_params not the sum of the layers' PARAMS");

  /* the totals may overflow to infinity (the scenario check refuses such a
   * model by its step time and memory), but never become NaN or negative;
   * a batch is at least one sample */
  static const int batches[] = { 1, 32, 4096, G_MAXINT };
  for (gsize b = 0; b < G_N_ELEMENTS (batches); b++)
    {
      int n = batches[b];
      double fwd = m->ops->flops_forward (m, n), bwd = m->ops->flops_backward (m, n);
      fuzz_expect (!isnan (fwd) && fwd >= 0 && !isnan (bwd) && bwd >= 0, -1,
                   "FLOP totals NaN or negative");
      /* one optimizer float per parameter, as momentum keeps */
      double mem = kern_model_memory_bytes (m, n, P);
      fuzz_expect (!isnan (mem) && mem >= 0, -1, "memory bytes NaN or negative");
    }
  if (P <= FUZZ_INIT_MAX_PARAMS && m->ops->init)
    {
      float *params = g_new (float, MAX (P, 1));
      m->ops->init (m, params, 1);
      for (gsize i = 0; i < P; i++)
        fuzz_expect (params[i] == 0.0f, -1, "init did not zero the parameters");
      g_free (params);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* the parser reads a C string, which ends at the first NUL */
  const uint8_t *nul = memchr (data, '\0', size);
  size_t len = nul ? (size_t) (nul - data) : size;
  if (!g_utf8_validate ((const char *) data, (gssize) len, NULL))
    return 0;
  char *text = g_strndup ((const char *) data, len);

  GError *error = NULL;
  KernModel *m = kern_timing_parse ("fuzz.txt", text, &error);
  g_free (text);
  if (!m)
    {
      fuzz_check_error (TARGET, error, KERN_TIMING_ERROR, -1);
      return 0;
    }
  if (error)
    abort ();
  fuzz_check_model (m);
  kern_model_free (m);
  return 0;
}
