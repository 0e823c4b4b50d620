#include "models/chat_template/template_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "models/tokenizer/utf8.h"

namespace h2oflex::chat_template {

namespace {

using Kind = Value::Kind;

// float.__repr__: the shortest digits that round-trip, fixed notation for 1e-4 <= |x| < 1e16
// (always with a fraction, "2.0"), else "1e+16" / "1.5e-05".
std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, end);  // "-1.2345e+02"
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return out + "0." + std::string(-exponent - 1, '0') + digits;
  const size_t int_len = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_len)
    return out + digits + std::string(int_len - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string hex_escape(char32_t cp) {
  char buf[16];
  if (cp <= 0xff) {
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
  } else if (cp <= 0xffff) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
  }
  return buf;
}

// str.__repr__: single quotes unless the text holds ' and no ", escapes for the quote, the
// backslash and control characters.
std::string string_repr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = dq ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    const tokenizer::Utf8Step step = tokenizer::decode_utf8_at(s, pos);
    const char32_t cp = step.valid ? step.code_point : 0xfffd;
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad || cp == 0x2028 ||
               cp == 0x2029) {
      out += hex_escape(cp);
    } else {
      out.append(s, pos, step.length);
    }
    pos += step.length;
  }
  return out + quote;
}

// json.dumps's string form with ensure_ascii=False: only '"', '\\' and controls are escaped.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void json_into(const Value& v, int indent, int depth, std::string& out) {
  const std::string item_sep = indent >= 0 ? "," : ", ";
  auto newline = [&](int d) {
    if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.kind) {
    case Kind::kUndefined:
      throw RenderFailure{"Object of type Undefined is not JSON serializable"};
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.b ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(v.i);
      return;
    case Kind::kFloat:
      out += std::isnan(v.f)   ? "NaN"
             : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity")
                               : float_repr(v.f);
      return;
    case Kind::kString:
      out += json_string(v.s);
      return;
    case Kind::kList: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k > 0) out += item_sep;
        newline(depth + 1);
        json_into((*v.list)[k], indent, depth + 1, out);
      }
      newline(depth);
      out += "]";
      return;
    }
    case Kind::kDict: {
      if (v.dict->empty()) {
        out += "{}";
        return;
      }
      out += "{";
      for (size_t k = 0; k < v.dict->size(); ++k) {
        if (k > 0) out += item_sep;
        newline(depth + 1);
        out += json_string((*v.dict)[k].first) + ": ";
        json_into((*v.dict)[k].second, indent, depth + 1, out);
      }
      newline(depth);
      out += "}";
      return;
    }
    case Kind::kNamespace:
      throw RenderFailure{"Object of type Namespace is not JSON serializable"};
  }
}

// The code points of a string as UTF-8 pieces.
List characters(const std::string& s) {
  List out;
  for (size_t pos = 0; pos < s.size();) {
    const tokenizer::Utf8Step step = tokenizer::decode_utf8_at(s, pos);
    out.push_back(Value::string(s.substr(pos, step.length)));
    pos += step.length;
  }
  return out;
}

double as_double(const Value& v) {
  return v.is(Kind::kFloat)  ? v.f
         : v.is(Kind::kBool) ? (v.b ? 1.0 : 0.0)
                             : static_cast<double>(v.i);
}

int64_t as_int(const Value& v) {
  return v.is(Kind::kBool) ? (v.b ? 1 : 0) : v.i;
}

}  // namespace

const Value* Value::find(const std::string& key) const {
  if (!dict) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.b;
    case Kind::kInt:
      return v.i != 0;
    case Kind::kFloat:
      return v.f != 0;
    case Kind::kString:
      return !v.s.empty();
    case Kind::kList:
      return !v.list->empty();
    case Kind::kDict:
      return !v.dict->empty();
    case Kind::kNamespace:
      return true;
  }
  return false;
}

std::string to_str(const Value& v) {
  if (v.is(Kind::kUndefined)) return "";
  if (v.is(Kind::kString)) return v.s;
  return repr(v);
}

std::string repr(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return v.b ? "True" : "False";
    case Kind::kInt:
      return std::to_string(v.i);
    case Kind::kFloat:
      return float_repr(v.f);
    case Kind::kString:
      return string_repr(v.s);
    case Kind::kList: {
      std::string out = "[";
      for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + repr((*v.list)[k]);
      return out + "]";
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      std::string out = v.is(Kind::kDict) ? "{" : "<Namespace {";
      for (size_t k = 0; k < v.dict->size(); ++k) {
        out += (k ? ", " : "") + string_repr((*v.dict)[k].first) + ": " + repr((*v.dict)[k].second);
      }
      return out + (v.is(Kind::kDict) ? "}" : "}>");
    }
  }
  return "";
}

bool equal(const Value& v, const Value& w) {
  if (v.is_number() && w.is_number()) {
    if (v.is(Kind::kFloat) || w.is(Kind::kFloat)) return as_double(v) == as_double(w);
    return as_int(v) == as_int(w);
  }
  if (v.kind != w.kind) return false;
  switch (v.kind) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return v.s == w.s;
    case Kind::kList:
      if (v.list->size() != w.list->size()) return false;
      for (size_t k = 0; k < v.list->size(); ++k)
        if (!equal((*v.list)[k], (*w.list)[k])) return false;
      return true;
    case Kind::kDict:
      if (v.dict->size() != w.dict->size()) return false;
      for (const auto& [key, value] : *v.dict) {
        const Value* other = w.find(key);
        if (other == nullptr || !equal(value, *other)) return false;
      }
      return true;
    case Kind::kNamespace:
      return v.dict == w.dict;
    default:
      return false;
  }
}

bool less(const Value& v, const Value& w) {
  if (v.is_number() && w.is_number()) {
    if (v.is(Kind::kFloat) || w.is(Kind::kFloat)) return as_double(v) < as_double(w);
    return as_int(v) < as_int(w);
  }
  if (v.is(Kind::kString) && w.is(Kind::kString)) return v.s < w.s;  // UTF-8 keeps code point order
  throw RenderFailure{"'<' not supported between instances of '" + type_name(v) + "' and '" +
                      type_name(w) + "'"};
}

std::string to_json(const Value& v, int indent) {
  std::string out;
  json_into(v, indent, 0, out);
  return out;
}

List iterate(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return {};
    case Kind::kString:
      return characters(v.s);
    case Kind::kList:
      return *v.list;
    case Kind::kDict: {
      List keys;
      for (const auto& item : *v.dict) keys.push_back(Value::string(item.first));
      return keys;
    }
    default:
      throw RenderFailure{"'" + type_name(v) + "' object is not iterable"};
  }
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return static_cast<int64_t>(characters(v.s).size());
    case Kind::kList:
      return static_cast<int64_t>(v.list->size());
    case Kind::kDict:
      return static_cast<int64_t>(v.dict->size());
    default:
      throw RenderFailure{"object of type '" + type_name(v) + "' has no len()"};
  }
}

}  // namespace h2oflex::chat_template
