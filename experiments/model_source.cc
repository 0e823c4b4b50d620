#include "experiments/model_source.h"

#include <filesystem>
#include <memory>

#include "models/loaders/dummy_weights.h"
#include "models/loaders/hf_checkpoint.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// Seeded random weights for `src.config`; `what` describes where the config came from.
ModelSource& with_dummy_weights(ModelSource& src, const std::string& name, const std::string& what,
                                uint64_t seed) {
  src.producer = dummy_weight_producer(seed);
  src.partial = [seed](const WeightSpec& spec, DType dtype, uint64_t first, uint64_t count,
                       void* dst) { dummy_weight_fill(spec, seed, dtype, first, count, dst); };
  src.description = detail::concat(name, " (", what, "dummy weights, seed ", seed, ")");
  src.key = detail::concat(name, ":dummy:seed=", seed);
  return src;
}

}  // namespace

namespace {

ModelSource open_source(const std::string& model, bool dummy, uint64_t seed) {
  ModelSource src;
  if (auto cfg = opt_config_by_name(model)) {
    H2OFLEX_INPUT_CHECK(dummy, "model '", model,
                        "' names a published OPT model, whose weights are not on this machine: "
                        "set dummy: true, or point model at a Hugging Face directory");
    src.config = *cfg;
    return with_dummy_weights(src, cfg->name, "", seed);
  }
  const std::filesystem::path dir(model);
  H2OFLEX_INPUT_CHECK(
      std::filesystem::is_directory(dir), "model '", model, "' is neither a known OPT name (",
      [] {
        std::string s;
        for (const auto& n : opt_model_names()) s += (s.empty() ? "" : ", ") + n;
        return s;
      }(),
      ") nor an existing directory");
  if (std::filesystem::exists(dir / WeightLayout::kIndexFile)) {
    // A directory written by `h2oflex convert`: the offload layout, checksums verified on read.
    src.config = to_opt_config(read_hf_opt_config(dir / "config.json"), dir.filename().string());
    if (dummy) return with_dummy_weights(src, model, "config only, ", seed);
    std::shared_ptr<WeightLayout> layout = WeightLayout::open(dir.string());
    for (const WeightSpec& spec : opt_weight_specs(src.config)) {
      const WeightRecord& r = layout->record(layout->find(spec.name));
      H2OFLEX_INPUT_CHECK(r.spec.shape == spec.shape, dir.string(), ": tensor '", spec.name,
                          "' has shape ", shape_str(r.spec.shape), ", config.json implies ",
                          shape_str(spec.shape));
    }
    src.producer = layout_weight_producer(layout);
    src.description = detail::concat(model, " (offload layout)");
    src.key = layout->model_key();
    return src;
  }
  auto ckpt = std::make_shared<HfCheckpoint>(HfCheckpoint::open(dir));
  src.config = to_opt_config(ckpt->config(), dir.filename().string());
  if (dummy) return with_dummy_weights(src, model, "config only, ", seed);
  // Every tensor must exist with the shape config.json implies; checked before any work.
  for (const WeightSpec& spec : opt_weight_specs(src.config)) ckpt->get(spec.name, spec.shape);
  src.producer = [ckpt](const WeightSpec& spec, DType dtype, void* dst) {
    ckpt->weights().read(ckpt->get(spec.name, spec.shape), dtype, dst);
  };
  src.description = model;
  src.key = std::filesystem::absolute(dir).string();
  return src;
}

}  // namespace

ModelSource open_model_source(const std::string& model, bool dummy, uint64_t seed) {
  ModelSource src = open_source(model, dummy, seed);
  src.model = std::make_shared<const OptModel>(src.config);
  return src;
}

}  // namespace h2oflex
