// A generate job, independent of how blocks are computed: read and check the input, plan the
// blocks, skip what an earlier run finished, run the rest block by block, append each block's
// results durably, report progress, and stop cleanly between blocks when asked.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "experiments/generate/block_plan.h"
#include "experiments/generate/prepared_request.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "policy/kv_policy.h"
#include "runtime/core/tensor.h"

namespace h2oflex::generate {

// One block for the engine: prompts of equal sampling parameters, gen_len = the largest
// max_new_tokens among them.
struct BlockWork {
  std::vector<std::vector<int32_t>> prompts;
  int prompt_len = 0;  // longest prompt
  int gen_len = 0;
  float temperature = 0.0f;
  float top_p = 1.0f;
  uint64_t seed = 0;               // the job's sampling seed
  std::vector<uint64_t> row_keys;  // per prompt: its sampling stream, from its id
  // Per prompt (empty: none): its request's logit_bias, (token id, bias) pairs.
  std::vector<std::vector<std::pair<int32_t, float>>> logit_bias;
  std::vector<float> presence_penalty;  // per prompt (empty: none)
  // Scoring (eval) instead of sampling: the tokens fed after each step, the logits observer and
  // the eviction rule already resolved for the scored length (GenerationSettings' fields).
  std::vector<std::vector<int32_t>> forced;
  std::function<void(int64_t first_row, int step, const Tensor& logits)> on_step_logits;
  std::optional<KvRule> eviction;
};

// Returns the generated ids of every prompt (EOS included when generated).
using BlockRunner = std::function<std::vector<std::vector<int32_t>>(const BlockWork&)>;

struct JobSettings {
  std::string input_path;
  std::string output_path;
  int block_size = 1;
  bool group_by_length = true;
  RequestDefaults defaults;
  uint64_t seed = 1;
  int64_t max_positions = 2048;         // the model's context
  std::vector<int32_t> stop_ids = {2};  // ids that end a completion (empty: run to the limit)
  // The model directory (or GGUF file) whose chat template renders chat requests; read only when
  // the input has one (a template this renderer refuses is then an InputError, before anything is
  // written). Empty: the model has no template.
  std::string chat_template_dir;
  bool progress_terminal = false;
  double progress_interval_s = 10.0;
  std::function<bool()> stop_requested;  // checked between blocks
  // The settings that decide the results (job_record.h), kept in OUT.job.json: a job with results
  // refuses other settings, a new one records these. Null: no record is kept.
  nlohmann::ordered_json job_record;
};

struct JobSummary {
  int64_t requests = 0;      // valid requests in the input
  int64_t errors = 0;        // lines reported to the errors file
  int64_t already_done = 0;  // valid requests found in the output at start
  int64_t completed = 0;     // results written by this run
  int64_t blocks_run = 0;
  int64_t completion_tokens = 0;  // written by this run
  int64_t truncated_bytes = 0;    // partial last line removed at start
  double generate_s = 0;          // wall time of the block loop
  bool interrupted = false;
  PlanCost cost;  // of the whole plan
};

// Throws InputError for a missing or unreadable input, or an output that is not a result file.
JobSummary run_generate_job(const JobSettings& settings, const BpeTokenizer& tokenizer,
                            const BlockRunner& run_block);

// The model's chat template when some request is a chat (none otherwise, or when `model_dir` is
// empty); InputError naming the construct when the renderer refuses the template.
std::optional<chat_template::ChatTemplate> chat_template_for(
    const std::vector<GenerateRequest>& requests, const std::string& model_dir);

// The sampling stream of a request: derived from its id alone, so a request samples the same
// tokens whichever block it lands in, with or without grouping, resumed or not.
uint64_t request_sampling_key(const std::string& id);

// The sampling stream of a request that names its own `seed` (OpenAI's field): requests with
// one seed, prompt and settings sample the same tokens, whatever their ids.
uint64_t seeded_sampling_key(uint64_t seed);

}  // namespace h2oflex::generate
