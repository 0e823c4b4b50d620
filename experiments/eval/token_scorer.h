// Teacher-forced scoring with the KV policy applied for real. Streamed (the default), each
// sequence starts from its first token alone (the prefill) and every following token is fed one
// at a time, so the policy evicts token by token exactly as in generation — an evicted entry is
// gone for every later prediction. With the context prefilled, the unscored head of a sequence
// is one prompt (the policy selecting at its end, as for a generation prompt; SnapKV selects
// only there) and the scored tokens are fed one at a time. The negative log-likelihood of each
// token comes from the logits computed before it was fed.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/generate/block_engine.h"
#include "policy/kv_policy.h"

namespace h2oflex::eval {

struct ScoredSequence {
  std::vector<int32_t> ids;  // ids[0] is a BOS; at least 2 ids
  size_t first_scored = 1;   // ids[first_scored..] are scored (>= 1)
};

// How the unscored context of a sequence is read.
enum class ContextReading {
  Stream,   // token by token after the BOS, the policy acting at every step
  Prefill,  // ids[0 .. first_scored) as one prompt
};

struct SequenceScore {
  std::vector<double> nll;  // of ids[first_scored..], in order
  KvRule rule;              // the policy resolved for this sequence's length
};

// The policy's ratios are fractions of each sequence's length (ids.size()); sequences of one
// length share a block (at most engine.block_size() of them).
std::vector<SequenceScore> score_sequences(const std::vector<ScoredSequence>& sequences,
                                           const policy::KvPolicy& kv,
                                           generate::BlockEngine& engine,
                                           ContextReading reading = ContextReading::Stream);

// -log softmax(logits)[target], in double (a row of `vocab` f32 logits).
double token_nll(const float* logits, int64_t vocab, int32_t target);

}  // namespace h2oflex::eval
