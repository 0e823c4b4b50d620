// One line of a JSONL input (generate's requests, eval's tasks), parsed the same way for both:
// a number beyond double (1e400) or malformed JSON is a reason, never an exception, and a key
// written twice in one object is refused — the JSON library would keep the last value silently,
// where the YAML configs already refuse a repeated key.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace h2oflex::generate {

// The parsed line, or "" and `reason` set to why it is not JSON (or holds a key twice).
// Never throws for bad content. `Json` is nlohmann::json or nlohmann::ordered_json (the chat
// requests keep a message's keys in the order written); both are instantiated in json_line.cc.
template <typename Json>
bool parse_json_line(std::string_view text, Json& out, std::string& reason);

}  // namespace h2oflex::generate
