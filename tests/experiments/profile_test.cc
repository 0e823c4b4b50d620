// `h2oflex profile` at small sizes: the written file loads as a hardware profile with positive
// rates, matching what was measured; bad options name the option.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "experiments/profile/profile_command.h"
#include "policy/hardware.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

ProfileOptions small_options(const fs::path& dir) {
  ProfileOptions o;
  o.out_path = (dir / "hw.yaml").string();
  o.disk_path = dir.string();
  o.disk_bytes = 4ull << 20;
  o.name = "test_cpu";
  o.memcpy_bytes = 1ull << 20;
  o.model = "opt-125m";
  o.prefill_batch = 2;
  o.prefill_len = 8;
  o.decode_rows = {1, 2};
  o.decode_steps = 2;
  o.attn_batch = 2;
  o.attn_prefill_len = 16;
  o.attn_decode_ctx = 32;
  o.repeats = 1;
  return o;
}

TEST(Profile, WritesAProfileThatLoadsWithPositiveRates) {
  const fs::path dir =
      fs::temp_directory_path() / ("h2oflex_profile_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const ProfileOptions o = small_options(dir);
  testing::internal::CaptureStdout();
  ASSERT_EQ(run_profile(o), 0);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("compute_device: cpu"), std::string::npos) << printed;

  const policy::HardwareProfile hw = policy::load_hardware_profile(o.out_path);
  EXPECT_EQ(hw.name, "test_cpu");
  EXPECT_EQ(hw.compute_device, policy::ComputeDevice::Cpu);
  EXPECT_GT(hw.device_mem, 0u);
  EXPECT_GT(hw.host_mem, 0u);
  EXPECT_GT(hw.disk_mem, 0u);
  // Both RAM tiers live in the same memory: together they must not claim more than there is.
  const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
  EXPECT_LE(static_cast<double>(hw.device_mem + hw.host_mem), ram);
  for (double v : {hw.ctog_bdw, hw.gtoc_bdw_cache, hw.gtoc_bdw_hidden, hw.dtoc_bdw,
                   hw.ctod_bdw_cache_p, hw.ctod_bdw_hidden_p, hw.ctod_bdw_g, hw.device_mem_bdw,
                   hw.mm_flops_p, hw.mm_flops_g, hw.bmm_flops_p, hw.bmm_flops_g, hw.cpu_flops}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  // The memcpy-backed links are one measurement; the disk's write rate feeds every ctod term.
  EXPECT_EQ(hw.ctog_bdw, hw.gtoc_bdw_cache);
  EXPECT_EQ(hw.ctod_bdw_g, hw.ctod_bdw_cache_p);
  EXPECT_EQ(hw.bmm_flops_g, hw.cpu_flops);
  EXPECT_GT(hw.layer_overhead_s, 0);
  // Nothing left behind but the profile.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "hw.yaml");
  }
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

TEST(Profile, MeasurementsRoundTripThroughTheYaml) {
  const fs::path dir =
      fs::temp_directory_path() / ("h2oflex_profile_rt_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ProfileOptions o = small_options(dir);
  const ProfileMeasurements m = measure_hardware(o);
  const std::string yaml = profile_yaml(m, o);
  std::ofstream(dir / "p.yaml") << yaml;
  const policy::HardwareProfile back = policy::load_hardware_profile((dir / "p.yaml").string());
  // Six significant digits survive the text form.
  EXPECT_NEAR(back.mm_flops_p, m.gemm_prefill_flops, 1e-5 * m.gemm_prefill_flops);
  EXPECT_NEAR(back.mm_flops_g, m.gemm_decode_flops, 1e-5 * m.gemm_decode_flops);
  EXPECT_NEAR(back.device_mem_bdw, m.gemm_stream_bps, 1e-5 * m.gemm_stream_bps);
  EXPECT_NEAR(back.dtoc_bdw, m.disk_read_bps, 1e-5 * m.disk_read_bps);
  EXPECT_NEAR(back.ctod_bdw_g, m.disk_write_bps, 1e-5 * m.disk_write_bps);
  EXPECT_NEAR(back.ctog_bdw, m.memcpy_bps, 1e-5 * m.memcpy_bps);
  EXPECT_NEAR(back.bmm_flops_p, m.attn_prefill_flops, 1e-5 * m.attn_prefill_flops);
  EXPECT_EQ(back.device_mem, m.profile.device_mem);
  // One decode rate per measured batch, the largest also as mm_flops_g.
  ASSERT_EQ(back.mm_flops_g_by_batch.size(), 2u);
  EXPECT_EQ(back.mm_flops_g_by_batch[0].first, 1);
  EXPECT_EQ(back.mm_flops_g_by_batch[1].first, 2);
  EXPECT_NEAR(back.mm_flops_g_by_batch[1].second, back.mm_flops_g, 1e-5 * back.mm_flops_g);
  EXPECT_GE(back.mm_flops_g_by_batch[1].second, back.mm_flops_g_by_batch[0].second);
  EXPECT_NEAR(back.disk_write_op_s, m.disk_write_op_s, 1e-5 * m.disk_write_op_s + 1e-12);
  EXPECT_GE(back.disk_write_op_s, 0);
  fs::remove_all(dir);
}

TEST(Profile, BadOptionsNameTheOption) {
  ProfileOptions o = small_options(fs::temp_directory_path());
  o.disk_path = "/nonexistent/h2oflex";
  try {
    measure_hardware(o);
    FAIL() << "accepted a missing disk path";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--disk-path '/nonexistent/h2oflex'"), std::string::npos)
        << e.what();
  }
  o = small_options(fs::temp_directory_path());
  o.model = "gpt-2";
  EXPECT_THROW(measure_hardware(o), InputError);
  o = small_options(fs::temp_directory_path());
  o.disk_bytes = 1000;
  try {
    measure_hardware(o);
    FAIL() << "accepted a size that is not whole MiB";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
