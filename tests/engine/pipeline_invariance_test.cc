// The pipeline must generate exactly what the in-RAM path generates, for every valid policy:
// any placement of weights / KV / activations (disk included), overlap on or off, attention
// delegated or not, and any split of the block into GPU batches.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "runtime/core/quant4.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

using testing_support::expect_invariant;
using testing_support::prompts;
using testing_support::temp_dir;
using testing_support::tiny_config;

// Removes the per-process scratch directory (weight layouts, disk tier files) at exit.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

TEST(PipelineInvariance, FullCacheRandomPolicies) {
  expect_invariant(tiny_config(true), KvRule{}, 6, 20);
}

TEST(PipelineInvariance, PostLayerNormModel) {
  expect_invariant(tiny_config(false), KvRule{}, 5, 6);
}

TEST(PipelineInvariance, H2OEvictionRandomPolicies) {
  const KvRule rule = policy::kv_rule("h2o", 0, 2, 3);
  expect_invariant(tiny_config(true), rule, 8, 8);
}

// Position scores (sinks + recent window) and replaced attention scores take the same path.
TEST(PipelineInvariance, StreamingAndTovaRandomPolicies) {
  expect_invariant(tiny_config(true), policy::kv_rule("streaming", 2, 0, 3), 8, 4);
  expect_invariant(tiny_config(true), policy::kv_rule("tova", 0, 2, 3), 8, 4,
                   PipelineDevice::CpuIsolated);
}

// compress_weight: every placement (the compressed rows on disk, in host memory or in the
// arena, staged or used in place) gives the tokens of the in-RAM path on round-tripped weights.
TEST(PipelineInvariance, CompressedWeightsRandomPolicies) {
  expect_invariant(tiny_config(true), KvRule{}, 6, 8, PipelineDevice::Cpu, {}, true);
  expect_invariant(tiny_config(false), policy::kv_rule("h2o", 0, 2, 3), 8, 6,
                   PipelineDevice::CpuIsolated, {}, true);
}

// compress_cache: K and V rows compressed after projection, H2O's selection, eviction and the
// write-back of changed rows on compressed rows, attention dequantizing where it runs — the
// in-RAM path's tokens and kept sets in every placement (disk homes and logs included), alone
// and with compressed weights.
TEST(PipelineInvariance, CompressedCacheRandomPolicies) {
  const KvRule h2o = policy::kv_rule("h2o", 0, 2, 3);
  expect_invariant(tiny_config(true), KvRule{}, 6, 6, PipelineDevice::Cpu, {}, false, true);
  expect_invariant(tiny_config(true), h2o, 8, 8, PipelineDevice::Cpu, {}, false, true);
  expect_invariant(tiny_config(false), h2o, 8, 6, PipelineDevice::CpuIsolated, {}, true, true);
}

// A block of 2 sequences of the tiny model with dummy weights, everything else as the caller
// sets it.
PipelineSpec tiny_spec(std::shared_ptr<const DecoderModel> model) {
  PipelineSpec spec;
  spec.model = std::move(model);
  spec.producer = dummy_weight_producer(3);
  spec.weights_key = spec.model->name() + ":dummy:seed=3";
  spec.policy.gpu_batch_size = 2;
  spec.limits.disk_path = temp_dir();
  return spec;
}

// Bytes moved of `kind` in `phase` to or from disk (`to_disk`).
uint64_t disk_bytes(const PipelineResult& r, DataKind kind, const std::string& phase,
                    bool to_disk) {
  uint64_t bytes = 0;
  for (const auto& m : r.bytes_moved) {
    const bool disk = to_disk ? m.dst == TierKind::Disk : m.src == TierKind::Disk;
    if (m.kind == kind && disk && m.phase == phase) bytes += m.bytes;
  }
  return bytes;
}

// compress_cache stores rows of quant4::row_bytes(head_dim) bytes: a disk cache's prefill write
// shrinks toward that fraction of the plain one's (writes are whole direct-I/O blocks, so not
// exactly to it).
TEST(PipelineInvariance, CompressedCacheWritesCompressedRows) {
  const auto model = std::make_shared<const OptModel>(tiny_config(true));
  auto prefill_kv_writes = [&](bool compress) {
    PipelineSpec spec = tiny_spec(model);
    spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
    spec.policy.compress_cache = compress;
    spec.gen.gen_len = 2;
    spec.gen.eviction = policy::kv_rule("h2o", 0, 2, 2);  // 4 slots, all filled by the prompt
    spec.prompts = {std::vector<int32_t>(9, 7), std::vector<int32_t>(9, 8)};
    return disk_bytes(run_pipeline(spec), DataKind::Kv, "prefill", true);
  };
  const int64_t d = model->kv_geometry().head_dim;
  const uint64_t plain = prefill_kv_writes(false), compressed = prefill_kv_writes(true);
  ASSERT_GT(plain, 0u);
  EXPECT_GE(compressed * static_cast<uint64_t>(4 * d),
            plain * static_cast<uint64_t>(quant4::row_bytes(d)));
  EXPECT_LT(compressed * 2, plain);
}

// What compress_weight reads from disk per decode step: the layers' matrices as compressed
// rows, everything else as before.
TEST(PipelineInvariance, CompressedWeightsReadTheCompressedBytes) {
  const auto model = std::make_shared<const OptModel>(tiny_config(true));
  auto decode_disk_reads = [&](bool compress) {
    PipelineSpec spec = tiny_spec(model);
    spec.policy.w_gpu = spec.policy.w_cpu = 0;
    spec.policy.compress_weight = compress;
    spec.gen.gen_len = 3;
    spec.prompts = prompts(2, 5);
    return disk_bytes(run_pipeline(spec), DataKind::Weight, "decode", false);
  };
  // The expected bytes, summed here from the tensor shapes and quant4's row size over each
  // unit's tensors (the tied token table is read by the embedding and the head).
  uint64_t plain = 0, compressed = 0;
  for (const auto& unit : model->unit_tensors()) {
    for (size_t i : unit) {
      const WeightSpec& s = model->weight_specs()[i];
      const uint64_t numel = static_cast<uint64_t>(shape_numel(s.shape));
      plain += numel * 4;
      compressed += compressible(s) ? numel / static_cast<uint64_t>(s.shape.back()) *
                                          static_cast<uint64_t>(quant4::row_bytes(s.shape.back()))
                                    : numel * 4;
    }
  }
  const int decode_steps = 2;
  EXPECT_EQ(decode_disk_reads(false), plain * decode_steps);
  EXPECT_EQ(decode_disk_reads(true), compressed * decode_steps);
}

// The GPU data path (device memory that only explicit copies reach) with the CPU computing.
TEST(PipelineInvariance, IsolatedDeviceFullCache) {
  expect_invariant(tiny_config(true), KvRule{}, 6, 10, PipelineDevice::CpuIsolated);
}

TEST(PipelineInvariance, IsolatedDeviceH2O) {
  const KvRule rule = policy::kv_rule("h2o", 0, 2, 3);
  expect_invariant(tiny_config(false), rule, 8, 8, PipelineDevice::CpuIsolated);
}

// A KV cache on disk written back through its log, compacted by the rule and at fixed points,
// and without the log (scattered writes in place): every way gives the in-RAM path's tokens and
// kept sets, whatever else is placed where. 19 decode steps: the rule compacts an H2O cache of
// 5 slots every ~3 steps and the full cache of up to 35 slots every ~7.
TEST(PipelineInvariance, KvOnDiskWithAndWithoutTheLog) {
  for (const int every : {0, 1, 2, 5, -1}) {
    const auto on_disk = [every](PipelineSpec& spec, std::mt19937& rng) {
      spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
      spec.policy.cpu_cache_compute = rng() % 4 != 0;
      spec.kv_log_compact_every = every;
    };
    expect_invariant(tiny_config(true), KvRule{}, 20, 2, PipelineDevice::Cpu, on_disk);
    expect_invariant(tiny_config(true), policy::kv_rule("h2o", 0, 2, 3), 20, 2, PipelineDevice::Cpu,
                     on_disk);
    ASSERT_FALSE(HasFailure()) << "kv_log_compact_every " << every;
  }
  // The rule compacts within 19 steps (here every ~3), and no log means no compaction.
  std::map<int, PipelineResult> by_every;
  for (const int every : {0, -1}) {
    PipelineSpec spec;
    spec.model = std::make_shared<const OptModel>(tiny_config(true));
    spec.producer = dummy_weight_producer(3);
    spec.weights_key = "tiny-preln:dummy:seed=3";
    spec.policy.gpu_batch_size = 4;
    spec.policy.num_gpu_batches = 2;
    spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
    spec.policy.cpu_cache_compute = true;
    spec.limits.disk_path = temp_dir();
    spec.gen.gen_len = 20;
    spec.gen.eviction = policy::kv_rule("h2o", 0, 2, 3);
    spec.prompts = prompts(8, 7);
    spec.kv_log_compact_every = every;
    by_every[every] = run_pipeline(spec);
  }
  EXPECT_GE(by_every[0].kv_log_compactions, 3 * 2 * 4) << "3 layers x 2 batches, >= 4 times";
  EXPECT_EQ(by_every[-1].kv_log_compactions, 0);
  EXPECT_EQ(by_every[0].tokens, by_every[-1].tokens);
  // The data path of a GPU (device memory only copies reach), attention on the host.
  expect_invariant(tiny_config(true), policy::kv_rule("h2o", 0, 2, 3), 20, 2,
                   PipelineDevice::CpuIsolated, [](PipelineSpec& spec, std::mt19937&) {
                     spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
                     spec.policy.cpu_cache_compute = true;
                     spec.kv_log_compact_every = 2;
                   });
}

class CorruptedLayout : public ::testing::TestWithParam<PipelineDevice> {};

TEST_P(CorruptedLayout, IsCaughtOnFirstRead) {
  PipelineSpec spec;
  spec.device = GetParam();
  spec.model = std::make_shared<const OptModel>(tiny_config(true));
  spec.producer = dummy_weight_producer(4);
  spec.weights_key = std::string("tiny:corrupt-test-") + pipeline_device_name(GetParam());
  spec.policy.gpu_batch_size = 2;
  spec.policy.w_gpu = spec.policy.w_cpu = 0;  // every weight read from the layout on disk
  spec.limits.disk_path = temp_dir();
  spec.gen.gen_len = 3;
  spec.prompts = prompts(2, 5);
  const auto first = run_pipeline(spec);  // writes the layout
  const std::string data =
      model_layout_dir(spec.limits.disk_path, spec.weights_key, DType::F32) + "/weights.bin";
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4096 * 3, std::ios::end);  // inside one of the last tensors
    const char bad = 0x55;
    f.write(&bad, 1);
  }
  try {
    run_pipeline(spec);
    FAIL() << "a corrupted weight went unnoticed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_EQ(first.tokens.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Devices, CorruptedLayout,
                         ::testing::Values(PipelineDevice::Cpu, PipelineDevice::CpuIsolated),
                         [](const auto& info) {
                           return std::string(info.param == PipelineDevice::Cpu ? "Cpu"
                                                                                : "CpuIsolated");
                         });

TEST(PipelineInvariance, OverBudgetPolicyIsRefusedWithTheEstimate) {
  PipelineSpec spec;
  spec.model = std::make_shared<const OptModel>(tiny_config(true));
  spec.producer = dummy_weight_producer(3);
  spec.policy.gpu_batch_size = 2;
  spec.limits.device_mem = 4096;
  spec.gen.gen_len = 4;
  spec.prompts = prompts(2, 1);
  try {
    run_pipeline(spec);
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("device needs an estimated"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
