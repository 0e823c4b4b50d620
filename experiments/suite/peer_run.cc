#include "experiments/suite/peer_run.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// The end of a child's output, on one line (it goes into a table cell).
std::string tail(const std::string& s, size_t n) {
  std::string t = s.size() <= n ? s : "..." + s.substr(s.size() - n);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  for (char& c : t) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return t;
}

double throughput(const nlohmann::json& doc, const char* phase) {
  return doc.at(phase).at("throughput_tok_s").get<double>();
}

}  // namespace

std::string peer_python() {
  const char* env = std::getenv("H2OFLEX_PEER_PYTHON");
  return env != nullptr && *env != '\0' ? env : "python3";
}

MeasuredRow measured_from_child(const ChildResult& r, const std::string& json_path,
                                const std::string& who, const std::string& program) {
  MeasuredRow m;
  if (r.exit_code != 0) {
    m.skip_reason = who + " failed (" + program + ", status " + std::to_string(r.exit_code) +
                    "): " + tail(r.output, 300);
    return m;
  }
  std::ifstream in(json_path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
    m.total_tok_s = throughput(doc, "total");
    m.prefill_tok_s = throughput(doc, "prefill");
    m.decode_tok_s = throughput(doc, "decode");
    if (doc.contains("projected")) m.projected = doc["projected"].get<bool>();
  } catch (const nlohmann::json::exception& e) {
    m.skip_reason = who + " wrote no result (" + json_path + "): " + e.what();
    return m;
  }
  m.details = std::move(doc);
  return m;
}

MeasuredRow run_peer(const SuiteRow& row, MemoryCap* cap) {
  H2OFLEX_CHECK(row.peer.has_value(), row.where, " is not a peer row");
  const int batch = row.config["batch_size"] ? row.config["batch_size"].as<int>() : 1;
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() /
      ("h2oflex-peer-" + std::to_string(::getpid()) + "-" + std::to_string(row.index) + ".json");
  std::vector<std::string> argv{
      peer_python(), row.peer->script,           "--model",      row.model,
      "--batch",     std::to_string(batch),      "--prompt-len", std::to_string(row.prompt_len),
      "--gen-len",   std::to_string(row.gen_len)};
  for (const auto& [key, value] : row.peer->args) {
    argv.push_back("--" + key);
    argv.push_back(value);
  }
  argv.push_back("--json");
  argv.push_back(out.string());
  const ChildResult r = cap != nullptr ? cap->run(argv) : run_child(argv);
  struct Remove {
    std::filesystem::path p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{out};
  return measured_from_child(r, out.string(), "peer", peer_python() + " " + row.peer->script);
}

}  // namespace h2oflex
