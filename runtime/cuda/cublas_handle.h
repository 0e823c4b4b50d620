// The calling thread's cuBLAS handle for the current device, bound to the stream its ops run on.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace h2oflex::cuda {

// Created on first use per (thread, device): cuBLAS handles are not meant to be shared between
// threads that use them concurrently, and a handle serves the device current at its creation.
// Bound to `stream` (a stream of the current device) on every call.
cublasHandle_t cublas_handle(cudaStream_t stream);

}  // namespace h2oflex::cuda
