/*
 * cnn-private.h — what the CNN's one-device math (cnn.c) shares with its
 * tensor-parallel plan (cnn-tensor.c); private to kernels/.
 *
 * The pixel loops (im2col, col2im, the max-pool and its backward) are the
 * same functions on both sides, taking the channel count they run on, so
 * that a rank runs them on its own channels and the split computation
 * differs from the whole one only where the ranks sum partial results
 * (docs/kernels.md, "Tensor parallelism of the CNN").  Activations are
 * NHWC: (n, H, H, C) row-major.
 */
#ifndef DTSIM_KERNELS_CNN_PRIVATE_H
#define DTSIM_KERNELS_CNN_PRIVATE_H

#include <glib.h>

#include "kernels/backend.h"
#include "kernels/kernels.h"

G_BEGIN_DECLS

/* The most conv layers and dense layers a model may have. */
#define KERN_CNN_MAX_CONV 8
#define KERN_CNN_MAX_DENSE 8

/* One conv layer's shape. */
typedef struct {
  int side;        /* H = W of its input and output */
  int cin, cout;   /* channels in, out */
  int kk;          /* K = q q cin, the im2col row */
  int pooled;      /* side after the pool (side / p; side when p = 1) */
  gsize w_off;     /* W (K, cout) then b (cout) */
} KernCnnConv;

/* A CNN's shape (cnn.c's file header). */
typedef struct {
  int q, pad, pool;                   /* kernel side, padding, pool side */
  int n_conv;
  KernCnnConv conv[KERN_CNN_MAX_CONV];
  int n_dense;                        /* hidden layers + 1 */
  int width[KERN_CNN_MAX_DENSE + 1];  /* F, hidden..., k */
  gsize d_off[KERN_CNN_MAX_DENSE];    /* W (in, out) then b (out) */
  gsize n_params;
} KernCnnShape;

/* U (n H H, q q C) from A (n, H, H, C): row (i, y, x), column
 * (ty q + tx) C + c holds A[i, y + ty - pad, x + tx - pad, c], 0 outside
 * the image.  Copies only. */
void kern_cnn_im2col (int q, int pad, int H, int C, const float *A, int n, float *U);
/* dA (n, H, H, C) = the sum, over every (row, tap) of dU (n H H, q q C)
 * that im2col filled from an image pixel, of that entry: zeroed first,
 * then one add per such entry, in row then tap order. */
void kern_cnn_col2im (int q, int pad, int H, int C, const float *dU, int n, float *dA);
/* P (n, H/s, H/s, C) = the largest of each s x s window of Z (n, H, H, C),
 * its index within the sample's Z in arg: the first largest in window
 * order.  Compares only. */
void kern_cnn_maxpool (int s, int H, int C, const float *Z, int n, float *P, int *arg);
/* dZ (n, H, H, C) = zero but at each output's argmax, which gets that
 * output's gradient from dP (n, H/s, H/s, C). */
void kern_cnn_maxpool_backward (int s, int H, int C, const float *dP, const int *arg, int n,
                                float *dZ);

/* The plan of T >= 1 ranks for m, a model of kern_cnn_new() of that shape
 * whose math runs on be (the model's CPU backend): tensor.h's contract,
 * cnn-tensor.c's split. */
struct KernTensorPlan *kern_cnn_tensor_plan_new (const KernModel *m, KernBackend *be,
                                                 const KernCnnShape *shape, int T,
                                                 GError **error);

G_END_DECLS

#endif /* DTSIM_KERNELS_CNN_PRIVATE_H */
