// Shared by the cost-model and search tests: FlexGen's T4 profile and OPT shapes written out
// here, independently of models/.
#pragma once

#include <string>

#include "policy/cost_model.h"
#include "policy/hardware.h"

namespace h2oflex::policy::testing_support {

inline HardwareProfile t4() {
  return load_hardware_profile(std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/t4.yaml");
}

inline ModelShape opt(int layers, int hidden, int heads) {
  ModelShape m;
  m.name = "opt";
  m.layers = layers;
  m.hidden = hidden;
  m.ffn = 4 * hidden;
  m.heads = heads;
  return m;
}

}  // namespace h2oflex::policy::testing_support
