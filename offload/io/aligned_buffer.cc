#include "offload/io/aligned_buffer.h"

#include <new>
#include <utility>

#include "runtime/core/anonymous_memory.h"

namespace h2oflex {

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* p = map_anonymous(bytes);
  if (p == nullptr) throw std::bad_alloc();
  data_ = static_cast<char*>(p);
}

AlignedBuffer::~AlignedBuffer() {
  unmap_anonymous(data_, size_);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    unmap_anonymous(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace h2oflex
