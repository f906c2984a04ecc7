/*
 * gemm.c — a matrix product whose every bit is fixed by its inputs.
 *
 * OpenBLAS chooses its sgemm kernel by CPU, and the kernels block the sum
 * over k differently and fuse multiplies into adds or not: the same product
 * differs in its last bits between a Haswell, a Skylake-X and a Zen, and a
 * training run that diverges or stops at a target accuracy turns those bits
 * into a different result.  kern_gemm_fixed() defines each element of the
 * product by one formula and computes exactly that formula on every CPU:
 *
 *   S_ij = sum over p = 0, 1, ..., k-1, in that order, of a_ip b_pj,
 *          each product formed in double (exact: a float has 24 significant
 *          bits, so the product of two fits the 53 of a double) and added
 *          to a double accumulator that starts at 0;
 *   C_ij = (float) (alpha S_ij)                    if beta = 0 (C not read)
 *   C_ij = (float) (alpha S_ij + beta C_ij)        otherwise, in double.
 *
 * Because the products are exact, a fused multiply-add rounds them exactly
 * as a multiply then an add does, so even a build that fuses them gives the
 * same bits; vectorising across j (the columns of C) never reorders an
 * element's own sum.  The double accumulator also makes the result more
 * accurate than a float one.
 *
 * The work is arranged for speed without touching that order: op(B) is
 * copied into panels of NR columns, each block of MR rows of op(A) into
 * doubles, and an MR x NR tile of double accumulators stays in registers
 * for the whole sum over k.  On x86-64 the loop is compiled three
 * times, for the baseline instruction set, for AVX2 and for AVX-512, and
 * the one the CPU can run fastest is picked; all three compute the formula
 * above to the bit.  docs/kernels.md gives its cost against OpenBLAS.
 */
#include "kernels/kernels.h"

#include <string.h>

typedef double KernV4 __attribute__ ((vector_size (32)));
typedef float KernV4f __attribute__ ((vector_size (16)));
typedef double KernV8 __attribute__ ((vector_size (64)));
typedef float KernV8f __attribute__ ((vector_size (32)));

/* The copies into packed form: optimised and uninstrumented like the tile
 * loops below (their reason is given there). */
#if defined(__GNUC__) && !defined(__clang__)
#define GEMM_PACK __attribute__ ((optimize ("O2"), no_sanitize ("address", "undefined")))
#else
#define GEMM_PACK
#endif

/* op(B) in panels of nr columns: panel q, row p at Bp + (q k + p) nr,
 * zero past column n. */
GEMM_PACK static void
pack_b (gboolean trans_b, int n, int k, const float *B, int ldb, int nr, float *Bp)
{
  for (int j0 = 0, q = 0; j0 < n; j0 += nr, q++)
    {
      int cols = MIN (nr, n - j0);
      float *panel = Bp + (gsize) q * k * nr;
      for (int p = 0; p < k; p++)
        {
          float *row = panel + (gsize) p * nr;
          if (trans_b)
            for (int j = 0; j < cols; j++)
              row[j] = B[(gsize) (j0 + j) * ldb + p];
          else
            memcpy (row, B + (gsize) p * ldb + j0, (gsize) cols * sizeof (float));
          for (int j = cols; j < nr; j++)
            row[j] = 0.0f;
        }
    }
}

/* Rows i0 .. i0 + mr - 1 of op(A) as doubles: row r, column p at Ap[p mr +
 * r]; zero past row m. */
GEMM_PACK static void
pack_a (gboolean trans_a, int m, int k, const float *A, int lda, int i0, int mr, double *Ap)
{
  int rows = MIN (mr, m - i0);
  if (trans_a)   /* the block's rows are side by side in each row of A */
    for (int p = 0; p < k; p++)
      {
        const float *src = A + (gsize) p * lda + i0;
        double *dst = Ap + (gsize) p * mr;
        for (int r = 0; r < rows; r++)
          dst[r] = src[r];
        for (int r = rows; r < mr; r++)
          dst[r] = 0.0;
      }
  else   /* rows of A: read side by side, so that Ap is written in order */
    {
      const float *src[16];
      g_assert (mr <= 16);
      for (int r = 0; r < mr; r++)
        src[r] = A + (gsize) (i0 + MIN (r, rows - 1)) * lda;
      for (int p = 0; p < k; p++)
        {
          double *dst = Ap + (gsize) p * mr;
          for (int r = 0; r < mr; r++)
            dst[r] = r < rows ? src[r][p] : 0.0;
        }
    }
}

/* The tiles of C (m, n), for vectors of W doubles (VT; VTF is W floats),
 * blocks of MR rows of op(A) and panels of NR = 2 W columns of op(B),
 * both packed (Bp by pack_b with nr = NR, Ap a buffer of k MR doubles);
 * element (i, j) is stored at C + i crow + j ccol.
 * The MR x 2 vector accumulators stay in registers for the whole sum over
 * k.  A macro, so that each instruction set gets its own copy without
 * passing vectors between functions (whose ABI differs with and without
 * AVX). */
#define GEMM_TILES_BODY(VT, VTF, W, MR)                                       \
  enum { NR_ = 2 * (W) };                                                     \
  for (int i0 = 0; i0 < m; i0 += (MR))                                        \
    {                                                                         \
      int rows = MIN ((MR), m - i0);                                          \
      pack_a (trans_a, m, k, A, lda, i0, (MR), Ap);                           \
      for (int j0 = 0; j0 < n; j0 += NR_)                                     \
        {                                                                     \
          const float *panel = Bp + (gsize) (j0 / NR_) * k * NR_;             \
          VT acc[(MR)][2];                                                    \
          _Pragma ("GCC unroll 8")                                            \
          for (int r = 0; r < (MR); r++)                                      \
            acc[r][0] = acc[r][1] = (VT) { 0 };                               \
          for (int p = 0; p < k; p++)                                         \
            {                                                                 \
              VTF f0, f1;                                                     \
              memcpy (&f0, panel + (gsize) p * NR_, sizeof f0);               \
              memcpy (&f1, panel + (gsize) p * NR_ + (W), sizeof f1);         \
              VT b0 = __builtin_convertvector (f0, VT);                       \
              VT b1 = __builtin_convertvector (f1, VT);                       \
              const double *a = Ap + (gsize) p * (MR);                        \
              _Pragma ("GCC unroll 8")                                        \
              for (int r = 0; r < (MR); r++)                                  \
                {                                                             \
                  acc[r][0] += a[r] * b0;                                     \
                  acc[r][1] += a[r] * b1;                                     \
                }                                                             \
            }                                                                 \
          int cols = MIN (NR_, n - j0);                                       \
          for (int r = 0; r < rows; r++)                                      \
            {                                                                 \
              double s[NR_];                                                  \
              memcpy (s, &acc[r][0], sizeof acc[r][0]);                       \
              memcpy (s + (W), &acc[r][1], sizeof acc[r][1]);                 \
              float *c = C + (gsize) (i0 + r) * crow + (gsize) j0 * ccol;     \
              if (beta == 0.0)                                                \
                for (int j = 0; j < cols; j++)                                \
                  c[j * ccol] = (float) (alpha * s[j]);                       \
              else                                                            \
                for (int j = 0; j < cols; j++)                                \
                  c[j * ccol] = (float) (alpha * s[j] + beta * (double) c[j * ccol]); \
            }                                                                 \
        }                                                                     \
    }

#define GEMM_TILES_ARGS                                                       \
  gboolean trans_a, int m, int n, int k, double alpha, const float *A,        \
  int lda, const float *Bp, double beta, float *C, gsize crow, gsize ccol,    \
  double *Ap

/* Vectors of 4 doubles: compiled for the baseline instruction set and for
 * x86-64 level 3 (AVX2, FMA); the loader picks one by CPU.  Clones with
 * FMA may fuse a multiply into an add: the products are exact, so fusing
 * changes no bit (tests/test-kernels.c checks every width against the
 * plain formula).  The tile loops are optimised and left out of sanitizer
 * builds' instrumentation, which would make them some fifty times slower
 * (every real-math test runs through them); the buffers they read and
 * write are sized by kern_gemm_fixed_width, which stays instrumented, and
 * /kernels/gemm/fixed checks every element they write. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GEMM_X86 1
__attribute__ ((target_clones ("arch=x86-64-v3", "default"), optimize ("O2", "fp-contract=fast"),
                no_sanitize ("address", "undefined")))
#endif
static void
gemm_tiles4 (GEMM_TILES_ARGS)
{
  GEMM_TILES_BODY (KernV4, KernV4f, 4, 4)
}

#ifdef GEMM_X86
/* Vectors of 8 doubles, for CPUs with AVX-512. */
__attribute__ ((target ("avx512f"), optimize ("O2", "fp-contract=fast"),
                no_sanitize ("address", "undefined")))
static void
gemm_tiles8 (GEMM_TILES_ARGS)
{
  GEMM_TILES_BODY (KernV8, KernV8f, 8, 8)
}
#endif

/* This thread's scratch memory for the packed operands, grown to at least
 * `bytes` (its contents are not kept).  Kept between calls, so that a
 * training step's many products do not each allocate and fault in their
 * buffers; freed when the thread ends. */
static void *
scratch (gsize bytes)
{
  static GPrivate key = G_PRIVATE_INIT (g_free);
  gsize *block = g_private_get (&key);
  if (!block || block[0] < bytes)
    {
      g_free (block);
      /* a header of 64 bytes (the size, then padding) keeps the buffer
       * aligned as g_malloc's block is */
      block = g_malloc (64 + MAX (bytes, 1));
      block[0] = bytes;
      g_private_set (&key, block);
    }
  return (char *) block + 64;
}

/* As kern_gemm_fixed with vectors of `width` doubles: 4, or 8 where the CPU
 * has AVX-512 (0: the widest the CPU has).  Every width gives the same
 * bits; tests call each width this CPU can run to show it. */
void
kern_gemm_fixed_width (int width, gboolean trans_a, gboolean trans_b, int m, int n, int k,
                       float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc)
{
  g_return_if_fail (m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0)
    return;
#ifdef GEMM_X86
  if (width == 0)
    width = kern_gemm_fixed_widths ()[0];
#else
  width = 4;
#endif
  /* op(B) in panels of 2 width columns; a block of `width` rows of op(A)
   * (as many rows as the vector has doubles: 4 x 2 or 8 x 2 accumulators) */
  int nr = 2 * width, mr = width;
  /* A narrow product (n below a panel, m above it: a layer with few
   * outputs) is computed as its transpose, C^T = op(B)^T op(A)^T, so that
   * the vectors run along m; each element's sum is the same sum in the
   * same order, so the bits are too. */
  gsize crow = (gsize) ldc, ccol = 1;
  if (n < nr && m > n)
    {
      int t = m;
      m = n;
      n = t;
      const float *X = A;
      A = B;
      B = X;
      t = lda;
      lda = ldb;
      ldb = t;
      gboolean tt = trans_a;
      trans_a = !trans_b;
      trans_b = !tt;
      crow = 1;
      ccol = (gsize) ldc;
    }
  gsize nb = (gsize) ((n + nr - 1) / nr) * nr * MAX (k, 1), na = (gsize) mr * MAX (k, 1);
  double *Ap = scratch (na * sizeof (double) + nb * sizeof (float));
  float *Bp = (float *) (Ap + na);
  pack_b (trans_b, n, k, B, ldb, nr, Bp);
#ifdef GEMM_X86
  if (width == 8)
    gemm_tiles8 (trans_a, m, n, k, alpha, A, lda, Bp, beta, C, crow, ccol, Ap);
  else
#endif
    gemm_tiles4 (trans_a, m, n, k, alpha, A, lda, Bp, beta, C, crow, ccol, Ap);
}

/* The widths kern_gemm_fixed_width can run on this CPU, widest first, as a
 * 0-terminated list. */
const int *
kern_gemm_fixed_widths (void)
{
  static const int narrow[] = { 4, 0 };
#ifdef GEMM_X86
  static const int wide[] = { 8, 4, 0 };
  if (__builtin_cpu_supports ("avx512f"))
    return wide;
#endif
  return narrow;
}

/* C (m, n) = alpha op(A) op(B) + beta C with the formula of this file's
 * header, bit-identical on every CPU.  Arguments as backend.h's gemm:
 * row-major, op(A) (m, k), op(B) (k, n), lda/ldb/ldc row strides; k = 0
 * gives S = 0.  2 m n k FLOPs as cblas_sgemm. */
void
kern_gemm_fixed (gboolean trans_a, gboolean trans_b, int m, int n, int k, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C,
                 int ldc)
{
  kern_gemm_fixed_width (0, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
