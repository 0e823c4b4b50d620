// The range of a sampling setting, one rule for the run config (`top_p:`) and a generate
// request's line (`"top_p"`), so both refuse the same values with the same words.
#pragma once

#include <string>

namespace h2oflex {

// "" when `top_p` is usable, else why not (a phrase that follows the key's name). The sampler
// keeps a single-precision nucleus: a value in (0, 1] that rounds to 0 there is refused as such,
// not as "outside (0, 1]".
std::string top_p_problem(double top_p);

}  // namespace h2oflex
