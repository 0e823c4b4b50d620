// The Python package's native module, h2oflex._h2oflex: the same engine and the same code paths as
// the h2oflex executable — a generate session over a run config given as data, the request
// parser of `generate`'s input lines, eval's perplexity, and `run` — with the GIL released while
// the engine works, Ctrl-C checked between blocks, and the project's errors raised as Python's
// (InputError -> ValueError, IoError -> OSError) with the same messages.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "experiments/common/run_config.h"
#include "experiments/eval/eval_setup.h"
#include "experiments/eval/perplexity.h"
#include "experiments/generate/generate_requests.h"
#include "experiments/generate/generate_session.h"
#include "experiments/generate/request_line.h"
#include "experiments/run/run_command.h"
#include "runtime/core/error.h"

namespace py = pybind11;

namespace h2oflex::python {
namespace {

// A document of the C++ side as a Python object (through the json module: one converter).
py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

// The config keys, given by Python as JSON text (JSON is YAML), as the run config's YAML root.
YAML::Node config_node(const std::string& config_json, const std::string& label) {
  try {
    return YAML::Load(config_json);
  } catch (const YAML::Exception& e) {
    throw InputError(label + ": the config is not a mapping of plain values: " + e.what());
  }
}

// Ctrl-C between blocks: a pending KeyboardInterrupt stops the run (the GIL is taken only to
// look), and the caller raises it once the engine has returned.
bool interrupted_by_python() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

class Session {
 public:
  // `config_path` (may be empty): a YAML run config whose keys `config_json`'s replace.
  Session(const std::string& config_json, const std::string& config_path,
          const std::string& label) {
    JobConfigSource source;
    source.command = "h2oflex.LLM";
    source.config_path = config_path;
    source.inline_config = config_node(config_json, label);
    source.inline_label = label;
    RunConfig config = generate::load_generate_config(source);
    check_run_paths(config);
    py::gil_scoped_release release;
    session_ = std::make_unique<generate::GenerateSession>(std::move(config), "h2oflex.LLM");
  }

  // `lines`: one request per element, in the JSON of a `generate` input line.
  py::dict generate(const std::vector<std::string>& lines, bool group_by_length,
                    const py::object& progress) {
    std::vector<generate::GenerateRequest> requests;
    for (size_t i = 0; i < lines.size(); ++i) {
      generate::ParsedLine parsed =
          generate::parse_request_line(lines[i], static_cast<int64_t>(i) + 1);
      if (parsed.error) {
        throw InputError("request " + std::to_string(i) + ": " + parsed.error->reason);
      }
      requests.push_back(std::move(*parsed.request));
    }
    generate::GenerateCallbacks callbacks;
    bool stopped_by_python = false;
    callbacks.stop_requested = [&] {
      stopped_by_python = interrupted_by_python();
      return stopped_by_python;
    };
    if (!progress.is_none()) {
      callbacks.progress = [&progress](int64_t done, int64_t total, int64_t tokens) {
        py::gil_scoped_acquire gil;
        progress(done, total, tokens);
      };
    }
    const generate::EngineTotals before = session_->engine().totals();
    generate::GenerateRun run;
    {
      py::gil_scoped_release release;
      run = generate::generate_requests(*session_, requests, group_by_length, callbacks);
    }
    if (stopped_by_python) throw py::error_already_set();
    nlohmann::json results = nlohmann::json::array();
    for (const generate::RequestResult& r : run.results) {
      results.push_back({{"id", r.id},
                         {"text", r.text},
                         {"token_ids", r.token_ids},
                         {"prompt_tokens", r.prompt_tokens},
                         {"prompt_dropped_bytes", r.prompt_dropped_bytes},
                         {"completion_tokens", r.completion_tokens},
                         {"finish_reason", r.finish_reason}});
    }
    // This call's share of the session's totals.
    const generate::EngineTotals& after = session_->engine().totals();
    generate::EngineTotals call;
    for (const auto& [link, bytes] : after.bytes_moved) {
      const auto was = before.bytes_moved.find(link);
      call.bytes_moved[link] = bytes - (was == before.bytes_moved.end() ? 0 : was->second);
    }
    call.kv_slots = after.kv_slots - before.kv_slots;
    call.kv_full_slots = after.kv_full_slots - before.kv_full_slots;
    const double s = run.summary.generate_s;
    nlohmann::json stats = {{"requests", requests.size()},
                            {"blocks_run", run.summary.blocks_run},
                            {"block_size", run.block_size},
                            {"completion_tokens", run.summary.completion_tokens},
                            {"generate_s", s},
                            {"tokens_per_s", s > 0 ? run.summary.completion_tokens / s : 0.0},
                            {"prompt_tokens", run.cost.prompt_tokens},
                            {"padded_prompt_tokens", run.cost.padded_prompt_tokens},
                            {"kv", session_->config().kv_policy.summary()},
                            {"bytes_moved", call.bytes_moved},
                            {"kv_kept", call.kv_kept()},
                            {"engine", session_->engine().describe()},
                            {"interrupted", run.summary.interrupted}};
    py::dict out;
    out["results"] = to_python(results);
    out["stats"] = to_python(stats);
    return out;
  }

  py::object eval_perplexity(const std::string& text, std::optional<int64_t> window,
                             std::optional<int64_t> stride, const std::string& context) {
    const DecoderModel& m = *session_->model().model;
    const eval::ContextReading reading =
        eval::context_reading(context, session_->config().kv_policy);
    size_t dropped = 0;
    const std::vector<int32_t> tokens =
        session_->tokenizer().encode(text, /*add_bos=*/false, &dropped);
    H2OFLEX_INPUT_CHECK(!tokens.empty(), "eval_perplexity: the text has no tokens");
    const eval::WindowShape shape =
        eval::resolve_window_shape(window, stride, m.max_positions(), "window", "stride");
    eval::PerplexityResult r;
    {
      py::gil_scoped_release release;
      r = eval::text_perplexity(tokens, eval::scoring_bos(session_->tokenizer(), m), shape.window,
                                shape.stride, session_->config().kv_policy, session_->engine(),
                                reading);
    }
    nlohmann::json j = {
        {"perplexity", r.perplexity}, {"nll_mean", r.nll_mean},
        {"tokens", r.nll.size()},     {"windows", r.windows.size()},
        {"window", shape.window},     {"stride", shape.stride},
        {"dropped_bytes", dropped},   {"kv", session_->config().kv_policy.summary()}};
    return to_python(j);
  }

  std::string describe() const {
    return session_->model().description + "; " + session_->engine().describe();
  }

 private:
  std::unique_ptr<generate::GenerateSession> session_;
};

// `h2oflex run` on a config given as JSON text (one configuration) or a file (its variants).
py::object run_experiment(const std::string& config_json, const std::string& path, bool plan_only) {
  std::vector<RunConfig> configs;
  if (!path.empty()) {
    configs = load_run_config_variants(path, {});
  } else {
    configs.push_back(parse_run_config(config_node(config_json, "h2oflex.run_experiment"),
                                       "h2oflex.run_experiment"));
  }
  std::vector<nlohmann::json> results;
  for (const RunConfig& config : configs) {
    check_run_paths(config);
    nlohmann::json r;
    {
      py::gil_scoped_release release;
      r = run_experiment_config(config, plan_only);
    }
    r["name"] = config.name;
    results.push_back(std::move(r));
  }
  return to_python(results.size() == 1 ? results.front() : nlohmann::json{{"variants", results}});
}

}  // namespace
}  // namespace h2oflex::python

PYBIND11_MODULE(_h2oflex, m) {
  using h2oflex::python::Session;
  m.doc() = "h2oflex's native module (use the h2oflex package)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const h2oflex::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const h2oflex::IoError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    }
  });
  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::string&, const std::string&>(),
           py::arg("config_json"), py::arg("config_path"), py::arg("label"))
      .def("generate", &Session::generate, py::arg("lines"), py::arg("group_by_length"),
           py::arg("progress"))
      .def("eval_perplexity", &Session::eval_perplexity, py::arg("text"), py::arg("window"),
           py::arg("stride"), py::arg("context"))
      .def("describe", &Session::describe);
  m.def("run_experiment", &h2oflex::python::run_experiment, py::arg("config_json"), py::arg("path"),
        py::arg("plan_only"));
}
