#include "runtime/core/device.h"

#include <charconv>

#include "runtime/core/error.h"

namespace h2oflex {

std::string Device::name() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  constexpr std::string_view prefix = "cuda:";
  if (text.starts_with(prefix)) {
    const std::string_view digits = text.substr(prefix.size());
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    // Digits only: from_chars would accept a sign, and "cuda:1x" must not read as cuda:1.
    if (!digits.empty() && digits.front() != '-' && digits.front() != '+' && ec == std::errc() &&
        end == digits.data() + digits.size()) {
      return Device::cuda(index);
    }
  }
  throw InputError(detail::concat("unknown device '", text,
                                  "' (expected cpu, cuda or cuda:N with N a device ordinal)"));
}

}  // namespace h2oflex
