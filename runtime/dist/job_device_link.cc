#include "runtime/dist/job_device_link.h"

#include <memory>

#include "runtime/dist/transport.h"
#ifdef H2OFLEX_HAVE_NCCL
#include "runtime/dist/nccl_link.h"
#endif

namespace h2oflex {

namespace {
bool g_tried = false;
std::unique_ptr<DeviceLink> g_link;
}  // namespace

DeviceLink* job_device_link() {
  if (!in_multi_process_job()) return nullptr;
  if (!g_tried) {
    g_tried = true;
#ifdef H2OFLEX_HAVE_NCCL
    g_link = NcclLink::connect_if_gpus_distinct(*job_transport());
#endif
  }
  return g_link.get();
}

void release_job_device_link() {
  g_link.reset();
}

}  // namespace h2oflex
