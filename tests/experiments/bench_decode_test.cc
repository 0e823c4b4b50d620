// `h2oflex bench decode` at a small size: the bytes a step reads (against OPT-125m's parameter
// count and the cache geometry, computed here from the model's published shape), the step
// count, and the ratios against the measured memory rate; bad options name the option.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "experiments/bench/bench_gemm.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

BenchComputeOptions small_decode(const std::string& json) {
  BenchComputeOptions o;
  o.what = "decode";
  o.model = "opt-125m";
  o.batch = 2;
  o.prompt_len = 8;
  o.gen_len = 4;
  o.repeats = 1;
  o.compute_dtype = "f32";
  o.json_out = json;
  o.memory_rate_bytes = 4ull << 20;
  return o;
}

TEST(BenchDecode, ReportsTheBytesAStepReadsAndItsRatioToTheMemoryRate) {
  const fs::path json =
      fs::temp_directory_path() / ("h2oflex_bench_decode_" + std::to_string(::getpid()) + ".json");
  testing::internal::CaptureStdout();
  ASSERT_EQ(run_bench_compute(small_decode(json.string())), 0);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("3 steps"), std::string::npos) << printed;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(json));
  fs::remove(json);

  // OPT-125m has 125,239,296 parameters (tied LM head): f32 weights are 4 bytes each.
  EXPECT_DOUBLE_EQ(j["weight_bytes"].get<double>(), 125239296.0 * 4);
  // K and V of 12 layers x 2 sequences x 12 heads x 64 f32 values, over 8, 9, 10 filled rows.
  EXPECT_DOUBLE_EQ(j["kv_bytes_per_step"].get<double>(), 2.0 * 12 * 2 * 12 * 9 * 64 * 4);

  const double lo = j["step_s"]["min"], mid = j["step_s"]["median"], hi = j["step_s"]["max"];
  EXPECT_GT(lo, 0.0);
  EXPECT_LE(lo, mid);
  EXPECT_LE(mid, hi);
  const auto copy = j["copy_bps"].get<std::vector<double>>();
  ASSERT_EQ(copy.size(), 2u);
  const double slower = std::min(copy[0], copy[1]);
  ASSERT_GT(slower, 0.0);
  EXPECT_NEAR(j["step_over_weights_at_copy"].get<double>(),
              mid / (j["weight_bytes"].get<double>() / slower), 1e-9);
  EXPECT_NEAR(
      j["step_over_weights_and_kv_at_copy"].get<double>(),
      mid / ((j["weight_bytes"].get<double>() + j["kv_bytes_per_step"].get<double>()) / slower),
      1e-9);
}

TEST(BenchDecode, RefusesAGenerationWithoutADecodeStep) {
  BenchComputeOptions o = small_decode("");
  o.gen_len = 1;
  try {
    run_bench_compute(o);
    FAIL() << "accepted --gen-len 1";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--gen-len"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
