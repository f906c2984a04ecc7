/*
 * bench-network.c — speed of dtsim's flow-level network on a ring
 * all-reduce, the workload whose SimGrid twin is bench/simgrid-ring.cpp.
 *
 * N hosts on a star (every host link 1.25e9 bytes/s = 10 Gb/s and 5 us each
 * way) run a ring all-reduce of TOTAL bytes: 2 (N - 1) steps (reduce-scatter
 * then all-gather); in each step every host sends one chunk of TOTAL / N
 * bytes (rounded down to a whole byte, as SimGrid sizes messages in whole
 * bytes) to its successor, and a host starts step k + 1 once it has received
 * step k's chunk from its predecessor.  That is N * 2 (N - 1) transfers,
 * about 2.1 million for N = 1,024, driven straight on NetNetwork and the
 * engine.  Alone on its route each chunk takes L + chunk / B, and on a star
 * no two ring flows share a link, so the simulated time is
 * 2 (N - 1) (L + chunk / B), printed beside the measured one.
 *
 * Figures are printed on one "RESULT" line (simulated time, wall time of
 * building plus running, transfers per second of wall time, peak RSS from
 * getrusage()), never asserted: wall time depends on the machine.
 *
 * Usage: bench-network [N_HOSTS [TOTAL_BYTES [full]]]   (defaults 1024, 1e8)
 * With "full", every change re-shares every flow (the reference algorithm
 * kept for tests) instead of the changed flow's component.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "engine/engine.h"
#include "netmodel/netmodel.h"
#include "netmodel/netmodel-private.h"

#define BENCH_BW  1.25e9  /* bytes/s per link (10 Gb/s) */
#define BENCH_LAT 5e-6    /* s per link */

typedef struct {
  NetNetwork *net;
  int n_hosts;
  int steps;          /* 2 (n_hosts - 1) */
  double chunk;       /* bytes per transfer */
  guint64 received;   /* transfers finished */
  double last_end;    /* s, simulated */
} Ring;

/* A host has received step `tag`'s chunk: it sends step tag + 1's. */
static void
on_chunk (EngSim *sim G_GNUC_UNUSED, gpointer ctx, gpointer data G_GNUC_UNUSED,
          const NetTransfer *t)
{
  Ring *r = ctx;
  int next = t->tag + 1;

  r->received++;
  r->last_end = t->end;
  if (next < r->steps)
    net_send (r->net, t->dst, (t->dst + 1) % r->n_hosts, r->chunk, next,
              on_chunk, r, NULL);
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 1024;
  double total = argc > 2 ? atof (argv[2]) : 1e8;
  gboolean full = argc > 3 && g_strcmp0 (argv[3], "full") == 0;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  EngSim *sim;
  Ring r = { 0 };
  NetTopologyParams p = { 0 };
  gint64 t0, t1;
  struct rusage ru;
  double expected, transfers, wall;

  if (n < 2 || !(total > 0))
    {
      fprintf (stderr, "usage: bench-network [N_HOSTS>=2 [TOTAL_BYTES>0]]\n");
      return 2;
    }
  t0 = g_get_monotonic_time ();
  for (int h = 0; h < n; h++)
    g_ptr_array_add (names, g_strdup_printf ("h%d", h));
  p.n_hosts = n;
  p.names = (const char *const *) names->pdata;
  p.bandwidth = BENCH_BW;
  p.latency = BENCH_LAT;

  sim = eng_sim_new ();
  r.net = net_network_new (sim, NET_CONTENTION_MAXMIN);
  net_network_set_full_recompute (r.net, full);
  if (!net_topology_star.build (r.net, &p, &error))
    {
      fprintf (stderr, "bench-network: %s\n", error->message);
      return 1;
    }
  r.n_hosts = n;
  r.steps = 2 * (n - 1);
  r.chunk = floor (total / n);
  for (int h = 0; h < n; h++)
    net_send (r.net, h, (h + 1) % n, r.chunk, 0, on_chunk, &r, NULL);
  eng_run (sim, INFINITY);
  t1 = g_get_monotonic_time ();

  transfers = (double) n * r.steps;
  g_assert (r.received == (guint64) transfers);
  wall = (t1 - t0) / 1e6;
  expected = r.steps * (2 * BENCH_LAT + r.chunk / BENCH_BW);
  getrusage (RUSAGE_SELF, &ru);
  printf ("# closed form 2(N-1)(L + chunk/B) = %.12e s; dtsim differs by "
          "%.2e relative; %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT
          " completion schedules\n",
          expected, fabs (r.last_end - expected) / expected,
          eng_sim_events (sim), net_network_reschedules (r.net));
  printf ("RESULT %s hosts=%d chunk=%.0f transfers=%.0f sim_s=%.12e "
          "wall_s=%.3f transfers_per_s=%.0f rss_kib=%ld\n",
          full ? "dtsim-full" : "dtsim", n, r.chunk, transfers, r.last_end, wall, transfers / wall,
          ru.ru_maxrss);
  net_network_free (r.net);
  eng_sim_free (sim);
  return 0;
}
