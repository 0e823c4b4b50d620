// The placement policy as data: where weights, KV cache and activations live, the batch shape,
// the memory budgets of the tiers, and the KV eviction rule. Parsed and validated here, once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace YAML {
class Node;
}

namespace h2oflex::policy {

// FlexGen-style policy. Percentages are of the bytes of each kind; disk gets 100 - gpu - cpu.
// "gpu" is the compute device's tier (a RAM arena on the CPU-only hierarchy).
struct Policy {
  int gpu_batch_size = 1, num_gpu_batches = 1;
  double w_gpu = 100, w_cpu = 0;  // percent; disk gets 100 - gpu - cpu
  double cache_gpu = 100, cache_cpu = 0;
  double act_gpu = 100, act_cpu = 0;
  bool overlap = true, cpu_cache_compute = false, pin_weight = true;

  int block_size() const { return gpu_batch_size * num_gpu_batches; }
  double w_disk() const { return 100 - w_gpu - w_cpu; }
  double cache_disk() const { return 100 - cache_gpu - cache_cpu; }
  double act_disk() const { return 100 - act_gpu - act_cpu; }
  // "100 0 100 0 100 0" — FlexGen's --percent order (w_gpu w_cpu cache_gpu cache_cpu act_gpu
  // act_cpu).
  std::string percent_string() const;
  // One line: "48x3 w 20/80/0 cache 0/100/0 act 0/100/0 cpu_cache_compute".
  std::string summary() const;
};

// Memory budgets of the tiers for one run (bytes; 0 = no budget given).
struct HardwareLimits {
  uint64_t device_mem = 0, host_mem = 0, disk_mem = 0;
  std::string disk_path;
};

// KV eviction rule. Budget B = H + R tokens per (sequence, layer, head); see H2O.md.
struct KvPolicy {
  enum class Kind { Full, H2O, Streaming };
  Kind kind = Kind::Full;
  double heavy_ratio = 0, recent_ratio = 0;                  // fractions of the prompt (H2O)
  int heavy_tokens = 0, recent_tokens = 0, sink_tokens = 0;  // absolute; win over ratios

  // H: H2O heavy hitters, or StreamingLLM sink tokens; 0 for Full.
  int heavy(int prompt_len) const;
  // R: recent window; 0 for Full.
  int recent(int prompt_len) const;
  // B = H + R; for Full, kUnbounded.
  int budget(int prompt_len) const;
  bool bounded() const { return kind != Kind::Full; }
  // "full", "h2o:0.1,0.1", "h2o:51,51 tokens", "streaming:4,60".
  std::string summary() const;

  static constexpr int kUnbounded = 1 << 30;
};

// The `policy:` section: a fixed policy, or `auto` (ask the planner).
struct PolicySection {
  bool is_auto = false;
  Policy policy;
};

// Parsers. `path` is the key path of `node` used in messages ("policy", "rows[3].config.kv").
// Unknown keys, wrong types and out-of-range values throw InputError naming the full key path.
PolicySection parse_policy_section(const YAML::Node& node, const std::string& path = "policy");
Policy parse_policy(const YAML::Node& node, const std::string& path = "policy");
HardwareLimits parse_hardware_limits(const YAML::Node& node, const std::string& path = "hardware");
KvPolicy parse_kv_policy(const YAML::Node& node, const std::string& path = "kv");
// The command-line form: "full", "h2o:0.1,0.1" (ratios), "h2o:51,51" (token counts: integers
// > 1 are tokens), "streaming:4,60" (sink, recent).
KvPolicy parse_kv_spec(const std::string& spec);

// Checks a policy alone (percentages, sums, batch shape); throws InputError naming `path`.
void validate_policy(const Policy& p, const std::string& path = "policy");

// Flat views for results JSON/YAML: numbers as double, flags as bool, names as string.
using DescribedValue = std::variant<double, bool, std::string>;
std::map<std::string, DescribedValue> describe(const Policy& p);
std::map<std::string, DescribedValue> describe(const KvPolicy& kv);
std::map<std::string, DescribedValue> describe(const HardwareLimits& limits);

}  // namespace h2oflex::policy
