// Hostile and careless inputs, replayed: each case is one a user tried and the command got wrong
// (accepted an ambiguity, lost a run to one bad line, resumed across changed weights, or spoke of
// an option it does not have). Most go through the built binary as a user would; the parsers'
// cases call the parser directly, which is faster and says the same.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "experiments/common/run_config.h"
#include "experiments/eval/choice_tasks.h"
#include "experiments/eval/quality_suite.h"
#include "experiments/generate/request_line.h"
#include "experiments/suite/experiment_suite.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "runtime/core/error.h"
#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::InputError;
using h2oflex::testing_support::Outcome;

const fs::path kDemo = fs::path(H2OFLEX_SOURCE_DIR) / "models/demo/opt-demo";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class HostileInputs : public h2oflex::testing_support::ScratchDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name, std::ios::binary | std::ios::trunc) << text;
    return dir() / name;
  }

  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  static std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
    std::vector<nlohmann::json> out;
    std::ifstream in(p);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  Outcome run(const std::string& args) { return h2oflex::testing_support::run_h2oflex(args); }

  // Exit 2 with `message` in the output.
  Outcome expect_refused(const std::string& args, const std::string& message) {
    const Outcome o = run(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.output;
    EXPECT_TRUE(contains(o.output, message)) << args << "\nexpected '" << message << "' in:\n"
                                             << o.output;
    return o;
  }

  // `f` throws InputError whose message holds `message`.
  static void expect_input_error(const std::function<void()>& f, const std::string& message) {
    try {
      f();
      ADD_FAILURE() << "accepted; expected an error with '" << message << "'";
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), message)) << "expected '" << message << "' in: " << e.what();
    }
  }

  static std::string generate_args(const fs::path& model, const fs::path& in, const fs::path& out) {
    return "generate --model " + model.string() + " --input " + in.string() + " --output " +
           out.string() + " --set compute_dtype=f32 --set gen_len=2";
  }
};

// --- Defect 6: a job record identifies the model's content -------------------------------------

TEST_F(HostileInputs, GenerateResumeAcrossChangedWeightsIsRefusedNamingModel) {
  const fs::path model = dir() / "model";
  fs::copy(kDemo, model);
  const fs::path in = write("in.jsonl", "{\"id\": \"a\", \"prompt\": \"The river\"}\n");
  const fs::path out = dir() / "out.jsonl";
  Outcome o = run(generate_args(model, in, out));
  ASSERT_EQ(o.exit_code, 0) << o.output;
  ASSERT_EQ(read_jsonl(out).size(), 1u);

  // New weights in place: one byte of the last tensor's data changes, the header does not.
  {
    std::fstream f(model / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-2, std::ios::end);
    const char c = static_cast<char>(f.get() ^ 0x40);
    f.seekp(-2, std::ios::end);
    f.put(c);
  }
  write("in.jsonl",
        "{\"id\": \"a\", \"prompt\": \"The river\"}\n{\"id\": \"b\", \"prompt\": \"A\"}\n");
  o = expect_refused(generate_args(model, in, out), "started with model");
  EXPECT_EQ(read_jsonl(out).size(), 1u) << "results of the new weights were appended";
}

TEST_F(HostileInputs, GenerateResumesWithTheSameWeightsInAMovedDirectory) {
  const fs::path model = dir() / "model";
  fs::copy(kDemo, model);
  const fs::path in = write("in.jsonl", "{\"id\": \"a\", \"prompt\": \"The river\"}\n");
  const fs::path out = dir() / "out.jsonl";
  ASSERT_EQ(run(generate_args(model, in, out)).exit_code, 0);
  fs::rename(model, dir() / "moved");
  write("in.jsonl",
        "{\"id\": \"a\", \"prompt\": \"The river\"}\n{\"id\": \"b\", \"prompt\": \"A\"}\n");
  const Outcome o = run(generate_args(dir() / "moved", in, out));
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(read_jsonl(out).size(), 2u);
}

// --- Defect 7: plan, run --plan-only and policy: auto share one length rule ---------------------

TEST_F(HostileInputs, PlanRefusesAWorkloadLongerThanTheModelsPositions) {
  const std::string hw = (fs::path(H2OFLEX_SOURCE_DIR) / "experiments/hardware/t4.yaml").string();
  const fs::path json = dir() / "plan.json";
  expect_refused("plan --model opt-125m --hardware " + hw +
                     " --prompt-len 2000 --gen-len 100 --json " + json.string(),
                 "--prompt-len (2000) + --gen-len (100) exceeds opt-125m's 2048 positions");
  EXPECT_FALSE(fs::exists(json));
  expect_refused(
      "plan --model opt-125m --hardware " + hw + " --prompt-len 2000 --gen-len 100 --stages 2",
      "exceeds opt-125m's 2048 positions");
  // The same words from run --plan-only (the shared check).
  const fs::path cfg = write("c.yaml",
                             "model: opt-125m\nprompt_len: 2000\ngen_len: 100\ncompute_dtype: f32\n"
                             "policy: {gpu_batch_size: 1, num_gpu_batches: 1}\n");
  expect_refused("run " + cfg.string() + " --plan-only",
                 "prompt_len (2000) + gen_len (100) exceeds opt-125m's 2048 positions");
}

// --- Defect 8: window and stride as the README states ------------------------------------------

TEST_F(HostileInputs, PerplexityWindowAndStrideOutOfRangeAreRefusedNamingTheOption) {
  const fs::path text = write("t.txt", "The river runs to the sea and the sea is never full.\n");
  const fs::path json = dir() / "ppl.json";
  const std::string base = "eval perplexity --model " + kDemo.string() + " --text " +
                           text.string() + " --json " + json.string();
  expect_refused(base + " --window -5 --stride -7", "--window -5 must be at least 1");
  expect_refused(base + " --stride 0", "--stride 0 must be in [1, --window");
  expect_refused(base + " --stride -3", "--stride -3 must be in [1, --window");
  expect_refused(base + " --window 4 --stride 5", "--stride 5 must be in [1, --window 4]");
  expect_refused(base + " --window 0", "--window 0 must be at least 1");
  EXPECT_FALSE(fs::exists(json));
}

TEST_F(HostileInputs, QualitySuiteWindowsAndVariantLabelsAreCheckedWhenRead) {
  write("t.txt", "The river runs to the sea.\n");
  auto suite = [&](const std::string& task, const std::string& variants) {
    return write("q.yaml", "suite: q\nmodel: " + kDemo.string() + "\nbudgets: [0.2]\n" + variants +
                               "tasks:\n  - {name: text, perplexity: t.txt, " + task +
                               "}\npolicies:\n  - {label: full, kv: {policy: full}}\n")
        .string();
  };
  expect_input_error([&] { h2oflex::eval::load_quality_suite(suite("window: -5", "")); },
                     "window -5 must be at least 1");
  expect_input_error([&] { h2oflex::eval::load_quality_suite(suite("window: 8, stride: 0", "")); },
                     "stride 0 must be in [1,");
  expect_input_error(
      [&] {
        h2oflex::eval::load_quality_suite(suite("window: 8",
                                                "variants:\n  - {label: a, config: {}}\n"
                                                "  - {label: a, config: {compute_dtype: f32}}\n"));
      },
      "'a' is already another variant's");
}

// --- Defects 9, 10, 13: eval choice reports bad lines as generate does -------------------------

TEST_F(HostileInputs, ChoiceLinesWithOverflowOrBeyondTheContextAreSkippedNotFatal) {
  std::string long_context;
  for (int i = 0; i < 700; ++i) long_context += "river ";
  const fs::path tasks = write(
      "tasks.jsonl",
      "{\"id\": \"ok\", \"context\": \"The river\", \"choices\": [\" runs\", \" sings\"], "
      "\"answer\": 0}\n"
      "{\"id\": \"huge\", \"context\": \"x\", \"choices\": [\" a\", \" b\"], \"answer\": 1e400}\n"
      "{\"id\": \"long\", \"context\": \"" +
          long_context +
          "\", \"choices\": [\" a\", \" b\"], \"answer\": 0}\n"
          "{\"id\": \"twice\", \"context\": \"x\", \"context\": \"y\", \"choices\": [\" a\"], "
          "\"answer\": 0}\n");
  const fs::path json = dir() / "choice.json";
  const Outcome o = run("eval choice --model " + kDemo.string() + " --tasks " + tasks.string() +
                        " --json " + json.string());
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "skipped 3")) << o.output;
  EXPECT_FALSE(contains(o.output, "gen_len")) << o.output;
  const nlohmann::json result = nlohmann::json::parse(read(json));
  EXPECT_EQ(result["n"], 1);
  EXPECT_EQ(result["rejected"], 3);
  const std::vector<nlohmann::json> errors = read_jsonl(dir() / "choice.json.errors.jsonl");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0]["line"], 2);
  EXPECT_TRUE(contains(errors[0]["error"].get<std::string>(), "number overflow")) << errors[0];
  EXPECT_EQ(errors[1]["line"], 3);
  EXPECT_EQ(errors[1]["id"], "long");
  EXPECT_TRUE(contains(errors[1]["error"].get<std::string>(), "model's context of 512"))
      << errors[1];
  EXPECT_EQ(errors[2]["line"], 4);
  EXPECT_TRUE(contains(errors[2]["error"].get<std::string>(), "'context' appears twice"))
      << errors[2];
  // The terminal names the file and line too.
  EXPECT_TRUE(contains(o.output, tasks.string() + " line 3 (id long)")) << o.output;
}

TEST_F(HostileInputs, ChoiceMessagesNameItsOwnOptionsAndOnlyFilesItWrote) {
  const fs::path tasks = write(
      "tasks.jsonl",
      "{\"id\": \"ok\", \"context\": \"The river\", \"choices\": [\" runs\"], \"answer\": 0}\n");
  // A file beside the tasks that is no report of ours: refused, naming --json, not --output.
  write("tasks.errors.jsonl", "precious\n");
  Outcome o = expect_refused("eval choice --model " + kDemo.string() + " --tasks " + tasks.string(),
                             "--json");
  EXPECT_FALSE(contains(o.output, "--output")) << o.output;
  EXPECT_EQ(read(dir() / "tasks.errors.jsonl"), "precious\n");
  // No task and no bad line: no report is written, so none is mentioned.
  const fs::path empty = write("empty.jsonl", "\n\n");
  o = expect_refused("eval choice --model " + kDemo.string() + " --tasks " + empty.string() +
                         " --json " + (dir() / "e.json").string(),
                     "holds no task");
  EXPECT_FALSE(contains(o.output, "reported in")) << o.output;
  EXPECT_FALSE(fs::exists(dir() / "e.json.errors.jsonl"));
}

TEST_F(HostileInputs, ChoiceTasksWithARepeatedKeyAreLineErrors) {
  const fs::path tasks = write("t.jsonl",
                               "{\"id\": \"a\", \"context\": \"x\", \"choices\": [\" a\"], "
                               "\"answer\": 0, \"answer\": 0}\n");
  const h2oflex::eval::ParsedTasks parsed = h2oflex::eval::read_choice_tasks(tasks.string());
  EXPECT_TRUE(parsed.tasks.empty());
  ASSERT_EQ(parsed.errors.size(), 1u);
  EXPECT_TRUE(contains(parsed.errors[0].reason, "'answer' appears twice"))
      << parsed.errors[0].reason;
}

// --- Defect 12: ambiguities refused -------------------------------------------------------------

TEST_F(HostileInputs, RepeatedSuiteRowLabelsAreRefused) {
  const fs::path suite =
      write("s.yaml",
            "defaults: {predict: false}\n"
            "rows:\n"
            "  - {label: a, config: {model: opt-125m, prompt_len: 8, gen_len: 2}}\n"
            "  - {label: a, config: {model: opt-125m, prompt_len: 16, gen_len: 2}}\n"
            "  - {label: b, versus: a, config: {model: opt-125m, prompt_len: 8, "
            "gen_len: 2}}\n");
  expect_input_error([&] { h2oflex::load_suite(suite.string()); },
                     "label 'a' is already rows[0]'s");
}

TEST_F(HostileInputs, SuiteRowMayTakeItsWholeConfigFromDefaults) {
  const fs::path suite =
      write("s.yaml",
            "defaults: {predict: false, config: {model: opt-125m, prompt_len: 8, gen_len: 2}}\n"
            "rows:\n"
            "  - {label: a}\n"
            "  - {label: b, config: {prompt_len: 16}}\n");
  const h2oflex::Suite s = h2oflex::load_suite(suite.string());
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].model, "opt-125m");
  EXPECT_EQ(s.rows[0].prompt_len, 8);
  EXPECT_EQ(s.rows[1].prompt_len, 16);
}

TEST_F(HostileInputs, VariantsNeedDistinctNonEmptyNames) {
  const std::string base = "model: opt-125m\nprompt_len: 4\ngen_len: 2\nvariants:\n";
  const fs::path missing = write("m.yaml", base + "  - {set: {seed: 2}}\n  - {name: b}\n");
  expect_input_error([&] { h2oflex::load_run_config_variants(missing.string(), {}); },
                     "variants[0].name is missing");
  const fs::path empty = write("e.yaml", base + "  - {name: '', set: {seed: 2}}\n");
  expect_input_error([&] { h2oflex::load_run_config_variants(empty.string(), {}); },
                     "variants[0].name is empty");
  const fs::path twice = write("t.yaml", base + "  - {name: x}\n  - {name: x, set: {seed: 2}}\n");
  expect_input_error([&] { h2oflex::load_run_config_variants(twice.string(), {}); },
                     "variants[1].name 'x' is already another variant's");
}

TEST_F(HostileInputs, RequestLinesWithARepeatedKeyOrAnUnhonouredFieldAreLineErrors) {
  using h2oflex::generate::parse_request_line;
  auto reason = [](const std::string& line) {
    const auto parsed = parse_request_line(line, 1);
    return parsed.error ? parsed.error->reason : std::string("accepted");
  };
  EXPECT_TRUE(
      contains(reason(R"({"id": "a", "prompt": "x", "prompt": "y"})"), "'prompt' appears twice"));
  EXPECT_TRUE(contains(reason(R"({"custom_id": "a", "body": {"prompt": "x", "max_tokens": 2,)"
                              R"( "max_tokens": 9}})"),
                       "'max_tokens' appears twice"));
  for (const char* field : {"echo", "logprobs", "best_of", "suffix", "frequency_penalty", "user"}) {
    const std::string line =
        std::string(R"({"custom_id": "a", "body": {"prompt": "x", ")") + field + R"(": 1}})";
    EXPECT_TRUE(contains(reason(line), std::string("field 'body.") + field + "' is not supported"))
        << field << ": " << reason(line);
  }
  EXPECT_TRUE(contains(reason(R"({"id": "a", "prompt": "x", "echo": true})"),
                       "field 'echo' is not supported"));
  // top_p that rounds to 0 in the sampler: said so, not "outside (0, 1]".
  EXPECT_TRUE(contains(reason(R"({"id": "a", "prompt": "x", "top_p": 1e-300})"),
                       "below the smallest top_p"));
}

TEST_F(HostileInputs, GenerateSetOfAKeyItIgnoresIsRefused) {
  const fs::path in = write("in.jsonl", "{\"id\": \"a\", \"prompt\": \"x\"}\n");
  for (const std::string set : {"prompt_len=5", "projected_steps=3", "name=x"}) {
    expect_refused("generate --model " + kDemo.string() + " --input " + in.string() + " --output " +
                       (dir() / "out.jsonl").string() + " --set " + set,
                   "--set " + set + ": generate does not use");
  }
  expect_refused("eval perplexity --model " + kDemo.string() + " --text " + in.string() +
                     " --set temperature=0.5",
                 "--set temperature=0.5: eval perplexity does not use");
  EXPECT_FALSE(fs::exists(dir() / "out.jsonl"));
}

TEST_F(HostileInputs, BatchSeedGivesTheSameSampleWhateverTheId) {
  const std::string body = R"("body": {"prompt": "The river", "max_tokens": 8, "temperature": 1.5,)"
                           R"( "seed": 7}})";
  const fs::path in = write("in.jsonl", "{\"custom_id\": \"first\", " + body + "\n" +
                                            "{\"custom_id\": \"second\", " + body + "\n");
  const fs::path out = dir() / "out.jsonl";
  const Outcome o =
      run("generate --model " + kDemo.string() + " --input " + in.string() + " --output " +
          out.string() + " --set compute_dtype=f32 --set stop_at_eos=false");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::vector<nlohmann::json> results = read_jsonl(out);
  ASSERT_EQ(results.size(), 2u) << o.output;
  EXPECT_EQ(results[0]["text"], results[1]["text"]);
  EXPECT_FALSE(fs::exists(dir() / "out.errors.jsonl")) << read(dir() / "out.errors.jsonl");
}

TEST_F(HostileInputs, LogitBiasForcesOrSparesATokenPerRequest) {
  const h2oflex::BpeTokenizer tokenizer = h2oflex::BpeTokenizer::load(kDemo);
  const std::vector<int32_t> forced = {300, 300, 300};
  const fs::path in =
      write("in.jsonl",
            "{\"id\": \"forced\", \"prompt\": \"The river\", \"logit_bias\": {\"300\": 100}}\n"
            "{\"id\": \"plain\", \"prompt\": \"The river\"}\n"
            "{\"custom_id\": \"batch\", \"body\": {\"prompt\": \"A stone\", \"logit_bias\": "
            "{\"300\": 100}}}\n"
            "{\"id\": \"bad\", \"prompt\": \"x\", \"logit_bias\": {\"99999\": 1}}\n");
  // In RAM, and through the block pipeline (a block of 4 holds 3 requests: one row is padding).
  for (const std::string placement :
       {"", " --set 'policy={gpu_batch_size: 4, num_gpu_batches: 1}'"}) {
    const fs::path out = dir() / "out.jsonl";
    fs::remove(out);
    const Outcome o =
        run("generate --model " + kDemo.string() + " --input " + in.string() + " --output " +
            out.string() + " --set compute_dtype=f32 --set gen_len=3 --set stop_at_eos=false" +
            placement);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    std::map<std::string, std::string> text;
    for (const nlohmann::json& r : read_jsonl(out)) text[r["id"]] = r["text"];
    ASSERT_EQ(text.size(), 3u) << placement << "\n" << o.output;
    EXPECT_EQ(text["forced"], tokenizer.decode(forced)) << placement;
    EXPECT_EQ(text["batch"], tokenizer.decode(forced)) << placement;
    EXPECT_NE(text["plain"], tokenizer.decode(forced)) << placement;
    const std::vector<nlohmann::json> errors = read_jsonl(dir() / "out.errors.jsonl");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_TRUE(contains(errors[0]["error"].get<std::string>(), "logit_bias names token 99999"))
        << errors[0];
  }
}

// The rule itself, on logits whose winner is known: token 2 leads token 1 by 0.5, so a penalty
// of 1 on a row that has generated token 2 hands the choice to token 1, and a bias does too.
TEST_F(HostileInputs, PresencePenaltyAndLogitBiasMoveTheGreedyChoice) {
  h2oflex::Tensor logits = h2oflex::Tensor::empty({2, 4}, h2oflex::DType::F32);
  const float values[] = {0.0f, 1.0f, 1.5f, 0.0f, 0.0f, 1.0f, 1.5f, 0.0f};
  std::copy(std::begin(values), std::end(values), logits.data<float>());
  const std::vector<std::vector<int32_t>> generated = {{2, 2, 3}, {2}};
  h2oflex::GenerationSettings opt;
  std::vector<int32_t> ids;
  h2oflex::choose_tokens(logits, opt, 0, 1, generated, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 2}));
  opt.presence_penalty = {1.0f, 0.0f};  // row 0 only; once per token however often it appeared
  h2oflex::choose_tokens(logits, opt, 0, 1, generated, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2}));
  opt.presence_penalty.clear();
  opt.logit_bias = {{}, {{3, 2.0f}}};
  h2oflex::choose_tokens(logits, opt, 0, 1, generated, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(logits.data<float>()[7], 0.0f) << "the engine's logits were changed";
}

// Through generate: with one seed, a penalized request samples other tokens than an unpenalized
// one, and the same penalized request again samples the same (in RAM and in the pipeline).
TEST_F(HostileInputs, PresencePenaltyReachesTheSampler) {
  const std::string common =
      R"("prompt": "The river", "max_new_tokens": 16, "temperature": 1.0, "seed": 3)";
  const fs::path in =
      write("in.jsonl", "{\"id\": \"a\", " + common + ", \"presence_penalty\": 2}\n" +
                            "{\"id\": \"b\", " + common + ", \"presence_penalty\": 2}\n" +
                            "{\"id\": \"plain\", " + common + "}\n");
  for (const std::string placement :
       {"", " --set 'policy={gpu_batch_size: 4, num_gpu_batches: 1}'"}) {
    const fs::path out = dir() / "out.jsonl";
    fs::remove(out);
    const Outcome o =
        run("generate --model " + kDemo.string() + " --input " + in.string() + " --output " +
            out.string() + " --set compute_dtype=f32 --set stop_at_eos=false" + placement);
    ASSERT_EQ(o.exit_code, 0) << o.output;
    std::map<std::string, std::string> text;
    for (const nlohmann::json& r : read_jsonl(out)) text[r["id"]] = r["text"];
    ASSERT_EQ(text.size(), 3u) << placement << "\n" << o.output;
    EXPECT_EQ(text["a"], text["b"]) << placement;
    EXPECT_NE(text["a"], text["plain"]) << placement;
  }
}

// --- Defect 13: messages ------------------------------------------------------------------------

TEST_F(HostileInputs, SamplingValuesGetMessagesThatFitThem) {
  auto parse = [](const std::string& yaml) {
    h2oflex::parse_run_config(YAML::Load(yaml), "c.yaml");
  };
  expect_input_error([&] { parse("model: opt-125m\ntop_p: 1e-300\n"); },
                     "top_p is 1e-300, below the smallest top_p");
  expect_input_error([&] { parse("model: opt-125m\ntop_p: 0\n"); }, "top_p must be in (0, 1]");
  expect_input_error([&] { parse("model: opt-125m\nseed: -1\n"); },
                     "key 'seed': expected an integer >= 0");
}

TEST_F(HostileInputs, ProfileDecodeBatchesZeroSaysWhatIsWrong) {
  const fs::path out = dir() / "hw.yaml";
  const Outcome o = expect_refused("profile --out " + out.string() + " --decode-batches 4,0",
                                   "--decode-batches 0: each batch size must be an integer >= 1");
  EXPECT_FALSE(contains(o.output, "1797693")) << o.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(HostileInputs, ErrorsCausedByASetNameTheSet) {
  const fs::path cfg =
      write("c.yaml", "model: opt-125m\nprompt_len: 4\ngen_len: 2\ncompute_dtype: f32\n");
  expect_refused("run " + cfg.string() + " --set 'prompt_ids=[[5, 999999]]'",
                 "--set prompt_ids=[[5, 999999]] (over " + cfg.string() + "): prompt token id");
  expect_refused(
      "run " + cfg.string() + " --set hardware.disk_path=" + (dir() / "nope").string(),
      "--set hardware.disk_path=" + (dir() / "nope").string() + " (over " + cfg.string() + ")");
}

TEST_F(HostileInputs, ConvertToAFileIsBadInput) {
  const fs::path file = write("afile", "keep me");
  expect_refused("convert --from " + kDemo.string() + " --to " + file.string(),
                 "exists and is not a directory");
  expect_refused("convert --from " + kDemo.string() + " --to " + (file / "sub").string(),
                 "exists and is not a directory");
  EXPECT_EQ(read(file), "keep me");
}

}  // namespace
