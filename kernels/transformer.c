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
 * The keys of today's models change that network where they say, and
 * their defaults leave it GPT-2's: ffn (the MLP's width), kv_heads
 * (grouped-query attention, Ainslie et al. 2023: keys and values of
 * kv_heads heads shared by the query heads), activation = swiglu (Shazeer 2020:
 * one fused gate and up projection of 2 x ffn outputs, their SiLU-gated
 * product of ffn, the down projection), norm = rmsnorm (Zhang and Sennrich
 * 2019: a scale, no bias), head = untied (the LM head's own vocabulary x
 * width matrix), attention = flash (Dao et al. 2022: the s x s scores and
 * probabilities are never written, only each query row's softmax
 * statistics are kept; FLOPs unchanged), position = rotary (Su et al. 2021:
 * no position table) and bias = false (no bias vectors in the projections).
 * [model] shape names a published model's settings of them (`shapes`).
 *
 * experts = E > 1 makes every block's MLP a mixture of experts (Shazeer et
 * al. 2017; Fedus et al. 2022; Jiang et al. 2024): a router (a width x E
 * projection, then the softmax and top-k choice over its scores) and E
 * expert MLPs of the block's ffn and activation, of which each token runs
 * top_k.  The expert layers hold E MLPs' parameters and cost top_k MLPs'
 * FLOPs and activations per token; they are marked (KernLayer.experts) so
 * that expert parallelism (policies/experts.c), the memory model and the
 * tensor cut know them.
 *
 * The layers are the rows tools/workloads.py writes for GPT-2 (its
 * attention_block), written here as a layer table and read by the same
 * parser (timing.c), so that kind = transformer with GPT-2's shape is the
 * built-in gpt-2 table, layer for layer (tests/test-workloads.c).  The
 * projections and the MLP also carry their weight shapes (KernWeight), the
 * embeddings theirs, the attention's scores, softmax and context their
 * heads, and the embedding, the LM head and its loss say they run over the
 * vocabulary, so the model can be cut within a layer: every block keeps
 * two pairs of one-matrix dense layers (query/key/value then output
 * projection, MLP in then out), which tensor parallelism cuts by columns
 * then rows.  What backward keeps follows the table rule (timing.c,
 * docs/workloads.md): the softmax and the residual adds run in place, the
 * GELU line keeps its own output beside its input.
 */
#include "kernels/kernels.h"

#include <string.h>

/* Layer lines per dense block, and where a block's weight matrices are
 * among them (the order of append_block); a mixture-of-experts block has
 * the router's two lines before the MLP's (ROUTER_LINES). */
#define LINES_PER_BLOCK 12
#define ROUTER_LINES 2
#define LINE_QKV 1
#define LINE_PROJ 5
#define LINE_FC 8
#define LINE_FC_PROJ 10

enum { MLP_GELU, MLP_SWIGLU };
enum { NORM_LAYERNORM, NORM_RMSNORM };
enum { HEAD_TIED, HEAD_UNTIED };
enum { ATTENTION_DENSE, ATTENTION_FLASH };
enum { POSITION_LEARNED, POSITION_ROTARY };

static const BaseChoice mlp_choices[] = {
  { "gelu", MLP_GELU, FALSE }, { "swiglu", MLP_SWIGLU, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice norm_choices[] = {
  { "layernorm", NORM_LAYERNORM, FALSE }, { "rmsnorm", NORM_RMSNORM, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice head_choices[] = {
  { "tied", HEAD_TIED, FALSE }, { "untied", HEAD_UNTIED, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice attention_choices[] = {
  { "dense", ATTENTION_DENSE, FALSE }, { "flash", ATTENTION_FLASH, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice position_choices[] = {
  { "learned", POSITION_LEARNED, FALSE }, { "rotary", POSITION_ROTARY, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice bool_choices[] = {
  { "false", FALSE, FALSE }, { "true", TRUE, FALSE }, { NULL, 0, FALSE } };

/* [model] blocks stops at 1,000 (12,004 layers, a few MB to build, under
 * the model's layer cap of 16,384) so that a scenario asking for more is
 * refused by its bounds before a table of millions of lines is written. */
static const BaseKey keys[] = {
  { "model", "blocks", BASE_KEY_INT, 0, "12", 1, 1000, 0, NULL, 0,
    "kind = transformer or gpt: blocks (layers) of the decoder; GPT-2 small has 12, GPT-3 96.", NULL },
  { "model", "width", BASE_KEY_INT, 0, "768", 1, 1048576, 0, NULL, 0,
    "kind = transformer or gpt: model width (hidden size).", NULL },
  { "model", "heads", BASE_KEY_INT, 0, "12", 1, 65536, 0, NULL, 0,
    "kind = transformer or gpt: attention (query) heads; they must divide width.", NULL },
  { "model", "sequence", BASE_KEY_INT, 0, "1024", 1, 1048576, 0, NULL, 0,
    "kind = transformer or gpt: tokens per sample (one sequence); [model] batch counts sequences.", NULL },
  { "model", "vocabulary", BASE_KEY_INT, 0, "50257", 1, 100000000, 0, NULL, 0,
    "kind = transformer or gpt: tokens of the vocabulary (the embedding and the LM head).", NULL },
  { "model", "positions", BASE_KEY_INT, 0, "0", 0, 1048576, 0, NULL, 0,
    "kind = transformer: rows of the position embedding (0 = sequence).", NULL },
  { "model", "ffn", BASE_KEY_INT, 0, "0", 0, 4194304, 0, NULL, 0,
    "kind = transformer: width of the MLP (its hidden layer); 0 = 4 x width.", NULL },
  { "model", "kv_heads", BASE_KEY_INT, 0, "0", 0, 65536, 0, NULL, 0,
    "kind = transformer: heads of the keys and values (grouped-query attention), dividing heads; 0 = heads.", NULL },
  { "model", "activation", BASE_KEY_ENUM, 0, "gelu", 0, 0, 0, mlp_choices, 0,
    "kind = transformer: the MLP: gelu (two matrices) or swiglu (a fused gate and up projection of 2 x ffn, then the down projection).", NULL },
  { "model", "norm", BASE_KEY_ENUM, 0, "layernorm", 0, 0, 0, norm_choices, 0,
    "kind = transformer: layernorm (scale and bias) or rmsnorm (scale only).", NULL },
  { "model", "head", BASE_KEY_ENUM, 0, "tied", 0, 0, 0, head_choices, 0,
    "kind = transformer or gpt: the LM head tied to the token embedding (no parameters of its own) or untied (its own vocabulary x width matrix).", NULL },
  { "model", "attention", BASE_KEY_ENUM, 0, "dense", 0, 0, 0, attention_choices, 0,
    "kind = transformer: dense (the s x s scores and probabilities kept for backward) or flash (only each row's softmax statistics kept; the same FLOPs).", NULL },
  { "model", "position", BASE_KEY_ENUM, 0, "learned", 0, 0, 0, position_choices, 0,
    "kind = transformer: learned (a position table of positions x width) or rotary (no table).", NULL },
  { "model", "bias", BASE_KEY_ENUM, 0, "true", 0, 0, 0, bool_choices, 0,
    "kind = transformer: whether the projections and the MLP have bias vectors.", NULL },
  { "model", "experts", BASE_KEY_INT, 0, "0", 0, 4096, 0, NULL, 0,
    "kind = transformer: experts per mixture-of-experts MLP (a router and E expert MLPs of which each token runs top_k; docs/policies.md, \"Experts\"); 0 or 1 = a dense MLP.", NULL },
  { "model", "top_k", BASE_KEY_INT, 0, "2", 1, 4096, 0, NULL, 0,
    "kind = transformer, experts > 1: experts each token runs, 1 to experts.", NULL },
  { "model", "shape", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, 0,
    "kind = transformer: a published model's shape (gpt3-175b, llama2-7b, llama2-70b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b; docs/workloads.md) setting the keys above; a key also given must agree with it.", NULL },
  { .section = NULL },
};

/* The published shapes (docs/workloads.md gives the tables they come
 * from).  GPT-3 is GPT-2's network at its size; Llama 2 and 3 use SwiGLU,
 * RMSNorm, rotary positions, no biases and an untied head, and all but
 * Llama 2 7B grouped-query attention of 8 key/value heads.  Llama 3's
 * vocabulary is its tokenizer's 128,000 tokens and 256 special ones. */
#define LLAMA "activation", "swiglu", "norm", "rmsnorm", "head", "untied", "position", "rotary", \
              "bias", "false"
static const char *const gpt3_175b[] = {
  "blocks", "96", "width", "12288", "heads", "96", "kv_heads", "96", "ffn", "49152",
  "sequence", "2048", "vocabulary", "50257", "activation", "gelu", "norm", "layernorm", "head", "tied",
  "position", "learned", "bias", "true", NULL };
static const char *const llama2_7b[] = {
  "blocks", "32", "width", "4096", "heads", "32", "kv_heads", "32", "ffn", "11008",
  "sequence", "4096", "vocabulary", "32000", LLAMA, NULL };
static const char *const llama2_70b[] = {
  "blocks", "80", "width", "8192", "heads", "64", "kv_heads", "8", "ffn", "28672",
  "sequence", "4096", "vocabulary", "32000", LLAMA, NULL };
static const char *const llama3_8b[] = {
  "blocks", "32", "width", "4096", "heads", "32", "kv_heads", "8", "ffn", "14336",
  "sequence", "8192", "vocabulary", "128256", LLAMA, NULL };
static const char *const llama3_70b[] = {
  "blocks", "80", "width", "8192", "heads", "64", "kv_heads", "8", "ffn", "28672",
  "sequence", "8192", "vocabulary", "128256", LLAMA, NULL };
static const char *const llama3_405b[] = {
  "blocks", "126", "width", "16384", "heads", "128", "kv_heads", "8", "ffn", "53248",
  "sequence", "8192", "vocabulary", "128256", LLAMA, NULL };
/* Mixtral 8x7B (Jiang et al. 2024, table 1): Mistral 7B's blocks with
 * eight SwiGLU experts per MLP, two per token, and a context of 32,768
 * tokens. */
static const char *const mixtral_8x7b[] = {
  "blocks", "32", "width", "4096", "heads", "32", "kv_heads", "8", "ffn", "14336",
  "sequence", "32768", "vocabulary", "32000", "experts", "8", "top_k", "2", LLAMA, NULL };
#undef LLAMA

static const KernModelShape shapes[] = {
  { "gpt3-175b", "GPT-3 175B (Brown et al. 2020, table 2.1)", gpt3_175b },
  { "llama2-7b", "Llama 2 7B (Touvron et al. 2023; docs/workloads.md)", llama2_7b },
  { "llama2-70b", "Llama 2 70B (Touvron et al. 2023; docs/workloads.md)", llama2_70b },
  { "llama3-8b", "Llama 3 8B (Dubey et al. 2024, table 3)", llama3_8b },
  { "llama3-70b", "Llama 3 70B (Dubey et al. 2024, table 3)", llama3_70b },
  { "llama3-405b", "Llama 3 405B (Dubey et al. 2024, table 3)", llama3_405b },
  { "mixtral-8x7b", "Mixtral 8x7B (Jiang et al. 2024, table 1)", mixtral_8x7b },
  { NULL, NULL, NULL },
};

typedef struct {
  gint64 blocks, d, heads, kv, ffn, s, vocab, npos;
  gint64 experts, top_k;   /* experts > 1: a mixture of experts */
  gboolean swiglu, rms, untied, flash, rotary, bias;
} Shape;

static Shape
shape_of (const BaseValues *v)
{
  Shape sh = {
    .blocks = base_values_int (v, "model.blocks"),
    .d = base_values_int (v, "model.width"),
    .heads = base_values_int (v, "model.heads"),
    .kv = base_values_int (v, "model.kv_heads"),
    .ffn = base_values_int (v, "model.ffn"),
    .s = base_values_int (v, "model.sequence"),
    .vocab = base_values_int (v, "model.vocabulary"),
    .npos = base_values_int (v, "model.positions"),
    .experts = base_values_int (v, "model.experts"),
    .top_k = base_values_int (v, "model.top_k"),
    .swiglu = base_values_int (v, "model.activation") == MLP_SWIGLU,
    .rms = base_values_int (v, "model.norm") == NORM_RMSNORM,
    .untied = base_values_int (v, "model.head") == HEAD_UNTIED,
    .flash = base_values_int (v, "model.attention") == ATTENTION_FLASH,
    .rotary = base_values_int (v, "model.position") == POSITION_ROTARY,
    .bias = base_values_int (v, "model.bias") != 0,
  };
  if (sh.npos == 0)
    sh.npos = sh.s;
  if (sh.kv == 0)
    sh.kv = sh.heads;
  if (sh.ffn == 0)
    sh.ffn = 4 * sh.d;
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
  if (sh.heads % sh.kv != 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, 0,
                   "[model] kv_heads: %" G_GINT64_FORMAT " key/value heads do not divide the %"
                   G_GINT64_FORMAT " heads; use a divisor of heads (or 0 = heads)", sh.kv,
                   sh.heads);
      return FALSE;
    }
  if (sh.experts > 1 && sh.top_k > sh.experts)
    {
      g_set_error (error, KERN_TIMING_ERROR, 0,
                   "[model] top_k: %" G_GINT64_FORMAT " is more than the %" G_GINT64_FORMAT
                   " experts; use 1 to experts", sh.top_k, sh.experts);
      return FALSE;
    }
  if (sh.experts <= 1 && sh.top_k != 2)
    {
      g_set_error (error, KERN_TIMING_ERROR, 0,
                   "[model] top_k: applies only with experts > 1 (a mixture of experts); "
                   "remove it or set [model] experts");
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

/* One layer line; `keep` is its KEEP field, "" for the parser's default
 * (timing.c: an element-wise line as wide as its input in place). */
static void
line_keep (GString *t, const char *name, gint64 params, double flops, double acts,
           const char *kind, const char *keep)
{
  g_string_append_printf (t, "%s %" G_GINT64_FORMAT " %.17g %.17g %s %s\n", name, params, flops,
                          acts, kind, keep);
}

static void
line (GString *t, const char *name, gint64 params, double flops, double acts, const char *kind)
{
  line_keep (t, name, params, flops, acts, kind, "");
}

/* Parameters of a norm: a scale (and a bias for layer norm) per feature. */
static gint64
norm_params (const Shape *sh)
{
  return sh->rms ? sh->d : 2 * sh->d;
}

/* Outputs of the fused query/key/value projection: width queries, and
 * keys and values of kv_heads heads of width / heads each. */
static gint64
qkv_cols (const Shape *sh)
{
  return sh->d + 2 * sh->kv * (sh->d / sh->heads);
}

/* Outputs of the MLP's first matrix: ffn, or gate and up (2 ffn). */
static gint64
fc_cols (const Shape *sh)
{
  return sh->swiglu ? 2 * sh->ffn : sh->ffn;
}

/* Whether the blocks' MLPs are mixtures of experts. */
static gboolean
moe (const Shape *sh)
{
  return sh->experts > 1;
}

/* Layer lines per block. */
static int
block_lines (const Shape *sh)
{
  return LINES_PER_BLOCK + (moe (sh) ? ROUTER_LINES : 0);
}

/* Block b's twelve lines (the pre-LN block of docs/workloads.md); with
 * experts, the router's two before the MLP, whose lines then hold E
 * experts' parameters and top_k experts' FLOPs and activations. */
static void
append_block (GString *t, const Shape *sh, gint64 b)
{
  double s = (double) sh->s, d = (double) sh->d, a = (double) sh->heads;
  double f = (double) sh->ffn, q = (double) qkv_cols (sh), fc = (double) fc_cols (sh);
  /* E experts' parameters, k experts' work per token (1 and 1 dense) */
  gint64 E = moe (sh) ? sh->experts : 1;
  double k = moe (sh) ? (double) sh->top_k : 1.0;
  gint64 D = sh->d, Q = qkv_cols (sh), F = sh->ffn, FC = fc_cols (sh);
  gint64 bias = sh->bias ? 1 : 0;
  /* flash attention keeps each query row's softmax statistics (one float
   * per head and token) instead of the s x s scores and probabilities */
  double scores = sh->flash ? a * s : a * s * s, probs = sh->flash ? 0 : a * s * s;
  char name[64];
#define NAME(suffix) (g_snprintf (name, sizeof name, "h.%" G_GINT64_FORMAT "." suffix, b), name)
  line (t, NAME ("ln_1"), norm_params (sh), 0, s * d, "norm");
  line (t, NAME ("attn.qkv"), D * Q + bias * Q, 2 * s * d * q, s * q, "gemm");
  line (t, NAME ("attn.score"), 0, 2 * s * s * d, scores, "attention");
  line (t, NAME ("attn.softmax"), 0, 0, probs, "elementwise");
  line (t, NAME ("attn.context"), 0, 2 * s * s * d, s * d, "attention");
  line (t, NAME ("attn.proj"), D * D + bias * D, 2 * s * d * d, s * d, "gemm");
  line (t, NAME ("attn.add"), 0, 0, s * d, "elementwise");
  line (t, NAME ("ln_2"), norm_params (sh), 0, s * d, "norm");
  if (moe (sh))
    {
      /* the router's scores (no bias), their softmax and top-k choice */
      double e = (double) sh->experts;
      line (t, NAME ("mlp.router"), D * sh->experts, 2 * s * d * e, s * e, "gemm");
      line (t, NAME ("mlp.route"), 0, 0, s * e, "elementwise");
    }
  if (sh->swiglu)
    {
      line (t, NAME ("mlp.gate_up"), E * (D * FC + bias * FC), k * 2 * s * d * fc, k * s * fc,
            "gemm");
      line (t, NAME ("mlp.swiglu"), 0, 0, k * s * f, "elementwise");
    }
  else
    {
      line (t, NAME ("mlp.fc"), E * (D * FC + bias * FC), k * 2 * s * d * fc, k * s * fc,
            "gemm");
      /* GELU's backward reads its input, the projection's its output:
       * both stay (Korthikanti et al. 2022, section 4.1) */
      line_keep (t, NAME ("mlp.gelu"), 0, 0, k * s * f, "elementwise", "output");
    }
  line (t, NAME ("mlp.proj"), E * (F * D + bias * D), k * 2 * s * f * d, s * d, "gemm");
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
  gint64 positions = sh.rotary ? 0 : sh.npos * sh.d;
  line (t, "embed", sh.vocab * sh.d + positions, 0, s * d, "embedding");
  for (gint64 b = 0; b < sh.blocks; b++)
    append_block (t, &sh, b);
  line (t, "ln_f", norm_params (&sh), 0, s * d, "norm");
  line (t, "lm_head", sh.untied ? sh.vocab * sh.d : 0, 2 * s * d * V, s * V, "gemm");
  line (t, "lm_loss", 0, 0, s * V, "elementwise");
  KernModel *m = kern_timing_parse ("transformer", t->str, error);
  g_string_free (t, TRUE);
  if (!m)
    return NULL;
  gint64 D = sh.d;
  set_weight (&m->layers[0], 0, sh.vocab, D, FALSE);
  if (!sh.rotary)
    set_weight (&m->layers[0], (gsize) (sh.vocab * D), sh.npos, D, FALSE);
  /* the embedding, the LM head and the loss run over the vocabulary; a
   * tied head's weight is the embedding's table, read transposed (no
   * parameters of its own), an untied one's its own */
  int L = m->n_layers;
  KernLayer *head = &m->layers[L - 2];
  if (sh.untied)
    set_weight (head, 0, D, sh.vocab, FALSE);
  else
    head->weight[head->n_weights++] = (KernWeight) { .offset = 0, .rows = (int) D,
                                                     .cols = (int) sh.vocab };
  m->layers[0].vocabulary = head->vocabulary = m->layers[L - 1].vocabulary = TRUE;
  int lines = block_lines (&sh), mlp = moe (&sh) ? ROUTER_LINES : 0;
  for (gint64 b = 0; b < sh.blocks; b++)
    {
      KernLayer *first = &m->layers[1 + b * lines];
      set_weight (first + LINE_QKV, 0, D, qkv_cols (&sh), sh.bias);
      set_weight (first + LINE_PROJ, 0, D, D, sh.bias);
      /* an expert layer's weight is one expert's (the router has none:
       * it runs whole on every tensor rank) */
      set_weight (first + mlp + LINE_FC, 0, D, fc_cols (&sh), sh.bias);
      set_weight (first + mlp + LINE_FC_PROJ, 0, sh.ffn, D, sh.bias);
      for (int i = LINE_FC; moe (&sh) && i <= LINE_FC_PROJ; i++)
        {
          KernLayer *ly = first + mlp + i;
          ly->experts = (int) sh.experts;
          ly->top_k = (int) sh.top_k;
          ly->tokens = (double) sh.s;
        }
      for (int i = LINE_QKV + 1; i < LINE_PROJ; i++)
        {
          first[i].heads = (int) sh.heads;
          first[i].kv_heads = (int) sh.kv;
        }
    }
  return m;
}

const KernModelKind kern_model_transformer = {
  .name = "transformer",
.description = "a GPT-style decoder from its shape ([model] blocks, width, heads, sequence, "
                 "vocabulary, ffn, kv_heads, activation, norm, head, attention, experts, top_k, or "
                 "shape), no math (docs/workloads.md)",
  .math = FALSE,
  .depth_key = "blocks",
  .keys = keys,
  .validate = transformer_validate,
  .new = transformer_new,
  .shapes = shapes,
};
