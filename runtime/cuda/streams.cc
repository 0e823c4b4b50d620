#include "runtime/cuda/streams.h"

#include <cstdint>
#include <utility>

#include "runtime/core/gpu_memory_reserve.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/device_table.h"

namespace h2oflex::cuda {

std::string_view stream_name(StreamKind kind) {
  switch (kind) {
    case StreamKind::Compute:
      return "compute";
    case StreamKind::WeightLoad:
      return "weight_load";
    case StreamKind::CacheLoad:
      return "cache_load";
    case StreamKind::CacheStore:
      return "cache_store";
  }
  return "unknown";
}

namespace {

// Op temporaries come from the device's stream-ordered pool (cudaMallocAsync allocates from the
// pool of the stream's device). Freed blocks up to the threshold stay in the pool at
// synchronizations, so per-op temporaries cost no driver call in steady state; beyond it the
// pool gives memory back. Until a run sets its planned bound, keep what two converted GEMM
// operand pieces and a KV store gather take.
constexpr uint64_t kDefaultPoolKeepBytes =
    2 * gpu_reserve::kGemmOperandChunkBytes + gpu_reserve::kStoreGatherBytes;

void set_release_threshold(int device, uint64_t bytes) {
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &bytes));
}

}  // namespace

void set_pool_keep_bytes(int device, uint64_t bytes) {
  streams(device);  // creating the streams sets the default: it must not come after
  set_release_threshold(device, bytes);
}

Streams::Streams(int device) : device_(device) {
  for (auto& s : streams_) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  set_release_threshold(device, kDefaultPoolKeepBytes);
}

Streams::~Streams() {
  // Errors are ignored: destructors must not throw, and at process exit the driver may already
  // have torn the context down.
  for (auto& s : streams_) {
    if (s != nullptr) cudaStreamDestroy(s);
  }
}

void Streams::synchronize(StreamKind kind) const {
  CUDA_CHECK(cudaStreamSynchronize(get(kind)));
}

void Streams::synchronize_all() const {
  for (cudaStream_t s : streams_) CUDA_CHECK(cudaStreamSynchronize(s));
}

Streams& streams(int device) {
  // Never destroyed: destroying streams after the CUDA runtime has shut down at exit is an error.
  static DeviceTable<Streams>* const table = new DeviceTable<Streams>();
  return table->get(device);
}

Streams& streams() {
  return streams(current_device());
}

namespace {
thread_local cudaStream_t tls_stream = nullptr;
thread_local int tls_stream_device = -1;
thread_local bool tls_has_stream = false;
}  // namespace

cudaStream_t current_stream() {
  const int device = current_device();
  if (tls_has_stream && tls_stream_device == device) return tls_stream;
  return streams(device).get(StreamKind::Compute);
}

StreamScope::StreamScope(cudaStream_t stream)
    : previous_(tls_stream), previous_device_(tls_stream_device), had_previous_(tls_has_stream) {
  int device = 0;
  CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  tls_stream = stream;
  tls_stream_device = device;
  tls_has_stream = true;
}

StreamScope::~StreamScope() {
  tls_stream = previous_;
  tls_stream_device = previous_device_;
  tls_has_stream = had_previous_;
}

Event::Event(bool timing) {
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::wait(cudaStream_t stream) const {
  CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

void Event::synchronize() const {
  CUDA_CHECK(cudaEventSynchronize(event_));
}

bool Event::ready() const {
  const cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    // An answer, not an error; but the runtime also records it as the thread's last error,
    // where the next launch check would take it for a failed launch. Only that one is cleared.
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
    return false;
  }
  CUDA_CHECK(err);
  return true;
}

float Event::elapsed_ms(const Event& start) const {
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

}  // namespace h2oflex::cuda
