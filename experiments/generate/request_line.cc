#include "experiments/generate/request_line.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "experiments/common/sampling_checks.h"
#include "experiments/generate/json_line.h"

namespace h2oflex::generate {

namespace {

// Ordered, so a message's keys reach the chat template in the order they were written.
using json = nlohmann::ordered_json;

// Thrown inside this file only: one bad field ends the line's parsing.
struct FieldError {
  std::string reason;
};

bool absent(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null();
}

std::string read_id(const json& value, const std::string& key, bool& numeric) {
  numeric = value.is_number_integer();
  if (value.is_string()) {
    std::string id = value.get<std::string>();
    if (id.empty()) throw FieldError{"'" + key + "' is empty"};
    return id;
  }
  if (value.is_number_integer()) return value.dump();  // 42 and -7 keep their digits
  throw FieldError{"'" + key + "' must be a string or an integer, got " + value.dump()};
}

// A string, or one prompt of token ids (OpenAI's token-array prompt), read as given.
void read_prompt(const json& obj, const std::string& key, GenerateRequest& r) {
  auto it = obj.find("prompt");
  if (it == obj.end() || it->is_null()) throw FieldError{"missing '" + key + "'"};
  if (it->is_string()) {
    r.prompt = it->get<std::string>();
    return;
  }
  if (it->is_array() && !it->empty() &&
      std::all_of(it->begin(), it->end(), [](const json& t) { return t.is_number_integer(); })) {
    std::vector<int32_t> ids;
    for (const json& t : *it) {
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
        throw FieldError{"'" + key + "' holds " + t.dump() + ", not a token id"};
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    r.prompt_ids = std::move(ids);
    return;
  }
  throw FieldError{"'" + key +
                   "' must be a string or a non-empty list of token ids (lists of prompts are "
                   "not supported), got " +
                   it->dump()};
}

// A non-empty list of {"role": string, "content": string, ...}.
json read_messages(const json& value, const std::string& key) {
  if (!value.is_array() || value.empty()) {
    throw FieldError{"'" + key + "' must be a non-empty list of {role, content}, got " +
                     value.dump()};
  }
  for (size_t k = 0; k < value.size(); ++k) {
    const std::string at = key + "[" + std::to_string(k) + "]";
    const json& m = value[k];
    if (!m.is_object()) throw FieldError{"'" + at + "' must be an object, got " + m.dump()};
    for (const char* field : {"role", "content"}) {
      auto it = m.find(field);
      if (it == m.end() || it->is_null()) throw FieldError{"missing '" + at + "." + field + "'"};
      if (!it->is_string()) {
        throw FieldError{
            "'" + at + "." + field + "' must be a string" +
            (std::string(field) == "content" ? " (content parts are not supported)" : "") +
            ", got " + std::string(it->type_name())};
      }
    }
  }
  return value;
}

float read_number(const json& value, const std::string& key) {
  if (!value.is_number()) {
    throw FieldError{"'" + key + "' must be a number, got " + value.dump()};
  }
  const double v = value.get<double>();
  if (!std::isfinite(v)) throw FieldError{"'" + key + "' must be finite"};
  return static_cast<float>(v);
}

int read_max_tokens(const json& value, const std::string& key) {
  if (!value.is_number_integer()) {
    throw FieldError{"'" + key + "' must be an integer, got " + value.dump()};
  }
  const int64_t v = value.get<int64_t>();
  if (v < 1 || v > std::numeric_limits<int>::max()) {
    throw FieldError{"'" + key + "' must be >= 1, got " + value.dump()};
  }
  return static_cast<int>(v);
}

std::vector<std::string> read_stop(const json& value, const std::string& key) {
  std::vector<std::string> stop;
  auto add = [&](const json& s) {
    if (!s.is_string()) {
      throw FieldError{"'" + key + "' must be a string or a list of strings, got " + s.dump()};
    }
    if (s.get_ref<const std::string&>().empty()) {
      throw FieldError{"'" + key + "' contains an empty string"};
    }
    stop.push_back(s.get<std::string>());
  };
  if (value.is_array()) {
    for (const json& s : value) add(s);
  } else {
    add(value);
  }
  return stop;
}

// OpenAI's {"token id": bias}: ids as decimal strings, biases in [-100, 100].
std::vector<std::pair<int32_t, float>> read_logit_bias(const json& value,
                                                       const std::string& prefix) {
  const std::string key = prefix + "logit_bias";
  if (!value.is_object()) {
    throw FieldError{"'" + key + "' must be an object {\"token id\": bias}, got " + value.dump()};
  }
  std::vector<std::pair<int32_t, float>> out;
  for (const auto& [id_text, bias] : value.items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(id_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != id_text.size() || id < 0 || id > std::numeric_limits<int32_t>::max()) {
      throw FieldError{"'" + key + "' key '" + id_text + "' is not a token id"};
    }
    if (!bias.is_number() || !(bias.get<double>() >= -100 && bias.get<double>() <= 100)) {
      throw FieldError{"'" + key + "' of token " + id_text + " must be a number in [-100, 100]"};
    }
    out.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias.get<double>()));
  }
  return out;
}

// The fields shared by both formats, read from `obj` (the line, or the batch line's body).
void read_options(const json& obj, const std::string& prefix, const char* max_tokens_key, bool chat,
                  GenerateRequest& r) {
  if (chat) {
    if (!absent(obj, "prompt")) {
      throw FieldError{"'" + prefix + "prompt' and '" + prefix +
                       "messages' both given: a request has one or the other"};
    }
    r.messages = read_messages(obj["messages"], prefix + "messages");
  } else {
    read_prompt(obj, prefix + "prompt", r);
  }
  if (!absent(obj, max_tokens_key)) {
    r.max_new_tokens = read_max_tokens(obj[max_tokens_key], prefix + max_tokens_key);
  }
  if (!absent(obj, "temperature")) {
    const float t = read_number(obj["temperature"], prefix + "temperature");
    if (t < 0) throw FieldError{"'" + prefix + "temperature' must be >= 0"};
    r.temperature = t;
  }
  if (!absent(obj, "top_p")) {
    const json& p = obj["top_p"];
    if (!p.is_number()) throw FieldError{"'" + prefix + "top_p' must be a number, got " + p.dump()};
    const std::string why = top_p_problem(p.get<double>());
    if (!why.empty()) throw FieldError{"'" + prefix + "top_p' " + why};
    r.top_p = static_cast<float>(p.get<double>());
  }
  if (!absent(obj, "stop")) r.stop = read_stop(obj["stop"], prefix + "stop");
  if (!absent(obj, "logit_bias")) r.logit_bias = read_logit_bias(obj["logit_bias"], prefix);
  if (!absent(obj, "presence_penalty")) {
    const float p = read_number(obj["presence_penalty"], prefix + "presence_penalty");
    if (!(p >= -2 && p <= 2)) {
      throw FieldError{"'" + prefix + "presence_penalty' must be in [-2, 2]"};
    }
    r.presence_penalty = p;
  }
  if (!absent(obj, "seed")) {
    const json& v = obj["seed"];
    if (!v.is_number_unsigned()) {
      throw FieldError{"'" + prefix + "seed' must be an integer >= 0, got " + v.dump()};
    }
    r.seed = v.get<uint64_t>();
  }
}

// Every field a line may hold is one this command honours: a field it would ignore (OpenAI's
// echo, logprobs, best_of, frequency_penalty, ...) would change what the caller expects silently.
void refuse_unknown_fields(const json& obj, const std::string& prefix,
                           std::initializer_list<const char*> known) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw FieldError{"field '" + prefix + key + "' is not supported (known: " + list + ")"};
    }
  }
}

void read_batch_line(const json& line, GenerateRequest& r) {
  if (absent(line, "custom_id")) throw FieldError{"missing 'custom_id'"};
  r.id = read_id(line["custom_id"], "custom_id", r.numeric_id);
  if (!absent(line, "method")) {
    const json& m = line["method"];
    if (!m.is_string() || m.get<std::string>() != "POST") {
      throw FieldError{"'method' must be \"POST\", got " + m.dump()};
    }
  }
  if (absent(line, "body")) throw FieldError{"missing 'body'"};
  refuse_unknown_fields(line, "", {"custom_id", "method", "url", "body"});
  const json& body = line["body"];
  if (!body.is_object()) throw FieldError{"'body' must be an object"};
  // The url names the kind of request; without one, the body's "messages" does.
  bool chat = !absent(body, "messages");
  if (!absent(line, "url")) {
    const json& u = line["url"];
    const bool completions = u.is_string() && u.get<std::string>() == "/v1/completions";
    const bool chat_url = u.is_string() && u.get<std::string>() == "/v1/chat/completions";
    if (!completions && !chat_url) {
      throw FieldError{"'url' " + u.dump() +
                       " is not supported: only \"/v1/completions\" (with a prompt) and "
                       "\"/v1/chat/completions\" (with messages)"};
    }
    if (completions && chat) {
      throw FieldError{
          "'body.messages' is for \"/v1/chat/completions\"; \"/v1/completions\" "
          "takes 'body.prompt'"};
    }
    if (chat_url && !chat) throw FieldError{"missing 'body.messages'"};
  }
  // `model` names the model the file was written for; the job's model is --model.
  refuse_unknown_fields(body, "body.",
                        {"prompt", "messages", "model", "max_tokens", "temperature", "top_p",
                         "stop", "n", "seed", "logit_bias", "presence_penalty"});
  if (!absent(body, "n") && body["n"] != json(1)) {
    throw FieldError{"'body.n' " + body["n"].dump() + " is not supported (one completion each)"};
  }
  read_options(body, "body.", "max_tokens", chat, r);
}

}  // namespace

ParsedLine parse_request_line(std::string_view text, int64_t line) {
  ParsedLine out;
  json doc;
  std::string reason;
  if (!parse_json_line(text, doc, reason)) {
    out.error = LineError{line, "", reason};
    return out;
  }
  if (!doc.is_object()) {
    out.error = LineError{line, "", "expected a JSON object, got " + std::string(doc.type_name())};
    return out;
  }
  GenerateRequest r;
  r.line = line;
  try {
    const bool batch_format = doc.contains("custom_id") || doc.contains("body");
    if (batch_format) {
      read_batch_line(doc, r);
    } else {
      if (absent(doc, "id")) throw FieldError{"missing 'id'"};
      r.id = read_id(doc["id"], "id", r.numeric_id);
      refuse_unknown_fields(doc, "",
                            {"id", "prompt", "messages", "max_new_tokens", "temperature", "top_p",
                             "stop", "seed", "logit_bias", "presence_penalty"});
      read_options(doc, "", "max_new_tokens", !absent(doc, "messages"), r);
    }
  } catch (const FieldError& e) {
    out.error = LineError{line, r.id, e.reason};
    return out;
  }
  out.request = std::move(r);
  return out;
}

}  // namespace h2oflex::generate
