// DeviceTable<T>: one T per CUDA device ordinal, created on first use with that device current
// (CUDA objects belong to the device current at their creation) and the caller's device restored.
// Lookups after creation take no lock, so per-op lookups (the current stream) stay cheap.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"

namespace h2oflex::cuda {

// More ordinals than any one node has; a fixed bound keeps the lookup a plain array index.
inline constexpr int kMaxDevices = 64;

template <typename T>
class DeviceTable {
 public:
  DeviceTable() = default;
  // Destroys the entries (the owner decides whether a table is ever destroyed: entries must not
  // outlive the CUDA runtime, which is torn down at process exit).
  ~DeviceTable() {
    for (auto& slot : slots_) delete slot.load(std::memory_order_relaxed);
  }
  DeviceTable(const DeviceTable&) = delete;
  DeviceTable& operator=(const DeviceTable&) = delete;

  // The entry of `device`, built as T(device) with `device` current on first use.
  T& get(int device) {
    if (device < 0 || device >= kMaxDevices) {
      throw CudaError(::h2oflex::detail::concat("CUDA device ordinal ", device, " out of range"));
    }
    std::atomic<T*>& slot = slots_[static_cast<size_t>(device)];
    if (T* entry = slot.load(std::memory_order_acquire)) return *entry;
    const std::lock_guard<std::mutex> lock(create_mutex_);
    if (T* entry = slot.load(std::memory_order_acquire)) return *entry;  // another thread won
    const DeviceGuard guard(device);
    auto entry = std::make_unique<T>(device);
    slot.store(entry.get(), std::memory_order_release);
    return *entry.release();
  }

 private:
  std::array<std::atomic<T*>, kMaxDevices> slots_{};
  std::mutex create_mutex_;
};

}  // namespace h2oflex::cuda
