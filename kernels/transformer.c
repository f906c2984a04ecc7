/*
 * transformer.c — `kind = transformer`: a GPT-style decoder as a timing
 * model, from its shape.
 *
 * [model] blocks, width, heads, sequence, vocabulary and positions give the
 * network GPT-2 is (Radford et al. 2019) and Megatron-LM's GPT is with its
 * own sizes (Narayanan et al. 2021): token and position embeddings, pre-LN
 * blocks of a fused query/key/value projection, the attention scores
 * (heads x s x s, counted over the whole matrix as dense kernels compute
 * it), their softmax, the context, the output projection and its residual
 * add, then an MLP of width 4 x width with GELU and its add; a final layer
 * norm, and the LM head tied to the token embedding (FLOPs, no parameters
 * of its own).  One sample is one sequence of `sequence` tokens.
 *
 * The layers are the rows tools/workloads.py writes for GPT-2 (its
 * attention_block), written here as a layer table and read by the same
 * parser (timing.c), so that kind = transformer with GPT-2's shape is the
 * built-in gpt-2 table, layer for layer (tests/test-workloads.c).  The
 * projections and the MLP also carry their weight shapes (KernWeight), the
 * embeddings theirs, the attention's scores, softmax and context their
 * heads, and the embedding, the LM head and its loss say they run over the
 * vocabulary, so the model can be cut within a layer.
 */
#include "kernels/kernels.h"

#include <string.h>

/* Layer lines per block, and where a block's weight matrices are among
 * them (the order of append_block). */
#define LINES_PER_BLOCK 12
#define LINE_QKV 1
#define LINE_PROJ 5
#define LINE_FC 8
#define LINE_FC_PROJ 10

/* [model] blocks stops at 1,000 (12,004 layers, a few MB to build, under
 * the model's layer cap of 16,384) so that a scenario asking for more is
 * refused by its bounds before a table of millions of lines is written. */
static const BaseKey keys[] = {
  { "model", "blocks", BASE_KEY_INT, 0, "12", 1, 1000, 0, NULL, 0,
    "kind = transformer: blocks (layers) of the decoder; GPT-2 small has 12, GPT-3 96.", NULL },
  { "model", "width", BASE_KEY_INT, 0, "768", 1, 1048576, 0, NULL, 0,
    "kind = transformer: model width (hidden size); the MLP is 4 x width wide.", NULL },
  { "model", "heads", BASE_KEY_INT, 0, "12", 1, 65536, 0, NULL, 0,
    "kind = transformer: attention heads; they must divide width.", NULL },
  { "model", "sequence", BASE_KEY_INT, 0, "1024", 1, 1048576, 0, NULL, 0,
    "kind = transformer: tokens per sample (one sequence); [model] batch counts sequences.", NULL },
  { "model", "vocabulary", BASE_KEY_INT, 0, "50257", 1, 100000000, 0, NULL, 0,
    "kind = transformer: tokens of the vocabulary (the embedding and the LM head).", NULL },
  { "model", "positions", BASE_KEY_INT, 0, "0", 0, 1048576, 0, NULL, 0,
    "kind = transformer: rows of the position embedding (0 = sequence).", NULL },
  { .section = NULL },
};

typedef struct {
  gint64 blocks, d, heads, s, vocab, npos;
} Shape;

static Shape
shape_of (const BaseValues *v)
{
  Shape sh = {
    .blocks = base_values_int (v, "model.blocks"),
    .d = base_values_int (v, "model.width"),
    .heads = base_values_int (v, "model.heads"),
    .s = base_values_int (v, "model.sequence"),
    .vocab = base_values_int (v, "model.vocabulary"),
    .npos = base_values_int (v, "model.positions"),
  };
  if (sh.npos == 0)
    sh.npos = sh.s;
  return sh;
}

static gboolean
transformer_validate (const BaseValues *v, GError **error)
{
  Shape sh = shape_of (v);
  if (sh.d % sh.heads != 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, 0,
                   "[model] heads: %" G_GINT64_FORMAT " heads do not divide width %"
                   G_GINT64_FORMAT "; use a divisor of width", sh.heads, sh.d);
      return FALSE;
    }
  if (sh.npos < sh.s)
    {
      g_set_error (error, KERN_TIMING_ERROR, 0,
                   "[model] positions: %" G_GINT64_FORMAT " positions are fewer than the %"
                   G_GINT64_FORMAT " tokens of a sequence; use at least sequence (or 0)",
                   sh.npos, sh.s);
      return FALSE;
    }
  return TRUE;
}

static void
line (GString *t, const char *name, gint64 params, double flops, double acts, const char *kind)
{
  g_string_append_printf (t, "%s %" G_GINT64_FORMAT " %.17g %.17g %s\n", name, params, flops,
                          acts, kind);
}

/* Block b's twelve lines (the pre-LN block of docs/workloads.md). */
static void
append_block (GString *t, const Shape *sh, gint64 b)
{
  double s = (double) sh->s, d = (double) sh->d, a = (double) sh->heads;
  gint64 D = sh->d;
  char name[64];
#define NAME(suffix) (g_snprintf (name, sizeof name, "h.%" G_GINT64_FORMAT "." suffix, b), name)
  line (t, NAME ("ln_1"), 2 * D, 0, s * d, "norm");
  line (t, NAME ("attn.qkv"), 3 * D * D + 3 * D, 2 * s * d * 3 * d, 3 * s * d, "gemm");
  line (t, NAME ("attn.score"), 0, 2 * s * s * d, a * s * s, "attention");
  line (t, NAME ("attn.softmax"), 0, 0, a * s * s, "elementwise");
  line (t, NAME ("attn.context"), 0, 2 * s * s * d, s * d, "attention");
  line (t, NAME ("attn.proj"), D * D + D, 2 * s * d * d, s * d, "gemm");
  line (t, NAME ("attn.add"), 0, 0, s * d, "elementwise");
  line (t, NAME ("ln_2"), 2 * D, 0, s * d, "norm");
  line (t, NAME ("mlp.fc"), 4 * D * D + 4 * D, 2 * s * d * 4 * d, 4 * s * d, "gemm");
  line (t, NAME ("mlp.gelu"), 0, 0, 4 * s * d, "elementwise");
  line (t, NAME ("mlp.proj"), 4 * D * D + D, 2 * s * 4 * d * d, s * d, "gemm");
  line (t, NAME ("mlp.add"), 0, 0, s * d, "elementwise");
#undef NAME
}

/* A weight of rows x cols at the start of layer l's parameters, its bias
 * (cols) after it when `bias`. */
static void
set_weight (KernLayer *l, gsize at, gint64 rows, gint64 cols, gboolean bias)
{
  KernWeight *w = &l->weight[l->n_weights++];
  *w = (KernWeight) { .offset = l->param_offset + at, .rows = (int) rows, .cols = (int) cols,
                      .has_bias = bias,
                      .bias = bias ? l->param_offset + at + (gsize) rows * (gsize) cols : 0 };
}

static KernModel *
transformer_new (const KernModelArgs *a, struct KernBackend *be G_GNUC_UNUSED, GError **error)
{
  if (!transformer_validate (a->values, error))
    return NULL;
  Shape sh = shape_of (a->values);
  GString *t = g_string_new (NULL);
  g_string_append_printf (t, "# input %" G_GINT64_FORMAT "\n", sh.s);
  double s = (double) sh.s, d = (double) sh.d, V = (double) sh.vocab;
  line (t, "embed", sh.vocab * sh.d + sh.npos * sh.d, 0, s * d, "embedding");
  for (gint64 b = 0; b < sh.blocks; b++)
    append_block (t, &sh, b);
  line (t, "ln_f", 2 * sh.d, 0, s * d, "norm");
  line (t, "lm_head", 0, 2 * s * d * V, s * V, "gemm");
  line (t, "lm_loss", 0, 0, s * V, "elementwise");
  KernModel *m = kern_timing_parse ("transformer", t->str, error);
  g_string_free (t, TRUE);
  if (!m)
    return NULL;
  gint64 D = sh.d;
  set_weight (&m->layers[0], 0, sh.vocab, D, FALSE);
  set_weight (&m->layers[0], (gsize) (sh.vocab * D), sh.npos, D, FALSE);
  /* the embedding, the LM head tied to it (its weight is the embedding's
   * table, read transposed: no parameters of its own) and the loss run
   * over the vocabulary */
  int L = m->n_layers;
  KernLayer *head = &m->layers[L - 2];
  head->weight[head->n_weights++] = (KernWeight) { .offset = 0, .rows = (int) D,
                                                   .cols = (int) sh.vocab };
  m->layers[0].vocabulary = head->vocabulary = m->layers[L - 1].vocabulary = TRUE;
  for (gint64 b = 0; b < sh.blocks; b++)
    {
      KernLayer *first = &m->layers[1 + b * LINES_PER_BLOCK];
      set_weight (first + LINE_QKV, 0, D, 3 * D, TRUE);
      set_weight (first + LINE_PROJ, 0, D, D, TRUE);
      set_weight (first + LINE_FC, 0, D, 4 * D, TRUE);
      set_weight (first + LINE_FC_PROJ, 0, 4 * D, D, TRUE);
      for (int i = LINE_QKV + 1; i < LINE_PROJ; i++)
        first[i].heads = (int) sh.heads;
    }
  return m;
}

const KernModelKind kern_model_transformer = {
  .name = "transformer",
  .description = "a GPT-style decoder from its shape ([model] blocks, width, heads, sequence, "
                 "vocabulary), no math (docs/workloads.md)",
  .math = FALSE,
  .depth_key = "blocks",
  .keys = keys,
  .validate = transformer_validate,
  .new = transformer_new,
};
