// gather_ranges: scattered pieces of device memory packed into one device buffer, so that a
// decode step's changed KV records cross the bus in one copy instead of one per record (or one
// span with all the unchanged records between them).
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 128;

struct Piece {
  uint64_t src, dst, length;  // byte offsets into src and dst
};

// grid-stride over pieces, one block per piece at a time; 4-byte words when the piece allows.
__global__ void gather_kernel(const char* src, const Piece* pieces, int64_t count, char* dst) {
  for (int64_t p = blockIdx.x; p < count; p += gridDim.x) {
    const Piece piece = pieces[p];
    const char* from = src + piece.src;
    char* to = dst + piece.dst;
    if ((piece.src | piece.dst | piece.length) % 4 == 0) {
      const uint64_t words = piece.length / 4;
      for (uint64_t i = threadIdx.x; i < words; i += blockDim.x) {
        reinterpret_cast<uint32_t*>(to)[i] = reinterpret_cast<const uint32_t*>(from)[i];
      }
    } else {
      for (uint64_t i = threadIdx.x; i < piece.length; i += blockDim.x) to[i] = from[i];
    }
  }
}

}  // namespace

void gather_ranges(const void* src, const ByteRanges& ranges, void* dst) {
  if (ranges.empty()) return;
  cudaStream_t stream = current_stream();
  std::vector<Piece> table;
  table.reserve(ranges.size());
  uint64_t at = 0;
  for (const auto& [off, len] : ranges) {
    table.push_back(Piece{off, at, len});
    at += len;
  }
  const size_t table_bytes = table.size() * sizeof(Piece);
  DeviceScratch device_table(table_bytes, stream);
  // Pageable source: the call returns once the table is staged, so `table` may go away.
  CUDA_CHECK(cudaMemcpyAsync(device_table.get(), table.data(), table_bytes, cudaMemcpyHostToDevice,
                             stream));
  const int64_t count = static_cast<int64_t>(table.size());
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(count, 65535));
  gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const char*>(src),
                                               device_table.as<const Piece>(), count,
                                               static_cast<char*>(dst));
  CUDA_CHECK_LAUNCH("gather_kernel");
}

}  // namespace h2oflex::cuda
