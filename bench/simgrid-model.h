/*
 * simgrid-model.h — the SimGrid settings under which SimGrid solves the same
 * fluid model as dtsim's network: model LV08 with its latency and bandwidth
 * factors at 1, weight-S 0 (plain max-min, no RTT weighting beyond equal
 * latencies), no cross-traffic, no TCP window bound.  Shared by the SimGrid
 * peer of the benchmarks (bench/simgrid-ring.cpp) and the max-min test
 * (tests/test-simgrid-maxmin.cpp).  C++, SimGrid's S4U.
 */
#ifndef DTSIM_BENCH_SIMGRID_MODEL_H
#define DTSIM_BENCH_SIMGRID_MODEL_H

#include <simgrid/s4u.hpp>

/* Sets the fluid model above, whatever --cfg said; call after creating the
 * engine and before building the platform. */
static inline void
dtsim_simgrid_fluid_model (void)
{
  simgrid::s4u::Engine::set_config ("network/model:LV08");
  simgrid::s4u::Engine::set_config ("network/latency-factor:1");
  simgrid::s4u::Engine::set_config ("network/bandwidth-factor:1");
  simgrid::s4u::Engine::set_config ("network/weight-S:0");
  simgrid::s4u::Engine::set_config ("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config ("network/TCP-gamma:0");
}

#endif
