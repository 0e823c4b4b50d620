// `h2oflex plan`: the best policy the cost model finds for a model, a machine and a workload;
// and `plan_policy`, which a run config's `policy: auto` resolves through.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model_footprint.h"
#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "policy/kv_policy.h"
#include "policy/run_policy.h"
#include "policy/search.h"

namespace h2oflex {

struct PlanOptions {
  std::string model;          // "opt-30b"
  std::string hardware_path;  // a hardware profile YAML
  int prompt_len = 512;
  int gen_len = 32;
  std::string kv = "full";         // "full", "h2o:0.1,0.1", "streaming:4,60"
  policy::HardwareLimits limits;   // optional tighter budgets (0 = the profile's sizes)
  std::string json_out;            // optional: write the plan as JSON here
  bool allow_compression = false;  // also consider compress_weight / compress_cache
  // Pipeline stages (policy/pipeline_cost.h): 1 = one machine. `stage_hardware` lists one
  // profile per stage (empty: every stage is `hardware_path`'s machine).
  int stages = 1;
  std::vector<std::string> stage_hardware;
};

// The cost model's view (engine's model_shape_for) of a published model or of the model a
// directory's config.json describes. Throws InputError for anything else.
policy::ModelShape model_shape_for(const std::string& model, double weight_bytes = 2,
                                   double act_bytes = 2);

// model_shape_for(model) for a plan of `prompt_len` + `gen_len` tokens: refused (InputError) when
// they do not fit the model's positions, by the rule `run` and `policy: auto` apply.
policy::ModelShape planned_model_shape(const std::string& model, int prompt_len, int gen_len);

// Best policy within the profile's memory (times its usable_fraction) and `limits`.
// Throws InputError when nothing fits, naming the tier that does not.
// `allow_compression` lets it choose 4-bit weights / KV cache too.
policy::Policy plan_policy(const policy::ModelShape& model, const policy::HardwareProfile& hw,
                           int prompt_len, int gen_len, const policy::KvPolicy& kv,
                           const policy::HardwareLimits& limits = {},
                           bool allow_compression = false);

// Prints the plan (batch shape, percentages, delegation, predicted throughput, per-tier
// memory) to stdout; returns the exit code. With stages > 1 (or stage profiles), the pipeline's
// plan (run_pipeline_plan).
int run_plan(const PlanOptions& options);

// The pipeline plan: the policy every stage runs, each stage's layers, times, bytes sent and
// memory, the pipeline's throughput and bubble, and one machine's best plan beside it.
int run_pipeline_plan(const PlanOptions& options);

// Shared by both plans: the policy's lines on stdout, and as JSON.
void print_policy(const policy::Policy& p);
nlohmann::json policy_json(const policy::Policy& p);

}  // namespace h2oflex
