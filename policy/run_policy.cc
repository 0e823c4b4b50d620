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

double read_ratio(const YAML::Node& node, const std::string& path) {
  const double v = read_double(node, path);
  H2OFLEX_INPUT_CHECK(std::isfinite(v) && v > 0 && v <= 1, path, ": ", fmt_pct(v),
                      " is not a fraction of the prompt in (0, 1]");
  return v;
}

int read_count(const YAML::Node& node, const std::string& path, int min_value) {
  const int64_t v = read_int(node, path);
  H2OFLEX_INPUT_CHECK(v >= min_value && v <= (1 << 24), path, ": ", v, " must be in [", min_value,
                      ", ", (1 << 24), "]");
  return static_cast<int>(v);
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
  return os.str();
}

int KvPolicy::heavy(int prompt_len) const {
  switch (kind) {
    case Kind::Full:
      return 0;
    case Kind::Streaming:
      return sink_tokens;
    case Kind::H2O:
      if (heavy_tokens > 0) return heavy_tokens;
      return std::max(1, static_cast<int>(std::floor(heavy_ratio * prompt_len)));
  }
  return 0;
}

int KvPolicy::recent(int prompt_len) const {
  switch (kind) {
    case Kind::Full:
      return 0;
    case Kind::Streaming:
      return recent_tokens;
    case Kind::H2O:
      if (recent_tokens > 0) return recent_tokens;
      return std::max(1, static_cast<int>(std::floor(recent_ratio * prompt_len)));
  }
  return 0;
}

int KvPolicy::budget(int prompt_len) const {
  if (kind == Kind::Full) return kUnbounded;
  return heavy(prompt_len) + recent(prompt_len);
}

std::string KvPolicy::summary() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::Full:
      return "full";
    case Kind::Streaming:
      os << "streaming:" << sink_tokens << ',' << recent_tokens;
      return os.str();
    case Kind::H2O:
      os << "h2o:";
      if (heavy_tokens > 0) {
        os << heavy_tokens << " tokens";
      } else {
        os << fmt_pct(heavy_ratio);
      }
      os << ',';
      if (recent_tokens > 0) {
        os << recent_tokens << " tokens";
      } else {
        os << fmt_pct(recent_ratio);
      }
      return os.str();
  }
  return "?";
}

void validate_policy(const Policy& p, const std::string& path) {
  H2OFLEX_INPUT_CHECK(p.gpu_batch_size >= 1, key_path(path, "gpu_batch_size"), ": ",
                      p.gpu_batch_size, " must be >= 1");
  H2OFLEX_INPUT_CHECK(p.num_gpu_batches >= 1, key_path(path, "num_gpu_batches"), ": ",
                      p.num_gpu_batches, " must be >= 1");
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(p.gpu_batch_size) * p.num_gpu_batches <= (1 << 20), path,
                      ": block of ", p.gpu_batch_size, " x ", p.num_gpu_batches,
                      " sequences is absurdly large");
  check_split(p.w_gpu, p.w_cpu, path, "weights");
  check_split(p.cache_gpu, p.cache_cpu, path, "cache");
  check_split(p.act_gpu, p.act_cpu, path, "activations");
}

Policy parse_policy(const YAML::Node& node, const std::string& path) {
  require_mapping(node, path,
                  {"gpu_batch_size", "num_gpu_batches", "weights", "cache", "activations",
                   "overlap", "cpu_cache_compute", "pin_weight"});
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
  validate_policy(p, path);
  return p;
}

PolicySection parse_policy_section(const YAML::Node& node, const std::string& path) {
  PolicySection s;
  if (node.IsScalar()) {
    H2OFLEX_INPUT_CHECK(node.Scalar() == "auto", path, ": '", node.Scalar(),
                        "' is neither 'auto' nor a mapping", line_of(node));
    s.is_auto = true;
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

KvPolicy parse_kv_policy(const YAML::Node& node, const std::string& path) {
  require_mapping(
      node, path,
      {"policy", "heavy_ratio", "recent_ratio", "heavy_tokens", "recent_tokens", "sink_tokens"});
  KvPolicy kv;
  const std::string kind =
      node["policy"] ? read_string(node["policy"], key_path(path, "policy")) : "full";
  auto reject = [&](const char* key, const char* why) {
    H2OFLEX_INPUT_CHECK(!node[key], key_path(path, key), ": not used by kv policy '", kind, "' (",
                        why, ")");
  };
  if (kind == "full") {
    kv.kind = KvPolicy::Kind::Full;
    for (const char* k :
         {"heavy_ratio", "recent_ratio", "heavy_tokens", "recent_tokens", "sink_tokens"}) {
      reject(k, "the full cache keeps every token");
    }
  } else if (kind == "h2o") {
    kv.kind = KvPolicy::Kind::H2O;
    reject("sink_tokens", "sink tokens belong to 'streaming'");
    if (node["heavy_ratio"])
      kv.heavy_ratio = read_ratio(node["heavy_ratio"], key_path(path, "heavy_ratio"));
    if (node["recent_ratio"])
      kv.recent_ratio = read_ratio(node["recent_ratio"], key_path(path, "recent_ratio"));
    if (node["heavy_tokens"])
      kv.heavy_tokens = read_count(node["heavy_tokens"], key_path(path, "heavy_tokens"), 1);
    if (node["recent_tokens"])
      kv.recent_tokens = read_count(node["recent_tokens"], key_path(path, "recent_tokens"), 1);
    H2OFLEX_INPUT_CHECK(!(node["heavy_ratio"] && node["heavy_tokens"]), path,
                        ": give heavy_ratio or heavy_tokens, not both");
    H2OFLEX_INPUT_CHECK(!(node["recent_ratio"] && node["recent_tokens"]), path,
                        ": give recent_ratio or recent_tokens, not both");
    H2OFLEX_INPUT_CHECK(kv.heavy_ratio > 0 || kv.heavy_tokens > 0, key_path(path, "heavy_ratio"),
                        ": h2o needs heavy_ratio or heavy_tokens");
    H2OFLEX_INPUT_CHECK(kv.recent_ratio > 0 || kv.recent_tokens > 0, key_path(path, "recent_ratio"),
                        ": h2o needs recent_ratio or recent_tokens");
    // Over 1 the budget exceeds the prompt: it would be clamped to the full cache, no eviction.
    H2OFLEX_INPUT_CHECK(kv.heavy_ratio + kv.recent_ratio <= 1 + 1e-9, path, ": heavy_ratio (",
                        kv.heavy_ratio, ") + recent_ratio (", kv.recent_ratio,
                        ") exceeds 1: the cache would keep the whole prompt (use policy: full)");
  } else if (kind == "streaming") {
    kv.kind = KvPolicy::Kind::Streaming;
    reject("heavy_ratio", "streaming keeps sink tokens, not heavy hitters");
    reject("heavy_tokens", "streaming keeps sink tokens, not heavy hitters");
    reject("recent_ratio", "streaming takes recent_tokens");
    H2OFLEX_INPUT_CHECK(node["sink_tokens"] && node["recent_tokens"], path,
                        ": streaming needs sink_tokens and recent_tokens");
    kv.sink_tokens = read_count(node["sink_tokens"], key_path(path, "sink_tokens"), 0);
    kv.recent_tokens = read_count(node["recent_tokens"], key_path(path, "recent_tokens"), 1);
  } else {
    throw InputError(detail::concat(key_path(path, "policy"), ": '", kind,
                                    "' is not a kv policy (full, h2o, streaming)",
                                    line_of(node["policy"])));
  }
  return kv;
}

KvPolicy parse_kv_spec(const std::string& spec) {
  const std::string what = "--kv '" + spec + "'";
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  KvPolicy kv;
  if (kind == "full") {
    H2OFLEX_INPUT_CHECK(colon == std::string::npos, what, ": 'full' takes no parameters");
    return kv;
  }
  H2OFLEX_INPUT_CHECK(kind == "h2o" || kind == "streaming", what,
                      ": expected full, h2o:HEAVY,RECENT or streaming:SINK,RECENT");
  H2OFLEX_INPUT_CHECK(colon != std::string::npos, what, ": ", kind, " needs two values");
  const std::string rest = spec.substr(colon + 1);
  const size_t comma = rest.find(',');
  H2OFLEX_INPUT_CHECK(comma != std::string::npos, what, ": ", kind, " needs two values A,B");
  double a = 0, b = 0;
  try {
    size_t used_a = 0, used_b = 0;
    a = std::stod(rest.substr(0, comma), &used_a);
    b = std::stod(rest.substr(comma + 1), &used_b);
    H2OFLEX_INPUT_CHECK(used_a == comma && used_b == rest.size() - comma - 1, what,
                        ": values must be numbers");
  } catch (const std::logic_error&) {
    throw InputError(what + ": values must be numbers");
  }
  H2OFLEX_INPUT_CHECK(a >= 0 && b > 0, what, ": values must be positive");
  auto is_int = [](double v) { return v == std::floor(v); };
  if (kind == "streaming") {
    H2OFLEX_INPUT_CHECK(is_int(a) && is_int(b), what, ": streaming takes token counts");
    kv.kind = KvPolicy::Kind::Streaming;
    kv.sink_tokens = static_cast<int>(a);
    kv.recent_tokens = static_cast<int>(b);
    return kv;
  }
  kv.kind = KvPolicy::Kind::H2O;
  H2OFLEX_INPUT_CHECK(a > 0, what, ": heavy must be positive");
  // Values up to 1 are fractions of the prompt; integers above 1 are token counts.
  auto assign = [&](double v, double& ratio, int& tokens) {
    if (v <= 1) {
      ratio = v;
    } else {
      H2OFLEX_INPUT_CHECK(is_int(v), what, ": ", v, " is neither a fraction <= 1 nor a count");
      tokens = static_cast<int>(v);
    }
  };
  assign(a, kv.heavy_ratio, kv.heavy_tokens);
  assign(b, kv.recent_ratio, kv.recent_tokens);
  return kv;
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
          {"pin_weight", p.pin_weight}};
}

std::map<std::string, DescribedValue> describe(const KvPolicy& kv) {
  const char* kind = kv.kind == KvPolicy::Kind::Full  ? "full"
                     : kv.kind == KvPolicy::Kind::H2O ? "h2o"
                                                      : "streaming";
  std::map<std::string, DescribedValue> m = {{"policy", std::string(kind)}};
  if (kv.kind == KvPolicy::Kind::H2O) {
    if (kv.heavy_tokens > 0)
      m["heavy_tokens"] = double(kv.heavy_tokens);
    else
      m["heavy_ratio"] = kv.heavy_ratio;
    if (kv.recent_tokens > 0)
      m["recent_tokens"] = double(kv.recent_tokens);
    else
      m["recent_ratio"] = kv.recent_ratio;
  } else if (kv.kind == KvPolicy::Kind::Streaming) {
    m["sink_tokens"] = double(kv.sink_tokens);
    m["recent_tokens"] = double(kv.recent_tokens);
  }
  return m;
}

std::map<std::string, DescribedValue> describe(const HardwareLimits& h) {
  return {{"device_mem", double(h.device_mem)},
          {"host_mem", double(h.host_mem)},
          {"disk_mem", double(h.disk_mem)},
          {"disk_path", h.disk_path}};
}

}  // namespace h2oflex::policy
