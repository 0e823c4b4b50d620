// Rotary position embeddings as Hugging Face computes them: the inverse frequencies of the
// rotated dimensions under rope_theta and `rope_scaling`, for every family that rotates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace h2oflex {

class KeyReader;

// The largest head dimension a config may give: far above any released model's (256), and a
// bound on the tables built from it.
inline constexpr int64_t kMaxHeadDim = 4096;

struct RopeScaling {
  enum class Type { None, Linear, Dynamic, Llama3 };
  Type type = Type::None;
  double factor = 1;
  // llama3 only: the wavelength band between which frequencies are blended.
  double low_freq_factor = 1, high_freq_factor = 4;
  int64_t original_max_positions = 8192;
};

struct RopeConfig {
  int64_t rot_dim = 0;  // rotated dimensions per head (even; < head_dim for partial rotary)
  double theta = 10000;
  RopeScaling scaling;
};

// inv_freq[i] for i < rot_dim / 2, in f32 as HF computes it (1 / theta^(2i / rot_dim), then the
// scaling's adjustment). `dynamic` (NTK) changes the frequencies only past the original maximum
// position, which the engine never reaches (prompt + generation <= max_position_embeddings), so
// there it equals the unscaled table, as in HF.
std::vector<float> rope_inv_freq(const RopeConfig& rope);

// theta and scaling from a config: transformers 5's `rope_parameters` object (rope_theta,
// rope_type, factor, ...) when present, else `theta_key` (default `default_theta`) and
// `rope_scaling` (absent or null: None). Both spellings of the type key ("rope_type", and the
// older "type") are accepted; "default" means None. Unknown types, and keys a type needs but
// lacks, are InputErrors naming the key. rot_dim is left 0 for the family to set.
RopeConfig read_rope(const KeyReader& config, const char* theta_key, double default_theta);

const char* rope_scaling_name(RopeScaling::Type t);

}  // namespace h2oflex
