// An experiment suite (experiments/suites/*.yaml): rows that reproduce a table. Each row names
// its hardware profile, carries a run-config fragment (`config:`) and what the reference
// reported. Schema: experiments/README.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "experiments/common/output_paths.h"
#include "policy/cost_model.h"
#include "policy/kv_policy.h"
#include "policy/run_policy.h"

namespace h2oflex {

struct SuiteRow {
  int index = 0;      // position in `rows:` (0-based)
  std::string where;  // "rows[3] (label)" for messages
  std::string label;
  std::string system;            // h2oflex, flexgen, h2o, hf_accelerate, deepspeed, ...
  std::string hardware_profile;  // resolved path ("" = none)
  std::optional<double> published_tok_s;
  std::string published_batch;  // as the reference wrote it, e.g. "144 (cpu)"
  // How the reference measured decode; first_decode_step = FlexGen's fewer_batch/cut-gen-len.
  policy::DecodeContext published_context = policy::DecodeContext::Mean;
  bool predict = true;         // false: the row only carries its published number
  bool measure = true;         // false: never run, even without --predict
  std::optional<double> band;  // |predicted/published - 1| <= band is expected
  YAML::Node config;           // run-config fragment (model, prompt_len, gen_len, policy, ...)
  // A peer row runs another system on the same shapes instead of h2oflex: `script` (a path
  // relative to the suite file) is run as `python script --model M --batch B --prompt-len P
  // --gen-len G [--key value for each of args] --json OUT` and prints h2oflex's result keys.
  struct Peer {
    std::string script;                                     // resolved path
    std::vector<std::pair<std::string, std::string>> args;  // e.g. {dtype, f32}
  };
  std::optional<Peer> peer;
  // `memory_cap: 2GiB`: the row runs as a child process in a memory cgroup of this limit, after
  // the page cache is dropped (experiments/suite/memory_cap.h); give it to both rows of a
  // comparison (or in `defaults:`) so that both get the same memory. Skipped where no cgroup can
  // be made.
  std::optional<uint64_t> memory_cap;
  // Labels of other rows: this row's measured throughput is divided by the fastest of theirs
  // (`versus: label` or `versus: [label, ...]`: a peer's best dtype differs from CPU to CPU).
  std::vector<std::string> versus;
  // Convenience copies from `config`, and its sections the cost model reads, parsed once when
  // the suite is loaded.
  std::string model;
  int prompt_len = 0, gen_len = 0;
  std::optional<policy::PolicySection> policy;  // absent: everything in the compute tier
  policy::KvPolicy kv;
  policy::HardwareLimits hardware;
};

struct Suite {
  std::string path;
  std::string name;
  std::string description;
  int repeats = 1;  // measured runs per row, interleaved round by round (median reported)
  std::vector<SuiteRow> rows;
};

// Loads and validates a suite; errors name the file, the row and the key.
Suite load_suite(const std::string& path);
Suite parse_suite(const YAML::Node& root, const std::string& path);

// Every file a suite run reads: the suite, each row's hardware profile and peer script, and every
// file of each row's model directory (for check_output_paths).
std::vector<NamedPath> suite_inputs(const Suite& suite);

}  // namespace h2oflex
