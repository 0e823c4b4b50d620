// The model side of a generate job: runs one block of prompts through the engine chosen by the
// run config — all in RAM (weights loaded once per job), or the tiered block schedule when the
// config has a `policy:` section.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "engine/request.h"
#include "experiments/common/model_source.h"
#include "experiments/common/run_config.h"
#include "experiments/generate/generate_job.h"
#include "policy/run_policy.h"

namespace h2oflex::generate {

// What the engine did over the blocks run so far: bytes moved between tiers ("disk->device",
// ...: the pipeline's only; in RAM nothing moves), and the KV the policy kept — its slots per
// sequence against the prompt + generated tokens a full cache holds, summed over sequences.
struct EngineTotals {
  std::map<std::string, uint64_t> bytes_moved;
  int64_t kv_slots = 0, kv_full_slots = 0;
  double kv_kept() const {
    return kv_full_slots > 0 ? static_cast<double>(kv_slots) / static_cast<double>(kv_full_slots)
                             : 1.0;
  }
};

class BlockEngine {
 public:
  // KV ratios are resolved against each block's own prompt length.
  BlockEngine(const RunConfig& config, const ModelSource& source);

  // Prompts per engine call: the policy's block, else the config's batch_size.
  int block_size() const;
  std::vector<std::vector<int32_t>> run(const BlockWork& work);
  std::string describe() const;
  PipelineDevice device() const { return device_; }
  ops::ComputeType compute_type() const { return compute_; }
  const std::optional<policy::Policy>& policy() const { return policy_; }  // none: in RAM
  const EngineTotals& totals() const { return totals_; }

 private:
  RunConfig config_;
  ModelSource source_;
  PipelineDevice device_ = PipelineDevice::Cpu;
  ops::ComputeType compute_;
  DType weight_dtype_;
  std::optional<policy::Policy> policy_;
  policy::HardwareLimits limits_;
  std::optional<ModelWeights> weights_;  // in-RAM path only
  EngineTotals totals_;
};

}  // namespace h2oflex::generate
