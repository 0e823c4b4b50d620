#include "experiments/suite/suite_results.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace h2oflex {

std::string short_number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits + 1, v);
  return buf;
}

std::string short_number(const std::optional<double>& v) {
  return v ? short_number(*v) : "";
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// "12.3" for one run; "12.3 (11.9-13.0, 3 runs)" = median (min-max) for several.
std::string measured_cell(const ResultRow& r) {
  std::string cell = short_number(r.measured);
  if (r.measured_runs.size() > 1) {
    cell += " (" + short_number(r.measured_runs.front()) + "-" +
            short_number(r.measured_runs.back()) + ", " + std::to_string(r.measured_runs.size()) +
            " runs)";
  }
  return cell;
}

}  // namespace

std::optional<double> ResultRow::ratio() const {
  const std::optional<double> published = row ? row->published_tok_s : std::nullopt;
  if (measured && published) return *measured / *published;
  if (predicted && published) return *predicted / *published;
  if (measured && predicted) return *measured / *predicted;
  return std::nullopt;
}

std::optional<bool> ResultRow::within_band() const {
  if (!row || !row->band) return std::nullopt;
  std::optional<double> r;
  if (predicted && row->published_tok_s) {
    r = *predicted / *row->published_tok_s;
  } else if (measured && predicted) {
    r = *measured / *predicted;
  }
  if (!r) return std::nullopt;
  return std::fabs(*r - 1) <= *row->band + 1e-12;
}

std::string results_csv(const std::vector<ResultRow>& rows) {
  std::ostringstream os;
  os << "system,model,prompt_len,gen_len,batch,policy,published_tok_s,predicted_tok_s,"
        "measured_tok_s,ratio\n";
  for (const ResultRow& r : rows) {
    const SuiteRow& s = *r.row;
    os << csv_field(s.system) << ',' << csv_field(s.model) << ',' << s.prompt_len << ','
       << s.gen_len << ',' << csv_field(r.batch) << ',' << csv_field(r.policy) << ','
       << short_number(s.published_tok_s) << ',' << short_number(r.predicted) << ','
       << short_number(r.measured) << ',' << short_number(r.ratio()) << '\n';
  }
  return os.str();
}

std::string results_markdown(const Suite& suite, const std::vector<ResultRow>& rows,
                             bool predict_only) {
  std::ostringstream os;
  os << "# " << suite.name << "\n\n";
  if (!suite.description.empty()) os << suite.description << "\n\n";
  os << "Generation throughput in tokens/s = batch x gen_len / (prefill + decode time) (FlexGen's "
        "definition). "
     << (predict_only ? "Cost-model predictions only (`--predict`). "
                      : "Measured on this machine where it can run. ")
     << "ratio = (measured, else predicted) / (published, else predicted); with several runs, "
        "measured = median (min-max); \"1.56 x L\" = measured / row L's measured. policy = "
        "FlexGen's "
        "percent order (w_gpu w_cpu cache_gpu cache_cpu act_gpu act_cpu); ccc = "
        "cpu_cache_compute; cw, cc = 4-bit compress_weight, compress_cache.\n\n";
  os << "| row | system | model | prompt+gen | batch | policy | published | predicted | measured "
        "| ratio | note |\n";
  os << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ResultRow& r : rows) {
    const SuiteRow& s = *r.row;
    std::string ratio = r.versus_ratio ? short_number(*r.versus_ratio) + " x " + r.versus_label
                                       : short_number(r.ratio());
    if (const auto ok = r.within_band()) {
      ratio += std::string(*ok ? " (within " : " (OUTSIDE ") + "±" +
               short_number(*s.band * 100, 2) + "%)";
    }
    os << "| " << (s.label.empty() ? std::to_string(s.index) : s.label) << " | " << s.system
       << " | " << s.model << " | " << s.prompt_len << "+" << s.gen_len << " | " << r.batch << " | "
       << r.policy << " | " << short_number(s.published_tok_s) << " | " << short_number(r.predicted)
       << " | " << measured_cell(r) << " | " << ratio << " | " << r.note << " |\n";
  }
  return os.str();
}

nlohmann::json results_json(const Suite& suite, const std::vector<ResultRow>& rows,
                            bool predict_only) {
  nlohmann::json doc;
  doc["suite"] = suite.name;
  doc["suite_path"] = suite.path;
  doc["predict_only"] = predict_only;
  doc["metric"] =
      "tokens/s; total = batch*gen_len/(prefill+decode), decode = batch*(gen_len-1)/decode, "
      "prefill = batch*prompt_len/prefill";
  nlohmann::json arr = nlohmann::json::array();
  auto num = [](const std::optional<double>& v) -> nlohmann::json {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  for (const ResultRow& r : rows) {
    const SuiteRow& s = *r.row;
    nlohmann::json j;
    j["index"] = s.index;
    j["label"] = s.label;
    j["system"] = s.system;
    j["model"] = s.model;
    j["prompt_len"] = s.prompt_len;
    j["gen_len"] = s.gen_len;
    j["batch"] = r.batch;
    j["policy"] = r.policy;
    j["hardware_profile"] = s.hardware_profile;
    j["published_tok_s"] = num(s.published_tok_s);
    j["predicted_tok_s"] = num(r.predicted);
    j["measured_tok_s"] = num(r.measured);
    j["measured_runs_tok_s"] = r.measured_runs;
    j["ratio"] = num(r.ratio());
    if (!s.versus.empty()) {
      j["versus_rows"] = s.versus;
      j["versus"] =
          r.versus_label.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.versus_label);
      j["versus_ratio"] = num(r.versus_ratio);
    }
    j["band"] = num(s.band);
    const auto ok = r.within_band();
    j["within_band"] = ok ? nlohmann::json(*ok) : nlohmann::json(nullptr);
    j["note"] = r.note;
    if (r.estimate) {
      const policy::CostEstimate& e = *r.estimate;
      j["predicted"] = {
          {"prefill_tok_s", e.prefill_tok_s},
          {"decode_tok_s", e.decode_tok_s},
          {"total_tok_s", e.total_tok_s},
          {"prefill_s", e.prefill_s},
          {"decode_s", e.decode_s},
          {"decode_context",
           s.published_context == policy::DecodeContext::Mean ? "mean" : "first_decode_step"},
          {"decode_kv_tokens", e.decode_kv_tokens},
          {"bottleneck", {{"prefill", e.prefill.bottleneck}, {"decode", e.decode.bottleneck}}},
          {"peak_bytes",
           {{"device", e.peak.device}, {"host", e.peak.host}, {"disk", e.peak.disk}}}};
    }
    if (r.measurement) {
      const MeasuredRow& m = *r.measurement;
      j["measured"] = {{"prefill_tok_s", m.prefill_tok_s},
                       {"decode_tok_s", m.decode_tok_s},
                       {"total_tok_s", m.total_tok_s},
                       {"projected", m.projected},
                       {"skip_reason", m.skip_reason}};
      if (!m.details.is_null()) j["measured"]["details"] = m.details;
    }
    arr.push_back(std::move(j));
  }
  doc["rows"] = std::move(arr);
  return doc;
}

}  // namespace h2oflex
