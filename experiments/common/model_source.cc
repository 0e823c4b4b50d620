#include "experiments/common/model_source.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include "experiments/common/sha256.h"
#include "models/gguf/gguf_checkpoint.h"
#include "models/loaders/dummy_weights.h"
#include "models/loaders/hf_checkpoint.h"
#include "models/model_catalog.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// Seeded random weights for `src.model`; `what` describes where the config came from.
ModelSource& with_dummy_weights(ModelSource& src, const std::string& name, const std::string& what,
                                uint64_t seed) {
  src.producer = dummy_weight_producer(seed);
  src.partial = [seed](const WeightSpec& spec, DType dtype, uint64_t first, uint64_t count,
                       void* dst) { dummy_weight_fill(spec, seed, dtype, first, count, dst); };
  src.description = detail::concat(name, " (", what, "dummy weights, seed ", seed, ")");
  src.key = detail::concat(name, ":dummy:seed=", seed);
  src.content = src.key;
  src.dummy = true;
  return src;
}

std::string file_sha256(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "'", file.string(), "': cannot read");
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  H2OFLEX_INPUT_CHECK(!in.bad(), "'", file.string(), "': read failed");
  return sha256_hex(bytes);
}

// Dummy weights shaped by a directory's config.json: the shape is that file's content.
ModelSource& dummy_from_config(ModelSource& src, const std::filesystem::path& dir,
                               const std::string& model, uint64_t seed) {
  with_dummy_weights(src, model, "config only, ", seed);
  src.content = detail::concat("dummy:config=", file_sha256(dir / "config.json").substr(0, 16),
                               ":seed=", seed);
  return src;
}

// What identifies a checkpoint's content for reusing its offload layout: config.json, and for
// each safetensors file its name, size, modification time and header (names, dtypes, shapes,
// offsets). Hashing every tensor would read the whole checkpoint on every run; a file rewritten
// in place (new values, same shapes) still changes its modification time, and a file copied
// elsewhere costs one rebuild, never a stale reuse.
std::string checkpoint_fingerprint(const HfCheckpoint& ckpt) {
  namespace fs = std::filesystem;
  std::string facts;
  auto add_file = [&](const fs::path& file, bool header_only) {
    std::ifstream in(file, std::ios::binary);
    H2OFLEX_INPUT_CHECK(in.good(), "'", file.string(), "': cannot read");
    std::string bytes;
    if (header_only) {
      unsigned char len[8] = {};
      in.read(reinterpret_cast<char*>(len), 8);
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
      bytes.resize(static_cast<size_t>(n));  // bounded: the reader checked the header length
      in.read(bytes.data(), static_cast<std::streamsize>(n));
    } else {
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    H2OFLEX_INPUT_CHECK(!in.bad() && (in.good() || in.eof()), "'", file.string(), "': read failed");
    const auto mtime = fs::last_write_time(file).time_since_epoch().count();
    facts += detail::concat(file.filename().string(), " ", fs::file_size(file), " ", mtime, " ",
                            sha256_hex(bytes), "\n");
  };
  add_file(ckpt.dir() / "config.json", false);
  for (const fs::path& file : ckpt.weights().files()) add_file(file, true);
  return sha256_hex(facts).substr(0, 16);
}

// Every checkpoint tensor must be one the config describes: a config.json saying fewer layers
// than were saved would otherwise run a truncated model without a word. Buffers the families
// do not need (a stored copy of a tied head, rotary tables, mask buffers) are let through.
void reject_unused_tensors(const HfCheckpoint& ckpt, const DecoderModel& model) {
  std::set<std::string> used;
  for (const WeightSpec& spec : model.weight_specs()) used.insert(ckpt.get(spec.name).name);
  std::vector<std::string> extra;
  for (const TensorInfo& t : ckpt.weights().tensors()) {
    if (used.count(t.name) == 0 && !is_ignorable_checkpoint_tensor(t.name)) {
      extra.push_back(t.name);
    }
  }
  if (extra.empty()) return;
  std::string names;
  for (size_t i = 0; i < extra.size() && i < 6; ++i) names += (i ? ", '" : "'") + extra[i] + "'";
  if (extra.size() > 6) names += detail::concat(" and ", extra.size() - 6, " more");
  throw InputError(detail::concat(
      "'", ckpt.dir().string(), "': the checkpoint holds ", extra.size(),
      " tensor(s) that config.json does not describe (", names, "); config.json says ",
      model.layers(),
      " layers: does it belong to this checkpoint? (refusing to run a truncated model)"));
}

// True when `dir` holds weights a run can read: safetensors (one file or an index of shards).
// An offload layout is looked for by the caller first.
bool holds_safetensors(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / SafetensorsReader::kSingleName) ||
         std::filesystem::exists(dir / SafetensorsReader::kIndexName);
}

// What identifies a GGUF file's content, as checkpoint_fingerprint for safetensors: its name,
// size, modification time and everything before the tensor data (metadata and tensor infos).
std::string gguf_fingerprint(const GgufFile& file) {
  namespace fs = std::filesystem;
  std::ifstream in(file.path(), std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "'", file.path().string(), "': cannot read");
  std::string header(static_cast<size_t>(file.data_offset()), '\0');
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  H2OFLEX_INPUT_CHECK(in.good(), "'", file.path().string(), "': read failed");
  const auto mtime = fs::last_write_time(file.path()).time_since_epoch().count();
  return sha256_hex(detail::concat(file.path().filename().string(), " ", file.file_size(), " ",
                                   mtime, " ", sha256_hex(header), "\n"))
      .substr(0, 16);
}

// A GGUF file: the model from its metadata, its weights as the file stores them.
ModelSource open_gguf_source(const std::string& model, std::optional<bool> dummy, uint64_t seed) {
  ModelSource src;
  std::error_code ec;
  H2OFLEX_INPUT_CHECK(std::filesystem::is_regular_file(model, ec), "model '", model,
                      "' names a GGUF file (.gguf) that does not exist or is not a file");
  const std::shared_ptr<const GgufCheckpoint> ckpt = GgufCheckpoint::open(model);
  src.model = ckpt->model();
  const std::string fingerprint = gguf_fingerprint(ckpt->file());
  if (dummy.value_or(false)) {
    src.model = ckpt->shape_model();
    with_dummy_weights(src, model, "metadata only, ", seed);
    src.content = detail::concat("dummy:gguf=", fingerprint, ":seed=", seed);
    return src;
  }
  src.producer = [ckpt](const WeightSpec& spec, DType dtype, void* dst) {
    ckpt->read(spec, dtype, dst);
  };
  src.packed = [ckpt](const WeightSpec& spec, PackedFormat format, void* dst) {
    ckpt->read_packed(spec, format, dst);
  };
  // Under weight_format: stored (the default) the layers' matrices stay in their GGUF blocks
  // (run, generate and eval print the formats they hold).
  src.description = detail::concat(model, " (GGUF weights ", ckpt->format_summary(), ")");
  src.key = std::filesystem::absolute(model).string() + ":content=" + fingerprint;
  src.content = "gguf:" + fingerprint;
  return src;
}

ModelSource open_source(const std::string& model, std::optional<bool> dummy, uint64_t seed) {
  if (is_gguf_path(model)) return open_gguf_source(model, dummy, seed);
  ModelSource src;
  if ((src.model = published_model(model))) {
    H2OFLEX_INPUT_CHECK(dummy.value_or(true), "model '", model,
                        "' names a published model, whose weights are not on this machine: "
                        "drop dummy: false (dummy weights), or point model at a Hugging Face "
                        "directory");
    return with_dummy_weights(src, src.model->name(), "", seed);
  }
  const std::filesystem::path dir(model);
  H2OFLEX_INPUT_CHECK(std::filesystem::is_directory(dir), "model '", model,
                      "' is neither a known model name (", published_model_list(),
                      "), nor an existing directory, nor a GGUF file (.gguf)");
  const std::string name = dir.filename().string();
  if (std::filesystem::exists(dir / WeightLayout::kIndexFile)) {
    // A directory written by `h2oflex convert`: the offload layout, checksums verified on read.
    src.model = hf_model(dir, name);
    if (dummy.value_or(false)) return dummy_from_config(src, dir, model, seed);
    std::shared_ptr<WeightLayout> layout = WeightLayout::open(dir.string());
    for (const WeightSpec& spec : src.model->weight_specs()) {
      const WeightRecord& r = layout->record(layout->find(spec.name));
      H2OFLEX_INPUT_CHECK(r.spec.shape == spec.shape, dir.string(), ": tensor '", spec.name,
                          "' has shape ", shape_str(r.spec.shape), ", config.json implies ",
                          shape_str(spec.shape));
    }
    src.producer = layout_weight_producer(layout);
    src.description =
        detail::concat(model, " (weights from its offload layout, ", WeightLayout::kIndexFile, ")");
    src.key = layout->model_key();
    // The index holds every tensor's checksum: its hash is the layout's content.
    src.content = "layout:" + file_sha256(dir / WeightLayout::kIndexFile).substr(0, 16);
    return src;
  }
  // config.json first: its errors come before any about the weights, and dummy weights need
  // nothing else from the directory.
  src.model = hf_model(dir, name);
  if (dummy.value_or(false)) return dummy_from_config(src, dir, model, seed);
  H2OFLEX_INPUT_CHECK(holds_safetensors(dir), "model directory '", model, "' holds no weights (no ",
                      SafetensorsReader::kSingleName, ", ", SafetensorsReader::kIndexName,
                      " or offload layout ", WeightLayout::kIndexFile,
                      "); to run its config.json on seeded random weights, write dummy: true (or "
                      "--set dummy=true)");
  auto ckpt = std::make_shared<HfCheckpoint>(HfCheckpoint::open(dir));
  // Every tensor must exist with the shape config.json implies; checked before any work.
  for (const WeightSpec& spec : src.model->weight_specs()) ckpt->get(spec.name, spec.shape);
  reject_unused_tensors(*ckpt, *src.model);
  src.producer = [ckpt](const WeightSpec& spec, DType dtype, void* dst) {
    ckpt->weights().read(ckpt->get(spec.name, spec.shape), dtype, dst);
  };
  src.description =
      detail::concat(model, " (weights from ", ckpt->weights().source().string(), ")");
  // The path says where, the fingerprint what: a changed checkpoint must not reuse the layout
  // written from its previous content.
  const std::string fingerprint = checkpoint_fingerprint(*ckpt);
  src.key = std::filesystem::absolute(dir).string() + ":content=" + fingerprint;
  src.content = "checkpoint:" + fingerprint;
  return src;
}

}  // namespace

ModelSource open_model_source(const std::string& model, std::optional<bool> dummy, uint64_t seed) {
  return open_source(model, dummy, seed);
}

engine::ModelInput engine_model_input(const ModelSource& source) {
  return {source.model, source.producer, source.partial, source.packed, source.key};
}

}  // namespace h2oflex
