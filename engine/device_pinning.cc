#include "engine/device_pinning.h"

#ifdef H2OFLEX_WITH_CUDA
#include "runtime/cuda/device.h"
#endif

namespace h2oflex {

#ifdef H2OFLEX_WITH_CUDA
namespace {
class CudaPinListener final : public PinListener {
 public:
  void register_pinned(void* ptr, size_t bytes) override { cuda::register_pinned(ptr, bytes); }
  void unregister_pinned(void* ptr, size_t) override { cuda::unregister_pinned(ptr); }
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
