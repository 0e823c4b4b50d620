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

namespace {

// Tokens of the sequence read as one prompt.
size_t prompt_length(const ScoredSequence& s, ContextReading reading) {
  switch (reading) {
    case ContextReading::Stream:
      return 1;
    case ContextReading::Prefill:
      return s.first_scored;
    case ContextReading::PrefillContext:
      return s.context_end > 0 ? s.context_end : s.first_scored;
  }
  return 1;
}

}  // namespace

std::vector<SequenceScore> score_sequences(const std::vector<ScoredSequence>& sequences,
                                           const policy::KvPolicy& kv,
                                           generate::BlockEngine& engine, ContextReading reading) {
  std::vector<SequenceScore> out(sequences.size());
  // Sequences whose lengths resolve the policy to the same counts share blocks; longest first,
  // so a block's lengths (and its padding and refed steps) are close.
  std::map<std::tuple<int, int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const ScoredSequence& s = sequences[i];
    H2OFLEX_CHECK(s.ids.size() >= 2 && s.first_scored >= 1 && s.first_scored < s.ids.size(),
                  "score_sequences: sequence ", i, " has ", s.ids.size(), " ids, first scored ",
                  s.first_scored);
    H2OFLEX_CHECK(s.context_end <= s.first_scored, "score_sequences: sequence ", i,
                  "'s context ends at ", s.context_end, ", after its first scored token ",
                  s.first_scored);
    const KvRule r = kv.resolve(static_cast<int>(s.ids.size()), 0);
    groups[{r.sinks, r.heavy, r.recent}].push_back(i);
  }
  const size_t block = static_cast<size_t>(std::max(1, engine.block_size()));
  for (auto& [key, members] : groups) {
    std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return sequences[a].ids.size() > sequences[b].ids.size();
    });
    for (size_t start = 0; start < members.size(); start += block) {
      const size_t n = std::min(block, members.size() - start);
      // Every row's counts are the group's; the longest member resolves them.
      const KvRule rule = kv.resolve(static_cast<int>(sequences[members[start]].ids.size()), 0);
      std::vector<size_t> prompt(n);
      size_t longest_prompt = 0, longest_fed = 0;
      for (size_t r = 0; r < n; ++r) {
        const ScoredSequence& s = sequences[members[start + r]];
        prompt[r] = prompt_length(s, reading);
        longest_prompt = std::max(longest_prompt, prompt[r]);
        longest_fed = std::max(longest_fed, s.ids.size() - prompt[r]);
      }
      generate::BlockWork work;
      work.prompt_len = static_cast<int>(longest_prompt);
      work.gen_len = static_cast<int>(longest_fed);
      work.eviction = rule;
      for (size_t r = 0; r < n; ++r) {
        const ScoredSequence& s = sequences[members[start + r]];
        const auto split = s.ids.begin() + static_cast<std::ptrdiff_t>(prompt[r]);
        work.prompts.emplace_back(s.ids.begin(), split);
        work.forced.emplace_back(split, s.ids.end());
        out[members[start + r]].rule = rule;
      }
      // Step `step`'s logits predict ids[prompt + step] of each row.
      work.on_step_logits = [&](int64_t first_row, int step, const Tensor& logits) {
        const int64_t vocab = logits.dim(1);
        for (int64_t r = 0; r < logits.dim(0); ++r) {
          const size_t row = static_cast<size_t>(first_row + r);
          if (row >= n) continue;  // a copy filling the pipeline's block
          const ScoredSequence& s = sequences[members[start + row]];
          SequenceScore& score = out[members[start + row]];
          const size_t target = prompt[row] + static_cast<size_t>(step);
          if (target < s.first_scored || target >= s.ids.size()) continue;
          const float* row_logits = logits.data<float>() + r * vocab;
          score.nll.push_back(token_nll(row_logits, vocab, s.ids[target]));
          if (target + 1 == s.ids.size()) {
            for (int32_t alt : s.last_alternatives) {
              score.last_alternatives.push_back(token_nll(row_logits, vocab, alt));
            }
          }
        }
      };
      engine.run(work);
    }
  }
  for (size_t i = 0; i < sequences.size(); ++i) {
    H2OFLEX_CHECK(out[i].nll.size() == sequences[i].ids.size() - sequences[i].first_scored &&
                      out[i].last_alternatives.size() == sequences[i].last_alternatives.size(),
                  "score_sequences: sequence ", i, " got ", out[i].nll.size(), " scores for ",
                  sequences[i].ids.size() - sequences[i].first_scored, " tokens");
  }
  return out;
}

}  // namespace h2oflex::eval
