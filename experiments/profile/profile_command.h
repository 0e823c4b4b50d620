// `h2oflex profile --out hw.yaml`: measures this machine as the cost model sees it (the
// CPU-only hierarchy: the compute "device" is a RAM arena) and writes a hardware profile that
// policy::load_hardware_profile reads.
//
// What is measured, and which profile constants it sets:
//  - memcpy between two large RAM buffers (one thread, as the transfer queues copy):
//    ctog_bdw, gtoc_bdw_cache, gtoc_bdw_hidden;
//  - sequential disk writes then reads of a fresh file through the offload io engine (io_uring,
//    O_DIRECT, the engine's default chunk and queue depth): ctod_bdw_*, dtoc_bdw (the median of
//    `repeats` read passes: runs re-read their weight layout, and a shared disk drifts); then
//    batches of scattered block-sized writes (a decode step's KV write-back): disk_write_op_s;
//  - whole OPT decoder layers of a reference model (default opt-1.3b) run by the in-RAM engine
//    in the compute type a run would use (compute_dtype auto): the time of one layer is the
//    difference between a 3-layer and a 1-layer model (embeddings, LM head and sampling cancel).
//    Its GEMM FLOPs over that time, less the modeled attention, give the effective rates:
//    prefill -> mm_flops_p, a decode step of each of `decode_rows` sequences ->
//    mm_flops_g_by_batch (the rate grows with the batch on a CPU; mm_flops_g = the largest
//    batch's). On a CPU the
//    LayerNorms, residuals, activation conversions and per-op overheads run on the same cores
//    as the GEMMs and scale with the same tokens, so they belong in the rate, as FlexGen's
//    fitted constants include them; ops::linear alone on the same shapes is reported for
//    comparison. One sequence's decode step through a small layer (hidden 256: every parallel
//    path of a real layer, weights that stay in the caches) -> layer_overhead_s, the fixed cost
//    of a layer (mostly waking the OpenMP workers, which the binary lets sleep between ops),
//    taken out of the rates above; through the reference layer, streaming its weights once,
//    less that -> device_mem_bdw;
//  - ops::attention_prefill over f32 q/k/v -> bmm_flops_p; ops::attention_decode over a bf16
//    (or f32) cache -> bmm_flops_g and cpu_flops (the host is the same CPU);
//  - memory sizes: MemTotal from /proc/meminfo split between the arena and host RAM, free disk
//    space at the disk path from statvfs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "policy/hardware.h"

namespace h2oflex {

struct ProfileOptions {
  std::string out_path;         // the YAML to write ("" = only print)
  std::string disk_path = ".";  // directory for the disk test file (removed afterwards)
  uint64_t disk_bytes = 1ull << 30;
  std::string name = "local_cpu";
  // auto | f32 | f16 | bf16 (or fp32, float32, ...), as in a run config
  std::string compute_dtype = "auto";

  // Shapes. The defaults are those of the local suite's largest model and its batches; tests
  // shrink them.
  uint64_t memcpy_bytes = 256ull << 20;
  std::string model = "opt-1.3b";              // reference layer shape (an OPT name)
  int prefill_batch = 16;                      // sequences of the prefill measurement
  int prefill_len = 64;                        // their prompt tokens
  std::vector<int> decode_rows = {4, 16, 64};  // GPU batches of the decode measurements
  int decode_steps = 4;                        // decode steps timed per run
  int attn_batch = 8;                          // sequences in the attention measurements
  int attn_prefill_len = 128;                  // prompt tokens of the prefill attention
  int attn_decode_ctx = 512;                   // cached tokens the decode attention reads
  int repeats = 5;  // timed repetitions per measurement (the median is kept)
};

// Everything `profile` measured, in the profile's units (bytes/s, FLOP/s), plus the raw figures
// behind them for the printed table.
struct ProfileMeasurements {
  policy::HardwareProfile profile;
  double memcpy_bps = 0, disk_read_bps = 0, disk_write_bps = 0;
  double disk_write_op_s = 0;  // per small scattered write, beyond its bytes
  bool disk_direct = true;     // false: the file system refused O_DIRECT (figures include caching)
  double gemm_prefill_flops = 0, gemm_decode_flops = 0, gemm_stream_bps = 0;  // layers
  std::vector<std::pair<int, double>> gemm_decode_by_rows;   // (GPU batch, FLOP/s), ascending
  double linear_prefill_flops = 0, linear_decode_flops = 0;  // ops::linear alone
  double attn_prefill_flops = 0, attn_decode_flops = 0;
  double layer_overhead_s = 0;  // fixed seconds per layer and GPU batch
  std::string compute_dtype;    // "bf16" or "f32"
  double seconds = 0;           // wall time of the whole profile
};

// Runs every measurement. Throws InputError for bad options (naming the option).
ProfileMeasurements measure_hardware(const ProfileOptions& options);

// The profile's YAML with a comment header describing the measurements.
std::string profile_yaml(const ProfileMeasurements& m, const ProfileOptions& options);

// CLI entry: measures, prints a summary, writes options.out_path; returns the exit code.
int run_profile(const ProfileOptions& options);

}  // namespace h2oflex
