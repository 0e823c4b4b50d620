#include "runtime/core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Multiplier of a (lower-cased, trimmed) unit suffix, or 0 when unknown.
uint64_t unit_multiplier(const std::string& unit) {
  constexpr uint64_t kKi = 1024, kK = 1000;
  if (unit.empty() || unit == "b") return 1;
  if (unit == "k" || unit == "kib") return kKi;
  if (unit == "m" || unit == "mib") return kKi * kKi;
  if (unit == "g" || unit == "gib") return kKi * kKi * kKi;
  if (unit == "t" || unit == "tib") return kKi * kKi * kKi * kKi;
  if (unit == "kb") return kK;
  if (unit == "mb") return kK * kK;
  if (unit == "gb") return kK * kK * kK;
  if (unit == "tb") return kK * kK * kK * kK;
  return 0;
}

}  // namespace

uint64_t parse_byte_size(std::string_view text) {
  auto fail = [&](const char* why) {
    return InputError(detail::concat("invalid byte size '", text, "': ", why,
                                     " (examples: 4096, 512MiB, 4GiB, 1GB)"));
  };
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const size_t number_start = i;
  bool seen_digit = false, seen_dot = false;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      seen_digit = true;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!seen_digit) throw fail("expected a non-negative number");
  const std::string number(text.substr(number_start, i - number_start));
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t end = text.size();
  while (end > i && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  const std::string unit = lower(text.substr(i, end - i));
  const uint64_t multiplier = unit_multiplier(unit);
  if (multiplier == 0) throw fail("unknown unit");
  if (seen_dot && multiplier == 1) throw fail("a fractional number of bytes");

  if (!seen_dot) {
    uint64_t value = 0;
    for (char c : number) {
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      if (value > (UINT64_MAX - digit) / 10) throw fail("too large");
      value = value * 10 + digit;
    }
    if (value != 0 && multiplier > UINT64_MAX / value) throw fail("too large");
    return value * multiplier;
  }
  const long double value = std::stold(number) * static_cast<long double>(multiplier);
  if (value >= 18446744073709551615.0L) throw fail("too large");
  const long double rounded = std::floor(value + 0.5L);
  return static_cast<uint64_t>(rounded);
}

uint64_t parse_byte_size(std::string_view text, std::string_view what) {
  try {
    return parse_byte_size(text);
  } catch (const InputError& e) {
    throw InputError(detail::concat(what, ": ", e.what()));
  }
}

std::string format_bytes(double bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && k < 4) {
    v /= 1024.0;
    ++k;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), k == 0 ? "%.0f %s" : "%.2f %s", v, kNames[k]);
  return buf;
}

std::string describe_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[96];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s (%llu bytes)", v, units[u],
                  static_cast<unsigned long long>(bytes));
  }
  return buf;
}

}  // namespace h2oflex
