/*
 * test-collectives.c — unit tests of the collectives (policies/collectives.c).
 *
 * Every run is on a star of p hosts built directly (rank r on host r), so a
 * route has latency alpha = 2 l and bandwidth B: beta = 1 / B s/byte.  With
 * contention = none the simulated time must equal both pol_coll_cost() and
 * the closed form written out here (docs/collectives.md), to 1e-9 relative.
 * N = n * ELEM bytes is the whole buffer, gamma the reduction cost (s/byte).
 * Data: buffers hold seeded uniform values in [-1, 1); sums are checked
 * against a double-precision sum to 1e-5 of the sum of magnitudes, and every
 * rank must end with bit-identical buffers.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "policies/collectives.h"
#include "policies/policy.h"
#include "tests/util.h"

#define LINK_BW   1.25e9           /* bytes/s (10 Gb/s) */
#define LINK_LAT  5e-6             /* s per link */
#define ALPHA     (2 * LINK_LAT)   /* s, route latency on a star */
#define BETA      (1 / LINK_BW)    /* s/byte */
#define ELEM      4.0              /* bytes per float on the wire */
#define GAMMA     2e-10            /* s per byte reduced */
#define N_EVEN    1680             /* floats: divisible by 1..8 and 16 */
#define N_ODD     1681             /* floats: divisible by none of them */

static const int ps[] = { 2, 3, 4, 5, 6, 7, 8, 16 };

/* Asserts that time `got` equals `want` to 1e-9 relative (exactly at 0). */
#define assert_time(got, want) \
  g_assert_cmpfloat_with_epsilon ((got), (want), \
                                  1e-9 * fabs ((double) (want)) + 1e-300)

/* One collective run on its own engine and star network. */
typedef struct {
  EngSim *sim;
  NetNetwork *net;
  int p;
  gsize n;
  int *hosts;       /* (p) rank r on host r */
  float **bufs;     /* (p) buffers of n floats */
  float **orig;     /* (p) copies of the inputs */
  int n_done;       /* done callbacks fired */
  double t_done;    /* simulated time of the (last) done */
} Run;

static void
on_done (EngSim *sim, gpointer ctx, gpointer data)
{
  Run *run = ctx;

  g_assert_true (sim == run->sim);
  g_assert_true (data == run);
  run->n_done++;
  run->t_done = eng_sim_now (sim);
}

static Run *
run_new (int p, gsize n, NetContention contention)
{
  Run *run = g_new0 (Run, 1);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  NetTopologyParams tp;
  g_autoptr (GError) error = NULL;

  for (int h = 0; h < p; h++)
    g_ptr_array_add (names, g_strdup_printf ("h%d", h));
  tp.n_hosts = p;
  tp.names = (const char *const *) names->pdata;
  tp.bandwidth = LINK_BW;
  tp.latency = LINK_LAT;
  run->sim = eng_sim_new ();
  run->net = net_network_new (run->sim, contention);
  g_assert_true (net_topology_star.build (run->net, &tp, &error));
  g_assert_no_error (error);
  run->p = p;
  run->n = n;
  run->hosts = g_new (int, p);
  run->bufs = g_new (float *, p);
  run->orig = g_new (float *, p);
  for (int r = 0; r < p; r++)
    {
      EngRng rng;

      eng_rng_init (&rng, 42, (guint64) r);
      run->hosts[r] = r;
      run->bufs[r] = g_new (float, MAX (n, 1));
      for (gsize i = 0; i < n; i++)
        run->bufs[r][i] = (float) (2 * eng_rng_uniform (&rng) - 1);
      run->orig[r] = g_memdup2 (run->bufs[r], sizeof (float) * MAX (n, 1));
    }
  return run;
}

static void
run_free (Run *run)
{
  for (int r = 0; r < run->p; r++)
    {
      g_free (run->bufs[r]);
      g_free (run->orig[r]);
    }
  g_free (run->bufs);
  g_free (run->orig);
  g_free (run->hosts);
  net_network_free (run->net);
  eng_sim_free (run->sim);
  g_free (run);
}

/* Runs one collective to the end; asserts done fired exactly once, after
 * start returned, with nothing left pending.  Returns the elapsed time (s). */
static double
run_coll (Run *run, const char *alg_name, PolCollKind kind, gboolean data,
          double gamma, int root)
{
  const PolCollAlgorithm *alg = pol_coll_lookup (alg_name);
  PolCollArgs a = { 0 };
  g_autoptr (GError) error = NULL;
  double t0 = eng_sim_now (run->sim);

  g_assert_nonnull (alg);
  a.sim = run->sim;
  a.net = run->net;
  a.p = run->p;
  a.hosts = run->hosts;
  a.bufs = data ? run->bufs : NULL;
  a.n = run->n;
  a.elem_bytes = ELEM;
  a.reduce_per_byte = gamma;
  a.root = root;
  a.tag = 7;
  g_assert_true (pol_coll_start (alg, &a, kind, on_done, run, run, &error));
  g_assert_no_error (error);
  g_assert_cmpint (run->n_done, ==, 0);
  eng_run (run->sim, INFINITY);
  g_assert_cmpint (run->n_done, ==, 1);
  g_assert_cmpuint (eng_sim_pending (run->sim), ==, 0);
  g_assert_cmpuint (net_network_active (run->net), ==, 0);
  return run->t_done - t0;
}

static int
log2_ceil (int p)
{
  return (int) ceil (log2 ((double) p) - 1e-12);
}

static int
pow2_floor (int p)
{
  return 1 << (int) floor (log2 ((double) p) + 1e-12);
}

/* The closed forms of all-reduce with contention = none (docs/collectives.md,
 * tests/util.c) for N bytes on this file's star. */
static double
closed_allreduce (const char *alg, int p, double N, double gamma)
{
  return test_allreduce_closed_form (alg, p, N, ALPHA, BETA, gamma);
}

/* Every rank holds the same buffer, the sum of the inputs. */
static void
assert_allreduce_data (Run *run)
{
  for (gsize i = 0; i < run->n; i++)
    {
      double sum = 0, mag = 0;

      for (int r = 0; r < run->p; r++)
        {
          sum += run->orig[r][i];
          mag += fabs (run->orig[r][i]);
        }
      g_assert_cmpfloat_with_epsilon (run->bufs[0][i], sum,
                                      1e-5 * mag + 1e-30);
    }
  for (int r = 1; r < run->p; r++)
    g_assert_cmpmem (run->bufs[r], run->n * sizeof (float), run->bufs[0],
                     run->n * sizeof (float));
}

static void
test_allreduce_none (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (int g = 0; g < 2; g++)
      {
        int p = ps[i];
        double gamma = g ? GAMMA : 0;
        Run *run = run_new (p, N_EVEN, NET_CONTENTION_NONE);
        double t = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, gamma, p / 2);
        double N = N_EVEN * ELEM;

        assert_time (t, pol_coll_cost (pol_coll_lookup (alg),
                                       POL_COLL_ALLREDUCE, p, N_EVEN, ELEM,
                                       ALPHA, BETA, gamma));
        assert_time (t, closed_allreduce (alg, p, N, gamma));
        assert_allreduce_data (run);
        run_free (run);
      }
}

/* n not divisible by p: the ring's blocks differ by one element and its time
 * is the closed form with n/p replaced by ceil(n/p); tree and naive do not
 * cut the buffer; halving-doubling follows its recurrence (pol_coll_cost). */
static void
test_allreduce_uneven (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i];
      Run *run = run_new (p, N_ODD, NET_CONTENTION_NONE);
      double t = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, GAMMA, 0);
      double N = N_ODD * ELEM;
      double M = ((N_ODD + p - 1) / p) * ELEM;  /* largest block, bytes */

      assert_time (t, pol_coll_cost (pol_coll_lookup (alg),
                                     POL_COLL_ALLREDUCE, p, N_ODD, ELEM,
                                     ALPHA, BETA, GAMMA));
      if (strcmp (alg, "ring") == 0)
        assert_time (t, 2.0 * (p - 1) * ALPHA + 2.0 * (p - 1) * M * BETA
                        + (p - 1) * M * GAMMA);
      else if (strcmp (alg, "halving-doubling") != 0)
        assert_time (t, closed_allreduce (alg, p, N, GAMMA));
      assert_allreduce_data (run);
      run_free (run);
    }
  /* Fewer elements than ranks: some blocks are empty (0-byte transfers still
   * cost alpha). */
  {
    Run *run = run_new (7, 3, NET_CONTENTION_NONE);
    double t = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, GAMMA, 0);

    assert_time (t, pol_coll_cost (pol_coll_lookup (alg), POL_COLL_ALLREDUCE,
                                   7, 3, ELEM, ALPHA, BETA, GAMMA));
    assert_allreduce_data (run);
    run_free (run);
  }
}

/* With max-min sharing on a star, ring, tree and halving-doubling (p a power
 * of two) never put two flows on one link at once, so the contention-free
 * formula still holds; naive's gather is an incast of p-1 flows on the
 * root's downlink and its scatter p-1 flows on its uplink:
 * 2 alpha + 2 (p-1) N beta + (p-1) N gamma. */
static void
test_allreduce_maxmin (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i];
      Run *run;
      double t, N = N_EVEN * ELEM;

      if (strcmp (alg, "halving-doubling") == 0 && pow2_floor (p) != p)
        continue;
      run = run_new (p, N_EVEN, NET_CONTENTION_MAXMIN);
      t = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, GAMMA, 1);
      if (strcmp (alg, "naive") == 0)
        assert_time (t, 2 * ALPHA + 2.0 * (p - 1) * N * BETA
                        + (p - 1) * N * GAMMA);
      else
        assert_time (t, closed_allreduce (alg, p, N, GAMMA));
      assert_allreduce_data (run);
      run_free (run);
    }
}

/* Reduction time enters as exactly the formula's gamma term. */
static void
test_reduce_cost (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i], pp = pow2_floor (p);
      double N = N_EVEN * ELEM, term, t0, t1;
      Run *run = run_new (p, N_EVEN, NET_CONTENTION_NONE);

      t0 = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, 0, 0);
      run_free (run);
      run = run_new (p, N_EVEN, NET_CONTENTION_NONE);
      t1 = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, GAMMA, 0);
      run_free (run);
      if (strcmp (alg, "ring") == 0)
        term = (double) (p - 1) / p * N * GAMMA;
      else if (strcmp (alg, "tree") == 0)
        term = log2_ceil (p) * N * GAMMA;
      else if (strcmp (alg, "naive") == 0)
        term = (p - 1) * N * GAMMA;
      else if (pp == p)
        term = (double) (p - 1) / p * N * GAMMA;
      else
        term = (1 + (double) (pp - 1) / pp) * N * GAMMA;
      g_assert_cmpfloat_with_epsilon (t1 - t0, term, 1e-9 * t1);
    }
}

/* bufs = NULL moves no data but takes the same time. */
static void
test_timing_only (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (int c = 0; c < 2; c++)
      {
        int p = ps[i];
        NetContention cont = c ? NET_CONTENTION_MAXMIN : NET_CONTENTION_NONE;
        Run *a = run_new (p, N_ODD, cont), *b = run_new (p, N_ODD, cont);
        double ta = run_coll (a, alg, POL_COLL_ALLREDUCE, TRUE, GAMMA, 0);
        double tb = run_coll (b, alg, POL_COLL_ALLREDUCE, FALSE, GAMMA, 0);

        g_assert_cmpfloat (ta, ==, tb);
        for (int r = 0; r < p; r++)  /* untouched */
          g_assert_cmpmem (b->bufs[r], N_ODD * sizeof (float), b->orig[r],
                           N_ODD * sizeof (float));
        run_free (a);
        run_free (b);
      }
}

static void
nothing (EngSim *sim G_GNUC_UNUSED, gpointer ctx G_GNUC_UNUSED, gpointer data G_GNUC_UNUSED)
{
}

/* p = 1 completes at once, in an event at the current time. */
static void
test_p1 (gconstpointer alg_data)
{
  const char *alg = alg_data;
  Run *run = run_new (1, N_ODD, NET_CONTENTION_NONE);
  double t;

  eng_schedule (run->sim, 0.25, nothing, NULL, NULL);
  eng_run (run->sim, INFINITY);
  t = run_coll (run, alg, POL_COLL_ALLREDUCE, TRUE, GAMMA, 0);
  g_assert_cmpfloat (t, ==, 0);
  g_assert_cmpfloat (run->t_done, ==, 0.25);
  g_assert_cmpmem (run->bufs[0], N_ODD * sizeof (float), run->orig[0],
                   N_ODD * sizeof (float));
  g_assert_cmpfloat (pol_coll_cost (pol_coll_lookup (alg), POL_COLL_ALLREDUCE,
                                    1, N_ODD, ELEM, ALPHA, BETA, GAMMA),
                     ==, 0);
  run_free (run);
}

/* Reduce-scatter: rank r ends with the sum of block r (pol_shard_bounds). */
static void
test_reduce_scatter (gconstpointer alg_data)
{
  const char *alg = alg_data;
  const gsize ns[] = { N_EVEN, N_ODD };

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
      {
        int p = ps[i];
        gsize n = ns[k];
        Run *run = run_new (p, n, NET_CONTENTION_NONE);
        double t = run_coll (run, alg, POL_COLL_REDUCE_SCATTER, TRUE, GAMMA,
                             0);
        double N = (double) n * ELEM;
        double M = (double) ((n + p - 1) / p) * ELEM; /* largest block */

        assert_time (t, pol_coll_cost (pol_coll_lookup (alg),
                                       POL_COLL_REDUCE_SCATTER, p, n, ELEM,
                                       ALPHA, BETA, GAMMA));
        if (strcmp (alg, "ring") == 0)
          assert_time (t, (p - 1) * (ALPHA + M * (BETA + GAMMA)));
        else if (pow2_floor (p) == p && n % p == 0)
          assert_time (t, log2 (p) * ALPHA
                          + (double) (p - 1) / p * N * (BETA + GAMMA));
        for (int r = 0; r < p; r++)
          {
            gsize lo, hi;

            pol_shard_bounds (n, p, r, &lo, &hi);
            for (gsize e = lo; e < hi; e++)
              {
                double sum = 0, mag = 0;

                for (int q = 0; q < p; q++)
                  {
                    sum += run->orig[q][e];
                    mag += fabs (run->orig[q][e]);
                  }
                g_assert_cmpfloat_with_epsilon (run->bufs[r][e], sum,
                                                1e-5 * mag + 1e-30);
              }
          }
        run_free (run);
      }
}

/* All-gather: everyone ends with block b of rank b, for every b. */
static void
test_allgather (gconstpointer alg_data)
{
  const char *alg = alg_data;
  const gsize ns[] = { N_EVEN, N_ODD };

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
      {
        int p = ps[i];
        gsize n = ns[k];
        Run *run = run_new (p, n, NET_CONTENTION_NONE);
        double t = run_coll (run, alg, POL_COLL_ALLGATHER, TRUE, GAMMA, 0);
        double N = (double) n * ELEM;
        double M = (double) ((n + p - 1) / p) * ELEM;

        assert_time (t, pol_coll_cost (pol_coll_lookup (alg),
                                       POL_COLL_ALLGATHER, p, n, ELEM, ALPHA,
                                       BETA, GAMMA));
        if (strcmp (alg, "ring") == 0)
          assert_time (t, (p - 1) * (ALPHA + M * BETA));
        else if (pow2_floor (p) == p && n % p == 0)
          assert_time (t, log2 (p) * ALPHA + (double) (p - 1) / p * N * BETA);
        for (int r = 0; r < p; r++)
          for (int b = 0; b < p; b++)
            {
              gsize lo, hi;

              pol_shard_bounds (n, p, b, &lo, &hi);
              g_assert_cmpmem (run->bufs[r] + lo, (hi - lo) * sizeof (float),
                               run->orig[b] + lo, (hi - lo) * sizeof (float));
            }
        run_free (run);
      }
}

/* Broadcast from root 2 (tree: ceil(lg p) one-port rounds; naive: one
 * direct send each; ring: a relay of p-1 hops). */
static void
test_broadcast (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i], root = 2 % p;
      Run *run = run_new (p, N_ODD, NET_CONTENTION_NONE);
      double t = run_coll (run, alg, POL_COLL_BROADCAST, TRUE, GAMMA, root);
      double N = N_ODD * ELEM, want;

      if (strcmp (alg, "tree") == 0)
        want = log2_ceil (p) * (ALPHA + N * BETA);
      else if (strcmp (alg, "naive") == 0)
        want = ALPHA + N * BETA;
      else
        want = (p - 1) * (ALPHA + N * BETA);
      assert_time (t, want);
      assert_time (t, pol_coll_cost (pol_coll_lookup (alg),
                                     POL_COLL_BROADCAST, p, N_ODD, ELEM,
                                     ALPHA, BETA, GAMMA));
      for (int r = 0; r < p; r++)
        g_assert_cmpmem (run->bufs[r], N_ODD * sizeof (float),
                         run->orig[root], N_ODD * sizeof (float));
      run_free (run);
    }
}

/* Kinds an algorithm does not do fail with an error and schedule nothing. */
static void
test_unsupported (void)
{
  static const struct {
    const char *alg;
    PolCollKind kind;
  } cases[] = {
    { "tree", POL_COLL_REDUCE_SCATTER }, { "tree", POL_COLL_ALLGATHER },
    { "tree", POL_COLL_SCATTER }, { "tree", POL_COLL_GATHER },
    { "tree", POL_COLL_ALLTOALL },
    { "ring", POL_COLL_REDUCE }, { "ring", POL_COLL_SCATTER },
    { "ring", POL_COLL_GATHER }, { "ring", POL_COLL_ALLTOALL },
    { "halving-doubling", POL_COLL_BROADCAST },
    { "halving-doubling", POL_COLL_REDUCE },
    { "halving-doubling", POL_COLL_SCATTER },
    { "halving-doubling", POL_COLL_GATHER },
    { "halving-doubling", POL_COLL_ALLTOALL },
  };
  const int pvals[] = { 1, 4 };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    for (guint k = 0; k < G_N_ELEMENTS (pvals); k++)
      {
        Run *run = run_new (pvals[k], 8, NET_CONTENTION_NONE);
        const PolCollAlgorithm *alg = pol_coll_lookup (cases[i].alg);
        PolCollArgs a = { run->sim, run->net, run->p, run->hosts,
                          run->bufs, run->n, ELEM, 0, 0, 0 };
        g_autoptr (GError) error = NULL;

        g_assert_false (pol_coll_start (alg, &a, cases[i].kind, on_done, run,
                                        run, &error));
        g_assert_error (error, POL_COLL_ERROR, POL_COLL_ERROR_UNSUPPORTED);
        g_assert_cmpuint (eng_sim_pending (run->sim), ==, 0);
        g_assert_true (isnan (pol_coll_cost (alg, cases[i].kind, 4, 8, ELEM,
                                             ALPHA, BETA, 0)));
        run_free (run);
      }
}

static void
test_registry (void)
{
  const char *names[] = { "ring", "tree", "halving-doubling", "naive" };
  const PolCollAlgorithm *const *all = pol_coll_all ();
  int n = 0;

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const PolCollAlgorithm *alg = pol_coll_lookup (names[i]);

      g_assert_nonnull (alg);
      g_assert_cmpstr (alg->name, ==, names[i]);
      g_assert_true (alg->description && *alg->description);
      g_assert_true (alg->source && *alg->source);
    }
  while (all[n])
    n++;
  g_assert_cmpint (n, ==, G_N_ELEMENTS (names));
  g_assert_null (pol_coll_lookup ("butterfly"));
}

/* Two collectives at once on the same network both complete, each calling
 * its own done once. */
static void
test_concurrent (void)
{
  Run *run = run_new (4, N_EVEN, NET_CONTENTION_MAXMIN);
  Run other = *run;
  PolCollArgs a = { run->sim, run->net, 4, run->hosts, NULL, N_EVEN, ELEM,
                    0, 0, 1 };
  g_autoptr (GError) error = NULL;

  other.n_done = 0;
  g_assert_true (pol_coll_start (pol_coll_lookup ("ring"), &a,
                                 POL_COLL_ALLREDUCE, on_done, run, run,
                                 &error));
  g_assert_true (pol_coll_start (pol_coll_lookup ("tree"), &a,
                                 POL_COLL_ALLREDUCE, on_done, &other, &other,
                                 &error));
  g_assert_no_error (error);
  eng_run (run->sim, INFINITY);
  g_assert_cmpint (run->n_done, ==, 1);
  g_assert_cmpint (other.n_done, ==, 1);
  g_assert_cmpuint (net_network_active (run->net), ==, 0);
  run_free (run);
}

/* The executor's work per transfer does not grow with p, and only stored
 * programs take memory per step (PolCollStats).  A transfer costs the
 * executor three looks at a rank's current step: the send, and the receive
 * before and after its message arrives; local steps and ranks with nothing
 * to do add at most one per rank.  (Before ranks were woken exactly, a rank
 * whose message had not arrived ran its sender, which ran its own, around
 * the ring: p + 2 looks per transfer of ring all-reduce, 10 at p = 8.)
 * Ring, tree and halving-doubling generate their steps and store none;
 * naive stores 2p steps on the root and 2 on each other rank. */
static void
test_work_bound (void)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive" };
  const int pvals[] = { 8, 64, 256 };

  for (guint i = 0; i < G_N_ELEMENTS (algs); i++)
    for (guint k = 0; k < G_N_ELEMENTS (pvals); k++)
      for (int g = 0; g < 2; g++)
        {
          int p = pvals[k];
          Run *run = run_new (p, 4 * (gsize) p + 1, NET_CONTENTION_NONE);
          PolCollStats a, b;
          guint64 transfers, examined;

          pol_coll_stats (&a);
          run_coll (run, algs[i], POL_COLL_ALLREDUCE, FALSE, g ? GAMMA : 0,
                    p / 2);
          pol_coll_stats (&b);
          transfers = b.transfers - a.transfers;
          examined = b.examined - a.examined;
          g_assert_cmpuint (b.collectives - a.collectives, ==, 1);
          g_assert_cmpuint (transfers, >=, (guint64) p - 1);
          if (strcmp (algs[i], "ring") == 0)
            {
              g_assert_cmpuint (transfers, ==, 2 * (guint64) p * (p - 1));
              g_assert_cmpuint (examined, <=, 3 * transfers);
            }
          else
            g_assert_cmpuint (examined, <=, 3 * transfers + (guint64) p);
          if (strcmp (algs[i], "naive") == 0)
            g_assert_cmpuint (b.stored_steps - a.stored_steps, ==,
                              4 * (guint64) p - 2);
          else
            g_assert_cmpuint (b.stored_steps - a.stored_steps, ==, 0);
          run_free (run);
        }
}

/* --- Every operation, against its definition ----------------------------- */

/* Bytes of block b of pol_shard_bounds (n, p). */
static double
block_bytes (gsize n, int p, int b)
{
  gsize lo, hi;

  pol_shard_bounds (n, p, b, &lo, &hi);
  return (double) (hi - lo) * ELEM;
}

/* The largest block a rank other than the root holds (bytes). */
static double
largest_other_block (gsize n, int p, int root)
{
  double m = 0;

  for (int b = 0; b < p; b++)
    if (b != root)
      m = MAX (m, block_bytes (n, p, b));
  return m;
}

/* Asserts a == the sum over ranks of element e of the inputs. */
static void
assert_sum_at (Run *run, float a, gsize e)
{
  double sum = 0, mag = 0;

  for (int q = 0; q < run->p; q++)
    {
      sum += run->orig[q][e];
      mag += fabs (run->orig[q][e]);
    }
  g_assert_cmpfloat_with_epsilon (a, sum, 1e-5 * mag + 1e-30);
}

/* Asserts rank r's elements [lo, hi) equal rank q's inputs at [qlo, ...). */
static void
assert_copied (Run *run, int r, gsize lo, gsize hi, int q, gsize qlo)
{
  g_assert_cmpmem (run->bufs[r] + lo, (hi - lo) * sizeof (float),
                   run->orig[q] + qlo, (hi - lo) * sizeof (float));
}

/* Each operation's definition (collectives.h), element by element. */
static void
assert_operation (Run *run, PolCollKind kind, int root)
{
  int p = run->p;
  gsize n = run->n, c = n / (gsize) p;

  for (int r = 0; r < p; r++)
    for (int b = 0; b < p; b++)
      {
        gsize lo, hi;

        pol_shard_bounds (n, p, b, &lo, &hi);
        switch (kind)
          {
          case POL_COLL_REDUCE:
            for (gsize e = lo; r == root && e < hi; e++)
              assert_sum_at (run, run->bufs[r][e], e);
            break;
          case POL_COLL_SCATTER:  /* block r from the root, the rest kept */
            assert_copied (run, r, lo, hi, b == r ? root : r, lo);
            break;
          case POL_COLL_GATHER:   /* the root's block b from rank b */
            assert_copied (run, r, lo, hi, r == root ? b : r, lo);
            break;
          case POL_COLL_ALLTOALL: /* a transpose of the blocks of c */
            assert_copied (run, r, (gsize) b * c, (gsize) (b + 1) * c, b,
                           (gsize) r * c);
            if (b == 0)
              assert_copied (run, r, c * (gsize) p, n, r, c * (gsize) p);
            break;
          case POL_COLL_ALLGATHER:
            assert_copied (run, r, lo, hi, b, lo);
            break;
          case POL_COLL_BROADCAST:
            assert_copied (run, r, lo, hi, root, lo);
            break;
          case POL_COLL_REDUCE_SCATTER:
            for (gsize e = lo; b == r && e < hi; e++)
              assert_sum_at (run, run->bufs[r][e], e);
            break;
          case POL_COLL_ALLREDUCE:
            for (gsize e = lo; e < hi; e++)
              assert_sum_at (run, run->bufs[r][e], e);
            break;
          }
      }
}

/* pol_coll_check agrees with assert_operation, and finds one element
 * changed (a copy by one ulp, a sum by 1) in a part the definition fixes:
 * the last element (of the transposed blocks, for all-to-all) of the
 * root's buffer, or of its block's owner for reduce-scatter and scatter. */
static void
assert_checked (Run *run, PolCollKind kind, int root)
{
  int bad_rank = -1, r = root;
  gsize bad_elem = 0, e;
  float keep;

  g_assert_true (pol_coll_check (kind, run->p, run->n, root,
                                 (const float *const *) run->orig,
                                 (const float *const *) run->bufs,
                                 &bad_rank, &bad_elem));
  if (run->n == 0 || (kind == POL_COLL_ALLTOALL && run->n < (gsize) run->p))
    return;
  e = run->n - 1;
  if (kind == POL_COLL_REDUCE_SCATTER || kind == POL_COLL_SCATTER)
    for (int b = 0; b < run->p; b++)  /* the owner of element e */
      {
        gsize lo, hi;

        pol_shard_bounds (run->n, run->p, b, &lo, &hi);
        if (lo <= e && e < hi)
          r = b;
      }
  if (kind == POL_COLL_ALLTOALL)
    e = (run->n / run->p) * run->p - 1;
  keep = run->bufs[r][e];
  if (kind == POL_COLL_REDUCE || kind == POL_COLL_REDUCE_SCATTER
      || kind == POL_COLL_ALLREDUCE)
    run->bufs[r][e] = keep + 1;   /* far beyond the sums' tolerance */
  else
    run->bufs[r][e] = nextafterf (keep, INFINITY);
  g_assert_false (pol_coll_check (kind, run->p, run->n, root,
                                  (const float *const *) run->orig,
                                  (const float *const *) run->bufs,
                                  &bad_rank, &bad_elem));
  g_assert_cmpint (bad_rank, ==, r);
  g_assert_cmpuint (bad_elem, ==, e);
  run->bufs[r][e] = keep;
}

/* The naive (driver) closed forms with contention = none (docs/
 * collectives.md, "naive"), M the largest block of a rank other than the
 * root, C = floor(n/p) floats. */
static double
closed_naive (PolCollKind kind, int p, gsize n, int root, double gamma)
{
  double N = (double) n * ELEM, M = largest_other_block (n, p, root);
  double C = (double) (n / (gsize) p) * ELEM;
  double reduce = ALPHA + N * BETA + (p - 1) * N * gamma;

  switch (kind)
    {
    case POL_COLL_ALLREDUCE:      return reduce + ALPHA + N * BETA;
    case POL_COLL_REDUCE:         return reduce;
    case POL_COLL_REDUCE_SCATTER: return reduce + ALPHA + M * BETA;
    case POL_COLL_BROADCAST:      return ALPHA + N * BETA;
    case POL_COLL_SCATTER:
    case POL_COLL_GATHER:         return ALPHA + M * BETA;
    case POL_COLL_ALLGATHER:      return 2 * ALPHA + M * BETA + N * BETA;
    case POL_COLL_ALLTOALL:       return ALPHA + C * BETA;
    }
  return NAN;
}

/* Every kind of naive, and reduce of tree, for p = 2..16, roots 0 and 1,
 * an even and an odd n: data against the definition, time against the
 * closed form and against pol_coll_cost where its largest block is the
 * one a non-root rank holds. */
static void
test_operations (void)
{
  const gsize ns[] = { N_EVEN, N_ODD, 3 };

  for (int kind = 0; kind <= POL_COLL_N_KINDS; kind++)
    for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
      for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
        for (int root = 0; root < 2; root++)
          {
            gboolean tree = kind == POL_COLL_N_KINDS;
            PolCollKind kd = tree ? POL_COLL_REDUCE : (PolCollKind) kind;
            int p = ps[i];
            gsize n = ns[k];
            Run *run = run_new (p, n, NET_CONTENTION_NONE);
            const char *alg = tree ? "tree" : "naive";
            double t = run_coll (run, alg, kd, TRUE, GAMMA, root);
            double N = (double) n * ELEM, L = log2_ceil (p);
            double M = (double) ((n + (gsize) p - 1) / (gsize) p) * ELEM;

            assert_operation (run, kd, root);
            assert_checked (run, kd, root);
            if (tree)
              assert_time (t, L * (ALPHA + N * BETA) + L * N * GAMMA);
            else
              assert_time (t, closed_naive (kd, p, n, root, GAMMA));
            if (tree || largest_other_block (n, p, root) == M)
              assert_time (t, pol_coll_cost (pol_coll_lookup (alg), kd, p, n,
                                             ELEM, ALPHA, BETA, GAMMA));
            run_free (run);
          }
}

/* With max-min on the star, naive's gather is an incast on the root's
 * downlink, which stays saturated: alpha + (N - root's block) beta; in
 * all-to-all every uplink and downlink carries p-1 equal blocks at once:
 * alpha + (p-1) C beta. */
static void
test_operations_maxmin (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i], root = 1;
      double N = N_ODD * ELEM, C = (double) (N_ODD / p) * ELEM;
      Run *run = run_new (p, N_ODD, NET_CONTENTION_MAXMIN);
      double t = run_coll (run, "naive", POL_COLL_GATHER, TRUE, 0, root);

      assert_time (t, ALPHA + (N - block_bytes (N_ODD, p, root)) * BETA);
      assert_operation (run, POL_COLL_GATHER, root);
      run_free (run);
      run = run_new (p, N_ODD, NET_CONTENTION_MAXMIN);
      t = run_coll (run, "naive", POL_COLL_ALLTOALL, TRUE, 0, 0);
      assert_time (t, ALPHA + (p - 1) * C * BETA);
      assert_operation (run, POL_COLL_ALLTOALL, 0);
      run_free (run);
    }
}

int
main (int argc, char **argv)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive" };

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/collectives/registry", test_registry);
  g_test_add_func ("/collectives/unsupported", test_unsupported);
  g_test_add_func ("/collectives/concurrent", test_concurrent);
  g_test_add_func ("/collectives/work-bound", test_work_bound);
  g_test_add_func ("/collectives/operations", test_operations);
  g_test_add_func ("/collectives/operations/maxmin", test_operations_maxmin);
  for (guint i = 0; i < G_N_ELEMENTS (algs); i++)
    {
      const char *a = algs[i];
      g_autofree char *p1 = g_strdup_printf ("/collectives/%s/p1", a);
      g_autofree char *none = g_strdup_printf ("/collectives/%s/allreduce/none", a);
      g_autofree char *uneven = g_strdup_printf ("/collectives/%s/allreduce/uneven", a);
      g_autofree char *maxmin = g_strdup_printf ("/collectives/%s/allreduce/maxmin", a);
      g_autofree char *red = g_strdup_printf ("/collectives/%s/allreduce/reduce-cost", a);
      g_autofree char *tonly = g_strdup_printf ("/collectives/%s/allreduce/timing-only", a);

      g_test_add_data_func (p1, a, test_p1);
      g_test_add_data_func (none, a, test_allreduce_none);
      g_test_add_data_func (uneven, a, test_allreduce_uneven);
      g_test_add_data_func (maxmin, a, test_allreduce_maxmin);
      g_test_add_data_func (red, a, test_reduce_cost);
      g_test_add_data_func (tonly, a, test_timing_only);
    }
  g_test_add_data_func ("/collectives/ring/reduce-scatter", "ring",
                        test_reduce_scatter);
  g_test_add_data_func ("/collectives/halving-doubling/reduce-scatter",
                        "halving-doubling", test_reduce_scatter);
  g_test_add_data_func ("/collectives/ring/allgather", "ring", test_allgather);
  g_test_add_data_func ("/collectives/halving-doubling/allgather",
                        "halving-doubling", test_allgather);
  g_test_add_data_func ("/collectives/tree/broadcast", "tree", test_broadcast);
  g_test_add_data_func ("/collectives/naive/broadcast", "naive",
                        test_broadcast);
  g_test_add_data_func ("/collectives/ring/broadcast", "ring", test_broadcast);
  return g_test_run ();
}
