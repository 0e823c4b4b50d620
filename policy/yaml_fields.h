// Strict reading of YAML mappings: every key known, every value of the right type, and every
// error naming the full key path ("policy.weights.gpu") and, where known, the line.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <yaml-cpp/yaml.h>

namespace h2oflex::policy {

// "policy" + "weights" -> "policy.weights".
std::string key_path(const std::string& parent, const std::string& key);
// " (line 12)" when the node came from a file, else "".
std::string line_of(const YAML::Node& node);

// Throws InputError unless `node` is a mapping whose keys are all in `allowed`.
void require_mapping(const YAML::Node& node, const std::string& path,
                     std::initializer_list<const char*> allowed);
// Throws InputError unless `node` is a mapping (any keys).
void require_mapping(const YAML::Node& node, const std::string& path);

// Typed scalars. Throw InputError "path: 'value' is not <type>".
double read_double(const YAML::Node& node, const std::string& path);
int64_t read_int(const YAML::Node& node, const std::string& path);
bool read_bool(const YAML::Node& node, const std::string& path);
std::string read_string(const YAML::Node& node, const std::string& path);
// A byte size: a plain integer or a string like "16GiB".
uint64_t read_byte_size(const YAML::Node& node, const std::string& path);

// Parses YAML text (`source` names it in messages). Throws InputError with line and column when
// it is malformed, and naming both places when a mapping holds a key twice (yaml-cpp would keep
// the first silently, so a later correction in the same file would be ignored).
YAML::Node parse_yaml_text(const std::string& text, const std::string& source);
// Reads and parses a YAML file; `what` ("config file", "hardware profile") names it in messages
// when it is missing, a directory or unreadable.
YAML::Node load_yaml_file(const std::string& path, const std::string& what);

}  // namespace h2oflex::policy
