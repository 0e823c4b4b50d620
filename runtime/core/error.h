// Errors: exceptions that carry what failed and where.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace h2oflex {

// Bad user input (configuration, files, arguments): the CLI exits with code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// I/O failure (disk full, EIO, short file): carries file, offset, length and errno text.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Internal invariant broken: a bug.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace h2oflex

// Throws InternalError naming the failed condition and file:line, plus an optional message.
#define H2OFLEX_CHECK(cond, ...)                                                              \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      throw ::h2oflex::InternalError(::h2oflex::detail::concat(                               \
          __FILE__, ":", __LINE__, ": check failed: " #cond " " __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                                         \
  } while (0)

// Throws InputError with the concatenated message.
#define H2OFLEX_INPUT_CHECK(cond, ...)                                     \
  do {                                                                     \
    if (!(cond)) {                                                         \
      throw ::h2oflex::InputError(::h2oflex::detail::concat(__VA_ARGS__)); \
    }                                                                      \
  } while (0)
