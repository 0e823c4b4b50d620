#include "experiments/eval/token_scorer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "runtime/core/error.h"

namespace h2oflex::eval {

double token_nll(const float* logits, int64_t vocab, int32_t target) {
  H2OFLEX_CHECK(target >= 0 && target < vocab, "token id ", target, " outside the vocabulary (",
                vocab, ")");
  double mx = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return mx + std::log(sum) - static_cast<double>(logits[target]);
}

std::vector<SequenceScore> score_sequences(const std::vector<ScoredSequence>& sequences,
                                           const policy::KvPolicy& kv,
                                           generate::BlockEngine& engine, ContextReading reading) {
  std::vector<SequenceScore> out(sequences.size());
  const bool prefill = reading == ContextReading::Prefill;
  // Sequences whose lengths resolve the policy to the same counts and whose prompts are equally
  // long (no padding) share blocks; a shorter one is fed its last token again until the block's
  // longest ends, and those extra steps are not scored. Longest first, so a block's lengths are
  // close.
  std::map<std::tuple<size_t, int, int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const ScoredSequence& s = sequences[i];
    H2OFLEX_CHECK(s.ids.size() >= 2 && s.first_scored >= 1 && s.first_scored < s.ids.size(),
                  "score_sequences: sequence ", i, " has ", s.ids.size(), " ids, first scored ",
                  s.first_scored);
    const KvRule r = kv.resolve(static_cast<int>(s.ids.size()), 0);
    groups[{prefill ? s.first_scored : 1, r.sinks, r.heavy, r.recent}].push_back(i);
  }
  const size_t block = static_cast<size_t>(std::max(1, engine.block_size()));
  for (auto& [key, members] : groups) {
    const size_t prompt = std::get<0>(key);
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return sequences[a].ids.size() > sequences[b].ids.size();
    });
    for (size_t start = 0; start < members.size(); start += block) {
      const size_t n = std::min(block, members.size() - start);
      const size_t length = sequences[members[start]].ids.size();  // the block's longest
      const KvRule rule = kv.resolve(static_cast<int>(length), 0);
      generate::BlockWork work;
      work.prompt_len = static_cast<int>(prompt);
      work.gen_len = static_cast<int>(length - prompt);
      work.eviction = rule;
      for (size_t r = 0; r < n; ++r) {
        const ScoredSequence& s = sequences[members[start + r]];
        const auto split = s.ids.begin() + static_cast<std::ptrdiff_t>(prompt);
        work.prompts.emplace_back(s.ids.begin(), split);
        work.forced.emplace_back(split, s.ids.end());
        out[members[start + r]].rule = rule;
      }
      // Step `step`'s logits predict ids[prompt + step].
      work.on_step_logits = [&](int64_t first_row, int step, const Tensor& logits) {
        const int64_t vocab = logits.dim(1);
        for (int64_t r = 0; r < logits.dim(0); ++r) {
          const size_t row = static_cast<size_t>(first_row + r);
          if (row >= n) continue;  // a copy filling the pipeline's block
          const ScoredSequence& s = sequences[members[start + row]];
          const size_t target = prompt + static_cast<size_t>(step);
          if (target < s.first_scored || target >= s.ids.size()) continue;
          out[members[start + row]].nll.push_back(
              token_nll(logits.data<float>() + r * vocab, vocab, s.ids[target]));
        }
      };
      engine.run(work);
    }
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    H2OFLEX_CHECK(out[i].nll.size() == sequences[i].ids.size() - sequences[i].first_scored,
                  "score_sequences: sequence ", i, " got ", out[i].nll.size(), " scores for ",
                  sequences[i].ids.size() - sequences[i].first_scored, " tokens");
  }
  return out;
}

}  // namespace h2oflex::eval
