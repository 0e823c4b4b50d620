// The llama.cpp peer (tools/peer_llama_cpp.py): its llama-batched-bench command for a row's shapes
// and the parse of the table it prints (a real run's output, tests/fixtures/llama_cpp), and the
// skipped row, with the reason, when llama.cpp cannot be built. No build happens here: a fake
// llama-batched-bench prints the fixture, and the failing build is a bad source tarball.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "experiments/suite/experiment_suite.h"
#include "experiments/suite/peer_run.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

const std::string kSource = H2OFLEX_SOURCE_DIR;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("h2oflex_llama_cpp_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "model.gguf") << "GGUF";  // the peer checks that the file exists
  }
  ~TempDir() { fs::remove_all(dir); }
};

// A fake llama-batched-bench: writes its arguments to args.json and prints `fixture`.
fs::path write_fake_bench(const TempDir& d, const std::string& fixture) {
  const fs::path bench = d.dir / "llama-batched-bench";
  std::ofstream(bench) << "#!/usr/bin/env python3\nimport json, sys\n"
                       << "json.dump(sys.argv[1:], open(" << (d.dir / "args.json") << ", 'w'))\n"
                       << "sys.stdout.write(open(" << fs::path(fixture) << ").read())\n";
  fs::permissions(bench, fs::perms::owner_all);
  return bench;
}

// A suite of one llama.cpp peer row on `shape` ("batch_size: 4, prompt_len: 128, gen_len: 8")
// with the peer's `args`.
SuiteRow peer_row(const TempDir& d, const std::string& shape, const std::string& args) {
  std::ofstream(d.dir / "s.yaml") << "suite: s\nrows:\n  - label: llama.cpp\n"
                                  << "    peer: {script: " << kSource
                                  << "/tools/peer_llama_cpp.py, args: {" << args << "}}\n"
                                  << "    config: {model: " << (d.dir / "model.gguf").string()
                                  << ", " << shape << "}\n";
  setenv("H2OFLEX_PEER_PYTHON", "python3", 1);
  return load_suite((d.dir / "s.yaml").string()).rows.at(0);
}

const std::string kFixture = kSource + "/tests/fixtures/llama_cpp/batched_bench_smollm2.txt";

TEST(LlamaCppPeer, RunsTheRowsShapesAndReadsTheTableInH2oflexsDefinitions) {
  TempDir d;
  const fs::path bench = write_fake_bench(d, kFixture);
  const SuiteRow row = peer_row(d, "batch_size: 4, prompt_len: 128, gen_len: 8",
                                "bench: " + bench.string() + ", threads: 2, repack: 'off'");
  const MeasuredRow m = run_peer(row);
  ASSERT_TRUE(m.skip_reason.empty()) << m.skip_reason;
  // The command: one shape, gen_len - 1 decode steps (the prefill gives the first token), a
  // context that holds all of it (each sequence's 135 tokens rounded up to 256), 2 threads for
  // both phases, no repacking.
  nlohmann::json args;
  std::ifstream(d.dir / "args.json") >> args;
  const std::vector<std::string> expected{"-m",         (d.dir / "model.gguf").string(),
                                          "-c",         "1024",
                                          "-npp",       "128",
                                          "-ntg",       "7",
                                          "-npl",       "4",
                                          "-t",         "2",
                                          "-tb",        "2",
                                          "--no-repack"};
  EXPECT_EQ(args.get<std::vector<std::string>>(), expected);
  // llama.cpp's own figures for PP 128, TG 7, B 4 (the fixture's row): S_PP and S_TG are
  // h2oflex's prefill (4 x 128 / s) and decode (4 x 7 / s) throughputs; total is 4 x 8 over the
  // two phases' time.
  const double s_pp = 50.91, s_tg = 6.99;
  EXPECT_DOUBLE_EQ(m.prefill_tok_s, s_pp);
  EXPECT_DOUBLE_EQ(m.decode_tok_s, s_tg);
  EXPECT_NEAR(m.total_tok_s, 4.0 * 8 / (4.0 * 128 / s_pp + 4.0 * 7 / s_tg), 1e-9);
  EXPECT_EQ(m.details["peer"], "llama.cpp");
  EXPECT_EQ(m.details["table_row"]["n_kv"], 540);
}

TEST(LlamaCppPeer, AShapeMissingFromTheTableIsASkipWithTheReason) {
  // llama-batched-bench leaves out a shape its context cannot hold, without an error.
  TempDir d;
  const fs::path bench = write_fake_bench(d, kFixture);
  const SuiteRow row =
      peer_row(d, "batch_size: 2, prompt_len: 128, gen_len: 8", "bench: " + bench.string());
  const MeasuredRow m = run_peer(row);
  EXPECT_NE(m.skip_reason.find("no row PP 128 TG 7 B 2"), std::string::npos) << m.skip_reason;
}

TEST(LlamaCppPeer, ABuildThatFailsSkipsTheRowWithTheReasonAndIsNotRetried) {
  TempDir d;
  std::ofstream(d.dir / "bogus.tar.gz") << "not a tarball";
  const SuiteRow row = peer_row(d, "batch_size: 1, prompt_len: 16, gen_len: 2",
                                "build-dir: " + (d.dir / "build").string() +
                                    ", source: " + (d.dir / "bogus.tar.gz").string());
  const MeasuredRow first = run_peer(row);
  EXPECT_NE(first.skip_reason.find("peer failed"), std::string::npos) << first.skip_reason;
  EXPECT_NE(first.skip_reason.find("llama.cpp could not be built: cannot unpack"),
            std::string::npos)
      << first.skip_reason;
  EXPECT_TRUE(fs::exists(d.dir / "build" / "build-failed.txt"));
  const MeasuredRow second = run_peer(row);
  EXPECT_NE(second.skip_reason.find("not retried: an earlier llama.cpp build failed"),
            std::string::npos)
      << second.skip_reason;
}

}  // namespace
}  // namespace h2oflex
