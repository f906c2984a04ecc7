/*
 * kernels.h — the real training math that runs inside simulated workers.
 *
 * Pure functions of parameters and a batch, plus their exact FLOP counts
 * (which drive simulated compute time).  Parameters of every model are one
 * flat float32 vector, so that a parameter server can split them into
 * contiguous shards.  Kernels know neither the engine nor the network; their
 * only randomness is an explicit 64-bit seed.
 *
 * Matrices are row-major; shapes are given as (rows, cols).
 */
#ifndef DTSIM_KERNELS_H
#define DTSIM_KERNELS_H

#include <glib.h>

G_BEGIN_DECLS

/* --- Data sets ------------------------------------------------------------ */

typedef struct {
  int n;       /* samples */
  int d;       /* features per sample */
  int k;       /* classes */
  float *x;    /* (n, d) row-major */
  int *y;      /* (n) labels in [0, k) */
} KernDataset;

/* Seeded synthetic Gaussian blobs: class c has a centre drawn from
 * N(0, separation^2) in each of d dimensions; a sample of class c (classes
 * drawn uniformly) is its centre plus N(0, 1) noise per feature.  The first
 * n_train samples form `train`, the next n_test form `test`; both are drawn
 * from the same centres. */
void kern_dataset_blobs (int n_train, int n_test, int d, int k,
                         double separation, guint64 seed,
                         KernDataset **train, KernDataset **test);
KernDataset *kern_dataset_new (int n, int d, int k);
void kern_dataset_free (KernDataset *ds);
/* Copies rows idx[0..m) of `ds` into x (m, d) and y (m). */
void kern_dataset_gather (const KernDataset *ds, const int *idx, int m,
                          float *x, int *y);

/* --- Models --------------------------------------------------------------- */

typedef struct KernModel KernModel;

typedef struct {
  const char *name;
  /* Number of float32 parameters. */
  gsize (*n_params) (const KernModel *m);
  /* Writes the initial parameters (seeded). */
  void (*init) (const KernModel *m, float *params, guint64 seed);
  /* Mean loss over the batch x (n, d), y (n); if grad is not NULL, writes the
   * gradient of that mean loss into grad (n_params). */
  double (*loss_grad) (KernModel *m, const float *params, const float *x,
                       const int *y, int n, float *grad);
  /* Mean loss and accuracy (share of correct argmax) over a data set. */
  void (*evaluate) (KernModel *m, const float *params, const KernDataset *ds,
                    double *loss, double *accuracy);
  /* Exact FLOPs of forward and of backward for a batch of n (see docs). */
  double (*flops_forward) (const KernModel *m, int n);
  double (*flops_backward) (const KernModel *m, int n);
  void (*free) (KernModel *m);
} KernModelOps;

struct KernModel {
  const KernModelOps *ops;
  int d;         /* input features */
  int k;         /* outputs (classes) */
  gpointer priv; /* model-specific state and scratch */
};

/* Softmax regression: params = W (d, k) row-major, then b (k).
 * logits = x W + b; loss = mean cross-entropy of softmax(logits). */
KernModel *kern_softmax_new (int d, int k);

void kern_model_free (KernModel *m);

/* --- Optimizer ------------------------------------------------------------ */

/* Plain SGD on n floats: params -= lr * grad. */
void kern_sgd_step (float *params, const float *grad, gsize n, float lr);
/* FLOPs of kern_sgd_step on n parameters: one multiply, one subtract each. */
double kern_sgd_flops (gsize n);

G_END_DECLS

#endif /* DTSIM_KERNELS_H */
