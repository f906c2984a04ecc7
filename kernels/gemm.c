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
 *   s_ij = 0; then for p = 0, 1, ..., k-1, in that order,
 *          s_ij = fmaf (a_ip, b_pj, s_ij)
 *          (a fused multiply-add in float: the exact a_ip b_pj + s_ij,
 *          rounded to float once, as the FMA instructions round);
 *   t_ij = alpha s_ij                               (a float multiply)
 *   C_ij = t_ij                                     if beta = 0 (C not read)
 *   C_ij = fmaf (beta, C_ij, t_ij)                  otherwise.
 *
 * This is the sum sgemm forms on GPUs and on CPUs with FMA units, in one
 * stated order, so it runs at sgemm's speed: a vector of floats holds twice
 * as many sums as one of doubles.  Each element's sum is one chain of fused
 * multiply-adds, so vectorising across j (the columns of C) and cutting the
 * sum over k into panels (the partial sum kept as the float it is between
 * panels) never changes a bit.
 *
 * The work is arranged as in Goto's GEMM: a block of KC rows and NC columns
 * of op(B) is copied into panels of NR columns (in L2), KC columns of a
 * block of rows of op(A) into slivers of MR rows, and a micro-kernel keeps
 * an MR x NR tile of float accumulators in registers for the KC steps,
 * broadcasting an element of op(A) against a row of the op(B) panel.  An
 * operand whose rows are its own rows is read in place instead where the
 * other side is small (a batch of 64 rows against a weight matrix: the
 * copy would cost as much as the sums).  Tiles at the edges are computed
 * whole on zero-padded panels and only their valid part is written.  On
 * x86-64 the micro-kernel exists for AVX-512 (12 x 32, 8 x 32 where 8
 * divides the rows better, 12 x 16 for one vector of columns), for AVX2
 * with FMA (6 x 16, 6 x 8) and portably (4 x 8, with the C library's fmaf,
 * which is correctly rounded with or without FMA hardware: slow where the
 * CPU has none, exact everywhere); the widest the CPU runs is picked, and
 * all give the same bits.  docs/kernels.md gives its speed against
 * OpenBLAS, and why the gradient stays on the broadcast side (subnormals).
 */
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define GEMM_X86 1
#include <immintrin.h>
#endif

/* The copies into packed form and the micro-kernels: optimised, and left
 * out of sanitizer builds' instrumentation, which would make them some
 * fifty times slower (every real-math test runs through them); the buffers
 * they read and write are sized by gemm_run, which stays instrumented, and
 * /kernels/gemm/fixed and /kernels/gemm/widths check every element they
 * write.  No multiply is
 * ever fused into an add by the compiler (fp-contract=off, as the whole
 * build): the only fused operations are the explicit ones of the formula. */
#if defined(__GNUC__) && !defined(__clang__)
#define GEMM_OPT __attribute__ ((optimize ("O2", "fp-contract=off"), \
                                 no_sanitize ("address", "undefined")))
#else
#define GEMM_OPT
#endif

/* Bits of a micro-kernel's `mode`. */
enum
{
  GEMM_CONTINUE = 1,   /* start from the partial sums in S, not from 0 */
  GEMM_FINAL = 2,      /* the last panel: write C, else store the sums to S */
};

/* An MR x NR tile over one panel of kc steps: element (r, p) of op(A) at
 * Ap[p a_step + r a_row] (packed: a_step = MR, a_row = 1; read in place
 * from a row-major A: 1, lda), element (p, j) of op(B) at Bp[p b_step + j]
 * (packed: b_step = NR; in place: ldb); S is the tile's MR x NR partial
 * sums (S[r NR + j]).  In the final mode, element (r, j) of C is at C + r
 * crow + j ccol, and only rows < `rows`, columns < `cols` are written. */
typedef void (*GemmTile) (int kc, const float *Ap, gsize a_step, gsize a_row, const float *Bp,
                          gsize b_step, float *S, int mode, float alpha, float beta, float *C,
                          gsize crow, gsize ccol, int rows, int cols);

/* Copies rows 0 .. w - 1 of src (row stride ld), columns 0 .. kc - 1,
 * into a panel as its columns: panel[p nr + j] = src[j ld + p]. */
typedef void (*GemmTranspose) (const float *src, gsize ld, int w, int kc, float *panel, int nr);

/* A micro-kernel of one instruction set and its block sizes. */
typedef struct
{
  int width;       /* floats per vector: the name tests pick it by */
  int mr, nr;      /* the micro-kernel's tile: rows, columns */
  int kc;          /* steps of the sum per panel */
  int nc;          /* columns of op(B) per packed block (a multiple of nr) */
  int mc;          /* rows of op(A) per packed block (a multiple of mr) */
  GemmTile tile;   /* for op(A) packed */
  GemmTile tile_direct;   /* for op(A) read in place (a_step = 1) */
  GemmTranspose transpose;   /* packs panels of B^T */
} GemmShape;

/* C element of a tile from its sum s: the formula's last line. */
#define GEMM_FINISH(c, s, alpha, beta)                                        \
  do                                                                          \
    {                                                                         \
      float t_ = (alpha) * (s);                                               \
      *(c) = (beta) == 0.0f ? t_ : fmaf ((beta), *(c), t_);                   \
    }                                                                         \
  while (0)

/* The portable micro-kernel: 4 x 8, one fmaf per step and element. */
enum { GEN_MR = 4, GEN_NR = 8 };

GEMM_OPT static void
tile_generic (int kc, const float *Ap, gsize a_step, gsize a_row, const float *Bp, gsize b_step,
              float *S, int mode, float alpha, float beta, float *C, gsize crow, gsize ccol,
              int rows, int cols)
{
  float acc[GEN_MR][GEN_NR];
  for (int r = 0; r < GEN_MR; r++)
    for (int j = 0; j < GEN_NR; j++)
      acc[r][j] = mode & GEMM_CONTINUE ? S[r * GEN_NR + j] : 0.0f;
  for (int p = 0; p < kc; p++)
    {
      const float *a = Ap + p * a_step, *b = Bp + p * b_step;
      for (int r = 0; r < GEN_MR; r++)
        for (int j = 0; j < GEN_NR; j++)
          acc[r][j] = fmaf (a[r * a_row], b[j], acc[r][j]);
    }
  if (!(mode & GEMM_FINAL))
    {
      memcpy (S, acc, sizeof acc);
      return;
    }
  for (int r = 0; r < rows; r++)
    for (int j = 0; j < cols; j++)
      GEMM_FINISH (C + r * crow + j * ccol, acc[r][j], alpha, beta);
}

#ifdef GEMM_X86
/* The vector micro-kernel for vectors VT of W floats, MR rows and NV
 * vectors per row (NR = NV W), op(A) at A_STEP, A_ROW (constants for a
 * packed sliver, so that the compiler folds them into the addresses);
 * LOAD, STORE, SET1, MUL and FMA are the
 * instruction set's intrinsics.  A macro, so that each instruction set gets
 * its own copy without passing vectors between functions (whose ABI
 * differs with and without AVX).  Full tiles of a C with unit column
 * stride are finished in vectors; others go through `last`, a copy of the
 * sums finished element by element with the same two roundings. */
#define GEMM_TILE_BODY(VT, W, MR, NV, A_STEP, A_ROW, LOAD, STORE, SET1, MUL, FMA) \
  enum { NR_ = (NV) * (W) };                                                  \
  VT acc[(MR)][(NV)];                                                         \
  _Pragma ("GCC unroll 16")                                                   \
  for (int r = 0; r < (MR); r++)                                              \
    _Pragma ("GCC unroll 4")                                                  \
    for (int v = 0; v < (NV); v++)                                            \
      acc[r][v] = mode & GEMM_CONTINUE ? LOAD (S + r * NR_ + v * (W)) : SET1 (0.0f); \
  const float *a = Ap, *bp = Bp;                                              \
  for (int p = 0; p < kc; p++, a += (A_STEP), bp += b_step)                   \
    {                                                                         \
      VT b[(NV)];                                                             \
      _Pragma ("GCC unroll 4")                                                \
      for (int v = 0; v < (NV); v++)                                          \
        b[v] = LOAD (bp + v * (W));                                           \
      _Pragma ("GCC unroll 16")                                               \
      for (int r = 0; r < (MR); r++)                                          \
        {                                                                     \
          VT ar = SET1 (a[r * (A_ROW)]);                                      \
          _Pragma ("GCC unroll 4")                                            \
          for (int v = 0; v < (NV); v++)                                      \
            acc[r][v] = FMA (ar, b[v], acc[r][v]);                            \
        }                                                                     \
    }                                                                         \
  if (!(mode & GEMM_FINAL))                                                   \
    {                                                                         \
      _Pragma ("GCC unroll 16")                                               \
      for (int r = 0; r < (MR); r++)                                          \
        _Pragma ("GCC unroll 4")                                              \
        for (int v = 0; v < (NV); v++)                                        \
          STORE (S + r * NR_ + v * (W), acc[r][v]);                           \
      return;                                                                 \
    }                                                                         \
  if (rows == (MR) && cols == NR_ && ccol == 1)                               \
    {                                                                         \
      VT va = SET1 (alpha), vb = SET1 (beta);                                 \
      _Pragma ("GCC unroll 16")                                               \
      for (int r = 0; r < (MR); r++)                                          \
        _Pragma ("GCC unroll 4")                                              \
        for (int v = 0; v < (NV); v++)                                        \
          {                                                                   \
            float *c = C + r * crow + v * (W);                                \
            VT t = MUL (va, acc[r][v]);                                       \
            if (beta != 0.0f)                                                 \
              t = FMA (vb, LOAD (c), t);                                      \
            STORE (c, t);                                                     \
          }                                                                   \
      return;                                                                 \
    }                                                                         \
  float last[(MR) * NR_];                                                     \
  _Pragma ("GCC unroll 16")                                                   \
  for (int r = 0; r < (MR); r++)                                              \
    _Pragma ("GCC unroll 4")                                                  \
    for (int v = 0; v < (NV); v++)                                            \
      STORE (last + r * NR_ + v * (W), acc[r][v]);                            \
  for (int r = 0; r < rows; r++)                                              \
    for (int j = 0; j < cols; j++)                                            \
      GEMM_FINISH (C + r * crow + j * ccol, last[r * NR_ + j], alpha, beta);

enum { AVX2_MR = 6, AVX2_NV = 2, AVX512_MR = 12, AVX512_NV = 2, AVX512_MR8 = 8 };

#define GEMM_TILE_ARGS                                                        \
  int kc, const float *Ap, gsize a_step G_GNUC_UNUSED, gsize a_row G_GNUC_UNUSED, \
  const float *Bp, gsize b_step, float *S, int mode, float alpha, float beta, float *C, \
  gsize crow, gsize ccol, int rows, int cols

/* 6 x 16 on AVX2 with FMA: 12 accumulators of the 16 registers; 6 x 8
 * for products of at most 8 columns. */
__attribute__ ((target ("avx2,fma"))) GEMM_OPT static void
tile_avx2 (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m256, 8, AVX2_MR, AVX2_NV, AVX2_MR, 1, _mm256_loadu_ps,
                  _mm256_storeu_ps, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps)
}

__attribute__ ((target ("avx2,fma"))) GEMM_OPT static void
tile_avx2_direct (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m256, 8, AVX2_MR, AVX2_NV, 1, a_row, _mm256_loadu_ps,
                  _mm256_storeu_ps, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps)
}

__attribute__ ((target ("avx2,fma"))) GEMM_OPT static void
tile_avx2_narrow (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m256, 8, AVX2_MR, 1, AVX2_MR, 1, _mm256_loadu_ps,
                  _mm256_storeu_ps, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps)
}

__attribute__ ((target ("avx2,fma"))) GEMM_OPT static void
tile_avx2_narrow_direct (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m256, 8, AVX2_MR, 1, 1, a_row, _mm256_loadu_ps,
                  _mm256_storeu_ps, _mm256_set1_ps, _mm256_mul_ps, _mm256_fmadd_ps)
}

/* 12 x 32 on AVX-512: 24 accumulators of the 32 registers; 12 x 16 for
 * products of at most 16 columns. */
__attribute__ ((target ("avx512f,avx2,fma"))) GEMM_OPT static void
tile_avx512 (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m512, 16, AVX512_MR, AVX512_NV, AVX512_MR, 1, _mm512_loadu_ps,
                  _mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps)
}

__attribute__ ((target ("avx512f,avx2,fma"))) GEMM_OPT static void
tile_avx512_direct (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m512, 16, AVX512_MR, AVX512_NV, 1, a_row, _mm512_loadu_ps,
                  _mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps)
}

/* 8 x 32 on AVX-512, for row counts that 8 divides better than 12 (a batch
 * of 32 or 64 rows): 16 accumulators, still enough to hide the FMA's
 * latency. */
__attribute__ ((target ("avx512f,avx2,fma"))) GEMM_OPT static void
tile_avx512_8 (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m512, 16, AVX512_MR8, AVX512_NV, AVX512_MR8, 1, _mm512_loadu_ps,
                  _mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps)
}

__attribute__ ((target ("avx512f,avx2,fma"))) GEMM_OPT static void
tile_avx512_8_direct (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m512, 16, AVX512_MR8, AVX512_NV, 1, a_row, _mm512_loadu_ps,
                  _mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps)
}

__attribute__ ((target ("avx512f,avx2,fma"))) GEMM_OPT static void
tile_avx512_narrow (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m512, 16, AVX512_MR, 1, AVX512_MR, 1, _mm512_loadu_ps,
                  _mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps)
}

__attribute__ ((target ("avx512f,avx2,fma"))) GEMM_OPT static void
tile_avx512_narrow_direct (GEMM_TILE_ARGS)
{
  GEMM_TILE_BODY (__m512, 16, AVX512_MR, 1, 1, a_row, _mm512_loadu_ps,
                  _mm512_storeu_ps, _mm512_set1_ps, _mm512_mul_ps, _mm512_fmadd_ps)
}
#endif

/* The portable transposing copy, in blocks of 16 rows of the panel,
 * whose lines stay in L1 while every column is written into them. */
GEMM_OPT static void
transpose_generic (const float *src, gsize ld, int w, int kc, float *panel, int nr)
{
  for (int p0 = 0; p0 < kc; p0 += 16)
    {
      int d = MIN (16, kc - p0);
      for (int j = 0; j < w; j++)
        for (int p = 0; p < d; p++)
          panel[(gsize) (p0 + p) * nr + j] = src[(gsize) j * ld + p0 + p];
    }
}

#ifdef GEMM_X86
/* The transposing copy in blocks of 8 x 8 transposed in AVX registers (a
 * copy: no arithmetic, so no bit can change); the edges as above. */
__attribute__ ((target ("avx2"))) GEMM_OPT static void
transpose_avx2 (const float *src, gsize ld, int w, int kc, float *panel, int nr)
{
  int w8 = w / 8 * 8, k8 = kc / 8 * 8;
  for (int p0 = 0; p0 < k8; p0 += 8)
    for (int j0 = 0; j0 < w8; j0 += 8)
      {
        const float *s = src + (gsize) j0 * ld + p0;
        __m256 r0 = _mm256_loadu_ps (s), r1 = _mm256_loadu_ps (s + ld),
               r2 = _mm256_loadu_ps (s + 2 * ld), r3 = _mm256_loadu_ps (s + 3 * ld),
               r4 = _mm256_loadu_ps (s + 4 * ld), r5 = _mm256_loadu_ps (s + 5 * ld),
               r6 = _mm256_loadu_ps (s + 6 * ld), r7 = _mm256_loadu_ps (s + 7 * ld);
        __m256 t0 = _mm256_unpacklo_ps (r0, r1), t1 = _mm256_unpackhi_ps (r0, r1),
               t2 = _mm256_unpacklo_ps (r2, r3), t3 = _mm256_unpackhi_ps (r2, r3),
               t4 = _mm256_unpacklo_ps (r4, r5), t5 = _mm256_unpackhi_ps (r4, r5),
               t6 = _mm256_unpacklo_ps (r6, r7), t7 = _mm256_unpackhi_ps (r6, r7);
        __m256 u0 = _mm256_shuffle_ps (t0, t2, 0x44), u1 = _mm256_shuffle_ps (t0, t2, 0xee),
               u2 = _mm256_shuffle_ps (t1, t3, 0x44), u3 = _mm256_shuffle_ps (t1, t3, 0xee),
               u4 = _mm256_shuffle_ps (t4, t6, 0x44), u5 = _mm256_shuffle_ps (t4, t6, 0xee),
               u6 = _mm256_shuffle_ps (t5, t7, 0x44), u7 = _mm256_shuffle_ps (t5, t7, 0xee);
        float *d = panel + (gsize) p0 * nr + j0;
        _mm256_storeu_ps (d, _mm256_permute2f128_ps (u0, u4, 0x20));
        _mm256_storeu_ps (d + nr, _mm256_permute2f128_ps (u1, u5, 0x20));
        _mm256_storeu_ps (d + 2 * nr, _mm256_permute2f128_ps (u2, u6, 0x20));
        _mm256_storeu_ps (d + 3 * nr, _mm256_permute2f128_ps (u3, u7, 0x20));
        _mm256_storeu_ps (d + 4 * nr, _mm256_permute2f128_ps (u0, u4, 0x31));
        _mm256_storeu_ps (d + 5 * nr, _mm256_permute2f128_ps (u1, u5, 0x31));
        _mm256_storeu_ps (d + 6 * nr, _mm256_permute2f128_ps (u2, u6, 0x31));
        _mm256_storeu_ps (d + 7 * nr, _mm256_permute2f128_ps (u3, u7, 0x31));
      }
  if (w8 < w)   /* the last columns, every row */
    transpose_generic (src + (gsize) w8 * ld, ld, w - w8, kc, panel + w8, nr);
  if (k8 < kc)   /* the last rows, the columns done in blocks */
    transpose_generic (src + k8, ld, w8, kc - k8, panel + (gsize) k8 * nr, nr);
}
#endif

/* Every instruction set's shapes, widest first, each width's narrow one
 * (a single vector of columns) after it, then any with fewer rows.  Block sizes: a sliver of op(A)
 * (mr x kc) stays in L1 while the panels of the op(B) block (kc x nc)
 * stream from L2 past it. */
static const GemmShape gemm_shapes[] = {
#ifdef GEMM_X86
  { 16, AVX512_MR, AVX512_NV * 16, 384, 512, 384, tile_avx512, tile_avx512_direct,
    transpose_avx2 },
  { 16, AVX512_MR, 16, 384, 512, 384, tile_avx512_narrow, tile_avx512_narrow_direct,
    transpose_avx2 },
  { 16, AVX512_MR8, AVX512_NV * 16, 384, 512, 384, tile_avx512_8, tile_avx512_8_direct,
    transpose_avx2 },
  { 8, AVX2_MR, AVX2_NV * 8, 256, 512, 384, tile_avx2, tile_avx2_direct, transpose_avx2 },
  { 8, AVX2_MR, 8, 256, 512, 384, tile_avx2_narrow, tile_avx2_narrow_direct, transpose_avx2 },
#endif
  { 1, GEN_MR, GEN_NR, 256, 512, 384, tile_generic, tile_generic, transpose_generic },
};

/* Rows pc .. pc + kc - 1, columns j0 .. j0 + cols - 1 of op(B), in panels
 * of nr columns: panel q, row p at Bp + (q kc + p) nr, zero past column
 * cols. */
GEMM_OPT static void
pack_b (gboolean trans_b, const float *B, int ldb, int pc, int kc, int j0, int cols, int nr,
        GemmTranspose transpose, float *Bp)
{
  for (int q0 = 0; q0 < cols; q0 += nr)
    {
      int w = MIN (nr, cols - q0);
      float *panel = Bp + (gsize) (q0 / nr) * kc * nr;
      if (trans_b)   /* column j of op(B) is row j of B */
        {
          transpose (B + (gsize) (j0 + q0) * ldb + pc, (gsize) ldb, w, kc, panel, nr);
          if (w < nr)
            for (int p = 0; p < kc; p++)
              memset (panel + (gsize) p * nr + w, 0, (gsize) (nr - w) * sizeof (float));
        }
      else
        for (int p = 0; p < kc; p++)
          {
            float *row = panel + (gsize) p * nr;
            memcpy (row, B + (gsize) (pc + p) * ldb + j0 + q0, (gsize) w * sizeof (float));
            for (int j = w; j < nr; j++)
              row[j] = 0.0f;
          }
    }
}

/* Rows i0 .. i0 + rows - 1, columns pc .. pc + kc - 1 of op(A), in slivers
 * of mr rows: sliver q, row r of step p at Ap + (q kc + p) mr + r, zero
 * past row `rows`. */
GEMM_OPT static void
pack_a (gboolean trans_a, const float *A, int lda, int i0, int rows, int pc, int kc, int mr,
        float *Ap)
{
  for (int q0 = 0; q0 < rows; q0 += mr)
    {
      int h = MIN (mr, rows - q0);
      float *sliver = Ap + (gsize) (q0 / mr) * kc * mr;
      if (trans_a)   /* row i of op(A) is column i of A: mr side by side */
        for (int p = 0; p < kc; p++)
          {
            float *dst = sliver + (gsize) p * mr;
            memcpy (dst, A + (gsize) (pc + p) * lda + i0 + q0, (gsize) h * sizeof (float));
            for (int r = h; r < mr; r++)
              dst[r] = 0.0f;
          }
      else   /* rows of A, read side by side so that the sliver is written in order */
        {
          const float *src[16];
          g_assert (mr <= 16);
          for (int r = 0; r < mr; r++)
            src[r] = A + (gsize) (i0 + q0 + MIN (r, h - 1)) * lda + pc;
          for (int p = 0; p < kc; p++)
            {
              float *dst = sliver + (gsize) p * mr;
              for (int r = 0; r < mr; r++)
                dst[r] = r < h ? src[r][p] : 0.0f;
            }
        }
    }
}

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

/* Asks for rows 0 .. h - 1, floats 0 .. w - 1 of a row-major block (row
 * stride ld) to be brought towards the cache, touching nothing.  op(B)
 * read in place is met first by the micro-kernel of the block's first
 * rows, which walks down a panel's rows, ld floats apart: a stride the
 * hardware prefetchers do not follow, so each line would be fetched when
 * it is needed, a memory latency at a time.  Asked for here, all at once,
 * the lines arrive at the memory's bandwidth instead (a worker's own
 * weights, read once per product, are rarely in cache).  A prefetch
 * changes no value. */
static void
prefetch_rows (const float *X, int ld, int h, int w)
{
  enum { LINE = 64 / sizeof (float) };
  for (int r = 0; r < h; r++)
    for (int j = 0; j < w; j += LINE)
      __builtin_prefetch (X + (gsize) r * ld + j, 0, 2);
}

static int
round_up (int x, int to)
{
  return (x + to - 1) / to * to;
}

/* Packing an operand is one pass over it for each block of the other:
 * where the other is small (a product of a batch of 64 rows and a weight
 * matrix) that pass costs as much as the products.  So op(A), when it is A
 * itself, is always read in place (the micro-kernel broadcasts from its
 * rows as cheaply as from a packed sliver), and op(B), when it is B, is
 * read in place where m is at most this (larger products pack it, so that
 * its rows, often a multiple of 4 KiB apart, do not evict each other from
 * L1).  The tiles at their edges are still packed, zero-padded. */
enum { GEMM_IN_PLACE = 1024 };

/* Rows of C per call of gemm_run: a multiple of every tile's rows. */
enum { GEMM_BAND = 3072 };

/* C = alpha op(A) op(B) + beta C by the formula, element (i, j) of C at
 * C + i crow + j ccol; m, n > 0.  The loops, outermost first: blocks of nc
 * columns of op(B); panels of kc steps (op(B)'s block packed, or read in
 * place); blocks of mc rows of op(A) (packed, or read in place); slivers
 * of mr rows; panels of nr columns.  Where the sum takes more than one
 * panel, each tile's partial sums wait in S (tile by tile, mr nr floats
 * each) between panels. */
static void
gemm_run (const GemmShape *g, gboolean trans_a, gboolean trans_b, int m, int n, int k,
          float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
          gsize crow, gsize ccol)
{
  int mr = g->mr, nr = g->nr;
  /* panels of equal depth, none above g->kc: no short last panel */
  int panels = MAX ((k + g->kc - 1) / g->kc, 1);
  int kc = MAX ((k + panels - 1) / panels, 1);
  int nb = MIN (g->nc, round_up (n, nr)), mb = MIN (g->mc, round_up (m, mr));
  gsize nbp = (gsize) kc * nb, nap = (gsize) mb * kc;
  gsize ns = k > kc ? (gsize) round_up (m, mr) * nb : 0;
  float *Bp = scratch ((nbp + nap + ns) * sizeof (float));
  float *Ap = Bp + nbp, *S = Ap + nap;
  int tiles_per_row = nb / nr;
  gboolean direct_a = !trans_a, direct_b = !trans_b && m <= GEMM_IN_PLACE;
  for (int jc = 0; jc < n; jc += nb)
    {
      int cols = MIN (nb, n - jc);
      for (int pc = 0; pc == 0 || pc < k; pc += kc)
        {
          int kk = MIN (kc, k - pc);
          int mode = (pc > 0 ? GEMM_CONTINUE : 0) | (pc + kk >= k ? GEMM_FINAL : 0);
          int full_b = direct_b ? cols / nr * nr : 0;   /* columns read in place */
          if (full_b < cols)
            pack_b (trans_b, B, ldb, pc, kk, jc + full_b, cols - full_b, nr, g->transpose,
                    Bp + (gsize) full_b * kk);
          if (full_b > 0)
            prefetch_rows (B + (gsize) pc * ldb + jc, ldb, kk, full_b);
          for (int ic = 0; ic < m; ic += mb)
            {
              int rows = MIN (mb, m - ic);
              int full_a = direct_a ? rows / mr * mr : 0;   /* rows read in place */
              if (full_a < rows)
                pack_a (trans_a, A, lda, ic + full_a, rows - full_a, pc, kk, mr,
                        Ap + (gsize) full_a * kk);
              for (int ir = 0; ir < rows; ir += mr)
                {
                  gboolean in_place = ir < full_a;
                  const float *a = in_place ? A + (gsize) (ic + ir) * lda + pc
                                            : Ap + (gsize) ir * kk;
                  GemmTile tile = in_place ? g->tile_direct : g->tile;
                  gsize a_step = in_place ? 1 : (gsize) mr, a_row = in_place ? (gsize) lda : 1;
                  for (int jr = 0; jr < cols; jr += nr)
                    {
                      gsize at = (gsize) ((ic + ir) / mr) * tiles_per_row + jr / nr;
                      const float *b = jr < full_b ? B + (gsize) pc * ldb + jc + jr
                                                   : Bp + (gsize) jr * kk;
                      gsize b_step = jr < full_b ? (gsize) ldb : (gsize) nr;
                      tile (kk, a, a_step, a_row, b, b_step, S + at * mr * nr, mode, alpha,
                            beta, C + (gsize) (ic + ir) * crow + (gsize) (jc + jr) * ccol,
                            crow, ccol, MIN (mr, rows - ir), MIN (nr, cols - jr));
                    }
                }
            }
        }
    }
}

/* As kern_gemm_fixed with the micro-kernel for vectors of `width` floats:
 * 16 (AVX-512), 8 (AVX2 with FMA) or 1 (portable, fmaf); 0 picks the
 * widest this CPU runs.  Every width gives the same bits; tests call each
 * width this CPU can run to show it. */
void
kern_gemm_fixed_width (int width, gboolean trans_a, gboolean trans_b, int m, int n, int k,
                       float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc)
{
  g_return_if_fail (m >= 0 && n >= 0 && k >= 0);
  if (m == 0 || n == 0)
    return;
  if (width == 0)
    width = kern_gemm_fixed_widths ()[0];
  const GemmShape *g = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS (gemm_shapes) && !g; i++)
    if (gemm_shapes[i].width == width)
      g = &gemm_shapes[i];
  g_return_if_fail (g != NULL);
  /* A narrow product (n below a panel, m above it: a layer with few
   * outputs) where op(A) is A^T is computed as its transpose, C^T = op(B)^T
   * op(A)^T, so that the vectors run along m and A is read in place; each
   * element's sum is the same sum in the same order, so the bits are the
   * same. */
  gsize crow = (gsize) ldc, ccol = 1;
  if (n < g->nr && m > n && trans_a)
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
  /* a product no wider than one vector: the width's narrow tile; else a
   * tile with fewer rows where it pads at least 3 % fewer rows (the larger
   * tile loads less per multiply-add) */
  const GemmShape *end = gemm_shapes + G_N_ELEMENTS (gemm_shapes);
  if (n <= width && g + 1 < end && g[1].width == width)
    g++;
  else
    for (const GemmShape *h = g + 1; h < end && h->width == width; h++)
      if (h->nr == g->nr && 33 * (gint64) round_up (m, h->mr) < 32 * (gint64) round_up (m, g->mr))
        g = h;
  /* in bands of rows, so that the partial sums of a deep product (4 n
   * bytes a row) stay bounded however many rows it has */
  for (int i0 = 0; i0 < m; i0 += GEMM_BAND)
    gemm_run (g, trans_a, trans_b, MIN (GEMM_BAND, m - i0), n, k, alpha,
              A + (trans_a ? (gsize) i0 : (gsize) i0 * lda), lda, B, ldb, beta,
              C + (gsize) i0 * crow, crow, ccol);
}

/* The widths kern_gemm_fixed_width can run on this CPU, widest first, as a
 * 0-terminated list. */
const int *
kern_gemm_fixed_widths (void)
{
  static const int portable[] = { 1, 0 };
#ifdef GEMM_X86
  static const int avx512[] = { 16, 8, 1, 0 }, avx2[] = { 8, 1, 0 };
  if (__builtin_cpu_supports ("avx512f"))
    return avx512;
  if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma"))
    return avx2;
#endif
  return portable;
}

/* C (m, n) = alpha op(A) op(B) + beta C with the formula of this file's
 * header, bit-identical on every CPU.  Arguments as backend.h's gemm:
 * row-major, op(A) (m, k), op(B) (k, n), lda/ldb/ldc row strides; k = 0
 * gives s = 0.  2 m n k FLOPs as cblas_sgemm. */
void
kern_gemm_fixed (gboolean trans_a, gboolean trans_b, int m, int n, int k, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C,
                 int ldc)
{
  kern_gemm_fixed_width (0, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
