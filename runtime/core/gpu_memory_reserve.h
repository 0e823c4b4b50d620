// Device memory a GPU run takes outside the tensors the memory plan lists one by one: the CUDA
// context, the cuBLAS workspace and the ops' stream-ordered temporaries. The CUDA backend sizes
// these buffers with the constants below and the memory plan (policy/memory_plan) charges them
// with the same constants, so a plan that fits `device_mem` fits the card.
#pragma once

#include <cstdint>

namespace h2oflex::gpu_reserve {

// The CUDA context with this program's kernels and cuBLAS's loaded (lazy module loading): an
// estimate, not a measurement; a run reports what cudaMemGetInfo saw beside it.
inline constexpr uint64_t kContextBytes = uint64_t{512} << 20;

// The workspace every cuBLAS handle is given (cublasSetWorkspace); 32 MiB is what cuBLAS asks
// for on Hopper, and more than it needs on earlier parts.
inline constexpr uint64_t kCublasWorkspaceBytes = uint64_t{32} << 20;

// A GEMM operand converted to the compute type (the bf16 copy of an f32 input, say) is
// converted and multiplied in pieces of at most this many bytes, so the copy of a large prefill
// input never needs a buffer its own size. Input and weight pieces can be live together.
inline constexpr uint64_t kGemmOperandChunkBytes = uint64_t{64} << 20;

// Rows the sampler sorts per pass; each row takes 16 bytes per vocabulary entry (two
// probability and two id arrays) plus the sort's own temporary space, planned as as much again.
inline constexpr int64_t kSampleRowChunk = 128;
inline constexpr uint64_t kSampleBytesPerEntry = 32;

// The changed KV records of one decode-step store are gathered on the device into one buffer
// of at most this many bytes per copy to the host.
inline constexpr uint64_t kStoreGatherBytes = uint64_t{4} << 20;

}  // namespace h2oflex::gpu_reserve
