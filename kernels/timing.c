/*
 * timing.c — timing-only models: published networks as layer tables.
 *
 * A timing model has layers and costs but no math, so a simulation can
 * price ResNet-50 or GPT-2 on thousands of workers without computing
 * anything.  kern_timing_parse() reads a table of
 *
 *   NAME PARAMS FWD_FLOPS ACTIVATIONS [KIND [KEEP]]   (per sample)
 *
 * lines (scenarios/workloads/, written by tools/workloads.py) and turns
 * each into a KernLayer by the rules of docs/workloads.md:
 *
 *   fwd_flops = FWD_FLOPS                bwd_flops = 2 x FWD_FLOPS
 *   fwd_bytes_fixed = 4 PARAMS           bwd_bytes_fixed = 2 x 4 PARAMS
 *   fwd_bytes = 4 (inputs + ACTIVATIONS) bwd_bytes = 2 x fwd_bytes
 *   outputs = ACTIVATIONS                activations = the floats KEEP keeps
 *
 * where a layer's inputs are the previous layer's ACTIVATIONS, and the
 * first layer's are given by the table's "# input N" comment line; every
 * fixed FLOP term is 0.  KEEP says what backward keeps of the layer's
 * output (memory only; the time above reads ACTIVATIONS):
 *
 *   output   its own tensor of ACTIVATIONS floats
 *   inplace  none of its own: it writes over its input, whose storage the
 *            layer before it counts (ReLU after a conv or a norm, a
 *            residual add, a softmax over the scores)
 *   freed    nothing: its output is freed once the next layer has read it
 *
 * Without KEEP, an element-wise layer whose ACTIVATIONS equal its inputs
 * is inplace and every other layer output (docs/workloads.md).  The weights are read once per batch (fixed bytes);
 * backward reads them again and writes their gradient, and reads and writes
 * about twice the per-sample data of forward (the output gradient, the
 * saved input, the input gradient).  Backward = 2 x forward is the usual
 * rule: one product for the input gradient and one for the weight gradient
 * per forward product (Kaplan et al. 2020, Narayanan et al. 2021).
 *
 * The models have no parameters to train: loss_grad, loss_grad_groups and
 * evaluate are NULL, and init only zeroes the vector, so that code that
 * allocates and initialises parameters for any model still works.
 */
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (kern-timing-error-quark, kern_timing_error)

/* Bytes of one float32 value. */
#define TIMING_FLOAT_BYTES 4.0

/* Fields of a layer line: NAME PARAMS FWD_FLOPS ACTIVATIONS [KIND [KEEP]]. */
#define TIMING_FIELDS 6

/* What backward keeps of a layer's output (the KEEP column). */
typedef enum {
  TIMING_KEEP_DEFAULT,  /* no KEEP: by the layer's kind and width */
  TIMING_KEEP_OUTPUT,   /* its own tensor */
  TIMING_KEEP_INPLACE,  /* its input's storage, counted by the layer before */
  TIMING_KEEP_NONE,     /* nothing */
} TimingKeep;

static const char *const keep_names[] = {
  [TIMING_KEEP_OUTPUT] = "output",
  [TIMING_KEEP_INPLACE] = "inplace",
  [TIMING_KEEP_NONE] = "freed",
};

/* One parsed layer line. */
typedef struct {
  char name[sizeof ((KernLayer *) NULL)->name];
  guint64 params;
  double fwd_flops;     /* per sample */
  double activations;   /* floats per sample */
  KernLayerKind kind;
  TimingKeep keep;
} TimingRow;

static gsize
timing_n_params (const KernModel *m)
{
  if (m->n_layers == 0)
    return 0;
  const KernLayer *last = &m->layers[m->n_layers - 1];
  return last->param_offset + last->params;
}

/* The parameters of a timing model mean nothing; they are zeroed so that
 * the vector is defined.  `seed` is unused. */
static void
timing_init (const KernModel *m, float *params, guint64 seed G_GNUC_UNUSED)
{
  gsize n = timing_n_params (m);
  g_return_if_fail (n == 0 || params != NULL);
  if (n > 0)
    memset (params, 0, n * sizeof (float));
}

/* Sum over layers of fixed + per-sample x n; the fixed terms are 0 here but
 * are summed anyway, so the same loop serves any layer table. */
static double
timing_flops_forward (const KernModel *m, int n)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    total += m->layers[i].fwd_flops_fixed + m->layers[i].fwd_flops * n;
  return total;
}

static double
timing_flops_backward (const KernModel *m, int n)
{
  double total = 0.0;
  for (int i = 0; i < m->n_layers; i++)
    total += m->layers[i].bwd_flops_fixed + m->layers[i].bwd_flops * n;
  return total;
}

static void
timing_free (KernModel *m)
{
  g_free (m->layers);
  g_free (m);
}

static const KernModelOps timing_ops = {
  .name = "timing",
  .n_params = timing_n_params,
  .init = timing_init,
  .loss_grad = NULL,
  .loss_grad_groups = NULL,
  .evaluate = NULL,
  .flops_forward = timing_flops_forward,
  .flops_backward = timing_flops_backward,
  .free = timing_free,
};

/* Fills one layer by the rules in the file comment.  `inputs` and
 * `activations` (the ACTIVATIONS column) are floats per sample; `kept`
 * of them stay for backward. */
static void
timing_layer_set (KernLayer *l, const char *name, gsize offset, gsize params,
                  double fwd_flops, double inputs, double activations, double kept,
                  KernLayerKind kind)
{
  memset (l, 0, sizeof *l);
  g_strlcpy (l->name, name, sizeof l->name);
  l->kind = kind;
  l->param_offset = offset;
  l->params = params;
  l->fwd_flops_fixed = 0.0;
  l->fwd_flops = fwd_flops;
  l->bwd_flops_fixed = 0.0;
  l->bwd_flops = 2.0 * fwd_flops;
  l->fwd_bytes_fixed = TIMING_FLOAT_BYTES * (double) params;
  l->fwd_bytes = TIMING_FLOAT_BYTES * (inputs + activations);
  l->bwd_bytes_fixed = 2.0 * TIMING_FLOAT_BYTES * (double) params;
  l->bwd_bytes = 2.0 * l->fwd_bytes;
  l->activations = kept;
  l->outputs = activations;
}

static KernModel *
timing_model_new (KernLayer *layers, int n_layers)
{
  KernModel *m = g_new0 (KernModel, 1);
  m->ops = &timing_ops;
  m->d = 0;
  m->k = 0;
  m->n_layers = n_layers;
  m->layers = layers;
  return m;
}

/* --- layer kinds ------------------------------------------------------------ */

static const char *const kind_names[KERN_LAYER_N_KINDS] = {
  [KERN_LAYER_GEMM] = "gemm",
  [KERN_LAYER_CONV] = "conv",
  [KERN_LAYER_CONV3X3] = "conv3x3",
  [KERN_LAYER_ATTENTION] = "attention",
  [KERN_LAYER_ELEMENTWISE] = "elementwise",
  [KERN_LAYER_NORM] = "norm",
  [KERN_LAYER_EMBEDDING] = "embedding",
};

const char *
kern_layer_kind_name (KernLayerKind kind)
{
  g_return_val_if_fail (kind < KERN_LAYER_N_KINDS, "gemm");
  return kind_names[kind];
}

gboolean
kern_layer_kind_parse (const char *name, KernLayerKind *out)
{
  for (int k = 0; k < KERN_LAYER_N_KINDS; k++)
    if (name && strcmp (name, kind_names[k]) == 0)
      {
        *out = (KernLayerKind) k;
        return TRUE;
      }
  return FALSE;
}

/* --- parsing ---------------------------------------------------------------- */

/* Parses a non-negative finite number filling all of `s`; `what` names the
 * column in the error. */
static gboolean
timing_parse_number (const char *table, int line, const char *what,
                     const char *s, double *out, GError **error)
{
  char *end = NULL;
  double v = g_ascii_strtod (s, &end);
  if (end == s || *end != '\0' || !isfinite (v))
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: %s: expected a number, found \"%s\"",
                   table, line, what, s);
      return FALSE;
    }
  if (v < 0.0)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: %s: expected a non-negative number, found %s",
                   table, line, what, s);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

static gboolean
timing_parse_count (const char *table, int line, const char *what,
                    const char *s, guint64 *out, GError **error)
{
  if (s[0] == '-')
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: %s: expected a non-negative integer, found %s",
                   table, line, what, s);
      return FALSE;
    }
  if (!g_ascii_string_to_unsigned (s, 10, 0, G_MAXSIZE, out, NULL))
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: %s: expected an integer, found \"%s\"",
                   table, line, what, s);
      return FALSE;
    }
  return TRUE;
}

/* Refuses a control character other than a tab in `s` (a layer line, or
 * the value of "# input"): names and fields end up in messages and tables on
 * a terminal, so an escape or a carriage return inside a line is an error
 * that names the character instead of quoting the field. */
static gboolean
timing_check_printable (const char *table, int line, const char *s, GError **error)
{
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
      {
        g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                     "%s line %d: control character 0x%02x; a layer table is printable "
                     "text, its fields separated by spaces or tabs", table, line, *p);
        return FALSE;
      }
  return TRUE;
}

/* Stores in `f` the first `max` non-empty words of `words` (a line split at
 * spaces and tabs, where runs of them leave empty words) and returns how
 * many non-empty words there are, which may be more than `max`. */
static int
timing_words (char **words, const char **f, int max)
{
  int n = 0;
  for (int i = 0; words[i] != NULL; i++)
    if (words[i][0] != '\0')
      {
        if (n < max)
          f[n] = words[i];
        n++;
      }
  return n;
}

/* If `text` (a line after its '#') is the directive "input N", stores N in
 * *input and returns TRUE; other comments return FALSE.  Sets `error` (and
 * returns TRUE) when the directive is malformed. */
static gboolean
timing_parse_directive (const char *table, int line, const char *text,
                        double *input, GError **error)
{
  g_auto (GStrv) words = g_strsplit_set (text, " \t", -1);
  const char *w[3] = { NULL, NULL, NULL };
  int n = timing_words (words, w, 3);
  if (n == 0 || strcmp (w[0], "input") != 0)
    return FALSE;
  if (n != 2)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: expected \"# input N\" (floats per sample the "
                   "first layer reads), found %d values after \"input\"",
                   table, line, n - 1);
      return TRUE;
    }
  if (timing_check_printable (table, line, w[1], error))
    timing_parse_number (table, line, "input", w[1], input, error);
  return TRUE;
}

/* A layer table while it is read: what kern_timing_parse() has gathered from
 * the lines so far. */
typedef struct {
  const char *table;    /* the table's name, for messages */
  GArray *rows;         /* TimingRow, in the order of their lines */
  GHashTable *seen;     /* layer name -> line it is on */
  double input;         /* floats per sample the first layer reads */
  int input_line;       /* line of "# input N", 0 = none yet */
  gsize total;          /* parameters so far */
  int repeat_line;      /* line of an open "# repeat N", 0 = none */
  guint64 repeat;       /* its N */
  guint repeat_first;   /* the first row of its block */
} TimingTable;

/* If `text` (a line after its '#') is "repeat N" or "end", opens or closes
 * a repeated block of t and returns TRUE (with `error` set when the
 * directive is malformed, misplaced or makes the table too long); other
 * comments return FALSE.  Closing a block appends its rows N - 1 more
 * times, each copy's names suffixed ".k" (k = 1 .. N - 1; the first
 * copy's rows are renamed ".0"), so names stay unique. */
static gboolean timing_parse_repeat (TimingTable *t, int lineno, const char *text,
                                     GError **error);

/* Reads a comment line, `text` being what follows its '#': a "# input N"
 * directive sets t->input, once per table; any other comment is skipped. */
static gboolean
timing_parse_comment (TimingTable *t, int lineno, const char *text,
                      GError **error)
{
  GError *err = NULL;
  double v = 0.0;
  if (timing_parse_repeat (t, lineno, text, &err))
    {
      if (err == NULL)
        return TRUE;
      g_propagate_error (error, err);
      return FALSE;
    }
  if (!timing_parse_directive (t->table, lineno, text, &v, &err))
    return TRUE;
  if (err != NULL)
    {
      g_propagate_error (error, err);
      return FALSE;
    }
  if (t->input_line != 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: a second \"# input\" line (the first "
                   "is line %d)", t->table, lineno, t->input_line);
      return FALSE;
    }
  t->input = v;
  t->input_line = lineno;
  return TRUE;
}

/* Adds the layer of the fields `f` (NAME PARAMS FWD_FLOPS ACTIVATIONS
 * [KIND [KEEP]]) on line `lineno` to `t`, after checking the name (length,
 * not seen before), the three numbers, KIND and KEEP, and that the
 * parameter total still fits a gsize. */
static gboolean
timing_add_row (TimingTable *t, int lineno, const char *const *f,
                GError **error)
{
  TimingRow row;
  if (strlen (f[0]) >= sizeof row.name)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: NAME \"%s\" is longer than %d bytes",
                   t->table, lineno, f[0], (int) sizeof row.name - 1);
      return FALSE;
    }
  gpointer first = g_hash_table_lookup (t->seen, f[0]);
  if (first != NULL)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: duplicate layer name \"%s\" (first on "
                   "line %d)", t->table, lineno, f[0], GPOINTER_TO_INT (first));
      return FALSE;
    }

  g_strlcpy (row.name, f[0], sizeof row.name);
  if (!timing_parse_count (t->table, lineno, "PARAMS", f[1], &row.params, error)
      || !timing_parse_number (t->table, lineno, "FWD_FLOPS", f[2],
                               &row.fwd_flops, error)
      || !timing_parse_number (t->table, lineno, "ACTIVATIONS", f[3],
                               &row.activations, error))
    return FALSE;
  /* no KIND: a matrix product if it has FLOPs, else an element-wise pass */
  row.kind = row.fwd_flops > 0 ? KERN_LAYER_GEMM : KERN_LAYER_ELEMENTWISE;
  if (f[4] && !kern_layer_kind_parse (f[4], &row.kind))
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: KIND: expected gemm, conv, attention, elementwise, norm "
                   "or embedding, found \"%s\"", t->table, lineno, f[4]);
      return FALSE;
    }
  row.keep = TIMING_KEEP_DEFAULT;
  for (int k = TIMING_KEEP_OUTPUT; f[5] && k <= TIMING_KEEP_NONE; k++)
    if (strcmp (f[5], keep_names[k]) == 0)
      row.keep = (TimingKeep) k;
  if (f[5] && row.keep == TIMING_KEEP_DEFAULT)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: KEEP: expected output, inplace or freed (what backward keeps "
                   "of the layer's output), found \"%s\"", t->table, lineno, f[5]);
      return FALSE;
    }
  if (row.params > G_MAXSIZE - t->total)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: the parameter total overflows", t->table, lineno);
      return FALSE;
    }
  t->total += (gsize) row.params;
  g_array_append_val (t->rows, row);
  g_hash_table_insert (t->seen, g_strdup (f[0]), GINT_TO_POINTER (lineno));
  return TRUE;
}

/* Renames row `r` NAME.k, refusing a name that grows past the field. */
static gboolean
timing_suffix_name (const TimingTable *t, int lineno, TimingRow *r, guint64 k,
                    GError **error)
{
  g_autofree char *name = g_strdup_printf ("%s.%" G_GUINT64_FORMAT, r->name, k);
  if (strlen (name) >= sizeof r->name)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: repeated layer name \"%s\" is longer than %d bytes; "
                   "shorten \"%s\"", t->table, lineno, name, (int) sizeof r->name - 1,
                   r->name);
      return FALSE;
    }
  g_strlcpy (r->name, name, sizeof r->name);
  return TRUE;
}

/* Closes the open block at line `lineno`: see timing_parse_repeat. */
static gboolean
timing_close_repeat (TimingTable *t, int lineno, GError **error)
{
  guint first = t->repeat_first, n = t->rows->len - first;
  guint64 N = t->repeat;
  t->repeat_line = 0;
  if (n == 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: \"# end\" closes a repeated block with no layers",
                   t->table, lineno);
      return FALSE;
    }
  if ((guint64) first + (guint64) n * N > KERN_TIMING_MAX_LAYERS)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: the repeated block makes %" G_GUINT64_FORMAT
                   " layers, more than the %d a table may have; lower its repeat count",
                   t->table, lineno, (guint64) first + (guint64) n * N,
                   KERN_TIMING_MAX_LAYERS);
      return FALSE;
    }
  /* the block's parameters N - 1 more times: each copy's total is at most
   * t->total, so N copies overflow only if N x block does */
  gsize block = 0;
  for (guint i = first; i < first + n; i++)
    block += (gsize) g_array_index (t->rows, TimingRow, i).params;
  if (block > 0 && (N - 1) > (G_MAXSIZE - t->total) / block)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: the parameter total overflows", t->table, lineno);
      return FALSE;
    }
  for (guint i = first; i < first + n; i++)
    g_hash_table_remove (t->seen, g_array_index (t->rows, TimingRow, i).name);
  for (guint64 k = 1; k < N; k++)
    for (guint i = 0; i < n; i++)
      {
        TimingRow r = g_array_index (t->rows, TimingRow, first + i);
        if (!timing_suffix_name (t, lineno, &r, k, error))
          return FALSE;
        g_array_append_val (t->rows, r);
      }
  for (guint i = 0; i < n; i++)
    if (!timing_suffix_name (t, lineno, &g_array_index (t->rows, TimingRow, first + i), 0,
                             error))
      return FALSE;
  t->total += (gsize) (N - 1) * block;
  /* a suffixed name may meet a layer named so outside the block */
  for (guint i = first; i < t->rows->len; i++)
    {
      const char *name = g_array_index (t->rows, TimingRow, i).name;
      gpointer at = g_hash_table_lookup (t->seen, name);
      if (at != NULL)
        {
          g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                       "%s line %d: repeated layer name \"%s\" is also the layer on "
                       "line %d; rename one", t->table, lineno, name, GPOINTER_TO_INT (at));
          return FALSE;
        }
      g_hash_table_insert (t->seen, g_strdup (name), GINT_TO_POINTER (lineno));
    }
  return TRUE;
}

static gboolean
timing_parse_repeat (TimingTable *t, int lineno, const char *text, GError **error)
{
  g_auto (GStrv) words = g_strsplit_set (text, " \t", -1);
  const char *w[3] = { NULL, NULL, NULL };
  int n = timing_words (words, w, 3);
  if (n == 0 || (strcmp (w[0], "repeat") != 0 && strcmp (w[0], "end") != 0))
    return FALSE;
  if (strcmp (w[0], "end") == 0)
    {
      if (n != 1 || t->repeat_line == 0)
        g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                     n != 1 ? "%s line %d: expected \"# end\" alone on its line"
                            : "%s line %d: \"# end\" without a \"# repeat N\" before it",
                     t->table, lineno);
      else
        timing_close_repeat (t, lineno, error);
      return TRUE;
    }
  guint64 N = 0;
  if (t->repeat_line != 0)
    g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                 "%s line %d: \"# repeat\" inside the block opened on line %d; blocks "
                 "do not nest: close it with \"# end\" first", t->table, lineno,
                 t->repeat_line);
  else if (n != 2)
    g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                 "%s line %d: expected \"# repeat N\" (how many times the layers up to "
                 "\"# end\" repeat), found %d values after \"repeat\"", t->table, lineno,
                 n - 1);
  else if (timing_check_printable (t->table, lineno, w[1], error)
           && timing_parse_count (t->table, lineno, "repeat", w[1], &N, error))
    {
      if (N < 1 || N > KERN_TIMING_MAX_LAYERS)
        g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                     "%s line %d: repeat count %" G_GUINT64_FORMAT " is outside 1 .. %d",
                     t->table, lineno, N, KERN_TIMING_MAX_LAYERS);
      else
        {
          t->repeat_line = lineno;
          t->repeat = N;
          t->repeat_first = t->rows->len;
        }
    }
  return TRUE;
}

/* Reads a line that is not a comment line: drops a trailing comment, skips
 * the line if nothing is left, else adds its layer to `t`.  `line` is
 * stripped and is changed in place. */
static gboolean
timing_parse_layer (TimingTable *t, int lineno, char *line, GError **error)
{
  char *hash = strchr (line, '#');      /* trailing comment */
  if (hash != NULL)
    *hash = '\0';
  if (!timing_check_printable (t->table, lineno, line, error))
    return FALSE;
  g_auto (GStrv) words = g_strsplit_set (line, " \t", -1);
  const char *f[TIMING_FIELDS] = { NULL };
  int n = timing_words (words, f, TIMING_FIELDS);
  if (n == 0)
    return TRUE;
  if (n < TIMING_FIELDS - 2 || n > TIMING_FIELDS)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: expected 4 to 6 fields NAME PARAMS FWD_FLOPS "
                   "ACTIVATIONS [KIND [KEEP]], found %d", t->table, lineno, n);
      return FALSE;
    }
  return timing_add_row (t, lineno, f, error);
}

/* The model of a table whose every line has been read: one layer per row,
 * each reading what the one before it wrote and the first the input.  Fails
 * when the table had no layer or no "# input N" line. */
static KernModel *
timing_table_model (const TimingTable *t, GError **error)
{
  if (t->rows->len == 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_EMPTY,
                   "%s: no layers; expected lines NAME PARAMS FWD_FLOPS "
                   "ACTIVATIONS", t->table);
      return NULL;
    }
  if (t->input_line == 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_EMPTY,
                   "%s: no \"# input N\" line giving the floats per sample "
                   "the first layer reads", t->table);
      return NULL;
    }

  int n_layers = (int) t->rows->len;
  KernLayer *layers = g_new0 (KernLayer, n_layers);
  gsize offset = 0;
  double inputs = t->input;
  for (int i = 0; i < n_layers; i++)
    {
      const TimingRow *r = &g_array_index (t->rows, TimingRow, i);
      TimingKeep keep = r->keep;
      if (keep == TIMING_KEEP_DEFAULT)
        keep = r->kind == KERN_LAYER_ELEMENTWISE && r->activations == inputs
               ? TIMING_KEEP_INPLACE : TIMING_KEEP_OUTPUT;
      timing_layer_set (&layers[i], r->name, offset, (gsize) r->params,
                        r->fwd_flops, inputs, r->activations,
                        keep == TIMING_KEEP_OUTPUT ? r->activations : 0.0, r->kind);
      offset += (gsize) r->params;
      inputs = r->activations;
    }
  return timing_model_new (layers, n_layers);
}

/* Parses a layer table (format in kernels.h and the file comment): reads it
 * line by line, comment lines with timing_parse_comment() and the others
 * with timing_parse_layer(), stopping at the first error, then builds the
 * model with timing_table_model(). */
KernModel *
kern_timing_parse (const char *name, const char *text, GError **error)
{
  g_return_val_if_fail (text != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GArray) rows = g_array_new (FALSE, TRUE, sizeof (TimingRow));
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal,
                                                       g_free, NULL);
  TimingTable t = {
    .table = name != NULL ? name : "timing table",
    .rows = rows,
    .seen = seen,
    .input = 0.0,
    .input_line = 0,
    .total = 0,
  };

  for (int i = 0; lines[i] != NULL; i++)
    {
      int lineno = i + 1;
      char *line = g_strstrip (lines[i]);   /* also drops a trailing '\r' */
      gboolean ok = line[0] == '#'
                    ? timing_parse_comment (&t, lineno, line + 1, error)
                    : timing_parse_layer (&t, lineno, line, error);
      if (!ok)
        return NULL;
      if (t.rows->len > KERN_TIMING_MAX_LAYERS)
        {
          g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                       "%s line %d: more than the %d layers a table may have",
                       t.table, lineno, KERN_TIMING_MAX_LAYERS);
          return NULL;
        }
    }
  if (t.repeat_line != 0)
    {
      g_set_error (error, KERN_TIMING_ERROR, KERN_TIMING_ERROR_PARSE,
                   "%s line %d: \"# repeat\" has no \"# end\" closing its block",
                   t.table, t.repeat_line);
      return NULL;
    }
  return timing_table_model (&t, error);
}

/* One layer "all" of `params` parameters: forward flops_per_sample / 3,
 * backward 2 flops_per_sample / 3, bytes by the table rule with no inputs
 * and no activations (weights only). */
KernModel *
kern_timing_new (gsize params, double flops_per_sample)
{
  g_return_val_if_fail (isfinite (flops_per_sample) && flops_per_sample >= 0.0,
                        NULL);

  KernLayer *l = g_new0 (KernLayer, 1);
  timing_layer_set (l, "all", 0, params, flops_per_sample / 3.0, 0.0, 0.0, 0.0,
                    KERN_LAYER_GEMM);
  return timing_model_new (l, 1);
}

static KernModel *
timing_kind_new (const KernModelArgs *a, struct KernBackend *be G_GNUC_UNUSED, GError **error)
{
  if (!a->workload)
    return kern_timing_new (a->params, a->flops);
  g_autofree char *text = a->read_workload (a->workload, error);
  if (!text)
    return NULL;
  return kern_timing_parse (a->workload, text, error);
}

const KernModelKind kern_model_timing = {
  .name = "timing",
  .description = "a layer table, no math (docs/workloads.md)",
  .math = FALSE,
  .reads_workload = TRUE,
  .new = timing_kind_new,
};
