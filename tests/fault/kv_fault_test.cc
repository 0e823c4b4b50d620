// Faults of a disk-homed KV cache in the middle of decode, through a whole pipeline run: ENOSPC
// while a step's KV is written back, EIO and a short read while it is loaded. Each ends the run
// with an IoError naming the disk tier's file and what went wrong (the CLI's exit 1), leaves no
// file in disk_path, and does not hang (the queues drain before the tiers are torn down).
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>

#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

// Fails every KV read (or write) once armed, after the first `pass` of them; before that, I/O
// passes untouched.
struct ArmedFault : IoFaultHook {
  ArmedFault(bool writes, int result, int pass = 0) : writes(writes), result(result), pass(pass) {}
  int on_complete(const IoRequestInfo& r, int res) override {
    if (!armed.load() || r.is_write != writes || res < 0) return res;
    if (passed.fetch_add(1) < pass) return res;
    hits.fetch_add(1);
    return result;  // a negative errno, or 0: the read found the end of the file
  }
  const bool writes;
  const int result;
  const int pass;
  std::atomic<bool> armed{false};
  std::atomic<int> passed{0}, hits{0};
};

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(testing_support::temp_dir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Weights in host RAM, the whole KV cache on disk, a block of 2 x 2 sequences; the fault is
// armed once decode step `armed_after` is done, so prefill's write-back and those steps succeed.
// compact_every > 0: the log is compacted every that many steps.
void expect_decode_fault(bool writes, int result, const std::string& needle, int armed_after = 1,
                         int compact_every = 0, int pass = 0) {
  const std::string dir = fresh_dir(writes ? "kv-write-fault" : "kv-read-fault");
  auto fault = std::make_shared<ArmedFault>(writes, result, pass);
  PipelineSpec spec;
  spec.model = std::make_shared<const OptModel>(testing_support::tiny_config(true));
  spec.producer = dummy_weight_producer(3);
  spec.weights_key = "tiny:dummy:seed=3";
  spec.policy.gpu_batch_size = 2;
  spec.policy.num_gpu_batches = 2;
  spec.policy.w_gpu = 0, spec.policy.w_cpu = 100;
  spec.policy.cache_gpu = 0, spec.policy.cache_cpu = 0;
  spec.policy.act_gpu = 100, spec.policy.act_cpu = 0;
  spec.limits.disk_path = dir;
  spec.gen.gen_len = 6;
  spec.prompts = testing_support::prompts(4, 5);
  spec.io_fault_hook = fault;
  spec.kv_log_compact_every = compact_every;
  int decode_steps_done = 0;
  spec.on_progress = [&](const PipelineProgress& p) {
    if (!p.prefill && (decode_steps_done = p.done) == armed_after) fault->armed = true;
  };
  try {
    run_pipeline(spec);
    ADD_FAILURE() << "no error for " << needle;
  } catch (const IoError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(dir), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
  EXPECT_EQ(decode_steps_done, armed_after) << "the fault must end the run in the step it hit";
  EXPECT_GT(fault->hits.load(), 0);
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a file was left in " << dir;
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(KvFaults, DiskFullDuringDecodeWriteBack) {
  expect_decode_fault(/*writes=*/true, -ENOSPC, "No space left on device");
}

// Compacted every 2 steps, the third step rewrites every home's base: the disk fills up after
// the first few of those writes, in the middle of the compactions.
TEST(KvFaults, DiskFullInTheMiddleOfACompaction) {
  expect_decode_fault(/*writes=*/true, -ENOSPC, "No space left on device", /*armed_after=*/2,
                      /*compact_every=*/2, /*pass=*/3);
}

TEST(KvFaults, EioWhileLoadingKvDuringDecode) {
  expect_decode_fault(/*writes=*/false, -EIO, "Input/output error");
}

TEST(KvFaults, ShortReadWhileLoadingKvDuringDecode) {
  expect_decode_fault(/*writes=*/false, 0, "unexpected end of file");
}

}  // namespace
}  // namespace h2oflex
