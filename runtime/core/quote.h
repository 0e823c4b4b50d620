// Text read from a user's file or argument, made safe to echo in a message: a garbage file can hold
// terminal escape sequences or megabytes of text, neither of which belongs on the terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace h2oflex {

// `text` in single quotes with control bytes, C1 controls, quotes, backslashes and invalid UTF-8
// written as \xNN (\n, \t, \r, \' and \\ for the common ones), cut after about `max_bytes` of input
// on a character boundary; a cut says how long the whole text was.
std::string quote_excerpt(std::string_view text, size_t max_bytes = 80);

}  // namespace h2oflex
