// `h2oflex convert --from HF_DIR --to OUT_DIR`: a Hugging Face OPT checkpoint into the offload
// layout (aligned records, an index with a checksum per tensor), with bounded memory.
#pragma once

#include <string>

namespace h2oflex {

struct ConvertOptions {
  std::string from;            // Hugging Face directory (config.json + safetensors)
  std::string to;              // output directory
  std::string dtype = "bf16";  // storage type of the matrices: bf16, f16 or f32
};

int run_convert(const ConvertOptions& options);

}  // namespace h2oflex
