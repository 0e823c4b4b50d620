#include "experiments/run/run_summary.h"

#include <cstdio>
#include <map>
#include <string>

namespace h2oflex {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct KvTraffic {
  double read = 0, written = 0;
};

// KV bytes read from and written back to the KV home, per phase. A store goes to the home
// (disk, or host from the device); everything else moving KV is a load.
std::map<std::string, KvTraffic> kv_traffic(const nlohmann::json& r) {
  std::map<std::string, KvTraffic> t;
  if (!r.contains("bytes_moved")) return t;
  for (const auto& m : r["bytes_moved"]) {
    if (m["kind"] != "kv") continue;
    const bool store = m["dst"] == "disk" || (m["dst"] == "host" && m["src"] == "device");
    (store ? t[m["phase"]].written : t[m["phase"]].read) += m["bytes"].get<double>();
  }
  return t;
}

}  // namespace

void print_summary(const nlohmann::json& r) {
  std::printf("model size: %.3f GB\tcache size: %.3f GB\thidden size (p): %.3f GB\n",
              r["model_bytes"].get<double>() / kGiB, r["cache_bytes"].get<double>() / kGiB,
              r["hidden_bytes"].get<double>() / kGiB);
  std::printf("peak device mem: %.3f GB\tprojected: %s\n",
              r["peak_device_bytes"].get<double>() / kGiB,
              r["projected"].get<bool>() ? "True" : "False");
  if (r.contains("device_memory")) {
    const nlohmann::json& m = r["device_memory"];
    std::printf("cuda memory in use (cudaMemGetInfo): %.3f GB peak, %.3f GB at start, of %.3f GB\n",
                m["cuda_used_peak_bytes"].get<double>() / kGiB,
                m["cuda_used_at_start_bytes"].get<double>() / kGiB,
                m["cuda_total_bytes"].get<double>() / kGiB);
  }
  for (const char* p : {"prefill", "decode", "total"}) {
    std::printf("%s latency: %.3f s\t%s throughput: %.3f token/s\n", p,
                r[p]["latency_s"].get<double>(), p, r[p]["throughput_tok_s"].get<double>());
  }
}

void print_comparison(const std::vector<nlohmann::json>& results) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::printf("\n%-34s", "side by side");
  for (const auto& r : results) std::printf(" %18s", r["name"].get<std::string>().c_str());
  std::printf("\n");
  auto row = [&](const char* label, auto&& value, const char* fmt) {
    std::printf("%-34s", label);
    for (const auto& r : results) std::printf(fmt, value(r));
    std::printf("\n");
  };
  row(
      "KV slots per sequence/layer/head",
      [](const nlohmann::json& r) { return r["kv"]["budget"].get<double>(); }, " %18.0f");
  row(
      "KV cache stored (MiB)",
      [&](const nlohmann::json& r) { return r["cache_bytes"].get<double>() / kMiB; }, " %18.1f");
  for (const char* phase : {"prefill", "decode"}) {
    const std::string read = std::string("KV read, ") + phase + " (MiB)";
    const std::string written = std::string("KV written, ") + phase + " (MiB)";
    row(
        read.c_str(), [&](const nlohmann::json& r) { return kv_traffic(r)[phase].read / kMiB; },
        " %18.1f");
    row(
        written.c_str(),
        [&](const nlohmann::json& r) { return kv_traffic(r)[phase].written / kMiB; }, " %18.1f");
  }
  for (const char* tier : {"device", "host", "disk"}) {
    const std::string label = std::string("peak ") + tier + " memory (MiB)";
    row(
        label.c_str(),
        [&](const nlohmann::json& r) {
          return r.contains("peak_bytes") ? r["peak_bytes"][tier].get<double>() / kMiB : 0.0;
        },
        " %18.1f");
  }
  row(
      "decode throughput (token/s)",
      [](const nlohmann::json& r) { return r["decode"]["throughput_tok_s"].get<double>(); },
      " %18.2f");
  row(
      "total throughput (token/s)",
      [](const nlohmann::json& r) { return r["total"]["throughput_tok_s"].get<double>(); },
      " %18.2f");
}

}  // namespace h2oflex
