// Device: where a tensor's bytes live and where the ops on it run — the host, or one CUDA device
// by its ordinal. A value type, so two GPUs (or one GPU per process) can each own a stage.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace h2oflex {

enum class DeviceKind : uint8_t { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;  // the CUDA device ordinal; always 0 for the CPU

  static constexpr Device cpu() { return {}; }
  static constexpr Device cuda(int i = 0) { return {DeviceKind::CUDA, i}; }
  // The spellings from when there was one GPU: Device::CUDA is CUDA device 0.
  static const Device CPU;
  static const Device CUDA;

  constexpr bool is_cpu() const { return kind == DeviceKind::CPU; }
  constexpr bool is_cuda() const { return kind == DeviceKind::CUDA; }

  // "cpu", "cuda:0", "cuda:1", ...
  std::string name() const;

  friend constexpr bool operator==(const Device&, const Device&) = default;
  friend constexpr auto operator<=>(const Device&, const Device&) = default;
};

inline constexpr Device Device::CPU = Device::cpu();
inline constexpr Device Device::CUDA = Device::cuda(0);

// Inverse of Device::name: "cpu", "cuda" (device 0) or "cuda:N". Throws InputError otherwise.
Device parse_device(std::string_view text);

}  // namespace h2oflex
