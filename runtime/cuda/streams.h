// Named CUDA streams (compute, weight load, cache load, cache store) and events, so the pipeline
// can overlap I/O with compute and order them with record/wait instead of device-wide syncs.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <string_view>

namespace h2oflex::cuda {

enum class StreamKind : int { Compute = 0, WeightLoad = 1, CacheLoad = 2, CacheStore = 3 };
inline constexpr int kNumStreamKinds = 4;

std::string_view stream_name(StreamKind kind);

// One non-blocking stream per kind on one device. Non-blocking: none of them synchronizes
// implicitly with the legacy default stream, so all ordering is explicit.
class Streams {
 public:
  // Creates the streams on `device`, which must be current (streams(device) sees to that).
  explicit Streams(int device);
  ~Streams();
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  int device() const { return device_; }
  cudaStream_t get(StreamKind kind) const { return streams_[static_cast<int>(kind)]; }
  void synchronize(StreamKind kind) const;
  void synchronize_all() const;

 private:
  int device_;
  std::array<cudaStream_t, kNumStreamKinds> streams_{};
};

// How many freed bytes device `device`'s stream-ordered pool (the ops' temporaries) keeps at a
// synchronization; the rest goes back to the driver. A run sets its memory plan's pool bound.
void set_pool_keep_bytes(int device, uint64_t bytes);

// The stream set of CUDA device `device`, created on first use (each device owns its own, so two
// devices can each run a stage). Never destroyed.
Streams& streams(int device);
// The stream set of the calling thread's current device.
Streams& streams();

// The stream this thread's ops run on: the current device's compute stream unless a StreamScope
// for a stream of that device says otherwise.
cudaStream_t current_stream();

// Runs this thread's ops on `stream` while the scope lives (scopes nest). The scope applies to
// ops on the device `stream` belongs to; ops on another device keep that device's compute stream
// (a stream of one device cannot carry another device's kernels).
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t previous_;
  int previous_device_;
  bool had_previous_;
};

// A CUDA event: record it on one stream, make another stream (or the host) wait for it. An event
// belongs to the device current at its creation and is recorded on that device's streams; any
// device's stream may wait for it.
class Event {
 public:
  // `timing` enables elapsed_ms; without it events are cheaper.
  explicit Event(bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;

  void record(cudaStream_t stream);
  // With a StreamKind: that stream of the current device (the event must belong to it too).
  void record(StreamKind kind) { record(streams().get(kind)); }
  // Work submitted to `stream` after this call starts only once the event has completed.
  void wait(cudaStream_t stream) const;
  void wait(StreamKind kind) const { wait(streams().get(kind)); }
  // Blocks the host until the event has completed.
  void synchronize() const;
  // True if the work before the event has completed (does not block).
  bool ready() const;
  // Milliseconds between `start` (recorded earlier) and this event; both need timing.
  float elapsed_ms(const Event& start) const;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace h2oflex::cuda
