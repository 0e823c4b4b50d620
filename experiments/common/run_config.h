// A run configuration (YAML): which model, what workload, which policy, which KV rule.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/pipeline_device.h"
#include "experiments/common/output_paths.h"
#include "policy/kv_policy.h"
#include "policy/run_policy.h"
#include "runtime/core/op_types.h"

namespace h2oflex {

struct RunConfig {
  std::string source;  // file the config came from (for messages)
  std::string name;    // optional label
  std::string model;   // a published name ("opt-1.3b", "llama-3-8b") or a Hugging Face directory
  // Seeded random weights instead of a checkpoint; absent when not written: a published name's
  // dummy weights, a directory's own (open_model_source holds the rule).
  std::optional<bool> dummy;
  int prompt_len = 32;
  int gen_len = 8;
  int batch_size = 1;
  std::string compute_dtype = "auto";   // auto | f32 | f16 | bf16 (or fp32, float32, ...)
  std::string compute_device = "auto";  // auto (cuda when usable) | cpu | cuda
  uint64_t seed = 1;
  std::vector<std::vector<int32_t>> prompt_ids;  // explicit prompts (lengths may differ)
  float temperature = 0.0f;                      // 0 = greedy
  float top_p = 1.0f;
  bool stop_at_eos = false;    // throughput runs generate gen_len tokens, as FlexGen does
  int projected_steps = 0;     // > 0: time this many decode steps and extrapolate (flagged)
  policy::KvPolicy kv_policy;  // kv: section as written
  KvRule kv;                   // ... resolved against prompt_len and gen_len
  // policy: section, parsed (absent = everything in RAM, plain batch_size; `auto` = planned).
  std::optional<policy::PolicySection> policy;
  policy::HardwareLimits hardware;  // hardware: section, parsed (absent = no budgets)
  // A hardware profile (`h2oflex profile --out`) for `policy: auto`; a relative path is taken
  // from the config file's directory.
  std::string hardware_profile;

  // The --set assignments applied over `source`, in order ("hardware.disk_path=/x").
  std::vector<std::string> overrides;

  // Who wrote `key` (dotted, e.g. "hardware.disk_path"), for the checks made after parsing:
  // the last --set that set it or a section above it, "--set K=V (over SOURCE)", else `source`.
  std::string origin_of(const std::string& key) const;

  bool has_policy() const { return policy.has_value(); }
};

// Parses a YAML document; `overrides` are "dotted.key=value" strings applied first.
// Unknown keys, wrong types and out-of-range values throw InputError naming the key.
RunConfig parse_run_config(const YAML::Node& root, const std::string& source);
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides);
// A config may list `variants:` — [{name, set: {key: value, ...}}, ...] — each the base config
// with some keys replaced (e.g. the same workload with full cache and with H2O). Without
// variants this returns the one config.
std::vector<RunConfig> load_run_config_variants(const std::string& path,
                                                const std::vector<std::string>& overrides);
void apply_override(YAML::Node& root, const std::string& assignment);
// Runs `parse(overrides, source)`. When that fails but the config without overrides is good, the
// error comes again from the first override that breaks it, labelled "--set KEY=VALUE (over
// SOURCE)", so a bad --set is not blamed on the file.
std::vector<RunConfig> with_overrides_named(
    const std::string& source, const std::vector<std::string>& overrides,
    const std::function<std::vector<RunConfig>(const std::vector<std::string>&,
                                               const std::string&)>& parse);
// Checks made on the file system before a run starts: hardware.disk_path, when given, must be
// an existing directory this process can create files in. Throws InputError naming the key.
void check_run_paths(const RunConfig& config);
// The files a run of `config` reads, for check_output_paths: its hardware profile and every file
// of its model directory (none for a published model name).
std::vector<NamedPath> run_config_inputs(const RunConfig& config);
// Under `mpirun -np S` the config runs as pipeline stages, which need a `policy:` section (the
// in-RAM path has no stages): InputError naming the config otherwise.
void check_stages_have_policy(const RunConfig& c);

// Where and in what type a config's run computes: compute_device and compute_dtype resolved on
// this machine, then agreed by the job (pipeline stages compute on rank 0's device kind and in
// its type: `auto` is measured by each process). `planning_only`: nothing will run, so "cuda"
// needs no device.
struct ComputeTarget {
  PipelineDevice device = PipelineDevice::Cpu;
  ops::ComputeType compute = ops::ComputeType::F32;
};
ComputeTarget resolve_compute_target(const RunConfig& c, bool planning_only = false);

// Resolves compute_dtype (any spelling ops::parse_compute_dtype accepts): "auto" is bf16 on a
// GPU and, on a CPU, the type whose GEMMs this machine runs fastest (measured once per process).
ops::ComputeType resolve_compute_type(const std::string& compute_dtype, bool on_gpu = false);

}  // namespace h2oflex
