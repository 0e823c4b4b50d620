#include "engine/device_pinning.h"

#ifdef H2OFLEX_WITH_CUDA
#include <atomic>
#include <cstdio>

#include "runtime/core/anonymous_memory.h"
#include "runtime/cuda/device.h"
#endif

namespace h2oflex {

#ifdef H2OFLEX_WITH_CUDA
namespace {
class CudaPinListener final : public PinListener {
 public:
  void register_pinned(void* ptr, size_t bytes) override {
    // The pages are faulted in on every core first: cudaHostRegister would fault them in on
    // this thread alone (the host share of an OPT-30B run is ~78 GB).
    fault_in_parallel(ptr, bytes);
    cuda::register_pinned(ptr, bytes);
  }
  // After a device error every CUDA call fails, this one too, while the buffers are freed
  // during unwinding: the failure is told once on stderr and otherwise dropped, so the error
  // that ended the run is the one reported.
  void unregister_pinned(void* ptr, size_t) noexcept override {
    try {
      cuda::unregister_pinned(ptr);
    } catch (const std::exception& e) {
      if (!told_.exchange(true)) {
        std::fprintf(stderr, "teardown: %s (ignored; later failures are not shown)\n", e.what());
      }
    } catch (...) {
    }
  }

 private:
  std::atomic<bool> told_{false};
};
}  // namespace
#endif

std::unique_ptr<PinListener> make_device_pin_listener() {
#ifdef H2OFLEX_WITH_CUDA
  if (cuda::cuda_device_available()) return std::make_unique<CudaPinListener>();
#endif
  return nullptr;
}

}  // namespace h2oflex
