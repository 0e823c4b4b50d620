// The pipeline on the LLaMA and GPT-NeoX families: for random placements (the first with
// weights, KV and activations all on disk) it generates exactly the in-RAM path's tokens and
// keeps exactly its KV sets — per KV head under grouped-query attention, with and without H2O.
#include <gtest/gtest.h>

#include <filesystem>

#include "policy/kv_policy.h"
#include "tests/support/family_models.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

using testing_support::expect_invariant;
using testing_support::llama_gqa_model;
using testing_support::neox_model;
using testing_support::temp_dir;

class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

TEST(FamilyPipeline, GroupedQueryFullCacheRandomPolicies) {
  expect_invariant(llama_gqa_model(), KvRule{}, 6, 8);
}

TEST(FamilyPipeline, GroupedQueryH2ORandomPolicies) {
  expect_invariant(llama_gqa_model(), policy::kv_rule("h2o", 0, 2, 3), 8, 8);
  expect_invariant(llama_gqa_model(), policy::kv_rule("h2o", 0, 3, 2), 6, 4,
                   PipelineDevice::CpuIsolated);
}

TEST(FamilyPipeline, GroupedQueryStreaming) {
  expect_invariant(llama_gqa_model(), policy::kv_rule("streaming", 2, 0, 3), 8, 4);
}

TEST(FamilyPipeline, NeoxPartialRotaryParallelResidual) {
  expect_invariant(neox_model(), KvRule{}, 5, 4);
  expect_invariant(neox_model(), policy::kv_rule("h2o", 0, 2, 3), 6, 4);
}

}  // namespace
}  // namespace h2oflex
