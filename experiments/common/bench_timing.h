// Timing of repeated measurements, shared by `bench` and `profile`.
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/core/timer.h"

namespace h2oflex {

// Median of `repeats` timings of fn() after one untimed warm-up call (first-touch page faults,
// oneDNN primitive creation).
template <typename Fn>
double median_seconds(int repeats, Fn&& fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const Stopwatch w;
    fn();
    t.push_back(w.elapsed());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Smallest, median and largest of a set of timings (or rates).
struct Spread {
  double min = 0, median = 0, max = 0;
};

inline Spread spread_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

}  // namespace h2oflex
