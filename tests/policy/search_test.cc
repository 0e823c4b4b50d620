// The policy search: fits its budgets, beats hand-written and sampled policies, and is fast.
#include <gtest/gtest.h>

#include <random>

#include "policy/search.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

using testing_support::opt;
using testing_support::t4;

// The search's cost is the policies it estimates (8,402 for full, 18,410 for H2O when written):
// bounded here instead of timed, so a slow machine or a sanitizer build cannot fail it, while a
// grid that grows out of hand does. `h2oflex plan` prints the seconds.
TEST(Search, Opt175BSearchIsBoundedAndFits) {
  const HardwareProfile hw = t4();
  for (const char* kv : {"full", "h2o"}) {
    Workload w;
    if (std::string(kv) == "h2o") {
      w.kv.policy = "h2o";
      w.kv.heavy_ratio = w.kv.recent_ratio = 0.1;
    }
    const SearchResult r = search_policy(opt(96, 12288, 96), hw, w);
    ASSERT_TRUE(r.found) << kv;
    EXPECT_GT(r.evaluated, 1000) << kv;
    EXPECT_LT(r.evaluated, 50000) << kv;
    EXPECT_TRUE(memory_violation(r.estimate.peak, r.capacity).empty()) << r.policy.summary();
    EXPECT_NEAR(r.capacity.device, 0.8 * 16 * 1073741824.0, 1);
    EXPECT_GT(r.estimate.total_tok_s, 0);
  }
}

// Every policy a person might write, or a random one, that fits is no faster than the search's.
TEST(Search, AtLeastAsFastAsHandWrittenAndSampledPolicies) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(48, 7168, 56);
  for (double ratio : {0.0, 0.1}) {
    Workload w;
    if (ratio > 0) {
      w.kv.policy = "h2o";
      w.kv.heavy_ratio = w.kv.recent_ratio = ratio;
    }
    const SearchResult r = search_policy(m, hw, w);
    ASSERT_TRUE(r.found);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> pct(0, 10), gbs_pick(0, 7), ngb_pick(1, 40), coin(0, 1);
    const int sizes[] = {1, 2, 4, 8, 16, 32, 48, 64};
    int fitting = 0;
    for (int i = 0; i < 3000 && fitting < 300; ++i) {
      Policy p;
      p.gpu_batch_size = sizes[gbs_pick(rng)];
      p.num_gpu_batches = ngb_pick(rng);
      p.w_gpu = 10 * pct(rng);
      p.w_cpu = std::min(100 - p.w_gpu, 10.0 * pct(rng));
      p.cache_gpu = 10 * pct(rng);
      p.cache_cpu = std::min(100 - p.cache_gpu, 10.0 * pct(rng));
      p.act_gpu = coin(rng) ? 100 : 0;
      p.act_cpu = 100 - p.act_gpu;
      p.cpu_cache_compute = coin(rng);
      if (!memory_violation(estimate_memory(m, p, w, /*separate_device=*/true).peak, r.capacity)
               .empty())
        continue;
      ++fitting;
      EXPECT_LE(estimate_cost(m, hw, p, w).total_tok_s, r.estimate.total_tok_s * 1.0001)
          << p.summary() << " beats " << r.policy.summary();
    }
    EXPECT_GT(fitting, 50);
  }
}

TEST(Search, RespectsTighterLimitsAndExplainsFailure) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(48, 7168, 56);
  Workload w;
  HardwareLimits tight;
  tight.host_mem = 40ull << 30;
  const SearchResult r = search_policy(m, hw, w, tight);
  ASSERT_TRUE(r.found);
  EXPECT_LE(r.estimate.peak.host, 40.0 * 1073741824.0);
  EXPECT_GT(r.policy.w_disk(), 0);  // 56 GB of weights cannot sit in 40 GiB of host + GPU
  HardwareLimits impossible;
  impossible.device_mem = 1 << 20;  // 1 MiB of GPU memory cannot hold a layer's working set
  const SearchResult none = search_policy(m, hw, w, impossible);
  EXPECT_FALSE(none.found);
  EXPECT_NE(none.why_not.find("device: estimated peak"), std::string::npos) << none.why_not;
}

}  // namespace
}  // namespace h2oflex::policy
