// Teacher-forced scoring (experiments/eval/token_scorer): the per-token NLL equals what Hugging
// Face's logits give for the same tokens, a budget that covers the sequence reproduces the full
// cache exactly for every policy, a small budget really evicts, and the pipeline's placements
// (weights and KV on disk, attention on the host) give the same numbers as the in-RAM path.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "experiments/common/model_source.h"
#include "experiments/eval/perplexity.h"
#include "experiments/eval/token_scorer.h"
#include "tests/eval/trained_model_fixture.h"
#include "tests/support/hf_fixtures.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex::eval {
namespace {

using testing_support::kFixtures;

RunConfig fixture_config(const std::string& dir, const std::string& kv_yaml = "{policy: full}") {
  return fixtures::scoring_config(kFixtures + dir, kv_yaml, 3);
}

std::vector<SequenceScore> score(const RunConfig& c, const std::vector<ScoredSequence>& seqs) {
  const ModelSource src = open_model_source(c.model, c.dummy, c.seed);
  generate::BlockEngine engine(c, src);
  return score_sequences(seqs, c.kv_policy, engine);
}

// Sequences of random ids from `vocab`, each starting with the BOS 2.
std::vector<ScoredSequence> random_sequences(uint32_t seed, std::vector<int> lengths, int vocab) {
  std::mt19937 rng(seed);
  std::vector<ScoredSequence> out;
  for (int n : lengths) {
    ScoredSequence s;
    s.ids.push_back(2);
    for (int i = 1; i < n; ++i) s.ids.push_back(static_cast<int32_t>(4 + rng() % (vocab - 4)));
    out.push_back(std::move(s));
  }
  return out;
}

TEST(TokenNll, IsMinusLogSoftmax) {
  const float logits[] = {1.0f, 3.0f, -2.0f};
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(-2.0);
  EXPECT_NEAR(token_nll(logits, 3, 1), -(3.0 - std::log(z)), 1e-12);
  const float big[] = {1000.0f, 0.0f};  // no overflow: the maximum is taken out first
  EXPECT_NEAR(token_nll(big, 2, 1), 1000.0, 1e-9);
}

// The fixture's prompts with Hugging Face's logits at every position: each prompt scored token
// by token through the cache gives -log softmax of HF's logits for the next token.
TEST(EvalScoring, FullCacheNllIsHuggingFaceLogSoftmax) {
  const nlohmann::json e = testing_support::expected();
  const auto& ref = e["references"]["tiny-preln"];
  const auto prompts = testing_support::prompts(e["prompts"]);
  const size_t rows = ref["prefill_logits"]["shape"][0].get<size_t>();
  const int64_t vocab = ref["prefill_logits"]["shape"][1].get<int64_t>();
  const std::vector<float> hf =
      testing_support::read_floats(ref["prefill_logits"]["file"], rows * vocab);
  std::vector<ScoredSequence> seqs;
  for (const auto& p : prompts) {
    seqs.emplace_back();
    seqs.back().ids = p;
  }
  const std::vector<SequenceScore> got = score(fixture_config("tiny-preln"), seqs);
  size_t row = 0;  // HF's rows: every real position of every prompt, in order
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].nll.size(), prompts[i].size() - 1);
    for (size_t t = 0; t + 1 < prompts[i].size(); ++t) {
      const double want = token_nll(&hf[(row + t) * vocab], vocab, prompts[i][t + 1]);
      EXPECT_NEAR(got[i].nll[t], want, 1e-4) << "prompt " << i << " position " << t;
    }
    row += prompts[i].size();
  }
  EXPECT_EQ(row, rows);
}

// A budget of at least the sequence keeps every token, so every policy scores exactly as the
// full cache does; a small budget must change the scores (the policy acts).
TEST(EvalScoring, BudgetCoveringTheSequenceEqualsFullExactly) {
  const auto seqs = random_sequences(3, {40, 40, 33, 40}, 1000);
  const auto full = score(fixture_config("tiny-preln"), seqs);
  for (const char* kv : {"{policy: h2o, heavy_ratio: 0.5, recent_ratio: 0.5}",
                         "{policy: h2o, heavy_tokens: 20, "
                         "recent_tokens: 20}",
                         "{policy: tova, heavy_ratio: 0.5, recent_ratio: 0.5}",
                         "{policy: h2o, heavy_ratio: 0, recent_ratio: 1}",
                         "{policy: random, heavy_ratio: 0.5, recent_ratio: 0.5}",
                         "{policy: streaming, sink_tokens: 4, recent_tokens: 36}"}) {
    const auto got = score(fixture_config("tiny-preln", kv), seqs);
    for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(got[i].nll, full[i].nll) << kv << " " << i;
  }
  for (const char* kv : {"{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}",
                         "{policy: h2o, heavy_ratio: 0, recent_ratio: 0.2}",
                         "{policy: streaming, sink_tokens: 2, recent_tokens: 6}"}) {
    const auto got = score(fixture_config("tiny-preln", kv), seqs);
    double diff = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      ASSERT_EQ(got[i].nll.size(), full[i].nll.size());
      // Until the budget fills nothing is evicted: the first tokens score as with the full cache.
      EXPECT_EQ(got[i].nll.front(), full[i].nll.front()) << kv;
      for (size_t t = 0; t < got[i].nll.size(); ++t) {
        diff = std::max(diff, std::fabs(got[i].nll[t] - full[i].nll[t]));
      }
    }
    EXPECT_GT(diff, 1e-3) << kv << ": a small budget changed nothing";
  }
}

// Ratios are fractions of each scored sequence: a 40-token and a 20-token sequence get budgets
// of 8 and 4 at 10% + 10%.
TEST(EvalScoring, RatiosAreFractionsOfEachSequence) {
  const auto seqs = random_sequences(4, {40, 20}, 1000);
  const auto got = score(fixture_config("tiny-preln",
                                        "{policy: h2o, heavy_ratio: 0.1, "
                                        "recent_ratio: 0.1}"),
                         seqs);
  EXPECT_EQ(got[0].rule.heavy + got[0].rule.recent, 8);
  EXPECT_EQ(got[1].rule.heavy + got[1].rule.recent, 4);
}

// With the context prefilled, the full cache scores the continuation as streaming does (the
// prefill's blocked attention rounds differently from decode's); SnapKV, which selects only
// there, equals the full cache when its budget covers the context and changes the scores when
// it does not.
TEST(EvalScoring, PrefilledContextAndSnapKv) {
  auto seqs = random_sequences(6, {40, 40, 40}, 1000);
  for (auto& s : seqs) s.first_scored = 24;
  const auto streamed = score(fixture_config("tiny-preln"), seqs);
  const RunConfig full = fixture_config("tiny-preln");
  const ModelSource src = open_model_source(full.model, false, 0);
  auto run = [&](const std::string& kv) {
    RunConfig c = fixture_config("tiny-preln", kv);
    generate::BlockEngine engine(c, src);
    return score_sequences(seqs, c.kv_policy, engine, ContextReading::Prefill);
  };
  const auto prefilled = run("{policy: full}");
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(prefilled[i].nll.size(), 16u);
    for (size_t t = 0; t < 16; ++t) EXPECT_NEAR(prefilled[i].nll[t], streamed[i].nll[t], 1e-4);
  }
  const auto covering = run("{policy: snapkv, heavy_ratio: 0.5, recent_ratio: 0.5}");
  const auto small = run("{policy: snapkv, heavy_ratio: 0.1, recent_ratio: 0.1}");
  double diff = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_EQ(covering[i].nll, prefilled[i].nll) << i;
    for (size_t t = 0; t < 16; ++t) {
      diff = std::max(diff, std::fabs(small[i].nll[t] - prefilled[i].nll[t]));
    }
  }
  EXPECT_GT(diff, 1e-3);
  EXPECT_EQ(small[0].rule.capacity(24, 16), 4 + 4 + 16);  // the prompt's 8 plus every new token
}

// Prompts of different lengths whose sequences resolve the policy to the same counts share one
// block, left-padded: each scores as it does alone (padding is never stored, and H2O's prefill
// selection sees only the real tokens), while the policy really evicts.
TEST(EvalScoring, PaddedPromptsInOneBlockScoreAsEachAlone) {
  auto seqs = random_sequences(7, {40, 40, 40, 40}, 1000);
  const size_t first[] = {12, 20, 27, 31};
  for (size_t i = 0; i < seqs.size(); ++i) seqs[i].first_scored = first[i];
  const RunConfig c = fixture_config("tiny-preln",
                                     "{policy: h2o, heavy_ratio: 0.1, "
                                     "recent_ratio: 0.1}");
  const ModelSource src = open_model_source(c.model, false, 0);
  RunConfig one_block = c;
  one_block.batch_size = 4;
  generate::BlockEngine together(one_block, src);
  const auto got = score_sequences(seqs, c.kv_policy, together, ContextReading::Prefill);
  RunConfig single = c;
  single.batch_size = 1;
  generate::BlockEngine alone(single, src);
  const RunConfig full_config = fixture_config("tiny-preln");
  generate::BlockEngine full_engine(full_config, src);
  double evicted = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto want = score_sequences({seqs[i]}, c.kv_policy, alone, ContextReading::Prefill);
    const auto full =
        score_sequences({seqs[i]}, full_config.kv_policy, full_engine, ContextReading::Prefill);
    ASSERT_EQ(got[i].nll.size(), 40 - first[i]);
    for (size_t t = 0; t < got[i].nll.size(); ++t) {
      EXPECT_NEAR(got[i].nll[t], want[0].nll[t], 1e-4) << "sequence " << i << " token " << t;
      evicted = std::max(evicted, std::fabs(got[i].nll[t] - full[0].nll[t]));
    }
  }
  EXPECT_GT(evicted, 1e-3) << "the budget evicted nothing";
}

// Reading only the context as a prompt feeds the question token by token after the policy has
// selected: the scores equal those of the same sequence whose question is scored (prefill of the
// context, then one token at a time) -- and differ from reading the question in the prompt.
TEST(EvalScoring, PrefillContextReadsTheQuestionAfterTheSelection) {
  auto asked = random_sequences(8, {40, 40, 40}, 1000);
  auto scored_question = asked;
  for (auto& s : asked) s.first_scored = 32, s.context_end = 20;
  for (auto& s : scored_question) s.first_scored = 20;
  const RunConfig c = fixture_config("tiny-preln",
                                     "{policy: h2o, heavy_ratio: 0.1, "
                                     "recent_ratio: 0.1}");
  const ModelSource src = open_model_source(c.model, false, 0);
  generate::BlockEngine engine(c, src);
  const auto late = score_sequences(asked, c.kv_policy, engine, ContextReading::PrefillContext);
  const auto reference =
      score_sequences(scored_question, c.kv_policy, engine, ContextReading::Prefill);
  const auto in_prompt = score_sequences(asked, c.kv_policy, engine, ContextReading::Prefill);
  double diff = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    ASSERT_EQ(late[i].nll.size(), 8u);
    const std::vector<double> tail(reference[i].nll.end() - 8, reference[i].nll.end());
    EXPECT_EQ(late[i].nll, tail) << i;
    for (size_t t = 0; t < 8; ++t)
      diff = std::max(diff, std::fabs(late[i].nll[t] - in_prompt[i].nll[t]));
  }
  EXPECT_GT(diff, 1e-3) << "the question read in the prompt changed nothing";
}

// The other choices of a one-token task are scored at the last position of one sequence: the
// same numbers as a sequence of their own.
TEST(EvalScoring, LastAlternativesScoreAsTheirOwnSequences) {
  auto seqs = random_sequences(9, {30, 30}, 1000);
  const RunConfig c = fixture_config("tiny-preln",
                                     "{policy: h2o, heavy_ratio: 0.2, "
                                     "recent_ratio: 0.2}");
  const ModelSource src = open_model_source(c.model, false, 0);
  generate::BlockEngine engine(c, src);
  for (auto& s : seqs) s.first_scored = 29, s.last_alternatives = {17, 523};
  const auto got = score_sequences(seqs, c.kv_policy, engine, ContextReading::Prefill);
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(got[i].last_alternatives.size(), 2u);
    for (size_t a = 0; a < 2; ++a) {
      ScoredSequence own = seqs[i];
      own.last_alternatives.clear();
      own.ids.back() = seqs[i].last_alternatives[a];
      const auto want =
          score_sequences({own, seqs[1 - i]}, c.kv_policy, engine, ContextReading::Prefill);
      EXPECT_NEAR(got[i].last_alternatives[a], want[0].nll[0], 1e-5) << i << " " << a;
    }
  }
}

class EvalPlacements : public testing_support::ScratchDirTest {};

// The same scores, bit for bit, from the block schedule with the weights and the KV cache on
// disk (and with attention on the host for a cache off the compute device) as from the in-RAM
// path computing as many rows at a time (a GEMM of other rows may round differently).
TEST_F(EvalPlacements, DiskAndHostPlacementsGiveTheSameNumbers) {
  const auto seqs = random_sequences(5, std::vector<int>(12, 36), 1000);  // whole blocks
  const std::string kv = "{policy: h2o, heavy_ratio: 0.15, recent_ratio: 0.1}";
  for (const auto& [rows, placement] : std::vector<std::pair<int, const char*>>{
           {2,
            "{gpu_batch_size: 2, num_gpu_batches: 2, weights: {gpu: 0, cpu: 0}, cache: {gpu: 0, "
            "cpu: 0}, activations: {gpu: 100, cpu: 0}}"},
           {1,
            "{gpu_batch_size: 1, num_gpu_batches: 3, weights: {gpu: 0, cpu: 50}, cache: {gpu: 0, "
            "cpu: 100}, activations: {gpu: 0, cpu: 100}, cpu_cache_compute: true}"}}) {
    RunConfig in_ram = fixture_config("tiny-preln", kv);
    in_ram.batch_size = rows;
    const auto ram = score(in_ram, seqs);
    RunConfig c = fixture_config("tiny-preln", kv);
    c.policy = policy::parse_policy_section(YAML::Load(placement));
    c.hardware.disk_path = dir().string();
    const auto got = score(c, seqs);
    for (size_t i = 0; i < seqs.size(); ++i) {
      EXPECT_EQ(got[i].nll, ram[i].nll) << placement << " sequence " << i;
    }
  }
}

TEST(PlanWindows, EveryTokenScoredOnceAndContextGrowsWithOverlap) {
  for (const auto& [n, window, stride] :
       std::vector<std::tuple<size_t, int, int>>{{10, 4, 4}, {10, 4, 2}, {9, 4, 3}, {3, 8, 8}}) {
    const std::vector<Window> w = plan_windows(n, window, stride);
    size_t next = 0;
    for (const Window& x : w) {
      EXPECT_EQ(x.scored_from, next);
      EXPECT_LE(x.end - x.begin, static_cast<size_t>(window));
      EXPECT_LE(x.begin, x.scored_from);
      next = x.end;
    }
    EXPECT_EQ(next, n);
  }
  const std::vector<Window> w = plan_windows(10, 4, 2);
  EXPECT_EQ(w[1].begin, 2u);
  EXPECT_EQ(w[1].scored_from, 4u);  // tokens 2 and 3 are context only
  EXPECT_THROW(plan_windows(0, 4, 4), InputError);
  EXPECT_THROW(plan_windows(10, 4, 5), InputError);
  EXPECT_THROW(plan_windows(10, 0, 1), InputError);
}

}  // namespace
}  // namespace h2oflex::eval
