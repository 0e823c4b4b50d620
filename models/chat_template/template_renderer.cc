#include "models/chat_template/template_renderer.h"

#include <cmath>
#include <unordered_map>

#include "models/chat_template/template_builtins.h"
#include "models/chat_template/template_error.h"

namespace h2oflex::chat_template {

namespace {

using EK = Expr::Kind;
using SK = Stmt::Kind;
using Kind = Value::Kind;

enum class Flow { kNormal, kBreak, kContinue };

// An undefined value carries the message jinja2 raises when it is used as a value.
[[noreturn]] void fail_undefined(const Value& v) {
  throw RenderFailure{v.s.empty() ? "undefined value" : v.s};
}

Value no_attribute(const Value& object, const std::string& name) {
  return Value::undefined("'" + type_name(object) + " object' has no attribute '" + name + "'");
}

// Python's slice bounds for a sequence of `size` items.
List slice_of(const List& items, const Value* start, const Value* stop, const Value* step) {
  const int64_t n = static_cast<int64_t>(items.size());
  auto int_of = [](const Value* v, int64_t fallback) {
    if (v == nullptr || v->is(Kind::kNone)) return fallback;
    if (!v->is(Kind::kInt)) throw RenderFailure{"slice indices must be integers or None"};
    return v->i;
  };
  const int64_t st = int_of(step, 1);
  if (st == 0) throw RenderFailure{"slice step cannot be zero"};
  auto clamp = [&](const Value* v, int64_t fallback) {
    int64_t k = int_of(v, fallback);
    if (v == nullptr || v->is(Kind::kNone)) return k;
    if (k < 0) k += n;
    if (st > 0) return std::max<int64_t>(0, std::min(k, n));
    return std::max<int64_t>(-1, std::min(k, n - 1));
  };
  const int64_t begin = clamp(start, st > 0 ? 0 : n - 1);
  const int64_t end = clamp(stop, st > 0 ? n : -1);
  List out;
  for (int64_t k = begin; st > 0 ? k < end : k > end; k += st) out.push_back(items[k]);
  return out;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value arithmetic(const std::string& op, const Value& l, const Value& r) {
  if (l.is(Kind::kUndefined)) fail_undefined(l);
  if (r.is(Kind::kUndefined)) fail_undefined(r);
  auto unsupported = [&]() -> Value {
    throw RenderFailure{"unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" +
                        type_name(r) + "'"};
  };
  if (op == "+") {
    if (l.is(Kind::kString) && r.is(Kind::kString)) return Value::string(l.s + r.s);
    if (l.is(Kind::kList) && r.is(Kind::kList)) {
      List out = *l.list;
      out.insert(out.end(), r.list->begin(), r.list->end());
      return Value::of_list(std::move(out));
    }
    if (l.is(Kind::kString) || r.is(Kind::kString)) {
      throw RenderFailure{"can only concatenate str (not \"" +
                          type_name(l.is(Kind::kString) ? r : l) + "\") to str"};
    }
  }
  if (op == "*") {
    const Value* text = l.is(Kind::kString) || l.is(Kind::kList) ? &l : &r;
    const Value* times = text == &l ? &r : &l;
    if ((text->is(Kind::kString) || text->is(Kind::kList)) && times->is(Kind::kInt)) {
      if (text->is(Kind::kString)) {
        std::string out;
        for (int64_t k = 0; k < times->i; ++k) out += text->s;
        return Value::string(out);
      }
      List out;
      for (int64_t k = 0; k < times->i; ++k)
        out.insert(out.end(), text->list->begin(), text->list->end());
      return Value::of_list(std::move(out));
    }
  }
  if (!l.is_number() || !r.is_number()) return unsupported();
  const bool real = l.is(Kind::kFloat) || r.is(Kind::kFloat) || op == "/";
  const double a = l.is(Kind::kFloat) ? l.f : static_cast<double>(l.is(Kind::kBool) ? l.b : l.i);
  const double b = r.is(Kind::kFloat) ? r.f : static_cast<double>(r.is(Kind::kBool) ? r.b : r.i);
  const int64_t x = l.is(Kind::kBool) ? l.b : l.i;
  const int64_t y = r.is(Kind::kBool) ? r.b : r.i;
  if ((op == "/" || op == "//" || op == "%") && b == 0) {
    throw RenderFailure{"division by zero"};
  }
  if (op == "**") {
    if (!real && y >= 0) {
      if (y > 1000) throw RenderFailure{"an integer power above 1000 is not supported"};
      int64_t p = 1;
      for (int64_t k = 0; k < y; ++k) p *= x;
      return Value::integer(p);
    }
    return Value::real(std::pow(a, b));
  }
  if (real) {
    if (op == "+") return Value::real(a + b);
    if (op == "-") return Value::real(a - b);
    if (op == "*") return Value::real(a * b);
    if (op == "/") return Value::real(a / b);
    if (op == "//") return Value::real(std::floor(a / b));
    if (op == "%") return Value::real(a - std::floor(a / b) * b);
  } else {
    if (op == "+") return Value::integer(x + y);
    if (op == "-") return Value::integer(x - y);
    if (op == "*") return Value::integer(x * y);
    if (op == "//") return Value::integer(floor_div(x, y));
    if (op == "%") return Value::integer(x - floor_div(x, y) * y);
  }
  return unsupported();
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::kString:
      if (!item.is(Kind::kString)) {
        throw RenderFailure{"'in <string>' requires string as left operand, not " +
                            type_name(item)};
      }
      return container.s.find(item.s) != std::string::npos;
    case Kind::kList:
      for (const Value& v : *container.list)
        if (equal(v, item)) return true;
      return false;
    case Kind::kDict:
      return item.is(Kind::kString) && container.find(item.s) != nullptr;
    case Kind::kUndefined:
      return false;
    default:
      throw RenderFailure{"argument of type '" + type_name(container) + "' is not iterable"};
  }
}

class Renderer {
 public:
  explicit Renderer(const Dict& variables) {
    scopes_.emplace_back();
    for (const auto& [k, v] : variables) scopes_.back()[k] = v;
  }

  std::string run(const Body& body) {
    exec(body);
    return std::move(out_);
  }

 private:
  Flow exec(const Body& body) {
    for (const auto& s : body) {
      Flow flow;
      try {
        flow = exec(*s);
      } catch (const RenderFailure& e) {
        throw TemplateError(s->line, e.message);
      }
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s) {
    switch (s.kind) {
      case SK::kText:
        out_ += s.text;
        return Flow::kNormal;
      case SK::kPrint:
        out_ += to_str(eval(*s.expr));
        return Flow::kNormal;
      case SK::kIf:
        for (const auto& [cond, body] : s.branches) {
          if (truthy(eval(*cond))) return exec(body);
        }
        return exec(s.otherwise);
      case SK::kFor:
        return exec_for(s);
      case SK::kSet: {
        Value v = eval(*s.expr);
        if (s.attr.empty()) {
          scopes_.back()[s.targets[0]] = std::move(v);
          return Flow::kNormal;
        }
        const Value ns = lookup(s.targets[0]);
        if (!ns.is(Kind::kNamespace)) {
          throw RenderFailure{"cannot assign attribute on non-namespace object"};
        }
        for (auto& [k, member] : *ns.dict) {
          if (k == s.attr) {
            member = std::move(v);
            return Flow::kNormal;
          }
        }
        ns.dict->emplace_back(s.attr, std::move(v));
        return Flow::kNormal;
      }
      case SK::kBreak:
        return Flow::kBreak;
      case SK::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  void bind(const std::vector<std::string>& targets, const Value& item) {
    auto& scope = scopes_.back();
    if (targets.size() == 1) {
      scope[targets[0]] = item;
      return;
    }
    const List parts = iterate(item);
    if (parts.size() != targets.size()) {
      throw RenderFailure{
          parts.size() > targets.size()
              ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
              : "not enough values to unpack (expected " + std::to_string(targets.size()) +
                    ", got " + std::to_string(parts.size()) + ")"};
    }
    for (size_t k = 0; k < targets.size(); ++k) scope[targets[k]] = parts[k];
  }

  Flow exec_for(const Stmt& s) {
    List items = iterate(eval(*s.expr));
    if (s.cond) {
      List kept;
      for (const Value& item : items) {
        scopes_.emplace_back();
        bind(s.targets, item);
        const bool keep = truthy(eval(*s.cond));
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(s.otherwise);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < n; ++k) {
      Dict loop = {{"index", Value::integer(k + 1)},    {"index0", Value::integer(k)},
                   {"revindex", Value::integer(n - k)}, {"revindex0", Value::integer(n - k - 1)},
                   {"first", Value::boolean(k == 0)},   {"last", Value::boolean(k == n - 1)},
                   {"length", Value::integer(n)},       {"depth", Value::integer(1)},
                   {"depth0", Value::integer(0)}};
      if (k > 0) loop.emplace_back("previtem", items[k - 1]);
      if (k + 1 < n) loop.emplace_back("nextitem", items[k + 1]);
      scopes_.emplace_back();
      Flow flow;
      try {
        bind(s.targets, items[k]);
        scopes_.back()["loop"] = Value::of_dict(std::move(loop));
        flow = exec(s.body);
      } catch (...) {
        scopes_.pop_back();
        throw;
      }
      scopes_.pop_back();
      if (flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    if (is_supported_function(name)) return Value::string("<function " + name + ">");
    return Value::undefined("'" + name + "' is undefined");
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case EK::kLiteral:
        return e.value;
      case EK::kName:
        return lookup(e.name);
      case EK::kList: {
        List items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return Value::of_list(std::move(items));
      }
      case EK::kDict: {
        Dict d;
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          const Value key = eval(*e.args[k]);
          if (!key.is(Kind::kString))
            throw RenderFailure{"dict keys other than strings are not supported"};
          Value v = eval(*e.args[k + 1]);
          bool replaced = false;
          for (auto& item : d) {
            if (item.first == key.s) {
              item.second = v;
              replaced = true;
            }
          }
          if (!replaced) d.emplace_back(key.s, std::move(v));
        }
        return Value::of_dict(std::move(d));
      }
      case EK::kAttr:
        return attribute(eval(*e.args[0]), e.name);
      case EK::kItem:
        return item(eval(*e.args[0]), eval(*e.args[1]));
      case EK::kSlice: {
        const Value object = eval(*e.args[0]);
        if (object.is(Kind::kUndefined)) fail_undefined(object);
        Value bounds[3];
        const Value* ptrs[3] = {nullptr, nullptr, nullptr};
        for (int k = 0; k < 3; ++k) {
          if (e.args[k + 1]) {
            bounds[k] = eval(*e.args[k + 1]);
            ptrs[k] = &bounds[k];
          }
        }
        if (object.is(Kind::kString)) {
          std::string out;
          for (const Value& c : slice_of(iterate(object), ptrs[0], ptrs[1], ptrs[2])) out += c.s;
          return Value::string(out);
        }
        if (object.is(Kind::kList))
          return Value::of_list(slice_of(*object.list, ptrs[0], ptrs[1], ptrs[2]));
        throw RenderFailure{"'" + type_name(object) + "' object is not subscriptable"};
      }
      case EK::kUnary: {
        const Value v = eval(*e.args[0]);
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (v.is(Kind::kUndefined)) fail_undefined(v);
        if (v.is(Kind::kFloat)) return Value::real(e.name == "-" ? -v.f : v.f);
        if (v.is(Kind::kInt) || v.is(Kind::kBool)) {
          const int64_t x = v.is(Kind::kBool) ? v.b : v.i;
          return Value::integer(e.name == "-" ? -x : x);
        }
        throw RenderFailure{"bad operand type for unary " + e.name + ": '" + type_name(v) + "'"};
      }
      case EK::kBinary:
        return binary(e);
      case EK::kCond:
        if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined("the inline if had no else");
      case EK::kFilter: {
        const Value v = eval(*e.args[0]);
        std::vector<Value> args;
        for (size_t k = 1; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
        Kwargs kwargs;
        for (const auto& [k, a] : e.kwargs) kwargs.emplace_back(k, eval(*a));
        return apply_filter(e.name, v, args, kwargs);
      }
      case EK::kTest: {
        const Value v = eval(*e.args[0]);
        return Value::boolean(apply_test(e.name, v, {}) != e.negated);
      }
      case EK::kCall: {
        std::vector<Value> args;
        for (size_t k = 1; k < e.args.size(); ++k) args.push_back(eval(*e.args[k]));
        Kwargs kwargs;
        for (const auto& [k, a] : e.kwargs) kwargs.emplace_back(k, eval(*a));
        const Expr& callee = *e.args[0];
        if (callee.kind == EK::kName) {
          const Value bound = lookup(callee.name);
          if (!bound.is(Kind::kString) || bound.s != "<function " + callee.name + ">") {
            throw RenderFailure{"'" + callee.name + "' is not callable here"};
          }
          return call_function(callee.name, args, kwargs);
        }
        if (!kwargs.empty()) throw RenderFailure{"keyword arguments to methods are not supported"};
        return call_method(eval(*callee.args[0]), callee.name, args);
      }
    }
    return Value::undefined();
  }

  static Value attribute(const Value& object, const std::string& name) {
    if (object.is(Kind::kUndefined)) fail_undefined(object);
    if (object.is(Kind::kDict) || object.is(Kind::kNamespace)) {
      if (const Value* v = object.find(name)) return *v;
    }
    return no_attribute(object, name);
  }

  static Value item(const Value& object, const Value& key) {
    if (object.is(Kind::kUndefined)) fail_undefined(object);
    if (object.is(Kind::kDict)) {
      if (key.is(Kind::kString)) {
        if (const Value* v = object.find(key.s)) return *v;
      }
      return Value::undefined("'dict object' has no attribute " + repr(key));
    }
    if ((object.is(Kind::kList) || object.is(Kind::kString)) &&
        (key.is(Kind::kInt) || key.is(Kind::kBool))) {
      const List items = object.is(Kind::kList) ? *object.list : iterate(object);
      int64_t k = key.is(Kind::kBool) ? key.b : key.i;
      if (k < 0) k += static_cast<int64_t>(items.size());
      if (k < 0 || k >= static_cast<int64_t>(items.size())) {
        return Value::undefined("'" + type_name(object) + " object' has no element " + repr(key));
      }
      return items[static_cast<size_t>(k)];
    }
    if (key.is(Kind::kString)) return attribute(object, key.s);
    return Value::undefined("'" + type_name(object) + " object' has no element " + repr(key));
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and" || op == "or") {
      Value l = eval(*e.args[0]);
      if (truthy(l) == (op == "or")) return l;
      return eval(*e.args[1]);
    }
    const Value l = eval(*e.args[0]);
    const Value r = eval(*e.args[1]);
    if (op == "==") return Value::boolean(equal(l, r));
    if (op == "!=") return Value::boolean(!equal(l, r));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      if (l.is(Kind::kUndefined)) fail_undefined(l);
      if (r.is(Kind::kUndefined)) fail_undefined(r);
      if (op == "<") return Value::boolean(less(l, r));
      if (op == ">") return Value::boolean(less(r, l));
      if (op == "<=") return Value::boolean(!less(r, l));
      return Value::boolean(!less(l, r));
    }
    if (op == "in") return Value::boolean(contains(r, l));
    if (op == "not in") return Value::boolean(!contains(r, l));
    if (op == "~") return Value::string(to_str(l) + to_str(r));
    return arithmetic(op, l, r);
  }

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::string out_;
};

}  // namespace

std::string render_template(const Body& body, const Dict& variables) {
  return Renderer(variables).run(body);
}

}  // namespace h2oflex::chat_template
