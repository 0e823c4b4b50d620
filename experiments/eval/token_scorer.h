// Teacher-forced scoring with the KV policy applied for real. Streamed (the default), each
// sequence starts from its first token alone (the prefill) and every following token is fed one
// at a time, so the policy evicts token by token exactly as in generation — an evicted entry is
// gone for every later prediction. With the context prefilled, the unscored head of a sequence
// is one prompt (the policy selecting at its end, as for a generation prompt; SnapKV selects
// only there) and the scored tokens are fed one at a time; with only the context prefilled, a
// question between the context and the scored tokens is fed one token at a time after the
// policy has selected (what a cache holding a document meets when the question comes later).
// The negative log-likelihood of each token comes from the logits computed before it was fed.
//
// Batching: sequences whose lengths resolve the policy to the same counts share blocks of up to
// engine.block_size() rows, whatever their lengths — prompts of different lengths are
// left-padded (padding is never stored in the cache) and a shorter sequence is fed its last
// token again until the block's longest ends (those steps are not scored). Each row keeps its
// own slots; the counts, a fraction of each sequence's own length, are what rows of a block
// share.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/generate/block_engine.h"
#include "policy/kv_policy.h"

namespace h2oflex::eval {

struct ScoredSequence {
  std::vector<int32_t> ids;  // ids[0] is a BOS; at least 2 ids
  size_t first_scored = 1;   // ids[first_scored..] are scored (>= 1)
  // ids[0 .. context_end) are the context before a question (0: no question; the whole
  // unscored head is the context). Read by ContextReading::PrefillContext.
  size_t context_end = 0;
  // Further tokens whose negative log-likelihood at the last position (the one ids.back() is
  // scored at) is reported in SequenceScore::last_alternatives: the other choices of a task
  // whose choices are one token each, scored from one sequence.
  std::vector<int32_t> last_alternatives;
};

// How the unscored context of a sequence is read.
enum class ContextReading {
  Stream,          // token by token after the BOS, the policy acting at every step
  Prefill,         // ids[0 .. first_scored) as one prompt
  PrefillContext,  // ids[0 .. context_end) as one prompt, the question token by token
};

struct SequenceScore {
  std::vector<double> nll;                // of ids[first_scored..], in order
  std::vector<double> last_alternatives;  // of ScoredSequence::last_alternatives, in order
  KvRule rule;                            // the policy resolved for this sequence's length
};

// The policy's ratios are fractions of each sequence's length (ids.size()).
std::vector<SequenceScore> score_sequences(const std::vector<ScoredSequence>& sequences,
                                           const policy::KvPolicy& kv,
                                           generate::BlockEngine& engine,
                                           ContextReading reading = ContextReading::Stream);

// -log softmax(logits)[target], in double (a row of `vocab` f32 logits).
double token_nll(const float* logits, int64_t vocab, int32_t target);

}  // namespace h2oflex::eval
