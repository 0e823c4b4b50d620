// A model directory means its weights: `model: DIR` reads the checkpoint it holds, dummy weights
// only with `dummy: true` written (or for a published name), and a directory without weight
// files and without `dummy: true` is refused naming `dummy` — by run, generate, eval and convert
// alike, and whether the key comes from the file or from --set.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "models/gguf/gguf_file.h"
#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::testing_support::Outcome;
using h2oflex::testing_support::run_h2oflex;

const fs::path kCheckpoint = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-preln";
const fs::path kDemo = fs::path(H2OFLEX_SOURCE_DIR) / "models/demo/opt-demo";

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

class ModelWeights : public h2oflex::testing_support::ScratchDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name) << text;
    return dir() / name;
  }
  // The demo model's config and tokenizer files, without its weights.
  fs::path weightless_dir() {
    const fs::path m = dir() / "weightless";
    fs::create_directories(m);
    for (const auto& e : fs::directory_iterator(kDemo)) {
      if (e.path().extension() != ".safetensors") fs::copy_file(e.path(), m / e.path().filename());
    }
    return m;
  }
  Outcome run_config(const std::string& config, const std::string& extra = "") {
    const fs::path cfg = write("config.yaml", config);
    return run_h2oflex("run " + cfg.string() + " --json " + (dir() / "result.json").string() + " " +
                       extra);
  }
  nlohmann::json result() {
    std::ifstream in(dir() / "result.json");
    return nlohmann::json::parse(in);
  }
  // Exit 2, the message names `dummy` and the directory, and nothing was written.
  static void expect_refused_naming_dummy(const Outcome& o, const fs::path& model,
                                          const fs::path& not_written) {
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_TRUE(contains(o.output, "dummy: true")) << o.output;
    EXPECT_TRUE(contains(o.output, model.string())) << o.output;
    EXPECT_TRUE(contains(o.output, "holds no weights")) << o.output;
    EXPECT_FALSE(fs::exists(not_written)) << not_written << " was written";
  }
};

const std::string kWorkload = "prompt_len: 6\ngen_len: 4\ncompute_dtype: f32\n";

TEST_F(ModelWeights, ADirectoryWithoutDummyRunsOnItsCheckpoint) {
  const Outcome own = run_config("model: " + kCheckpoint.string() + "\n" + kWorkload);
  ASSERT_EQ(own.exit_code, 0) << own.output;
  const nlohmann::json tokens = result()["tokens"];
  // The start-up line names the weights used.
  EXPECT_TRUE(contains(own.output, "weights from " + (kCheckpoint / "model.safetensors").string()))
      << own.output;
  EXPECT_FALSE(contains(own.output, "dummy weights")) << own.output;

  const Outcome explicit_false =
      run_config("model: " + kCheckpoint.string() + "\ndummy: false\n" + kWorkload);
  ASSERT_EQ(explicit_false.exit_code, 0) << explicit_false.output;
  EXPECT_EQ(result()["tokens"], tokens) << "no dummy key must mean dummy: false for a directory";

  const Outcome dummy =
      run_config("model: " + kCheckpoint.string() + "\n" + kWorkload, "--set dummy=true");
  ASSERT_EQ(dummy.exit_code, 0) << dummy.output;
  EXPECT_TRUE(contains(dummy.output, "dummy weights, seed 1")) << dummy.output;
  EXPECT_NE(result()["tokens"], tokens) << "dummy: true must replace the checkpoint's weights";
}

TEST_F(ModelWeights, AWeightlessDirectoryIsRefusedNamingDummy) {
  const fs::path m = weightless_dir();
  expect_refused_naming_dummy(run_config("model: " + m.string() + "\n" + kWorkload), m,
                              dir() / "result.json");
  expect_refused_naming_dummy(run_config("model: " + m.string() + "\ndummy: false\n" + kWorkload),
                              m, dir() / "result.json");
  // Written as --set over a file that does not say.
  expect_refused_naming_dummy(
      run_config("model: " + m.string() + "\n" + kWorkload, "--set dummy=false"), m,
      dir() / "result.json");
}

TEST_F(ModelWeights, AWeightlessDirectoryRunsWithDummyTrue) {
  const fs::path m = weightless_dir();
  const Outcome in_file = run_config("model: " + m.string() + "\ndummy: true\n" + kWorkload);
  ASSERT_EQ(in_file.exit_code, 0) << in_file.output;
  EXPECT_TRUE(contains(in_file.output, "config only, dummy weights, seed 1")) << in_file.output;
  const Outcome by_set = run_config("model: " + m.string() + "\n" + kWorkload, "--set dummy=true");
  ASSERT_EQ(by_set.exit_code, 0) << by_set.output;
  EXPECT_TRUE(contains(by_set.output, "config only, dummy weights, seed 1")) << by_set.output;
}

TEST_F(ModelWeights, APublishedNameNeedsNoDummyKey) {
  const Outcome o = run_config("model: opt-125m\n" + kWorkload);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "opt-125m (dummy weights, seed 1)")) << o.output;
}

TEST_F(ModelWeights, GenerateEvalAndConvertRefuseAWeightlessDirectoryNamingDummy) {
  const fs::path m = weightless_dir();
  const fs::path in = write("in.jsonl", "{\"id\": \"a\", \"prompt\": \"The river\"}\n");
  const fs::path out = dir() / "out.jsonl";
  expect_refused_naming_dummy(run_h2oflex("generate --model " + m.string() + " --input " +
                                          in.string() + " --output " + out.string()),
                              m, out);
  const fs::path text = write("text.txt", "The river runs past the stone and on to the sea.\n");
  const fs::path report = dir() / "eval.json";
  expect_refused_naming_dummy(run_h2oflex("eval perplexity --model " + m.string() + " --text " +
                                          text.string() + " --json " + report.string()),
                              m, report);
  const fs::path to = dir() / "converted";
  const Outcome convert = run_h2oflex("convert --from " + m.string() + " --to " + to.string());
  EXPECT_EQ(convert.exit_code, 2) << convert.output;
  EXPECT_TRUE(contains(convert.output, "holds no weights")) << convert.output;
  EXPECT_FALSE(fs::exists(to / "weights.index.json")) << "a layout was written";

  // generate with --set dummy=true runs the config with dummy weights.
  const Outcome dummy =
      run_h2oflex("generate --model " + m.string() + " --input " + in.string() + " --output " +
                  out.string() + " --set dummy=true --set gen_len=3 --set compute_dtype=f32");
  EXPECT_EQ(dummy.exit_code, 0) << dummy.output;
}

}  // namespace

namespace {

const fs::path kGguf = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/gguf/llama-q4_k-q6_k.gguf";

// `model: FILE.gguf` runs the file's weights (the start-up line names their formats),
// `dummy: true` its shape on random weights, and `convert --from FILE.gguf` writes a model
// directory (offload layout, config.json) that runs to the same tokens.
TEST_F(ModelWeights, AGgufFileRunsItsWeightsAndConvertsToTheSameTokens) {
  const std::string workload = "prompt_len: 6\ngen_len: 4\ncompute_dtype: f32\n";
  const Outcome own = run_config("model: " + kGguf.string() + "\n" + workload);
  ASSERT_EQ(own.exit_code, 0) << own.output;
  EXPECT_TRUE(
      contains(own.output, "GGUF weights Q4_1 x 13, F32 x 5, Q4_K x 1, Q6_K x 1, Q8_0 x 1)"))
      << own.output;
  const nlohmann::json tokens = result()["tokens"];

  const Outcome dummy = run_config("model: " + kGguf.string() + "\ndummy: true\n" + workload);
  ASSERT_EQ(dummy.exit_code, 0) << dummy.output;
  EXPECT_TRUE(contains(dummy.output, "metadata only, dummy weights, seed 1")) << dummy.output;
  EXPECT_NE(result()["tokens"], tokens) << "dummy: true must replace the file's weights";

  const fs::path to = dir() / "converted";
  const Outcome convert =
      run_h2oflex("convert --from " + kGguf.string() + " --to " + to.string() + " --dtype f32");
  ASSERT_EQ(convert.exit_code, 0) << convert.output;
  EXPECT_TRUE(fs::exists(to / "config.json"));
  EXPECT_FALSE(fs::exists(to / "tokenizer.json")) << "the file's metadata has no tokenizer";
  const Outcome layout = run_config("model: " + to.string() + "\n" + workload);
  ASSERT_EQ(layout.exit_code, 0) << layout.output;
  EXPECT_EQ(result()["tokens"], tokens);
}

TEST_F(ModelWeights, AMissingGgufFileIsRefused) {
  const Outcome o = run_config("model: " + (dir() / "absent.gguf").string() + "\n" + kWorkload);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "absent.gguf' names a GGUF file (.gguf) that does not exist"))
      << o.output;
}

}  // namespace

namespace {

// `plan --model FILE.gguf` plans the model the file's metadata describes: SmolLM2's GGUF gets
// the plan of the directory converted from it (tools/fetch_smollm2.sh makes both), except that
// its layers' weights are sized as the file stores them (Q4_1 blocks, weight_format: stored), so
// the host holds less.
TEST_F(ModelWeights, PlanReadsTheModelOfAGgufFile) {
  const std::string args = std::string(" --hardware ") + H2OFLEX_SOURCE_DIR +
                           "/experiments/hardware/local_cpu.yaml --prompt-len 64 --gen-len 8";
  const Outcome gguf = run_h2oflex("plan --model " + std::string(H2OFLEX_SMOLLM2_GGUF) + args);
  ASSERT_EQ(gguf.exit_code, 0) << gguf.output;
  const Outcome dir = run_h2oflex("plan --model " + std::string(H2OFLEX_SMOLLM2_DIR) + args);
  ASSERT_EQ(dir.exit_code, 0) << dir.output;
  EXPECT_TRUE(contains(gguf.output, "model: SmolLM2-135M-Instruct.Q4_1  ")) << gguf.output;
  EXPECT_TRUE(contains(gguf.output, "9 query heads, 3 KV heads x 64 dims")) << gguf.output;
  // Everything between the first line (which names the model) and the search's timing is the
  // same plan.
  const auto plan_of = [](const std::string& out) {
    const size_t first = out.find('\n');
    return out.substr(first, out.find("searched ") - first);
  };
  const auto without_peak = [&](const std::string& out) {
    const std::string p = plan_of(out);
    return p.substr(0, p.find("peak memory:"));
  };
  EXPECT_EQ(without_peak(gguf.output), without_peak(dir.output));
  EXPECT_TRUE(contains(plan_of(gguf.output), "predicted: prefill")) << gguf.output;
  const auto host_gib = [&](const std::string& out) {
    const size_t at = out.find("host ", out.find("peak memory:"));
    return std::stod(out.substr(at + 5));
  };
  EXPECT_LT(host_gib(gguf.output), host_gib(dir.output) - 0.1) << gguf.output << dir.output;
}

}  // namespace

namespace {

// SmolLM2's GGUF with every weight on disk under weight_format: stored (the default): the offload
// layout holds the layers' Q4_1 blocks and the token table's Q8_0 blocks as the file stores
// them, a decode step moves exactly the stored bytes (the file's block bytes for the 210
// matrices and for the tied embedding table, read by the first unit's row lookups and the last
// unit's head), and the tokens are the in-memory run's. `weight_format: plain` moves f32: 6.4 x
// the Q4_1 bytes, and 4 bytes a value for the table.
TEST_F(ModelWeights, AGgufFileOnDiskMovesItsStoredBlocks) {
  const std::string gguf = H2OFLEX_SMOLLM2_GGUF;
  const h2oflex::GgufFile file = h2oflex::GgufFile::open(gguf);
  uint64_t q4_1 = 0, embedding = 0, embedding_f32 = 0, vectors = 0;
  for (const h2oflex::GgufTensorInfo& t : file.tensors()) {
    if (t.format->name == std::string_view("Q4_1")) {
      q4_1 += t.nbytes;
    } else if (t.name == "token_embd.weight") {
      ASSERT_EQ(t.format->name, std::string_view("Q8_0"));
      embedding = t.nbytes;
      embedding_f32 = t.numel() * 4;
    } else {
      vectors += t.numel() * 4;
    }
  }
  const std::string workload =
      "model: " + gguf +
      "\ngen_len: 5\ncompute_dtype: f32\nprompt_ids: [[504, 3575, 282, 4649, 314]]\n";
  const Outcome in_ram = run_config(workload);
  ASSERT_EQ(in_ram.exit_code, 0) << in_ram.output;
  fs::create_directories(dir() / "disk");
  const nlohmann::json tokens = result()["tokens"];

  const std::string on_disk = workload + "hardware:\n  disk_path: " + (dir() / "disk").string() +
                              "\npolicy:\n  weights: {gpu: 0, cpu: 0}\n";
  const auto decode_weight_bytes = [&] {
    uint64_t n = 0;
    const nlohmann::json r = result();
    for (const auto& m : r["bytes_moved"]) {
      if (m["phase"] == "decode" && m["kind"] == "weight") n += m["bytes"].get<uint64_t>();
    }
    return n;
  };
  const Outcome stored = run_config(on_disk);
  ASSERT_EQ(stored.exit_code, 0) << stored.output;
  EXPECT_EQ(result()["tokens"], tokens);
  EXPECT_TRUE(contains(stored.output, "_f32_q4_1")) << "the layout is named after its formats";
  const uint64_t steps = 4;  // gen_len - 1 decode steps
  EXPECT_EQ(decode_weight_bytes(), steps * (q4_1 + 2 * embedding + vectors));
  EXPECT_EQ(result()["model_bytes"].get<double>(), double(q4_1 + embedding + vectors));

  const Outcome plain = run_config(on_disk + "  weight_format: plain\n");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(result()["tokens"], tokens);
  // f32 matrices are 32 x 4 bytes per 20-byte Q4_1 block of 32 values.
  EXPECT_EQ(decode_weight_bytes(), steps * (q4_1 / 20 * 128 + 2 * embedding_f32 + vectors));
}

// weight_format: bf16 stores every matrix in bf16 (the GGUF's blocks unpacked to it) and so the
// run computes in bf16: a decode step with the weights on disk moves 2 bytes per matrix value (the
// layers' Q4_1 blocks hold 32 values in 20 bytes; the tied embedding table is read by the first
// and the last unit) and 4 per vector value. compute_dtype: f32 with it is refused naming both.
TEST_F(ModelWeights, WeightFormatBf16StoresAndMovesHalfPrecision) {
  const std::string gguf = H2OFLEX_SMOLLM2_GGUF;
  const h2oflex::GgufFile file = h2oflex::GgufFile::open(gguf);
  uint64_t q4_1 = 0, embedding_values = 0, vector_values = 0;
  for (const h2oflex::GgufTensorInfo& t : file.tensors()) {
    if (t.format->name == std::string_view("Q4_1")) {
      q4_1 += t.nbytes;
    } else if (t.name == "token_embd.weight") {
      embedding_values = t.numel();
    } else {
      vector_values += t.numel();
    }
  }
  fs::create_directories(dir() / "disk");
  const std::string config = "model: " + gguf +
                             "\ngen_len: 3\nprompt_ids: [[504, 3575, 282]]\nhardware:\n"
                             "  disk_path: " +
                             (dir() / "disk").string() +
                             "\npolicy:\n  weights: {gpu: 0, cpu: 0}\n  weight_format: bf16\n";
  const Outcome bf16 = run_config(config);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  const nlohmann::json r = result();
  EXPECT_EQ(r["compute_dtype"], "bf16");
  uint64_t moved = 0;
  for (const auto& m : r["bytes_moved"]) {
    if (m["phase"] == "decode" && m["kind"] == "weight") moved += m["bytes"].get<uint64_t>();
  }
  const uint64_t steps = 2;
  EXPECT_EQ(moved, steps * (q4_1 / 20 * 32 * 2 + 2 * embedding_values * 2 + vector_values * 4));

  const Outcome contradiction = run_config(config + "compute_dtype: f32\n");
  EXPECT_EQ(contradiction.exit_code, 2) << contradiction.output;
  EXPECT_TRUE(
      contains(contradiction.output, "policy.weight_format: 'bf16' contradicts compute_dtype: f32"))
      << contradiction.output;
}

// weight_format is checked where it is read: unknown names, a K format (which only a GGUF file
// provides) asked for a float checkpoint, and a contradiction with compress_weight.
TEST_F(ModelWeights, WeightFormatErrorsNameTheKey) {
  const std::string base = "model: " + std::string(H2OFLEX_SMOLLM2_DIR) +
                           "\ngen_len: 2\nprompt_len: 4\ncompute_dtype: f32\npolicy:\n";
  const Outcome unknown = run_config(base + "  weight_format: q5_k\n");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_TRUE(contains(
      unknown.output,
      "policy.weight_format: 'q5_k' is not a weight format (stored, plain, f32, f16, bf16, "
      "q4_g64, q8_0, q4_0, q4_1, q4_k, q6_k)"))
      << unknown.output;
  const Outcome k = run_config(base + "  weight_format: q4_k\n");
  EXPECT_EQ(k.exit_code, 2) << k.output;
  EXPECT_TRUE(contains(k.output, "policy.weight_format: q4_k is read from GGUF files only"))
      << k.output;
  const Outcome both = run_config(base + "  weight_format: q8_0\n  compress_weight: true\n");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_TRUE(contains(both.output,
                       "policy.weight_format: 'q8_0' contradicts "
                       "policy.compress_weight: true"))
      << both.output;
}

}  // namespace
