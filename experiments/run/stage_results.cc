#include "experiments/run/stage_results.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace h2oflex {

namespace {

constexpr int kStageResultTag = 3;

nlohmann::json stage_entry(const Transport& t, const PipelineStage& stage,
                           const nlohmann::json& r) {
  int first = -1, last = -1;
  for (int u : stage.part.model_unit) {
    if (u < 0) continue;
    first = first < 0 ? u : std::min(first, u);
    last = std::max(last, u);
  }
  return {{"rank", t.rank()},
          {"units", {first, last}},
          {"layers", stage.layers()},
          {"peak_bytes", r.value("peak_bytes", nlohmann::json::object())},
          {"bytes_moved", r.value("bytes_moved", nlohmann::json::array())},
          {"stage_busy_s", r.value("stage_busy_s", nlohmann::json::object())},
          {"sent_bytes", r.value("stage_sent_bytes", nlohmann::json::object())}};
}

// The job's totals over the stages' entries.
void sum_into(nlohmann::json& r, const nlohmann::json& stages) {
  nlohmann::json peak = nlohmann::json::object();
  std::map<std::tuple<std::string, std::string, std::string, std::string>, double> moved;
  nlohmann::json busy = nlohmann::json::object();
  nlohmann::json sent = nlohmann::json::object();
  for (const nlohmann::json& s : stages) {
    for (const auto& [phase, bytes] : s["sent_bytes"].items()) {
      sent[phase] = sent.value(phase, 0.0) + bytes.get<double>();
    }
    for (const auto& [tier, bytes] : s["peak_bytes"].items()) {
      peak[tier] = peak.value(tier, 0.0) + bytes.get<double>();
    }
    for (const nlohmann::json& m : s["bytes_moved"]) {
      moved[{m["phase"], m["kind"], m["src"], m["dst"]}] += m["bytes"].get<double>();
    }
    for (const auto& [phase, queues] : s["stage_busy_s"].items()) {
      nlohmann::json& sum = busy[phase];
      if (sum.is_null()) sum = nlohmann::json::object();
      for (const auto& [queue, seconds] : queues.items()) {
        sum[queue] = sum.value(queue, 0.0) + seconds.get<double>();
      }
    }
  }
  nlohmann::json moved_list = nlohmann::json::array();
  for (const auto& [key, bytes] : moved) {
    const auto& [phase, kind, src, dst] = key;
    moved_list.push_back(
        {{"phase", phase}, {"kind", kind}, {"src", src}, {"dst", dst}, {"bytes", bytes}});
  }
  r["peak_bytes"] = peak;
  r["bytes_moved"] = moved_list;
  r["stage_busy_s"] = busy;
  r["stage_sent_bytes"] = sent;
}

}  // namespace

void gather_stage_results(Transport& t, const PipelineStage& stage, nlohmann::json& result) {
  const nlohmann::json mine = stage_entry(t, stage, result);
  if (t.rank() != 0) {
    send_text(t, mine.dump(), 0, kStageResultTag);
    return;
  }
  nlohmann::json stages = nlohmann::json::array({mine});
  for (int r = 1; r < t.size(); ++r)
    stages.push_back(nlohmann::json::parse(recv_text(t, r, kStageResultTag)));
  sum_into(result, stages);
  result["stages"] = stages;
}

}  // namespace h2oflex
