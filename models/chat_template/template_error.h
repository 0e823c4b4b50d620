// The error a chat template raises: a construct the renderer refuses, a syntax error, or a
// failure while rendering (raise_exception(), an undefined variable, a type error).
#pragma once

#include <stdexcept>
#include <string>

namespace h2oflex::chat_template {

class TemplateError : public std::runtime_error {
 public:
  TemplateError(int line, const std::string& what)
      : std::runtime_error("line " + std::to_string(line) + ": " + what), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

// raise_exception('...') in the template: the message is the template's own.
class RaisedException : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace h2oflex::chat_template
