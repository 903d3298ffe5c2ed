/* Timing shared by the C++ race harnesses (pinocchio_harness.cpp,
   pinocchio_constraint_harness.cpp): wall time of one pass, per state. */
#pragma once

#include <ctime>
#include <functional>

static double now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e9 * t.tv_sec + t.tv_nsec;
}

static double ns_per_state(long n, const std::function<void()>& pass) {
  double t0 = now_ns();
  pass();
  return (now_ns() - t0) / n;
}
