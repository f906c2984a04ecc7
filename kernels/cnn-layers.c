/*
 * cnn-layers.c — the CNN's pixel loops (cnn-private.h): im2col, col2im,
 * the max-pool and its backward, each in one fixed order on the host, run
 * alike by the one-device math (cnn.c) and by every rank of its tensor
 * plan (cnn-tensor.c) on the channels it holds.
 */
#include "kernels/cnn-private.h"

#include <string.h>

/* Copies only: row (i, y, x) of U, tap by tap (cnn-private.h). */
void
kern_cnn_im2col (int q, int pad, int H, int C, const float *A, int n, float *U)
{
  gsize kk = (gsize) q * q * C;
  for (int i = 0; i < n; i++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < H; x++)
        {
          float *row = U + (((gsize) i * H + y) * H + x) * kk;
          for (int ty = 0; ty < q; ty++)
            {
              int yy = y + ty - pad;
              for (int tx = 0; tx < q; tx++)
                {
                  int xx = x + tx - pad;
                  float *dst = row + (gsize) (ty * q + tx) * C;
                  if (yy < 0 || yy >= H || xx < 0 || xx >= H)
                    memset (dst, 0, (gsize) C * sizeof (float));
                  else
                    memcpy (dst, A + (((gsize) i * H + yy) * H + xx) * C,
                            (gsize) C * sizeof (float));
                }
            }
        }
}

/* cin V(H)^2 FLOPs per sample, V of docs/kernels.md. */
void
kern_cnn_col2im (int q, int pad, int H, int C, const float *dU, int n, float *dA)
{
  gsize kk = (gsize) q * q * C;
  memset (dA, 0, (gsize) n * H * H * C * sizeof (float));
  for (int i = 0; i < n; i++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < H; x++)
        {
          const float *row = dU + (((gsize) i * H + y) * H + x) * kk;
          for (int ty = 0; ty < q; ty++)
            {
              int yy = y + ty - pad;
              if (yy < 0 || yy >= H)
                continue;
              for (int tx = 0; tx < q; tx++)
                {
                  int xx = x + tx - pad;
                  if (xx < 0 || xx >= H)
                    continue;
                  const float *src = row + (gsize) (ty * q + tx) * C;
                  float *dst = dA + (((gsize) i * H + yy) * H + xx) * C;
                  for (int c = 0; c < C; c++)
                    dst[c] += src[c];
                }
            }
        }
}

/* Rows and columns past s (H/s) are left out. */
void
kern_cnn_maxpool (int s, int H, int C, const float *Z, int n, float *P, int *arg)
{
  int O = H / s;
  gsize in_sample = (gsize) H * H * C, out_sample = (gsize) O * O * C;
  for (int i = 0; i < n; i++)
    {
      const float *zi = Z + i * in_sample;
      for (int oy = 0; oy < O; oy++)
        for (int ox = 0; ox < O; ox++)
          for (int c = 0; c < C; c++)
            {
              int best = ((oy * s) * H + ox * s) * C + c;
              for (int ty = 0; ty < s; ty++)
                for (int tx = 0; tx < s; tx++)
                  {
                    int at = ((oy * s + ty) * H + ox * s + tx) * C + c;
                    if (zi[at] > zi[best])
                      best = at;
                  }
              gsize o = i * out_sample + ((gsize) oy * O + ox) * C + c;
              P[o] = zi[best];
              arg[o] = best;
            }
    }
}

/* Windows do not overlap: each dZ entry gets at most one dP entry. */
void
kern_cnn_maxpool_backward (int s, int H, int C, const float *dP, const int *arg, int n,
                           float *dZ)
{
  int O = H / s;
  gsize in_sample = (gsize) H * H * C, out_sample = (gsize) O * O * C;
  memset (dZ, 0, (gsize) n * in_sample * sizeof (float));
  for (int i = 0; i < n; i++)
    for (gsize o = 0; o < out_sample; o++)
      dZ[i * in_sample + arg[i * out_sample + o]] = dP[i * out_sample + o];
}
