#include "policy/hardware.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "policy/yaml_fields.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kTera = 1e12;

struct Field {
  const char* key;
  double HardwareProfile::*member;
  double unit;
  bool required;
  // Optional, and > 0 when given (absent: 0, which stands for a documented default).
  bool positive = false;
};

const Field kFields[] = {
    {"ctog_bdw", &HardwareProfile::ctog_bdw, kGiB, true},
    {"gtoc_bdw_cache", &HardwareProfile::gtoc_bdw_cache, kGiB, true},
    {"gtoc_bdw_hidden", &HardwareProfile::gtoc_bdw_hidden, kGiB, true},
    {"dtoc_bdw", &HardwareProfile::dtoc_bdw, kGiB, true},
    {"ctod_bdw_cache_p", &HardwareProfile::ctod_bdw_cache_p, kGiB, true},
    {"ctod_bdw_hidden_p", &HardwareProfile::ctod_bdw_hidden_p, kGiB, true},
    {"ctod_bdw_g", &HardwareProfile::ctod_bdw_g, kGiB, true},
    {"device_mem_bdw", &HardwareProfile::device_mem_bdw, kGiB, true},
    {"mm_flops_p", &HardwareProfile::mm_flops_p, kTera, true},
    {"mm_flops_g", &HardwareProfile::mm_flops_g, kTera, true},
    {"bmm_flops_p", &HardwareProfile::bmm_flops_p, kTera, true},
    {"bmm_flops_g", &HardwareProfile::bmm_flops_g, kTera, true},
    {"cpu_flops", &HardwareProfile::cpu_flops, kTera, true},
    {"cpu_flops_c1", &HardwareProfile::cpu_flops_c1, 1.0, false},
    {"cpu_flops_c2", &HardwareProfile::cpu_flops_c2, 1.0, false},
    {"cpu_flops_c3", &HardwareProfile::cpu_flops_c3, 1.0, false},
    {"layer_overhead_s", &HardwareProfile::layer_overhead_s, 1.0, false},
    {"disk_write_op_s", &HardwareProfile::disk_write_op_s, 1.0, false},
    {"dequant_bdw_g", &HardwareProfile::dequant_bdw_g, kGiB, false, true},
    {"dequant_bdw_c", &HardwareProfile::dequant_bdw_c, kGiB, false, true},
    {"stage_link_bdw", &HardwareProfile::stage_link_bdw, kGiB, false, true},
    {"stage_link_latency_s", &HardwareProfile::stage_link_latency_s, 1.0, false},
};

}  // namespace

double HardwareProfile::mm_flops_g_at(int gbs) const {
  const auto& t = mm_flops_g_by_batch;
  if (t.empty()) return mm_flops_g;
  if (gbs <= t.front().first) return t.front().second;
  if (gbs >= t.back().first) return t.back().second;
  size_t i = 1;
  while (t[i].first < gbs) ++i;
  // Between two measured batches the step time grows linearly with the rows (each added row
  // costs its FLOPs at the marginal rate; the weight reads are shared), so interpolate the time
  // per unit of per-row work, batch / rate, linearly in the batch and turn it back into a rate.
  const double b0 = t[i - 1].first, b1 = t[i].first;
  const double tau0 = b0 / t[i - 1].second, tau1 = b1 / t[i].second;
  const double tau = tau0 + (gbs - b0) / (b1 - b0) * (tau1 - tau0);
  return gbs / tau;
}

double HardwareProfile::dequant_rate_device() const {
  return dequant_bdw_g > 0 ? dequant_bdw_g : device_mem_bdw / 2;
}

double HardwareProfile::dequant_rate_host() const {
  constexpr double kBytesPerFlop = 1;  // see hardware.h
  return dequant_bdw_c > 0 ? dequant_bdw_c : cpu_flops * kBytesPerFlop;
}

double HardwareProfile::stage_link_rate() const {
  constexpr double kTenGigabitEthernet = 1.25e9;  // bytes/s
  return stage_link_bdw > 0 ? stage_link_bdw : kTenGigabitEthernet;
}

double HardwareProfile::cpu_flops_real(int gbs, int64_t h1) const {
  const double a = std::max(0.0, std::log2(64.0 / std::max(gbs, 1)));
  const double b = std::max(0.0, std::log2(4096.0 / static_cast<double>(std::max<int64_t>(h1, 1))));
  const double shape = 1 + cpu_flops_c1 * a * b - cpu_flops_c2 * a - cpu_flops_c3 * b;
  return cpu_flops * std::max(0.1, shape);
}

HardwareProfile parse_hardware_profile(const YAML::Node& node, const std::string& source) {
  const std::string root = source + ":";
  // clang-format off
  require_mapping(node, source, {"name",             "compute_device",   "device_mem",
                                 "host_mem",         "disk_mem",         "usable_fraction",
                                 "ctog_bdw",         "gtoc_bdw_cache",   "gtoc_bdw_hidden",
                                 "dtoc_bdw",         "ctod_bdw_cache_p", "ctod_bdw_hidden_p",
                                 "ctod_bdw_g",       "device_mem_bdw",   "mm_flops_p",
                                 "mm_flops_g",       "bmm_flops_p",      "bmm_flops_g",
                                 "cpu_flops",        "cpu_flops_c1",     "cpu_flops_c2",
                                 "cpu_flops_c3",     "layer_overhead_s", "mm_flops_g_by_batch",
                                 "disk_write_op_s",  "dequant_bdw_g",    "dequant_bdw_c",
                                 "stage_link_bdw",   "stage_link_latency_s"});
  // clang-format on
  auto path = [&](const char* key) { return root + " " + key; };
  auto need = [&](const char* key) {
    H2OFLEX_INPUT_CHECK(node[key], path(key), ": missing (hardware profiles list every constant)");
    return node[key];
  };
  HardwareProfile hw;
  hw.name = node["name"] ? read_string(node["name"], path("name")) : source;
  const std::string device = read_string(need("compute_device"), path("compute_device"));
  H2OFLEX_INPUT_CHECK(device == "gpu" || device == "cpu", path("compute_device"), ": '", device,
                      "' is not gpu or cpu");
  hw.compute_device = device == "gpu" ? ComputeDevice::Gpu : ComputeDevice::Cpu;
  hw.device_mem = read_byte_size(need("device_mem"), path("device_mem"));
  hw.host_mem = read_byte_size(need("host_mem"), path("host_mem"));
  hw.disk_mem = read_byte_size(need("disk_mem"), path("disk_mem"));
  if (node["usable_fraction"]) {
    hw.usable_fraction = read_double(node["usable_fraction"], path("usable_fraction"));
    H2OFLEX_INPUT_CHECK(hw.usable_fraction > 0 && hw.usable_fraction <= 1, path("usable_fraction"),
                        ": ", hw.usable_fraction, " is not in (0, 1]");
  }
  for (const Field& f : kFields) {
    if (!f.required && !node[f.key]) continue;
    const double v = read_double(f.required ? need(f.key) : node[f.key], path(f.key));
    if (f.required || f.positive) {
      H2OFLEX_INPUT_CHECK(std::isfinite(v) && v > 0, path(f.key), ": ", v, " must be > 0");
    } else {
      H2OFLEX_INPUT_CHECK(std::isfinite(v), path(f.key), ": ", v, " is not finite");
      const bool non_negative = f.member == &HardwareProfile::layer_overhead_s ||
                                f.member == &HardwareProfile::disk_write_op_s ||
                                f.member == &HardwareProfile::stage_link_latency_s;
      H2OFLEX_INPUT_CHECK(!non_negative || v >= 0, path(f.key), ": ", v, " must be >= 0");
    }
    hw.*(f.member) = v * f.unit;
  }
  if (const YAML::Node table = node["mm_flops_g_by_batch"]) {
    const std::string where = path("mm_flops_g_by_batch");
    H2OFLEX_INPUT_CHECK(table.IsMap() && table.size() > 0, where,
                        ": expected a mapping of GPU batch size to TFLOP/s", line_of(table));
    for (const auto& kv : table) {
      const std::string key = kv.first.Scalar();
      const int64_t gbs = read_int(kv.first, where + " key");
      const double v = read_double(kv.second, key_path(where, key));
      H2OFLEX_INPUT_CHECK(gbs >= 1 && gbs <= (1 << 20), where, ": batch size ", gbs,
                          " is not in [1, 2^20]");
      H2OFLEX_INPUT_CHECK(std::isfinite(v) && v > 0, key_path(where, key), ": ", v, " must be > 0");
      hw.mm_flops_g_by_batch.emplace_back(static_cast<int>(gbs), v * kTera);
    }
    auto& t = hw.mm_flops_g_by_batch;
    std::sort(t.begin(), t.end());
    for (size_t i = 1; i < t.size(); ++i) {
      H2OFLEX_INPUT_CHECK(t[i].first != t[i - 1].first, where, ": batch size ", t[i].first,
                          " appears twice");
    }
  }
  return hw;
}

HardwareProfile load_hardware_profile(const std::string& path) {
  return parse_hardware_profile(load_yaml_file(path, "hardware profile"), path);
}

std::string hardware_profile_to_yaml(const HardwareProfile& hw) {
  std::ostringstream os;
  os.precision(6);
  os << "name: " << hw.name << "\n";
  os << "compute_device: " << (hw.compute_device == ComputeDevice::Gpu ? "gpu" : "cpu") << "\n";
  os << "device_mem: " << hw.device_mem << "\n";
  os << "host_mem: " << hw.host_mem << "\n";
  os << "disk_mem: " << hw.disk_mem << "\n";
  os << "usable_fraction: " << hw.usable_fraction << "\n";
  for (const Field& f : kFields) {
    if (f.positive && hw.*(f.member) == 0) continue;  // not given: the default
    os << f.key << ": " << hw.*(f.member) / f.unit << "\n";
  }
  if (!hw.mm_flops_g_by_batch.empty()) {
    os << "mm_flops_g_by_batch: {";
    for (size_t i = 0; i < hw.mm_flops_g_by_batch.size(); ++i) {
      os << (i ? ", " : "") << hw.mm_flops_g_by_batch[i].first << ": "
         << hw.mm_flops_g_by_batch[i].second / kTera;
    }
    os << "}\n";
  }
  return os.str();
}

}  // namespace h2oflex::policy
