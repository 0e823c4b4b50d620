// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex.
#pragma once

#include <string>
#include <string_view>

namespace h2oflex {

std::string sha256_hex(std::string_view data);

}  // namespace h2oflex
