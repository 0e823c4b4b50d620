#include "experiments/profile/profile_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "experiments/common/bench_timing.h"
#include "experiments/common/memory_rate.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/run_config.h"
#include "experiments/profile/compute_rates.h"
#include "experiments/profile/disk_rates.h"
#include "models/opt/opt_config.h"
#include "models/opt/opt_model.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/core/tensor.h"
#include "runtime/core/timer.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

namespace {

constexpr double kGiB = 1073741824.0;

uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  H2OFLEX_CHECK(pages > 0 && page > 0, "profile: cannot read the memory size");
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

// Rounds down to a multiple of 256 MiB (sizes in the profile read as whole numbers).
uint64_t round_down(uint64_t bytes) {
  constexpr uint64_t kUnit = 256ull << 20;
  return std::max(kUnit, bytes / kUnit * kUnit);
}

void check_options(const ProfileOptions& o) {
  H2OFLEX_INPUT_CHECK(std::filesystem::is_directory(o.disk_path), "profile: --disk-path '",
                      o.disk_path, "' is not a directory");
  check_output_paths({},
                     {{"--out", o.out_path}, {"the disk test file", disk_test_file(o.disk_path)}});
  H2OFLEX_INPUT_CHECK(o.disk_bytes >= (1u << 20) && o.disk_bytes % (1u << 20) == 0,
                      "profile: --size must be a positive multiple of 1 MiB, got ", o.disk_bytes);
  check_free_space(o.disk_path, o.disk_bytes, "profile: the disk test file (--size)",
                   "choose a smaller --size or another --disk-path");
  H2OFLEX_INPUT_CHECK(o.memcpy_bytes >= 4096, "profile: memcpy size must be >= 4096 bytes");
  H2OFLEX_INPUT_CHECK(opt_config_by_name(o.model).has_value(), "profile: --model '", o.model,
                      "' is not an OPT family name");
  H2OFLEX_INPUT_CHECK(
      !o.decode_rows.empty() && std::is_sorted(o.decode_rows.begin(), o.decode_rows.end()) &&
          std::adjacent_find(o.decode_rows.begin(), o.decode_rows.end()) == o.decode_rows.end() &&
          o.decode_rows.front() >= 1,
      "profile: decode batch sizes must be distinct, ascending and >= 1");
  H2OFLEX_INPUT_CHECK(o.prefill_batch >= 1 && o.prefill_len >= 1 && o.decode_steps >= 1 &&
                          o.attn_batch >= 1 && o.attn_prefill_len >= 1 && o.attn_decode_ctx >= 1 &&
                          o.repeats >= 1,
                      "profile: batches, lengths, steps and repeats must be >= 1");
  H2OFLEX_INPUT_CHECK(!o.name.empty(), "profile: --name must not be empty");
}

std::string gbps(double bps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GiB/s", bps / kGiB);
  return buf;
}

std::string gflops(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GFLOP/s", f / 1e9);
  return buf;
}

}  // namespace

ProfileMeasurements measure_hardware(const ProfileOptions& o) {
  check_options(o);
  const Stopwatch total;
  ProfileMeasurements m;
  const ops::ComputeType ct = resolve_compute_type(o.compute_dtype);
  const DType wdt = matrix_dtype_for(ct);
  m.compute_dtype = std::string(dtype_name(wdt));

  std::fprintf(stderr, "profile: memcpy ...\n");
  m.memcpy_bps = measure_memory_rates(o.memcpy_bytes, o.repeats, /*parallel=*/false).copy_bps;
  std::fprintf(stderr, "profile: disk (%s in %s) ...\n", format_bytes(o.disk_bytes).c_str(),
               o.disk_path.c_str());
  const DiskRates disk = measure_disk(o.disk_path, o.disk_bytes, o.repeats);
  m.disk_read_bps = disk.read_bps;
  m.disk_write_bps = disk.write_bps;
  m.disk_write_op_s = disk.write_op_s;
  m.disk_direct = disk.direct;

  const OptConfig ref = *opt_config_by_name(o.model);
  std::fprintf(stderr, "profile: attention (%s) ...\n", m.compute_dtype.c_str());
  m.attn_prefill_flops = measure_attention_prefill(o, ref, ct, o.repeats);
  m.attn_decode_flops = measure_attention_decode(o, ref, wdt, o.repeats);

  std::fprintf(stderr, "profile: %s layers (%s) ...\n", ref.name.c_str(), m.compute_dtype.c_str());
  {
    const LayerGemms g(ref.hidden, ref.ffn, wdt);
    m.linear_prefill_flops = g.flops(o.prefill_batch * o.prefill_len) /
                             g.seconds(o.prefill_batch * o.prefill_len, ct, o.repeats);
    const int rows = o.decode_rows.back();
    m.linear_decode_flops = g.flops(rows) / g.seconds(rows, ct, o.repeats);
  }
  // Effective rates of whole layers: GEMM FLOPs over the layer's time less its attention at the
  // rates just measured (the cost model adds attention separately), in the cost model's counts.
  const double gemm_tok = 2.0 * (4.0 * ref.hidden * ref.hidden + 2.0 * ref.hidden * ref.ffn);
  const double h = static_cast<double>(ref.hidden), s_p = o.prefill_len;
  const double ctx = s_p + (o.decode_steps + 1) / 2.0;  // mean context of the timed steps
  auto layer_bytes = [&](const OptConfig& c) {
    const double hc = static_cast<double>(c.hidden), fc = static_cast<double>(c.ffn);
    return (4.0 * (hc * hc + hc) + 2.0 * hc * fc + fc + 5.0 * hc) * dtype_size(wdt);
  };
  // Fixed cost per layer: one sequence's decode step through a small layer (hidden 256, heads
  // of the reference's size). It takes every parallel path a real layer takes — each op wakes
  // the OpenMP workers, which the binary lets sleep between ops (passive wait) — while its
  // weights (1.6 MB in bf16) stay in the caches, so nothing of its time is weight streaming.
  // A tiny layer (hidden 64), measured before, ran its GEMMs on one thread and so showed only
  // about a third of the cost.
  OptConfig small = ref;
  small.hidden = small.word_embed_dim = 256;
  small.heads = static_cast<int>(256 / ref.head_dim());
  small.ffn = 4 * small.hidden;
  {
    const LayerModels small_models(small, wdt);
    const double step =
        layer_times(small_models, ct, 1, o.prefill_len, o.decode_steps, o.repeats).decode_step;
    const double attn = 4.0 * ctx * small.hidden / m.attn_decode_flops;
    m.layer_overhead_s = std::max(step - attn, 0.5 * step);
  }
  const LayerModels models(ref, wdt);
  {
    // One sequence streams the reference layer's weights once: the rest of its step is that.
    const LayerTimes t = layer_times(models, ct, 1, o.prefill_len, o.decode_steps, o.repeats);
    const double attn = 4.0 * ctx * h / m.attn_decode_flops;
    m.gemm_stream_bps =
        layer_bytes(ref) / std::max(t.decode_step - attn - m.layer_overhead_s, 0.5 * t.decode_step);
  }
  const double overhead = m.layer_overhead_s;
  {
    const LayerTimes t =
        layer_times(models, ct, o.prefill_batch, o.prefill_len, o.decode_steps, o.repeats);
    const double attn = o.prefill_batch * 4.0 * s_p * s_p * h / m.attn_prefill_flops;
    m.gemm_prefill_flops =
        o.prefill_batch * s_p * gemm_tok / std::max(t.prefill - attn - overhead, 0.5 * t.prefill);
  }
  for (int rows : o.decode_rows) {
    const LayerTimes t = layer_times(models, ct, rows, o.prefill_len, o.decode_steps, o.repeats);
    const double attn = rows * 4.0 * ctx * h / m.attn_decode_flops;
    m.gemm_decode_by_rows.emplace_back(
        rows, rows * gemm_tok / std::max(t.decode_step - attn - overhead, 0.5 * t.decode_step));
  }
  // More rows per weight read never make a step slower per row; on a shared machine a
  // measurement that says so was disturbed, so the table keeps the running maximum.
  for (size_t i = 1; i < m.gemm_decode_by_rows.size(); ++i) {
    auto& rate = m.gemm_decode_by_rows[i].second;
    rate = std::max(rate, m.gemm_decode_by_rows[i - 1].second);
  }
  m.gemm_decode_flops = m.gemm_decode_by_rows.back().second;

  policy::HardwareProfile& hw = m.profile;
  hw.name = o.name;
  hw.compute_device = policy::ComputeDevice::Cpu;
  // The arena and host RAM are the same memory: a third and a half of it, leaving the rest to
  // the OS and the process; the planner further keeps to usable_fraction of each.
  const uint64_t ram = mem_total_bytes();
  hw.device_mem = round_down(ram / 3);
  hw.host_mem = round_down(ram / 2);
  hw.disk_mem = round_down(free_bytes_at(o.disk_path));
  hw.usable_fraction = 0.9;
  hw.ctog_bdw = hw.gtoc_bdw_cache = hw.gtoc_bdw_hidden = m.memcpy_bps;
  hw.dtoc_bdw = m.disk_read_bps;
  hw.ctod_bdw_cache_p = hw.ctod_bdw_hidden_p = hw.ctod_bdw_g = m.disk_write_bps;
  hw.device_mem_bdw = m.gemm_stream_bps;
  hw.mm_flops_p = m.gemm_prefill_flops;
  hw.mm_flops_g = m.gemm_decode_flops;
  hw.mm_flops_g_by_batch = m.gemm_decode_by_rows;
  hw.bmm_flops_p = m.attn_prefill_flops;
  hw.bmm_flops_g = hw.cpu_flops = m.attn_decode_flops;
  hw.layer_overhead_s = m.layer_overhead_s;
  hw.disk_write_op_s = m.disk_write_op_s;
  m.seconds = total.elapsed();
  return m;
}

std::string profile_yaml(const ProfileMeasurements& m, const ProfileOptions& o) {
  std::ostringstream os;
  char line[512];
  os << "# Generated by `h2oflex profile` (CPU-only hierarchy: the device is a RAM arena,\n"
     << "# ctog/gtoc are memcpy, dtoc/ctod the disk). Measured, median of " << o.repeats
     << " runs:\n";
  std::snprintf(line, sizeof line, "#  - memcpy %s (%s buffers, one thread);\n",
                gbps(m.memcpy_bps).c_str(), format_bytes(o.memcpy_bytes).c_str());
  os << line;
  std::snprintf(line, sizeof line,
                "#  - disk read %s (median of %d passes), write %s (io engine, %s file%s,\n"
                "#    sequential);\n",
                gbps(m.disk_read_bps).c_str(), o.repeats, gbps(m.disk_write_bps).c_str(),
                format_bytes(o.disk_bytes).c_str(), m.disk_direct ? ", O_DIRECT" : ", buffered");
  os << line;
  std::snprintf(line, sizeof line,
                "#    scattered block writes, 256 per call: %.3g us each beyond their bytes "
                "(disk_write_op_s);\n",
                m.disk_write_op_s * 1e6);
  os << line;
  std::string decode;
  for (const auto& [rows, flops] : m.gemm_decode_by_rows) {
    decode += detail::concat(decode.empty() ? "" : ", ", rows, ": ", gflops(flops));
  }
  std::snprintf(line, sizeof line,
                "#  - %s decoder layers, %s (in-RAM engine, per-layer difference): prefill\n"
                "#    %d x %d tokens %s (mm_flops_p); decode, by sequences per step\n"
                "#    (mm_flops_g_by_batch; mm_flops_g = the largest): %s;\n"
                "#    one sequence streams the weights at %s (device_mem_bdw);\n",
                o.model.c_str(), m.compute_dtype.c_str(), o.prefill_batch, o.prefill_len,
                gflops(m.gemm_prefill_flops).c_str(), decode.c_str(),
                gbps(m.gemm_stream_bps).c_str());
  os << line;
  std::snprintf(
      line, sizeof line,
      "#    less a fixed %.3g ms per layer (layer_overhead_s: one sequence's decode step\n"
      "#    through a hidden-256 layer, whose weights stay in the caches)\n",
      m.layer_overhead_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line,
                "#    (ops::linear alone on the same GEMMs: %s prefill, %s decode of %d);\n",
                gflops(m.linear_prefill_flops).c_str(), gflops(m.linear_decode_flops).c_str(),
                o.decode_rows.back());
  os << line;
  std::snprintf(line, sizeof line,
                "#  - attention: prefill %d x %d tokens %s (bmm_flops_p); decode over %d\n"
                "#    cached %s tokens %s (bmm_flops_g = cpu_flops).\n",
                o.attn_batch, o.attn_prefill_len, gflops(m.attn_prefill_flops).c_str(),
                o.attn_decode_ctx, m.compute_dtype.c_str(), gflops(m.attn_decode_flops).c_str());
  os << line;
  os << policy::hardware_profile_to_yaml(m.profile);
  return os.str();
}

int run_profile(const ProfileOptions& o) {
  const ProfileMeasurements m = measure_hardware(o);
  const std::string yaml = profile_yaml(m, o);
  std::printf("%s", yaml.c_str());
  if (!m.disk_direct) {
    std::fprintf(stderr,
                 "profile: warning: %s refused O_DIRECT; the disk figures include the page "
                 "cache\n",
                 o.disk_path.c_str());
  }
  if (!o.out_path.empty()) {
    write_file_atomically(o.out_path, yaml);
    // What was written must load as a profile.
    policy::load_hardware_profile(o.out_path);
    std::fprintf(stderr, "profile: wrote %s in %.1f s\n", o.out_path.c_str(), m.seconds);
  }
  return 0;
}

}  // namespace h2oflex
