#include "experiments/generate/json_line.h"

#include <set>
#include <vector>

namespace h2oflex::generate {

template <typename Json>
bool parse_json_line(std::string_view text, Json& out, std::string& reason) {
  using json = Json;
  // The keys seen so far in each object being read, innermost last.
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  const typename json::parser_callback_t watch_keys =
      [&](int /*depth*/, typename json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) {
          open_objects.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
          if (!open_objects.empty()) open_objects.pop_back();
        } else if (event == json::parse_event_t::key && !open_objects.empty() && repeated.empty()) {
          const std::string key = parsed.template get<std::string>();
          if (!open_objects.back().insert(key).second) repeated = key;
        }
        return true;
      };
  try {
    out = json::parse(text, watch_keys);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, or out_of_range for a number beyond double (1e400) anywhere in the line.
    // Drop the library's "[json.exception.parse_error.101] " tag; keep position and cause.
    std::string msg = e.what();
    if (const size_t close = msg.find("] ");
        msg.rfind("[json.exception", 0) == 0 && close != std::string::npos) {
      msg = msg.substr(close + 2);
    }
    reason = "invalid JSON: " + msg;
    return false;
  }
  if (!repeated.empty()) {
    reason = "key '" + repeated + "' appears twice in one object (which one is meant?)";
    return false;
  }
  return true;
}

template bool parse_json_line(std::string_view, nlohmann::json&, std::string&);
template bool parse_json_line(std::string_view, nlohmann::ordered_json&, std::string&);

}  // namespace h2oflex::generate
