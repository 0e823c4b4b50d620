#include "experiments/convert/convert_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "engine/model_layout.h"
#include "experiments/common/model_source.h"
#include "experiments/common/output_paths.h"
#include "models/gguf/gguf_checkpoint.h"
#include "offload/weights/weight_layout.h"
#include "runtime/core/timer.h"

namespace h2oflex {

namespace fs = std::filesystem;

namespace {

// `p` with the links of its existing part resolved.
fs::path resolved(const std::string& p) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

// True when `inner` is `outer` or lies below it.
bool within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

// The files a conversion writes besides the layout: the output is a model directory of its own.
constexpr std::initializer_list<const char*> kCopiedFiles = {"config.json",
                                                             "generation_config.json",
                                                             "vocab.json",
                                                             "merges.txt",
                                                             "tokenizer.json",
                                                             "tokenizer.model",
                                                             "tokenizer_config.json",
                                                             "special_tokens_map.json"};

// --to is a new model directory: absent or empty. Anything already there (another model's
// config and tokenizer, an older conversion) would be mixed with this one's files.
void check_destination(const std::string& to) {
  std::error_code ec;
  if (!fs::exists(to, ec)) return;  // a file at `to` was refused with its ancestors (run_convert)
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(to, ec)) {
    names.push_back(e.path().filename().string());
  }
  H2OFLEX_INPUT_CHECK(!ec, "--to '", to, "': cannot list it: ", ec.message());
  if (names.empty()) return;
  std::sort(names.begin(), names.end());
  std::string shown;
  for (size_t i = 0; i < names.size() && i < 5; ++i) shown += (i ? ", " : "") + names[i];
  if (names.size() > 5) shown += ", ...";
  throw InputError(detail::concat("--to '", to, "' already holds ", names.size(), " entries (",
                                  shown,
                                  "); convert writes a new model directory: give one that does "
                                  "not exist yet or is empty"));
}

}  // namespace

int run_convert(const ConvertOptions& o) {
  const DType dtype = parse_dtype(o.dtype);
  H2OFLEX_INPUT_CHECK(dtype != DType::I32, "--dtype must be bf16, f16 or f32");
  H2OFLEX_INPUT_CHECK(!o.to.empty(), "--to: an output directory is needed");
  // The nearest existing part of --to must be a directory (the rest is created): a file there
  // would end the run in a raw file-system error.
  std::error_code ec;
  fs::path existing = fs::absolute(o.to).lexically_normal();
  while (!fs::exists(existing, ec) && existing.has_parent_path() &&
         existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  H2OFLEX_INPUT_CHECK(fs::is_directory(existing, ec), "--to '", o.to, "': '", existing.string(),
                      "' exists and is not a directory (it is a file); convert writes a model "
                      "directory there: give one that does not exist yet or is empty");
  // Compared after resolving links: a --to inside the source (or a link to it) would write the
  // layout and overwrite config files in the checkpoint being read.
  H2OFLEX_INPUT_CHECK(!within(resolved(o.to), resolved(o.from)), "--to '", o.to,
                      "' is inside (or links to) the source directory --from '", o.from,
                      "'; choose a directory outside it");
  check_destination(o.to);
  // Checks config.json and every tensor's presence and shape before writing anything.
  const ModelSource src = open_model_source(o.from, /*dummy=*/false, 0);
  // A GGUF file's config and tokenizer are its metadata: written as the files they stand for.
  const std::map<std::string, nlohmann::json> documents =
      is_gguf_path(o.from) ? GgufCheckpoint::open(o.from)->hf_documents()
                           : std::map<std::string, nlohmann::json>{};
  OutputDirectory made(o.to, "--to");
  std::vector<NamedPath> inputs;
  add_directory_inputs(inputs, o.from, "--from '" + o.from + "'");
  std::vector<std::string> outputs{WeightLayout::kDataFile, WeightLayout::kIndexFile};
  outputs.insert(outputs.end(), kCopiedFiles.begin(), kCopiedFiles.end());
  check_output_paths(inputs, files_in(o.to, outputs, "--to"));
  Stopwatch watch;
  // A converted directory holds floats: a GGUF file's blocks are unpacked to the dtype.
  auto layout = open_or_build_model_layout(o.to, src.key, *src.model, dtype, src.producer);
  for (const auto& [name, doc] : documents) {
    write_file_atomically((fs::path(o.to) / name).string(), doc.dump(2) + "\n");
  }
  for (const char* name : kCopiedFiles) {
    const fs::path from = fs::path(o.from) / name;
    if (documents.empty() && fs::exists(from)) fs::copy_file(from, fs::path(o.to) / name);
  }
  made.keep();
  std::printf("converted %s -> %s: %zu tensors, %.3f GiB as %s, %.1f s\n", o.from.c_str(),
              o.to.c_str(), layout->records().size(),
              static_cast<double>(layout->data_bytes()) / (1024.0 * 1024.0 * 1024.0),
              std::string(dtype_name(dtype)).c_str(), watch.elapsed());
  return 0;
}

}  // namespace h2oflex
