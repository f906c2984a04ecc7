/*
 * test-ps-servers.c — which parameter server holds which keys
 * (docs/policies.md, "Placement of the keys"): the range partition is
 * today's contiguous shards, consistent hashing covers every key once with
 * a load imbalance under a derived bound, the ring's chains are distinct
 * servers, real math does not depend on the placement, and bad keys are
 * refused in one line.  Chain replication ([policy] replication): the
 * closed-form time and bytes of a push through k replicas, replicas that
 * step with the primary's arithmetic, and the same model trained with or
 * without copies.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/shard.h"
#include "kernels/kernels.h"
#include "policies/partition.h"
#include "policies/ps-replica.h"
#include "tests/util.h"

/* partition = range: server s holds exactly comm_shard_bounds's shard s,
 * and its chain is s, s + 1, ... mod S. */
static void
test_range_is_shards (void)
{
  const gsize P = 1003;
  const int S = 7;
  PolPartition *p = pol_partition_new (POL_PARTITION_RANGE, P, S, 1, S, 9);
  g_assert_cmpint (p->n_ranges, ==, S);
  for (int s = 0; s < S; s++)
    {
      gsize lo, hi;
      comm_shard_bounds (P, S, s, &lo, &hi);
      g_assert_cmpint (p->server_first[s + 1] - p->server_first[s], ==, 1);
      const PolRange *r = &p->ranges[p->by_server[p->server_first[s]]];
      g_assert_cmpuint (r->lo, ==, lo);
      g_assert_cmpuint (r->hi, ==, hi);
      g_assert_cmpuint (p->server_keys[s], ==, hi - lo);
      for (int h = 0; h < S; h++)
        g_assert_cmpint (pol_partition_chain (p, s, h), ==, (s + h) % S);
    }
  /* sizes differ by at most one: max / mean = ceil(P / S) S / P */
  g_assert_cmpfloat_with_epsilon (pol_partition_imbalance (p),
                                  (double) ((P + S - 1) / S) * S / (double) P, 1e-12);
  pol_partition_free (p);
}

/* partition = hash: the ranges tile [0, P) in order with no two neighbours
 * of one owner, the per-server lists hold each range once, keys add up,
 * every chain is `depth` distinct servers starting at the owner, and the
 * placement is a function of the seed alone. */
static void
test_hash_covers (void)
{
  const gsize P = 100000;
  for (int S = 1; S <= 9; S += 4)
    for (guint64 seed = 1; seed <= 3; seed++)
      {
        int depth = MIN (S, 3);
        PolPartition *p = pol_partition_new (POL_PARTITION_HASH, P, S, 16, depth, seed);
        PolPartition *q = pol_partition_new (POL_PARTITION_HASH, P, S, 16, depth, seed);
        gsize at = 0, sum = 0;
        for (int r = 0; r < p->n_ranges; r++)
          {
            g_assert_cmpuint (p->ranges[r].lo, ==, at);
            g_assert_cmpuint (p->ranges[r].hi, >, at);
            at = p->ranges[r].hi;
            if (r > 0)
              g_assert_cmpint (p->owner[r], !=, p->owner[r - 1]);
            g_assert_cmpint (pol_partition_chain (p, r, 0), ==, p->owner[r]);
            for (int h = 1; h < depth; h++)
              for (int g = 0; g < h; g++)
                g_assert_cmpint (pol_partition_chain (p, r, h), !=, pol_partition_chain (p, r, g));
            g_assert_cmpuint (q->ranges[r].lo, ==, p->ranges[r].lo);
            g_assert_cmpint (q->owner[r], ==, p->owner[r]);
          }
        g_assert_cmpuint (at, ==, P);
        g_assert_cmpint (q->n_ranges, ==, p->n_ranges);
        for (int s = 0; s < S; s++)
          {
            gsize keys = 0;
            for (int j = p->server_first[s]; j < p->server_first[s + 1]; j++)
              {
                g_assert_cmpint (p->owner[p->by_server[j]], ==, s);
                keys += p->ranges[p->by_server[j]].hi - p->ranges[p->by_server[j]].lo;
              }
            g_assert_cmpuint (keys, ==, p->server_keys[s]);
            sum += keys;
          }
        g_assert_cmpuint (sum, ==, P);
        if (S == 1)
          g_assert_cmpint (p->n_ranges, ==, 1); /* one server: one range */
        pol_partition_free (p);
        pol_partition_free (q);
      }
}

/* The x solving f(x) = c for f increasing on [0, hi) with f(0) = 0. */
static double
solve (double (*f) (double), double c, double hi)
{
  double lo = 0;
  for (int i = 0; i < 200; i++)
    {
      double mid = 0.5 * (lo + hi);
      if (f (mid) < c)
        lo = mid;
      else
        hi = mid;
    }
  return hi;
}

static double up_rate (double e) { return e - log1p (e); }
static double down_rate (double e) { return -e - log1p (-e); }

/* The load bound.  With S v points placed uniformly at random, the arcs
 * are the spacings E_j / sum E of i.i.d. Exp(1) variables, and server s
 * holds v of them: its share is G_s / sum_t G_t with G_s ~ Gamma(v, 1)
 * independent, so the imbalance is I = S max_s G_s / sum_t G_t.  Chernoff:
 * P(G_s >= v (1 + e)) <= exp(-v (e - ln(1 + e))), so with a union over S
 * servers max_s G_s < v (1 + e) except with probability delta when
 * v (e - ln(1 + e)) = ln(S / delta); and sum G < S v (1 - h) with
 * probability at most exp(-S v (-h - ln(1 - h))) = delta.  Cutting arcs
 * at key boundaries moves each of a server's v arcs by less than one key,
 * adding at most S v / P.  Hence, except with probability 2 delta,
 *   I <= (1 + e) / (1 - h) + S v / P,
 * which is 1 + O(sqrt(ln(S / delta) / v)).  With delta = 1e-4 the 60
 * seeded cases below hold it (a case failing would happen with
 * probability under 1.2 %); the mean imbalance also falls as v grows. */
static void
test_hash_balance (void)
{
  const gsize P = 1000000;
  const double delta = 1e-4;
  const int Ss[] = { 4, 16, 64 };
  const int vs[] = { 4, 16, 64, 256 };
  for (guint i = 0; i < G_N_ELEMENTS (Ss); i++)
    {
      double prev_mean = INFINITY;
      for (guint j = 0; j < G_N_ELEMENTS (vs); j++)
        {
          int S = Ss[i], v = vs[j];
          double e = solve (up_rate, log (S / delta) / v, 64);
          double h = solve (down_rate, log (1 / delta) / ((double) S * v), 1);
          double bound = (1 + e) / (1 - h) + (double) S * v / (double) P;
          double mean = 0;
          for (guint64 seed = 1; seed <= 5; seed++)
            {
              PolPartition *p = pol_partition_new (POL_PARTITION_HASH, P, S, v, 1, seed);
              double I = pol_partition_imbalance (p);
              g_assert_cmpfloat (I, >=, 1.0);
              if (I > bound)
                g_error ("S %d, v %d, seed %" G_GUINT64_FORMAT ": imbalance %g over the bound %g",
                         S, v, seed, I, bound);
              mean += I / 5;
              pol_partition_free (p);
            }
          g_assert_cmpfloat (mean, <, prev_mean);
          prev_mean = mean;
        }
    }
}

static const char scenario[] =
  "[scenario]\nname = t\nseed = 5\niterations = 4\n"
  "[cluster]\nworkers = 2\nservers = 3\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 1\n"
  "[network]\ntopology = star\nbandwidth = 1Gbps\nlatency = 10us\n"
  "[model]\nkind = mlp\nhidden = 16\noptimizer = adam\nlr = 0.01\nbatch = 8\n"
  "[policy]\nkind = ps\nconsistency = bsp\npartition = range\n";

/* BSP with two workers: each key's round mean is (g1 + g2) / 2 whatever
 * order the server adds them in (addition of two floats commutes), and
 * Adam is elementwise, so the model trained is the same bits under any
 * placement; hash placement reports its imbalance in the params. */
static void
test_hash_same_math (void)
{
  TestRun *range = test_run_collect (scenario, NULL);
  g_autofree char *hashed = test_replaced (scenario, "partition = range",
                                           "partition = hash\nvirtual_nodes = 5");
  TestRun *hash = test_run_collect (hashed, NULL);
  g_assert_cmpint (hash->sum.updates, ==, range->sum.updates);
  g_assert_true (isfinite (range->sum.final_loss));
  g_assert_true (memcmp (&hash->sum.final_loss, &range->sum.final_loss, sizeof (double)) == 0);
  g_assert_true (memcmp (&hash->sum.final_accuracy, &range->sum.final_accuracy,
                         sizeof (double)) == 0);
  g_assert_null (g_hash_table_lookup (range->params, "policy.imbalance"));
  const char *imb = g_hash_table_lookup (hash->params, "policy.imbalance");
  g_assert_nonnull (imb);
  g_assert_cmpfloat (g_ascii_strtod (imb, NULL), >=, 1.0);
  test_run_free (range);
  test_run_free (hash);
}

/* Bad placement keys: one line naming [policy] key and the fix. */
static void
test_refusals_placement (void)
{
  static const TestRefusal cases[] = {
    { "partition = range", "partition = ring", "[policy] partition" },
    { "partition = range", "partition = range\nvirtual_nodes = 8",
      "[policy] virtual_nodes: applies only to partition = hash" },
    { "partition = range", "partition = hash\nvirtual_nodes = 0", "[policy] virtual_nodes" },
    { "partition = range", "partition = hash\nvirtual_nodes = 5000", "[policy] virtual_nodes" },
    { "servers = 3", "servers = 8192",
      "[cluster] servers" },
    { "kind = ps\nconsistency = bsp\npartition = range", "kind = allreduce\npartition = hash",
      "[policy] partition: applies only to kind = ps" },
  };
  test_refusals (scenario, cases, G_N_ELEMENTS (cases));
  /* too many points on the ring */
  static const TestRefusal ring[] = {
    { "virtual_nodes = 5", "virtual_nodes = 1024", "[policy] virtual_nodes" },
  };
  g_autofree char *big = test_replaced (scenario, "partition = range",
                                        "partition = hash\nvirtual_nodes = 5");
  g_autofree char *many = test_replaced (big, "servers = 3", "servers = 8192");
  test_refusals (many, ring, G_N_ELEMENTS (ring));
}

/* dtsim check prints the placement: ranges per server and the spread. */
static void
test_check_prints_placement (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-psservers-XXXXXX", NULL);
  g_autofree char *hashed = test_replaced (scenario, "partition = range",
                                           "partition = hash\nvirtual_nodes = 5");
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, hashed, -1, NULL));
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "t.ini", NULL), ==, 0);
  g_assert_nonnull (strstr (out, "placement: partition = hash (5 virtual nodes per server"));
  g_assert_nonnull (strstr (out, "  server2: "));
  g_assert_nonnull (strstr (out, "keys per server: min "));
  sim_remove_tree (dir);
}

/* One worker, S = 4 servers of n = P / S keys each (partition = range),
 * a star with per-link latency l and bandwidth B and no contention, fixed
 * compute time T, server rate F.  With replication k every iteration is
 *   pull 2l, reply 2l + 4n/B, compute T,
 *   k transfers 2l + 4n/B (the push, then k - 1 forwards), k updates
 *   U = sgd_flops(n) / F, and the tail's acknowledgement 2l + a/B,
 * a = POL_PS_ACK_BYTES (docs/policies.md, "Chain replication"); each
 * server's chain runs alone on its links. */
static const char repl_scenario[] =
  "[scenario]\nname = t\nseed = 3\niterations = 3\n"
  "[cluster]\nworkers = 1\nservers = 4\n"
  "[device]\nflops = 1GFLOPS\nefficiency = 0.5\nstep_time = 2ms\n"
  "[network]\ntopology = star\nbandwidth = 1Gbps\nlatency = 20us\ncontention = none\n"
  "[model]\nfeatures = 15\nclasses = 4\nsamples = 512\ntest_samples = 64\nbatch = 8\n"
  "[policy]\nkind = ps\nconsistency = bsp\nreplication = 1\n";

static void
test_replication_closed_form (void)
{
  const double S = 4, T = 2e-3, l = 20e-6, B = 1e9 / 8, F = 1e9 * 0.5;
  const double P = 15 * 4 + 4;           /* softmax: d k + k */
  const double n = P / S;                /* keys of one range */
  const double U = kern_sgd_flops ((gsize) n) / F;
  const double xfer = 2 * l + 4 * n / B;
  const double ack = 2 * l + POL_PS_ACK_BYTES / B;
  g_autofree char *dir = g_dir_make_tmp ("dtsim-psrepl-XXXXXX", NULL);
  for (int k = 2; k <= 4; k++)
    {
      g_autofree char *from = g_strdup_printf ("replication = %d", k);
      g_autofree char *text = test_replaced (repl_scenario, "replication = 1", from);
      TestRun *r = test_run_collect (text, NULL);
      const double iter = 2 * l + xfer + T + k * xfer + k * U + ack;
      g_assert_cmpuint (r->rows->len, ==, 3);
      for (guint i = 0; i < r->rows->len; i++)
        {
          const TestRow *row = &g_array_index (r->rows, TestRow, i);
          test_assert_close (row->end - row->start, iter, 1e-9);
          test_assert_close (row->compute, T, 1e-12);
        }
      g_assert_cmpint (r->sum.updates, ==, 3);
      /* the run ends when the last acknowledgement arrives */
      test_assert_close (r->sum.sim_time, 3 * iter, 1e-9);
      test_run_free (r);

      /* bytes of one push: k copies of every range and one
       * acknowledgement per range */
      g_autofree char *name = g_strdup_printf ("k%d", k);
      g_autofree char *db = test_run_messages (dir, text, name);
      g_assert_cmpfloat (test_query_number (db, "SELECT sum(bytes) FROM messages WHERE tag IN "
                                            "('grad', 'replica', 'ack')"),
                         ==, k * 4 * P + S * POL_PS_ACK_BYTES);
      g_assert_cmpfloat (test_query_number (db, "SELECT count(*) FROM messages WHERE tag = 'replica'"),
                         ==, (k - 1) * S);
      g_assert_cmpfloat (test_query_number (db, "SELECT count(*) FROM messages WHERE tag = 'ack'"),
                         ==, S);
    }
  sim_remove_tree (dir);
}

/* A replica steps with the primary's arithmetic: under BSP the round's
 * sum in arrival order, times 1/W, one optimizer step; so the same
 * gradients give the same bits.  A resent gradient it already holds is
 * skipped and changes nothing. */
static void
test_replica_same_bits (void)
{
  const gsize P = 37;
  const int W = 3, S = 3;
  PolPartition *part = pol_partition_new (POL_PARTITION_RANGE, P, S, 1, S, 1);
  float init[37], grads[3][37];
  for (gsize i = 0; i < P; i++)
    {
      init[i] = 0.01f * (float) i - 0.2f;
      for (int w = 0; w < W; w++)
        grads[w][i] = 0.3f * (float) w - 0.001f * (float) (i * i) + 0.07f;
    }
  KernOptConfig opt = { 0 };
  opt.kind = &kern_opt_adam;
  opt.lr = 0.01;
  opt.beta1 = 0.9;
  opt.beta2 = 0.999;
  opt.eps = 1e-8;
  PolReplicas *rp = pol_replicas_new (part, 3, W, init, &opt, TRUE);
  for (int r = 0; r < part->n_ranges; r++)
    {
      gsize lo = part->ranges[r].lo, len = part->ranges[r].hi - lo;
      /* the primary: two rounds, gradients arriving in order 2, 0, 1 */
      float *prim = g_memdup2 (init + lo, len * sizeof (float));
      float *sum = g_new0 (float, len);
      KernOptimizer *o = kern_optimizer_new (&opt, len);
      for (gint64 round = 0; round < 2; round++)
        {
          for (int j = 0; j < W; j++)
            {
              int w = (j + 2) % W;
              for (gsize i = 0; i < len; i++)
                sum[i] += grads[w][lo + i];
              for (int h = 1; h < 3; h++)
                g_assert_true (pol_replicas_apply (rp, r, h, w, round, grads[w] + lo));
            }
          float inv = 1.0f / (float) W;
          for (gsize i = 0; i < len; i++)
            sum[i] *= inv;
          kern_optimizer_step (o, prim, sum);
          memset (sum, 0, len * sizeof (float));
        }
      for (int h = 1; h < 3; h++)
        {
          g_assert_true (memcmp (pol_replicas_params (rp, r, h), prim, len * sizeof (float)) == 0);
          /* round 1 of worker 0 again: already held */
          g_assert_false (pol_replicas_apply (rp, r, h, 0, 1, grads[0] + lo));
          g_assert_cmpint (pol_replicas_applied (rp, r, h, 0), ==, 2);
          g_assert_true (memcmp (pol_replicas_params (rp, r, h), prim, len * sizeof (float)) == 0);
        }
      kern_optimizer_free (o);
      g_free (prim);
      g_free (sum);
    }
  pol_replicas_free (rp);
  pol_partition_free (part);
}

/* Replication costs time, not math: BSP with two workers trains the same
 * bits with and without copies (each round's mean is g1 + g2 over 2
 * whatever the order), in more simulated time; replication = 1 is the
 * run without the key. */
static void
test_replication_same_math (void)
{
  TestRun *plain = test_run_collect (scenario, NULL);
  g_autofree char *one = test_replaced (scenario, "partition = range",
                                        "partition = range\nreplication = 1");
  g_autofree char *two = test_replaced (scenario, "partition = range",
                                        "partition = hash\nvirtual_nodes = 3\nreplication = 3");
  TestRun *r1 = test_run_collect (one, NULL);
  TestRun *r2 = test_run_collect (two, NULL);
  g_assert_true (memcmp (&r1->sum.sim_time, &plain->sum.sim_time, sizeof (double)) == 0);
  g_assert_true (memcmp (&r1->sum.final_loss, &plain->sum.final_loss, sizeof (double)) == 0);
  g_assert_cmpuint (r1->rows->len, ==, plain->rows->len);
  g_assert_cmpint (r2->sum.updates, ==, plain->sum.updates);
  g_assert_true (isfinite (plain->sum.final_loss));
  g_assert_true (memcmp (&r2->sum.final_loss, &plain->sum.final_loss, sizeof (double)) == 0);
  g_assert_cmpfloat (r2->sum.sim_time, >, plain->sum.sim_time);
  test_run_free (plain);
  test_run_free (r1);
  test_run_free (r2);
}

/* Bad replication keys: one line naming [policy] replication. */
static void
test_refusals_replication (void)
{
  static const TestRefusal cases[] = {
    { "partition = range", "partition = range\nreplication = 4",
      "[policy] replication: 4 copies of each key range need as many servers, found 3" },
    { "partition = range", "partition = range\nreplication = 0", "[policy] replication" },
    { "partition = range", "partition = range\nreplication = 17", "[policy] replication" },
    { "kind = ps\nconsistency = bsp\npartition = range", "kind = allreduce\nreplication = 2",
      "[policy] replication: applies only to kind = ps" },
    { "partition = range", "partition = range\nreplication = 2\nfilter = zero",
      "[policy] replication: the copies forward whole key ranges" },
  };
  test_refusals (scenario, cases, G_N_ELEMENTS (cases));
}

/* dtsim check prints each range's chain and the bytes of a push. */
static void
test_check_prints_chains (void)
{
  g_autofree char *dir = g_dir_make_tmp ("dtsim-psrepl-XXXXXX", NULL);
  g_autofree char *text = test_replaced (repl_scenario, "replication = 1", "replication = 3");
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "t.ini", NULL), ==, 0);
  g_assert_nonnull (strstr (out, "replication: 3 servers per chain"));
  g_assert_nonnull (strstr (out, "  range [48, 64): chain server3 -> server0 -> server1\n"));
  /* 3 x 4 x 64 bytes of gradient and 4 acknowledgements */
  g_autofree char *bytes = g_strdup_printf ("bytes per push of a worker: %d ",
                                            3 * 4 * 64 + 4 * POL_PS_ACK_BYTES);
  g_assert_nonnull (strstr (out, bytes));
  sim_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ps-servers/range-is-shards", test_range_is_shards);
  g_test_add_func ("/ps-servers/hash-covers", test_hash_covers);
  g_test_add_func ("/ps-servers/hash-balance", test_hash_balance);
  g_test_add_func ("/ps-servers/hash-same-math", test_hash_same_math);
  g_test_add_func ("/ps-servers/refusals", test_refusals_placement);
  g_test_add_func ("/ps-servers/check-prints-placement", test_check_prints_placement);
  g_test_add_func ("/ps-servers/replication/closed-form", test_replication_closed_form);
  g_test_add_func ("/ps-servers/replication/replica-same-bits", test_replica_same_bits);
  g_test_add_func ("/ps-servers/replication/same-math", test_replication_same_math);
  g_test_add_func ("/ps-servers/replication/refusals", test_refusals_replication);
  g_test_add_func ("/ps-servers/replication/check-prints-chains", test_check_prints_chains);
  return g_test_run ();
}
