/*
 * simgrid-ring.cpp — the SimGrid peer of bench-network: the same ring
 * all-reduce on the same star platform, simulated with SimGrid's S4U API.
 *
 * Platform, built in code: a star zone whose every host has one split-duplex
 * link (an up and a down half, each at the full bandwidth and latency), so the
 * route a -> b is [up(a), down(b)], as in dtsim's star.  Network model LV08
 * with its correction factors turned off (latency and bandwidth factors 1,
 * weight-S 0: plain max-min sharing, no RTT weighting), no cross-traffic and
 * no TCP window bound, so that both simulators solve the same fluid model.
 *
 * Each host is an actor that, for 2 (n - 1) steps, posts its chunk to its
 * successor's mailbox, receives its predecessor's chunk from its own mailbox,
 * and waits for its own send; it begins the next step once both are done.
 * The simulated time is when the last actor finishes.  Figures go to stdout
 * on one "RESULT" line (see bench-network.c for the format); wall time covers
 * the platform build and the run; peak RSS is from getrusage().
 *
 * Usage: simgrid-ring [N_HOSTS [TOTAL_BYTES]]   (defaults 1024, 1e8)
 */
#include <simgrid/s4u.hpp>

#include "bench/simgrid-model.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

static const double kBandwidth = 1.25e9; /* bytes/s per link (10 Gb/s) */
static const double kLatency = 5e-6;     /* s per link */

static int n_hosts;
static double chunk;          /* bytes per step, a whole number */
static std::vector<sg4::Mailbox*> boxes;
static double last_end = 0;   /* s, simulated */

static void
ring_actor (int me)
{
  static char token;
  int steps = 2 * (n_hosts - 1);
  sg4::Mailbox* out = boxes[(me + 1) % n_hosts];
  sg4::Mailbox* in = boxes[me];

  for (int s = 0; s < steps; s++)
    {
      sg4::CommPtr send = out->put_async (&token, (uint64_t) chunk);
      in->get<char> ();
      send->wait ();
    }
  last_end = std::max (last_end, sg4::Engine::get_clock ());
}

int
main (int argc, char** argv)
{
  auto t0 = std::chrono::steady_clock::now ();
  sg4::Engine e (&argc, argv);   /* consumes SimGrid's own --cfg=... */
  double total;

  n_hosts = argc > 1 ? std::atoi (argv[1]) : 1024;
  total = argc > 2 ? std::atof (argv[2]) : 1e8;
  if (n_hosts < 2 || !(total > 0))
    {
      std::fprintf (stderr, "usage: simgrid-ring [N_HOSTS>=2 [TOTAL_BYTES>0]]\n");
      return 2;
    }
  chunk = std::floor (total / n_hosts);

  /* The model under comparison: fixed, whatever --cfg said. */
  dtsim_simgrid_fluid_model ();

  auto* zone = sg4::create_star_zone ("star");
  std::vector<sg4::Host*> hosts;
  for (int h = 0; h < n_hosts; h++)
    {
      std::string name = "h" + std::to_string (h);
      sg4::Host* host = zone->create_host (name, 1e9);
      sg4::Link* link = zone->create_split_duplex_link (name + "-link", kBandwidth)
                            ->set_latency (kLatency)
                            ->seal ();
      zone->add_route (host->get_netpoint (), nullptr, nullptr, nullptr,
                       {{link, sg4::LinkInRoute::Direction::UP}}, true);
      hosts.push_back (host);
    }
  zone->seal ();

  for (int h = 0; h < n_hosts; h++)
    boxes.push_back (sg4::Mailbox::by_name ("ring-" + std::to_string (h)));
  for (int h = 0; h < n_hosts; h++)
    sg4::Actor::create ("rank" + std::to_string (h), hosts[h], ring_actor, h);
  e.run ();

  double wall = std::chrono::duration<double> (std::chrono::steady_clock::now () - t0).count ();
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  double transfers = (double) n_hosts * 2 * (n_hosts - 1);
  std::printf ("RESULT simgrid hosts=%d chunk=%.0f transfers=%.0f sim_s=%.12e "
               "wall_s=%.3f transfers_per_s=%.0f rss_kib=%ld\n",
               n_hosts, chunk, transfers, last_end, wall, transfers / wall,
               ru.ru_maxrss);
  return 0;
}
