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

#include "base/keys.h"

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

/* Fashion-MNIST as Debian's dataset-fashion-mnist package installs it: the
 * four gzip IDX files under `dir` (NULL = /usr/share/datasets/fashion-mnist),
 * decompressed with GIO's zlib converter.  60,000 training and 10,000 test
 * images of 28 x 28 = 784 features, 10 classes; each pixel p becomes
 * (p / 255 - mean) / std with the mean and standard deviation of all
 * training pixels (docs/kernels.md).  A missing directory or file gives an
 * error that names the package to install. */
gboolean kern_dataset_fashion_mnist (const char *dir, KernDataset **train,
                                     KernDataset **test, GError **error);
/* The training and test sample counts of the Fashion-MNIST files under `dir`
 * (NULL = the default), from their headers alone (nothing is decompressed
 * past them): the check before a run that the data can feed every worker.
 * Errors as kern_dataset_fashion_mnist's. */
gboolean kern_dataset_fashion_mnist_sizes (const char *dir, int *n_train, int *n_test,
                                           GError **error);
/* One IDX pair: images (idx3, unsigned bytes, n x rows x cols) and labels
 * (idx1, n), each gzip-compressed or plain; pixels scaled to [0, 1], k = 1 +
 * the largest label. */
KernDataset *kern_dataset_idx_load (const char *images_path,
                                    const char *labels_path, GError **error);

/* --- Low-precision emulation (kernels/numerics.c) ------------------------ */

/* Number formats the float32 math can round to ([numerics] keys;
 * docs/kernels.md, "Low-precision emulation").  Each is a subset of
 * float32: bf16 (8 exponent bits, 7 mantissa bits, float32's range); fp16
 * (IEEE binary16, subnormals, overflow to infinity); fp8-e4m3 (OCP FP8,
 * bias 7, largest 448, no infinity: overflow and infinity saturate to
 * +-448, NaN stays NaN); fp8-e5m2 (bias 15, largest 57344, IEEE-like with
 * infinity). */
typedef enum {
  KERN_FORMAT_FP32,
  KERN_FORMAT_BF16,
  KERN_FORMAT_FP16,
  KERN_FORMAT_FP8_E4M3,
  KERN_FORMAT_FP8_E5M2,
  KERN_N_FORMATS
} KernFormat;

/* "fp32", "bf16", "fp16", "fp8-e4m3", "fp8-e5m2". */
const char *kern_format_name (KernFormat f);
/* Parses one of those names (exact); FALSE for anything else. */
gboolean kern_format_parse (const char *name, KernFormat *out);
/* x rounded to f, to nearest with ties to even; the same bits on every
 * CPU.  Zeros keep their sign, NaN stays NaN; fp32 returns x. */
float kern_round_one (KernFormat f, float x);
/* kern_round_one on each of x[0..n), in place. */
void kern_round_to (KernFormat f, float *x, gsize n);
/* x = round_f(x scale) / scale on each of x[0..n) (loss scaling): with a
 * power of two as scale the multiplication and division are exact.  A
 * scale of 1 (or not positive) is kern_round_to. */
void kern_round_scaled (KernFormat f, float *x, gsize n, float scale);

/* Where the training step rounds ([numerics] keys): the parameters the
 * forward and backward read, each worker's gradient when it leaves the
 * worker (multiplied by loss_scale before, divided after), the values a
 * transfer carries, and each layer's output and the gradient at it (the
 * models that support it: KernModelKind.rounds_activations).  All
 * KERN_FORMAT_FP32 (the zero value) is plain float32. */
typedef struct {
  KernFormat weights, gradients, communication, activations;
  float loss_scale;          /* 0 is taken as 1; with dynamic_scale the
                              * initial scale */
  /* Dynamic loss scaling (KernScaler below): the gradients' scale moves
   * with their overflows instead of staying at loss_scale. */
  gboolean dynamic_scale;
  int growth_interval;       /* clean gradients before the scale doubles */
} KernNumerics;

/* Whether num (may be NULL) rounds anywhere. */
gboolean kern_numerics_active (const KernNumerics *num);
/* num's loss scale, 1 where num is NULL or its scale is 0. */
float kern_numerics_scale (const KernNumerics *num);

/* The state of dynamic loss scaling, as PyTorch's torch.amp.GradScaler
 * keeps it: the scale gradients are rounded at now, and the count of
 * gradients seen without inf or NaN since the last overflow (or growth). */
typedef struct {
  float scale;               /* S, a power of two times the initial scale */
  gint64 clean;              /* consecutive clean gradients */
  gint64 skipped;            /* gradients skipped since the reset */
} KernScaler;

/* Sets s to num's initial state: scale loss_scale (1 where it is 0), no
 * step seen. */
void kern_scaler_reset (KernScaler *s, const KernNumerics *num);
/* Whether x (n floats) holds no inf and no NaN. */
gboolean kern_all_finite (const float *x, gsize n);
/* One gradient seen at s->scale (already rounded there): `finite` says
 * whether it held only finite values.  An overflow halves the scale (not
 * below 2^-126), counts a skip and restarts the clean count; the
 * growth_interval-th clean gradient in a row doubles the scale (not past
 * 2^126) and restarts the count.  Returns `finite` (the gradient may be
 * used). */
gboolean kern_scaler_update (KernScaler *s, const KernNumerics *num, gboolean finite);

/* --- Models --------------------------------------------------------------- */

/* What a layer's kernels are, which decides the share of the device's peak
 * they reach (docs/compute.md): dense matrix products, convolutions, 3 x 3
 * convolutions of stride 1 (which libraries run with Winograd's algorithm
 * in FP32, at fewer multiplications than their FLOPs say), attention's
 * batched matrix products, element-wise passes (activations,
 * residual adds, dropout, softmax, pooling, the loss), normalisation (batch
 * and layer norm) and embedding lookups. */
typedef enum {
  KERN_LAYER_GEMM,
  KERN_LAYER_CONV,
  KERN_LAYER_CONV3X3,
  KERN_LAYER_ATTENTION,
  KERN_LAYER_ELEMENTWISE,
  KERN_LAYER_NORM,
  KERN_LAYER_EMBEDDING,
  KERN_LAYER_N_KINDS
} KernLayerKind;

/* "gemm", "conv", "conv3x3", "attention", "elementwise", "norm",
 * "embedding". */
const char *kern_layer_kind_name (KernLayerKind kind);
/* Parses one of those names; FALSE for anything else. */
gboolean kern_layer_kind_parse (const char *name, KernLayerKind *out);

/* One layer of a model, in parameter order (the first layer's parameters
 * come first in the flat vector) and in forward order.  Costs of a batch of
 * n samples are fixed + per_sample x n.  `fwd_bytes` and `bwd_bytes` count
 * the memory traffic of the layer's kernels (docs/kernels.md gives the rule:
 * every float read or written by a kernel counts 4 bytes, weights read once
 * per batch); the roofline time model (sim/) prices a layer at
 * max(flops / achieved FLOP/s, bytes / memory bandwidth). */
/* One weight matrix of a layer: the operand of its GEMM, which tensor
 * parallelism cuts by columns (outputs: each part computes some outputs
 * from every input) or by rows (inputs: each part computes partial sums of
 * every output, to be summed across the parts).  Stored row-major at
 * `offset` in the model's parameter vector: element (i, j) is parameter
 * offset + i x cols + j; its bias (cols floats, one per output) follows
 * at `bias` where `has_bias`. */
typedef struct {
  gsize offset;
  int rows, cols;           /* inputs x outputs */
  gboolean has_bias;
  gsize bias;
} KernWeight;

/* The most weight matrices one layer holds (attention: query, key, value
 * and output projections). */
#define KERN_MAX_WEIGHTS 4

typedef struct {
  char name[32];
  gsize param_offset;      /* first parameter of the layer */
  gsize params;            /* its float32 parameters (0 for ReLU, loss) */
  double fwd_flops_fixed, fwd_flops;   /* per batch, per sample */
  double bwd_flops_fixed, bwd_flops;
  double fwd_bytes_fixed, fwd_bytes;   /* per batch, per sample */
  double bwd_bytes_fixed, bwd_bytes;
  double activations;      /* floats per sample kept from forward for backward */
  KernLayerKind kind;
  double outputs;          /* floats per sample handed to the next layer (its
                            * output width; 0 for the loss) */
  /* Its weight matrices, where the model knows them (0: the layer cannot
   * be cut within, as a layer table's row without shapes). */
  int n_weights;
  KernWeight weight[KERN_MAX_WEIGHTS];
  /* An attention layer's heads, which tensor parallelism shares out (0:
   * not an attention layer, or not known), and its key/value heads
   * (grouped-query attention: fewer; 0: as many as heads), shared out too. */
  int heads;
  int kv_heads;
  /* A layer over the vocabulary (a token embedding's rows, an LM head's
   * outputs, their loss), which tensor parallelism cuts by vocabulary. */
  gboolean vocabulary;
  /* An expert layer of a mixture-of-experts block (its MLP's), 0 for any
   * other: `experts` expert MLPs of which each token runs `top_k`; the
   * layer's parameters are all the experts' (its weight one expert's
   * shape), its FLOPs and activations top_k tokens' worth per token;
   * `tokens` counts the tokens per sample routed (a sequence's). */
  int experts;
  int top_k;
  double tokens;
  /* The layer reads more than the previous layer's output (inside a
   * transformer block of kind = gpt, the residual stream runs beside its
   * input), so a pipeline stage cannot begin at it: a boundary there would
   * carry more than the previous row's `outputs`.  FALSE (the zero value)
   * for every layer of the other models. */
  gboolean joined;
} KernLayer;

typedef struct KernModel KernModel;
typedef struct KernStage KernStage;

typedef struct {
  const char *name;
  /* Number of float32 parameters. */
  gsize (*n_params) (const KernModel *m);
  /* Writes the initial parameters (seeded). */
  void (*init) (const KernModel *m, float *params, guint64 seed);
  /* Mean loss over the batch x (n, d), y (n); if grad is not NULL, writes the
   * gradient of that mean loss into grad (n_params).  NULL for timing-only
   * models. */
  double (*loss_grad) (KernModel *m, const float *params, const float *x,
                       const int *y, int n, float *grad);
  /* `groups` batches of n samples each, stacked in x (groups x n, d) and y,
   * all at the same parameters: writes group g's mean loss into losses[g]
   * and the gradient of that mean loss into grads[g] (n_params each).  The
   * forward pass and the input-gradient products run as single GEMMs over
   * all groups.  The same numbers as `groups` calls of loss_grad up to float
   * rounding.  NULL for timing-only models. */
  void (*loss_grad_groups) (KernModel *m, const float *params, const float *x,
                            const int *y, int n, int groups, float *const *grads,
                            double *losses);
  /* As loss_grad_groups, but writes the sum over g = 0..groups-1 of the
   * groups' gradients into `sum` (n_params) instead of each one: every
   * weight-gradient element is one product over the stacked rows, in row
   * order (the fixed-order backend: one chain of fused multiply-adds from
   * row 0 to row groups x n - 1, each row's term already divided by n), and
   * every bias element one float sum over the rows in that order.  The same
   * numbers as loss_grad_groups's gradients added in group order, up to
   * float rounding.  NULL where a model has no such product (the caller
   * then sums loss_grad_groups's gradients). */
  void (*loss_grad_sum) (KernModel *m, const float *params, const float *x, const int *y,
                         int n, int groups, float *sum, double *losses);
  /* Mean loss and accuracy (share of correct argmax) over a data set. */
  void (*evaluate) (KernModel *m, const float *params, const KernDataset *ds,
                    double *loss, double *accuracy);
  /* Exact FLOPs of forward and of backward for a batch of n: the sums of the
   * layers' fixed + per-sample counts. */
  double (*flops_forward) (const KernModel *m, int n);
  double (*flops_backward) (const KernModel *m, int n);
  /* Layers [first, last] as one pipeline stage (see KernStage below); NULL
   * for timing-only models. */
  KernStage *(*stage_new) (KernModel *m, int first, int last, int n, int slots,
                           float grad_scale);
  /* A model of the same architecture with its own scratch and its own CPU
   * backend, for another host thread: the same numbers for the same
   * inputs.  NULL (or a NULL op) where the math cannot be cloned (a GPU
   * backend, timing-only models).  Free with kern_model_free(). */
  KernModel *(*clone) (const KernModel *m);
  void (*free) (KernModel *m);
  /* The parameters a batch x (n, d) reads, and so the only ones its
   * gradient can make non-zero: their indices, ascending and distinct,
   * written to keys (room for n x d + 1), and their count.  NULL where
   * every batch reads every parameter (dense models). */
  gsize (*touched) (const KernModel *m, const float *x, int n, gsize *keys);
  /* Its math split across T >= 1 tensor-parallel ranks (kernels/tensor.h,
   * which kern_tensor_plan_new() dispatches here): a new plan, or NULL with
   * a KERN_TENSOR_ERROR naming [policy] tensor.  NULL where the math is not
   * split (timing-only models, sparse logistic regression). */
  struct KernTensorPlan *(*tensor_plan_new) (const KernModel *m, int T, GError **error);
} KernModelOps;

struct KernModel {
  const KernModelOps *ops;
  int d;         /* input features */
  int k;         /* outputs (classes) */
  int n_layers;
  KernLayer *layers;   /* (n_layers), owned by the model */
  gpointer priv; /* model-specific state and scratch */
  /* The formats its math emulates (zero: float32 everywhere); a model
   * reads `activations` and `loss_scale` in its forward and backward where
   * its kind rounds activations, and the worker step (train/step.c) the
   * rest.  Set after construction; a clone needs it copied. */
  KernNumerics num;
  /* With num.dynamic_scale, the run's loss scale as the worker step moves
   * it (train/step.c); reset with kern_scaler_reset() when num is set. */
  KernScaler scaler;
};

typedef enum { KERN_LOSS_XENT, KERN_LOSS_MSE } KernLoss;

struct KernBackend;

/* Dense network d -> hidden[0] -> ... -> hidden[n_hidden-1] -> k with ReLU
 * after every hidden layer, then the loss: softmax cross-entropy (XENT) or
 * half squared error against one-hot targets (MSE).  Parameters are, layer
 * by layer, W (in, out) row-major then b (out).  Math runs on `be` (borrowed;
 * NULL = a private CPU backend). */
KernModel *kern_mlp_new (int d, const int *hidden, int n_hidden, int k,
                         KernLoss loss, struct KernBackend *be);
/* Softmax regression: kern_mlp_new (d, NULL, 0, k, KERN_LOSS_XENT, NULL). */
KernModel *kern_softmax_new (int d, int k);
/* Linear regression onto one-hot targets (MSE, no hidden layer). */
KernModel *kern_linear_new (int d, int k);
/* The backend a model of kern_mlp_new() runs its math on (borrowed) and,
 * where loss is not NULL, its loss; NULL for any other model. */
struct KernBackend *kern_mlp_backend (const KernModel *m, KernLoss *loss);

void kern_model_free (KernModel *m);

/* A convolutional network for square one-channel images of d = side^2
 * features (kernels/cnn.c, docs/kernels.md): n_conv (1 to 8) layers of a
 * q x q convolution (q odd, stride 1, zero padding keeping the size) to
 * channels[l] outputs, ReLU and a pool x pool max-pool (pool = 1: none),
 * then n_hidden (0 to 7) dense ReLU layers of hidden[l] units and a k-way
 * softmax cross-entropy head.  Math on `be` (borrowed, a CPU backend; NULL
 * = a private reproducible one).  NULL with `error` set ("[model] KEY:
 * what is wrong; the fix") when d is not a square or the image shrinks
 * below a kernel or a pool. */
KernModel *kern_cnn_new (int d, const int *channels, int n_conv, int q, int pool,
                         const int *hidden, int n_hidden, int k, struct KernBackend *be,
                         GError **error);

/* Sparse binary logistic regression (kernels/sparse.c, docs/kernels.md):
 * `features` weights and one bias (parameters 0 .. features - 1, then the
 * bias at index `features`), on rows of `nnz` (index, value) pairs: a
 * sample's row is d = 2 nnz floats, x[2j] the j-th feature's index (an
 * exact integer below 2^24; a negative one pads a row with fewer
 * features) and x[2j + 1] its value.  Labels are 0 or 1 (k = 2).
 * 1 <= nnz <= features <= KERN_SPARSE_MAX_FEATURES. */
#define KERN_SPARSE_MAX_FEATURES (1 << 24)
#define KERN_SPARSE_MAX_NNZ 4096
KernModel *kern_sparse_new (gint64 features, int nnz);
/* The sparse data set of kern_sparse_new's rows: per sample nnz feature
 * draws from a Zipf law of exponent `skew` > 0 over the features (ranks
 * spread over indices by a fixed permutation), duplicates merged; the
 * label drawn from the logistic law of a hidden sparse weight vector.
 * Formulas and draw order in docs/kernels.md. */
void kern_dataset_sparse (int n_train, int n_test, gint64 features, int nnz,
                          double skew, guint64 seed, KernDataset **train,
                          KernDataset **test);
/* The indices of the parameters a batch reads (the model's `touched` op),
 * or 0 with keys untouched where the model has no such op. */
gsize kern_model_touched (const KernModel *m, const float *x, int n, gsize *keys);

/* A small decoder-only transformer with real math (kernels/gpt.c,
 * docs/kernels.md "GPT"): V symbols, S positions, width D, H heads
 * (dividing D), L blocks, the LM head tied to the token embedding unless
 * `untied`.  A sample is a row of S + 1 symbols (d = S + 1, k = V); the
 * loss is the mean next-token cross-entropy over its S predictions, labels
 * unread.  Math on `be` (borrowed; NULL = a private CPU backend); a backend
 * whose buffers are not host memory gives NULL and `error`. */
KernModel *kern_gpt_new (int V, int S, int D, int H, int L, gboolean untied,
                         struct KernBackend *be, GError **error);
/* Its logits (n S, V) for x (n, S + 1), row b S + t scoring symbol t + 1
 * of sample b. */
void kern_gpt_logits (KernModel *m, const float *params, const float *x, int n,
                      float *logits);
/* The shape of a model of kern_gpt_new (FALSE for any other model). */
gboolean kern_gpt_shape (const KernModel *m, int *V, int *S, int *D, int *H, int *L,
                         gboolean *untied);

/* The synthetic language of kind = gpt (kernels/language.c): an order-2
 * Markov chain over V <= KERN_LANGUAGE_MAX_SYMBOLS symbols whose contexts
 * each favour `branching` symbols, smoothed by KERN_LANGUAGE_SMOOTHING
 * towards the uniform law; its entropy rate is computed exactly. */
#define KERN_LANGUAGE_MAX_SYMBOLS 256
#define KERN_LANGUAGE_SMOOTHING 0.05
typedef struct KernLanguage KernLanguage;
KernLanguage *kern_language_new (int V, int branching, guint64 seed);
void kern_language_free (KernLanguage *l);
double kern_language_entropy (const KernLanguage *l);
double kern_language_floor (const KernLanguage *l, int S);
void kern_dataset_language (int n_train, int n_test, int V, int branching, int sequence,
                            guint64 seed, KernDataset **train, KernDataset **test);

/* Whether every one of `rows` labels lies in [0, k): one outside would
 * index out of the logits on any backend. */
gboolean kern_labels_valid (const int *y, gsize rows, int k);

/* What a model kind is built from: the [model] keys, resolved by the
 * caller. */
typedef struct {
  int inputs, classes;       /* features per sample; classes of the data set */
  const int *hidden;         /* (n_hidden) hidden widths (mlp) */
  int n_hidden;
  const char *workload;      /* timing: a layer table's name or file; NULL
                              * = one layer of `params` and `flops` */
  gsize params;              /* timing without a workload: parameters */
  double flops;              /* timing without a workload: FLOPs per sample */
  /* The text of the layer table `name` (built in, else a file), or NULL
   * with `error` set. */
  char *(*read_workload) (const char *name, GError **error);
  /* The run's registry keys, a kind's own among them (its `keys`). */
  const BaseValues *values;
} KernModelArgs;

/* A named shape of a model kind ([model] shape = name): the values it
 * gives some of the kind's own keys, written as a scenario writes them
 * (an integer, or an ENUM key's choice), and the publication they come
 * from.  The loader (config/models.c) sets them, and refuses a key the
 * file gives with another value. */
typedef struct {
  const char *name;
  const char *description;   /* one line: the model, and its source */
  const char *const *values; /* "key", "value", ..., NULL */
} KernModelShape;

/* A model kind ([model] kind): one entry in the file of its model
 * (mlp.c, timing.c), one line in the registry (config/models.c). */
typedef struct {
  const char *name;          /* as [model] kind names it */
  const char *description;   /* one line for `dtsim keys` */
  gboolean math;             /* trains for real; FALSE: timing only (no loss) */
  gboolean reads_workload;   /* [model] workload, params and flops are its */
  gboolean cpu_only;         /* its math runs on the CPU backend only: the
                              * loader refuses [kernels] backend = cuda */
  /* The [model] key that sets its depth, named when a model has too many
   * layers (NULL: "hidden", or "workload" for a kind without math). */
  const char *depth_key;
  /* Its own [model] keys, ending with a row whose section is NULL; NULL =
   * none.  Another kind's run refuses them. */
  const BaseKey *keys;
  /* Its rules about its keys (NULL = none): FALSE with an error
   * "[model] key: what is wrong; how to fix it" (the caller prefixes the
   * file). */
  gboolean (*validate) (const BaseValues *values, GError **error);
  /* The model for `a`, math on `be` (borrowed; NULL = CPU), or NULL with
   * `error` set. */
  KernModel *(*new) (const KernModelArgs *a, struct KernBackend *be, GError **error);
  /* Its named shapes, read from its [model] shape key (a STRING key of its
   * `keys`, "" = none), ending with a NULL name; NULL = the kind has none. */
  const KernModelShape *shapes;
  /* Key, value pairs of the values its keys take where the scenario gives
   * none, for keys another kind declares first (their table defaults are
   * that kind's), ending with NULL; NULL = the table's defaults. */
  const char *const *defaults;
  /* The kind's own synthetic data ([model] dataset = synthetic), NULL =
   * the Gaussian blobs of [model] features and classes: `width` gives the
   * floats of one sample's row and `draw` the seeded training and test
   * sets, from the run's keys. */
  int (*synthetic_width) (const BaseValues *values);
  void (*synthetic_draw) (const BaseValues *values, int n_train, int n_test,
                          guint64 seed, KernDataset **train, KernDataset **test);
  /* The classes of that data (NULL = 2, binary labels). */
  int (*synthetic_classes) (const BaseValues *values);
  /* Its models round each layer's output and the gradient at it as
   * KernModel.num.activations says (on the CPU backend); FALSE: [numerics]
   * activations is refused. */
  gboolean rounds_activations;
} KernModelKind;


/* Bytes a worker's device holds to train m with batch n: parameters,
 * gradients and `opt_state_floats` optimizer floats (4 bytes each), plus
 * the activations of every layer for n samples (4 bytes each). */
double kern_model_memory_bytes (const KernModel *m, int n, gsize opt_state_floats);

/* --- Pipeline stages ----------------------------------------------------- */

/* A contiguous range [first, last] of a model's layers (KernLayer indices)
 * run as one stage of a pipeline on micro-batches of n samples.  A stage
 * keeps, per micro-batch in flight ("slot", 0 <= slot < slots), the
 * activations its backward needs, from kern_stage_forward() until
 * kern_stage_backward() of the same slot.  It accumulates the gradient of
 * its layers' parameters over micro-batches, each scaled so that the loss
 * gradient is grad_scale x d(sum of row losses) (grad_scale = 1 / batch
 * makes the sum over a batch's micro-batches the gradient of the batch's
 * mean loss).  Boundary activations and their gradients are host memory,
 * (n, in_width) at the input and (n, out_width) at the output.  The math
 * runs on the model's backend; the stage uses the model's parameter layout
 * (one flat vector, only the stage's range read or written). */
struct KernStage {
  int first, last;       /* layers */
  int n;                 /* samples per micro-batch */
  int slots;
  int in_width;          /* floats per sample entering (d for layer 0) */
  int out_width;         /* floats per sample leaving (0 when last holds the loss) */
  gsize lo, hi;          /* its parameters [lo, hi) of the flat vector */
  gboolean has_loss;     /* last is the model's loss layer */
  float grad_scale_f;    /* the loss gradient's scale (1 / batch) */
  /* Implementation (mlp.c). */
  void (*set_params) (KernStage *st, const float *params);
  double (*forward) (KernStage *st, int slot, const float *in, const float *x,
                     const int *y, float *out);
  void (*backward) (KernStage *st, int slot, const float *dout, float *din);
  void (*take_grad) (KernStage *st, float *grad);
  void (*free) (KernStage *st);
  gpointer priv;
};

/* For a model's stage_new: sets st's first, last, n, slots and
 * grad_scale_f, the fields every model's stage fills alike. */
void kern_stage_init (KernStage *st, int first, int last, int n, int slots,
                      float grad_scale);
/* For a model's take_grad: grad[lo, hi) = acc[0, hi - lo) (st's range),
 * then acc = 0. */
void kern_stage_take_acc (const KernStage *st, float *acc, float *grad);
/* The stage of layers [first, last] of m (0 <= first <= last < n_layers),
 * or NULL for a model without math.  n >= 1, slots >= 1. */
KernStage *kern_stage_new (KernModel *m, int first, int last, int n, int slots,
                           float grad_scale);
/* Makes `params` (the model's whole flat vector, host memory) the
 * parameters the next forward and backward calls use: borrowed on the CPU
 * backend, its [lo, hi) range uploaded otherwise.  Call again after every
 * change to them. */
void kern_stage_set_params (KernStage *st, const float *params);
/* Forward of one micro-batch into `slot` (which must be free): in (n,
 * in_width), the model input x for a stage starting at layer 0; x (n, d)
 * the micro-batch's model input and y (n) its labels, read only when the
 * stage holds the loss (the GPT's targets are in x).  Writes out (n,
 * out_width) unless the stage holds the loss, in which case it returns the
 * micro-batch's mean loss and keeps the loss gradient for backward;
 * returns NAN otherwise. */
double kern_stage_forward (KernStage *st, int slot, const float *in, const float *x,
                           const int *y, float *out);
/* Backward of the micro-batch in `slot`, which it frees: dout (n,
 * out_width) is the gradient at the stage's output (ignored, may be NULL,
 * when the stage holds the loss).  Adds the micro-batch's parameter
 * gradient to the stage's accumulator and writes din (n, in_width), the
 * gradient at its input, unless first == 0 (din may then be NULL). */
void kern_stage_backward (KernStage *st, int slot, const float *dout, float *din);
/* Copies the accumulated gradient into grad[lo, hi) (host memory, the
 * model's flat layout) and zeroes the accumulator. */
void kern_stage_take_grad (KernStage *st, float *grad);
void kern_stage_free (KernStage *st);

/* --- Timing-only workloads ------------------------------------------------ */

/* Errors of kern_timing_parse(): the message names the table, the line and
 * what is wrong there. */
#define KERN_TIMING_ERROR kern_timing_error_quark ()
GQuark kern_timing_error_quark (void);
typedef enum {
  KERN_TIMING_ERROR_PARSE,   /* a malformed or out-of-range line */
  KERN_TIMING_ERROR_EMPTY,   /* no layer, or no "# input N" line */
} KernTimingError;

/* A published network as a layer table (no math): see docs/workloads.md and
 * scenarios/workloads/.  Text format, one layer per line, '#' comments:
 *   NAME PARAMS FWD_FLOPS ACTIVATIONS [KIND [KEEP]]
 * per sample, FLOPs counting a multiply-add as 2; backward = 2 x forward;
 * fwd_bytes = 4 x (inputs + outputs) per sample, with weights read once
 * per batch (4 x PARAMS fixed); backward moves twice that.  A layer's
 * inputs are the previous layer's ACTIVATIONS; the first layer's come from
 * the one required comment line "# input N" (floats per sample).  NAME is
 * unique and at most 31 bytes; PARAMS a non-negative integer; FWD_FLOPS
 * and ACTIVATIONS non-negative finite numbers; KEEP (output, inplace or
 * none) says whether a layer's activations (kept for backward) are its
 * ACTIVATIONS or 0, by default inplace for an elementwise layer as wide as
 * its input, else output; outputs are ACTIVATIONS.  `name` labels error
 * messages.  Returns NULL and sets `error` (KERN_TIMING_ERROR) on a bad
 * table.  The model has d = k = 0, no loss_grad and no evaluate.
 * Lines between "# repeat N" and "# end" (not nested) stand for N copies
 * of themselves, the k-th copy's names suffixed ".k" (k from 0), so a
 * transformer's block is written once; a table has at most
 * KERN_TIMING_MAX_LAYERS layers after its repeats. */
#define KERN_TIMING_MAX_LAYERS 65536
KernModel *kern_timing_parse (const char *name, const char *text, GError **error);
/* A single-layer timing model of `params` parameters and `flops` per sample
 * (forward + backward, split 1:2). */
KernModel *kern_timing_new (gsize params, double flops_per_sample);

/* --- Optimizers ----------------------------------------------------------- */

/* An optimizer (kernels/sgd.c, momentum.c, adam.c; the registry is in
 * optim.c).  Learning rate at step t (1-based): lr x min(1, t / warmup)
 * when warmup > 0; each entry's file states its update. */
typedef struct KernOptKind KernOptKind;

typedef struct {
  const KernOptKind *kind;
  double lr;
  double momentum;     /* mu */
  double beta1, beta2, eps;
  gint64 warmup;       /* steps of linear warm-up, 0 = none */
} KernOptConfig;

struct KernOptKind {
  const char *name;        /* as [model] optimizer names it */
  const char *description; /* one line for `dtsim keys` */
  int state_floats;        /* floats of state per parameter: 0, 1 (m) or 2 (m, v) */
  double flops;            /* FLOPs per parameter of one step (docs/kernels.md) */
  double floats_moved;     /* floats read or written per parameter of one step */
  gboolean plain;          /* the step is p -= lr g with no state, so that a
                            * copy or a weighted sum can apply it in its own pass */
  /* TRUE where cfg's coefficients are in this optimizer's range. */
  gboolean (*valid) (const KernOptConfig *cfg);
  /* One step on p (n) with gradient g (n) at learning rate lr (warm-up
   * applied) of step t >= 1, through be's operations; m and v are the
   * state (n floats each, NULL beyond state_floats). */
  void (*step) (struct KernBackend *be, const KernOptConfig *cfg, float *p, float *m,
                float *v, const float *g, gsize n, float lr, gint64 t);
};

extern const KernOptKind kern_opt_sgd;      /* sgd.c */
extern const KernOptKind kern_opt_momentum; /* momentum.c */
extern const KernOptKind kern_opt_adam;     /* adam.c */

/* The optimizers ([model] optimizer), NULL-terminated; the first is the
 * key's default. */
const void *const *kern_opt_entries (void);
/* The optimizer called `name` (exact), or NULL. */
const KernOptKind *kern_opt_lookup (const char *name);
/* The optimizer a scenario gets when it names none: the registry's first. */
const KernOptKind *kern_opt_default (void);

typedef struct KernOptimizer KernOptimizer;

/* Optimizer state for n parameters (zeros), step counter 0. */
KernOptimizer *kern_optimizer_new (const KernOptConfig *cfg, gsize n);
void kern_optimizer_free (KernOptimizer *o);
/* One step on params (n) with grad (n): increments the step counter, then
 * applies the kind's update on the CPU. */
void kern_optimizer_step (KernOptimizer *o, float *params, const float *grad);
/* The same step written elsewhere: dst = what kern_optimizer_step makes of
 * a copy of src (the same floats), src left as it is, in one pass over
 * memory (block by block for a kind with state).  dst must not overlap src
 * or grad. */
void kern_optimizer_step_into (KernOptimizer *o, float *dst, const float *src,
                               const float *grad);
/* The update itself: dst = what kern_optimizer_step makes of zeros (the
 * same floats), in one pass over memory.  dst must not overlap grad. */
void kern_optimizer_step_zero (KernOptimizer *o, float *dst, const float *grad);
/* grad[i] *= scale (one float multiply each; a sum of W gradients made
 * their mean with scale = 1/W), then kern_optimizer_step (o, params, grad):
 * the same floats, in one pass over memory; grad is left scaled.  params
 * must not overlap grad. */
void kern_optimizer_step_scaled (KernOptimizer *o, float *params, float *grad, float scale);
/* dst = sum_j weights[j] srcs[j] over j = 0..n_srcs-1 (in that order),
 * then, unless grad is NULL, one step with grad: a model averaged with
 * others' before its update (gossip).  Block by block, so that a block of
 * every source stays in cache; the step is in the same
 * pass (block by block for a kind with state).  dst (o's n floats) must
 * not overlap the sources or grad.  o may be
 * NULL when grad is: then len gives the length. */
void kern_optimizer_mix_step (KernOptimizer *o, float *dst, int n_srcs,
                              const float *const *srcs, const float *weights,
                              const float *grad, gsize len);
gint64 kern_optimizer_steps (const KernOptimizer *o);
/* Floats of state per parameter (the kind's state_floats). */
int kern_opt_state_per_param (const KernOptKind *kind);
/* FLOPs and memory bytes of one step on n parameters (docs/kernels.md). */
double kern_opt_flops (const KernOptKind *kind, gsize n);
double kern_opt_bytes (const KernOptKind *kind, gsize n);

/* Plain SGD on n floats: params -= lr * grad. */
void kern_sgd_step (float *params, const float *grad, gsize n, float lr);

/* C (m, n) = alpha op(A) op(B) + beta C, row-major as cblas_sgemm, with
 * every element's sum one chain of float fused multiply-adds in a fixed
 * order: the same bits on every CPU (gemm.c gives the formula). */
void kern_gemm_fixed (gboolean trans_a, gboolean trans_b, int m, int n, int k,
                      float alpha, const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc);
/* kern_gemm_fixed on the micro-kernel for vectors of `width` floats (16:
 * AVX-512, 8: AVX2 with FMA, 1: portable; 0 = the widest this CPU runs),
 * and the widths this CPU runs (0-terminated, widest first): for tests,
 * which show that every width gives the same bits. */
void kern_gemm_fixed_width (int width, gboolean trans_a, gboolean trans_b, int m, int n,
                            int k, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc);
const int *kern_gemm_fixed_widths (void);
/* FLOPs of kern_sgd_step on n parameters: one multiply, one subtract each. */
double kern_sgd_flops (gsize n);

G_END_DECLS

#endif /* DTSIM_KERNELS_H */
