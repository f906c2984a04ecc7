/*
 * language.c — a seeded synthetic language of known entropy, the data set
 * of kind = gpt (docs/kernels.md, "Synthetic language").
 *
 * Symbols are 0 .. V - 1.  The language is an order-2 Markov chain: the
 * next symbol c after the context (a, b) has probability
 *
 *   p(c | a, b) = (1 - eps) w_ab(c) + eps / V
 *
 * where w_ab puts weight on `branching` distinct symbols drawn for that
 * context (weights proportional to Exp(1) draws: a flat Dirichlet over its
 * support) and eps = KERN_LANGUAGE_SMOOTHING keeps every transition
 * possible, so the chain on pairs (a, b) -> (b, c) is irreducible and
 * aperiodic and has one stationary law pi(a, b).  Its entropy rate is
 *
 *   H = sum_ab pi(a, b) H(p(. | a, b))      nats per symbol,
 *
 * pi found by power iteration to a change below 1e-13 (in L1).  Every
 * sequence starts from a pair drawn from pi, so the process is stationary:
 * a model that predicts symbol t from symbols 0 .. t - 1 has at best the
 * loss H(X_1 | X_0) at t = 1 and H at every t >= 2, and over the S
 * predictions of a sample of S + 1 symbols at best
 *
 *   floor(S) = (H(X_1 | X_0) + (S - 1) H) / S,
 *   H(X_1 | X_0) = H(pi) - H(pi_1),   pi_1(a) = sum_b pi(a, b).
 *
 * A sample row holds S + 1 symbols as exact small integers in floats; its
 * label is its last symbol (kind = gpt reads only the row).
 */
#include "kernels/kernels.h"
#include "kernels/rng.h"
#include "base/fmath.h"

#include <math.h>
#include <string.h>

/* The power iteration's stopping change (L1) and its most rounds. */
#define LANG_TOL 1e-13
#define LANG_MAX_ROUNDS 100000

struct KernLanguage {
  int V;             /* symbols */
  int K;             /* support of a context's sparse part */
  int *next;         /* (V, V, K) the support of context (a, b) */
  double *w;         /* (V, V, K) its weights, summing to 1 */
  double *pi;        /* (V, V) the stationary law of pairs */
  double H;          /* entropy rate, nats per symbol */
  double H1;         /* H(X_1 | X_0), nats */
};

/* p(c | context ctx = a V + b), from its sparse part and the smoothing. */
static double
lang_prob (const KernLanguage *l, int ctx, int c)
{
  double p = KERN_LANGUAGE_SMOOTHING / l->V;
  for (int j = 0; j < l->K; j++)
    if (l->next[(gsize) ctx * l->K + j] == c)
      p += (1.0 - KERN_LANGUAGE_SMOOTHING) * l->w[(gsize) ctx * l->K + j];
  return p;
}

/* Draws every context's support (distinct symbols, a partial shuffle) and
 * weights (Exp(1) draws, normalised). */
static void
lang_draw (KernLanguage *l, KernRng *rng)
{
  int V = l->V, K = l->K;
  g_autofree int *perm = g_new (int, V);
  for (int ctx = 0; ctx < V * V; ctx++)
    {
      for (int c = 0; c < V; c++)
        perm[c] = c;
      double sum = 0.0;
      for (int j = 0; j < K; j++)
        {
          int r = j + (int) kern_rng_below (rng, (guint64) (V - j));
          int t = perm[j];
          perm[j] = perm[r];
          perm[r] = t;
          l->next[(gsize) ctx * K + j] = perm[j];
          l->w[(gsize) ctx * K + j] = -base_log (kern_rng_uniform_pos (rng));
          sum += l->w[(gsize) ctx * K + j];
        }
      for (int j = 0; j < K; j++)
        l->w[(gsize) ctx * K + j] /= sum;
    }
}

/* The stationary law of pairs by power iteration from the uniform law:
 * pi'(b, c) = (1 - eps) sum_a pi(a, b) w_ab(c) + (eps / V) sum_a pi(a, b). */
static void
lang_stationary (KernLanguage *l)
{
  int V = l->V, K = l->K;
  gsize P = (gsize) V * V;
  g_autofree double *nxt = g_new (double, P);
  for (gsize i = 0; i < P; i++)
    l->pi[i] = 1.0 / (double) P;
  for (int round = 0; round < LANG_MAX_ROUNDS; round++)
    {
      for (int b = 0; b < V; b++)
        {
          double col = 0.0;
          for (int a = 0; a < V; a++)
            col += l->pi[a * V + b];
          for (int c = 0; c < V; c++)
            nxt[b * V + c] = col * KERN_LANGUAGE_SMOOTHING / V;
        }
      for (int a = 0; a < V; a++)
        for (int b = 0; b < V; b++)
          {
            int ctx = a * V + b;
            double m = l->pi[ctx];
            for (int j = 0; j < K; j++)
              nxt[b * V + l->next[(gsize) ctx * K + j]]
                += m * (1.0 - KERN_LANGUAGE_SMOOTHING) * l->w[(gsize) ctx * K + j];
          }
      double change = 0.0;
      for (gsize i = 0; i < P; i++)
        change += fabs (nxt[i] - l->pi[i]);
      memcpy (l->pi, nxt, P * sizeof *nxt);
      if (change < LANG_TOL)
        break;
    }
}

/* H and H(X_1 | X_0) from pi (the header's formulas). */
static void
lang_entropies (KernLanguage *l)
{
  int V = l->V;
  double H = 0.0, Hpair = 0.0, Hfirst = 0.0;
  for (int a = 0; a < V; a++)
    {
      double first = 0.0;
      for (int b = 0; b < V; b++)
        {
          int ctx = a * V + b;
          double row = 0.0;
          for (int c = 0; c < V; c++)
            {
              double p = lang_prob (l, ctx, c);
              row -= p * base_log (p);
            }
          H += l->pi[ctx] * row;
          if (l->pi[ctx] > 0)
            Hpair -= l->pi[ctx] * base_log (l->pi[ctx]);
          first += l->pi[ctx];
        }
      if (first > 0)
        Hfirst -= first * base_log (first);
    }
  l->H = H;
  l->H1 = Hpair - Hfirst;
}

/* A language of V symbols (2 <= V <= KERN_LANGUAGE_MAX_SYMBOLS) whose
 * contexts each favour `branching` symbols (1 <= branching <= V), drawn
 * from `seed`; its entropies are computed here.  Free with
 * kern_language_free(). */
KernLanguage *
kern_language_new (int V, int branching, guint64 seed)
{
  g_return_val_if_fail (V >= 2 && V <= KERN_LANGUAGE_MAX_SYMBOLS, NULL);
  g_return_val_if_fail (branching >= 1 && branching <= V, NULL);
  KernLanguage *l = g_new0 (KernLanguage, 1);
  l->V = V;
  l->K = branching;
  gsize P = (gsize) V * V;
  l->next = g_new (int, P * branching);
  l->w = g_new (double, P * branching);
  l->pi = g_new (double, P);
  KernRng rng;
  kern_rng_init (&rng, seed, KERN_RNG_STREAM_LANGUAGE);
  lang_draw (l, &rng);
  lang_stationary (l);
  lang_entropies (l);
  return l;
}

void
kern_language_free (KernLanguage *l)
{
  if (!l)
    return;
  g_free (l->next);
  g_free (l->w);
  g_free (l->pi);
  g_free (l);
}

/* The entropy rate H, nats per symbol. */
double
kern_language_entropy (const KernLanguage *l)
{
  g_return_val_if_fail (l != NULL, NAN);
  return l->H;
}

/* The least mean loss over the S predictions of a sample of S + 1
 * symbols: (H(X_1 | X_0) + (S - 1) H) / S. */
double
kern_language_floor (const KernLanguage *l, int S)
{
  g_return_val_if_fail (l != NULL && S >= 1, NAN);
  return (l->H1 + (S - 1) * l->H) / S;
}

/* One symbol after context ctx. */
static int
lang_next (const KernLanguage *l, int ctx, KernRng *rng)
{
  double u = kern_rng_uniform_pos (rng), acc = 0.0;
  for (int c = 0; c < l->V - 1; c++)
    {
      acc += lang_prob (l, ctx, c);
      if (u <= acc)
        return c;
    }
  return l->V - 1;
}

/* Writes `len` >= 2 symbols of one sequence as floats to out: the first
 * pair from pi, then the chain. */
static void
lang_sequence (const KernLanguage *l, KernRng *rng, int len, float *out)
{
  int V = l->V;
  double u = kern_rng_uniform_pos (rng), acc = 0.0;
  int ctx = V * V - 1;
  for (int i = 0; i < V * V - 1; i++)
    {
      acc += l->pi[i];
      if (u <= acc)
        {
          ctx = i;
          break;
        }
    }
  out[0] = (float) (ctx / V);
  out[1] = (float) (ctx % V);
  for (int t = 2; t < len; t++)
    {
      int c = lang_next (l, ctx, rng);
      out[t] = (float) c;
      ctx = (ctx % V) * V + c;
    }
}

/* Training and test sets of sequences of `sequence` + 1 symbols (d =
 * sequence + 1, k = V, the label the last symbol) from the language of
 * (V, branching, seed); the sequences come from the same seed's stream
 * after the language's draws, training rows first. */
void
kern_dataset_language (int n_train, int n_test, int V, int branching, int sequence,
                       guint64 seed, KernDataset **train, KernDataset **test)
{
  g_return_if_fail (n_train >= 0 && n_test >= 0 && sequence >= 1);
  g_return_if_fail (train != NULL && test != NULL);
  KernLanguage *l = kern_language_new (V, branching, seed);
  g_return_if_fail (l != NULL);
  KernRng rng;
  kern_rng_init (&rng, seed ^ G_GUINT64_CONSTANT (0x73657173), KERN_RNG_STREAM_LANGUAGE);
  int d = sequence + 1;
  KernDataset *sets[2] = { kern_dataset_new (n_train, d, V), kern_dataset_new (n_test, d, V) };
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < sets[s]->n; i++)
      {
        float *row = sets[s]->x + (gsize) i * d;
        lang_sequence (l, &rng, d, row);
        sets[s]->y[i] = (int) row[d - 1];
      }
  kern_language_free (l);
  *train = sets[0];
  *test = sets[1];
}
