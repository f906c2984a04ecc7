/*
 * smpi-softmax.c — the SimGrid SMPI peer of bench/scenarios/softmax-ring.ini
 * (make bench-smpi): data-parallel softmax regression, 784 features onto 10
 * classes, batch 32 per rank, whose gradients are summed by MPI_Allreduce
 * every step (SMPI's logical-ring algorithm, --cfg=smpi/allreduce:lr), with
 * the real math on every rank, as dtsim runs it.
 *
 * Each rank draws its own synthetic samples (Gaussian blobs, one centre per
 * class) from a seeded generator, so the program needs no data file.
 *
 * Usage (under smpirun): smpi-softmax [ITERATIONS]   (default 20)
 * Rank 0 prints one line: "smpi-softmax ranks=N iterations=I loss=L sim_s=T".
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D = 784, K = 10, B = 32, SAMPLES = 256 };

/* xorshift64*: a small seeded generator (uniform in [0, 1)). */
static double
uniform (uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (double) ((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double
normal (uint64_t *s)
{
  double u = uniform (s), v = uniform (s);
  return sqrt (-2.0 * log (u + 1e-300)) * cos (6.283185307179586 * v);
}

/* Gradient of the mean softmax cross-entropy of the batch (idx) with
 * respect to w ((D + 1) x K, bias last), into g; returns the mean loss. */
static double
gradient (const float *w, const float *x, const int *y, const int *idx, float *g)
{
  double loss = 0;
  memset (g, 0, sizeof (float) * (D + 1) * K);
  for (int b = 0; b < B; b++)
    {
      const float *xi = x + (size_t) idx[b] * D;
      double z[K], m = -INFINITY, sum = 0;
      for (int k = 0; k < K; k++)
        {
          double a = w[D * K + k];
          for (int d = 0; d < D; d++)
            a += xi[d] * w[d * K + k];
          z[k] = a;
          m = fmax (m, a);
        }
      for (int k = 0; k < K; k++)
        sum += (z[k] = exp (z[k] - m));
      loss -= log (z[y[idx[b]]] / sum);
      for (int k = 0; k < K; k++)
        {
          float delta = (float) ((z[k] / sum - (k == y[idx[b]])) / B);
          for (int d = 0; d < D; d++)
            g[d * K + k] += xi[d] * delta;
          g[D * K + k] += delta;
        }
    }
  return loss / B;
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank, size;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi (argv[1]) : 20;
  const int P = (D + 1) * K;
  float *w = calloc (P, sizeof (float)), *g = malloc (sizeof (float) * P);
  float *x = malloc (sizeof (float) * SAMPLES * D), centre[K][16];
  int *y = malloc (sizeof (int) * SAMPLES), idx[B];
  uint64_t s = 0x9E3779B97F4A7C15ULL ^ (uint64_t) (rank + 1) * 0xD1B54A32D192ED03ULL;
  uint64_t cs = 42;
  for (int k = 0; k < K; k++)
    for (int j = 0; j < 16; j++)
      centre[k][j] = (float) normal (&cs);
  for (int i = 0; i < SAMPLES; i++)
    {
      y[i] = (int) (uniform (&s) * K);
      for (int d = 0; d < D; d++)
        x[(size_t) i * D + d] = centre[y[i]][d % 16] + (float) normal (&s);
    }
  double loss = 0;
  for (int it = 0; it < iters; it++)
    {
      for (int b = 0; b < B; b++)
        idx[b] = (it * B + b) % SAMPLES;
      loss = gradient (w, x, y, idx, g);
      MPI_Allreduce (MPI_IN_PLACE, g, P, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      for (int i = 0; i < P; i++)
        w[i] -= 0.05f * g[i] / (float) size;
    }
  double t = MPI_Wtime ();
  if (rank == 0)
    printf ("smpi-softmax ranks=%d iterations=%d loss=%.6f sim_s=%.9f\n", size, iters, loss, t);
  free (w);
  free (g);
  free (x);
  free (y);
  MPI_Finalize ();
  return 0;
}
