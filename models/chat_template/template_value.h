// The values a chat template computes with, behaving as the Python objects jinja2 hands a
// template: None, bool, int, float, str, list, dict, jinja2's Undefined and namespace().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace h2oflex::chat_template {

struct Value;
using List = std::vector<Value>;
// Insertion-ordered, as a Python dict (and tojson) keeps its keys.
using Dict = std::vector<std::pair<std::string, Value>>;

// Thrown while rendering where Python would raise (a TypeError, jinja2's UndefinedError, ...);
// the renderer adds the template line.
struct RenderFailure {
  std::string message;
};

struct Value {
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace };

  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                     // kString; for kUndefined the name that was looked up
  std::shared_ptr<const List> list;  // kList (immutable, shared)
  std::shared_ptr<Dict> dict;        // kDict (never changed once built), kNamespace (mutable)

  static Value undefined(std::string name = "") {
    Value v;
    v.s = std::move(name);
    return v;
  }
  static Value none() { return make(Kind::kNone); }
  static Value boolean(bool x) {
    Value v = make(Kind::kBool);
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v = make(Kind::kInt);
    v.i = x;
    return v;
  }
  static Value real(double x) {
    Value v = make(Kind::kFloat);
    v.f = x;
    return v;
  }
  static Value string(std::string x) {
    Value v = make(Kind::kString);
    v.s = std::move(x);
    return v;
  }
  static Value of_list(List x) {
    Value v = make(Kind::kList);
    v.list = std::make_shared<const List>(std::move(x));
    return v;
  }
  static Value of_dict(Dict x, Kind kind = Kind::kDict) {
    Value v = make(kind);
    v.dict = std::make_shared<Dict>(std::move(x));
    return v;
  }

  bool is(Kind k) const { return kind == k; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  // The member `key` of a dict or namespace, or nullptr.
  const Value* find(const std::string& key) const;

 private:
  static Value make(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
};

// Python's type name ("str", "int", "list", ...), for messages.
std::string type_name(const Value& v);
// bool(v).
bool truthy(const Value& v);
// str(v): what `{{ v }}` prints ("" for undefined, "None", "True", "1.5", "['a', 1]").
std::string to_str(const Value& v);
// repr(v) as Python writes it.
std::string repr(const Value& v);
// v == w as Python decides it (1 == 1.0 == True; no other kinds mix).
bool equal(const Value& v, const Value& w);
// v < w for numbers or for strings (by code point); RenderFailure for other kinds.
bool less(const Value& v, const Value& w);
// json.dumps(v, ensure_ascii=False), with `indent` spaces per level when indent >= 0.
std::string to_json(const Value& v, int indent = -1);
// The items a for-loop or `in` walks: a list's elements, a dict's keys, a string's characters.
List iterate(const Value& v);
// len(v) for a string (in code points), list or dict.
int64_t length(const Value& v);

}  // namespace h2oflex::chat_template
