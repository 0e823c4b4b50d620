#include "models/model_catalog.h"

#include "models/gpt_neox/neox_model.h"
#include "models/llama/llama_model.h"
#include "models/loaders/hf_config.h"
#include "models/loaders/hf_json.h"
#include "models/opt/opt_model.h"

namespace h2oflex {

std::shared_ptr<const DecoderModel> published_model(const std::string& name) {
  if (auto c = opt_config_by_name(name)) return std::make_shared<const OptModel>(*c);
  if (auto c = llama_config_by_name(name)) return std::make_shared<const LlamaModel>(*c);
  if (auto c = neox_config_by_name(name)) return std::make_shared<const NeoxModel>(*c);
  return nullptr;
}

std::vector<std::string> published_model_names() {
  std::vector<std::string> names = opt_model_names();
  for (auto* family : {&llama_model_names, &neox_model_names}) {
    for (const std::string& n : (*family)()) names.push_back(n);
  }
  return names;
}

std::string published_model_list() {
  std::string s;
  for (const std::string& n : published_model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::shared_ptr<const DecoderModel> hf_model(const std::filesystem::path& dir,
                                             const std::string& name) {
  std::filesystem::path file;
  const nlohmann::json doc = read_json_object(dir, &file);
  const KeyReader keys(doc, file);
  const std::string type = keys.model_type("opt");
  if (type == "opt")
    return std::make_shared<const OptModel>(to_opt_config(read_hf_opt_config(file), name));
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    return std::make_shared<const LlamaModel>(read_hf_llama_config(file, name));
  }
  if (type == "gpt_neox") return std::make_shared<const NeoxModel>(read_hf_neox_config(file, name));
  throw keys.error("model_type",
                   "is '" + type + "'; implemented: opt, llama, mistral, qwen2, gpt_neox");
}

bool is_ignorable_checkpoint_tensor(const std::string& name) {
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name == "lm_head.weight" || name == "model.lm_head.weight" ||
         ends_with("rotary_emb.inv_freq") || ends_with("attention.bias") ||
         ends_with("attention.masked_bias");
}

}  // namespace h2oflex
