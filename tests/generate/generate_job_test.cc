// The job loop with a fake engine whose output depends only on each prompt: results match an
// independent computation, bad lines land in the errors file, and an interrupted job (crash,
// torn line, signal) resumes to exactly the output of an uninterrupted one.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <stdexcept>

#include "experiments/generate/error_report.h"
#include "experiments/generate/generate_job.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::generate {
namespace {

using nlohmann::json;
using testing::demo_tokenizer;
using testing::fake_generation;
using testing::GenerateScratchTest;
using testing::read_jsonl;
using testing::read_text;
using testing::write_text;

// Which prompts end with EOS in the fake engine: a property of the prompt alone.
int eos_after_for(const std::vector<int32_t>& prompt) {
  return prompt.size() % 3 == 0 ? 2 : -1;
}

std::vector<std::vector<int32_t>> fake_block(const BlockWork& w) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : w.prompts) out.push_back(fake_generation(p, w.gen_len, eos_after_for(p)));
  return out;
}

const char* kWords[] = {"river", "stone", "light", "quiet", "north", "ember", "salt", "glass"};

// n requests with prompts of varied length; every third asks for its own token limit.
std::string make_input(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    json j;
    j["id"] = std::string("r").append(std::to_string(i));
    std::string prompt;
    for (int w = 0; w < 1 + (i * 7) % 13; ++w)
      prompt += std::string(w ? " " : "") + kWords[(i + w) % 8];
    j["prompt"] = prompt;
    if (i % 3 == 0) j["max_new_tokens"] = 3 + i % 5;
    text += j.dump() + "\n";
  }
  return text;
}

class GenerateJobTest : public GenerateScratchTest {
 protected:
  JobSettings settings() const {
    JobSettings s;
    s.input_path = (dir() / "in.jsonl").string();
    s.output_path = (dir() / "out.jsonl").string();
    s.block_size = 4;
    s.defaults.max_new_tokens = 6;
    s.max_positions = 64;
    s.stop_ids = {2};
    return s;
  }
  // id -> whole result line, checking each id appears once.
  std::map<std::string, json> results() const {
    std::map<std::string, json> by_id;
    for (const json& j : read_jsonl(dir() / "out.jsonl")) {
      EXPECT_TRUE(by_id.emplace(j["id"].get<std::string>(), j).second) << "duplicate " << j;
    }
    return by_id;
  }
};

TEST_F(GenerateJobTest, ResultsMatchAnIndependentComputation) {
  const int n = 30;
  write_text(dir() / "in.jsonl", make_input(n));
  const JobSummary s = run_generate_job(settings(), demo_tokenizer(), fake_block);
  EXPECT_EQ(s.requests, n);
  EXPECT_EQ(s.completed, n);
  EXPECT_EQ(s.errors, 0);
  EXPECT_FALSE(s.interrupted);
  EXPECT_FALSE(std::filesystem::exists(dir() / "out.errors.jsonl"));

  const auto by_id = results();
  ASSERT_EQ(by_id.size(), static_cast<size_t>(n));
  int64_t tokens = 0;
  for (const json& req : read_jsonl(dir() / "in.jsonl")) {
    const std::string id = req["id"];
    const json& r = by_id.at(id);
    const auto prompt = demo_tokenizer().encode(req["prompt"].get<std::string>());
    const int limit = req.contains("max_new_tokens") ? req["max_new_tokens"].get<int>() : 6;
    // Oracle: generate exactly `limit` tokens for this prompt alone, cut at EOS.
    std::vector<int32_t> gen = fake_generation(prompt, limit, eos_after_for(prompt));
    const bool eos = !gen.empty() && gen.back() == 2;
    EXPECT_EQ(r["prompt_tokens"], prompt.size()) << id;
    EXPECT_EQ(r["completion_tokens"], gen.size()) << id;
    if (eos) gen.pop_back();
    EXPECT_EQ(r["text"], demo_tokenizer().decode(gen)) << id;
    EXPECT_EQ(r["finish_reason"], eos ? "stop" : "length") << id;
    tokens += r["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(s.completion_tokens, tokens);
}

// A prompt of token ids is read as given: the ids a text prompt encodes to give its result; an id
// beyond the vocabulary is a bad line naming it.
TEST_F(GenerateJobTest, TokenIdPromptsAreReadAsGiven) {
  const std::vector<int32_t> ids = demo_tokenizer().encode("river stone light");
  write_text(dir() / "in.jsonl", json{{"id", "text"}, {"prompt", "river stone light"}}.dump() +
                                     "\n" + json{{"id", "ids"}, {"prompt", ids}}.dump() + "\n" +
                                     json{{"id", "far"}, {"prompt", {5, 1000000}}}.dump() + "\n");
  const JobSummary s = run_generate_job(settings(), demo_tokenizer(), fake_block);
  EXPECT_EQ(s.completed, 2);
  const auto by_id = results();
  EXPECT_EQ(by_id.at("ids")["text"], by_id.at("text")["text"]);
  EXPECT_EQ(by_id.at("ids")["prompt_tokens"], ids.size());
  const std::string errors = read_text(dir() / "out.errors.jsonl");
  EXPECT_NE(errors.find("prompt token 1000000 is beyond the vocabulary"), std::string::npos)
      << errors;
}

TEST_F(GenerateJobTest, BadLinesGoToTheErrorsFile) {
  std::string long_prompt;
  for (int i = 0; i < 80; ++i) long_prompt += " word" + std::to_string(i);
  write_text(dir() / "in.jsonl",
             "{\"id\": \"ok1\", \"prompt\": \"fine\"}\n"
             "{\"id\": \"bad json\", \n"
             "{\"id\": \"long\", \"prompt\": \"" +
                 long_prompt +
                 "\"}\n"
                 "{\"id\": \"ok2\", \"prompt\": \"also fine\", \"stop\": \"x\"}\n"
                 "{\"id\": \"noprompt\"}\n"
                 "{\"id\": \"ok1\", \"prompt\": \"dup\"}\n"
                 "{\"id\": \"big\", \"prompt\": \"short\", \"max_new_tokens\": 62}\n");
  const JobSummary s = run_generate_job(settings(), demo_tokenizer(), fake_block);
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.errors, 5);
  const auto by_id = results();
  EXPECT_EQ(by_id.size(), 2u);
  EXPECT_TRUE(by_id.count("ok1") && by_id.count("ok2"));

  const auto errors = read_jsonl(dir() / "out.errors.jsonl");
  ASSERT_EQ(errors.size(), 5u);
  const std::pair<int, const char*> expected[] = {{2, "invalid JSON"},
                                                  {3, "longer than the model's context of 64"},
                                                  {5, "missing 'prompt'"},
                                                  {6, "duplicate id"},
                                                  {7, "+ max_new_tokens (62) exceeds"}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(errors[i]["line"], expected[i].first) << errors[i];
    EXPECT_NE(errors[i]["error"].get<std::string>().find(expected[i].second), std::string::npos)
        << errors[i];
  }
  EXPECT_EQ(errors[1]["id"], "long");

  // A rerun with the input fixed removes the stale report and finishes the rest.
  write_text(dir() / "in.jsonl",
             "{\"id\": \"ok1\", \"prompt\": \"fine\"}\n{\"id\": \"n\", \"prompt\": \"new\"}\n");
  const JobSummary again = run_generate_job(settings(), demo_tokenizer(), fake_block);
  EXPECT_EQ(again.already_done, 1);
  EXPECT_EQ(again.completed, 1);
  EXPECT_FALSE(std::filesystem::exists(dir() / "out.errors.jsonl"));
}

TEST_F(GenerateJobTest, ResumesAfterACrashAndATornLine) {
  const int n = 37;
  write_text(dir() / "in.jsonl", make_input(n));
  JobSettings reference = settings();
  reference.output_path = (dir() / "reference.jsonl").string();
  run_generate_job(reference, demo_tokenizer(), fake_block);
  std::map<std::string, json> expected;
  for (const json& j : read_jsonl(reference.output_path)) expected[j["id"]] = j;

  // A crash during the fourth block, then a torn line as a kill during a write leaves it.
  int calls = 0;
  auto crashing = [&](const BlockWork& w) {
    if (++calls == 4) throw std::runtime_error("simulated crash");
    return fake_block(w);
  };
  EXPECT_THROW(run_generate_job(settings(), demo_tokenizer(), crashing), std::runtime_error);
  EXPECT_EQ(read_jsonl(dir() / "out.jsonl").size(), 12u);
  const std::string torn = R"({"id":"r5","text":"half a li)";
  {
    std::ofstream out(dir() / "out.jsonl", std::ios::app | std::ios::binary);
    out << torn;
  }

  std::vector<size_t> block_sizes;
  auto counting = [&](const BlockWork& w) {
    block_sizes.push_back(w.prompts.size());
    return fake_block(w);
  };
  const JobSummary s = run_generate_job(settings(), demo_tokenizer(), counting);
  EXPECT_EQ(s.truncated_bytes, static_cast<int64_t>(torn.size()));
  EXPECT_EQ(s.already_done, 12);
  EXPECT_EQ(s.completed, n - 12);
  EXPECT_EQ(block_sizes.size(), 7u);  // ceil(37 / 4) = 10 blocks, 3 done before the crash
  EXPECT_EQ(results(), expected);
}

TEST_F(GenerateJobTest, PartlyWrittenBlockRerunsWholeAndWritesOnlyTheRest) {
  write_text(dir() / "in.jsonl", make_input(8));
  JobSettings reference = settings();
  reference.output_path = (dir() / "reference.jsonl").string();
  run_generate_job(reference, demo_tokenizer(), fake_block);
  const std::string ref_text = read_text(reference.output_path);
  // Keep the first block and two lines of the second, as a kill between two writes leaves it.
  size_t cut = 0;
  for (int lines = 0; lines < 6; ++lines) cut = ref_text.find('\n', cut) + 1;
  write_text(dir() / "out.jsonl", ref_text.substr(0, cut));

  std::vector<size_t> block_sizes;
  auto counting = [&](const BlockWork& w) {
    block_sizes.push_back(w.prompts.size());
    return fake_block(w);
  };
  const JobSummary s = run_generate_job(settings(), demo_tokenizer(), counting);
  EXPECT_EQ(block_sizes, std::vector<size_t>{4});  // the same block of four, not two prompts
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(read_text(dir() / "out.jsonl"), ref_text);
}

TEST_F(GenerateJobTest, StopRequestFinishesTheBlockInFlight) {
  write_text(dir() / "in.jsonl", make_input(20));
  int blocks = 0;
  JobSettings s = settings();
  s.stop_requested = [&] { return blocks >= 2; };  // "signal" arrives during the second block
  auto counting = [&](const BlockWork& w) {
    ++blocks;
    return fake_block(w);
  };
  const JobSummary first = run_generate_job(s, demo_tokenizer(), counting);
  EXPECT_TRUE(first.interrupted);
  EXPECT_EQ(first.completed, 8);
  EXPECT_EQ(read_jsonl(dir() / "out.jsonl").size(), 8u);
  const JobSummary second = run_generate_job(settings(), demo_tokenizer(), fake_block);
  EXPECT_FALSE(second.interrupted);
  EXPECT_EQ(second.already_done, 8);
  EXPECT_EQ(second.completed, 12);
  EXPECT_EQ(results().size(), 20u);
}

TEST_F(GenerateJobTest, ResultLinesCarryThePromptsDroppedBytes) {
  // A vocabulary without some byte tokens (SmolLM2's kind): the prompts' bytes it cannot spell
  // are dropped as Hugging Face drops them, and each result line says how many. The counts are
  // the fixture's, from HF's tokens.
  const std::filesystem::path fixture =
      std::filesystem::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/tokenizer-smollm2";
  const BpeTokenizer tok = load_tokenizer(fixture);
  std::ifstream records(fixture / "expected.jsonl");
  std::map<std::string, size_t> dropped;  // id -> HF's count
  std::string input, line;
  while (std::getline(records, line) && dropped.size() < 12) {
    const json rec = json::parse(line);
    if (rec["kind"] != "encode" || rec["text"].get<std::string>().size() > 100) continue;
    if (rec.contains("dropped_bytes") == (dropped.size() % 2 == 0)) continue;  // alternate
    const std::string id = "r" + std::to_string(dropped.size());
    dropped[id] = rec.value("dropped_bytes", size_t{0});
    input += json{{"id", id}, {"prompt", rec["text"]}}.dump() + "\n";
  }
  write_text(dir() / "in.jsonl", input);
  JobSettings s = settings();
  s.max_positions = 256;
  run_generate_job(s, tok, fake_block);
  const auto by_id = results();
  ASSERT_EQ(by_id.size(), dropped.size());
  size_t with_field = 0;
  for (const auto& [id, count] : dropped) {
    const json& r = by_id.at(id);
    EXPECT_EQ(r.value("prompt_dropped_bytes", size_t{0}), count) << r;
    EXPECT_EQ(r.contains("prompt_dropped_bytes"), count > 0) << r;  // only when not zero
    with_field += r.contains("prompt_dropped_bytes");
  }
  EXPECT_EQ(with_field, dropped.size() / 2);
}

TEST_F(GenerateJobTest, RequestsGetStableDistinctSamplingKeys) {
  EXPECT_EQ(request_sampling_key("a"), request_sampling_key("a"));
  EXPECT_NE(request_sampling_key("a"), request_sampling_key("b"));
  EXPECT_NE(request_sampling_key("ab"), request_sampling_key("ba"));
}

TEST_F(GenerateJobTest, MissingInputIsAnInputError) {
  EXPECT_THROW(run_generate_job(settings(), demo_tokenizer(), fake_block), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir() / "out.jsonl"));
}

TEST(ErrorReportPath, SitsBesideTheOutput) {
  EXPECT_EQ(errors_path_for("a/out.jsonl"), "a/out.errors.jsonl");
  EXPECT_EQ(errors_path_for("out.txt"), "out.txt.errors.jsonl");
}

}  // namespace
}  // namespace h2oflex::generate
