#include "policy/eviction.h"

namespace h2oflex {

std::string EvictionRule::name() const {
  switch (kind) {
    case Kind::Full:
      return "full";
    case Kind::H2O:
      return "h2o";
    case Kind::Streaming:
      return "streaming";
  }
  return "?";
}

}  // namespace h2oflex
