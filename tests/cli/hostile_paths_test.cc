// Hostile and careless paths given to every command (issue 49): an output that is a file the
// command reads (a model directory's config or weights, a suite, a profile, a task text), a
// conversion into another model's directory, a disk test larger than the disk, a test file left
// by a signal, and folder names a shell would read as code. Each case is refused up front with
// exit code 2 and a message naming the culprit, and leaves every input as it was.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::testing_support::Outcome;
using h2oflex::testing_support::run_h2oflex;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every path below `dir` with its contents: what a refused command must leave as it was.
std::map<fs::path, std::string> snapshot(const fs::path& dir) {
  std::map<fs::path, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    files[e.path()] = e.is_regular_file() ? read(e.path()) : std::string("<dir>");
  }
  return files;
}

const fs::path kSource = H2OFLEX_SOURCE_DIR;

class HostilePaths : public h2oflex::testing_support::ScratchDirTest {
 protected:
  fs::path write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // A model directory with its tokenizer (the demo model), copied so a defect would hurt a copy.
  fs::path model_copy(const std::string& name) {
    const fs::path m = dir() / name;
    fs::create_directories(m);
    for (const auto& e : fs::directory_iterator(kSource / "models/demo/opt-demo")) {
      fs::copy_file(e.path(), m / e.path().filename());
    }
    return m;
  }
  // Runs `args`; expects exit 2 with every string of `message` in the output and the scratch
  // directory exactly as it was.
  void expect_refused(const std::vector<std::string>& args,
                      const std::vector<std::string>& message) {
    const auto before = snapshot(dir());
    const Outcome o = run_h2oflex(args);
    EXPECT_EQ(o.exit_code, 2) << o.output;
    for (const std::string& m : message) {
      EXPECT_NE(o.output.find(m), std::string::npos) << "expected '" << m << "' in:\n" << o.output;
    }
    EXPECT_TRUE(snapshot(dir()) == before) << "a file was changed, added or removed";
  }
  // A suite the cost model predicts without running anything.
  fs::path predict_suite(const fs::path& at, const fs::path& profile) {
    return write(at, "suite: s\nrows:\n  - label: a\n    hardware_profile: " + profile.string() +
                         "\n    config: {model: opt-125m, dummy: true, prompt_len: 8, gen_len: 2, "
                         "policy: {gpu_batch_size: 1}}\n");
  }
  fs::path profile_copy(const fs::path& at) {
    fs::create_directories(at.parent_path());
    fs::copy_file(kSource / "experiments/hardware/local_cpu.yaml", at);
    return at;
  }
};

// `--json` naming the GGUF file the model is (run, generate, eval): the file is an input too.
TEST_F(HostilePaths, JsonOntoTheGgufModelFileIsRefused) {
  const fs::path m = dir() / "m.gguf";
  fs::copy_file(kSource / "tests/fixtures/gguf/llama-q4_0-tied.gguf", m);
  const fs::path cfg =
      write(dir() / "c.yaml", "model: " + m.string() + "\nprompt_len: 4\ngen_len: 2\n");
  expect_refused({"run", cfg.string(), "--json", m.string()},
                 {"--json", "the model file", "m.gguf", "are the same file"});
  const fs::path in = write(dir() / "in.jsonl", "{\"prompt\": \"Hello\"}\n");
  expect_refused({"generate", "--model", m.string(), "--input", in.string(), "--output",
                  (dir() / "out.jsonl").string(), "--json", m.string()},
                 {"--json", "the model file", "are the same file"});
  const fs::path text = write(dir() / "t.txt", "The river ran past the old mill.");
  expect_refused(
      {"eval", "perplexity", "--model", m.string(), "--text", text.string(), "--json", m.string()},
      {"--json", "the model file", "are the same file"});
}

// Defect 1: `--json` naming a file of the model directory (run, generate, eval).
TEST_F(HostilePaths, JsonOntoAFileOfTheModelDirectoryIsRefused) {
  const fs::path m = model_copy("M");
  const fs::path cfg = write(
      dir() / "c.yaml", "model: " + m.string() + "\ndummy: false\nprompt_len: 4\ngen_len: 2\n");
  expect_refused(
      {"run", cfg.string(), "--json", (m / "model.safetensors").string()},
      {"--json", "model.safetensors", "a file of the model directory", "are the same file"});
  const fs::path in = write(dir() / "in.jsonl", "{\"prompt\": \"Hello\"}\n");
  expect_refused({"generate", "--model", m.string(), "--input", in.string(), "--output",
                  (dir() / "out.jsonl").string(), "--json", (m / "config.json").string()},
                 {"--json", "config.json", "are the same file"});
  const fs::path text = write(dir() / "t.txt", "The river ran past the old mill.");
  expect_refused({"eval", "perplexity", "--model", m.string(), "--text", text.string(), "--json",
                  (m / "config.json").string()},
                 {"--json", "config.json", "are the same file"});
  const fs::path tasks = write(dir() / "tasks.jsonl",
                               "{\"id\": \"a\", \"context\": \"The\", \"choices\": [\" a\", "
                               "\" b\"], \"answer\": 0}\n");
  expect_refused({"eval", "choice", "--model", m.string(), "--tasks", tasks.string(), "--json",
                  (m / "tokenizer.json").string()},
                 {"--json", "tokenizer.json", "are the same file"});
  expect_refused({"plan", "--model", m.string(), "--hardware",
                  (kSource / "experiments/hardware/local_cpu.yaml").string(), "--prompt-len", "8",
                  "--gen-len", "2", "--json", (m / "merges.txt").string()},
                 {"--json", "merges.txt", "are the same file"});
  // Through a link, and the tokenizer files too.
  fs::create_symlink(m / "vocab.json", dir() / "link.json");
  expect_refused({"eval", "perplexity", "--model", m.string(), "--text", text.string(), "--json",
                  (dir() / "link.json").string()},
                 {"vocab.json", "are the same file"});
}

// Defect 2: what `experiment` writes into --out (table.md, results.json, ...) against the suite
// and the profiles it names.
TEST_F(HostilePaths, ExperimentOutputsOntoItsInputsAreRefused) {
  const fs::path out = dir() / "out";
  const fs::path profile = profile_copy(dir() / "hw.yaml");
  const fs::path suite = predict_suite(out / "table.md", profile);
  expect_refused({"experiment", suite.string(), "--out", out.string(), "--predict"},
                 {"--out file table.md", "the suite", "are the same file"});
  fs::remove(suite);
  const fs::path other = predict_suite(dir() / "s.yaml", out / "results.json");
  fs::create_symlink(profile, out / "results.json");
  expect_refused({"experiment", other.string(), "--out", out.string(), "--predict"},
                 {"--out file results.json", "hardware_profile", "are the same file"});
  // A suite refused while its rows are evaluated leaves no --out directory made for it.
  const fs::path bad =
      write(dir() / "bad.yaml",
            "suite: s\nrows:\n  - label: a\n    hardware_profile: " + profile.string() +
                "\n    config: {model: no-such-model, dummy: true, prompt_len: "
                "8, gen_len: 2, policy: auto}\n");
  expect_refused(
      {"experiment", bad.string(), "--out", (dir() / "new/deeper").string(), "--predict"},
      {"policy: auto needs a model the cost model knows"});
}

// Defect 2: `eval suite` against its task texts.
TEST_F(HostilePaths, EvalSuiteOutputsOntoATaskTextAreRefused) {
  const fs::path out = dir() / "out";
  write(out / "results.json", "The river ran past the old mill, and the miller's daughter.");
  const fs::path suite =
      write(dir() / "q.yaml", "suite: q\nmodel: " + (kSource / "models/demo/opt-demo").string() +
                                  "\nbudgets: [0.5]\ntasks:\n  - {name: text, perplexity: " +
                                  (out / "results.json").string() +
                                  ", window: 8}\npolicies:\n  - {label: full, kv: {policy: "
                                  "full}}\n");
  expect_refused({"eval", "suite", suite.string(), "--out", out.string()},
                 {"--out file results.json", "task text", "are the same file"});
}

// Defect 3: `convert --to` a directory that already holds a model.
TEST_F(HostilePaths, ConvertIntoAnExistingModelDirectoryIsRefused) {
  const fs::path b = model_copy("B");
  const fs::path from = kSource / "tests/fixtures/opt/tiny-postln";
  expect_refused({"convert", "--from", from.string(), "--to", b.string()},
                 {"--to", "already holds 5 entries", "config.json"});
  const fs::path file = write(dir() / "file", "x");
  expect_refused({"convert", "--from", from.string(), "--to", file.string()},
                 {"--to", "is a file"});
  // An empty or absent directory is the place for a conversion.
  const Outcome o = run_h2oflex(
      {"convert", "--from", from.string(), "--to", (dir() / "fresh").string(), "--dtype", "f32"});
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_TRUE(fs::exists(dir() / "fresh/config.json"));
}

// Defect 4: a bench-io test file larger than the free space.
TEST_F(HostilePaths, BenchIoLargerThanTheDiskIsRefusedNamingSizeAndFreeBytes) {
  expect_refused({"bench-io", "--path", dir().string(), "--size", "1024TiB"},
                 {"--size", "needs 1125899906842624 bytes", "bytes (", "are free"});
}

// Defect 4: SIGTERM while bench-io writes its test file removes it.
TEST_F(HostilePaths, BenchIoTestFileIsRemovedOnSigterm) {
  for (const int sig : {SIGTERM}) {  // SIGINT too: tests/unit/temp_file_cleanup_test.cc
    const std::string bin = H2OFLEX_BINARY;
    std::vector<std::string> args{bin,      "bench-io", "--path",  dir().string(),
                                  "--size", "256MiB",   "--chunk", "1MiB"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    // Signalled once the test file exists (registered for cleanup before it is created).
    bool seen = false;
    for (int i = 0; i < 20000 && !seen; ++i) {
      for (const auto& e : fs::directory_iterator(dir())) {
        seen = seen || e.path().filename().string().rfind("h2oflex-bench-io-", 0) == 0;
      }
      if (!seen) std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ASSERT_TRUE(seen) << "bench-io never created its test file";
    ::kill(pid, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    EXPECT_TRUE(fs::is_empty(dir())) << "the test file survived signal " << sig;
  }
}

// Defect 5: the plot step runs python with an argument vector; no shell reads the folder name.
// A stand-in python3 on PATH says matplotlib is there and writes the PNG it is asked for.
TEST_F(HostilePaths, PlotStepRunsNoShell) {
  const fs::path bin = dir() / "bin";
  write(bin / "python3",
        "#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then exit 0; fi\nprintf png > \"$3\"\n");
  fs::permissions(bin / "python3", fs::perms::owner_all);
  const std::string path_before = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + path_before).c_str(), 1);
  const fs::path suite =
      predict_suite(dir() / "s.yaml", kSource / "experiments/hardware/local_cpu.yaml");
  const fs::path injected = dir() / "INJECTED";
  const fs::path hostile = dir() / ("q'; touch " + injected.string() + "; echo '");
  const Outcome a =
      run_h2oflex({"experiment", suite.string(), "--out", hostile.string(), "--predict"});
  const fs::path johns = dir() / "John's runs";
  const Outcome b =
      run_h2oflex({"experiment", suite.string(), "--out", johns.string(), "--predict"});
  ::setenv("PATH", path_before.c_str(), 1);
  EXPECT_EQ(a.exit_code, 0) << a.output;
  EXPECT_FALSE(fs::exists(injected)) << "the folder name ran as a shell command";
  EXPECT_EQ(read(hostile / "throughput.png"), "png") << a.output;
  EXPECT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(read(johns / "throughput.png"), "png") << b.output;
}

}  // namespace
