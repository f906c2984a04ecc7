/*
 * test-compress.c — gradient compression ([policy] compression,
 * docs/policies.md "Gradient compression"): each compressor against its
 * definition (what it keeps, what it remembers, its bytes on the wire, QSGD
 * unbiased), and the policies using it: an all-reduce bucket becomes an
 * all-gather of the compressed blocks, priced by its formula; keeping
 * everything trains exactly as no compression does.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "comm/collectives.h"
#include "policies/compress.h"
#include "sim/run.h"
#include "config/scenario.h"
#include "tests/util.h"

static BaseValues *
values (const char *name, double ratio, gint64 bits)
{
  g_autoptr (GPtrArray) rows = g_ptr_array_new ();
  pol_keys (rows);
  BaseValues *v = base_values_new (rows);
  base_values_set_string (v, "policy.compression", name);
  base_values_set_double (v, "policy.ratio", ratio);
  base_values_set_int (v, "policy.bits", bits);
  return v;
}

/* n values of mixed magnitudes, some repeated (ties at the threshold). */
static void
fill (float *g, gsize n, guint64 seed)
{
  EngRng rng;
  eng_rng_init (&rng, seed, 0);
  for (gsize i = 0; i < n; i++)
    g[i] = (float) (eng_rng_normal (&rng) * (i % 7 == 0 ? 10 : 1));
  for (gsize i = 3; i < n; i += 11)
    g[i] = 0.5f; /* ties */
}

static int
cmp_desc (gconstpointer a, gconstpointer b)
{
  float x = *(const float *) a, y = *(const float *) b;
  return (x < y) - (x > y);
}

/* top-k: exactly k = ceil(ratio n) entries kept, the k largest magnitudes of
 * g + e; what is kept plus what is remembered is g + e, exactly. */
static void
test_top_k (void)
{
  const gsize ns[] = { 1, 10, 97, 1000 };
  const double ratios[] = { 0.01, 0.1, 0.5, 1 };
  for (gsize a = 0; a < G_N_ELEMENTS (ns); a++)
    for (gsize b = 0; b < G_N_ELEMENTS (ratios); b++)
      {
        gsize n = ns[a];
        g_autoptr (BaseValues) v = values ("top-k", ratios[b], 4);
        const PolCompressor *c = pol_compress_of (v);
        g_assert_nonnull (c);
        g_assert_true (c->feedback);
        g_autofree float *g = g_new (float, n), *e = g_new (float, n), *sum = g_new (float, n);
        g_autofree float *mag = g_new (float, n);
        fill (g, n, 1 + a);
        fill (e, n, 100 + b);
        for (gsize i = 0; i < n; i++)
          {
            e[i] *= 0.1f;
            sum[i] = g[i] + e[i];
            mag[i] = fabsf (sum[i]);
          }
        qsort (mag, n, sizeof (float), cmp_desc);
        gsize k = (gsize) CLAMP (ceil (ratios[b] * (double) n), 1.0, (double) n);
        c->apply (v, g, e, n, NULL);
        gsize nonzero = 0;
        for (gsize i = 0; i < n; i++)
          {
            g_assert_cmpfloat (g[i] + e[i], ==, sum[i]);
            g_assert_true (g[i] == 0.0f || e[i] == 0.0f);
            if (g[i] != 0.0f)
              {
                nonzero++;
                g_assert_cmpfloat (fabsf (g[i]), >=, mag[k - 1]);
              }
            else
              g_assert_cmpfloat (fabsf (e[i]), <=, mag[k - 1]);
          }
        g_assert_cmpuint (nonzero, ==, k);
        test_assert_close (c->wire_bytes (v, n), 8.0 * (double) k, 0);
      }
}

/* sign: every entry decoded as +-mean|g + e|, with the sign of g + e; the
 * memory holds the difference. */
static void
test_sign (void)
{
  const gsize n = 501;
  g_autoptr (BaseValues) v = values ("sign", 0.01, 4);
  const PolCompressor *c = pol_compress_of (v);
  g_autofree float *g = g_new (float, n), *e = g_new (float, n), *sum = g_new (float, n);
  fill (g, n, 7);
  fill (e, n, 8);
  double mean = 0;
  for (gsize i = 0; i < n; i++)
    {
      sum[i] = g[i] + e[i];
      mean += fabs (sum[i]);
    }
  mean /= (double) n;
  c->apply (v, g, e, n, NULL);
  for (gsize i = 0; i < n; i++)
    {
      test_assert_close (fabs (g[i]), mean, 1e-6);
      g_assert_true ((g[i] < 0) == (sum[i] < 0));
      /* e = v - q in floats: exact to the rounding of the larger of v, q */
      g_assert_cmpfloat (fabs (g[i] + e[i] - sum[i]), <=, 1e-6 * (fabs (sum[i]) + mean));
    }
  test_assert_close (c->wire_bytes (v, n), 4 + ceil (n / 8.0), 0);
}

/* QSGD: every entry a multiple of |g| / s with g's sign, at one of the two
 * levels around s |g_i| / |g|; unbiased: the mean of many draws is g. */
static void
test_qsgd (void)
{
  const gsize n = 64;
  const int draws = 20000;
  for (gint64 bits = 2; bits <= 8; bits += 3)
    {
      g_autoptr (BaseValues) v = values ("qsgd", 0.01, bits);
      const PolCompressor *c = pol_compress_of (v);
      g_assert_false (c->feedback);
      g_autofree float *g = g_new (float, n), *q = g_new (float, n);
      g_autofree double *mean = g_new0 (double, n);
      fill (g, n, 11);
      double norm = 0, s = ldexp (1.0, (int) bits - 1) - 1;
      for (gsize i = 0; i < n; i++)
        norm += (double) g[i] * g[i];
      norm = sqrt (norm);
      EngRng rng;
      eng_rng_init (&rng, 5, 0);
      for (int d = 0; d < draws; d++)
        {
          memcpy (q, g, n * sizeof (float));
          c->apply (v, q, NULL, n, &rng);
          for (gsize i = 0; i < n; i++)
            {
              double level = fabs (q[i]) / norm * s, r = fabs (g[i]) / norm * s;
              test_assert_close (level, round (level), 1e-4);
              g_assert_cmpfloat (round (level), >=, floor (r));
              g_assert_cmpfloat (round (level), <=, ceil (r));
              g_assert_true (q[i] == 0 || (q[i] < 0) == (g[i] < 0));
              mean[i] += q[i];
            }
        }
      for (gsize i = 0; i < n; i++)
        {
          /* the draws' spread: at most one level (norm / s) */
          double tol = 5 * norm / s / sqrt ((double) draws);
          g_assert_cmpfloat (fabs (mean[i] / draws - g[i]), <, tol);
        }
      test_assert_close (c->wire_bytes (v, n), 4 + n * (double) bits / 8, 0);
    }
}

static const char cluster[] =
  "[scenario]\nname = t\nseed = 5\niterations = 10\n"
  "[cluster]\nworkers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 1ms\n"
  "[network]\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = allreduce\nalgorithm = ring\nbucket_size = 0\n";

#define P_FLOATS (15 * 4 + 4)

/* Fixed step time, contention none, one bucket: an iteration lasts T +
 * (ring all-gather of W blocks of the compressor's bytes) + u. */
static void
test_allgather_closed_form (void)
{
  const char *cmps[] = { "top-k", "qsgd", "sign" };
  for (gsize c = 0; c < G_N_ELEMENTS (cmps); c++)
    for (int W = 2; W <= 7; W += 5)
      {
        g_autofree char *s1 = g_strdup_printf ("policy.compression=%s", cmps[c]);
        g_autofree char *s2 = g_strdup_printf ("cluster.workers=%d", W);
        const char *sets[] = { s1, s2, NULL };
        SimRunSummary sum;
        SimConfig *cfg = NULL;
        test_run_scenario_text (cluster, sets, NULL, &sum, &cfg);
        g_autoptr (BaseValues) v = values (cmps[c], 0.01, 4);
        double wire = pol_compress_of (v)->wire_bytes (v, P_FLOATS);
        const double T = 1e-3, alpha = 2 * 20e-6, beta = 8 / 1e9;
        double C = comm_cost (comm_lookup ("ring"), COMM_ALLGATHER, W,
                                  (gsize) (W * wire), 1, alpha, beta, 0);
        test_assert_close (C, (W - 1) * (alpha + wire * beta), 1e-12);
        double u = kern_sgd_flops (P_FLOATS) / (1e9 * 0.5);
        test_assert_close (sum.sim_time, 10 * (T + C + u), 1e-9);
        sim_config_free (cfg);
      }
}

/* Keeping everything (top-k with ratio 1, no memory left) is no
 * compression: all-reduce and the parameter server train the same model
 * as without. */
static void
test_keep_all_is_none (void)
{
  const char *kinds[] = { "policy.kind=allreduce", "policy.kind=ps" };
  for (gsize k = 0; k < G_N_ELEMENTS (kinds); k++)
    {
      const char *none[] = { kinds[k], "scenario.iterations=30", NULL };
      const char *all[] = { kinds[k], "scenario.iterations=30", "policy.compression=top-k",
                            "policy.ratio=1", NULL };
      SimRunSummary a, b;
      test_run_scenario_text (cluster, none, NULL, &a, NULL);
      test_run_scenario_text (cluster, all, NULL, &b, NULL);
      test_assert_close (b.final_loss, a.final_loss, 1e-6);
      g_assert_cmpfloat (a.final_loss, <, log (4.0));
      /* 1% of the entries: 8 bytes of the 256 of each gradient */
      const char *few[] = { kinds[k], "scenario.iterations=30", "policy.compression=top-k", NULL };
      SimRunSummary c;
      test_run_scenario_text (cluster, few, NULL, &c, NULL);
      g_assert_cmpfloat (c.sim_time, <, a.sim_time);
      g_assert_cmpfloat (c.final_loss, !=, a.final_loss);
    }
}

/* Compression only where it is modelled, and its keys only with it. */
static void
test_keys_refused (void)
{
  const char *bad[] = {
    "kind = local-sgd\ncompression = sign\n",
    "kind = gossip\ncompression = top-k\n",
    "kind = allreduce\ncompression = sign\nratio = 0.1\n",
    "kind = ps\ncompression = top-k\nbits = 8\n",
  };
  const char *key[] = { "[policy] compression", "[policy] compression", "[policy] ratio",
                        "[policy] bits" };
  const char *head = "[cluster]\nworkers = 4\n[model]\nfeatures = 15\nclasses = 4\n[policy]\n";
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *text = g_strconcat (head, bad[i], NULL);
      g_autofree char *msg = test_load_scenario_error (text);
      g_assert_nonnull (strstr (msg, key[i]));
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/compress/top-k", test_top_k);
  g_test_add_func ("/compress/sign", test_sign);
  g_test_add_func ("/compress/qsgd", test_qsgd);
  g_test_add_func ("/compress/allreduce-closed-form", test_allgather_closed_form);
  g_test_add_func ("/compress/keep-all-is-none", test_keep_all_is_none);
  g_test_add_func ("/compress/keys-refused", test_keys_refused);
  return g_test_run ();
}
