// The placement policy as data: where weights, KV cache and activations live, the batch shape,
// and the memory budgets of the tiers. Parsed and validated here, once; the KV eviction policy
// has its own file (policy/kv_policy.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "runtime/core/storage_format.h"

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
  // FlexGen's 4-bit group-wise compression (runtime/core/quant4.h): the decoder layers' weight
  // matrices, and the KV cache rows.
  bool compress_weight = false, compress_cache = false;
  // How the layers' matrices are stored (runtime/core/storage_format.h): `stored` keeps a GGUF
  // file's own blocks; `weight_format: q4_g64` is the spelling of compress_weight: true.
  WeightFormat weight_format;
  // How KV rows are stored: a packed row the decode attention reads (q8_0: one f16 scale per 32
  // values), None for the KV dtype; compress_cache: true is q4_g64 (kv_packing() says which).
  PackedFormat cache_format = PackedFormat::None;
  PackedFormat kv_packing() const { return compress_cache ? PackedFormat::Q4G64 : cache_format; }
  // `cache_format: f32 / f16 / bf16`: plain rows in that dtype. The KV cache is stored in the
  // compute's operand type, as the matrices, so this names the compute type (see
  // check_compute_dtype); nullopt: plain rows in whatever type the run computes in.
  std::optional<DType> cache_dtype;
  // The operand type weight_format / cache_format fix (f32, f16, bf16), nullopt when neither
  // names one (parse_policy refuses two that differ).
  std::optional<DType> named_operand_dtype() const;
  // The format the layers' matrices are packed to by this policy: q4_g64 under compress_weight,
  // a packed weight_format's row, else None (plain, or a checkpoint's own blocks: `stored`).
  PackedFormat weight_packing() const {
    if (compress_weight) return PackedFormat::Q4G64;
    return weight_format.mode == WeightFormat::Mode::Packed ? weight_format.packed
                                                            : PackedFormat::None;
  }
  // Pipeline stages (`mpirun -np S`, runtime/dist): `stages` must equal the job's processes
  // when given (0: as many as there are); each stage takes its block in `micro_blocks` parts of
  // num_gpu_batches / micro_blocks GPU batches, so that up to that many are in flight in
  // different stages at once (0: the largest divisor of num_gpu_batches <= the stages).
  int stages = 0, micro_blocks = 0;

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

// The `policy:` section: a fixed policy, or `auto` (ask the planner) — written `policy: auto`,
// or `policy: {auto: true, allow_compression: true}` to let the planner choose 4-bit weights or
// KV cache too (lossy, so only when asked).
struct PolicySection {
  bool is_auto = false;
  bool allow_compression = false;  // auto only
  Policy policy;
};

// A `weight_format:` value: stored, plain, a plain dtype (f32, f16, bf16) or a packed row's name;
// InputError naming `key` and the accepted spellings otherwise.
WeightFormat parse_weight_format(const std::string& value, const std::string& key);

// Parsers. `path` is the key path of `node` used in messages ("policy", "rows[3].config.kv").
// Unknown keys, wrong types and out-of-range values throw InputError naming the full key path.
PolicySection parse_policy_section(const YAML::Node& node, const std::string& path = "policy");
Policy parse_policy(const YAML::Node& node, const std::string& path = "policy");
HardwareLimits parse_hardware_limits(const YAML::Node& node, const std::string& path = "hardware");

// A policy that names a dtype (weight_format / cache_format f32, f16, bf16) against the run's
// compute_dtype: `compute_operand` is the operand type compute_dtype names (nullopt for auto).
// InputError naming both keys (`path`.weight_format or .cache_format, and `compute_key`) when
// they differ: weights and KV rows are stored in the compute's operand type, so a run cannot
// hold f16 matrices and compute in f32 (or the reverse). Under auto the named type is the
// compute type (the caller resolves it so).
void check_compute_dtype(const Policy& p, std::optional<DType> compute_operand,
                         const std::string& compute_key, const std::string& path = "policy");

// Checks a policy alone (percentages, sums, batch shape); throws InputError naming `path`.
void validate_policy(const Policy& p, const std::string& path = "policy");

// Flat views for results JSON/YAML: numbers as double, flags as bool, names as string.
using DescribedValue = std::variant<double, bool, std::string>;
std::map<std::string, DescribedValue> describe(const Policy& p);
std::map<std::string, DescribedValue> describe(const HardwareLimits& limits);

// The policy as a run config's `policy:` mapping (the keys parse_policy reads, formats
// included), e.g. a plan chosen by `policy: auto` written into a suite row's config.
YAML::Node policy_yaml(const Policy& p);

}  // namespace h2oflex::policy
