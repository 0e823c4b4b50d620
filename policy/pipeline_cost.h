// The cost model of pipeline parallelism in FlexGen's style (its dist_flex_opt): the decoder
// layers are split into S contiguous stages (runtime/dist/stage_plan.h), each stage a machine
// that runs the block schedule on its own layers with its own tiers; S blocks are in flight (one
// per stage: FlexGen's num-inner-iterations = S), so that every stage computes while the others
// do. A block's hidden states cross each stage boundary once per step; the token ids it chose
// go back from the last stage to the first.
//
// Per block and stage j, p_j and g_j are the stage's prefill and decode-step times
// (estimate_cost on stage_model_shape). With S blocks and links of latency + bytes / rate:
//   prefill   T_p = sum_j p_j + sum of the S-1 forward hops + (S-1) * max_j p_j
//             (the blocks follow each other through the slowest stage or link)
//   decode    T_g = (n-1) * max(S * max_j g_j,  sum_j g_j + forward hops + the ids' hop back)
//             (each stage computes S blocks per step, and a block's next step cannot start
//             before its token has come back round)
// Throughput counts all S blocks: total = S * bls * n / (T_p + T_g). The bubble is the share
// of stage time spent waiting: 1 - sum_j busy_j / (S * (T_p + T_g)). One stage is exactly
// estimate_cost.
#pragma once

#include <string>
#include <vector>

#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "runtime/dist/stage_plan.h"

namespace h2oflex::policy {

struct StageEstimate {
  StageRange units;  // engine units: 0 = embedding, 1..L = layers, L+1 = head
  int64_t layers = 0;
  CostEstimate cost;         // one block on this stage's layers (its peaks: this stage's memory)
  double prefill_s = 0;      // one block's prefill here (p_j)
  double decode_step_s = 0;  // one block's decode step here (g_j)
  // Bytes of one block's hidden states this stage sends the next one (0 on the last stage).
  double send_bytes_prefill = 0, send_bytes_decode_step = 0;
  double busy_s = 0;           // this stage's time computing, all S blocks, whole run
  TierBytes capacity;          // what this stage's machine offers (search_capacity)
  std::string memory_problem;  // "" when the stage's peak fits its capacity
};

struct PipelineEstimate {
  std::vector<StageEstimate> stages;
  int blocks_in_flight = 1;  // S
  double prefill_s = 0, decode_s = 0, total_s = 0;
  double prefill_tok_s = 0, decode_tok_s = 0, total_tok_s = 0;  // all blocks in flight
  double bubble = 0;                 // share of stage time spent waiting, [0, 1)
  double ids_bytes_decode_step = 0;  // one block's token ids, last stage -> first, per step
  // What sets the decode pace: "stage J" (its compute), "link J" (its hop), or "round trip" (a
  // block's way round the ring is longer than S blocks' compute on the slowest stage).
  std::string decode_bottleneck;
  bool fits() const;  // every stage's memory fits
};

// `stage_hw` holds one profile per stage (its machine, and its link to the next stage).
PipelineEstimate estimate_pipeline(const ModelShape& model,
                                   const std::vector<HardwareProfile>& stage_hw, const Policy& p,
                                   const Workload& w, const HardwareLimits& limits = {},
                                   DecodeContext ctx = DecodeContext::Mean);

}  // namespace h2oflex::policy
