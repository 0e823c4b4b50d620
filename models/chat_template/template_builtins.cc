#include "models/chat_template/template_builtins.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "models/chat_template/template_error.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::chat_template {

namespace {

using Kind = Value::Kind;

const std::set<std::string> kFilters = {"trim",   "length", "count",   "upper",      "lower",
                                        "tojson", "string", "default", "d",          "first",
                                        "last",   "join",   "list",    "capitalize", "replace",
                                        "int",    "float",  "abs",     "safe",       "items"};
const std::set<std::string> kTests = {"defined",  "undefined", "none",    "string",  "number",
                                      "integer",  "float",     "boolean", "mapping", "iterable",
                                      "sequence", "true",      "false",   "odd",     "even"};
const std::set<std::string> kMethods = {"strip", "lstrip", "rstrip", "startswith", "endswith",
                                        "split", "upper",  "lower",  "replace",    "items",
                                        "keys",  "values", "get"};
const std::set<std::string> kFunctions = {"raise_exception", "namespace", "range"};

// The code points str.isspace() accepts.
bool is_python_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

// Upper and lower case of ASCII text. Python maps every script's letters; rather than differ
// from it on other text, this refuses it.
std::string ascii_case(const std::string& s, bool upper) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      throw RenderFailure{std::string(upper ? "upper" : "lower") +
                          "-casing text beyond ASCII is not supported"};
    }
  }
  std::string out = s;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

const std::string& need_string(const Value& v, const char* what) {
  if (!v.is(Kind::kString)) {
    throw RenderFailure{std::string(what) + " needs a string, got " + type_name(v)};
  }
  return v.s;
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& with,
                        int64_t count) {
  std::string out;
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    size_t hit;
    if (old.empty()) {
      // Python inserts `with` before every code point (and at the end).
      if (pos > s.size()) break;
      out += with;
      if (pos == s.size()) {
        pos = s.size() + 1;
        break;
      }
      const size_t len = tokenizer::decode_utf8_at(s, pos).length;
      out.append(s, pos, len);
      pos += len;
      continue;
    }
    hit = s.find(old, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += with;
    pos = hit + old.size();
  }
  if (pos <= s.size()) out.append(s, pos, std::string::npos);
  return out;
}

List split(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  if (sep == nullptr || sep->is(Kind::kNone)) {
    size_t pos = 0;
    while (true) {
      while (pos < s.size() && is_python_space(tokenizer::decode_utf8_at(s, pos).code_point)) {
        pos += tokenizer::decode_utf8_at(s, pos).length;
      }
      if (pos >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(Value::string(strip_whitespace(s.substr(pos), false, true)));
        break;
      }
      size_t end = pos;
      while (end < s.size() && !is_python_space(tokenizer::decode_utf8_at(s, end).code_point)) {
        end += tokenizer::decode_utf8_at(s, end).length;
      }
      out.push_back(Value::string(s.substr(pos, end - pos)));
      pos = end;
    }
    return out;
  }
  const std::string& by = need_string(*sep, "split()");
  if (by.empty()) throw RenderFailure{"empty separator"};
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t hit = s.find(by, pos);
    if (hit == std::string::npos) break;
    out.push_back(Value::string(s.substr(pos, hit - pos)));
    pos = hit + by.size();
  }
  out.push_back(Value::string(s.substr(pos)));
  return out;
}

const Value* kwarg(const Kwargs& kwargs, const char* name) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

// The argument at `index`, else the keyword `name`, else nullptr.
const Value* argument(const std::vector<Value>& args, const Kwargs& kwargs, size_t index,
                      const char* name) {
  if (index < args.size()) return &args[index];
  return kwarg(kwargs, name);
}

Value items_of(const Value& v) {
  if (!v.is(Kind::kDict)) throw RenderFailure{"items() needs a dict, got " + type_name(v)};
  List out;
  for (const auto& [k, item] : *v.dict) out.push_back(Value::of_list({Value::string(k), item}));
  return Value::of_list(std::move(out));
}

int64_t int_arg(const Value* v, int64_t fallback, const char* what) {
  if (v == nullptr || v->is(Kind::kNone)) return fallback;
  if (!v->is(Kind::kInt)) throw RenderFailure{std::string(what) + " needs an integer"};
  return v->i;
}

}  // namespace

bool is_supported_filter(const std::string& name) {
  return kFilters.count(name) != 0;
}
bool is_supported_test(const std::string& name) {
  return kTests.count(name) != 0;
}
bool is_supported_method(const std::string& name) {
  return kMethods.count(name) != 0;
}
bool is_supported_function(const std::string& name) {
  return kFunctions.count(name) != 0;
}

std::string strip_whitespace(const std::string& s, bool left, bool right) {
  size_t begin = 0;
  size_t end = s.size();
  if (left) {
    while (begin < end) {
      const tokenizer::Utf8Step step = tokenizer::decode_utf8_at(s, begin);
      if (!step.valid || !is_python_space(step.code_point)) break;
      begin += step.length;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;  // back up to the first byte of the last code point
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
      const tokenizer::Utf8Step step = tokenizer::decode_utf8_at(s, start);
      if (!step.valid || start + step.length != end || !is_python_space(step.code_point)) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

Value apply_filter(const std::string& name, const Value& value, const std::vector<Value>& args,
                   const Kwargs& kwargs) {
  if (name == "trim") {
    if (const Value* chars = argument(args, kwargs, 0, "chars"); chars && !chars->is(Kind::kNone)) {
      throw RenderFailure{"trim with characters is not supported"};
    }
    return Value::string(strip_whitespace(to_str(value), true, true));
  }
  if (name == "length" || name == "count") return Value::integer(length(value));
  if (name == "upper") return Value::string(ascii_case(to_str(value), true));
  if (name == "lower") return Value::string(ascii_case(to_str(value), false));
  if (name == "tojson") {
    const Value* indent = argument(args, kwargs, 0, "indent");
    return Value::string(to_json(value, static_cast<int>(int_arg(indent, -1, "tojson indent"))));
  }
  if (name == "string" || name == "safe") {
    return name == "safe" ? value : Value::string(to_str(value));
  }
  if (name == "default" || name == "d") {
    const Value* fallback = argument(args, kwargs, 0, "default_value");
    const Value* boolean = argument(args, kwargs, 1, "boolean");
    const bool use = value.is(Kind::kUndefined) || (boolean && truthy(*boolean) && !truthy(value));
    if (!use) return value;
    return fallback ? *fallback : Value::string("");
  }
  if (name == "first" || name == "last") {
    const List items = iterate(value);
    if (items.empty()) return Value::undefined("no " + name + " item, sequence was empty");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    if (kwarg(kwargs, "attribute")) throw RenderFailure{"join with attribute is not supported"};
    const Value* sep = argument(args, kwargs, 0, "d");
    const std::string by = sep ? to_str(*sep) : "";
    std::string out;
    const List items = iterate(value);
    for (size_t k = 0; k < items.size(); ++k) out += (k ? by : "") + to_str(items[k]);
    return Value::string(out);
  }
  if (name == "list") return Value::of_list(iterate(value));
  if (name == "capitalize") {
    const std::string s = ascii_case(to_str(value), false);
    if (s.empty()) return Value::string(s);
    return Value::string(ascii_case(s.substr(0, 1), true) + s.substr(1));
  }
  if (name == "replace") {
    if (args.size() < 2) throw RenderFailure{"replace needs old and new"};
    return Value::string(replace_all(to_str(value), to_str(args[0]), to_str(args[1]),
                                     int_arg(argument(args, kwargs, 2, "count"), -1, "replace")));
  }
  if (name == "int") {
    if (value.is(Kind::kInt)) return value;
    if (value.is(Kind::kBool)) return Value::integer(value.b ? 1 : 0);
    if (value.is(Kind::kFloat)) return Value::integer(static_cast<int64_t>(std::trunc(value.f)));
    // jinja2: int(text), else int(float(text)), else the default 0.
    const std::string text = strip_whitespace(to_str(value), true, true);
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(text.c_str(), &end, 10);
    if (!text.empty() && end == text.c_str() + text.size() && errno == 0) return Value::integer(i);
    const double f = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(f) &&
        std::fabs(f) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(std::trunc(f)));
    }
    return Value::integer(0);
  }
  if (name == "float") {
    if (value.is_number()) return Value::real(value.is(Kind::kFloat) ? value.f : double(value.i));
    // Python's float(): the whole text must be a number (inf beyond a double's range); else
    // jinja2's default, 0.0.
    const std::string text = strip_whitespace(to_str(value), true, true);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    return Value::real(!text.empty() && end == text.c_str() + text.size() ? v : 0.0);
  }
  if (name == "abs") {
    if (value.is(Kind::kInt)) return Value::integer(value.i < 0 ? -value.i : value.i);
    if (value.is(Kind::kFloat)) return Value::real(std::fabs(value.f));
    throw RenderFailure{"bad operand type for abs(): '" + type_name(value) + "'"};
  }
  if (name == "items") {
    if (value.is(Kind::kUndefined)) return Value::of_list({});
    return items_of(value);
  }
  throw RenderFailure{"no filter named '" + name + "'"};
}

bool apply_test(const std::string& name, const Value& value, const std::vector<Value>&) {
  if (name == "defined") return !value.is(Kind::kUndefined);
  if (name == "undefined") return value.is(Kind::kUndefined);
  if (name == "none") return value.is(Kind::kNone);
  if (name == "string") return value.is(Kind::kString);
  if (name == "number") return value.is_number();
  if (name == "integer") return value.is(Kind::kInt);
  if (name == "float") return value.is(Kind::kFloat);
  if (name == "boolean") return value.is(Kind::kBool);
  if (name == "mapping") return value.is(Kind::kDict);
  if (name == "iterable") {
    return value.is(Kind::kString) || value.is(Kind::kList) || value.is(Kind::kDict) ||
           value.is(Kind::kUndefined);
  }
  if (name == "sequence") {
    return value.is(Kind::kString) || value.is(Kind::kList) || value.is(Kind::kDict);
  }
  if (name == "true") return value.is(Kind::kBool) && value.b;
  if (name == "false") return value.is(Kind::kBool) && !value.b;
  if (name == "odd" || name == "even") {
    if (!value.is(Kind::kInt)) throw RenderFailure{"'" + name + "' test needs an integer"};
    return (((value.i % 2) + 2) % 2 == 1) == (name == "odd");
  }
  throw RenderFailure{"no test named '" + name + "'"};
}

Value call_method(const Value& object, const std::string& name, const std::vector<Value>& args) {
  if (object.is(Kind::kUndefined)) {
    throw RenderFailure{"'" + object.s + "' is undefined"};
  }
  if (object.is(Kind::kString)) {
    const std::string& s = object.s;
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      if (!args.empty() && !args[0].is(Kind::kNone)) {
        throw RenderFailure{name + "() with characters is not supported"};
      }
      return Value::string(strip_whitespace(s, name != "rstrip", name != "lstrip"));
    }
    if (name == "startswith" || name == "endswith") {
      if (args.size() != 1) throw RenderFailure{name + "() takes one argument"};
      List options = args[0].is(Kind::kList) ? *args[0].list : List{args[0]};
      for (const Value& o : options) {
        const std::string& t = need_string(o, name.c_str());
        const bool hit =
            name == "startswith"
                ? s.compare(0, t.size(), t) == 0
                : s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
        if (hit) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") {
      return Value::of_list(split(s, args.empty() ? nullptr : &args[0],
                                  int_arg(args.size() > 1 ? &args[1] : nullptr, -1, "split")));
    }
    if (name == "upper" || name == "lower") return Value::string(ascii_case(s, name == "upper"));
    if (name == "replace") {
      if (args.size() < 2) throw RenderFailure{"replace() needs old and new"};
      return Value::string(
          replace_all(s, need_string(args[0], "replace()"), need_string(args[1], "replace()"),
                      int_arg(args.size() > 2 ? &args[2] : nullptr, -1, "replace")));
    }
  }
  if (object.is(Kind::kDict)) {
    if (name == "items") return items_of(object);
    if (name == "keys") return Value::of_list(iterate(object));
    if (name == "values") {
      List out;
      for (const auto& item : *object.dict) out.push_back(item.second);
      return Value::of_list(std::move(out));
    }
    if (name == "get") {
      if (args.empty()) throw RenderFailure{"get() needs a key"};
      if (args[0].is(Kind::kString)) {
        if (const Value* v = object.find(args[0].s)) return *v;
      }
      return args.size() > 1 ? args[1] : Value::none();
    }
  }
  throw RenderFailure{"'" + type_name(object) + "' object has no method '" + name + "'"};
}

Value call_function(const std::string& name, const std::vector<Value>& args, const Kwargs& kwargs) {
  if (name == "raise_exception") {
    throw RaisedException(args.empty() ? "" : to_str(args[0]));
  }
  if (name == "namespace") {
    if (!args.empty()) throw RenderFailure{"namespace() takes keyword arguments only"};
    Dict members;
    for (const auto& [k, v] : kwargs) members.emplace_back(k, v);
    return Value::of_dict(std::move(members), Kind::kNamespace);
  }
  if (name == "range") {
    if (args.empty() || args.size() > 3) throw RenderFailure{"range() takes 1 to 3 arguments"};
    for (const Value& a : args)
      if (!a.is(Kind::kInt)) throw RenderFailure{"range() needs integers"};
    const int64_t start = args.size() == 1 ? 0 : args[0].i;
    const int64_t stop = args.size() == 1 ? args[0].i : args[1].i;
    const int64_t step = args.size() == 3 ? args[2].i : 1;
    if (step == 0) throw RenderFailure{"range() arg 3 must not be zero"};
    List out;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      out.push_back(Value::integer(k));
      if (out.size() > 100000) throw RenderFailure{"range() too large"};
    }
    return Value::of_list(std::move(out));
  }
  throw RenderFailure{"no function named '" + name + "'"};
}

}  // namespace h2oflex::chat_template
