// Byte sizes as people write them in configs: "16GiB", "512MiB", "1.5GB", "1.5TiB", "4096".
#pragma once

#include <cstdint>
#include <string>

namespace h2oflex::policy {

// Parses a byte size. Units (case-insensitive): B, KB/MB/GB/TB (powers of 1000),
// KiB/MiB/GiB/TiB (powers of 1024); no unit means bytes. Fractions are allowed with a unit
// ("1.5GB"). Throws InputError naming `what` (e.g. "hardware.host_mem") on anything else.
uint64_t parse_byte_size(const std::string& text, const std::string& what);

// "12.50 GiB" style, for messages and reports.
std::string format_bytes(double bytes);

}  // namespace h2oflex::policy
