#include "experiments/common/sampling_checks.h"

#include <cmath>
#include <limits>

#include "runtime/core/error.h"

namespace h2oflex {

std::string top_p_problem(double top_p) {
  if (!std::isfinite(top_p) || top_p <= 0 || top_p > 1) {
    return detail::concat("must be in (0, 1], got ", top_p);
  }
  if (top_p < std::numeric_limits<float>::min()) {
    return detail::concat("is ", top_p, ", below the smallest top_p the sampler keeps (",
                          std::numeric_limits<float>::min(),
                          "); for greedy decoding set temperature 0");
  }
  return "";
}

}  // namespace h2oflex
