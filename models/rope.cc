#include "models/rope.h"

#include <cmath>

#include "models/loaders/hf_json.h"

namespace h2oflex {

std::vector<float> rope_inv_freq(const RopeConfig& rope) {
  const int64_t half = rope.rot_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    // HF: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all in f32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(rope.rot_dim);
    inv[static_cast<size_t>(i)] = 1.0f / std::pow(static_cast<float>(rope.theta), exponent);
  }
  const RopeScaling& s = rope.scaling;
  const float factor = static_cast<float>(s.factor);
  switch (s.type) {
    case RopeScaling::Type::None:
    case RopeScaling::Type::Dynamic:
      break;
    case RopeScaling::Type::Linear:
      for (float& f : inv) f /= factor;
      break;
    case RopeScaling::Type::Llama3: {
      // Long wavelengths (low frequencies) are slowed by `factor`, short ones kept, and the band
      // between blended linearly in original_max / wavelength.
      const float old_ctx = static_cast<float>(s.original_max_positions);
      const float low = static_cast<float>(s.low_freq_factor);
      const float high = static_cast<float>(s.high_freq_factor);
      const float low_freq_wavelen = old_ctx / low, high_freq_wavelen = old_ctx / high;
      for (float& f : inv) {
        const float wavelen = 2.0f * static_cast<float>(M_PI) / f;
        if (wavelen > low_freq_wavelen) {
          f = f / factor;
        } else if (wavelen >= high_freq_wavelen) {
          const float smooth = (old_ctx / wavelen - low) / (high - low);
          f = (1.0f - smooth) * (f / factor) + smooth * f;
        }
      }
      break;
    }
  }
  return inv;
}

namespace {

// The scaling described by object `r` (rope_scaling, or rope_parameters).
RopeScaling read_scaling(const KeyReader& r) {
  RopeScaling s;
  const char* type_key = r.has("rope_type") ? "rope_type" : "type";
  std::string type;
  r.optional_string(type_key, type);
  if (type.empty()) throw r.error("rope_type", "is missing (or \"type\")");
  if (type == "default") return s;
  if (type == "linear") {
    s.type = RopeScaling::Type::Linear;
  } else if (type == "dynamic") {
    s.type = RopeScaling::Type::Dynamic;
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::Llama3;
  } else {
    throw r.error(type_key, "is '" + type + "'; supported: default, linear, dynamic, llama3");
  }
  s.factor = r.positive_number("factor");
  if (s.type == RopeScaling::Type::Llama3) {
    s.low_freq_factor = r.positive_number("low_freq_factor");
    s.high_freq_factor = r.positive_number("high_freq_factor");
    if (!(s.high_freq_factor > s.low_freq_factor)) {
      throw r.error("high_freq_factor", "must exceed low_freq_factor");
    }
    s.original_max_positions = r.positive_int("original_max_position_embeddings");
  }
  return s;
}

}  // namespace

RopeConfig read_rope(const KeyReader& config, const char* theta_key, double default_theta) {
  RopeConfig rope;
  rope.theta = default_theta;
  if (config.has("rope_parameters")) {
    const KeyReader r = config.object("rope_parameters");
    r.optional_positive_number("rope_theta", rope.theta);
    rope.scaling = read_scaling(r);
    return rope;
  }
  config.optional_positive_number(theta_key, rope.theta);
  if (config.has("rope_scaling")) rope.scaling = read_scaling(config.object("rope_scaling"));
  return rope;
}

const char* rope_scaling_name(RopeScaling::Type t) {
  switch (t) {
    case RopeScaling::Type::None:
      return "default";
    case RopeScaling::Type::Linear:
      return "linear";
    case RopeScaling::Type::Dynamic:
      return "dynamic";
    case RopeScaling::Type::Llama3:
      return "llama3";
  }
  return "?";
}

}  // namespace h2oflex
