#include "offload/tiers/memory_tier.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/core/anonymous_memory.h"
#include "runtime/core/byte_size.h"

namespace h2oflex {

void MemoryTier::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  H2OFLEX_CHECK(is_host_addressable(), "tier '", name(), "' must override copy_from_host");
  std::memcpy(dst, host_src, bytes);
}

void MemoryTier::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  H2OFLEX_CHECK(is_host_addressable(), "tier '", name(), "' must override copy_to_host");
  std::memcpy(host_dst, src, bytes);
}

void MemoryTier::gather_to_host(void* host_dst, const void* src, const ByteRanges& ranges) {
  char* out = static_cast<char*>(host_dst);
  for (const auto& [off, len] : ranges) {
    copy_to_host(out, static_cast<const char*>(src) + off, len);
    out += len;
  }
}

void* DeviceMemoryTier::allocate(size_t bytes, std::string_view what) {
  const uint64_t rounded = round_up(std::max<size_t>(bytes, 1));
  charge(rounded, what);
  void* ptr = nullptr;
  try {
    ptr = raw_allocate(rounded);
  } catch (...) {
    discharge(rounded);
    throw;
  }
  std::lock_guard lock(mutex_);
  sizes_.emplace(ptr, rounded);
  return ptr;
}

void DeviceMemoryTier::free(void* ptr) {
  if (ptr == nullptr) return;
  uint64_t bytes = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(ptr);
    H2OFLEX_CHECK(it != sizes_.end(), "tier 'device': free of an unknown pointer");
    bytes = it->second;
    sizes_.erase(it);
  }
  raw_free(ptr, bytes);
  discharge(bytes);
}

void DeviceMemoryTier::release_all() noexcept {
  std::lock_guard lock(mutex_);
  for (auto& [ptr, bytes] : sizes_) {
    try {
      raw_free(ptr, bytes);
    } catch (...) {
    }
  }
  sizes_.clear();
}

CpuDeviceTier::CpuDeviceTier(uint64_t budget, size_t alignment, bool host_addressable)
    : DeviceMemoryTier(budget, alignment), host_addressable_(host_addressable) {
  H2OFLEX_CHECK(alignment <= 4096, "tier 'device' on the CPU: alignment ", alignment,
                " exceeds the page its memory is mapped in");
}

void* CpuDeviceTier::raw_allocate(size_t bytes) {
  void* ptr = map_anonymous(bytes);
  if (ptr == nullptr) throw std::bad_alloc();
  return ptr;
}

void CpuDeviceTier::raw_free(void* ptr, size_t bytes) {
  unmap_anonymous(ptr, bytes);
}

void CpuDeviceTier::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  std::memcpy(dst, host_src, bytes);
}

void CpuDeviceTier::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  std::memcpy(host_dst, src, bytes);
}

HostTier::HostTier(uint64_t budget) : MemoryTier(TierKind::Host, "host", budget, 4096) {}

HostTier::~HostTier() {
  for (auto& [ptr, m] : mappings_) {
    if (m.pinned) {
      for (PinListener* l : listeners_) l->unregister_pinned(ptr, m.bytes);
    }
    unmap_anonymous(ptr, m.bytes);
  }
}

void* HostTier::map(size_t bytes, bool pinned, std::string_view what) {
  const uint64_t rounded = round_up(std::max<size_t>(bytes, 1));
  charge(rounded, what);
  void* ptr = map_anonymous(rounded);
  if (ptr == nullptr) {
    const int err = errno;
    discharge(rounded);
    throw std::runtime_error(detail::concat("tier 'host': mmap of ", describe_bytes(rounded),
                                            " failed: ", std::strerror(err)));
  }
  std::lock_guard lock(mutex_);
  if (pinned) {
    // A refused pin (cudaHostRegister failing) undoes the pins before it, the mapping and the
    // charge: nothing stays charged for a buffer the caller never received.
    size_t done = 0;
    try {
      for (; done < listeners_.size(); ++done) listeners_[done]->register_pinned(ptr, rounded);
    } catch (...) {
      while (done > 0) listeners_[--done]->unregister_pinned(ptr, rounded);
      unmap_anonymous(ptr, rounded);
      discharge(rounded);
      throw;
    }
  }
  mappings_.emplace(ptr, Mapping{rounded, pinned});
  return ptr;
}

void* HostTier::allocate(size_t bytes, std::string_view what) {
  return map(bytes, false, what);
}

void* HostTier::allocate_pinned(size_t bytes, std::string_view what) {
  return map(bytes, true, what);
}

void HostTier::free(void* ptr) {
  if (ptr == nullptr) return;
  Mapping m{};
  {
    std::lock_guard lock(mutex_);
    auto it = mappings_.find(ptr);
    H2OFLEX_CHECK(it != mappings_.end(), "tier 'host': free of an unknown pointer");
    m = it->second;
    mappings_.erase(it);
    if (m.pinned) {
      for (PinListener* l : listeners_) l->unregister_pinned(ptr, m.bytes);
    }
  }
  unmap_anonymous(ptr, m.bytes);
  discharge(m.bytes);
}

void HostTier::add_pin_listener(PinListener* listener) {
  std::lock_guard lock(mutex_);
  listeners_.push_back(listener);
  for (auto& [ptr, m] : mappings_) {
    if (m.pinned) listener->register_pinned(ptr, m.bytes);
  }
}

void HostTier::remove_pin_listener(PinListener* listener) {
  std::lock_guard lock(mutex_);
  auto it = std::find(listeners_.begin(), listeners_.end(), listener);
  if (it == listeners_.end()) return;
  listeners_.erase(it);
  for (auto& [ptr, m] : mappings_) {
    if (m.pinned) listener->unregister_pinned(ptr, m.bytes);
  }
}

}  // namespace h2oflex
