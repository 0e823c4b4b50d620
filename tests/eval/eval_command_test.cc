// run_eval_perplexity / run_eval_choice in-process on the demo model: the result documents hold
// what they say (perplexity = exp of the mean NLL over every text token; acc from the per-choice
// log-likelihoods), lm-eval-harness's convention for choices, and bad input stops with a clear
// error and no result — or, for a bad task line, a reported line and the others scored.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "experiments/common/model_source.h"
#include "experiments/eval/choice_tasks.h"
#include "experiments/eval/eval_command.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::testing {
namespace {

using nlohmann::json;

const char* kText =
    "The river ran past the old mill, and the miller's daughter watched the water turn the "
    "wheel. Every morning she counted the sacks of grain; every evening she wrote the numbers "
    "in a book that her grandfather had started. ";

class EvalCommandTest : public GenerateScratchTest {
 protected:
  EvalOptions options(const std::string& input, const std::string& out) const {
    EvalOptions o;
    o.model_dir = demo_model_dir().string();
    o.input = (dir() / input).string();
    o.json_out = (dir() / out).string();
    return o;
  }
  json result(const std::string& out) const { return json::parse(read_text(dir() / out)); }
};

TEST_F(EvalCommandTest, PerplexityDocumentScoresEveryToken) {
  write_text(dir() / "t.txt", kText);
  EvalOptions o = options("t.txt", "full.json");
  o.window = 24;  // several windows
  ASSERT_EQ(run_eval_perplexity(o), 0);
  const json j = result("full.json");
  const size_t n = demo_tokenizer().encode(kText, false).size();
  EXPECT_EQ(j["tokens"], n);
  ASSERT_EQ(j["nll"].size(), n);
  EXPECT_EQ(j["windows"], (n + 23) / 24);
  const std::vector<double> nll = j["nll"];
  const double mean = std::accumulate(nll.begin(), nll.end(), 0.0) / static_cast<double>(n);
  EXPECT_NEAR(j["nll_mean"].get<double>(), mean, 1e-9);
  EXPECT_NEAR(j["perplexity"].get<double>(), std::exp(mean), 1e-9 * std::exp(mean));
  EXPECT_EQ(j["kv"]["policy"], "full");
  EXPECT_EQ(j["kv"]["budget"], 25);  // the window and its BOS

  // A stride below the window scores each token once, the later ones with more context.
  o = options("t.txt", "overlap.json");
  o.window = 24;
  o.stride = 8;
  ASSERT_EQ(run_eval_perplexity(o), 0);
  const std::vector<double> overlap = result("overlap.json")["nll"];
  ASSERT_EQ(overlap.size(), n);
  // The first window is the same (up to the rounding of GEMMs over other rows of a block).
  for (size_t t = 0; t < 24; ++t) EXPECT_NEAR(overlap[t], nll[t], 1e-4) << t;
  double moved = 0;
  for (size_t t = 24; t < n; ++t) moved = std::max(moved, std::fabs(overlap[t] - nll[t]));
  EXPECT_GT(moved, 1e-2);

  // H2O at 20% of each window reports its budget and changes the scores.
  o = options("t.txt", "h2o.json");
  o.window = 24;
  o.overrides = {"kv={policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}"};
  ASSERT_EQ(run_eval_perplexity(o), 0);
  const json h = result("h2o.json");
  EXPECT_EQ(h["kv"]["heavy"], 2);  // floor(0.1 * 25)
  EXPECT_EQ(h["kv"]["recent"], 2);
  EXPECT_EQ(h["kv"]["budget"], 4);
  EXPECT_NE(h["nll"], j["nll"]);
}

TEST_F(EvalCommandTest, ReportsCarryTheBytesTheVocabularyCannotSpell) {
  // The demo model's weights read through a SmolLM2-like tokenizer without tokens for some
  // bytes (tests/fixtures/tokenizer-smollm2): "\x04" and "\x1d" are dropped (as Hugging Face
  // drops them) and the reports say how many; a text without them has no such key.
  const std::filesystem::path model = dir() / "model";
  std::filesystem::create_directories(model);
  const std::filesystem::path tokenizer =
      std::filesystem::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/tokenizer-smollm2";
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(demo_model_dir() / f, model / f);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(tokenizer / f, model / f);

  write_text(dir() / "t.txt", "The river\x04 ran past the mill.\x1d\x1d Every morning.");
  EvalOptions o = options("t.txt", "p.json");
  o.model_dir = model.string();
  o.window = 16;
  ASSERT_EQ(run_eval_perplexity(o), 0);
  EXPECT_EQ(result("p.json")["dropped_bytes"], 3);
  write_text(dir() / "clean.txt", "The river ran past the mill.");
  o = options("clean.txt", "clean.json");
  o.model_dir = model.string();
  o.window = 16;
  ASSERT_EQ(run_eval_perplexity(o), 0);
  EXPECT_FALSE(result("clean.json").contains("dropped_bytes"));

  write_text(
      dir() / "tasks.jsonl",
      R"({"id": "a", "context": "The river\u0004 ran", "choices": [" past", " by\u0006"], "answer": 0})"
      "\n");
  o = options("tasks.jsonl", "c.json");
  o.model_dir = model.string();
  ASSERT_EQ(run_eval_choice(o), 0);
  EXPECT_EQ(result("c.json")["dropped_bytes"], 3);  // the context's byte in both texts, + 1
}

TEST_F(EvalCommandTest, PerplexityBadInputIsRefusedWithoutAResult) {
  auto refused = [&](EvalOptions o, const std::string& what) {
    try {
      run_eval_perplexity(o);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    if (o.json_out != o.input) {
      EXPECT_FALSE(fs::exists(o.json_out)) << what;
    }
  };
  write_text(dir() / "empty.txt", "");
  refused(options("empty.txt", "r.json"), "is empty");
  refused(options("missing.txt", "r.json"), "does not exist");
  write_text(dir() / "t.txt", kText);
  EvalOptions o = options("t.txt", "r.json");
  o.window = 4096;
  refused(o, "--window 4096");
  o = options("t.txt", "r.json");
  o.window = 8;
  o.stride = 9;
  refused(o, "--stride 9");
  o = options("t.txt", "t.txt");
  refused(o, "--json");
  EXPECT_EQ(read_text(dir() / "t.txt"), kText);  // the input is never overwritten
  o = options("t.txt", "r.json");
  o.overrides = {"kv={policy: h2o, heavy_ratio: 0.7, recent_ratio: 0.7}"};
  refused(o, "kv.heavy_ratio + kv.recent_ratio");
  o = options("t.txt", "r.json");
  o.overrides = {"kv={policy: snapkv, heavy_ratio: 0.1, recent_ratio: 0.1}"};
  refused(o, "use --context prefill");
  o.context = "chunks";
  refused(o, "--context 'chunks'");
}

TEST_F(EvalCommandTest, ChoiceScoresFollowLmEvalHarness) {
  // Task b is task a with the context's trailing space moved to its choices: the same scores.
  write_text(
      dir() / "tasks.jsonl",
      R"({"id": "a", "context": "The miller's daughter counted the", "choices": [" sacks of grain", " stars", " river"], "answer": 0})"
      "\n"
      R"({"id": "b", "context": "The miller's daughter counted the ", "choices": ["sacks of grain", "stars", "river"], "answer": 0})"
      "\n\n"
      R"({"id": 7, "context": "Every evening she wrote", "choices": [" the numbers", " a song"], "answer": 1})"
      "\n");
  EvalOptions o = options("tasks.jsonl", "c.json");
  ASSERT_EQ(run_eval_choice(o), 0);
  const json j = result("c.json");
  ASSERT_EQ(j["n"], 3);
  EXPECT_EQ(j["rejected"], 0);
  const json& t = j["tasks"];
  // (Equal up to rounding: blocks group sequences by length, and a GEMM over other rows of a
  // block rounds differently.)
  for (int c = 0; c < 3; ++c) {
    const double a = t[0]["loglik"][c], b = t[1]["loglik"][c];
    EXPECT_NEAR(a, b, 1e-6 * std::fabs(b)) << c;
  }
  EXPECT_EQ(t[2]["id"], "7");
  int correct = 0, correct_norm = 0;
  for (const json& task : t) {
    const std::vector<double> ll = task["loglik"];
    const int pred = static_cast<int>(std::max_element(ll.begin(), ll.end()) - ll.begin());
    EXPECT_EQ(task["pred"], pred);
    correct += pred == task["answer"].get<int>();
    correct_norm += task["pred_norm"] == task["answer"];
  }
  EXPECT_DOUBLE_EQ(j["acc"].get<double>(), correct / 3.0);
  EXPECT_DOUBLE_EQ(j["acc_norm"].get<double>(), correct_norm / 3.0);
  // "sacks of grain" (14 characters) against "stars" (5): acc_norm divides by them.
  const std::vector<double> ll = t[0]["loglik"];
  const int norm =
      ll[0] / 15 > ll[1] / 6 ? (ll[0] / 15 > ll[2] / 6 ? 0 : 2) : (ll[1] / 6 > ll[2] / 6 ? 1 : 2);
  EXPECT_EQ(t[0]["pred_norm"], norm);

  // A choice's log-likelihood is the sum over the tokens the whole text adds to the context's,
  // each predicted after the BOS and everything before it.
  const BpeTokenizer& tok = demo_tokenizer();
  const std::vector<int32_t> ctx = tok.encode("Every evening she wrote", false);
  const std::vector<int32_t> whole = tok.encode("Every evening she wrote a song", false);
  eval::ScoredSequence s;
  s.ids.push_back(2);
  s.ids.insert(s.ids.end(), whole.begin(), whole.end());
  s.first_scored = 1 + ctx.size();
  RunConfig c;
  c.model = demo_model_dir().string();
  c.dummy = false;
  c.compute_dtype = "f32";
  c.compute_device = "cpu";
  c.batch_size = 16;
  const ModelSource src = open_model_source(c.model, false, 1);
  generate::BlockEngine engine(c, src);
  const auto scored = eval::score_sequences({s}, c.kv_policy, engine);
  double sum = 0;
  for (double x : scored[0].nll) sum -= x;
  EXPECT_NEAR(t[2]["loglik"][1].get<double>(), sum, 1e-6 * std::fabs(sum));
  EXPECT_EQ(t[2]["tokens"][1], whole.size() - ctx.size());
}

// A task whose choices are one token each is one scored sequence, with the same log-likelihoods
// as a sequence per choice; a question is scored as part of the text before the choices; each
// group's accuracy counts its own tasks.
TEST_F(EvalCommandTest, OneTokenChoicesQuestionsAndGroups) {
  const BpeTokenizer& tok = demo_tokenizer();
  const std::string context = "Every morning she counted the";
  const std::vector<std::string> words = {" house", " value", " company"};
  const std::vector<int32_t> ctx = tok.encode(context, false);
  for (const std::string& w : words) {
    ASSERT_EQ(tok.encode(context + w, false).size(), ctx.size() + 1) << w << " is not one token";
  }
  write_text(
      dir() / "tasks.jsonl",
      R"({"id": "one", "context": "Every morning she counted the", "choices": [" house", " value", " company"], "answer": 0, "group": "g1"})"
      "\n"
      R"({"id": "asked", "context": "Every morning she", "question": " counted the", "choices": [" house", " value", " company"], "answer": 1, "group": "g2"})"
      "\n"
      R"({"id": "multi", "context": "Every evening she wrote", "choices": [" the numbers", " a song"], "answer": 1, "group": "g1"})"
      "\n");
  EvalOptions o = options("tasks.jsonl", "c.json");
  o.context = "prefill";
  ASSERT_EQ(run_eval_choice(o), 0);
  const json j = result("c.json");
  EXPECT_EQ(j["sequences"], 1 + 1 + 2);
  const json& t = j["tasks"];
  // context + question is the text before the choices: the same scores as the plain task.
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(t[1]["loglik"][c].get<double>(), t[0]["loglik"][c].get<double>(),
                1e-6 * std::fabs(t[0]["loglik"][c].get<double>()));
  }
  // Each choice alone, one sequence each, gives its log-likelihood.
  RunConfig c;
  c.model = demo_model_dir().string();
  c.dummy = false;
  c.compute_dtype = "f32";
  c.compute_device = "cpu";
  c.batch_size = 16;
  const ModelSource src = open_model_source(c.model, false, 1);
  generate::BlockEngine engine(c, src);
  for (int w = 0; w < 3; ++w) {
    eval::ScoredSequence s;
    s.ids.push_back(2);
    const std::vector<int32_t> whole = tok.encode(context + words[w], false);
    s.ids.insert(s.ids.end(), whole.begin(), whole.end());
    s.first_scored = 1 + ctx.size();
    const double ll = -eval::score_sequences({s}, c.kv_policy, engine)[0].nll[0];
    EXPECT_NEAR(t[0]["loglik"][w].get<double>(), ll, 1e-6 * std::fabs(ll)) << words[w];
  }
  // Groups: g1 holds tasks one and multi, g2 task asked.
  auto correct = [&](int i) { return t[i]["pred"] == t[i]["answer"] ? 1.0 : 0.0; };
  EXPECT_EQ(j["groups"]["g1"]["n"], 2);
  EXPECT_DOUBLE_EQ(j["groups"]["g1"]["acc"].get<double>(), (correct(0) + correct(2)) / 2);
  EXPECT_DOUBLE_EQ(j["groups"]["g2"]["acc"].get<double>(), correct(1));
  EXPECT_EQ(j["groups"].begin().key(), "g1");  // the order of first appearance

  // A question or group that is not a string is a bad line, reported by name.
  write_text(
      dir() / "bad.jsonl",
      R"({"id": "q", "context": "a", "question": 3, "choices": [" b"], "answer": 0})"
      "\n"
      R"({"id": "ok", "context": "Every evening she wrote", "choices": [" a song"], "answer": 0})"
      "\n");
  EvalOptions bad = options("bad.jsonl", "bad.json");
  ASSERT_EQ(run_eval_choice(bad), 0);
  EXPECT_NE(read_text(dir() / "bad.json.errors.jsonl").find("'question' must be a string"),
            std::string::npos);
}

TEST_F(EvalCommandTest, BadTaskLinesAreReportedAndTheRestScored) {
  write_text(dir() / "tasks.jsonl",
             R"({"id": "ok", "context": "A stone", "choices": [" fell", " sang"], "answer": 0})"
             "\n"
             R"({"id": "x1", "context": "A", "choices": [" b"], "answer": 0, "label": 1})"
             "\n"
             R"({"id": "x2", "context": "A", "choices": [], "answer": 0})"
             "\n"
             R"({"id": "x3", "context": "A", "choices": [" b", ""], "answer": 0})"
             "\n"
             R"({"id": "x4", "context": "A", "choices": [" b"], "answer": 1})"
             "\n"
             R"({"id": "ok", "context": "A", "choices": [" b"], "answer": 0})"
             "\n"
             R"({"id": "x6", "context": 3, "choices": [" b"], "answer": 0})"
             "\n"
             "{not json\n");
  EvalOptions o = options("tasks.jsonl", "c.json");
  ASSERT_EQ(run_eval_choice(o), 0);
  EXPECT_EQ(result("c.json")["n"], 1);
  EXPECT_EQ(result("c.json")["rejected"], 7);
  const std::vector<json> errors = read_jsonl(dir() / "c.json.errors.jsonl");
  ASSERT_EQ(errors.size(), 7u);
  const char* reasons[] = {"unknown field 'label'",
                           "'choices' is empty",
                           "'choices'[1] is empty",
                           "'answer' 1 is not an index",
                           "duplicate id (first seen on line 1)",
                           "'context' must be a string",
                           "invalid JSON"};
  for (size_t i = 0; i < errors.size(); ++i) {
    EXPECT_EQ(errors[i]["line"], i + 2);
    EXPECT_NE(errors[i]["error"].get<std::string>().find(reasons[i]), std::string::npos)
        << errors[i].dump();
  }

  // Nothing valid: exit 2 (InputError), no result.
  write_text(dir() / "bad.jsonl", R"({"id": "x", "context": "A", "choices": []})"
                                  "\n");
  o = options("bad.jsonl", "bad.json");
  EXPECT_THROW(run_eval_choice(o), InputError);
  EXPECT_FALSE(fs::exists(dir() / "bad.json"));
}

TEST(ChoiceTasks, LengthIsInCharacters) {
  EXPECT_EQ(eval::utf8_length(" caf\xC3\xA9"), 5u);
  EXPECT_EQ(eval::utf8_length(""), 0u);
}

}  // namespace
}  // namespace h2oflex::testing

namespace h2oflex::testing {
namespace {

// eval on SmolLM2's GGUF file (its tokenizer from the metadata, its layers computed on their Q4_1
// blocks) scores a text as on the directory converted from it (the blocks unpacked to f32
// safetensors): the same tokens, each token's NLL within f32 summation-order error (the fused
// kernel adds a row's products in another order than the GEMM).
TEST_F(EvalCommandTest, PerplexityOfAGgufFileEqualsItsConvertedDirectory) {
  write_text(dir() / "t.txt",
             "The river ran past the old mill, and the children played by the "
             "water until the sun went down.");
  std::vector<json> results;
  for (const std::string model : {H2OFLEX_SMOLLM2_GGUF, H2OFLEX_SMOLLM2_DIR}) {
    EvalOptions o = options("t.txt", "r.json");
    o.model_dir = model;
    o.overrides = {"compute_dtype=f32"};
    ASSERT_EQ(run_eval_perplexity(o), 0) << model;
    results.push_back(result("r.json"));
  }
  EXPECT_EQ(results[0]["tokens"], results[1]["tokens"]);
  EXPECT_GT(results[0]["tokens"].get<int>(), 15);
  ASSERT_EQ(results[0]["nll"].size(), results[1]["nll"].size());
  for (size_t i = 0; i < results[0]["nll"].size(); ++i) {
    const double a = results[0]["nll"][i].get<double>(), b = results[1]["nll"][i].get<double>();
    EXPECT_NEAR(a, b, 1e-4 * std::max(1.0, std::fabs(b))) << "token " << i;
  }
  EXPECT_NE(results[0]["nll"], results[1]["nll"]) << "the GGUF run must compute on its blocks";
}

}  // namespace
}  // namespace h2oflex::testing
