// Multiple-choice tasks scored by log-likelihood in lm-eval-harness's convention: a context and
// its choices, each scored as the continuation of the context; trailing whitespace of the
// context moves to the front of the continuation; the continuation's tokens are those the
// whole text has beyond the context's own tokens. `acc` takes the choice of highest
// log-likelihood, `acc_norm` the highest per character of the choice.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/eval/token_scorer.h"
#include "experiments/generate/request_line.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex::eval {

struct ChoiceTask {
  std::string id;
  std::string context;
  std::string question;  // after the context (may be empty): read by ContextReading's
                         // PrefillContext token by token after the context's prefill
  std::string group;     // accuracy is also reported per group (may be empty)
  std::vector<std::string> choices;
  int answer = 0;
  int64_t line = 0;  // 1-based line of the tasks file
};

struct ParsedTasks {
  std::vector<ChoiceTask> tasks;
  std::vector<generate::LineError> errors;  // lines that are no task, with the reason
};

// One JSON object per line: {"id", "context", "choices": [...], "answer": i}, optionally
// "question" (text after the context; the scored text before a choice is context + question)
// and "group" (a label; accuracy is reported per group too); blank lines are skipped; any other
// field, a missing or mistyped one, no choices, an empty choice, an answer out of range or a
// repeated id makes the line an error (the other lines are still scored).
ParsedTasks read_choice_tasks(const std::string& path);

struct TaskScore {
  std::vector<double> loglik;  // per choice: sum of its tokens' log-probabilities
  std::vector<int> tokens;     // per choice: its continuation tokens
  int pred = 0, pred_norm = 0;
};

struct GroupAccuracy {
  std::string group;
  int n = 0;
  double acc = 0, acc_norm = 0;
};

struct ChoiceResult {
  std::vector<TaskScore> scores;  // per task
  double acc = 0, acc_norm = 0;
  std::vector<GroupAccuracy> groups;  // per group, in order of first appearance (none: no groups)
  // Tasks whose choices are one token each are scored from one sequence (the choices differ
  // only in the token scored at its last position): lm-eval-harness shares them the same way.
  size_t single_token_tasks = 0;
  size_t sequences = 0;       // scored sequences in all
  std::vector<KvRule> rules;  // per scored sequence, in task order
  size_t longest = 0;         // tokens of the longest scored sequence (BOS included)
  // Bytes the vocabulary has no token for, over the scored texts (each context + choice).
  size_t dropped_bytes = 0;
};

// The tasks that can be scored: a task whose choice adds no tokens to the context's, or whose
// longest sequence (BOS, context, choice) exceeds `max_positions`, goes to `errors` with its line
// and id, so one bad task costs itself, not the run.
std::vector<ChoiceTask> scorable_tasks(std::vector<ChoiceTask> tasks, const BpeTokenizer& tokenizer,
                                       int32_t bos, int64_t max_positions,
                                       std::vector<generate::LineError>& errors);

// Each choice must add tokens to the context's (InputError naming the task otherwise; tasks from
// scorable_tasks do).
ChoiceResult score_choice_tasks(const std::vector<ChoiceTask>& tasks, const BpeTokenizer& tokenizer,
                                int32_t bos, const policy::KvPolicy& kv,
                                generate::BlockEngine& engine,
                                ContextReading reading = ContextReading::Stream);

// {"group": {"acc", "acc_norm", "n"}, ...} in the groups' order: eval choice's and the
// suite's reports.
nlohmann::ordered_json groups_json(const std::vector<GroupAccuracy>& groups);

// Characters (UTF-8 code points) of a choice: acc_norm's length.
size_t utf8_length(const std::string& s);

}  // namespace h2oflex::eval
