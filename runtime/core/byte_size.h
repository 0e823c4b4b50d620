// Byte sizes as people write them in configuration and on the command line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace h2oflex {

// Parses "4096", "4GiB", "512MiB", "1GB", "1.5 GiB", "64k".
// Suffixes: B; KB/MB/GB/TB are powers of 1000; KiB/MiB/GiB/TiB and the bare K/M/G/T (as in
// fio and dd) are powers of 1024. Case-insensitive. Throws InputError naming the text.
uint64_t parse_byte_size(std::string_view text);

// The same, for a configuration value: errors start with `what` (the key, e.g.
// "hardware.host_mem").
uint64_t parse_byte_size(std::string_view text, std::string_view what);
// "1.50 GiB (1610612736 bytes)"-style text for messages.
std::string describe_bytes(uint64_t bytes);
// "12.50 GiB"-style text for reports and tables.
std::string format_bytes(double bytes);

}  // namespace h2oflex
