/*
 * test-ps-servers.c — which parameter server holds which keys
 * (docs/policies.md, "Placement of the keys"): the range partition is
 * today's contiguous shards, consistent hashing covers every key once with
 * a load imbalance under a derived bound, the ring's chains are distinct
 * servers, real math does not depend on the placement, and bad keys are
 * refused in one line.  Chain replication ([policy] replication): the
 * closed-form time and bytes of a push through k replicas, replicas that
 * step with the primary's arithmetic, and the same model trained with or
 * without copies.  Server crashes ([failures] server): the closed-form
 * time of a takeover, exactly the crashed server's range moving, the same
 * model bits after a takeover, a promoted copy's state, reinit and
 * checkpoint recovery, runs without crashes unchanged, and the refusals.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "comm/shard.h"
#include "kernels/kernels.h"
#include "policies/partition.h"
#include "policies/ps-replica.h"
#include "tests/util.h"
#include "views/tracedigest.h"

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

/* Server crashes (docs/policies.md, "Server failures").  The scenario of
 * the closed forms above with replication = 2: chains 0 -> 1, 1 -> 2,
 * 2 -> 3, 3 -> 0.  Server 1 crashes at t_c, in the middle of the
 * worker's first compute (t0 = 2l + xfer: its pull and the replies), and
 * is detected d later, after the compute ended: its push of range 1 was
 * lost on arrival, and range 0's forward to it too.  At t_c + d server 2
 * holds range 1 and the worker resends to it and to server 0 (range 0's
 * chain changed); server 0 holds its push, so acknowledges at once (its
 * chain is now itself), server 2 applies it (U) and, the tail of a chain
 * of one, acknowledges:
 *   iteration 0 ends at t_c + d + xfer + U + ack,
 * and that resend is the first push after the takeover, handed to the
 * network at t_c + d and arriving at t_c + d + xfer (a free network). */
static void
test_crash_takeover_time (void)
{
  const double S = 4, T = 2e-3, l = 20e-6, B = 1e9 / 8, F = 1e9 * 0.5;
  const double P = 15 * 4 + 4, n = P / S;
  const double U = kern_sgd_flops ((gsize) n) / F;
  const double xfer = 2 * l + 4 * n / B;
  const double ack = 2 * l + POL_PS_ACK_BYTES / B;
  const double t0 = 2 * l + xfer, tc = t0 + T / 2, d = 5e-3;
  g_autofree char *at = g_strdup_printf ("replication = 2\n[failures]\nserver = 1\n"
                                         "server_at = %.17g\ndetect = %.17g\n", tc, d);
  g_autofree char *one = test_replaced (repl_scenario, "iterations = 3", "iterations = 1");
  g_autofree char *text = test_replaced (one, "replication = 1\n", at);
  TestRun *r = test_run_collect (text, NULL);
  g_assert_cmpuint (r->rows->len, ==, 1);
  const TestRow *row = &g_array_index (r->rows, TestRow, 0);
  test_assert_close (row->end, tc + d + xfer + U + ack, 1e-9);
  test_assert_close (r->sum.sim_time, tc + d + xfer + U + ack, 1e-9);
  test_run_free (r);

  g_autofree char *dir = g_dir_make_tmp ("dtsim-pscrash-XXXXXX", NULL);
  g_autofree char *db = test_run_messages (dir, text, "t");
  /* after the pushes at the end of the compute, t0 + T < t_c + d */
  g_autofree char *first = g_strdup_printf ("SELECT %%s FROM messages WHERE tag = 'grad' AND "
                                            "dst = 'server2' AND start > %.17g", t0 + T + l);
  g_autofree char *start = g_strdup_printf (first, "min(start)");
  g_autofree char *end = g_strdup_printf (first, "min(end)");
  g_autofree char *count = g_strdup_printf (first, "count(*)");
  test_assert_close (test_query_number (db, start), tc + d, 1e-12);
  test_assert_close (test_query_number (db, end), tc + d + xfer, 1e-9);
  g_assert_cmpfloat (test_query_number (db, count), ==, 1);
  /* the trace's row: crash, detection and takeover */
  test_assert_close (test_query_number (db, "SELECT start FROM failures WHERE role = 'server'"),
                     tc, 1e-12);
  test_assert_close (test_query_number (db, "SELECT detected FROM failures WHERE worker = 1 "
                                        "AND role = 'server' AND lost = 'ranges'"), tc + d, 1e-12);
  sim_remove_tree (dir);
}

/* Exactly the crashed server's range moves: after the takeover (three
 * iterations, server 1 crashing during the first) every iteration pushes
 * to servers 0 and 3 once and to server 2 twice (its range and server 1's),
 * none to server 1, and forwards only ranges 2 and 3 (range 0's chain lost
 * its copy, range 1's is its new primary alone).  dtsim check prints that
 * plan. */
static void
test_crash_ranges_move (void)
{
  const double T = 2e-3;
  g_autofree char *text = test_replaced (repl_scenario, "replication = 1\n",
                                         "replication = 2\n[failures]\nserver = 1\n"
                                         "server_at = 1ms\ndetect = 3ms\n");
  g_autofree char *dir = g_dir_make_tmp ("dtsim-pscrash-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "run", "t.ini", "-o", "t.db", "--quiet",
                                   "--set", "trace.detail=messages", NULL), ==, 0);
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  /* the takeover is at 4 ms; iterations 1 and 2 push after it */
  g_assert_cmpfloat (test_query_number (db, "SELECT min(start) FROM messages WHERE tag = 'grad' "
                                        "AND start > 0.004"), >, 0.004);
  static const struct { const char *dst; double per_iter; } want[] = {
    { "server0", 1 }, { "server1", 0 }, { "server2", 2 }, { "server3", 1 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    {
      g_autofree char *q = g_strdup_printf ("SELECT count(*) FROM messages WHERE tag = 'grad' "
                                            "AND start > %.17g AND dst = '%s'", 0.004 + T,
                                            want[i].dst);
      g_assert_cmpfloat (test_query_number (db, q), ==, 2 * want[i].per_iter);
    }
  g_autofree char *fwd = g_strdup_printf ("SELECT count(*) FROM messages WHERE tag = 'replica' "
                                          "AND start > %.17g", 0.004 + T);
  g_assert_cmpfloat (test_query_number (db, fwd), ==, 2 * 2);
  g_assert_cmpfloat (test_query_number (db, "SELECT count(*) FROM messages WHERE start > 0.004 "
                                        "AND (dst = 'server1' OR src = 'server1')"), ==, 0);
  g_free (out);
  g_free (err);
  out = err = NULL;
  g_assert_cmpint (test_run_dtsim (dir, &out, &err, "check", "t.ini", NULL), ==, 0);
  g_assert_nonnull (strstr (out, "  server1 crashes at 0.001 s, detected at 0.004 s; stays out; "
                                 "range [16, 32) -> server2\n"));
  sim_remove_tree (dir);
}

/* A takeover loses and doubles nothing: BSP with two workers (a round's
 * mean is the same bits in either order) trains the same model bits with
 * server 1 crashing mid-run as without, whether it crashes during a
 * compute or while pushes and forwards are in flight, since the new
 * primary starts from its copy's parameters, optimizer state and round
 * and every push not acknowledged is resent and applied once. */
static void
test_crash_takeover_same_bits (void)
{
  TestRun *plain = test_run_collect (scenario, NULL);
  g_assert_true (isfinite (plain->sum.final_loss));
  static const char *const at[] = { "0.5ms", "1.3ms", "2.2ms" };
  for (guint i = 0; i < G_N_ELEMENTS (at); i++)
    {
      g_autofree char *to = g_strdup_printf ("partition = range\nreplication = 2\n[failures]\n"
                                             "server = 1\nserver_at = %s\ndetect = 1ms\n", at[i]);
      g_autofree char *text = test_replaced (scenario, "partition = range\n", to);
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpint (r->sum.updates, ==, plain->sum.updates);
      g_assert_true (memcmp (&r->sum.final_loss, &plain->sum.final_loss, sizeof (double)) == 0);
      g_assert_true (memcmp (&r->sum.final_accuracy, &plain->sum.final_accuracy,
                             sizeof (double)) == 0);
      g_assert_cmpfloat (r->sum.sim_time, >, plain->sum.sim_time);
      test_run_free (r);
    }
  test_run_free (plain);
}

/* A promoted copy hands over what it holds: its parameters bit for bit,
 * its gradients per worker, its open BSP round, and an optimizer that
 * steps on as the copy's would have. */
static void
test_replica_promote (void)
{
  const gsize P = 20;
  const int W = 2, S = 2;
  PolPartition *part = pol_partition_new (POL_PARTITION_RANGE, P, S, 1, S, 1);
  float init[20], g[20];
  for (gsize i = 0; i < P; i++)
    {
      init[i] = 0.05f * (float) i - 0.4f;
      g[i] = 0.01f * (float) (i * i) - 0.3f;
    }
  KernOptConfig opt = { 0 };
  opt.kind = &kern_opt_adam;
  opt.lr = 0.01;
  opt.beta1 = 0.9;
  opt.beta2 = 0.999;
  opt.eps = 1e-8;
  PolReplicas *rp = pol_replicas_new (part, 2, W, init, &opt, TRUE);
  PolReplicas *ref = pol_replicas_new (part, 2, W, init, &opt, TRUE);
  gsize len = part->ranges[1].hi - part->ranges[1].lo;
  /* round 0 complete, round 1 holding worker 1's gradient */
  const int order[][2] = { { 0, 0 }, { 1, 0 }, { 1, 1 } };
  for (guint i = 0; i < G_N_ELEMENTS (order); i++)
    {
      g_assert_true (pol_replicas_apply (rp, 1, 1, order[i][0], order[i][1], g));
      g_assert_true (pol_replicas_apply (ref, 1, 1, order[i][0], order[i][1], g));
    }
  float params[20], sum[20];
  gint64 n = -1, held[2];
  KernOptimizer *o = kern_optimizer_new (&opt, len);
  pol_replicas_promote (rp, 1, 1, params, &o, sum, &n, held);
  g_assert_true (memcmp (params, pol_replicas_params (ref, 1, 1), len * sizeof (float)) == 0);
  g_assert_cmpint (held[0], ==, 1);
  g_assert_cmpint (held[1], ==, 2);
  g_assert_cmpint (n, ==, 1);
  for (gsize i = 0; i < len; i++)
    g_assert_true (sum[i] == g[i]); /* 0 + g: exact */
  /* worker 0's gradient closes round 1 on both: the same step */
  g_assert_true (pol_replicas_apply (ref, 1, 1, 0, 1, g));
  for (gsize i = 0; i < len; i++)
    sum[i] = (sum[i] + g[i]) * (1.0f / (float) W);
  kern_optimizer_step (o, params, sum);
  g_assert_true (memcmp (params, pol_replicas_params (ref, 1, 1), len * sizeof (float)) == 0);
  kern_optimizer_free (o);
  pol_replicas_free (rp);
  pol_replicas_free (ref);
  pol_partition_free (part);
}

/* Without replication a crashed server comes back with its keys as
 * [failures] recover says.  BSP, two workers, three servers, plain SGD
 * (no optimizer state to lose):
 *   - reinit, crashing before any round is applied: its keys held the
 *     initial values then, so the model is the same bits as without a
 *     crash (a restore to anything else would show);
 *   - checkpoint every iteration, crashing mid-run during a compute (the
 *     server idle between rounds): the restored keys are the values it
 *     held, the same bits again;
 *   - reinit then loses what the server's keys had learned: another model;
 *   - a checkpoint never taken (checkpoint_every beyond the run) restores
 *     the initial values: the bits of reinit. */
static void
test_crash_recover (void)
{
  g_autofree char *sgd = test_replaced (scenario, "optimizer = adam\nlr = 0.01",
                                        "optimizer = sgd\nlr = 0.1");
  g_autofree char *longer = test_replaced (sgd, "iterations = 4", "iterations = 8");
  TestRun *plain = test_run_collect (longer, NULL);
  g_assert_true (isfinite (plain->sum.final_loss));
  /* the workers compute iteration 0 from 62 to 87 us and iteration 4 from
   * 503 to 528 us, every server idle then */
  static const struct { const char *at, *recover; int same; } cases[] = {
    { "75us", "reinit", 1 },
    { "515us", "checkpoint\ncheckpoint_every = 1", 1 },
    { "515us", "reinit", 0 },
  };
  double loss[G_N_ELEMENTS (cases)];
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *to = g_strdup_printf ("partition = range\n[failures]\nserver = 1\n"
                                             "server_at = %s\nrestart = 1ms\nrecover = %s\n",
                                             cases[i].at, cases[i].recover);
      g_autofree char *text = test_replaced (longer, "partition = range\n", to);
      TestRun *r = test_run_collect (text, NULL);
      g_assert_cmpint (r->sum.updates, ==, plain->sum.updates);
      g_assert_cmpfloat (r->sum.sim_time, >, plain->sum.sim_time);
      loss[i] = r->sum.final_loss;
      g_assert_true (isfinite (loss[i]));
      g_assert_cmpint (memcmp (&loss[i], &plain->sum.final_loss, sizeof (double)) == 0, ==,
                       cases[i].same);
      test_run_free (r);
    }
  g_autofree char *never = test_replaced (longer, "partition = range\n",
                                          "partition = range\n[failures]\nserver = 1\n"
                                          "server_at = 515us\nrestart = 1ms\n"
                                          "recover = checkpoint\ncheckpoint_every = 100\n");
  TestRun *r = test_run_collect (never, NULL);
  g_assert_true (memcmp (&r->sum.final_loss, &loss[2], sizeof (double)) == 0);
  test_run_free (r);
  test_run_free (plain);
}

/* A run without server crashes is the run before they existed: the
 * digests (views/tracedigest.h) of its iterations, messages, metrics and
 * spans, written by the build before [failures] server, for BSP over
 * three servers, SSP with replication = 2, async on one server with top-k
 * compression, and SSP with hash placement and replication = 3; the
 * metrics' digests written again when the fixed-order product became a
 * float FMA chain, which moved the losses' last bits, and when the metrics
 * table gained its job column.  (Real math in the
 * reproducible mode: the same bits on every x86-64 CPU.) */
static void
test_no_crash_unchanged (void)
{
  static const struct {
    const char *sets[4];
    const char *digest[4]; /* iterations, messages, metrics, spans */
  } cases[] = {
    { { NULL },
      { "e6c5e10ec72dd7481e5c5493fac8d46a98054340e34b197e988d43c53a4553f3",
        "566742329a2f04e64b5c2f776f931d69139b104700d9fd5ce3420c979760e434",
        "dcd5f71dc661529b299deeb274788562e7753f10416766b7dcac34b867f1288c",
        "72d8612df759db836914ef37f75038b3977c509e6f4fe12c7402c8a312a00ba9" } },
    { { "policy.replication=2", "policy.consistency=ssp", NULL },
      { "596cd019ab6dbf4c026d7ee2b0af971c070c7a34d8b74fa03c717a88baae1420",
        "3ff9412ce7f70c759730805ad97b7eca5c1d6891db2ac48f2ecc192b96f5f814",
        "717d25d2b23af0b332c56e1ef8c8e4705307510a94ddd615bc7c2575b5425893",
        "de3ccefc6b6e6c058c1624ccc9c6a198529a5b1d736f5570a2c12358d32837a9" } },
    { { "cluster.servers=1", "policy.consistency=async", "policy.compression=top-k" },
      { "aa59f990e60f1fce35ab39484d9609402ec9e25913c786ede18bd912e33ac99b",
        "60ba374711b0a933e1a5278ea46ed1281e04180a7034d87a43846a91183495fc",
        "15d78c90895a0eac7cfb9340d996ca3804a77c36b130f41810dd5f2c02688bba",
        "afcbe2145c59b4da175d86ed153b8f54baea404b57eccc760467680828ff6a3e" } },
    { { "policy.consistency=ssp", "policy.partition=hash", "policy.virtual_nodes=3",
        "policy.replication=3" },
      { "a25c4d96ed812eb16106d57bfc9cde395ebb3b4a65b1cabcbede11d900d9a92b",
        "207642625b43d38bca88ee2358bf024ae183475373b6ee0c219cce1b16f98836",
        "8bc9b9a940a568f9e88349649fa8f9b28314fcc02d1c726407af7442799643c4",
        "800046109a21ff0bfc3d463440a3bc94ef0b51908d2e7f2055c3efc29b55b9eb" } },
  };
  static const char *const tables[] = { "iterations", "messages", "metrics", "spans" };
  g_autofree char *dir = g_dir_make_tmp ("dtsim-pscrash-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.ini", NULL);
  g_assert_true (g_file_set_contents (path, scenario, -1, NULL));
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
      g_autofree char *db = g_strdup_printf ("t%u.db", c);
      const char *fixed[] = { "run", "t.ini", "-o", db, "--quiet", "--set", "trace.detail=messages" };
      for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
        g_ptr_array_add (args, g_strdup (fixed[i]));
      for (guint i = 0; i < G_N_ELEMENTS (cases[c].sets) && cases[c].sets[i]; i++)
        {
          g_ptr_array_add (args, g_strdup ("--set"));
          g_ptr_array_add (args, g_strdup (cases[c].sets[i]));
        }
      g_ptr_array_add (args, NULL);
      g_autofree char *out = NULL, *err = NULL;
      g_assert_cmpint (test_run_dtsim_argv (dir, &out, &err, (const char *const *) args->pdata),
                       ==, 0);
      g_autofree char *full = g_build_filename (dir, db, NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (GPtrArray) got = sim_trace_digest (full, &error);
      g_assert_no_error (error);
      for (guint t = 0; t < G_N_ELEMENTS (tables); t++)
        {
          const SimTableDigest *d = NULL;
          for (guint i = 0; i < got->len; i++)
            if (strcmp (((SimTableDigest *) got->pdata[i])->table, tables[t]) == 0)
              d = got->pdata[i];
          g_assert_nonnull (d);
          g_assert_cmpstr (d->sha256, ==, cases[c].digest[t]);
        }
    }
  sim_remove_tree (dir);
}

/* Bad server-crash keys: one line naming [failures] key and the fix. */
static void
test_refusals_crash (void)
{
  static const char base[] =
    "[scenario]\nname = t\niterations = 2\n"
    "[cluster]\nworkers = 2\nservers = 3\n"
    "[model]\nkind = softmax\nbatch = 8\n"
    "[policy]\nkind = ps\nreplication = 1\npartition = range\nwait_for = 0\n"
    "[failures]\nserver = 1\nserver_at = 1ms\n";
  static const TestRefusal cases[] = {
    { "server = 1\n", "server = 3\n",
      "[failures] server: server 3 does not exist ([cluster] servers = 3)" },
    { "server = 1\n", "server = -1\n", "[failures] server" },
    { "server_at = 1ms\n", "", "[failures] server_at: missing" },
    { "server = 1\nserver_at = 1ms\n", "server = 0, 1\nserver_at = 1ms, 2ms, 3ms\n",
      "[failures] server_at: 3 times for 2 servers" },
    { "server_at = 1ms\n", "server_at = soon\n", "[failures] server_at" },
    { "kind = ps\n", "kind = allreduce\n",
      "[failures] server: server crashes are simulated by kind = ps only" },
    { "server_at = 1ms\n", "server_at = 1ms\nrecover = checkpoint\n",
      "[failures] checkpoint_every: recover = checkpoint needs an interval" },
    { "server_at = 1ms\n", "server_at = 1ms\ncheckpoint_every = 5\n",
      "[failures] checkpoint_every: applies only to recover = checkpoint" },
    { "server_at = 1ms\n", "server_at = 1ms\nrecover = snapshot\n", "[failures] recover" },
    { "server_at = 1ms\n", "server_at = 1ms\nrecover = checkpoint\ncheckpoint_every = -1\n",
      "[failures] checkpoint_every" },
    { "server_at = 1ms\n", "server_at = 1ms\ndetect = 2s\n",
      "[failures] detect: applies only to [policy] replication >= 2" },
    { "server_at = 1ms\n", "server_at = 1ms\nworker = 0\nat = 1ms\n",
      "[failures] server: server crashes and worker failures are not simulated in one run" },
    { "wait_for = 0\n", "wait_for = 0\nfilter = zero\n",
      "[failures] server: server crashes are not simulated with sparse or filtered pushes" },
  };
  test_refusals (base, cases, G_N_ELEMENTS (cases));
  /* K of N runs on one server */
  g_autofree char *one = test_replaced (base, "servers = 3\n", "servers = 1\n");
  g_autofree char *one0 = test_replaced (one, "server = 1\n", "server = 0\n");
  static const TestRefusal kofn[] = {
    { "wait_for = 0\n", "wait_for = 1\n",
      "[failures] server: server crashes are not simulated with waiting for K of N" },
  };
  test_refusals (one0, kofn, G_N_ELEMENTS (kofn));
  g_autofree char *rep = test_replaced (base, "replication = 1\n", "replication = 2\n");
  static const TestRefusal rep_cases[] = {
    { "server_at = 1ms\n", "server_at = 1ms\nrecover = checkpoint\ncheckpoint_every = 2\n",
      "[failures] recover: applies only to [policy] replication = 1" },
    { "server_at = 1ms\n", "server_at = 1ms\ndetect = 4000s\n", "[failures] detect" },
    { "server_at = 1ms\n", "server_at = 1ms\ndetect = -1s\n", "[failures] detect" },
    { "partition = range\n", "partition = hash\n",
      "[failures] server: a takeover under replication is simulated with partition = range" },
    { "server = 1\n", "server = 1, 2\n",
      "[failures] server: every server of the chain of server 1's range" },
  };
  test_refusals (rep, rep_cases, G_N_ELEMENTS (rep_cases));
  /* no crash listed: the keys that tune one are refused */
  static const TestRefusal none[] = {
    { "server = 1\nserver_at = 1ms\n", "recover = checkpoint\n",
      "[failures] recover: applies only to server crashes" },
    { "server = 1\nserver_at = 1ms\n", "detect = 2s\n",
      "[failures] detect: applies only to server crashes" },
    { "server = 1\nserver_at = 1ms\n", "checkpoint_every = 3\n",
      "[failures] checkpoint_every: applies only to server crashes" },
  };
  test_refusals (base, none, G_N_ELEMENTS (none));
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
  g_test_add_func ("/ps-servers/crash/takeover-time", test_crash_takeover_time);
  g_test_add_func ("/ps-servers/crash/ranges-move", test_crash_ranges_move);
  g_test_add_func ("/ps-servers/crash/takeover-same-bits", test_crash_takeover_same_bits);
  g_test_add_func ("/ps-servers/crash/replica-promote", test_replica_promote);
  g_test_add_func ("/ps-servers/crash/recover", test_crash_recover);
  g_test_add_func ("/ps-servers/crash/refusals", test_refusals_crash);
  g_test_add_func ("/ps-servers/crash/none-unchanged", test_no_crash_unchanged);
  return g_test_run ();
}
