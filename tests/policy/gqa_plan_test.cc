// Grouped-query attention in the cost model and the planner: the same model with 8 instead of 32
// KV heads stores a quarter of the KV per token, and on FlexGen's T4 the planner turns that into a
// larger block at a higher predicted throughput.
#include <gtest/gtest.h>

#include "engine/model_footprint.h"
#include "models/llama/llama_model.h"
#include "policy/search.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

ModelShape llama(int64_t kv_heads) {
  LlamaConfig c = *llama_config_by_name("llama-3-8b");
  c.kv_heads = kv_heads;
  return model_shape_for(LlamaModel(c));
}

TEST(GqaPlan, KvBytesScaleWithKvHeads) {
  const ModelShape gqa = llama(8), mha = llama(32);
  Policy p;
  p.gpu_batch_size = 8;
  p.num_gpu_batches = 4;
  p.w_gpu = 0, p.w_cpu = 100;
  p.cache_gpu = 0, p.cache_cpu = 100;
  p.act_gpu = 100, p.act_cpu = 0;
  const Workload w{512, 32, {}};
  const double host_gqa = estimate_memory(gqa, p, w, true).peak.host;
  const double host_mha = estimate_memory(mha, p, w, true).peak.host;
  // Host holds the weights plus the KV. The KV of 32 sequences x 544 tokens x 32 layers at bf16
  // shrinks by 3/4; so do k_proj and v_proj (4096 x 1024 instead of 4096 x 4096 per layer).
  const double kv_mha = 32.0 * 544 * 32 * 2 * 32 * 128 * 2;
  const double kv_proj_saved = 32.0 * 2 * 4096 * (4096 - 1024) * 2;
  EXPECT_NEAR(host_mha - host_gqa, 0.75 * kv_mha + kv_proj_saved, 0.01 * kv_mha);
}

TEST(GqaPlan, PlannerUsesTheSmallerCacheForALargerBlock) {
  const HardwareProfile hw = testing_support::t4();
  const Workload w{512, 32, {}};
  const SearchResult gqa = search_policy(llama(8), hw, w);
  const SearchResult mha = search_policy(llama(32), hw, w);
  ASSERT_TRUE(gqa.found);
  ASSERT_TRUE(mha.found);
  EXPECT_GT(gqa.policy.block_size(), mha.policy.block_size())
      << gqa.policy.summary() << " vs " << mha.policy.summary();
  EXPECT_GT(gqa.estimate.total_tok_s, mha.estimate.total_tok_s);
}

}  // namespace
}  // namespace h2oflex::policy
