// Shared by the cost-model and search tests: FlexGen's T4 profile and OPT shapes written out
// here; the tensor list behind the memory estimate comes from the OPT model itself.
#pragma once

#include <functional>
#include <string>

#include "engine/model_footprint.h"
#include "models/opt/opt_model.h"
#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "runtime/core/error.h"

namespace h2oflex::policy::testing_support {

// The message of the InputError `f` throws, or "<no InputError>".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

inline HardwareProfile t4() {
  return load_hardware_profile(std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/t4.yaml");
}

inline ModelShape opt(int layers, int hidden, int heads) {
  OptConfig c;
  c.name = "opt";
  c.layers = layers;
  c.hidden = c.word_embed_dim = hidden;
  c.ffn = 4 * hidden;
  c.heads = heads;
  return model_shape_for(OptModel(c));
}

// A policy: gbs x ngb, then the weight, cache and activation splits (gpu, cpu percent) and
// cpu_cache_compute.
inline Policy make(int gbs, int ngb, double wg, double wc, double cg, double cc, double hg,
                   double hc, bool ccc) {
  Policy p;
  p.gpu_batch_size = gbs;
  p.num_gpu_batches = ngb;
  p.w_gpu = wg, p.w_cpu = wc, p.cache_gpu = cg, p.cache_cpu = cc, p.act_gpu = hg, p.act_cpu = hc;
  p.cpu_cache_compute = ccc;
  return p;
}

}  // namespace h2oflex::policy::testing_support
