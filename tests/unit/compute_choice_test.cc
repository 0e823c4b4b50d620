#include "runtime/ops/compute_choice.h"

#include <gtest/gtest.h>

#include <chrono>

#include "runtime/core/error.h"
#include "runtime/cpu/cpu_ops.h"

namespace h2oflex::ops {
namespace {

TEST(ComputeDtype, EverySpellingNamesItsType) {
  EXPECT_FALSE(parse_compute_dtype("auto", "k").has_value());
  for (const char* s : {"f32", "fp32", "float32"})
    EXPECT_EQ(parse_compute_dtype(s, "k"), ComputeType::F32);
  for (const char* s : {"f16", "fp16", "float16"})
    EXPECT_EQ(parse_compute_dtype(s, "k"), ComputeType::F16);
  for (const char* s : {"bf16", "bfloat16"})
    EXPECT_EQ(parse_compute_dtype(s, "k"), ComputeType::BF16);
  for (ComputeType ct : {ComputeType::F32, ComputeType::F16, ComputeType::BF16}) {
    EXPECT_EQ(parse_compute_dtype(compute_type_name(ct), "k"), ct);  // names parse back
  }
}

TEST(ComputeDtype, UnknownSpellingNamesTheKeyAndTheChoices) {
  for (const char* bad : {"int8", "F32", "", "i32"}) {
    try {
      parse_compute_dtype(bad, "run.yaml: compute_dtype");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("run.yaml: compute_dtype"), std::string::npos) << msg;
      EXPECT_NE(msg.find("auto, f32, f16 or bf16"), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
    }
  }
}

TEST(ComputeDtype, AutoPicksByItsOwnMeasurements) {
  const auto& rates = measured_cpu_compute_rates();
  ASSERT_GE(rates.size(), 1u);
  EXPECT_EQ(rates.front().type, ComputeType::F32);
  for (const ComputeRate& r : rates) EXPECT_TRUE(cpu::gemm_has_kernel(r.type));
  const auto total = [](const ComputeRate& r) { return r.prefill_s + r.decode_s; };
  for (const ComputeRate& r : rates) EXPECT_GT(total(r), 0);
  const ComputeType chosen = fastest_cpu_compute_type();
  const ComputeRate* pick = nullptr;
  for (const ComputeRate& r : rates) {
    if (r.type == chosen) pick = &r;
  }
  ASSERT_NE(pick, nullptr);
  if (chosen != ComputeType::F32) {  // a 16-bit type only when clearly faster than f32
    EXPECT_LE(total(*pick) * kNarrowMargin, total(rates.front()));
  }
  for (const ComputeRate& r : rates) {  // and nothing that qualifies is faster than the pick
    if (r.type != ComputeType::F32 && total(r) * kNarrowMargin <= total(rates.front())) {
      EXPECT_LE(total(*pick), total(r));
    }
  }
  EXPECT_EQ(fastest_cpu_compute_type(), chosen);  // measured once: the same answer again
}

}  // namespace
}  // namespace h2oflex::ops
