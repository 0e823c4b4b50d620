#include "policy/run_policy.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "policy/yaml_fields.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

namespace {

std::string fmt_pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

void check_percentage(double v, const std::string& parent, const char* key) {
  H2OFLEX_INPUT_CHECK(std::isfinite(v) && v >= 0 && v <= 100, key_path(parent, key), ": ",
                      fmt_pct(v), " is not a percentage in [0, 100]");
}

// Reads {gpu: %, cpu: %} into the pair; missing keys keep the defaults.
void read_split(const YAML::Node& node, const std::string& path, double& gpu, double& cpu) {
  require_mapping(node, path, {"gpu", "cpu"});
  if (node["gpu"]) gpu = read_double(node["gpu"], key_path(path, "gpu"));
  if (node["cpu"]) cpu = read_double(node["cpu"], key_path(path, "cpu"));
  // A split naming only the cpu share leaves nothing implied on the gpu.
  if (node["cpu"] && !node["gpu"]) gpu = 0;
}

// Messages are built only on failure: the planner validates millions of candidates.
void check_split(double gpu, double cpu, const std::string& parent, const char* kind) {
  auto ok = [](double v) { return std::isfinite(v) && v >= 0 && v <= 100; };
  if (!ok(gpu)) check_percentage(gpu, key_path(parent, kind), "gpu");
  if (!ok(cpu)) check_percentage(cpu, key_path(parent, kind), "cpu");
  H2OFLEX_INPUT_CHECK(gpu + cpu <= 100 + 1e-9, key_path(parent, kind), ": gpu ", fmt_pct(gpu),
                      " + cpu ", fmt_pct(cpu), " = ", fmt_pct(gpu + cpu),
                      " exceeds 100 (disk gets 100 - gpu - cpu)");
}

}  // namespace

std::string Policy::percent_string() const {
  std::ostringstream os;
  os << fmt_pct(w_gpu) << ' ' << fmt_pct(w_cpu) << ' ' << fmt_pct(cache_gpu) << ' '
     << fmt_pct(cache_cpu) << ' ' << fmt_pct(act_gpu) << ' ' << fmt_pct(act_cpu);
  return os.str();
}

std::string Policy::summary() const {
  std::ostringstream os;
  os << gpu_batch_size << 'x' << num_gpu_batches << " w " << fmt_pct(w_gpu) << '/' << fmt_pct(w_cpu)
     << '/' << fmt_pct(w_disk()) << " cache " << fmt_pct(cache_gpu) << '/' << fmt_pct(cache_cpu)
     << '/' << fmt_pct(cache_disk()) << " act " << fmt_pct(act_gpu) << '/' << fmt_pct(act_cpu)
     << '/' << fmt_pct(act_disk());
  if (cpu_cache_compute) os << " cpu_cache_compute";
  if (!overlap) os << " no-overlap";
  if (!pin_weight) os << " unpinned";
  if (compress_weight) os << " compress_weight";
  if (weight_format.mode != WeightFormat::Mode::Stored && !compress_weight) {
    os << " weight_format " << weight_format.name();
  }
  if (compress_cache) os << " compress_cache";
  if (cache_format != PackedFormat::None) {
    os << " cache_format " << packed_format_row(cache_format).name;
  } else if (cache_dtype) {
    os << " cache_format " << dtype_name(*cache_dtype);
  }
  if (stages > 0) os << " stages " << stages;
  if (micro_blocks > 0) os << " micro_blocks " << micro_blocks;
  return os.str();
}

void validate_policy(const Policy& p, const std::string& path) {
  H2OFLEX_INPUT_CHECK(p.gpu_batch_size >= 1, key_path(path, "gpu_batch_size"), ": ",
                      p.gpu_batch_size, " must be >= 1");
  H2OFLEX_INPUT_CHECK(p.num_gpu_batches >= 1, key_path(path, "num_gpu_batches"), ": ",
                      p.num_gpu_batches, " must be >= 1");
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(p.gpu_batch_size) * p.num_gpu_batches <= (1 << 20), path,
                      ": block of ", p.gpu_batch_size, " x ", p.num_gpu_batches,
                      " sequences is absurdly large");
  H2OFLEX_INPUT_CHECK(p.stages >= 0 && p.stages <= 4096, key_path(path, "stages"), ": ", p.stages,
                      " must be in [1, 4096]");
  H2OFLEX_INPUT_CHECK(p.micro_blocks == 0 || p.num_gpu_batches % p.micro_blocks == 0,
                      key_path(path, "micro_blocks"), ": ", p.micro_blocks,
                      " does not divide num_gpu_batches (", p.num_gpu_batches, ")");
  check_split(p.w_gpu, p.w_cpu, path, "weights");
  check_split(p.cache_gpu, p.cache_cpu, path, "cache");
  check_split(p.act_gpu, p.act_cpu, path, "activations");
}

Policy parse_policy(const YAML::Node& node, const std::string& path) {
  require_mapping(node, path,
                  {"gpu_batch_size", "num_gpu_batches", "weights", "cache", "activations",
                   "overlap", "cpu_cache_compute", "pin_weight", "compress_weight", "weight_format",
                   "compress_cache", "cache_format", "stages", "micro_blocks"});
  Policy p;
  auto count = [&](const char* key, int& out) {
    if (!node[key]) return;
    const std::string k = key_path(path, key);
    const int64_t v = read_int(node[key], k);
    H2OFLEX_INPUT_CHECK(v >= 1 && v <= (1 << 20), k, ": ", v, " must be in [1, 1048576]");
    out = static_cast<int>(v);
  };
  count("gpu_batch_size", p.gpu_batch_size);
  count("num_gpu_batches", p.num_gpu_batches);
  count("stages", p.stages);
  count("micro_blocks", p.micro_blocks);
  if (node["weights"]) read_split(node["weights"], key_path(path, "weights"), p.w_gpu, p.w_cpu);
  if (node["cache"]) read_split(node["cache"], key_path(path, "cache"), p.cache_gpu, p.cache_cpu);
  if (node["activations"]) {
    read_split(node["activations"], key_path(path, "activations"), p.act_gpu, p.act_cpu);
  }
  if (node["overlap"]) p.overlap = read_bool(node["overlap"], key_path(path, "overlap"));
  if (node["cpu_cache_compute"]) {
    p.cpu_cache_compute = read_bool(node["cpu_cache_compute"], key_path(path, "cpu_cache_compute"));
  }
  if (node["pin_weight"])
    p.pin_weight = read_bool(node["pin_weight"], key_path(path, "pin_weight"));
  if (node["compress_weight"]) {
    p.compress_weight = read_bool(node["compress_weight"], key_path(path, "compress_weight"));
  }
  if (node["compress_cache"]) {
    p.compress_cache = read_bool(node["compress_cache"], key_path(path, "compress_cache"));
  }
  if (node["weight_format"]) {
    const std::string k = key_path(path, "weight_format");
    p.weight_format = parse_weight_format(read_string(node["weight_format"], k), k);
    const bool q4 = p.weight_format == WeightFormat::packed_as(PackedFormat::Q4G64);
    // compress_weight: true is q4_g64 written another way; the two keys must agree (stored and
    // plain leave the packing to compress_weight).
    const bool leaves_packing = p.weight_format.mode == WeightFormat::Mode::Stored ||
                                p.weight_format.mode == WeightFormat::Mode::Plain;
    H2OFLEX_INPUT_CHECK(!node["compress_weight"] || p.compress_weight == q4 || leaves_packing, k,
                        ": '", p.weight_format.name(), "' contradicts ",
                        key_path(path, "compress_weight"), ": ",
                        p.compress_weight ? "true" : "false", " (compress_weight: true is q4_g64)");
    if (q4) p.compress_weight = true;
  }
  if (node["cache_format"]) {
    const std::string k = key_path(path, "cache_format");
    const std::string v = read_string(node["cache_format"], k);
    const PackedFormatRow* row = packed_format_by_name(v);
    p.cache_dtype = plain_format_by_name(v);
    const auto kv_rows = [](const PackedFormatRow& r) { return r.kv_cache; };
    H2OFLEX_INPUT_CHECK(v == "plain" || p.cache_dtype || (row != nullptr && row->kv_cache), k,
                        ": '", v, "' is not a KV cache format (plain, ", kPlainFormatNames, ", ",
                        packed_format_list(kv_rows), ")");
    p.cache_format = row != nullptr ? row->id : PackedFormat::None;
    const bool q4 = p.cache_format == PackedFormat::Q4G64;
    H2OFLEX_INPUT_CHECK(!node["compress_cache"] || p.compress_cache == q4, k, ": '", v,
                        "' contradicts ", key_path(path, "compress_cache"), ": ",
                        p.compress_cache ? "true" : "false", " (compress_cache: true is q4_g64)");
    if (q4) {  // one spelling inside: the planner switches compress_cache
      p.compress_cache = true;
      p.cache_format = PackedFormat::None;
    }
  }
  if (p.weight_format.mode == WeightFormat::Mode::Dtype && p.cache_dtype) {
    // Both are stored in the compute's operand type: two different ones name no run.
    H2OFLEX_INPUT_CHECK(p.weight_format.dtype == *p.cache_dtype, key_path(path, "cache_format"),
                        ": '", dtype_name(*p.cache_dtype), "' contradicts ",
                        key_path(path, "weight_format"), ": ", p.weight_format.name(),
                        " (weights and KV rows are stored in the compute's type)");
  }
  validate_policy(p, path);
  return p;
}

WeightFormat parse_weight_format(const std::string& value, const std::string& key) {
  if (value == "stored") return {};
  if (value == "plain") return {WeightFormat::Mode::Plain, PackedFormat::None};
  if (const std::optional<DType> t = plain_format_by_name(value)) return WeightFormat::plain_as(*t);
  const PackedFormatRow* row = packed_format_by_name(value);
  H2OFLEX_INPUT_CHECK(row != nullptr, key, ": '", value,
                      "' is not a weight format (stored, plain, ", kPlainFormatNames, ", ",
                      packed_format_list(), ")");
  return WeightFormat::packed_as(row->id);
}

std::optional<DType> Policy::named_operand_dtype() const {
  if (weight_format.mode == WeightFormat::Mode::Dtype) return weight_format.dtype;
  return cache_dtype;
}

void check_compute_dtype(const Policy& p, std::optional<DType> compute_operand,
                         const std::string& compute_key, const std::string& path) {
  const std::optional<DType> named = p.named_operand_dtype();
  if (!named || !compute_operand || *named == *compute_operand) return;
  const char* key =
      p.weight_format.mode == WeightFormat::Mode::Dtype ? "weight_format" : "cache_format";
  throw InputError(detail::concat(
      key_path(path, key), ": '", dtype_name(*named), "' contradicts ", compute_key, ": ",
      dtype_name(*compute_operand), " (weights and KV rows are stored in the compute's type: give ",
      compute_key, ": ", dtype_name(*named), " or auto, or ", key, ": plain)"));
}

PolicySection parse_policy_section(const YAML::Node& node, const std::string& path) {
  PolicySection s;
  if (node.IsScalar()) {
    H2OFLEX_INPUT_CHECK(node.Scalar() == "auto", path, ": '", node.Scalar(),
                        "' is neither 'auto' nor a mapping", line_of(node));
    s.is_auto = true;
    return s;
  }
  if (node.IsMap() && node["auto"]) {
    require_mapping(node, path, {"auto", "allow_compression"});
    H2OFLEX_INPUT_CHECK(read_bool(node["auto"], key_path(path, "auto")), key_path(path, "auto"),
                        ": false is no policy (give the policy's keys instead)",
                        line_of(node["auto"]));
    s.is_auto = true;
    if (node["allow_compression"]) {
      s.allow_compression =
          read_bool(node["allow_compression"], key_path(path, "allow_compression"));
    }
    return s;
  }
  s.policy = parse_policy(node, path);
  return s;
}

HardwareLimits parse_hardware_limits(const YAML::Node& node, const std::string& path) {
  require_mapping(node, path, {"device_mem", "host_mem", "disk_path", "disk_mem"});
  HardwareLimits h;
  if (node["device_mem"])
    h.device_mem = read_byte_size(node["device_mem"], key_path(path, "device_mem"));
  if (node["host_mem"]) h.host_mem = read_byte_size(node["host_mem"], key_path(path, "host_mem"));
  if (node["disk_mem"]) h.disk_mem = read_byte_size(node["disk_mem"], key_path(path, "disk_mem"));
  if (node["disk_path"]) {
    h.disk_path = read_string(node["disk_path"], key_path(path, "disk_path"));
    H2OFLEX_INPUT_CHECK(!h.disk_path.empty(), key_path(path, "disk_path"), ": empty path");
  }
  return h;
}

std::map<std::string, DescribedValue> describe(const Policy& p) {
  return {{"gpu_batch_size", double(p.gpu_batch_size)},
          {"num_gpu_batches", double(p.num_gpu_batches)},
          {"block_size", double(p.block_size())},
          {"w_gpu", p.w_gpu},
          {"w_cpu", p.w_cpu},
          {"w_disk", p.w_disk()},
          {"cache_gpu", p.cache_gpu},
          {"cache_cpu", p.cache_cpu},
          {"cache_disk", p.cache_disk()},
          {"act_gpu", p.act_gpu},
          {"act_cpu", p.act_cpu},
          {"act_disk", p.act_disk()},
          {"overlap", p.overlap},
          {"cpu_cache_compute", p.cpu_cache_compute},
          {"pin_weight", p.pin_weight},
          {"compress_weight", p.compress_weight},
          {"weight_format", p.weight_format.name()},
          {"cache_format", p.kv_packing() != PackedFormat::None
                               ? std::string(packed_format_row(p.kv_packing()).name)
                           : p.cache_dtype ? std::string(dtype_name(*p.cache_dtype))
                                           : std::string("plain")},
          {"compress_cache", p.compress_cache}};
}

YAML::Node policy_yaml(const Policy& p) {
  YAML::Node n;
  n["gpu_batch_size"] = p.gpu_batch_size;
  n["num_gpu_batches"] = p.num_gpu_batches;
  n["weights"]["gpu"] = p.w_gpu;
  n["weights"]["cpu"] = p.w_cpu;
  n["cache"]["gpu"] = p.cache_gpu;
  n["cache"]["cpu"] = p.cache_cpu;
  n["activations"]["gpu"] = p.act_gpu;
  n["activations"]["cpu"] = p.act_cpu;
  n["overlap"] = p.overlap;
  n["cpu_cache_compute"] = p.cpu_cache_compute;
  n["pin_weight"] = p.pin_weight;
  // The formats by name (describe's spelling: one truth); compress_* follow from them.
  const auto d = describe(p);
  n["weight_format"] = std::get<std::string>(d.at("weight_format"));
  n["cache_format"] = std::get<std::string>(d.at("cache_format"));
  return n;
}

std::map<std::string, DescribedValue> describe(const HardwareLimits& h) {
  return {{"device_mem", double(h.device_mem)},
          {"host_mem", double(h.host_mem)},
          {"disk_mem", double(h.disk_mem)},
          {"disk_path", h.disk_path}};
}

}  // namespace h2oflex::policy
