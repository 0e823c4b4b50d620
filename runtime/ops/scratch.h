// Reusable per-thread working buffers, one per purpose and device (cuda:0 and cuda:1 apart),
// grown on demand: the hot loop neither faults in fresh host pages nor calls cudaMalloc (which
// synchronizes) for every layer.
// A buffer stays valid until the same thread asks for the same purpose again.
#pragma once

#include "runtime/core/tensor.h"

namespace h2oflex::ops {

// Every user of scratch memory, so no two pieces of code share a buffer by accident.
enum class Scratch : int {
  Normed,           // LayerNorm output feeding the projections / MLP
  Projection,       // attention output projection and fc2 output
  Ffn,              // fc1 output (the gate half of a SwiGLU MLP)
  FfnUp,            // the up half of a SwiGLU MLP
  FusedQkv,         // a fused query_key_value projection, before it is split into heads
  RopeFrequencies,  // rotary inverse frequencies, uploaded to the compute device
  Embed,            // word embeddings before project_in, or hidden before project_out
  PrefillQ,         // prefill queries
  PrefillAttn,      // prefill attention output
  DecodeQ,
  DecodeK,
  DecodeV,
  DecodeAttn,
  SlotProbs,  // decode attention probabilities of the cached slots
  SelfProb,   // ... and of the new token
  Victims,    // evict_lowest_score output
  Changed,    // kv_insert output
  HostQ,      // decode inputs and output copied to where a delegated cache lives
  HostK,
  HostV,
  HostAttn,
  TokenIds,  // ids and positions uploaded for the embedding
  Positions,
  LastHidden,    // the last position of each sequence, before the output head
  PrefillKeep,   // prefill selection: kept positions
  PrefillScore,  // prefill selection: the score each token starts with, which also ranks it
  StageK,        // a prompt's kept slots, built where the prompt was computed, before they go
  StageV,        //   to slots on another device (a delegated cache)
  StagePos,
  StageScore,
  kCount
};

// A contiguous tensor of `shape` and `dtype` on `device`; contents are undefined.
Tensor scratch(Scratch purpose, Shape shape, DType dtype, Device device);

// Bytes this thread's buffers hold on `device` (what the memory plan's op_scratch_bytes must
// cover), and their release (a test measures one run from nothing).
uint64_t scratch_bytes_held(Device device);
void release_scratch(Device device);

// `t` as the code on `device` sees it: `t` itself when it is already there, else a copy in
// `purpose`'s buffer on `device` (small per-step inputs such as token ids, uploaded to a GPU).
Tensor scratch_copy(Scratch purpose, const Tensor& t, Device device);

}  // namespace h2oflex::ops
