#include "policy/yaml_fields.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <yaml-cpp/eventhandler.h>

#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex::policy {

std::string key_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

namespace {

// Quoted: a scalar is file content, possibly a whole file of garbage.
std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return quote_excerpt(node.Scalar());
  if (node.IsMap()) return "<mapping>";
  if (node.IsSequence()) return "<list>";
  return "<null>";
}

[[noreturn]] void type_error(const YAML::Node& node, const std::string& path, const char* type) {
  throw InputError(detail::concat(path, ": ", scalar_text(node), " is not ", type, line_of(node)));
}

}  // namespace

void require_mapping(const YAML::Node& node, const std::string& path) {
  H2OFLEX_INPUT_CHECK(node.IsMap(), path, ": expected a mapping, got ", scalar_text(node),
                      line_of(node));
}

void require_mapping(const YAML::Node& node, const std::string& path,
                     std::initializer_list<const char*> allowed) {
  require_mapping(node, path);
  for (const auto& kv : node) {
    H2OFLEX_INPUT_CHECK(kv.first.IsScalar(), path, ": a key that is not a name", line_of(kv.first));
    const std::string key = kv.first.Scalar();
    const bool known =
        std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      throw InputError(detail::concat(key_path(path, key), ": unknown key", line_of(kv.first),
                                      "; known keys: ", list));
    }
  }
}

double read_double(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a number");
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    type_error(node, path, "a number");
  }
}

int64_t read_int(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "an integer");
  try {
    return node.as<int64_t>();
  } catch (const YAML::Exception&) {
    type_error(node, path, "an integer");
  }
}

bool read_bool(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a boolean (true/false)");
  try {
    return node.as<bool>();
  } catch (const YAML::Exception&) {
    type_error(node, path, "a boolean (true/false)");
  }
}

std::string read_string(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a string");
  return node.Scalar();
}

uint64_t read_byte_size(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a byte size");
  return parse_byte_size(node.Scalar(), path + line_of(node));
}

namespace {

std::string place(const YAML::Mark& m) {
  return detail::concat("line ", m.line + 1, ", column ", m.column + 1);
}

// Watches the parser's events (aliases unexpanded, so an alias bomb costs nothing here) and
// throws at the second occurrence of a scalar key in one mapping.
class DuplicateKeyCheck : public YAML::EventHandler {
 public:
  explicit DuplicateKeyCheck(std::string source) : source_(std::move(source)) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { item(); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { item(); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    if (!frames_.empty() && frames_.back().is_map && frames_.back().expect_key) {
      const auto [it, fresh] = frames_.back().keys.emplace(value, mark);
      H2OFLEX_INPUT_CHECK(fresh, source_, ": duplicate key ", quote_excerpt(value), " at ",
                          place(it->second), " and ", place(mark));
    }
    item();
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    item();
    frames_.emplace_back();
  }
  void OnSequenceEnd() override { frames_.pop_back(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    item();
    frames_.emplace_back().is_map = true;
  }
  void OnMapEnd() override { frames_.pop_back(); }

 private:
  struct Frame {
    bool is_map = false;
    bool expect_key = true;  // in a mapping, items alternate key, value
    std::map<std::string, YAML::Mark> keys;
  };
  // One node of the enclosing collection is complete (or, for a collection, started).
  void item() {
    if (!frames_.empty() && frames_.back().is_map) {
      frames_.back().expect_key = !frames_.back().expect_key;
    }
  }

  std::string source_;
  std::vector<Frame> frames_;
};

}  // namespace

YAML::Node parse_yaml_text(const std::string& text, const std::string& source) {
  try {
    std::istringstream events(text);
    YAML::Parser parser(events);
    DuplicateKeyCheck check(source);
    // The first document only, as YAML::Load reads: looping until the parser reports no more
    // documents never ends on some malformed text (a lone ",", found by fuzzing).
    parser.HandleNextDocument(check);
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(detail::concat(source, ": malformed YAML at ", place(e.mark), ": ", e.msg));
  }
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  H2OFLEX_INPUT_CHECK(std::filesystem::exists(path, ec), what, " '", path, "' does not exist");
  H2OFLEX_INPUT_CHECK(!std::filesystem::is_directory(path, ec), what, " '", path,
                      "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read ", what, " '", path, "': ", std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  H2OFLEX_INPUT_CHECK(!in.bad(), "cannot read ", what, " '", path, "': ", std::strerror(errno));
  return parse_yaml_text(text.str(), path);
}

}  // namespace h2oflex::policy
