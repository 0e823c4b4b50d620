#include "policy/byte_size.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "runtime/core/error.h"

namespace h2oflex::policy {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Multiplier of a unit suffix, or 0 when the suffix is not a unit.
double unit_multiplier(const std::string& unit) {
  if (unit.empty() || unit == "b") return 1.0;
  static constexpr struct {
    const char* name;
    double mult;
  } kUnits[] = {
      {"k", 1e3},
      {"kb", 1e3},
      {"m", 1e6},
      {"mb", 1e6},
      {"g", 1e9},
      {"gb", 1e9},
      {"t", 1e12},
      {"tb", 1e12},
      {"kib", 1024.0},
      {"mib", 1048576.0},
      {"gib", 1073741824.0},
      {"tib", 1099511627776.0},
  };
  for (const auto& u : kUnits) {
    if (unit == u.name) return u.mult;
  }
  return 0.0;
}

}  // namespace

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  std::string s = text;
  s.erase(std::remove_if(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); }),
          s.end());
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string number = s.substr(0, i);
  const std::string unit = lower(s.substr(i));
  const double mult = unit_multiplier(unit);
  H2OFLEX_INPUT_CHECK(!number.empty() && std::count(number.begin(), number.end(), '.') <= 1 &&
                          number != "." && mult > 0,
                      what, ": '", text,
                      "' is not a byte size (examples: 16GiB, 512MiB, 1.5GB, 4096)");
  const double value = std::stod(number) * mult;
  H2OFLEX_INPUT_CHECK(value < 1.8e19, what, ": '", text, "' is too large");
  H2OFLEX_INPUT_CHECK(unit.empty() || unit == "b" ? number.find('.') == std::string::npos : true,
                      what, ": '", text, "' is a fractional number of bytes");
  return static_cast<uint64_t>(std::llround(value));
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

}  // namespace h2oflex::policy
