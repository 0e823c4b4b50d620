#include "experiments/profile/profile_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "experiments/common/bench_timing.h"
#include "experiments/common/memory_rate.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/run_config.h"
#include "models/opt/opt_config.h"
#include "models/opt/opt_model.h"
#include "offload/io/aligned_buffer.h"
#include "offload/io/disk_file.h"
#include "offload/io/io_engine.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/core/rng.h"
#include "runtime/core/temp_file_cleanup.h"
#include "runtime/core/tensor.h"
#include "runtime/core/timer.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

namespace {

constexpr double kGiB = 1073741824.0;

Tensor random_tensor(Shape shape, DType dtype, uint64_t stream, float stddev) {
  Tensor f = Tensor::empty(shape, DType::F32);
  fill_normal(f.data<float>(), static_cast<uint64_t>(f.numel()), 7, stream, 0, 0.0f, stddev);
  return dtype == DType::F32 ? f : to_dtype(f, dtype);
}

// The file the disk measurement writes and removes in --disk-path.
std::string disk_test_file(const std::string& dir) {
  return detail::concat(dir, "/h2oflex-profile-", ::getpid(), ".bin");
}

struct DiskRates {
  double read_bps = 0, write_bps = 0;
  double write_op_s = 0;  // seconds per small scattered write beyond its bytes
  bool direct = true;
};

// A fresh file written then read sequentially by one io engine with the defaults the transfer
// queues use; calls of up to 64 MiB so the ring drains once per call, as a layer's weights do.
// The read rate is the median of `read_passes` passes over the whole file: a run re-reads its
// weight layout every step, and a shared virtual disk's rate drifts by 2x within a minute, so
// one pass (~1 s) is a snapshot that a suite run minutes later does not see.
DiskRates measure_disk(const std::string& dir, uint64_t size, int read_passes) {
  constexpr uint64_t kCall = 64ull << 20;
  const std::string path = disk_test_file(dir);
  const TempFile cleanup(path);  // also on SIGINT / SIGTERM
  DiskFileOptions fo;
  fo.remove_on_close = true;
  auto file = DiskFile::open(path, FileOpen::CreateTruncate, fo);
  IoEngine io;
  const size_t call = static_cast<size_t>(std::min(kCall, size));
  AlignedBuffer buffer(call);
  std::mt19937_64 rng(1);  // incompressible contents
  auto* words = reinterpret_cast<uint64_t*>(buffer.data());
  for (size_t i = 0; i < call / 8; ++i) words[i] = rng();
  io.register_buffer(buffer.data(), buffer.size());
  // Blocks reserved untimed: a run's disk tier writes into files it has already sized.
  reserve_file_blocks(file->fd(), path, size);
  DiskRates r;
  r.direct = file->is_direct();
  Stopwatch w;
  for (uint64_t done = 0; done < size; done += call) {
    io.write(*file, done, buffer.data(),
             static_cast<size_t>(std::min<uint64_t>(call, size - done)));
  }
  r.write_bps = size / w.elapsed();
  file->sync();
  std::vector<double> passes;
  for (int pass = 0; pass < read_passes; ++pass) {
    w.reset();
    for (uint64_t done = 0; done < size; done += call) {
      io.read(*file, done, buffer.data(),
              static_cast<size_t>(std::min<uint64_t>(call, size - done)));
    }
    passes.push_back(size / w.elapsed());
  }
  std::sort(passes.begin(), passes.end());
  r.read_bps = passes[passes.size() / 2];
  // Scattered block-sized writes, `kBatch` per call, as a decode step writes back the one
  // changed slot record of every (sequence, head) of a disk-resident KV cache: their cost is
  // per request (submission, completion, the device's latency), not per byte.
  constexpr size_t kBatch = 256, kCalls = 32;
  const size_t block = file->block(), stride = 16 << 10;
  const uint64_t span = std::min<uint64_t>(size, 64ull << 20);
  std::vector<IoSegment> segs(kBatch);
  uint64_t at = 0;
  auto fill = [&] {
    for (size_t i = 0; i < kBatch; ++i) {
      segs[i] = {at, reinterpret_cast<char*>(buffer.data()) + (i * block) % call, block};
      at = (at + stride) % (span - block) / block * block;
    }
  };
  fill();
  io.write_scattered(*file, segs);  // warm-up
  w.reset();
  for (size_t c = 0; c < kCalls; ++c) {
    fill();
    io.write_scattered(*file, segs);
  }
  const double ops = static_cast<double>(kBatch * kCalls);
  r.write_op_s = std::max(0.0, w.elapsed() / ops - block / r.write_bps);
  io.unregister_buffer(buffer.data());
  return r;
}

// The six GEMMs of one OPT decoder layer (q, k, v, out: h x h; fc1: h -> 4h; fc2: 4h -> h) on
// `rows` rows through ops::linear, as the engine runs them. Returns the seconds of one layer.
struct LayerGemms {
  Tensor w_hh, w_fc1, w_fc2, b_h, b_f;
  int64_t h, f;
  LayerGemms(int64_t hidden, int64_t ffn, DType wdt)
      : w_hh(random_tensor({hidden, hidden}, wdt, 1, 0.02f)),
        w_fc1(random_tensor({ffn, hidden}, wdt, 2, 0.02f)),
        w_fc2(random_tensor({hidden, ffn}, wdt, 3, 0.02f)),
        b_h(Tensor::zeros({hidden}, DType::F32)),
        b_f(Tensor::zeros({ffn}, DType::F32)),
        h(hidden),
        f(ffn) {}
  double weight_bytes() const {
    return static_cast<double>(w_hh.nbytes()) * 4 + static_cast<double>(w_fc1.nbytes()) +
           static_cast<double>(w_fc2.nbytes());
  }
  double flops(int rows) const { return 2.0 * rows * (4.0 * h * h + 2.0 * h * f); }
  double seconds(int rows, ops::ComputeType ct, int repeats) const {
    Tensor x = random_tensor({rows, h}, DType::F32, 4, 1.0f);
    Tensor mid = Tensor::empty({rows, f}, DType::F32);
    Tensor out = Tensor::empty({rows, h}, DType::F32);
    return median_seconds(repeats, [&] {
      // The four h x h projections use the same matrix: each call streams it again, as four
      // distinct matrices would once the layer's weights exceed the caches.
      for (int i = 0; i < 4; ++i) ops::linear(x, w_hh, &b_h, out, ct);
      ops::linear(x, w_fc1, &b_f, mid, ct, /*relu=*/true);
      ops::linear(mid, w_fc2, &b_h, out, ct);
    });
  }
};

double measure_attention_prefill(const ProfileOptions& o, const OptConfig& cfg, ops::ComputeType ct,
                                 int repeats) {
  const int64_t b = o.attn_batch, s = o.attn_prefill_len, heads = cfg.heads, d = cfg.head_dim();
  Tensor q = random_tensor({b, s, heads, d}, DType::F32, 5, 1.0f);
  Tensor k = random_tensor({b, s, heads, d}, DType::F32, 6, 1.0f);
  Tensor v = random_tensor({b, s, heads, d}, DType::F32, 7, 1.0f);
  Tensor out = Tensor::empty({b, s, heads, d}, DType::F32);
  const std::vector<int32_t> pad(static_cast<size_t>(b), 0);
  const double t = median_seconds(
      repeats, [&] { ops::attention_prefill(q, k, v, pad, 0.125f, out, nullptr, ct); });
  // The cost model's count: the full s^2 (FlexGen does not halve it for the causal mask).
  return static_cast<double>(b) * 4.0 * s * s * cfg.hidden / t;
}

double measure_attention_decode(const ProfileOptions& o, const OptConfig& cfg, DType kv_dtype,
                                int repeats) {
  const int64_t b = o.attn_batch, ctx = o.attn_decode_ctx, heads = cfg.heads, d = cfg.head_dim();
  Tensor kc = random_tensor({b, heads, ctx, d}, kv_dtype, 8, 1.0f);
  Tensor vc = random_tensor({b, heads, ctx, d}, kv_dtype, 9, 1.0f);
  Tensor pos = Tensor::empty({b, heads, ctx}, DType::I32);
  for (int64_t i = 0; i < pos.numel(); ++i) pos.data<int32_t>()[i] = static_cast<int32_t>(i % ctx);
  Tensor q = random_tensor({b, heads, d}, DType::F32, 10, 1.0f);
  Tensor kn = random_tensor({b, heads, d}, DType::F32, 11, 1.0f);
  Tensor vn = random_tensor({b, heads, d}, DType::F32, 12, 1.0f);
  Tensor out = Tensor::empty({b, heads, d}, DType::F32);
  const double t = median_seconds(repeats, [&] {
    ops::attention_decode(q, kc, vc, pos, kn, vn, 0.125f, out, nullptr, nullptr);
  });
  return static_cast<double>(b) * 4.0 * ctx * cfg.hidden / t;  // q.K and p.V, 2 FLOPs each
}

// Seconds of one decoder layer, by difference of a 3-layer and a 1-layer copy of `ref` run by
// the in-RAM engine: prefill of `batch` prompts of `len` tokens, and one decode step (over a
// context of ~len tokens). The fastest of `repeats` runs of each: other work on a shared
// machine only ever slows a run down.
struct LayerTimes {
  double prefill = 0, decode_step = 0;
};

// A 1-layer and a 3-layer copy of the reference model with dummy weights.
struct LayerModels {
  static constexpr int kLayers[2] = {1, 3};
  OptConfig cfg[2];
  std::unique_ptr<OptModel> model[2];
  ModelWeights weights[2];
  LayerModels(const OptConfig& ref, DType wdt) {
    for (int i = 0; i < 2; ++i) {
      cfg[i] = ref;
      cfg[i].layers = kLayers[i];
      model[i] = std::make_unique<OptModel>(cfg[i]);
      weights[i] = load_model_weights(*model[i], wdt, dummy_weight_producer(1));
    }
  }
};

LayerTimes layer_times(const LayerModels& models, ops::ComputeType ct, int batch, int len,
                       int steps, int repeats) {
  const OptConfig& ref = models.cfg[0];
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < len; ++t) {
      prompts[b].push_back(4 + static_cast<int32_t>(philox4x32(3, b, t)[0] % (ref.vocab - 4)));
    }
  }
  GenerationSettings g;
  g.gen_len = steps + 1;
  g.stop_at_eos = false;
  g.compute = ct;
  g.kv_dtype = matrix_dtype_for(ct);
  double prefill[2], decode[2];
  for (int i = 0; i < 2; ++i) {
    prefill[i] = decode[i] = 1e30;
    for (int r = 0; r <= repeats; ++r) {  // the first run warms up
      const GenerateOutput out = generate_in_ram(*models.model[i], models.weights[i], prompts, g);
      if (r == 0) continue;
      prefill[i] = std::min(prefill[i], out.prefill_s);
      decode[i] = std::min(decode[i], out.decode_s);
    }
  }
  const double layers = LayerModels::kLayers[1] - LayerModels::kLayers[0];
  LayerTimes t;
  // Floors keep a noisy difference from going to zero or below.
  t.prefill = std::max(prefill[1] - prefill[0], 0.05 * prefill[1]) / layers;
  t.decode_step = std::max(decode[1] - decode[0], 0.05 * decode[1]) / layers / steps;
  return t;
}

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
