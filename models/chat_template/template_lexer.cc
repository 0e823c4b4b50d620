#include "models/chat_template/template_lexer.h"

#include <cctype>

#include "models/chat_template/template_error.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::chat_template {

namespace {

using Kind = Token::Kind;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// "\r\n" and "\r" become "\n"; one final newline is dropped (keep_trailing_newline is off).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      out += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      out += source[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Python's "unicode-escape" decoding of a string literal's body.
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] != '\\' || k + 1 == body.size()) {
      out += body[k];
      continue;
    }
    const char c = body[++k];
    auto hex = [&](size_t digits) {
      if (k + digits >= body.size()) {
        throw TemplateError(line, "truncated \\" + std::string(1, c) + " escape in a string");
      }
      uint32_t cp = 0;
      for (size_t d = 1; d <= digits; ++d) {
        const char h = body[k + d];
        if (!std::isxdigit(static_cast<unsigned char>(h))) {
          throw TemplateError(line, "invalid \\" + std::string(1, c) + " escape in a string");
        }
        cp = cp * 16 +
             static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                       ? h - '0'
                                       : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
      }
      k += digits;
      if (cp > 0x10ffff) throw TemplateError(line, "escape beyond U+10FFFF in a string");
      tokenizer::append_utf8(out, static_cast<char32_t>(cp));
    };
    switch (c) {
      case '\n':
        break;  // a backslash before a line break joins the lines
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      case 'N':
        throw TemplateError(line, "the \\N{...} escape is not supported");
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = static_cast<uint32_t>(c - '0');
          for (int d = 0; d < 2 && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '7';
               ++d) {
            cp = cp * 8 + static_cast<uint32_t>(body[++k] - '0');
          }
          tokenizer::append_utf8(out, static_cast<char32_t>(cp));
        } else {
          out += '\\';  // an unknown escape keeps its backslash, as in Python
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;  // the last tag ended a line (or nothing came before)
    while (pos_ < src_.size()) {
      const size_t open = find_tag_open(pos_);
      if (open == std::string::npos) {
        emit_data(src_.substr(pos_));
        break;
      }
      std::string text = src_.substr(pos_, open - pos_);
      const char type = src_[open + 1];  // '{', '%' or '#'
      size_t after = open + 2;
      const char sign =
          after < src_.size() && (src_[after] == '-' || src_[after] == '+') ? src_[after++] : '\0';
      int stripped_lines = 0;
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        stripped_lines = count_newlines(std::string_view(text).substr(end));
        text.resize(end);
      } else if (sign != '+' && type != '{') {  // lstrip_blocks: not for {{ }}
        const size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_begin > 0 || line_starting) {
          bool blank = line_begin < text.size();
          for (size_t k = line_begin; k < text.size(); ++k) blank = blank && is_space(text[k]);
          if (blank) text.resize(line_begin);
        }
      }
      emit_data(text);
      line_ += stripped_lines;
      pos_ = after;
      if (type == '#') {
        line_starting = skip_comment();
      } else {
        line_starting = lex_tag(type == '{');
      }
    }
    tokens_.push_back(Token{Kind::kEnd, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag_open(size_t from) const {
    for (size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1)) {
      if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) {
        return k;
      }
    }
    return std::string::npos;
  }

  void emit_data(const std::string& text) {
    if (text.empty()) return;
    tokens_.push_back(Token{Kind::kData, text, line_});
    line_ += count_newlines(text);
  }

  // After "#}": "-#}" eats the whitespace after it, "#}" one newline (trim_blocks).
  bool skip_comment() {
    const int start = line_;
    for (size_t k = pos_; k + 1 < src_.size(); ++k) {
      if (src_[k] == '+' && src_.compare(k + 1, 2, "#}") == 0)
        return finish_comment(k, k + 3, false);
      if (src_[k] == '-' && src_.compare(k + 1, 2, "#}") == 0)
        return finish_comment(k, k + 3, true);
      if (src_[k] == '#' && src_[k + 1] == '}') {
        size_t end = k + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
        return finish_comment(k, end, false);
      }
    }
    throw TemplateError(start, "missing end of comment tag");
  }

  bool finish_comment(size_t content_end, size_t end, bool strip) {
    line_ += count_newlines(std::string_view(src_).substr(pos_, content_end - pos_));
    return finish_end(content_end, end, strip);
  }

  // Consumes the end marker [at, end) plus, with "-", the whitespace after it. True when what
  // it consumed ends with a newline (jinja2's line_starting).
  bool finish_end(size_t at, size_t end, bool strip) {
    if (strip) {
      while (end < src_.size() && is_space(src_[end])) ++end;
    }
    const std::string_view consumed = std::string_view(src_).substr(at, end - at);
    line_ += count_newlines(consumed);
    pos_ = end;
    return !consumed.empty() && consumed.back() == '\n';
  }

  // The inside of {{ ... }} or {% ... %} up to and including its end marker.
  bool lex_tag(bool variable) {
    tokens_.push_back(Token{variable ? Kind::kVarBegin : Kind::kBlockBegin, "", line_});
    std::string brackets;  // the closers expected, innermost last
    bool first_name = true;
    const char closer = variable ? '}' : '%';
    while (true) {
      if (pos_ >= src_.size()) {
        throw TemplateError(line_, variable ? "unexpected end of template, expected '}}'"
                                            : "unexpected end of template, expected '%}'");
      }
      const char c = src_[pos_];
      if (brackets.empty()) {
        const bool dash = c == '-' && src_.compare(pos_ + 1, 2, std::string(1, closer) + "}") == 0;
        const bool plus =
            !variable && c == '+' && src_.compare(pos_ + 1, 2, std::string(1, closer) + "}") == 0;
        if (dash || plus || (c == closer && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}')) {
          tokens_.push_back(Token{variable ? Kind::kVarEnd : Kind::kBlockEnd, "", line_});
          const size_t at = pos_;
          size_t end = pos_ + (dash || plus ? 3 : 2);
          if (!variable && !dash && !plus && end < src_.size() && src_[end] == '\n') ++end;
          return finish_end(at, end, dash);
        }
      }
      if (is_space(c)) {
        line_ += c == '\n';
        ++pos_;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = pos_;
        while (end < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) {
          ++end;
        }
        std::string name = src_.substr(pos_, end - pos_);
        if (!variable && first_name && name == "raw") {
          throw TemplateError(line_, "the 'raw' tag is not supported");
        }
        first_name = false;
        tokens_.push_back(Token{Kind::kName, std::move(name), line_});
        pos_ = end;
        continue;
      }
      first_name = false;
      if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
        continue;
      }
      if (c == '\'' || c == '"') {
        lex_string(c);
        continue;
      }
      lex_operator(brackets);
    }
  }

  void lex_number() {
    auto digits = [&](size_t k) {
      while (k < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[k])) ||
                                 (src_[k] == '_' && k + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[k + 1]))))) {
        ++k;
      }
      return k;
    };
    size_t end = digits(pos_);
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      end = digits(end + 1);
      is_float = true;
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t k = end + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        end = digits(k);
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = pos_; k < end; ++k)
      if (src_[k] != '_') text += src_[k];
    tokens_.push_back(Token{is_float ? Kind::kFloat : Kind::kInt, text, line_});
    pos_ = end;
  }

  void lex_string(char quote) {
    const int start = line_;
    size_t k = pos_ + 1;
    while (k < src_.size() && src_[k] != quote) k += src_[k] == '\\' ? 2 : 1;
    if (k >= src_.size()) throw TemplateError(start, "unterminated string literal");
    const std::string_view body = std::string_view(src_).substr(pos_ + 1, k - pos_ - 1);
    tokens_.push_back(Token{Kind::kString, unescape(body, start), start});
    line_ += count_newlines(body);
    pos_ = k + 1;
  }

  void lex_operator(std::string& brackets) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        tokens_.push_back(Token{Kind::kOperator, op, line_});
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-*/%~<>=()[]{},.:|;").find(c) == std::string_view::npos) {
      throw TemplateError(line_, "unexpected character '" + std::string(1, c) + "'");
    }
    if (c == '(' || c == '[' || c == '{') brackets += c == '(' ? ')' : c == '[' ? ']' : '}';
    if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) throw TemplateError(line_, "unexpected '" + std::string(1, c) + "'");
      if (brackets.back() != c) {
        throw TemplateError(line_, "unexpected '" + std::string(1, c) + "', expected '" +
                                       std::string(1, brackets.back()) + "'");
      }
      brackets.pop_back();
    }
    tokens_.push_back(Token{Kind::kOperator, std::string(1, c), line_});
    ++pos_;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace h2oflex::chat_template
