// The parsed form of a chat template: statements holding expressions.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/chat_template/template_value.h"

namespace h2oflex::chat_template {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // args: the items (a tuple is a list here)
    kDict,     // args: key, value, key, value, ...
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]], a null ExprPtr for an omitted bound
    kUnary,    // name is "not", "-" or "+"; args[0]
    kBinary,   // name is the operator ("+", "and", "in", "not in", "==", ...); args[0], args[1]
    kCond,     // args[1] if args[0] else args[2] (args[2] null when there is no else)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..]); negated
    kCall,     // args[0](args[1..], kwargs): a global function (kName) or a method (kAttr)
  };
  Kind kind;
  int line = 0;
  std::string name;
  Value value;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    kText,   // text
    kPrint,  // {{ expr }}
    kFor,    // {% for targets in expr [if cond] %} body [{% else %} otherwise] {% endfor %}
    kIf,     // branches: (condition, body) for if and each elif; otherwise: else
    kSet,    // {% set targets[0] = expr %} or {% set targets[0].attr = expr %} (attr non-empty)
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::string attr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body otherwise;
};

}  // namespace h2oflex::chat_template
