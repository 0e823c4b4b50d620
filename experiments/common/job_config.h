// The run configuration of a job command (generate, eval): a model directory with its tokenizer,
// an optional run config for the engine, and --set overrides — read the same way by each.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/common/run_config.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex {

struct JobConfigSource {
  std::string command;                 // "generate", "eval perplexity" (names it in messages)
  std::string config_path;             // --config ("" = none)
  std::string model_dir;               // --model: replaces the config's model ("" = keep it)
  std::vector<std::string> overrides;  // --set key=value
  // Run-config keys this command does not use, with why: a --set of one is refused (it would be
  // accepted and change nothing).
  std::vector<std::pair<std::string, std::string>> unused_keys;
  // Config keys given as data (the Python package's keyword arguments): they replace the
  // file's keys of the same name (or are the whole config without a file), are named
  // `inline_label` in messages, and are checked against `unused_keys` as --set keys are.
  std::optional<YAML::Node> inline_config;
  std::string inline_label;
};

// The run-config keys a job command never reads, whatever its input: `name`, `prompt_len`,
// `projected_steps` (a throughput run's workload) and `hardware_profile` (policy: auto).
std::vector<std::pair<std::string, std::string>> job_unused_keys();

// The config file (or an empty mapping), the overrides, --model; `variants:` and `prompt_ids:`
// are refused and a model is required (which weights it runs on is open_model_source's rule).
// `defaults` then fills the keys the command sets when they are absent. An error from an
// override is named after that --set.
RunConfig load_job_config(const JobConfigSource& job,
                          const std::function<void(YAML::Node& root)>& defaults);

// The tokenizer files beside the model's config.json, or a GGUF file's tokenizer (its metadata);
// InputError when `model` is neither a directory nor a GGUF file.
BpeTokenizer load_job_tokenizer(const std::string& model, const std::string& command);

}  // namespace h2oflex
