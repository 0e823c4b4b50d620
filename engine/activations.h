// Hidden states of each GPU batch between layer visits: homed in the tier the plan chose, and
// staged through one device workspace when the device cannot compute on that home in place.
#pragma once

#include <string>
#include <vector>

#include "engine/tier_set.h"

namespace h2oflex {

class Activations {
 public:
  Activations(int64_t hidden, const policy::MemoryPlan& plan, TierSet& tiers);
  // Before a visit: brings batch `b`'s first `rows` hidden rows into the workspace when staged.
  void load(int b, int64_t rows, const std::string& phase);
  // After a visit: writes them back to the home when staged.
  void store(int b, int64_t rows, const std::string& phase);
  // The rows the device computes on for batch `b`.
  Tensor hidden(int b, int64_t rows) const;

 private:
  struct Home {
    TierKind kind = TierKind::Host;
    void* ptr = nullptr;  // memory homes
    uint64_t offset = 0;  // disk homes
    Tensor tensor;        // memory homes
  };
  Location location(const Home& h);

  int64_t hidden_;
  const policy::MemoryPlan& plan_;
  TierSet& tiers_;
  std::vector<Home> homes_;
  Tensor workspace_;
};

}  // namespace h2oflex
