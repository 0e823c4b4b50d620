#include "models/chat_template/template_parser.h"

#include <cstdlib>
#include <set>

#include "models/chat_template/template_builtins.h"
#include "models/chat_template/template_error.h"
#include "models/chat_template/template_lexer.h"

namespace h2oflex::chat_template {

namespace {

using TK = Token::Kind;
using EK = Expr::Kind;
using SK = Stmt::Kind;

std::string describe(const Token& t) {
  switch (t.kind) {
    case TK::kData:
      return "template text";
    case TK::kVarBegin:
      return "'{{'";
    case TK::kVarEnd:
      return "'}}'";
    case TK::kBlockBegin:
      return "'{%'";
    case TK::kBlockEnd:
      return "'%}'";
    case TK::kName:
      return "'" + t.text + "'";
    case TK::kString:
      return "a string";
    case TK::kInt:
    case TK::kFloat:
      return "a number";
    case TK::kOperator:
      return "'" + t.text + "'";
    case TK::kEnd:
      return "the end of the template";
  }
  return "?";
}

ExprPtr node(EK kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// Deeper nesting than any chat template has; a bound so a hostile template cannot exhaust the
// stack of the recursive parser (or of the evaluator, which follows the tree).
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse() {
    std::string end_tag;
    Body body = parse_body({}, end_tag);
    return body;
  }

 private:
  // Counts the parser's recursion while in scope.
  struct Nesting {
    explicit Nesting(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.fail("nesting deeper than 200 levels");
    }
    ~Nesting() { --p_.depth_; }
    Parser& p_;
  };

  const Token& cur() const { return t_[pos_]; }
  const Token& peek(size_t ahead = 1) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  bool at_op(const char* op) const { return cur().kind == TK::kOperator && cur().text == op; }
  bool at_name(const char* name) const { return cur().kind == TK::kName && cur().text == name; }
  bool skip_op(const char* op) {
    if (!at_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(const char* name) {
    if (!at_name(name)) return false;
    ++pos_;
    return true;
  }
  [[noreturn]] void fail(const std::string& what) const { throw TemplateError(cur().line, what); }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail("expected '" + std::string(op) + "', got " + describe(cur()));
  }
  void expect(TK kind, const char* what) {
    if (cur().kind != kind) fail("expected " + std::string(what) + ", got " + describe(cur()));
    ++pos_;
  }
  std::string expect_name() {
    if (cur().kind != TK::kName) fail("expected a name, got " + describe(cur()));
    return t_[pos_++].text;
  }

  // Statements up to a block tag whose name is in `ends` (its name is left in `end_tag`, the
  // parser positioned after the name), or to the end of the template when `ends` is empty.
  Body parse_body(const std::set<std::string>& ends, std::string& end_tag) {
    Body body;
    while (true) {
      const Token& tok = cur();
      if (tok.kind == TK::kEnd) {
        if (!ends.empty()) {
          std::string names;
          for (const std::string& e : ends) names += (names.empty() ? "'" : ", '") + e + "'";
          fail("unexpected end of template, expected one of " + names);
        }
        return body;
      }
      if (tok.kind == TK::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = SK::kText;
        s->line = tok.line;
        s->text = tok.text;
        body.push_back(std::move(s));
        ++pos_;
        continue;
      }
      if (tok.kind == TK::kVarBegin) {
        ++pos_;
        auto s = std::make_unique<Stmt>();
        s->kind = SK::kPrint;
        s->line = tok.line;
        s->expr = parse_expression();
        expect(TK::kVarEnd, "'}}'");
        body.push_back(std::move(s));
        continue;
      }
      expect(TK::kBlockBegin, "'{%'");
      const int line = cur().line;
      const std::string tag = expect_name();
      if (ends.count(tag)) {
        end_tag = tag;
        return body;
      }
      body.push_back(parse_statement(tag, line));
    }
  }

  std::unique_ptr<Stmt> parse_statement(const std::string& tag, int line) {
    const Nesting nesting(*this);
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (tag == "for") {
      s->kind = SK::kFor;
      s->targets.push_back(expect_name());
      while (skip_op(",")) s->targets.push_back(expect_name());
      if (!skip_name("in")) fail("expected 'in', got " + describe(cur()));
      s->expr = parse_expression(/*with_condexpr=*/false);
      if (skip_name("if")) s->cond = parse_expression();
      if (at_name("recursive")) fail("recursive for-loops are not supported");
      expect(TK::kBlockEnd, "'%}'");
      std::string end;
      s->body = parse_body({"endfor", "else"}, end);
      if (end == "else") {
        expect(TK::kBlockEnd, "'%}'");
        s->otherwise = parse_body({"endfor"}, end);
      }
      expect(TK::kBlockEnd, "'%}'");
      return s;
    }
    if (tag == "if") {
      s->kind = SK::kIf;
      std::string end = "elif";
      while (end == "elif") {
        ExprPtr cond = parse_expression(/*with_condexpr=*/false);
        expect(TK::kBlockEnd, "'%}'");
        Body body = parse_body({"elif", "else", "endif"}, end);
        s->branches.emplace_back(std::move(cond), std::move(body));
      }
      if (end == "else") {
        expect(TK::kBlockEnd, "'%}'");
        s->otherwise = parse_body({"endif"}, end);
      }
      expect(TK::kBlockEnd, "'%}'");
      return s;
    }
    if (tag == "set") {
      s->kind = SK::kSet;
      s->targets.push_back(expect_name());
      if (skip_op(".")) s->attr = expect_name();
      if (at_op(",")) fail("assigning to several names in one 'set' is not supported");
      if (!skip_op("="))
        fail("the block form of 'set' ({% set x %}...{% endset %}) is not supported");
      s->expr = parse_expression();
      expect(TK::kBlockEnd, "'%}'");
      return s;
    }
    if (tag == "break" || tag == "continue") {
      s->kind = tag == "break" ? SK::kBreak : SK::kContinue;
      expect(TK::kBlockEnd, "'%}'");
      return s;
    }
    static const std::set<std::string> kEnds = {"endfor", "endif", "elif", "else", "endset"};
    if (kEnds.count(tag)) throw TemplateError(line, "unexpected '" + tag + "'");
    throw TemplateError(line, "the '" + tag + "' tag is not supported");
  }

  ExprPtr parse_expression(bool with_condexpr = true) {
    ExprPtr e = with_condexpr ? parse_condexpr() : parse_or();
    if (at_op(",")) fail("tuples without parentheses are not supported");
    return e;
  }

  ExprPtr parse_condexpr() {
    const Nesting nesting(*this);
    ExprPtr e = parse_or();
    while (at_name("if")) {
      const int line = cur().line;
      ++pos_;
      ExprPtr test = parse_or();
      ExprPtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      ExprPtr c = node(EK::kCond, line);
      c->args.push_back(std::move(test));
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    ExprPtr b = node(EK::kBinary, line);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (at_name("or")) {
      const int line = t_[pos_++].line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (at_name("and")) {
      const int line = t_[pos_++].line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    const Nesting nesting(*this);
    if (at_name("not")) {
      ExprPtr n = node(EK::kUnary, t_[pos_++].line);
      n->name = "not";
      n->args.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    bool compared = false;
    while (true) {
      const int line = cur().line;
      std::string op;
      if (cur().kind == TK::kOperator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
           cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        ++pos_;
      } else if (at_name("in")) {
        op = "in";
        ++pos_;
      } else if (at_name("not") && peek().kind == TK::kName && peek().text == "in") {
        op = "not in";
        pos_ += 2;
      } else {
        return e;
      }
      if (compared) throw TemplateError(line, "chained comparisons are not supported");
      compared = true;
      e = binary(op, std::move(e), parse_math1(), line);
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (at_op("+") || at_op("-")) {
      const Token& op = t_[pos_++];
      e = binary(op.text, std::move(e), parse_concat(), op.line);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (at_op("~")) {
      const int line = t_[pos_++].line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = t_[pos_++];
      e = binary(op.text, std::move(e), parse_pow(), op.line);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary();
    while (at_op("**")) {
      const int line = t_[pos_++].line;
      e = binary("**", std::move(e), parse_unary(), line);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter = true) {
    const Nesting nesting(*this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& op = t_[pos_++];
      e = node(EK::kUnary, op.line);
      e->name = op.text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  // Python's integers have no bound; this renderer's stop at 64 bits.
  static int64_t integer_literal(const Token& tok) {
    try {
      return std::stoll(tok.text);
    } catch (const std::exception&) {
      throw TemplateError(tok.line, "integer " + tok.text + " is beyond 64 bits");
    }
  }

  ExprPtr literal(Value v, int line) {
    ExprPtr e = node(EK::kLiteral, line);
    e->value = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    const Token& tok = cur();
    const int line = tok.line;
    if (tok.kind == TK::kName) {
      ++pos_;
      if (tok.text == "true" || tok.text == "True") return literal(Value::boolean(true), line);
      if (tok.text == "false" || tok.text == "False") return literal(Value::boolean(false), line);
      if (tok.text == "none" || tok.text == "None") return literal(Value::none(), line);
      if (tok.text == "strftime_now") {
        throw TemplateError(line, "strftime_now (today's date in the prompt) is not supported");
      }
      ExprPtr e = node(EK::kName, line);
      e->name = tok.text;
      return e;
    }
    if (tok.kind == TK::kString) {
      std::string s;
      while (cur().kind == TK::kString) s += t_[pos_++].text;  // adjacent literals join
      return literal(Value::string(std::move(s)), line);
    }
    if (tok.kind == TK::kInt) {
      ++pos_;
      return literal(Value::integer(integer_literal(tok)), line);
    }
    if (tok.kind == TK::kFloat) {
      ++pos_;
      // strtod, as Python's float literal, gives inf beyond the range of a double.
      return literal(Value::real(std::strtod(tok.text.c_str(), nullptr)), line);
    }
    if (skip_op("(")) {
      if (skip_op(")")) return node(EK::kList, line);  // ()
      ExprPtr first = parse_expression_in_brackets();
      if (!at_op(",")) {
        expect_op(")");
        return first;
      }
      ExprPtr tuple = node(EK::kList, line);
      tuple->args.push_back(std::move(first));
      while (skip_op(",")) {
        if (at_op(")")) break;
        tuple->args.push_back(parse_expression_in_brackets());
      }
      expect_op(")");
      return tuple;
    }
    if (skip_op("[")) {
      ExprPtr list = node(EK::kList, line);
      while (!at_op("]")) {
        if (!list->args.empty()) expect_op(",");
        if (at_op("]")) break;
        list->args.push_back(parse_expression_in_brackets());
      }
      expect_op("]");
      return list;
    }
    if (skip_op("{")) {
      ExprPtr dict = node(EK::kDict, line);
      while (!at_op("}")) {
        if (!dict->args.empty()) expect_op(",");
        if (at_op("}")) break;
        dict->args.push_back(parse_expression_in_brackets());
        expect_op(":");
        dict->args.push_back(parse_expression_in_brackets());
      }
      expect_op("}");
      return dict;
    }
    fail("unexpected " + describe(tok));
  }

  // An expression inside brackets, where a comma ends it rather than making a tuple.
  ExprPtr parse_expression_in_brackets() { return parse_condexpr(); }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (skip_op(".")) {
        if (cur().kind == TK::kInt) {
          ExprPtr item = node(EK::kItem, line);
          item->args.push_back(std::move(e));
          item->args.push_back(literal(Value::integer(integer_literal(t_[pos_++])), line));
          e = std::move(item);
          continue;
        }
        ExprPtr attr = node(EK::kAttr, line);
        attr->name = expect_name();
        attr->args.push_back(std::move(e));
        e = std::move(attr);
      } else if (skip_op("[")) {
        e = parse_subscript(std::move(e), line);
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object, int line) {
    ExprPtr bounds[3];
    bool slice = false;
    for (int part = 0; part < 3; ++part) {
      if (!at_op(":") && !at_op("]")) bounds[part] = parse_expression_in_brackets();
      if (part < 2 && skip_op(":")) {
        slice = true;
        continue;
      }
      break;
    }
    if (at_op(",")) fail("subscripts with several indices are not supported");
    expect_op("]");
    if (!slice) {
      if (!bounds[0]) throw TemplateError(line, "expected an index");
      ExprPtr item = node(EK::kItem, line);
      item->args.push_back(std::move(object));
      item->args.push_back(std::move(bounds[0]));
      return item;
    }
    ExprPtr s = node(EK::kSlice, line);
    s->args.push_back(std::move(object));
    for (ExprPtr& b : bounds) s->args.push_back(std::move(b));
    return s;
  }

  // (args) after a callee: a global function or a method.
  ExprPtr parse_call(ExprPtr callee) {
    const int line = cur().line;
    if (callee->kind == EK::kName && !is_supported_function(callee->name)) {
      throw TemplateError(line, "the function '" + callee->name + "' is not supported");
    }
    if (callee->kind == EK::kAttr && !is_supported_method(callee->name)) {
      throw TemplateError(line, "the method '" + callee->name + "()' is not supported");
    }
    if (callee->kind != EK::kName && callee->kind != EK::kAttr) {
      throw TemplateError(line, "calling this kind of expression is not supported");
    }
    ExprPtr call = node(EK::kCall, line);
    call->args.push_back(std::move(callee));
    parse_arguments(*call);
    return call;
  }

  // (a, b, key=c) into e.args (after what is already there) and e.kwargs.
  void parse_arguments(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!at_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (at_op(")")) break;
      if (at_op("*") || at_op("**")) fail("*args and **kwargs are not supported");
      if (cur().kind == TK::kName && peek().kind == TK::kOperator && peek().text == "=") {
        std::string key = t_[pos_].text;
        pos_ += 2;
        e.kwargs.emplace_back(std::move(key), parse_expression_in_brackets());
        continue;
      }
      if (!e.kwargs.empty()) fail("a positional argument after a keyword argument");
      e.args.push_back(parse_expression_in_brackets());
    }
    expect_op(")");
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (at_op("|")) {
        const int line = t_[pos_++].line;
        ExprPtr f = node(EK::kFilter, line);
        f->name = expect_name();
        if (at_op(".")) fail("dotted filter names are not supported");
        if (!is_supported_filter(f->name)) {
          throw TemplateError(line, "the filter '" + f->name + "' is not supported");
        }
        f->args.push_back(std::move(e));
        if (at_op("(")) parse_arguments(*f);
        e = std::move(f);
      } else if (at_name("is")) {
        const int line = t_[pos_++].line;
        ExprPtr t = node(EK::kTest, line);
        t->negated = skip_name("not");
        t->name = expect_name();
        if (!is_supported_test(t->name)) {
          throw TemplateError(line, "the test '" + t->name + "' is not supported");
        }
        t->args.push_back(std::move(e));
        const TK k = cur().kind;
        const bool bare_argument = (k == TK::kName || k == TK::kString || k == TK::kInt ||
                                    k == TK::kFloat || at_op("(") || at_op("[") || at_op("{")) &&
                                   !at_name("else") && !at_name("or") && !at_name("and");
        if (bare_argument) {
          throw TemplateError(line, "the test '" + t->name + "' takes no argument here");
        }
        e = std::move(t);
      } else if (at_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) {
  return Parser(lex_template(source)).parse();
}

}  // namespace h2oflex::chat_template
