/*
 * tensor.c — tensor (and sequence) parallelism of a training step's timing
 * (tensor.h; docs/policies.md, "Tensor parallelism").
 *
 * The cut follows Megatron-LM (Shoeybi et al. 2019, section 3): the dense
 * layers and convolutions that know their weight shapes (KernLayer.weight)
 * pair up in order, the first of a pair split by columns (a convolution's
 * output channels), the second by rows (its input channels); a transformer's
 * query/key/value projection pairs with its output projection, the MLP's
 * first layer with its second.  An odd one out runs whole.  The layers
 * between a pair (the attention's scores, softmax and context, the GELU)
 * work on the split activations, a 1/T share of their FLOPs on each rank;
 * the others (norms, residual adds, embeddings) run whole on every rank, or
 * on a 1/T share of the sequence with sequence parallelism (Korthikanti et
 * al. 2022).
 *
 * A step is a chain: the forward of each layer, an all-reduce of every row
 * layer's output (n x its outputs floats); then the backward from the last
 * layer, an all-reduce of every column layer's input gradient (n x its
 * inputs floats) unless nothing before it needs one.  With sequence
 * parallelism, each forward all-reduce becomes a reduce-scatter and an
 * all-gather before the next column layer, and in backward an all-gather
 * before each row layer and a reduce-scatter after each column layer: the
 * same bytes on a ring.  Every tensor group runs the chain at once, each
 * collective on its own group's hosts; the groups step together, at the
 * pace of the slowest rank (a straggler holds back every group, a
 * simplification: only the data-parallel reduction joins them for real).
 * A pipeline stage runs the part of that chain its operation covers (a
 * layer range, one direction) on its own group, whenever its schedule
 * says (pol_tensor_op_new).
 *
 * With expert parallelism (experts.c) the step's chain also holds the
 * all-to-alls of every run of expert layers, on the expert groups: one
 * before the first expert layer's forward and one after the last's (the
 * dispatch and the combine), one before the last's backward and one after
 * the first's; the expert layers' compute is stretched by the busiest
 * rank's load, which the others wait for at the next all-to-all.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "policies/common.h"
#include "policies/tensor.h"
#include "kernels/tensor.h"

/* --- the cut --------------------------------------------------------------- */

/* Floats per sample at layer l's input: the output of the layer before it
 * (a sequence of tokens for a transformer), or its weight's rows for the
 * first layer. */
static double
input_floats (const KernLayer *layers, int l)
{
  return l > 0 ? layers[l - 1].outputs : layers[l].weight[0].rows;
}

/* A layer the cut pairs up: a dense layer or a convolution with one known
 * weight (a convolution's rows are its kernel taps times its input
 * channels, its columns its output channels, so that a column cut shares
 * out channels and a row cut input channels). */
static gboolean
cut_weight (const KernLayer *ly)
{
  return (ly->kind == KERN_LAYER_GEMM || ly->kind == KERN_LAYER_CONV
          || ly->kind == KERN_LAYER_CONV3X3) && ly->n_weights == 1;
}

gboolean
pol_tensor_check_math (const PolModelInfo *mi, int T, GError **error)
{
  if (T <= 1 || !mi->math || kern_tensor_supports (mi->model))
    return TRUE;
  return pol_key_error (error, "policy", "tensor",
                        "%d: model %s does not support tensor parallelism of its real math "
                        "yet (mlp, softmax, linear, gpt and cnn do); use tensor = 1, or [kernels] "
                        "backend = none to time the run without math", T,
                        mi->model->ops->name);
}

gboolean
pol_tensor_split (const KernLayer *layers, int n_layers, int T, PolTpSplit *split,
                  GError **error)
{
  for (int l = 0; l < n_layers; l++)
    split[l] = POL_TP_WHOLE;
  if (T <= 1)
    return TRUE;
  /* the vocabulary's layers: an embedding's rows, an LM head's outputs
   * (a column cut of its own, no row partner), their loss */
  for (int l = 0; l < n_layers; l++)
    if (layers[l].vocabulary)
      split[l] = layers[l].kind == KERN_LAYER_GEMM && layers[l].n_weights == 1
                 ? POL_TP_COLUMN : POL_TP_VOCABULARY;
  int column = -1;
  for (int l = 0; l < n_layers; l++)
    {
      const KernLayer *ly = &layers[l];
      if (!cut_weight (ly) || ly->vocabulary)
        continue;
      const KernWeight *w = &ly->weight[0];
      if (column < 0)
        {
          column = l;
          continue;
        }
      /* a pair: column's outputs and this layer's inputs cut T ways */
      const KernWeight *c = &layers[column].weight[0];
      if (c->cols % T != 0 || w->rows % T != 0)
        return pol_key_error (error, "policy", "tensor",
                              "%d does not divide the %d outputs of layer %s (nor the inputs of "
                              "%s) that it would cut; choose a tensor size dividing %d",
                              T, c->cols, layers[column].name, ly->name, c->cols);
      split[column] = POL_TP_COLUMN;
      for (int i = column + 1; i < l; i++)
        {
          if (layers[i].heads > 0 && layers[i].heads % T != 0)
            return pol_key_error (error, "policy", "tensor",
                                  "%d does not divide the %d attention heads of layer %s, "
                                  "which it would share out; choose a tensor size dividing %d",
                                  T, layers[i].heads, layers[i].name, layers[i].heads);
          /* each rank keeps whole key/value heads (grouped-query attention) */
          if (layers[i].kv_heads > 0 && layers[i].kv_heads % T != 0)
            return pol_key_error (error, "policy", "tensor",
                                  "%d does not divide the %d key/value heads of layer %s "
                                  "([model] kv_heads), which it would share out; choose a "
                                  "tensor size dividing %d", T, layers[i].kv_heads,
                                  layers[i].name, layers[i].kv_heads);
          split[i] = POL_TP_INSIDE;
        }
      split[l] = POL_TP_ROW;
      column = -1;
    }
  for (int l = 0; l < n_layers; l++)
    if (split[l] == POL_TP_COLUMN)
      return TRUE;
  return pol_key_error (error, "policy", "tensor",
                        "%d: the model has no pair of dense layers with known weight shapes to "
                        "cut (a layer table without shapes, or one dense layer); use tensor = 1",
                        T);
}

gsize
pol_tensor_rank_params (const KernLayer *layers, int n_layers, gsize n_params,
                        const PolTpSplit *split, int T)
{
  gsize total = 0;
  for (int l = 0; l < n_layers; l++)
    {
      gsize hi = l + 1 < n_layers ? layers[l + 1].param_offset : n_params;
      gsize here = hi - layers[l].param_offset;
      if (split[l] == POL_TP_WHOLE || split[l] == POL_TP_INSIDE || T <= 1 || here == 0)
        total += here;   /* a tied LM head holds none of its own */
      else if (split[l] == POL_TP_VOCABULARY)
        {
          /* the token table cut by rows, the rest (positions) whole */
          gsize table = layers[l].n_weights > 0 ? (gsize) layers[l].weight[0].rows
                                                  * (gsize) layers[l].weight[0].cols : 0;
          total += here - table + table / (gsize) T;
        }
      else
        {
          /* an expert layer holds its experts' weights, each cut alike */
          const KernWeight *w = &layers[l].weight[0];
          gsize copies = (gsize) MAX (layers[l].experts, 1);
          gsize weights = (gsize) w->rows * (gsize) w->cols / (gsize) T;
          gsize bias = w->has_bias ? (split[l] == POL_TP_COLUMN ? (gsize) w->cols / (gsize) T
                                                                 : (gsize) w->cols)
                                   : 0;
          total += copies * (weights + bias);
        }
    }
  return total;
}

double
pol_tensor_rank_activations (const KernLayer *layers, int n_layers, const PolTpSplit *split,
                             int T, gboolean sequence)
{
  double total = 0;
  for (int l = 0; l < n_layers; l++)
    total += layers[l].activations / (split[l] != POL_TP_WHOLE || sequence ? T : 1);
  return total;
}

/* The collectives layer l adds to a pass, before or after its compute:
 * written to out (at most 4), their number returned.  The one statement
 * of the rules (tensor.h) that both the list and the chain follow. */
static int
layer_collectives (const KernLayer *layers, const PolTpSplit *split, gboolean sequence,
                   const gboolean *recomputed, int l, gboolean forward, gboolean before,
                   PolTpCollective *out)
{
  const KernLayer *ly = &layers[l];
  CommKind reduce = sequence ? COMM_REDUCE_SCATTER : COMM_ALLREDUCE;
  int n = 0;
#define ADD(k, f) (out[n++] = (PolTpCollective) { .kind = (k), .floats = (f), \
                                                  .backward = !forward })
  if (forward && before)
    {
      if (split[l] == POL_TP_COLUMN && sequence)
        ADD (COMM_ALLGATHER, input_floats (layers, l));
    }
  else if (forward)
    {
      if (split[l] == POL_TP_ROW || (split[l] == POL_TP_VOCABULARY
                                     && ly->kind == KERN_LAYER_EMBEDDING))
        ADD (reduce, ly->outputs);
      else if (split[l] == POL_TP_VOCABULARY && l > 0 && layers[l - 1].n_weights > 0)
        {
          /* a loss over outputs cut by vocabulary: one value per token */
          double tokens = layers[l - 1].outputs / layers[l - 1].weight[0].cols;
          for (int i = 0; i < 3; i++)
            ADD (COMM_ALLREDUCE, tokens);
        }
    }
  else if (before)
    {
      /* a recomputed layer of a block runs its forward, and its
       * collectives, again (the vocabulary's layers are not checkpointed) */
      if (recomputed && recomputed[l] && !ly->vocabulary)
        {
          n += layer_collectives (layers, split, sequence, NULL, l, TRUE, TRUE, out + n);
          n += layer_collectives (layers, split, sequence, NULL, l, TRUE, FALSE, out + n);
          for (int i = 0; i < n; i++)
            out[i].backward = TRUE;
        }
      if (split[l] == POL_TP_ROW && sequence)
        ADD (COMM_ALLGATHER, ly->outputs);
    }
  else if (split[l] == POL_TP_COLUMN && (l > 0 || sequence))
    ADD (reduce, input_floats (layers, l));
#undef ADD
  return n;
}

PolTpCollective *
pol_tensor_collectives (const KernLayer *layers, int n_layers, const PolTpSplit *split,
                        gboolean sequence, const gboolean *recomputed, int *n_out)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (PolTpCollective));
  PolTpCollective c[8];
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n_layers; i++)
      {
        int l = pass == 0 ? i : n_layers - 1 - i;
        for (int when = 0; when < 2; when++)
          {
            int n = layer_collectives (layers, split, sequence, recomputed, l, pass == 0,
                                       when == 0, c);
            g_array_append_vals (out, c, (guint) n);
          }
      }
  *n_out = (int) out->len;
  return (PolTpCollective *) g_array_free (out, FALSE);
}

/* --- the chain ---------------------------------------------------------------- */

typedef enum { OP_COMPUTE, OP_COLLECTIVE, OP_READY } OpKind;

typedef struct {
  OpKind kind;
  double seconds;          /* OP_COMPUTE: device seconds on one rank */
  CommKind coll;           /* OP_COLLECTIVE */
  gsize floats;            /* OP_COLLECTIVE: CommArgs n */
  const CommAlgorithm *alg;
  gboolean expert;         /* OP_COLLECTIVE: on the expert groups */
  int layer;               /* OP_READY */
} Op;

struct PolTensorStep {
  const PolEnv *env;
  GArray *ops;             /* Op */
  int groups;              /* tensor groups */
  int T;
  const int **hosts;       /* (groups) each group's hosts (the mesh's) */
  double elem_bytes;
  int tag;                 /* of the collectives' transfers */
  PolExperts ex;           /* expert parallelism; ex.ep = 1 without */
  int egroups;             /* expert groups */
  const int **ehosts;      /* (egroups) each expert group's hosts */
  int etag;                /* of the all-to-alls' transfers */
  double compute, whole;   /* s, see pol_tensor_step_compute */
  /* a run */
  double k;
  int pos;                 /* the op running */
  int pending;             /* collectives of the op still running */
  PolTensorReady ready;
  PolTensorDone done;
  gpointer ctx;
  double stretch_start;    /* s, start of the compute since the last
                              collective; < 0 when none */
  double coll_start;       /* s, when the running collective op began */
  double alltoall;         /* s, the all-to-all ops have taken over all runs */
  GArray *starts, *ends;   /* double: the compute stretches of the run */
};

static void
add_compute (PolTensorStep *ts, double seconds)
{
  if (seconds <= 0)
    return;
  Op *last = ts->ops->len ? &g_array_index (ts->ops, Op, ts->ops->len - 1) : NULL;
  if (last && last->kind == OP_COMPUTE)
    {
      last->seconds += seconds;
      return;
    }
  Op op = { .kind = OP_COMPUTE, .seconds = seconds };
  g_array_append_val (ts->ops, op);
}

static void
add_collective (PolTensorStep *ts, CommKind kind, double floats, const CommAlgorithm *alg)
{
  Op op = { .kind = OP_COLLECTIVE, .coll = kind, .floats = (gsize) MAX (1.0, floats) };
  CommArgs a = pol_collective_args (ts->env, ts->T, ts->hosts[0], op.floats, ts->elem_bytes,
                                    ts->tag);
  op.alg = comm_does (alg, kind) ? comm_resolve (alg, &a, kind) : NULL;
  if (!op.alg) /* checked before: the ring does every kind */
    op.alg = &comm_ring;
  g_array_append_val (ts->ops, op);
}

/* An all-to-all of `floats` values on the expert groups. */
static void
add_alltoall (PolTensorStep *ts, double floats, const CommAlgorithm *alg)
{
  Op op = { .kind = OP_COLLECTIVE, .coll = COMM_ALLTOALL, .expert = TRUE,
            .floats = (gsize) MAX (1.0, floats) };
  op.alg = pol_experts_alltoall_algorithm (alg);
  g_array_append_val (ts->ops, op);
}

/* Appends the chain of layers [first, last] on n samples: their forward
 * from `first` up, or their backward from `last` down (with a ready mark
 * after each layer's when `ready`), each layer's compute at its share and
 * the collectives pol_tensor_collectives lists for those layers, in the
 * same order. */
static void
add_pass (PolTensorStep *ts, const PolTpSplit *split, gboolean sequence, int first, int last,
          gboolean forward, int n, const double *seconds, const CommAlgorithm *alg,
          gboolean ready)
{
  const KernLayer *layers = ts->env->layers;
  int T = ts->T;
  PolTpCollective c[8];
  for (int i = 0; i <= last - first; i++)
    {
      int l = forward ? first + i : last - i;
      double share = split[l] != POL_TP_WHOLE || sequence ? 1.0 / T : 1.0;
      /* the dispatch (forward) or the combine's gradient (backward) */
      gboolean expert = ts->ex.ep > 1 && layers[l].experts > 1;
      if (expert && (forward ? pol_experts_first (layers, l)
                             : pol_experts_last (layers, ts->env->n_layers, l)))
        add_alltoall (ts, pol_experts_alltoall_floats (layers, l, &ts->ex) * n, alg);
      int k = layer_collectives (layers, split, sequence, ts->env->recomputed, l, forward,
                                 TRUE, c);
      for (int j = 0; j < k; j++)
        add_collective (ts, c[j].kind, c[j].floats * n, alg);
      if (expert) /* the busiest rank's tokens */
        share *= ts->ex.load;
      add_compute (ts, seconds[l] * share);
      if (!forward && ready)
        {
          Op mark = { .kind = OP_READY, .layer = l };
          g_array_append_val (ts->ops, mark);
        }
      k = layer_collectives (layers, split, sequence, ts->env->recomputed, l, forward, FALSE,
                             c);
      for (int j = 0; j < k; j++)
        add_collective (ts, c[j].kind, c[j].floats * n, alg);
      /* the combine (forward) or the dispatch's gradient (backward) */
      if (expert && (forward ? pol_experts_last (layers, ts->env->n_layers, l)
                             : pol_experts_first (layers, l)))
        add_alltoall (ts, pol_experts_alltoall_floats (layers, l, &ts->ex) * n, alg);
      ts->compute += seconds[l] * share;
      ts->whole += seconds[l];
    }
}

/* An empty chain of `groups` groups of T ranks (their hosts filled in by
 * the caller). */
static PolTensorStep *
chain_new (const PolEnv *env, int T, int groups, double elem_bytes, int tag)
{
  PolTensorStep *ts = g_new0 (PolTensorStep, 1);
  ts->env = env;
  ts->T = T;
  ts->elem_bytes = elem_bytes;
  ts->tag = tag;
  ts->ex.ep = 1;
  ts->ex.load = 1;
  ts->hosts = g_new (const int *, MAX (groups, 1));
  ts->ops = g_array_new (FALSE, FALSE, sizeof (Op));
  ts->starts = g_array_new (FALSE, FALSE, sizeof (double));
  ts->ends = g_array_new (FALSE, FALSE, sizeof (double));
  return ts;
}

PolTensorStep *
pol_tensor_step_new (const PolEnv *env, const TrainMesh *mesh, const PolTpSplit *split,
                     gboolean sequence, int n, const double *fwd, const double *bwd,
                     const CommAlgorithm *alg, double elem_bytes, const PolExperts *ex,
                     int expert_tag)
{
  int R = train_mesh_ranks (mesh);
  PolTensorStep *ts = chain_new (env, train_mesh_size (mesh, TRAIN_AXIS_TENSOR), R,
                                 elem_bytes, 0);
  for (int r = 0; r < R; r++)
    if (train_mesh_coord (mesh, r, TRAIN_AXIS_TENSOR) == 0)
      ts->hosts[ts->groups++] = train_mesh_group (mesh, TRAIN_AXIS_TENSOR, r).hosts;
  if (ex && ex->ep > 1 && train_mesh_size (mesh, TRAIN_AXIS_EXPERT) == ex->ep)
    {
      ts->ex = *ex;
      ts->etag = expert_tag;
      ts->ehosts = g_new (const int *, R);
      for (int r = 0; r < R; r++)
        if (train_mesh_coord (mesh, r, TRAIN_AXIS_EXPERT) == 0)
          ts->ehosts[ts->egroups++] = train_mesh_group (mesh, TRAIN_AXIS_EXPERT, r).hosts;
    }
  int L = env->n_layers;
  if (L < 1)
    return ts;
  add_pass (ts, split, sequence, 0, L - 1, TRUE, n, fwd, alg, FALSE);
  add_pass (ts, split, sequence, 0, L - 1, FALSE, n, bwd, alg, TRUE);
  return ts;
}

PolTensorStep *
pol_tensor_op_new (const PolEnv *env, int T, const int *hosts, const PolTpSplit *split,
                   gboolean sequence, int first, int last, gboolean forward, int n,
                   const double *seconds, const CommAlgorithm *alg, double elem_bytes, int tag)
{
  g_return_val_if_fail (T >= 1 && hosts != NULL && 0 <= first && first <= last
                        && last < env->n_layers, NULL);
  PolTensorStep *ts = chain_new (env, T, 1, elem_bytes, tag);
  ts->hosts[ts->groups++] = hosts;
  add_pass (ts, split, sequence, first, last, forward, n, seconds, alg, FALSE);
  return ts;
}

int
pol_tensor_step_collectives (const PolTensorStep *ts)
{
  int count = 0;
  for (guint i = 0; i < ts->ops->len; i++)
    count += g_array_index (ts->ops, Op, i).kind == OP_COLLECTIVE;
  return count;
}

void
pol_tensor_step_free (PolTensorStep *ts)
{
  if (!ts)
    return;
  g_array_unref (ts->ops);
  g_array_unref (ts->starts);
  g_array_unref (ts->ends);
  g_free (ts->hosts);
  g_free (ts->ehosts);
  g_free (ts);
}

double
pol_tensor_step_compute (const PolTensorStep *ts)
{
  return ts->compute;
}

double
pol_tensor_step_whole (const PolTensorStep *ts)
{
  return ts->whole;
}

static void run_op (EngSim *sim, gpointer ctx, gpointer data);

static void
end_stretch (PolTensorStep *ts, double now)
{
  if (ts->stretch_start < 0)
    return;
  g_array_append_val (ts->starts, ts->stretch_start);
  g_array_append_val (ts->ends, now);
  ts->stretch_start = -1;
}

static void
next_op (PolTensorStep *ts)
{
  ts->pos++;
  run_op (ts->env->sim, ts, NULL);
}

static void
on_collective_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  PolTensorStep *ts = ctx;
  if (--ts->pending > 0)
    return;
  if (g_array_index (ts->ops, Op, ts->pos).expert)
    ts->alltoall += eng_sim_now (ts->env->sim) - ts->coll_start;
  next_op (ts);
}

static void
on_compute_done (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  next_op (ctx);
}

/* Runs op ts->pos, or ends the step. */
static void
run_op (EngSim *sim, gpointer ctx, gpointer data G_GNUC_UNUSED)
{
  PolTensorStep *ts = ctx;
  double now = eng_sim_now (sim);
  if (ts->pos >= (int) ts->ops->len)
    {
      end_stretch (ts, now);
      ts->done (ts->ctx);
      return;
    }
  const Op *op = &g_array_index (ts->ops, Op, ts->pos);
  switch (op->kind)
    {
    case OP_COMPUTE:
      if (ts->stretch_start < 0)
        ts->stretch_start = now;
      eng_schedule (sim, op->seconds * ts->k, on_compute_done, ts, NULL);
      return;
    case OP_READY:
      if (ts->ready)
        ts->ready (ts->ctx, op->layer);
      next_op (ts);
      return;
    case OP_COLLECTIVE:
    default:
      end_stretch (ts, now);
      ts->coll_start = now;
      if (op->expert)
        {
          ts->pending = ts->egroups;
          for (int g = 0; g < ts->egroups; g++)
            pol_collective_start (ts->env, op->alg, op->coll, ts->ex.ep, ts->ehosts[g],
                                  op->floats, ts->elem_bytes, ts->etag, on_collective_done,
                                  ts, NULL);
          return;
        }
      ts->pending = ts->groups;
      for (int g = 0; g < ts->groups; g++)
        {
          pol_collective_start (ts->env, op->alg, op->coll, ts->T, ts->hosts[g], op->floats,
                                ts->elem_bytes, ts->tag, on_collective_done, ts, NULL);
        }
      return;
    }
}

void
pol_tensor_step_run (PolTensorStep *ts, double k, PolTensorReady ready, PolTensorDone done,
                     gpointer ctx)
{
  ts->k = k;
  ts->pos = 0;
  ts->pending = 0;
  ts->ready = ready;
  ts->done = done;
  ts->ctx = ctx;
  ts->stretch_start = -1;
  g_array_set_size (ts->starts, 0);
  g_array_set_size (ts->ends, 0);
  run_op (ts->env->sim, ts, NULL);
}

double
pol_tensor_step_alltoall_seconds (const PolTensorStep *ts)
{
  return ts->alltoall;
}

void
pol_tensor_step_stretches (const PolTensorStep *ts, const double **start, const double **end,
                           int *n)
{
  *start = (const double *) ts->starts->data;
  *end = (const double *) ts->ends->data;
  *n = (int) ts->starts->len;
}
