// Memory a CPU computation takes beside the tensors the memory plan lists one by one: the GEMMs'
// operand buffers. The CPU backend bounds them with the constants below and the memory plan
// (policy/memory_plan) charges the compute device with the same constants, so a plan that fits
// `device_mem` is what the process holds. (The ops' working tensors, ops/scratch.h, scale with
// the rows and are planned from the model's scratch_elems_per_row.)
#pragma once

#include <cstdint>

namespace h2oflex::cpu_reserve {

// A 16-bit GEMM's f32 input is rounded to the operand type and multiplied in row chunks of at
// most this many rounded bytes, so a prefill input (batch x prompt rows) never needs a rounded
// copy its own size. 64 MiB holds 4096 rows of an 8192-wide input: OPT-1.3B's prefill of 8 x 512
// is one chunk.
inline constexpr uint64_t kGemmInputChunkBytes = uint64_t{64} << 20;

// A compressed weight is dequantized for a prefill-sized GEMM in pieces of at most this many
// bytes (f32 or 16-bit values), each multiplied as soon as it is ready.
inline constexpr uint64_t kCompressedPieceBytes = uint64_t{16} << 20;

// Both can be live together (a compressed piece's GEMM rounds its input in chunks).
inline constexpr uint64_t kGemmScratchBytes = kGemmInputChunkBytes + kCompressedPieceBytes;

}  // namespace h2oflex::cpu_reserve
