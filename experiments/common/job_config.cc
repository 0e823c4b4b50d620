#include "experiments/common/job_config.h"

#include <filesystem>

#include "models/gguf/gguf_checkpoint.h"
#include "models/gguf/gguf_tokenizer.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace fs = std::filesystem;

namespace {

YAML::Node job_config_root(const JobConfigSource& job, const std::vector<std::string>& overrides,
                           const std::string& source) {
  YAML::Node root(YAML::NodeType::Map);
  if (!job.config_path.empty()) {
    root = policy::load_yaml_file(job.config_path, "config file");
    if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    H2OFLEX_INPUT_CHECK(root.IsMap(), source, ": the config must be a mapping");
  }
  if (job.inline_config && job.inline_config->IsDefined() && !job.inline_config->IsNull()) {
    // Given as data: its keys replace the file's.
    H2OFLEX_INPUT_CHECK(job.inline_config->IsMap(), job.inline_label,
                        ": the config must be a mapping");
    for (const auto& entry : *job.inline_config) {
      root[entry.first.Scalar()] = YAML::Clone(entry.second);
    }
  }
  for (const auto& assignment : overrides) apply_override(root, assignment);
  H2OFLEX_INPUT_CHECK(!root["variants"], source, ": ", job.command,
                      " runs one configuration; drop variants: and choose its keys with --set "
                      "(e.g. --set kv.policy=full)");
  H2OFLEX_INPUT_CHECK(!root["prompt_ids"], source, ": prompt_ids has no meaning for ", job.command,
                      " (its tokens come from its input)");
  if (!job.model_dir.empty()) root["model"] = job.model_dir;
  H2OFLEX_INPUT_CHECK(root["model"], job.command, " needs a model: --model DIR (or model: in ",
                      source, ")");
  return root;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> job_unused_keys() {
  return {{"name", "a label of `run` variants"},
          {"prompt_len", "the prompts come from the input"},
          {"projected_steps", "every step runs"},
          {"hardware_profile", "it serves policy: auto, which jobs do not take"}};
}

RunConfig load_job_config(const JobConfigSource& job,
                          const std::function<void(YAML::Node& root)>& defaults) {
  for (const std::string& o : job.overrides) {
    const std::string key = o.substr(0, o.find('='));
    const std::string top = key.substr(0, key.find('.'));
    for (const auto& [unused, why] : job.unused_keys) {
      H2OFLEX_INPUT_CHECK(top != unused, "--set ", o, ": ", job.command, " does not use ", unused,
                          " (", why, ")");
    }
  }
  if (job.inline_config && job.inline_config->IsMap()) {
    for (const auto& entry : *job.inline_config) {
      const std::string key = entry.first.Scalar();
      for (const auto& [unused, why] : job.unused_keys) {
        H2OFLEX_INPUT_CHECK(key != unused, job.inline_label, ": ", job.command, " does not use ",
                            unused, " (", why, ")");
      }
    }
  }
  const std::string source = !job.config_path.empty() ? job.config_path
                             : job.inline_config      ? job.inline_label
                                                      : job.command + " defaults";
  return with_overrides_named(
             source, job.overrides,
             [&](const std::vector<std::string>& applied, const std::string& label) {
               YAML::Node root = job_config_root(job, applied, label);
               defaults(root);
               return std::vector<RunConfig>{parse_run_config(root, label)};
             })
      .front();
}

BpeTokenizer load_job_tokenizer(const std::string& model, const std::string& command) {
  if (is_gguf_path(model)) {
    std::error_code ec;
    H2OFLEX_INPUT_CHECK(fs::is_regular_file(model, ec), "model '", model,
                        "' names a GGUF file (.gguf) that does not exist or is not a file");
    return load_gguf_tokenizer(GgufFile::open(model));
  }
  H2OFLEX_INPUT_CHECK(fs::is_directory(model), "model '", model, "' is not a directory: ", command,
                      " needs the model's tokenizer files (tokenizer.json, or vocab.json + "
                      "merges.txt) beside its config.json, or a GGUF file");
  return load_tokenizer(model);
}

}  // namespace h2oflex
