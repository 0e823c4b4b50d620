// Makes host staging memory usable by the GPU's DMA engine too: every pinned buffer of the host
// tier (already registered with io_uring) is also registered with cudaHostRegister, so data goes
// disk -> host -> GPU without a bounce copy.
#pragma once

#include <memory>

#include "offload/tiers/memory_tier.h"

namespace h2oflex {

// A listener that registers pinned host buffers with the CUDA driver, or null when this build has
// no CUDA backend or no GPU is present.
std::unique_ptr<PinListener> make_device_pin_listener();

}  // namespace h2oflex
