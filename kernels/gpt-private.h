/*
 * gpt-private.h — what the GPT's one-device math (gpt.c) shares with its
 * tensor-parallel plan (gpt-tensor.c); private to kernels/.
 *
 * The element-wise passes (gpt-layers.c) are the same functions on both
 * sides, so that
 * the split computation differs from the whole one only where the ranks
 * sum partial results (docs/kernels.md, "Tensor parallelism of the GPT").
 * The layer table's rows come in the order below: `embed`, GPT_BLOCK_ROWS
 * per block, then `ln_f`, `lm_head`, `lm_loss`.
 */
#ifndef DTSIM_KERNELS_GPT_PRIVATE_H
#define DTSIM_KERNELS_GPT_PRIVATE_H

#include <glib.h>

#include "kernels/backend.h"
#include "kernels/kernels.h"

G_BEGIN_DECLS

/* A block's rows, from its first (1 + GPT_BLOCK_ROWS l for block l). */
enum {
  GPT_ROW_LN1, GPT_ROW_QKV, GPT_ROW_SCORE, GPT_ROW_SOFTMAX, GPT_ROW_CONTEXT, GPT_ROW_PROJ,
  GPT_ROW_ATTN_ADD, GPT_ROW_LN2, GPT_ROW_FC, GPT_ROW_GELU, GPT_ROW_FC2, GPT_ROW_MLP_ADD,
  GPT_BLOCK_ROWS
};

/* out (rows, D) = LN(x) with gains gamma and shifts beta (D each), keeping
 * each row's mean in mu and 1/sd in rs (rows each). */
void kern_gpt_ln_forward (const float *x, const float *gamma, const float *beta, gsize rows,
                          int D, float *out, float *mu, float *rs);
/* Its backward from dout (rows, D): adds into dgamma, dbeta (D each) and
 * dx (rows, D); tmp holds 2 D doubles. */
void kern_gpt_ln_backward (const float *dout, const float *x, const float *gamma,
                           const float *mu, const float *rs, gsize rows, int D, float *dgamma,
                           float *dbeta, float *dx, double *tmp);
/* g = GELU(u) (len floats); dg *= GELU'(u) in place. */
void kern_gpt_gelu_forward (const float *u, float *g, gsize len);
void kern_gpt_gelu_backward (float *dg, const float *u, gsize len);
/* Row i of a head's (S, S) scores in place: the causal softmax of the
 * scores j <= i scaled by `scale`, zeros after. */
void kern_gpt_causal_softmax_row (float *row, int i, int S, double scale);
/* dP (S, S) into the gradient of the scaled scores, in place, from the
 * probabilities P (S, S). */
void kern_gpt_causal_softmax_backward (const float *P, float *dP, int S, double scale);
/* The tokens x_0 .. x_{S-1} (tok) and targets x_1 .. x_S (tgt) of the n
 * rows of x (n, S + 1), n S each; FALSE when a value is not a symbol in
 * [0, V). */
gboolean kern_gpt_read_tokens (const float *x, int n, int S, int V, int *tok, int *tgt);

/* A GPT's shape (kern_gpt_new's arguments). */
typedef struct {
  int V, S, D, H, L;
  gboolean untied;
} KernGptShape;

/* The plan of T >= 1 ranks for m, a model of kern_gpt_new() of that shape
 * whose math runs on be (the model's CPU backend): tensor.h's contract,
 * gpt-tensor.c's split. */
struct KernTensorPlan *kern_gpt_tensor_plan_new (const KernModel *m, KernBackend *be,
                                                 const KernGptShape *shape, int T,
                                                 GError **error);

G_END_DECLS

#endif /* DTSIM_KERNELS_GPT_PRIVATE_H */
