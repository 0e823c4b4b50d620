#include "experiments/eval/choice_tasks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <unordered_map>

#include "experiments/generate/json_line.h"
#include "runtime/core/error.h"

namespace h2oflex::eval {

namespace {

bool is_blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// The task on one line, or the reason it is none. `id` is filled as soon as it is read.
std::string parse_task(const std::string& text, ChoiceTask& t) {
  nlohmann::json j;
  std::string invalid;
  if (!generate::parse_json_line(text, j, invalid)) return invalid;
  if (!j.is_object())
    return "expected a JSON object {\"id\", \"context\", \"choices\", \"answer\"}";
  if (j.contains("id")) {
    if (j["id"].is_string()) {
      t.id = j["id"].get<std::string>();
    } else if (j["id"].is_number_integer()) {
      t.id = std::to_string(j["id"].get<int64_t>());
    } else {
      return "'id' must be a string or an integer";
    }
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "id" && key != "context" && key != "choices" && key != "answer" &&
        key != "question" && key != "group") {
      return "unknown field '" + key +
             "' (a task has id, context, choices, answer; optionally question, group)";
    }
  }
  for (const char* key : {"id", "context", "choices", "answer"}) {
    if (!j.contains(key)) return std::string("missing field '") + key + "'";
  }
  if (!j["context"].is_string()) return "'context' must be a string";
  t.context = j["context"].get<std::string>();
  for (auto [key, field] : {std::pair{"question", &t.question}, std::pair{"group", &t.group}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_string()) return std::string("'") + key + "' must be a string";
    *field = j[key].get<std::string>();
  }
  if (!j["choices"].is_array()) return "'choices' must be a list of strings";
  if (j["choices"].empty()) return "'choices' is empty";
  for (size_t i = 0; i < j["choices"].size(); ++i) {
    const nlohmann::json& c = j["choices"][i];
    if (!c.is_string()) return detail::concat("'choices'[", i, "] is not a string");
    if (c.get<std::string>().empty()) return detail::concat("'choices'[", i, "] is empty");
    t.choices.push_back(c.get<std::string>());
  }
  if (!j["answer"].is_number_integer()) return "'answer' must be an integer";
  const int64_t a = j["answer"].get<int64_t>();
  if (a < 0 || a >= static_cast<int64_t>(t.choices.size())) {
    return detail::concat("'answer' ", a, " is not an index of the ", t.choices.size(), " choices");
  }
  t.answer = static_cast<int>(a);
  return "";
}

// The scored sequences of a task, or why it has none: one per choice (BOS, context, question,
// choice), or one in all when every choice is one token after the same prefix (the others then
// in its last_alternatives). `tokens` gets each choice's continuation tokens; `dropped_bytes`,
// when given, gains the bytes of each text the vocabulary cannot spell.
std::string task_sequences(const ChoiceTask& t, const BpeTokenizer& tokenizer, int32_t bos,
                           std::vector<ScoredSequence>& seqs, std::vector<int>& tokens,
                           size_t* dropped_bytes = nullptr) {
  // lm-eval-harness: "Question: x " + "y" is scored as "Question: x" + " y".
  const std::string head = t.context + t.question;
  const size_t kept = head.find_last_not_of(" \t\n\r");
  const std::string prefix = kept == std::string::npos ? "" : head.substr(0, kept + 1);
  const std::string spaces = head.substr(prefix.size());
  const std::vector<int32_t> ctx = tokenizer.encode(prefix, /*add_bos=*/false);
  // Where the context ends among the prefix's tokens: as many leading tokens as the context
  // alone shares with it (a merge across the boundary counts for the question).
  size_t context_end = 0;
  if (!t.question.empty()) {
    const std::vector<int32_t> alone = tokenizer.encode(t.context, false);
    while (context_end < alone.size() && context_end < ctx.size() &&
           alone[context_end] == ctx[context_end]) {
      ++context_end;
    }
    context_end = std::max<size_t>(context_end, 1);
  }
  std::vector<std::vector<int32_t>> wholes;
  for (size_t c = 0; c < t.choices.size(); ++c) {
    size_t dropped = 0;
    wholes.push_back(tokenizer.encode(prefix + spaces + t.choices[c], false, &dropped));
    if (dropped_bytes != nullptr) *dropped_bytes += dropped;
    // As lm-eval-harness: the continuation is what the whole text has beyond the context's
    // token count, even where a merge crosses the boundary.
    if (wholes.back().size() <= ctx.size()) {
      return detail::concat("choice ", c, " adds no tokens to the context's");
    }
    tokens.push_back(static_cast<int>(wholes.back().size() - ctx.size()));
  }
  const bool one_token_each = std::all_of(wholes.begin(), wholes.end(), [&](const auto& w) {
    return w.size() == ctx.size() + 1 && std::equal(ctx.begin(), ctx.end(), w.begin());
  });
  for (size_t c = 0; c < wholes.size(); ++c) {
    if (one_token_each && c > 0) {
      seqs.back().last_alternatives.push_back(wholes[c].back());
      continue;
    }
    ScoredSequence s;
    s.ids.push_back(bos);
    s.ids.insert(s.ids.end(), wholes[c].begin(), wholes[c].end());
    s.first_scored = 1 + ctx.size();
    s.context_end = context_end == 0 ? 0 : 1 + context_end;
    seqs.push_back(std::move(s));
  }
  return "";
}

}  // namespace

nlohmann::ordered_json groups_json(const std::vector<GroupAccuracy>& groups) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const GroupAccuracy& g : groups) {
    j[g.group] = {{"acc", g.acc}, {"acc_norm", g.acc_norm}, {"n", g.n}};
  }
  return j;
}

size_t utf8_length(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

ParsedTasks read_choice_tasks(const std::string& path) {
  std::ifstream in(path);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read tasks file '", path, "'");
  ParsedTasks out;
  std::unordered_map<std::string, int64_t> first_seen;
  std::string text;
  int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (line == 1 && text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 BOM
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (is_blank(text)) continue;
    ChoiceTask t;
    t.line = line;
    std::string reason = parse_task(text, t);
    if (reason.empty()) {
      auto [it, inserted] = first_seen.emplace(t.id, line);
      if (!inserted) reason = detail::concat("duplicate id (first seen on line ", it->second, ")");
    }
    if (!reason.empty()) {
      out.errors.push_back({line, t.id, reason});
      continue;
    }
    out.tasks.push_back(std::move(t));
  }
  H2OFLEX_INPUT_CHECK(in.eof(), "reading tasks file '", path, "' failed after line ", line);
  return out;
}

std::vector<ChoiceTask> scorable_tasks(std::vector<ChoiceTask> tasks, const BpeTokenizer& tokenizer,
                                       int32_t bos, int64_t max_positions,
                                       std::vector<generate::LineError>& errors) {
  std::vector<ChoiceTask> kept;
  for (ChoiceTask& t : tasks) {
    std::vector<ScoredSequence> seqs;
    std::vector<int> tokens;
    std::string reason = task_sequences(t, tokenizer, bos, seqs, tokens);
    size_t longest = 0;
    for (const ScoredSequence& s : seqs) longest = std::max(longest, s.ids.size());
    if (reason.empty() && static_cast<int64_t>(longest) > max_positions) {
      reason = detail::concat("the context and its longest choice are ", longest,
                              " tokens with the BOS, more than the model's context of ",
                              max_positions, " positions");
    }
    if (!reason.empty()) {
      errors.push_back({t.line, t.id, reason});
      continue;
    }
    kept.push_back(std::move(t));
  }
  return kept;
}

ChoiceResult score_choice_tasks(const std::vector<ChoiceTask>& tasks, const BpeTokenizer& tokenizer,
                                int32_t bos, const policy::KvPolicy& kv,
                                generate::BlockEngine& engine, ContextReading reading) {
  std::vector<ScoredSequence> seqs;
  std::vector<size_t> first_seq;  // per task: its first sequence
  ChoiceResult r;
  for (const ChoiceTask& t : tasks) {
    TaskScore score;
    first_seq.push_back(seqs.size());
    const std::string reason =
        task_sequences(t, tokenizer, bos, seqs, score.tokens, &r.dropped_bytes);
    H2OFLEX_INPUT_CHECK(reason.empty(), "task '", t.id, "' (line ", t.line, "): ", reason);
    for (size_t i = first_seq.back(); i < seqs.size(); ++i)
      r.longest = std::max(r.longest, seqs[i].ids.size());
    r.single_token_tasks += seqs.size() - first_seq.back() == 1 && t.choices.size() > 1;
    r.scores.push_back(std::move(score));
  }
  r.sequences = seqs.size();
  const std::vector<SequenceScore> scored = score_sequences(seqs, kv, engine, reading);
  for (const SequenceScore& s : scored) r.rules.push_back(s.rule);
  int correct = 0, correct_norm = 0;
  std::map<std::string, size_t> group_index;
  for (size_t i = 0; i < tasks.size(); ++i) {
    TaskScore& s = r.scores[i];
    const size_t first = first_seq[i];
    const bool shared =
        i + 1 < tasks.size() ? first_seq[i + 1] - first == 1 : seqs.size() - first == 1;
    double best = -INFINITY, best_norm = -INFINITY;
    for (size_t c = 0; c < tasks[i].choices.size(); ++c) {
      // One sequence per choice, or the choices of a one-token task at the shared position.
      const SequenceScore& from = scored[shared ? first : first + c];
      double ll = 0;
      if (shared && c > 0) {
        ll = -from.last_alternatives[c - 1];
      } else {
        for (double x : from.nll) ll -= x;
      }
      s.loglik.push_back(ll);
      const double norm = ll / static_cast<double>(utf8_length(tasks[i].choices[c]));
      if (ll > best) best = ll, s.pred = static_cast<int>(c);
      if (norm > best_norm) best_norm = norm, s.pred_norm = static_cast<int>(c);
    }
    correct += s.pred == tasks[i].answer;
    correct_norm += s.pred_norm == tasks[i].answer;
    if (!tasks[i].group.empty()) {
      auto [it, added] = group_index.emplace(tasks[i].group, r.groups.size());
      if (added) r.groups.push_back({tasks[i].group});
      GroupAccuracy& g = r.groups[it->second];
      ++g.n;
      g.acc += s.pred == tasks[i].answer;
      g.acc_norm += s.pred_norm == tasks[i].answer;
    }
  }
  for (GroupAccuracy& g : r.groups) g.acc /= g.n, g.acc_norm /= g.n;
  const double n = static_cast<double>(tasks.size());
  r.acc = tasks.empty() ? 0 : correct / n;
  r.acc_norm = tasks.empty() ? 0 : correct_norm / n;
  return r;
}

}  // namespace h2oflex::eval
