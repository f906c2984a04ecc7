/*
 * test-collectives.c — unit tests of the collectives (comm/collectives.c).
 *
 * Every run is on a star of p hosts built directly (rank r on host r), so a
 * route has latency alpha = 2 l and bandwidth B: beta = 1 / B s/byte (the
 * hierarchical tests at the end also run on nodes and racks).  With
 * contention = none the simulated time must equal both comm_cost() and
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
#include "comm/collectives.h"
#include "comm/shard.h"
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

/* A run on `topology` (its own keys in `values`, NULL = defaults) of p
 * hosts with links of LINK_BW and LINK_LAT, rank r on host r. */
static Run *
run_new_on (const char *topology, const BaseValues *values, int p, gsize n,
            NetContention contention)
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
  tp.values = values;
  run->sim = eng_sim_new ();
  run->net = net_network_new (run->sim, contention);
  g_assert_true (net_topology_lookup (topology)->build (run->net, &tp,
                                                         &error));
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

static Run *
run_new (int p, gsize n, NetContention contention)
{
  return run_new_on ("star", NULL, p, n, contention);
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
run_coll_channels (Run *run, const char *alg_name, CommKind kind,
                   gboolean data, double gamma, int root, int channels)
{
  const CommAlgorithm *alg = comm_lookup (alg_name);
  CommArgs a = { 0 };
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
  a.channels = channels;
  g_assert_true (comm_start (alg, &a, kind, on_done, run, run, &error));
  g_assert_no_error (error);
  g_assert_cmpint (run->n_done, ==, 0);
  eng_run (run->sim, INFINITY);
  g_assert_cmpint (run->n_done, ==, 1);
  g_assert_cmpuint (eng_sim_pending (run->sim), ==, 0);
  g_assert_cmpuint (net_network_active (run->net), ==, 0);
  return run->t_done - t0;
}

/* run_coll_channels with the ranks as given (channels = 0). */
static double
run_coll (Run *run, const char *alg_name, CommKind kind, gboolean data,
          double gamma, int root)
{
  return run_coll_channels (run, alg_name, kind, data, gamma, root, 0);
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

/* The double tree's chunks per half (docs/collectives.md, "double-tree")
 * for elements of e bytes:
 * C = max(1, min(floor(n/2), 8 ceil(lg p), floor(n e / (2 x 32 KiB)))). */
static int
dbt_chunks_bytes (int p, gsize n, double e)
{
  gsize c = MIN (n / 2, (gsize) (8 * log2_ceil (p)));
  double by_bytes = floor ((double) n * e / (2 * 32768.0));

  if (by_bytes < (double) c)
    c = (gsize) by_bytes;
  return c < 1 ? 1 : (int) c;
}

static int
dbt_chunks (int p, gsize n)
{
  return dbt_chunks_bytes (p, n, ELEM);
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
        double t = run_coll (run, alg, COMM_ALLREDUCE, TRUE, gamma, p / 2);
        double N = N_EVEN * ELEM;

        assert_time (t, comm_cost (comm_lookup (alg),
                                       COMM_ALLREDUCE, p, N_EVEN, ELEM,
                                       ALPHA, BETA, gamma));
        assert_time (t, closed_allreduce (alg, p, N, gamma));
        assert_allreduce_data (run);
        run_free (run);
      }
}

/* n not divisible by p: the ring's blocks differ by one element and its time
 * is the closed form with n/p replaced by ceil(n/p); tree and naive do not
 * cut the buffer; halving-doubling follows its recurrence (comm_cost). */
static void
test_allreduce_uneven (gconstpointer alg_data)
{
  const char *alg = alg_data;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i];
      Run *run = run_new (p, N_ODD, NET_CONTENTION_NONE);
      double t = run_coll (run, alg, COMM_ALLREDUCE, TRUE, GAMMA, 0);
      double N = N_ODD * ELEM;
      double M = ((N_ODD + p - 1) / p) * ELEM;  /* largest block, bytes */

      assert_time (t, comm_cost (comm_lookup (alg),
                                     COMM_ALLREDUCE, p, N_ODD, ELEM,
                                     ALPHA, BETA, GAMMA));
      if (strcmp (alg, "ring") == 0 || strcmp (alg, "hierarchical") == 0)
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
    double t = run_coll (run, alg, COMM_ALLREDUCE, TRUE, GAMMA, 0);

    assert_time (t, comm_cost (comm_lookup (alg), COMM_ALLREDUCE,
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

      if ((strcmp (alg, "halving-doubling") == 0
           || strcmp (alg, "butterfly") == 0) && pow2_floor (p) != p)
        continue;
      run = run_new (p, N_EVEN, NET_CONTENTION_MAXMIN);
      t = run_coll (run, alg, COMM_ALLREDUCE, TRUE, GAMMA, 1);
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

      t0 = run_coll (run, alg, COMM_ALLREDUCE, TRUE, 0, 0);
      run_free (run);
      run = run_new (p, N_EVEN, NET_CONTENTION_NONE);
      t1 = run_coll (run, alg, COMM_ALLREDUCE, TRUE, GAMMA, 0);
      run_free (run);
      if (strcmp (alg, "ring") == 0 || strcmp (alg, "hierarchical") == 0)
        term = (double) (p - 1) / p * N * GAMMA;
      else if (strcmp (alg, "tree") == 0)
        term = log2_ceil (p) * N * GAMMA;
      else if (strcmp (alg, "naive") == 0)
        term = (p - 1) * N * GAMMA;
      else if (strcmp (alg, "butterfly") == 0)  /* every round, and the fold */
        term = log2_ceil (p) * N * GAMMA;
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
        double ta = run_coll (a, alg, COMM_ALLREDUCE, TRUE, GAMMA, 0);
        double tb = run_coll (b, alg, COMM_ALLREDUCE, FALSE, GAMMA, 0);

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
  t = run_coll (run, alg, COMM_ALLREDUCE, TRUE, GAMMA, 0);
  g_assert_cmpfloat (t, ==, 0);
  g_assert_cmpfloat (run->t_done, ==, 0.25);
  g_assert_cmpmem (run->bufs[0], N_ODD * sizeof (float), run->orig[0],
                   N_ODD * sizeof (float));
  g_assert_cmpfloat (comm_cost (comm_lookup (alg), COMM_ALLREDUCE,
                                    1, N_ODD, ELEM, ALPHA, BETA, GAMMA),
                     ==, 0);
  run_free (run);
}

/* Reduce-scatter: rank r ends with the sum of block r (comm_shard_bounds). */
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
        double t = run_coll (run, alg, COMM_REDUCE_SCATTER, TRUE, GAMMA,
                             0);
        double N = (double) n * ELEM;
        double M = (double) ((n + p - 1) / p) * ELEM; /* largest block */

        assert_time (t, comm_cost (comm_lookup (alg),
                                       COMM_REDUCE_SCATTER, p, n, ELEM,
                                       ALPHA, BETA, GAMMA));
        if (strcmp (alg, "ring") == 0)
          assert_time (t, (p - 1) * (ALPHA + M * (BETA + GAMMA)));
        else if (pow2_floor (p) == p && n % p == 0)
          assert_time (t, log2 (p) * ALPHA
                          + (double) (p - 1) / p * N * (BETA + GAMMA));
        for (int r = 0; r < p; r++)
          {
            gsize lo, hi;

            comm_shard_bounds (n, p, r, &lo, &hi);
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
        double t = run_coll (run, alg, COMM_ALLGATHER, TRUE, GAMMA, 0);
        double N = (double) n * ELEM;
        double M = (double) ((n + p - 1) / p) * ELEM;

        assert_time (t, comm_cost (comm_lookup (alg),
                                       COMM_ALLGATHER, p, n, ELEM, ALPHA,
                                       BETA, GAMMA));
        if (strcmp (alg, "ring") == 0)
          assert_time (t, (p - 1) * (ALPHA + M * BETA));
        else if (pow2_floor (p) == p && n % p == 0)
          assert_time (t, log2 (p) * ALPHA + (double) (p - 1) / p * N * BETA);
        for (int r = 0; r < p; r++)
          for (int b = 0; b < p; b++)
            {
              gsize lo, hi;

              comm_shard_bounds (n, p, b, &lo, &hi);
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
      double t = run_coll (run, alg, COMM_BROADCAST, TRUE, GAMMA, root);
      double N = N_ODD * ELEM, want;

      if (strcmp (alg, "tree") == 0)
        want = log2_ceil (p) * (ALPHA + N * BETA);
      else if (strcmp (alg, "naive") == 0)
        want = ALPHA + N * BETA;
      else
        want = (p - 1) * (ALPHA + N * BETA);
      assert_time (t, want);
      assert_time (t, comm_cost (comm_lookup (alg),
                                     COMM_BROADCAST, p, N_ODD, ELEM,
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
    CommKind kind;
  } cases[] = {
    { "tree", COMM_REDUCE_SCATTER }, { "tree", COMM_ALLGATHER },
    { "tree", COMM_SCATTER }, { "tree", COMM_GATHER },
    { "tree", COMM_ALLTOALL },
    { "ring", COMM_REDUCE }, { "ring", COMM_SCATTER },
    { "ring", COMM_GATHER }, { "ring", COMM_ALLTOALL },
    { "halving-doubling", COMM_BROADCAST },
    { "halving-doubling", COMM_REDUCE },
    { "halving-doubling", COMM_SCATTER },
    { "halving-doubling", COMM_GATHER },
    { "halving-doubling", COMM_ALLTOALL },
    { "hierarchical", COMM_REDUCE_SCATTER },
    { "hierarchical", COMM_ALLGATHER },
    { "hierarchical", COMM_BROADCAST },
    { "hierarchical", COMM_REDUCE }, { "hierarchical", COMM_SCATTER },
    { "hierarchical", COMM_GATHER }, { "hierarchical", COMM_ALLTOALL },
    { "double-tree", COMM_REDUCE_SCATTER },
    { "double-tree", COMM_ALLGATHER }, { "double-tree", COMM_SCATTER },
    { "double-tree", COMM_GATHER }, { "double-tree", COMM_ALLTOALL },
    { "butterfly", COMM_REDUCE_SCATTER }, { "butterfly", COMM_ALLGATHER },
    { "butterfly", COMM_BROADCAST }, { "butterfly", COMM_REDUCE },
    { "butterfly", COMM_SCATTER }, { "butterfly", COMM_GATHER },
    { "butterfly", COMM_ALLTOALL },
  };
  const int pvals[] = { 1, 4 };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    for (guint k = 0; k < G_N_ELEMENTS (pvals); k++)
      {
        Run *run = run_new (pvals[k], 8, NET_CONTENTION_NONE);
        const CommAlgorithm *alg = comm_lookup (cases[i].alg);
        CommArgs a = { .sim = run->sim, .net = run->net, .p = run->p,
                          .hosts = run->hosts, .bufs = run->bufs,
                          .n = run->n, .elem_bytes = ELEM };
        g_autoptr (GError) error = NULL;

        g_assert_false (comm_start (alg, &a, cases[i].kind, on_done, run,
                                        run, &error));
        g_assert_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED);
        g_assert_cmpuint (eng_sim_pending (run->sim), ==, 0);
        g_assert_true (isnan (comm_cost (alg, cases[i].kind, 4, 8, ELEM,
                                             ALPHA, BETA, 0)));
        run_free (run);
      }
}

static void
test_registry (void)
{
  const char *names[] = { "auto", "nccl", "ring", "tree", "halving-doubling",
                          "double-tree", "butterfly", "naive",
                          "hierarchical", "nvls", "nvls-tree" };
  const CommAlgorithm *const *all = comm_all ();
  int n = 0;

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      const CommAlgorithm *alg = comm_lookup (names[i]);

      g_assert_nonnull (alg);
      g_assert_cmpstr (alg->name, ==, names[i]);
      g_assert_true (alg->description && *alg->description);
      g_assert_true (alg->source && *alg->source);
    }
  while (all[n])
    n++;
  g_assert_cmpint (n, ==, G_N_ELEMENTS (names));
  g_assert_null (comm_lookup ("recursive-doubling"));
}

/* Two collectives at once on the same network both complete, each calling
 * its own done once. */
static void
test_concurrent (void)
{
  Run *run = run_new (4, N_EVEN, NET_CONTENTION_MAXMIN);
  Run other = *run;
  CommArgs a = { .sim = run->sim, .net = run->net, .p = 4,
                    .hosts = run->hosts, .n = N_EVEN, .elem_bytes = ELEM,
                    .tag = 1 };
  g_autoptr (GError) error = NULL;

  other.n_done = 0;
  g_assert_true (comm_start (comm_lookup ("ring"), &a,
                                 COMM_ALLREDUCE, on_done, run, run,
                                 &error));
  g_assert_true (comm_start (comm_lookup ("tree"), &a,
                                 COMM_ALLREDUCE, on_done, &other, &other,
                                 &error));
  g_assert_no_error (error);
  eng_run (run->sim, INFINITY);
  g_assert_cmpint (run->n_done, ==, 1);
  g_assert_cmpint (other.n_done, ==, 1);
  g_assert_cmpuint (net_network_active (run->net), ==, 0);
  run_free (run);
}

/* The executor's work per transfer does not grow with p, and only stored
 * programs take memory per step (CommStats).  A transfer costs the
 * executor three looks at a rank's current step: the send, and the receive
 * before and after its message arrives; local steps and ranks with nothing
 * to do add at most one per rank.  (Before ranks were woken exactly, a rank
 * whose message had not arrived ran its sender, which ran its own, around
 * the ring: p + 2 looks per transfer of ring all-reduce, 10 at p = 8.)
 * Ring, tree, halving-doubling, double-tree, butterfly and hierarchical
 * (here, every rank alone: a ring) generate their steps and store none; naive stores 2p
 * steps on the root and 2 on each other rank.  The double tree makes
 * 4 C (p-1) transfers: each rank but the root sends C chunks of each half up
 * and receives them back down. */
static void
test_work_bound (void)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive",
                         "hierarchical", "double-tree", "butterfly" };
  const int pvals[] = { 8, 64, 256 };

  for (guint i = 0; i < G_N_ELEMENTS (algs); i++)
    for (guint k = 0; k < G_N_ELEMENTS (pvals); k++)
      for (int g = 0; g < 2; g++)
        {
          int p = pvals[k];
          Run *run = run_new (p, 4 * (gsize) p + 1, NET_CONTENTION_NONE);
          CommStats a, b;
          guint64 transfers, examined;

          comm_stats (&a);
          run_coll (run, algs[i], COMM_ALLREDUCE, FALSE, g ? GAMMA : 0,
                    p / 2);
          comm_stats (&b);
          transfers = b.transfers - a.transfers;
          examined = b.examined - a.examined;
          g_assert_cmpuint (b.collectives - a.collectives, ==, 1);
          g_assert_cmpuint (transfers, >=, (guint64) p - 1);
          if (strcmp (algs[i], "ring") == 0)
            {
              g_assert_cmpuint (transfers, ==, 2 * (guint64) p * (p - 1));
              g_assert_cmpuint (examined, <=, 3 * transfers);
            }
          else if (strcmp (algs[i], "double-tree") == 0)
            g_assert_cmpuint (transfers, ==,
                              4 * (guint64) dbt_chunks (p, run->n) * (p - 1));
          else if (strcmp (algs[i], "butterfly") == 0)
            {
              /* p a power of two: p ranks, lg p sends each */
              g_assert_cmpuint (transfers, ==,
                                (guint64) p * (guint64) log2_ceil (p));
              g_assert_cmpuint (examined, <=, 3 * transfers + (guint64) p);
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

/* Bytes of block b of comm_shard_bounds (n, p). */
static double
block_bytes (gsize n, int p, int b)
{
  gsize lo, hi;

  comm_shard_bounds (n, p, b, &lo, &hi);
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
assert_operation (Run *run, CommKind kind, int root)
{
  int p = run->p;
  gsize n = run->n, c = n / (gsize) p;

  for (int r = 0; r < p; r++)
    for (int b = 0; b < p; b++)
      {
        gsize lo, hi;

        comm_shard_bounds (n, p, b, &lo, &hi);
        switch (kind)
          {
          case COMM_REDUCE:
            for (gsize e = lo; r == root && e < hi; e++)
              assert_sum_at (run, run->bufs[r][e], e);
            break;
          case COMM_SCATTER:  /* block r from the root, the rest kept */
            assert_copied (run, r, lo, hi, b == r ? root : r, lo);
            break;
          case COMM_GATHER:   /* the root's block b from rank b */
            assert_copied (run, r, lo, hi, r == root ? b : r, lo);
            break;
          case COMM_ALLTOALL: /* a transpose of the blocks of c */
            assert_copied (run, r, (gsize) b * c, (gsize) (b + 1) * c, b,
                           (gsize) r * c);
            if (b == 0)
              assert_copied (run, r, c * (gsize) p, n, r, c * (gsize) p);
            break;
          case COMM_ALLGATHER:
            assert_copied (run, r, lo, hi, b, lo);
            break;
          case COMM_BROADCAST:
            assert_copied (run, r, lo, hi, root, lo);
            break;
          case COMM_REDUCE_SCATTER:
            for (gsize e = lo; b == r && e < hi; e++)
              assert_sum_at (run, run->bufs[r][e], e);
            break;
          case COMM_ALLREDUCE:
            for (gsize e = lo; e < hi; e++)
              assert_sum_at (run, run->bufs[r][e], e);
            break;
          }
      }
}

/* comm_check agrees with assert_operation, and finds one element
 * changed (a copy by one ulp, a sum by 1) in a part the definition fixes:
 * the last element (of the transposed blocks, for all-to-all) of the
 * root's buffer, or of its block's owner for reduce-scatter and scatter. */
static void
assert_checked (Run *run, CommKind kind, int root)
{
  int bad_rank = -1, r = root;
  gsize bad_elem = 0, e;
  float keep;

  g_assert_true (comm_check (kind, run->p, run->n, root,
                                 (const float *const *) run->orig,
                                 (const float *const *) run->bufs,
                                 &bad_rank, &bad_elem));
  if (run->n == 0 || (kind == COMM_ALLTOALL && run->n < (gsize) run->p))
    return;
  e = run->n - 1;
  if (kind == COMM_REDUCE_SCATTER || kind == COMM_SCATTER)
    for (int b = 0; b < run->p; b++)  /* the owner of element e */
      {
        gsize lo, hi;

        comm_shard_bounds (run->n, run->p, b, &lo, &hi);
        if (lo <= e && e < hi)
          r = b;
      }
  if (kind == COMM_ALLTOALL)
    e = (run->n / run->p) * run->p - 1;
  keep = run->bufs[r][e];
  if (kind == COMM_REDUCE || kind == COMM_REDUCE_SCATTER
      || kind == COMM_ALLREDUCE)
    run->bufs[r][e] = keep + 1;   /* far beyond the sums' tolerance */
  else
    run->bufs[r][e] = nextafterf (keep, INFINITY);
  g_assert_false (comm_check (kind, run->p, run->n, root,
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
closed_naive (CommKind kind, int p, gsize n, int root, double gamma)
{
  double N = (double) n * ELEM, M = largest_other_block (n, p, root);
  double C = (double) (n / (gsize) p) * ELEM;
  double reduce = ALPHA + N * BETA + (p - 1) * N * gamma;

  switch (kind)
    {
    case COMM_ALLREDUCE:      return reduce + ALPHA + N * BETA;
    case COMM_REDUCE:         return reduce;
    case COMM_REDUCE_SCATTER: return reduce + ALPHA + M * BETA;
    case COMM_BROADCAST:      return ALPHA + N * BETA;
    case COMM_SCATTER:
    case COMM_GATHER:         return ALPHA + M * BETA;
    case COMM_ALLGATHER:      return 2 * ALPHA + M * BETA + N * BETA;
    case COMM_ALLTOALL:       return ALPHA + C * BETA;
    }
  return NAN;
}

/* Every kind of naive, and reduce of tree, for p = 2..16, roots 0 and 1,
 * an even and an odd n: data against the definition, time against the
 * closed form and against comm_cost where its largest block is the
 * one a non-root rank holds. */
static void
test_operations (void)
{
  const gsize ns[] = { N_EVEN, N_ODD, 3 };

  for (int kind = 0; kind <= COMM_N_KINDS; kind++)
    for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
      for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
        for (int root = 0; root < 2; root++)
          {
            gboolean tree = kind == COMM_N_KINDS;
            CommKind kd = tree ? COMM_REDUCE : (CommKind) kind;
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
              assert_time (t, comm_cost (comm_lookup (alg), kd, p, n,
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
      double t = run_coll (run, "naive", COMM_GATHER, TRUE, 0, root);

      assert_time (t, ALPHA + (N - block_bytes (N_ODD, p, root)) * BETA);
      assert_operation (run, COMM_GATHER, root);
      run_free (run);
      run = run_new (p, N_ODD, NET_CONTENTION_MAXMIN);
      t = run_coll (run, "naive", COMM_ALLTOALL, TRUE, 0, 0);
      assert_time (t, ALPHA + (p - 1) * C * BETA);
      assert_operation (run, COMM_ALLTOALL, 0);
      run_free (run);
    }
}

/* --- hierarchical on groups ---------------------------------------------- */

#define NVL_BW   (8 * LINK_BW)   /* bytes/s, each GPU's link in its node */
#define NVL_LAT  2e-7            /* s, the same */
#define SW_LAT   1e-6            /* s, racks: each rack-to-core link */
#define OVERSUB  2.0             /* racks: oversubscription */

/* A nodes network of p GPUs, `gpus` per node (the last node partly filled
 * when gpus does not divide p), links inside a node of intra_bw (bytes/s)
 * and intra_lat (s), NICs of LINK_BW and LINK_LAT: one per node, or one
 * per GPU with nic_gpu. */
static Run *
run_new_nodes_at (int p, gsize n, NetContention contention, int gpus,
                  gboolean nic_gpu, double intra_bw, double intra_lat)
{
  BaseValues *v = net_topology_values_new ();
  Run *run;

  base_values_set_int (v, "network.gpus_per_node", gpus);
  base_values_set_double (v, "network.intra_bandwidth", intra_bw);
  base_values_set_double (v, "network.intra_latency", intra_lat);
  base_values_set_int (v, "network.nic", nic_gpu);
  run = run_new_on ("nodes", v, p, n, contention);
  base_values_free (v);
  return run;
}

/* The same with NVLink of NVL_BW and NVL_LAT. */
static Run *
run_new_nodes (int p, gsize n, NetContention contention, int gpus,
               gboolean nic_gpu)
{
  return run_new_nodes_at (p, n, contention, gpus, nic_gpu, NVL_BW, NVL_LAT);
}

/* A racks network of p hosts, racks of `size`, oversubscription OVERSUB
 * (a rack's links carry U = size LINK_BW / OVERSUB), switch latency
 * SW_LAT. */
static Run *
run_new_racks (int p, gsize n, NetContention contention, int size)
{
  BaseValues *v = net_topology_values_new ();
  Run *run;

  base_values_set_int (v, "network.rack_size", size);
  base_values_set_double (v, "network.oversubscription", OVERSUB);
  base_values_set_double (v, "network.switch_latency", SW_LAT);
  run = run_new_on ("racks", v, p, n, contention);
  base_values_free (v);
  return run;
}

/* Replaces the inputs by small integers (|x| <= 8), which any order of
 * additions sums exactly in float. */
static void
run_set_integers (Run *run)
{
  for (int r = 0; r < run->p; r++)
    for (gsize i = 0; i < run->n; i++)
      run->bufs[r][i] = run->orig[r][i]
        = (float) ((int) ((7 * (gsize) r + 13 * i + i * i % 5) % 17) - 8);
}

/* Every rank holds exactly the element-wise sum of the inputs. */
static void
assert_allreduce_exact (Run *run)
{
  for (gsize i = 0; i < run->n; i++)
    {
      double sum = 0;

      for (int r = 0; r < run->p; r++)
        sum += run->orig[r][i];
      for (int r = 0; r < run->p; r++)
        g_assert_cmpfloat (run->bufs[r][i], ==, sum);
    }
}

/* On nodes of 1, 2, 3, 4 and 8 GPUs, for every p from 2 to 16 (a partly
 * filled last node whenever the node size does not divide p, a single node
 * when it exceeds p), both NIC layouts and both contention modes, every
 * rank ends with exactly the element-wise sum, for n = N_ODD and for n = 5
 * (fewer elements than blocks: empty ranges); a timing-only run takes the
 * same time; random inputs give the sum to 1e-5, bit-identical on every
 * rank. */
static void
test_hier_nodes_data (void)
{
  const int gpus[] = { 1, 2, 3, 4, 8 };
  const gsize ns[] = { N_ODD, 5 };

  for (int p = 2; p <= 16; p++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gpus); gi++)
      for (int nic = 0; nic < 2; nic++)
        for (int c = 0; c < 2; c++)
          for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
            {
              NetContention cont = c ? NET_CONTENTION_MAXMIN
                                     : NET_CONTENTION_NONE;
              Run *run = run_new_nodes (p, ns[k], cont, gpus[gi], nic);
              Run *timing = run_new_nodes (p, ns[k], cont, gpus[gi], nic);
              double t;

              run_set_integers (run);
              t = run_coll (run, "hierarchical", COMM_ALLREDUCE, TRUE,
                            GAMMA, 0);
              assert_allreduce_exact (run);
              g_assert_cmpfloat (run_coll (timing, "hierarchical",
                                           COMM_ALLREDUCE, FALSE, GAMMA,
                                           0), ==, t);
              run_free (timing);
              run_free (run);
            }
  for (int p = 2; p <= 16; p++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gpus); gi++)
      {
        Run *run = run_new_nodes (p, N_ODD, NET_CONTENTION_MAXMIN, gpus[gi],
                                  FALSE);

        run_coll (run, "hierarchical", COMM_ALLREDUCE, TRUE, GAMMA, 0);
        assert_allreduce_data (run);
        run_free (run);
      }
}

/* --- the double tree on nodes ---------------------------------------------- */

/* Runs the double tree's collective `kind` on `run` (root `root`) with
 * `nic_latency` s declared by the NIC between nodes; returns its time.
 * With `estimate`, under the protocol of least estimate, comm_plan's
 * estimate in *estimate; without, with no protocol (the figures as
 * given). */
static double
run_dbt_nodes (Run *run, CommKind kind, gboolean data, int root,
               double nic_latency, double *estimate)
{
  const CommAlgorithm *dbt = comm_lookup ("double-tree");
  CommArgs a = { .sim = run->sim, .net = run->net, .p = run->p,
                 .hosts = run->hosts, .bufs = data ? run->bufs : NULL,
                 .n = run->n, .elem_bytes = ELEM, .reduce_per_byte = GAMMA,
                 .root = root, .tag = 7, .nic_latency = nic_latency };
  g_autoptr (GError) error = NULL;
  CommPlan plan;

  if (estimate != NULL)
    {
      a.protocol = comm_protocol_lookup ("auto");
      g_assert_true (comm_plan (dbt, &a, kind, &plan));
      *estimate = plan.estimate;
    }
  g_assert_true (comm_start (dbt, &a, kind, on_done, run, run, &error));
  g_assert_no_error (error);
  eng_run (run->sim, INFINITY);
  g_assert_cmpint (run->n_done, ==, 1);
  g_assert_cmpuint (net_network_active (run->net), ==, 0);
  return run->t_done;
}

/* Laid as NCCL lays it, a chain in each node and the two trees over
 * nodes: on nodes of 1, 2, 4 and 8 GPUs, for every p from 2 to 32 (the
 * last node partly filled where the node size does not divide p), both
 * contention modes, every rank ends with exactly the element-wise sum, for
 * n = N_ODD (a chunk per half) and 40000 (several, and a ragged last one),
 * with the root at rank 0 and at rank p - 1; a timing-only run takes the
 * same time; reduce and broadcast give the root's sum and the root's
 * buffer. */
static void
test_dbtree_nodes_data (void)
{
  const int gpus[] = { 1, 2, 4, 8 };
  const gsize ns[] = { N_ODD, 40000 };
  const CommKind kinds[] = { COMM_REDUCE, COMM_BROADCAST };

  for (int p = 2; p <= 32; p++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gpus); gi++)
      for (int c = 0; c < 2; c++)
        for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
          {
            NetContention cont = c ? NET_CONTENTION_MAXMIN
                                   : NET_CONTENTION_NONE;
            int root = k == 0 ? 0 : p - 1;
            Run *run = run_new_nodes (p, ns[k], cont, gpus[gi], p % 2);
            Run *timing = run_new_nodes (p, ns[k], cont, gpus[gi], p % 2);
            double t;

            run_set_integers (run);
            t = run_dbt_nodes (run, COMM_ALLREDUCE, TRUE, root, 0, NULL);
            assert_allreduce_exact (run);
            g_assert_cmpfloat (run_dbt_nodes (timing, COMM_ALLREDUCE, FALSE,
                                              root, 0, NULL), ==, t);
            run_free (timing);
            run_free (run);
            for (guint j = 0; j < G_N_ELEMENTS (kinds); j++)
              {
                run = run_new_nodes (p, ns[k], cont, gpus[gi], FALSE);
                run_dbt_nodes (run, kinds[j], TRUE, root, 0, NULL);
                assert_operation (run, kinds[j], root);
                run_free (run);
              }
          }
}

/* The estimate auto and nccl price the double tree by is its schedule laid
 * as the executor lays it, with the routes inside a node and across as
 * they are: on 2 to 4 nodes of 4 and 8 GPUs, with contention none, it is
 * the simulated time, for all-reduce, reduce and broadcast, a few chunks
 * and many, a NIC per node and per GPU, with and without a NIC latency. */
static void
test_dbtree_nodes_estimate (void)
{
  const int gpus[] = { 4, 8 };
  const gsize ns[] = { N_ODD, 1 << 18 };
  const CommKind kinds[] = { COMM_ALLREDUCE, COMM_REDUCE, COMM_BROADCAST };

  for (int nodes = 2; nodes <= 4; nodes++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gpus); gi++)
      for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
        for (guint j = 0; j < G_N_ELEMENTS (kinds); j++)
          for (int nic = 0; nic < 2; nic++)
            {
              int p = nodes * gpus[gi];
              Run *run = run_new_nodes (p, ns[k], NET_CONTENTION_NONE,
                                        gpus[gi], nic);
              double est, t;

              run->n = ns[k];
              t = run_dbt_nodes (run, kinds[j], FALSE, 0, nic ? 3e-5 : 0,
                                 &est);
              assert_time (t, est);
              run_free (run);
            }
}

/* Depth of the trees over G >= 2 nodes: the root's node on top of the
 * two trees over the other G - 1, each floor(lg(G - 1)) + 1 deep. */
static int
dbt_node_depth (int G)
{
  return (int) floor (log2 ((double) (G - 1)) + 1e-12) + 1;
}

/* A path crosses between nodes once per level of the trees over nodes,
 * not at every level over ranks: with the NIC's declared latency L large
 * (every message between nodes pays it twice with no protocol, Simple's
 * figures) and one chunk per half, the all-reduce grows by exactly
 * 2 x depth x 2 dL when L grows by dL (a reduce up the trees over nodes, a
 * broadcast down), on 2 to 6 nodes of 2, 4 and 8 GPUs (with 8 GPUs and 5
 * nodes, the last node holds 3).  (With several chunks a rank's one
 * program interleaves the two trees' chunks, so a tree's chunk can wait
 * for the other tree's from across a node: docs/collectives.md.) */
static void
test_dbtree_nodes_crossings (void)
{
  const int gpus[] = { 2, 4, 8 };
  const double L = 1e-3, dL = 1e-3;   /* s */
  double scale = comm_protocol_nic_latency_scale (NULL);

  for (int nodes = 2; nodes <= 6; nodes++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gpus); gi++)
      {
        int p = nodes * gpus[gi] - (gpus[gi] == 8 && nodes == 5 ? 5 : 0);
        double t[2];

        g_assert_cmpint (dbt_chunks (p, N_ODD), ==, 1);
        for (int i = 0; i < 2; i++)
          {
            Run *run = run_new_nodes (p, N_ODD, NET_CONTENTION_NONE,
                                      gpus[gi], FALSE);

            t[i] = run_dbt_nodes (run, COMM_ALLREDUCE, FALSE, 0,
                                  L + i * dL, NULL);
            run_free (run);
          }
        assert_time (t[1] - t[0], 2 * dbt_node_depth (nodes) * scale * dL);
      }
}

/* The smallest k >= 5 prime to p: r -> (k r + 3) mod p is a permutation. */
static int
coprime_step (int p)
{
  int k = 5;

  for (;; k++)
    {
      int a = k, b = p;

      while (b != 0)
        {
          int t = a % b;

          a = b;
          b = t;
        }
      if (a == 1)
        return k;
    }
}

/* Groups need not be contiguous, equal or in host order: on a star whose
 * host groups are set by hand (uneven and interleaved: h*h mod 5, h mod 3;
 * one lone host; fives), with the ranks on a permutation of the hosts,
 * every rank ends with exactly the sum. */
static void
test_hier_scattered_groups (void)
{
  for (int p = 2; p <= 16; p++)
    for (int pattern = 0; pattern < 4; pattern++)
      {
        Run *run = run_new (p, N_ODD, NET_CONTENTION_MAXMIN);
        int k = coprime_step (p);

        for (int h = 0; h < p; h++)
          {
            int group = pattern == 0 ? h * h % 5
                        : pattern == 1 ? h % 3
                        : pattern == 2 ? (h < p - 1 ? 0 : 1)
                        : h / 5;

            net_network_set_host_group (run->net, h, 100 + group);
          }
        for (int r = 0; r < p; r++)
          run->hosts[r] = (k * r + 3) % p;
        run_set_integers (run);
        run_coll (run, "hierarchical", COMM_ALLREDUCE, TRUE, GAMMA, 0);
        assert_allreduce_exact (run);
        run_free (run);
      }
}

/* The closed form of hierarchical all-reduce for p ranks in m = p/g groups
 * of g (docs/collectives.md) when routes inside a group have latency ai
 * and 1/bi bytes/s, and across groups ao and 1/bo:
 * (g-1)(2 ai + M1 (2 bi + gamma)) + (m-1)(2 ao + M2 (2 bo + gamma)),
 * M1 = ceil(n/g) e and M2 = ceil(ceil(n/g)/m) e bytes. */
static double
closed_hier (int p, int g, gsize n, double ai, double bi, double ao,
             double bo, double gamma)
{
  int m = p / g;
  gsize m1 = (n + (gsize) g - 1) / (gsize) g;
  double M1 = (double) m1 * ELEM;
  double M2 = (double) ((m1 + (gsize) m - 1) / (gsize) m) * ELEM;

  return (g - 1) * (2 * ai + M1 * (2 * bi + gamma))
         + (m - 1) * (2 * ao + M2 * (2 * bo + gamma));
}

/* The same on this file's nodes network (netmodel/nodes.c): in a node the
 * route is [nvlink up, nvlink down], ai = 2 il, bi = 1/iB; across nodes
 * with one NIC per node [nvlink up, nic up, nic down, nvlink down],
 * ao = 2 il + 2 l, bo = 1/min(iB, B), and with one NIC per GPU [nic up,
 * nic down], ao = 2 l, bo = 1/B.  With max-min and one NIC per node, the
 * g rings across nodes run in step (equal blocks) and share each node's
 * NIC, g flows each way: bo = 1/min(iB, B/g), g times the bandwidth term
 * while B/g <= iB. */
static double
closed_hier_nodes (int p, int g, gsize n, gboolean nic_gpu, gboolean maxmin,
                   double gamma)
{
  double ao = nic_gpu ? 2 * LINK_LAT : 2 * NVL_LAT + 2 * LINK_LAT;
  double bw = nic_gpu ? LINK_BW
                      : MIN (NVL_BW, maxmin ? LINK_BW / g : LINK_BW);

  return closed_hier (p, g, n, 2 * NVL_LAT, 1 / NVL_BW, ao, 1 / bw, gamma);
}

/* Simulated time equals the closed form on nodes of g GPUs, g dividing p:
 * with contention none for any n, with max-min for n divisible by p
 * (equal blocks keep every ring in step, so a link carries one flow of
 * each ring crossing it at a time). */
static void
test_hier_nodes_time (void)
{
  const int gs[] = { 1, 2, 3, 4, 8 };

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gs); gi++)
      for (int nic = 0; nic < 2; nic++)
        for (int c = 0; c < 3; c++)
          {
            int p = ps[i], g = gs[gi];
            gboolean maxmin = c == 2;
            gsize n = c == 1 ? N_ODD : N_EVEN;
            Run *run;
            double t;

            if (p % g != 0)
              continue;
            run = run_new_nodes (p, n, maxmin ? NET_CONTENTION_MAXMIN
                                              : NET_CONTENTION_NONE, g, nic);
            t = run_coll (run, "hierarchical", COMM_ALLREDUCE, TRUE,
                          GAMMA, 0);
            assert_time (t, closed_hier_nodes (p, g, n, nic, maxmin, GAMMA));
            assert_allreduce_data (run);
            run_free (run);
          }
}

/* On racks of g hosts (g dividing p): in a rack [a.up, b.down], ai = 2 l,
 * bi = 1/B; across [a.up, rack up, rack down, b.down], ao = 2 l + 2 sl,
 * bo = 1/min(B, U) with U = g B / o, and with max-min the g rings share
 * the rack's links: bo = 1/min(B, U/g) = o/B. */
static void
test_hier_racks_time (void)
{
  const int gs[] = { 2, 4, 8 };

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gs); gi++)
      for (int c = 0; c < 2; c++)
        {
          int p = ps[i], g = gs[gi];
          double U = g * LINK_BW / OVERSUB, bw;
          Run *run;
          double t;

          if (p % g != 0)
            continue;
          bw = MIN (LINK_BW, c ? U / g : U);
          run = run_new_racks (p, N_EVEN, c ? NET_CONTENTION_MAXMIN
                                            : NET_CONTENTION_NONE, g);
          t = run_coll (run, "hierarchical", COMM_ALLREDUCE, TRUE, GAMMA,
                        0);
          assert_time (t, closed_hier (p, g, N_EVEN, 2 * LINK_LAT,
                                       1 / LINK_BW,
                                       2 * LINK_LAT + 2 * SW_LAT, 1 / bw,
                                       GAMMA));
          assert_allreduce_data (run);
          run_free (run);
        }
}

/* comm_cost_grouped (uniform links) is the time on a star whose hosts
 * are set in groups of g, in blocks of consecutive ranks or interleaved
 * (rank r in group r mod m), and on nodes whose NVLink is the NIC (one per
 * GPU: every route 2 l and 1/B); with g = 1 or g = p it is the ring's. */
static void
test_hier_grouped_cost (void)
{
  const int gs[] = { 1, 2, 3, 4, 8 };
  const CommAlgorithm *hier = comm_lookup ("hierarchical");
  const CommAlgorithm *ring = comm_lookup ("ring");

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (guint gi = 0; gi < G_N_ELEMENTS (gs); gi++)
      for (int layout = 0; layout < 3; layout++)
        {
          int p = ps[i], g = gs[gi], m = p / g;
          double want;
          Run *run;

          if (p % g != 0)
            continue;
          want = comm_cost_grouped (hier, COMM_ALLREDUCE, p, g, N_ODD,
                                        ELEM, ALPHA, BETA, GAMMA);
          assert_time (want, closed_hier (p, g, N_ODD, ALPHA, BETA, ALPHA,
                                          BETA, GAMMA));
          if (layout < 2)
            {
              run = run_new (p, N_ODD, NET_CONTENTION_NONE);
              for (int r = 0; r < p; r++)
                net_network_set_host_group (run->net, r,
                                            layout == 0 ? r / g : r % m);
            }
          else
            run = run_new_nodes_at (p, N_ODD, NET_CONTENTION_NONE, g, TRUE,
                                    LINK_BW, LINK_LAT);
          assert_time (run_coll (run, "hierarchical", COMM_ALLREDUCE,
                                 TRUE, GAMMA, 0), want);
          assert_allreduce_data (run);
          run_free (run);
        }
  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    {
      int p = ps[i];
      double r = comm_cost (ring, COMM_ALLREDUCE, p, N_ODD, ELEM,
                                ALPHA, BETA, GAMMA);

      assert_time (comm_cost_grouped (hier, COMM_ALLREDUCE, p, 1,
                                          N_ODD, ELEM, ALPHA, BETA, GAMMA), r);
      assert_time (comm_cost_grouped (hier, COMM_ALLREDUCE, p, p,
                                          N_ODD, ELEM, ALPHA, BETA, GAMMA), r);
      assert_time (comm_cost (hier, COMM_ALLREDUCE, p, N_ODD, ELEM,
                                  ALPHA, BETA, GAMMA), r);
    }
}

/* Where a flat ring loses.  On nodes with max-min, the ring's link from
 * the last GPU of node 0 to the first of node 1 carries all 2(p-1) of its
 * blocks of n/p through one NIC of bandwidth B, so the ring takes at least
 * 2 (p-1)/p N / B; hierarchical takes its closed form, which puts most
 * bytes on NVLink.  So t_ring / t_hier >= that bound over the formula:
 * about g (p-1)/p m/(m-1) with one NIC per GPU (g NICs per node carry the
 * m-1 cross-node steps' n/(g m) each) and (p-1)/p m/(m-1) with one per
 * node (its g rings share the NIC), less the NVLink terms.  A flat ring
 * in place of hierarchical would fail both. */
static void
test_hier_vs_ring (void)
{
  static const struct {
    int p, g;
    gboolean nic_gpu;
    double factor;  /* the bound over the formula is at least this */
  } cases[] = {
    { 16, 4, TRUE, 3.0 }, { 16, 8, TRUE, 5.0 }, { 16, 8, FALSE, 1.5 },
    { 8, 4, FALSE, 1.4 },
  };
  const gsize n = 1024 * N_EVEN;  /* floats: bandwidth-bound */

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      int p = cases[i].p, g = cases[i].g;
      Run *a = run_new_nodes (p, n, NET_CONTENTION_MAXMIN, g,
                              cases[i].nic_gpu);
      Run *b = run_new_nodes (p, n, NET_CONTENTION_MAXMIN, g,
                              cases[i].nic_gpu);
      double t_hier = run_coll (a, "hierarchical", COMM_ALLREDUCE, FALSE,
                                0, 0);
      double t_ring = run_coll (b, "ring", COMM_ALLREDUCE, FALSE, 0, 0);
      double want = closed_hier_nodes (p, g, n, cases[i].nic_gpu, TRUE, 0);
      double bound = 2.0 * (p - 1) / p * (double) n * ELEM / LINK_BW;

      assert_time (t_hier, want);
      g_assert_cmpfloat (t_ring, >=, bound);
      g_assert_cmpfloat (bound / want, >=, cases[i].factor);
      g_assert_cmpfloat (t_ring / t_hier, >=, bound / want * (1 - 1e-9));
      if (g_test_verbose ())
        g_test_message ("p=%d g=%d nic=%s: ring %.6g s, hierarchical %.6g s "
                        "(x%.3g, bound x%.3g)", p, g,
                        cases[i].nic_gpu ? "gpu" : "node", t_ring, t_hier,
                        t_ring / t_hier, bound / want);
      run_free (a);
      run_free (b);
    }
}

/* With contention none the flat ring loses much less: a transfer never
 * waits for bandwidth, and a rank sends its next block as soon as it has
 * added the one it received, so the slow NIC hop does not hold the ring
 * back.  Its time is the longest chain of 2(p-1) consecutive hops around
 * the ring (eager sends; gamma = 0, p dividing n, M = n/p e): with c_o =
 * ao + M bo a hop across nodes and c_i = ai + M bi one inside,
 * x c_o + (2(p-1) - x) c_i, where x, the most node boundaries such a chain
 * crosses, is 2m for g >= 3 (it can leave out two hops inside a node),
 * 2m - 1 for g = 2 and 2(p-1) for g = 1.  Hierarchical still takes its
 * closed form, a little less here. */
static void
test_hier_vs_ring_none (void)
{
  const int cases[][2] = { { 16, 4 }, { 16, 8 }, { 16, 2 }, { 12, 3 } };
  const gsize n = 1024 * N_EVEN;

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    for (int nic = 0; nic < 2; nic++)
      {
        int p = cases[i][0], g = cases[i][1], m = p / g;
        Run *a = run_new_nodes (p, n, NET_CONTENTION_NONE, g, nic);
        Run *b = run_new_nodes (p, n, NET_CONTENTION_NONE, g, nic);
        double M = (double) (n / (gsize) p) * ELEM;
        double ao = nic ? 2 * LINK_LAT : 2 * NVL_LAT + 2 * LINK_LAT;
        double c_o = ao + M / (nic ? LINK_BW : MIN (NVL_BW, LINK_BW));
        double c_i = 2 * NVL_LAT + M / NVL_BW;
        int x = g >= 3 ? 2 * m : g == 2 ? 2 * m - 1 : 2 * (p - 1);
        double t_hier = run_coll (a, "hierarchical", COMM_ALLREDUCE,
                                  FALSE, 0, 0);
        double t_ring = run_coll (b, "ring", COMM_ALLREDUCE, FALSE, 0, 0);

        assert_time (t_ring, x * c_o + (2 * (p - 1) - x) * c_i);
        assert_time (t_hier, closed_hier_nodes (p, g, n, nic, FALSE, 0));
        g_assert_cmpfloat (t_hier, <, t_ring);
        run_free (a);
        run_free (b);
      }
}

/* The executor's work on nodes stays at most 3 looks per transfer plus one
 * per rank, nothing is stored, and the transfers are those of the steps:
 * 2(g-1) inside the node and 2(m-1) across per rank. */
static void
test_hier_work_bound (void)
{
  const int pvals[] = { 64, 256 };

  for (guint k = 0; k < G_N_ELEMENTS (pvals); k++)
    {
      int p = pvals[k], g = 8, m = p / g;
      Run *run = run_new_nodes (p, 4 * (gsize) p + 1, NET_CONTENTION_NONE, g,
                                FALSE);
      CommStats a, b;
      guint64 transfers;

      comm_stats (&a);
      run_coll (run, "hierarchical", COMM_ALLREDUCE, FALSE, GAMMA, 0);
      comm_stats (&b);
      transfers = b.transfers - a.transfers;
      g_assert_cmpuint (transfers, ==,
                        (guint64) p * (2 * (g - 1) + 2 * (m - 1)));
      g_assert_cmpuint (b.examined - a.examined, <=,
                        3 * transfers + (guint64) p);
      g_assert_cmpuint (b.stored_steps - a.stored_steps, ==, 0);
      run_free (run);
    }
}

/* --- channels ------------------------------------------------------------- */

/* Channel order: ranks by group (groups by their lowest rank), by rank
 * inside, each group rotated by the channel's index. */
static void
test_channel_order (void)
{
  const int group[] = { 7, 3, 7, 3, 9, 7 };  /* groups {0,2,5} {1,3} {4} */
  const int want[3][6] = { { 0, 2, 5, 1, 3, 4 }, { 2, 5, 0, 3, 1, 4 },
                           { 5, 0, 2, 1, 3, 4 } };
  int order[6];

  for (int c = 0; c < 3; c++)
    {
      comm_channel_order (6, group, c, NULL, order);
      g_assert_cmpmem (order, sizeof order, want[c], sizeof want[c]);
    }
}

/* C channels on nodes with one NIC per GPU: every rank ends with exactly the
 * sum; with contention none the channels do not interact, so the run lasts
 * as long as the slowest of them run alone: channel c's share of the
 * buffer (block c of C) among the ranks in channel c's order, the root
 * where rank 0 is in it; ring, tree, halving-doubling, naive, butterfly and
 * double-tree alike. */
static void
test_channels_none (void)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive",
                         "double-tree", "butterfly" };
  const int Cs[] = { 1, 2, 3, 8 };

  for (guint a = 0; a < G_N_ELEMENTS (algs); a++)
    for (guint k = 0; k < G_N_ELEMENTS (Cs); k++)
      for (int p = 2; p <= 16; p += 7)
        {
          Run *run = run_new_nodes (p, N_ODD, NET_CONTENTION_NONE, 4, TRUE);
          g_autofree int *group = g_new (int, p), *order = g_new (int, p);
          double t, slowest = 0;

          run_set_integers (run);
          t = run_coll_channels (run, algs[a], COMM_ALLREDUCE, TRUE, 0, 0,
                                 Cs[k]);
          assert_allreduce_exact (run);
          for (int r = 0; r < p; r++)
            group[r] = r / 4;
          for (int c = 0; c < Cs[k]; c++)
            {
              gsize lo, hi;
              Run *one;
              double tc;

              comm_shard_bounds (N_ODD, Cs[k], c, &lo, &hi);
              one = run_new_nodes (p, hi - lo, NET_CONTENTION_NONE, 4, TRUE);
              int root = 0;   /* where rank 0, the root, is in channel c */

              comm_channel_order (p, group, c, NULL, order);
              for (int j = 0; j < p; j++)
                {
                  one->hosts[j] = order[j];
                  if (order[j] == 0)
                    root = j;
                }
              tc = run_coll (one, algs[a], COMM_ALLREDUCE, FALSE, 0, root);
              slowest = MAX (slowest, tc);
              run_free (one);
            }
          assert_time (t, slowest);
          run_free (run);
        }
}

/* The ring's channels against their closed form on nodes of g = 4 GPUs
 * with one NIC per GPU, contention none: each channel is a ring over its
 * share (block 0 of C the largest, n0 floats) whose chain of 2(p-1) steps
 * crosses x = 2m node boundaries (m = p/g nodes), each
 * alpha_out + M beta_out, the others alpha_in + M beta_in, M = n0/p floats;
 * the channels run side by side, so C of them take what channel 0 takes,
 * as does the ring's two-level formula auto uses. */
static void
test_channels_ring_formula (void)
{
  static const struct { int p, C; } cases[] = {
    { 8, 1 }, { 8, 2 }, { 12, 1 }, { 12, 2 }, { 12, 4 } };
  const double a_in = 2 * NVL_LAT, b_in = 1 / NVL_BW;
  const double a_out = 2 * LINK_LAT, b_out = 1 / LINK_BW;

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      int p = cases[i].p, C = cases[i].C, m = p / 4, x = 2 * m;
      gsize lo, hi;
      Run *run = run_new_nodes (p, N_EVEN, NET_CONTENTION_NONE, 4, TRUE);
      double t, M, want;
      CommLevels l;

      comm_shard_bounds (N_EVEN, C, 0, &lo, &hi);
      g_assert_cmpuint ((hi - lo) % (gsize) p, ==, 0);
      M = (double) (hi - lo) / p * ELEM;
      want = x * (a_out + M * b_out) + (2 * (p - 1) - x) * (a_in + M * b_in);
      t = run_coll_channels (run, "ring", COMM_ALLREDUCE, TRUE, 0, 0, C);
      assert_time (t, want);
      assert_allreduce_data (run);
      l = (CommLevels) { COMM_ALLREDUCE, p, 4, hi - lo, ELEM, a_in, b_in,
                            a_out, b_out, 0, FALSE, 1 };
      assert_time (comm_lookup ("ring")->cost_levels (&l), want);
      run_free (run);
    }
}

/* On a DGX-1 V100 server (dgx1) the channels' rings follow the NVLink
 * cube-mesh: channel 0 the cycle of doubled connections, so with
 * contention none every message crosses one link of twice a link's rate:
 * the ring's formula with alpha = the link's latency, beta = 1 / (2 B),
 * where host order (channels = 0) relays some steps through a third GPU
 * and takes over 20% longer; channel 1 runs the same cycle the other way, on the
 * other direction of each link, so two channels under max-min take what
 * one takes on half the buffer. */
static void
test_channels_dgx1 (void)
{
  const double B = 25e9, lat = 1e-6;
  BaseValues *v = net_topology_values_new ();
  const CommAlgorithm *ring = comm_lookup ("ring");
  Run *run;
  double t, t_host;
  gsize lo, hi;

  base_values_set_double (v, "network.intra_bandwidth", B);
  base_values_set_double (v, "network.intra_latency", lat);
  run = run_new_on ("dgx1", v, 8, N_EVEN, NET_CONTENTION_NONE);
  t = run_coll_channels (run, "ring", COMM_ALLREDUCE, TRUE, 0, 0, 1);
  assert_time (t, comm_cost (ring, COMM_ALLREDUCE, 8, N_EVEN, ELEM, lat,
                                 1 / (2 * B), 0));
  assert_allreduce_data (run);
  run_free (run);
  run = run_new_on ("dgx1", v, 8, N_EVEN, NET_CONTENTION_NONE);
  t_host = run_coll_channels (run, "ring", COMM_ALLREDUCE, FALSE, 0, 0, 0);
  g_assert_cmpfloat (t_host, >, 1.2 * t);
  run_free (run);
  run = run_new_on ("dgx1", v, 8, N_EVEN, NET_CONTENTION_MAXMIN);
  t = run_coll_channels (run, "ring", COMM_ALLREDUCE, TRUE, 0, 0, 2);
  comm_shard_bounds (N_EVEN, 2, 0, &lo, &hi);
  assert_time (t, comm_cost (ring, COMM_ALLREDUCE, 8, hi - lo, ELEM, lat,
                                 1 / (2 * B), 0));
  assert_allreduce_data (run);
  run_free (run);
  base_values_free (v);
}

/* The point of channels: a ring over 8 nodes of 8 GPUs with one NIC per GPU
 * crosses each node through one NIC; 8 channels cross through all 8, so a
 * large all-reduce under max-min runs more than 7 times faster (the NICs
 * limit it: 8 B against B). */
static void
test_channels_nics (void)
{
  Run *one = run_new_nodes (64, 1 << 20, NET_CONTENTION_MAXMIN, 8, TRUE);
  Run *eight = run_new_nodes (64, 1 << 20, NET_CONTENTION_MAXMIN, 8, TRUE);
  double t1 = run_coll_channels (one, "ring", COMM_ALLREDUCE, FALSE, 0, 0, 1);
  double t8 = run_coll_channels (eight, "ring", COMM_ALLREDUCE, FALSE, 0, 0,
                                 8);

  g_assert_cmpfloat (t1 / t8, >, 7);
  /* at least the bytes a NIC must carry: 2 (p-1)/p N / (8 B) */
  g_assert_cmpfloat (t8, >=, 2.0 * 63 / 64 * (1 << 20) * ELEM / (8 * LINK_BW));
  run_free (one);
  run_free (eight);
}

/* Channels apply to all-reduce only. */
static void
test_channels_kinds (void)
{
  Run *run = run_new (4, 64, NET_CONTENTION_NONE);
  CommArgs a = { .sim = run->sim, .net = run->net, .p = run->p,
                    .hosts = run->hosts, .bufs = run->bufs, .n = run->n,
                    .elem_bytes = ELEM, .channels = 2 };
  g_autoptr (GError) error = NULL;

  g_assert_false (comm_start (comm_lookup ("ring"), &a,
                                  COMM_ALLGATHER, on_done, run, run,
                                  &error));
  g_assert_error (error, COMM_ERROR, COMM_ERROR_UNSUPPORTED);
  g_assert_cmpuint (eng_sim_pending (run->sim), ==, 0);
  run_free (run);
}

/* --- overheads ------------------------------------------------------------ */

/* A launch overhead L delays the whole collective; a step overhead o makes
 * every message's latency max(o, its route's): with contention none the
 * time is L plus the cost formula with alpha replaced by max(alpha, o), for
 * o below and above alpha.  On one node the intra-node overhead applies
 * (groups alike), on a star the other (every rank alone). */
static void
test_overheads (void)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive",
                         "double-tree", "butterfly" };
  const double os[] = { 0.5 * ALPHA, 3 * ALPHA }, L = 7e-6;

  for (guint a = 0; a < G_N_ELEMENTS (algs); a++)
    for (guint k = 0; k < G_N_ELEMENTS (os); k++)
      for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
        {
          int p = ps[i];
          const CommAlgorithm *alg = comm_lookup (algs[a]);
          Run *run = run_new (p, N_EVEN, NET_CONTENTION_NONE);
          CommArgs args = { .sim = run->sim, .net = run->net, .p = p,
                               .hosts = run->hosts, .bufs = run->bufs,
                               .n = N_EVEN, .elem_bytes = ELEM,
                               .launch_overhead = L, .step_overhead = os[k],
                               .intra_step_overhead = 100 * ALPHA };
          double want = L + comm_cost (alg, COMM_ALLREDUCE, p, N_EVEN,
                                           ELEM, MAX (ALPHA, os[k]), BETA, 0);

          g_assert_true (comm_start (alg, &args, COMM_ALLREDUCE, on_done,
                                         run, run, NULL));
          eng_run (run->sim, INFINITY);
          g_assert_cmpint (run->n_done, ==, 1);
          assert_time (run->t_done, want);
          assert_allreduce_data (run);
          run_free (run);
          /* all on one node: the intra-node overhead */
          run = run_new_nodes (p, N_EVEN, NET_CONTENTION_NONE, 16, FALSE);
          args.sim = run->sim;
          args.net = run->net;
          args.hosts = run->hosts;
          args.bufs = run->bufs;
          args.step_overhead = 100 * ALPHA;
          args.intra_step_overhead = os[k];
          want = L + comm_cost (alg, COMM_ALLREDUCE, p, N_EVEN, ELEM,
                                    MAX (2 * NVL_LAT, os[k]), 1 / NVL_BW, 0);
          g_assert_true (comm_start (alg, &args, COMM_ALLREDUCE, on_done,
                                         run, run, NULL));
          eng_run (run->sim, INFINITY);
          assert_time (run->t_done, want);
          run_free (run);
        }
}

/* --- double-tree ----------------------------------------------------------- */

/* The double tree's closed forms with contention = none for one chunk per
 * half (C = 1: every buffer of these tests up to 16 KiB; docs/collectives.md,
 * "double-tree").  H = floor(lg (p-1)); sends stream (a rank is busy b beta
 * per send, the message arrives alpha later), so each level of a tree costs
 * its latency once.  Reduce, A_0 = ceil(n/2) floats up tree A, B_0 =
 * floor(n/2) up B: chunk 0 of A climbs H + 1 hops from position 1; each of
 * the H ranks on A's left edge adds two children's chunks (one where the
 * top has one child, p - 1 = 2^H), the root adds A_0 and B_0; for p even
 * rank 1, a leaf of both trees, sends its B chunk first:
 *   (H + 1)(alpha + A_0 e beta) + [p even] B_0 e beta
 *     + ((2H + 1 - [p - 1 = 2^H]) A_0 + B_0) e gamma,
 * p = 2: alpha + N beta + A_0 e gamma.  Broadcast, A'_0 = floor(n/2),
 * B'_0 = ceil(n/2): the root sends A'_0 then B'_0, which goes down H + 1
 * levels of B, two sends per level below the top (one more where B is
 * complete, p a power of two):
 *   (H + 1) alpha + (A'_0 + (2H + [p = 2^k]) B'_0) e beta.
 * All-reduce: the sum. */
static double
closed_dbtree (CommKind kind, int p, gsize n, double gamma)
{
  int H = (int) floor (log2 (MAX (p - 1, 1)) + 1e-12);
  int even = p % 2 == 0, pow2 = (p & (p - 1)) == 0;
  int top1 = (p - 1) == (1 << H);
  double e = ELEM, A0 = (double) (n - n / 2), B0 = (double) (n / 2);
  double A0b = (double) (n / 2), B0b = (double) (n - n / 2), red, bc;

  if (p == 1)
    return 0;
  g_assert_cmpint (dbt_chunks (p, n), ==, 1);
  if (p == 2)
    red = ALPHA + (double) n * e * BETA + A0 * e * gamma;
  else
    red = (H + 1) * (ALPHA + A0 * e * BETA) + even * B0 * e * BETA
          + ((2 * H + 1 - top1) * A0 + B0) * e * gamma;
  bc = (H + 1) * ALPHA + (A0b + (2 * H + pow2) * B0b) * e * BETA;
  switch (kind)
    {
    case COMM_ALLREDUCE: return red + bc;
    case COMM_REDUCE:    return red;
    case COMM_BROADCAST: return bc;
    default:                 return NAN;
    }
}

/* Its three kinds for p = 2..16, n even, odd, smaller than p, 1 and 0,
 * roots 0 and 1, with and without reduction cost: the result against the
 * definition (and comm_check agreeing), the time against the closed
 * form above and comm_cost; all-reduce ends bit-identical on every
 * rank. */
static void
test_dbtree_operations (void)
{
  const CommKind kinds[] = { COMM_ALLREDUCE, COMM_REDUCE,
                                COMM_BROADCAST };
  const gsize ns[] = { N_EVEN, N_ODD, 3, 1, 0 };

  for (guint j = 0; j < G_N_ELEMENTS (kinds); j++)
    for (int p = 2; p <= 16; p++)
      for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
        for (int root = 0; root < 2; root++)
          for (int g = 0; g < 2; g++)
            {
              gsize n = ns[k];
              double gamma = g ? GAMMA : 0;
              Run *run = run_new (p, n, NET_CONTENTION_NONE);
              double t = run_coll (run, "double-tree", kinds[j], TRUE, gamma,
                                   root);

              assert_operation (run, kinds[j], root);
              assert_checked (run, kinds[j], root);
              if (kinds[j] == COMM_ALLREDUCE)
                assert_allreduce_data (run);
              assert_time (t, comm_cost (comm_lookup ("double-tree"),
                                             kinds[j], p, n, ELEM, ALPHA,
                                             BETA, gamma));
              assert_time (t, closed_dbtree (kinds[j], p, n, gamma));
              run_free (run);
            }
}

/* With max-min on the star a rank's sends stream one after the other, each
 * entering its bandwidth phase as the one before leaves it, but two may
 * arrive at a rank at once (from its two children, or in the broadcast
 * from its two parents) and share its downlink: a transfer then takes up
 * to alpha + 2 c beta, never less than alone.  The time lies between the
 * estimate (the schedule's time with contention none) and the estimate
 * with beta doubled; p = 2 has one flow at a time: exact. */
static void
test_dbtree_maxmin (void)
{
  const CommKind kinds[] = { COMM_ALLREDUCE, COMM_REDUCE,
                                COMM_BROADCAST };
  const gsize ns[] = { N_ODD, 1 << 18 };
  const CommAlgorithm *alg = comm_lookup ("double-tree");
  gboolean shared = FALSE;

  for (guint j = 0; j < G_N_ELEMENTS (kinds); j++)
    for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
      for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
        {
          int p = ps[i];
          Run *run = run_new (p, ns[k], NET_CONTENTION_MAXMIN);
          double t = run_coll (run, "double-tree", kinds[j], TRUE, GAMMA, 1);
          double lo = comm_cost (alg, kinds[j], p, ns[k], ELEM, ALPHA,
                                     BETA, GAMMA);
          double hi = comm_cost (alg, kinds[j], p, ns[k], ELEM, ALPHA,
                                     2 * BETA, GAMMA);

          assert_operation (run, kinds[j], 1);
          if (p == 2)
            assert_time (t, lo);
          g_assert_cmpfloat (t, >=, lo * (1 - 1e-9));
          g_assert_cmpfloat (t, <=, hi * (1 + 1e-9));
          shared = shared || t > lo * (1 + 1e-3);
          run_free (run);
        }
  g_assert_true (shared);   /* the bound is not idle: flows do share */
}

/* The point of it: for a large buffer at p = 16 the binomial tree moves the
 * whole buffer 2 lg p = 8 times in a row, the double tree about twice
 * (each rank sends and receives each half once per phase, pipelined): the
 * measured ratio is the formulas' (which predict more than 3), and it
 * beats the ring's two passes only in latency, not here. */
static void
test_dbtree_vs_tree (void)
{
  const CommAlgorithm *dbt = comm_lookup ("double-tree");
  const CommAlgorithm *tree = comm_lookup ("tree");
  gsize n = 1 << 22;   /* 16 MiB of float32 */
  int p = 16;
  Run *a = run_new (p, 1, NET_CONTENTION_NONE);
  Run *b = run_new (p, 1, NET_CONTENTION_NONE);
  double t_dbt, t_tree, predicted;

  a->n = b->n = n;   /* timing only */
  t_dbt = run_coll (a, "double-tree", COMM_ALLREDUCE, FALSE, GAMMA, 0);
  t_tree = run_coll (b, "tree", COMM_ALLREDUCE, FALSE, GAMMA, 0);
  predicted = comm_cost (tree, COMM_ALLREDUCE, p, n, ELEM, ALPHA,
                             BETA, GAMMA)
              / comm_cost (dbt, COMM_ALLREDUCE, p, n, ELEM, ALPHA,
                               BETA, GAMMA);
  assert_time (t_dbt, comm_cost (dbt, COMM_ALLREDUCE, p, n, ELEM, ALPHA,
                                 BETA, GAMMA));
  g_assert_cmpfloat (predicted, >, 3);
  g_assert_cmpfloat (t_tree / t_dbt, >=, predicted * (1 - 1e-9));
  run_free (a);
  run_free (b);
}

/* Pipelined: 32 chunks per half of 16 MiB at p = 16 stream down each
 * link back to back, so the latency of a hop is paid once along the
 * trees' depth, not once per chunk: the all-reduce takes exactly
 * 2 (H + 1) alpha more when alpha grows by alpha, H = floor(lg 15) = 3 (a
 * reduce up H + 1 levels, a broadcast down as many), while 2 C = 64 chunk
 * times of each phase stay the same.  With wait sends (each chunk's
 * latency paid before the next leaves) it took 2C + H - 1 + 2C + 2H
 * latencies.  The estimate auto and nccl price by is the simulated time. */
static void
test_dbtree_pipelined (void)
{
  const CommAlgorithm *dbt = comm_lookup ("double-tree");
  gsize n = 1 << 22;
  int p = 16, H = 3;
  double t[2];

  g_assert_cmpint (dbt_chunks (p, n), ==, 32);
  for (int i = 0; i < 2; i++)
    {
      Run *run = run_new (p, 1, NET_CONTENTION_NONE);
      double alpha = (i + 1) * ALPHA;
      CommArgs a = { .sim = run->sim, .net = run->net, .p = p,
                     .hosts = run->hosts, .n = n, .elem_bytes = ELEM,
                     .reduce_per_byte = GAMMA, .tag = 7,
                     .step_overhead = alpha };   /* floors every latency */
      g_autoptr (GError) error = NULL;

      g_assert_true (comm_start (dbt, &a, COMM_ALLREDUCE, on_done, run, run,
                                 &error));
      g_assert_no_error (error);
      eng_run (run->sim, INFINITY);
      g_assert_cmpint (run->n_done, ==, 1);
      t[i] = run->t_done;
      assert_time (t[i], comm_cost (dbt, COMM_ALLREDUCE, p, n, ELEM, alpha,
                                    BETA, GAMMA));
      run_free (run);
    }
  assert_time (t[1] - t[0], 2 * (H + 1) * ALPHA);
}

/* --- butterfly ----------------------------------------------------------- */

/* The butterfly's closed forms (docs/collectives.md, "butterfly") written
 * out for p = 8, 6 and 7, N_ODD floats (the whole buffer moves every
 * round, so n need not divide), with and without reduction cost:
 *   p = 8: lg 8 = 3 rounds, each alpha + N beta + N gamma;
 *   p = 6: p' = 4 and 2 extra ranks (<= p'/2): the fold's first step, then
 *          lg 4 = 2 rounds, 3 (alpha + N beta + N gamma) in all; the fold's
 *          last step (ranks 0 and 1 to 4 and 5) ends no later than rank 3,
 *          which no extra rank waits for;
 *   p = 7: 3 extra ranks (> p'/2): ranks 0 and 3 both hand the sum back,
 *          and rank 3 is the last to finish the rounds from rank 0's fold,
 *          so the last step adds alpha + N beta:
 *          4 (alpha + N beta) + 3 N gamma.
 * Every rank ends with the same bits; under max-min, p = 8 takes the same
 * time (partners exchange over disjoint full-duplex links). */
static void
test_bf_closed (void)
{
  const int pvals[] = { 8, 6, 7 };
  const double N = N_ODD * ELEM;

  for (guint i = 0; i < G_N_ELEMENTS (pvals); i++)
    for (int g = 0; g < 2; g++)
      {
        int p = pvals[i];
        double gamma = g ? GAMMA : 0, want;
        Run *run = run_new (p, N_ODD, NET_CONTENTION_NONE);
        double t = run_coll (run, "butterfly", COMM_ALLREDUCE, TRUE, gamma,
                             0);

        if (p == 8 || p == 6)
          want = 3 * (ALPHA + N * BETA + N * gamma);
        else
          want = 4 * (ALPHA + N * BETA) + 3 * N * gamma;
        assert_time (t, want);
        assert_time (t, comm_cost (comm_lookup ("butterfly"), COMM_ALLREDUCE,
                                   p, N_ODD, ELEM, ALPHA, BETA, gamma));
        assert_allreduce_data (run);
        run_free (run);
      }
  {
    Run *run = run_new (8, N_ODD, NET_CONTENTION_MAXMIN);
    double t = run_coll (run, "butterfly", COMM_ALLREDUCE, TRUE, GAMMA, 0);

    assert_time (t, 3 * (ALPHA + N * BETA + N * GAMMA));
    assert_allreduce_data (run);
    run_free (run);
  }
}

/* The fold for every p from 2 to 33 (every count of extra ranks below
 * p' = 2, 4, 8, 16 and 32), n = N_ODD, 5 and 0: with small integer inputs
 * every rank ends with exactly the sum; the time is the closed form of
 * tests/util.c and comm_cost, a timing-only run takes the same, and the
 * executor makes comm_messages() transfers: p' lg p' + 2 (p - p'). */
static void
test_bf_fold (void)
{
  const gsize ns[] = { N_ODD, 5, 0 };

  for (int p = 2; p <= 33; p++)
    for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
      {
        int pp = pow2_floor (p);
        gsize n = ns[k];
        Run *run = run_new (p, n, NET_CONTENTION_NONE);
        Run *timing = run_new (p, n, NET_CONTENTION_NONE);
        CommStats a, b;
        double t;

        run_set_integers (run);
        comm_stats (&a);
        t = run_coll (run, "butterfly", COMM_ALLREDUCE, TRUE, GAMMA, 0);
        comm_stats (&b);
        assert_allreduce_exact (run);
        assert_time (t, test_allreduce_closed_form ("butterfly", p,
                                                    (double) n * ELEM, ALPHA,
                                                    BETA, GAMMA));
        assert_time (t, comm_cost (comm_lookup ("butterfly"), COMM_ALLREDUCE,
                                   p, n, ELEM, ALPHA, BETA, GAMMA));
        g_assert_cmpfloat (run_coll (timing, "butterfly", COMM_ALLREDUCE,
                                     FALSE, GAMMA, 0), ==, t);
        g_assert_cmpuint (b.transfers - a.transfers, ==,
                          (guint64) pp * (guint64) log2_ceil (pp)
                          + 2 * (guint64) (p - pp));
        g_assert_cmpfloat (comm_messages ("butterfly", COMM_ALLREDUCE, p, n,
                                          1),
                           ==, (double) (b.transfers - a.transfers));
        run_free (run);
        run_free (timing);
      }
}

/* --- auto ------------------------------------------------------------------ */

/* What auto runs for an all-reduce of n floats on `run` (channels C). */
static const CommAlgorithm *
auto_pick (Run *run, gsize n, int channels)
{
  CommArgs a = { .sim = run->sim, .net = run->net, .p = run->p,
                    .hosts = run->hosts, .n = n, .elem_bytes = ELEM,
                    .channels = channels };

  return comm_resolve (comm_lookup ("auto"), &a, COMM_ALLREDUCE);
}

/* On a star every route has ALPHA and BETA: auto runs the algorithm of
 * least comm_cost (the first in the registry on a tie to 1e-9) but the
 * baseline (naive), for small and large buffers, and its run takes that
 * least cost, which auto's own comm_cost reports. */
static void
test_auto_star (void)
{
  const gsize ns[] = { 1, 100, N_EVEN, 1 << 20 };
  const char *seen[8] = { NULL };
  int n_seen = 0;

  for (guint i = 0; i < G_N_ELEMENTS (ps); i++)
    for (guint k = 0; k < G_N_ELEMENTS (ns); k++)
      {
        int p = ps[i];
        Run *run = run_new (p, ns[k], NET_CONTENTION_NONE);
        const CommAlgorithm *pick = auto_pick (run, ns[k], 0), *best = NULL;
        double least = INFINITY, t;

        for (const CommAlgorithm *const *a = comm_all (); *a; a++)
          {
            double c;

            /* a star has no switch that reduces, where alone auto
             * prices nvls and nvls-tree (test-collective.c runs them) */
            if ((*a)->choose || (*a)->baseline || (*a)->in_switch)
              continue;
            c = comm_cost (*a, COMM_ALLREDUCE, p, ns[k], ELEM, ALPHA,
                               BETA, 0);
            /* ties up to rounding go to the first */
            if (c < least * (1 - 1e-9))
              {
                least = c;
                best = *a;
              }
          }
        g_assert_true (pick == best);
        t = run_coll (run, "auto", COMM_ALLREDUCE, TRUE, 0, 0);
        assert_time (t, least);
        assert_time (t, comm_cost (comm_lookup ("auto"),
                                       COMM_ALLREDUCE, p, ns[k], ELEM,
                                       ALPHA, BETA, 0));
        assert_allreduce_data (run);
        for (int j = 0; j <= n_seen; j++)
          if (j == n_seen)
            {
              seen[n_seen++] = pick->name;
              break;
            }
          else if (strcmp (seen[j], pick->name) == 0)
            break;
        run_free (run);
      }
  /* latency-bound and bandwidth-bound sizes pick differently */
  g_assert_cmpint (n_seen, >=, 2);
}

/* On nodes of 8 GPUs whose NVLink is 8 times a NIC, with one NIC per GPU
 * and max-min: for a large buffer over 4 nodes one ring crosses each node
 * through one NIC, so auto runs hierarchical, and nothing else runs
 * faster; with 8 channels the ring crosses through all 8 NICs, and auto
 * runs it when that is cheaper by its formula.  Either way auto's run is
 * at most 5% slower than the fastest algorithm's. */
static void
test_auto_nodes (void)
{
  const int Cs[] = { 1, 8 };

  for (guint k = 0; k < G_N_ELEMENTS (Cs); k++)
    {
      gsize n = 1 << 20;
      Run *run = run_new_nodes (32, n, NET_CONTENTION_MAXMIN, 8, TRUE);
      const CommAlgorithm *pick = auto_pick (run, n, Cs[k]);
      double t_auto = run_coll_channels (run, "auto", COMM_ALLREDUCE, FALSE,
                                         0, 0, Cs[k]);
      double fastest = INFINITY;

      if (Cs[k] == 1)
        g_assert_cmpstr (pick->name, ==, "hierarchical");
      for (const CommAlgorithm *const *a = comm_all (); *a; a++)
        {
          Run *other;
          double t;

          if ((*a)->choose || strcmp ((*a)->name, "naive") == 0 || (*a)->in_switch)
            continue;
          other = run_new_nodes (32, n, NET_CONTENTION_MAXMIN, 8, TRUE);
          t = run_coll_channels (other, (*a)->name, COMM_ALLREDUCE, FALSE,
                                 0, 0, Cs[k]);
          fastest = MIN (fastest, t);
          run_free (other);
        }
      g_assert_cmpfloat (t_auto, <=, 1.05 * fastest);
      run_free (run);
    }
}

/* Under max-min the double tree's ranks receive from two children at once,
 * which auto's evaluation of it shares (dbt_ingress_share): on a star
 * of 500 ranks (not a power of two) an 8 MB all-reduce, where the
 * double tree's contention-free formula beats the ring's, auto runs what
 * is fastest under max-min, to 5%. */
static void
test_auto_maxmin (void)
{
  const int p = 500;
  const gsize n = 2000000;
  const char *algs[] = { "ring", "halving-doubling", "double-tree" };
  Run *run = run_new (p, n, NET_CONTENTION_MAXMIN);
  double t_auto = run_coll (run, "auto", COMM_ALLREDUCE, FALSE, 0, 0);
  double fastest = INFINITY;

  g_assert_cmpfloat (comm_cost (comm_lookup ("double-tree"),
                                    COMM_ALLREDUCE, p, n, ELEM, ALPHA, BETA, 0),
                     <, comm_cost (comm_lookup ("ring"), COMM_ALLREDUCE,
                                       p, n, ELEM, ALPHA, BETA, 0));
  run_free (run);
  for (guint a = 0; a < G_N_ELEMENTS (algs); a++)
    {
      double t;

      run = run_new (p, n, NET_CONTENTION_MAXMIN);
      t = run_coll (run, algs[a], COMM_ALLREDUCE, FALSE, 0, 0);
      fastest = MIN (fastest, t);
      run_free (run);
    }
  g_assert_cmpfloat (t_auto, <=, 1.05 * fastest);
}

int
main (int argc, char **argv)
{
  const char *algs[] = { "ring", "tree", "halving-doubling", "naive",
                         "hierarchical", "butterfly" };

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/collectives/registry", test_registry);
  g_test_add_func ("/collectives/unsupported", test_unsupported);
  g_test_add_func ("/collectives/concurrent", test_concurrent);
  g_test_add_func ("/collectives/work-bound", test_work_bound);
  g_test_add_func ("/collectives/operations", test_operations);
  g_test_add_func ("/collectives/overheads", test_overheads);
  g_test_add_func ("/collectives/auto/star", test_auto_star);
  g_test_add_func ("/collectives/auto/nodes", test_auto_nodes);
  g_test_add_func ("/collectives/auto/maxmin", test_auto_maxmin);
  g_test_add_func ("/collectives/channels/order", test_channel_order);
  g_test_add_func ("/collectives/channels/none", test_channels_none);
  g_test_add_func ("/collectives/channels/ring-formula", test_channels_ring_formula);
  g_test_add_func ("/collectives/channels/dgx1", test_channels_dgx1);
  g_test_add_func ("/collectives/channels/nics", test_channels_nics);
  g_test_add_func ("/collectives/channels/kinds", test_channels_kinds);
  g_test_add_func ("/collectives/operations/maxmin", test_operations_maxmin);
  g_test_add_func ("/collectives/double-tree/operations",
                   test_dbtree_operations);
  g_test_add_func ("/collectives/double-tree/maxmin", test_dbtree_maxmin);
  g_test_add_func ("/collectives/double-tree/vs-tree", test_dbtree_vs_tree);
  g_test_add_func ("/collectives/double-tree/pipelined",
                   test_dbtree_pipelined);
  g_test_add_func ("/collectives/double-tree/nodes/data",
                   test_dbtree_nodes_data);
  g_test_add_func ("/collectives/double-tree/nodes/estimate",
                   test_dbtree_nodes_estimate);
  g_test_add_func ("/collectives/double-tree/nodes/crossings",
                   test_dbtree_nodes_crossings);
  g_test_add_func ("/collectives/butterfly/closed-form", test_bf_closed);
  g_test_add_func ("/collectives/butterfly/fold", test_bf_fold);
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
  g_test_add_data_func ("/collectives/double-tree/p1", "double-tree", test_p1);
  g_test_add_data_func ("/collectives/double-tree/allreduce/timing-only",
                        "double-tree", test_timing_only);
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
  g_test_add_func ("/collectives/hierarchical/nodes/data",
                   test_hier_nodes_data);
  g_test_add_func ("/collectives/hierarchical/scattered-groups",
                   test_hier_scattered_groups);
  g_test_add_func ("/collectives/hierarchical/nodes/time",
                   test_hier_nodes_time);
  g_test_add_func ("/collectives/hierarchical/racks/time",
                   test_hier_racks_time);
  g_test_add_func ("/collectives/hierarchical/grouped-cost",
                   test_hier_grouped_cost);
  g_test_add_func ("/collectives/hierarchical/vs-ring", test_hier_vs_ring);
  g_test_add_func ("/collectives/hierarchical/vs-ring-none",
                   test_hier_vs_ring_none);
  g_test_add_func ("/collectives/hierarchical/work-bound",
                   test_hier_work_bound);
  return g_test_run ();
}
