// A machine described by the constants of the cost model: link bandwidths between tiers, GEMM
// and attention rates, memory sizes. Loaded from YAML (experiments/hardware/*.yaml).
//
// Keys (all required unless marked optional; unknown keys are rejected):
//   name: t4                          free text
//   compute_device: gpu | cpu         cpu = CPU-only hierarchy: "device" is a RAM arena,
//                                     ctog/gtoc are memcpy, dtoc/ctod are the disk
//   device_mem, host_mem, disk_mem    byte sizes ("16GiB", "1.5TiB")
//   usable_fraction: 0.8              optional; share of each tier the planner may fill
//   bandwidths in GiB/s (GB = 2^30 as in FlexGen):
//     ctog_bdw                        host -> device (weights, hidden)
//     gtoc_bdw_cache, gtoc_bdw_hidden device -> host (KV cache, hidden)
//     dtoc_bdw                        disk -> host
//     ctod_bdw_cache_p, ctod_bdw_hidden_p, ctod_bdw_g   host -> disk (prefill cache, prefill
//                                     hidden, decode)
//     device_mem_bdw                  device memory read rate for weight-bound decode GEMMs
//   rates in TFLOP/s:
//     mm_flops_p, mm_flops_g          GEMM on the device, prefill / decode
//     bmm_flops_p, bmm_flops_g        attention on the device, prefill / decode
//     cpu_flops                       attention on the host (delegated decode attention)
//   optional: cpu_flops_c1, cpu_flops_c2, cpu_flops_c3 (FlexGen's fitted shape of the host
//     attention rate in gpu_batch_size and hidden size; default 0)
//   optional: mm_flops_g_by_batch: {4: 0.11, 16: 0.23, 64: 0.35}   decode GEMM rate (TFLOP/s)
//     measured at several GPU batch sizes; between two of them the step time is interpolated
//     linearly in the batch (batch / rate is affine), outside them the rate stays at the nearest
//     measured one (default: mm_flops_g at every batch)
//   optional: disk_write_op_s         seconds per small scattered write to the disk beyond its
//     bytes (request submission, completion, device latency; default 0); a decode step writes
//     one such record per (sequence, head) of a disk-resident KV cache
//   optional: layer_overhead_s        seconds of fixed cost per decoder layer and GPU batch on
//     the compute device, whatever the size (kernel launches, thread fork/join, temporaries;
//     default 0); `h2oflex profile` measures it on a CPU from a tiny layer
//   optional: dequant_bdw_g, dequant_bdw_c   GiB/s of (de)quantized output — bytes of the
//     values at their plain dtype — that 4-bit group-wise (de)quantization (compress_weight,
//     compress_cache) produces on the compute device / on the host (delegated attention over a
//     compressed cache dequantizes there). Must be > 0 when given. Defaults: the device at half
//     its memory read rate (device_mem_bdw / 2: a fused kernel reads the packed rows and writes
//     the output once, at write rates below the streaming read rate); the host at one byte per
//     FLOP of cpu_flops (a 16-bit value costs a multiply and an add, 2 FLOP per 2 bytes, at the
//     rate host attention runs at, which does the same per cached value)
//   optional: stage_link_bdw (GiB/s), stage_link_latency_s   the link from this machine to the
//     next pipeline stage's (`plan --stages`): hidden states go forward over it, token ids come
//     back. Defaults: 10 Gbit Ethernet, 1.25e9 bytes/s (1.164 GiB/s), and 50 microseconds per
//     message
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace YAML {
class Node;
}

namespace h2oflex::policy {

enum class ComputeDevice { Gpu, Cpu };

struct HardwareProfile {
  std::string name;
  ComputeDevice compute_device = ComputeDevice::Gpu;
  uint64_t device_mem = 0, host_mem = 0, disk_mem = 0;  // bytes
  double usable_fraction = 0.8;

  // Bandwidths in bytes/s.
  double ctog_bdw = 0, gtoc_bdw_cache = 0, gtoc_bdw_hidden = 0;
  double dtoc_bdw = 0, ctod_bdw_cache_p = 0, ctod_bdw_hidden_p = 0, ctod_bdw_g = 0;
  double device_mem_bdw = 0;
  // Rates in FLOP/s.
  double mm_flops_p = 0, mm_flops_g = 0, bmm_flops_p = 0, bmm_flops_g = 0, cpu_flops = 0;
  double cpu_flops_c1 = 0, cpu_flops_c2 = 0, cpu_flops_c3 = 0;
  double layer_overhead_s = 0;  // seconds per decoder layer and GPU batch
  double disk_write_op_s = 0;   // seconds per small scattered disk write beyond its bytes
  // (De)quantized output bytes per second of 4-bit compression, on the device and on the host;
  // 0: not given (the profile's defaults, dequant_rate_device / dequant_rate_host).
  double dequant_bdw_g = 0, dequant_bdw_c = 0;
  // The link to the next pipeline stage: bytes/s (0: not given, the default) and seconds per
  // message.
  double stage_link_bdw = 0;
  double stage_link_latency_s = 50e-6;
  // Decode GEMM rate (FLOP/s) measured at these GPU batch sizes, ascending. FlexGen's one
  // constant, fitted on a GPU at large batches, is right for a device that is saturated; a
  // CPU's rate keeps growing with the batch well past where one constant would be measured
  // (more rows per weight read amortize the streaming and the per-op fork/join), and with one
  // constant the planner sees no gain in a larger batch. Empty: mm_flops_g everywhere.
  std::vector<std::pair<int, double>> mm_flops_g_by_batch;

  // Decode GEMM rate for a GPU batch of `gbs` sequences (see mm_flops_g_by_batch).
  double mm_flops_g_at(int gbs) const;

  // Bytes per second of (de)quantized output (plain size) on the compute device and on the host:
  // dequant_bdw_g / dequant_bdw_c, or their documented defaults when not given.
  double dequant_rate_device() const;
  double dequant_rate_host() const;
  // stage_link_bdw, or 10 Gbit Ethernet's 1.25e9 bytes/s when not given.
  double stage_link_rate() const;

  // Host attention rate for a GPU batch of `gbs` sequences of hidden size `h1`: FlexGen's fit,
  // cpu_flops * max(0.1, 1 + c1*a*b - c2*a - c3*b), a = log2(64/gbs)+, b = log2(4096/h1)+.
  double cpu_flops_real(int gbs, int64_t h1) const;
};

// `source` names the file or origin in messages.
HardwareProfile parse_hardware_profile(const YAML::Node& node, const std::string& source);
HardwareProfile load_hardware_profile(const std::string& path);
// The YAML text of a profile (round-trips through parse_hardware_profile); for `profile --out`.
std::string hardware_profile_to_yaml(const HardwareProfile& hw);

}  // namespace h2oflex::policy
