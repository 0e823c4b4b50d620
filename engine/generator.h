// The in-RAM generation path: every weight and the whole KV cache in host memory, no tiers.
// It is the reference the pipelined engine must reproduce token for token, and the simplest way
// to run a small model.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "engine/kv_slots.h"
#include "models/decoder_model.h"
#include "policy/kv_policy.h"
#include "policy/memory_plan.h"

namespace h2oflex {

struct GenerationSettings {
  int gen_len = 32;
  bool stop_at_eos = true;
  ops::ComputeType compute = ops::ComputeType::F32;
  DType kv_dtype = DType::F32;
  // The in-RAM path's KV row format (a pipeline run takes its policy's kv_packing()).
  PackedFormat cache_format = PackedFormat::None;
  KvRule eviction;
  float temperature = 0.0f;  // 0 = greedy
  float top_p = 1.0f;
  uint64_t seed = 0;
  // Sampling stream of each sequence (empty: its row index), so a request samples the same
  // tokens whichever block and row it lands in.
  std::vector<uint64_t> row_keys;
  // Per sequence (empty: none): (token id, bias) added to its logits before each choice —
  // OpenAI's logit_bias; +100 all but forces a token, -100 all but bans it.
  std::vector<std::vector<std::pair<int32_t, float>>> logit_bias;
  // Per sequence (empty: none): OpenAI's presence_penalty, subtracted from the logit of every
  // token the sequence has generated so far.
  std::vector<float> presence_penalty;
  // Test hooks: logits [rows, vocab] of every prompt position (step -1, rows = b * s) and of the
  // last position at each generation step (step >= 0, rows = b).
  std::function<void(int step, const Tensor& logits)> on_logits;
  bool all_prompt_logits = false;
  bool capture_kept = false;  // fill GenerateOutput::kept at the end
  // Teacher forcing (eval): after step `step` (0 = the prefill's logits) row r is fed
  // forced[r][step] instead of the token chosen from its logits; a row whose list is shorter is
  // fed its last forced token again (its later logits are not meant to be used). Empty: off.
  std::vector<std::vector<int32_t>> forced;
  // Sees the logits [rows, vocab] (host) of every step on both paths, before the choice;
  // `first_row` is the global index of row 0 (the pipeline calls it once per GPU batch).
  std::function<void(int64_t first_row, int step, const Tensor& logits)> on_step_logits;
  // Asked between decode steps (empty: never); true ends the run there, its sequences short
  // (GenerateOutput::stopped). The pipeline asks it in a single process only: stages stop
  // between blocks.
  std::function<bool()> stop_requested;
  // Where generate_in_ram computes: CUDA copies the weights to the GPU first and keeps the KV
  // cache there (the hooks above still receive host tensors).
  Device device = Device::CPU;
};

// Kept KV positions at the end of a run: [layer][sequence * heads + head], sorted.
using KeptSets = std::vector<std::vector<std::vector<int32_t>>>;

struct GenerateOutput {
  std::vector<std::vector<int32_t>> tokens;  // generated ids per sequence (EOS included)
  double prefill_s = 0, decode_s = 0;
  KeptSets kept;         // when GenerationSettings::capture_kept
  bool stopped = false;  // stop_requested ended the run before gen_len tokens
};

// A batch of prompts left-padded to the longest one.
struct PaddedBatch {
  int64_t batch = 0, seq = 0;
  std::vector<int32_t> pad;  // left padding per sequence
  Tensor ids, positions;     // [batch * seq] i32; positions of padding are -1 (OPT convention)
};
PaddedBatch pad_prompts(const std::vector<std::vector<int32_t>>& prompts, int32_t pad_id);

// Next-token choice for a [b, vocab] logits block (greedy or seeded sampling, or the forced
// tokens), after showing the block to on_step_logits. `first_row` is the global index of row 0,
// so results do not depend on how a batch is split; `generated` holds the tokens each sequence
// has generated so far (by global index), which presence_penalty reads.
void choose_tokens(const Tensor& logits, const GenerationSettings& opt, int64_t first_row, int step,
                   const std::vector<std::vector<int32_t>>& generated, std::vector<int32_t>& ids);

// Positions of one decode step's tokens: the token of sequence i at padded position `padded`
// is real position padded - pad[i] (i32 [pad.size()], in host memory).
Tensor decode_positions(const std::vector<int32_t>& pad, int32_t padded);

// What generate_in_ram holds for `batch` prompts padded to `prompt_len` (the memory plan of one
// block with everything on the compute device), so a run too large is refused before it starts.
policy::MemoryPlan plan_in_ram(const DecoderModel& model, const GenerationSettings& settings,
                               int64_t batch, int64_t prompt_len);

GenerateOutput generate_in_ram(const DecoderModel& model, const ModelWeights& weights,
                               const std::vector<std::vector<int32_t>>& prompts,
                               const GenerationSettings& opt);

}  // namespace h2oflex
