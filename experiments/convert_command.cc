#include "experiments/convert_command.h"

#include <cstdio>
#include <filesystem>

#include "engine/model_layout.h"
#include "experiments/model_source.h"
#include "runtime/core/timer.h"

namespace h2oflex {

namespace fs = std::filesystem;

int run_convert(const ConvertOptions& o) {
  const DType dtype = parse_dtype(o.dtype);
  H2OFLEX_INPUT_CHECK(dtype != DType::I32, "--dtype must be bf16, f16 or f32");
  H2OFLEX_INPUT_CHECK(!o.to.empty(), "--to: an output directory is needed");
  H2OFLEX_INPUT_CHECK(fs::absolute(o.from) != fs::absolute(o.to), "--to must differ from --from");
  // Checks config.json and every tensor's presence and shape before writing anything.
  const ModelSource src = open_model_source(o.from, /*dummy=*/false, 0);
  Stopwatch watch;
  auto layout = open_or_build_model_layout(o.to, src.key, *src.model, dtype, src.producer, {});
  // The output is a model directory of its own: config and tokenizer files go along.
  for (const char* name : {"config.json", "vocab.json", "merges.txt", "tokenizer.json",
                           "tokenizer_config.json", "special_tokens_map.json"}) {
    const fs::path from = fs::path(o.from) / name;
    if (fs::exists(from))
      fs::copy_file(from, fs::path(o.to) / name, fs::copy_options::overwrite_existing);
  }
  std::printf("converted %s -> %s: %zu tensors, %.3f GiB as %s, %.1f s\n", o.from.c_str(),
              o.to.c_str(), layout->records().size(),
              static_cast<double>(layout->data_bytes()) / (1024.0 * 1024.0 * 1024.0),
              std::string(dtype_name(dtype)).c_str(), watch.elapsed());
  return 0;
}

}  // namespace h2oflex
