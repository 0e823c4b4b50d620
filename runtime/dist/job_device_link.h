// The job's DeviceLink between the stages' GPUs: made on the first call, a collective (every
// rank of the job calls it at the same point: when the job's agreed compute device is a GPU).
// NCCL when the build has it and every rank drives a GPU of its own; null otherwise (one
// process, no NCCL, or ranks sharing a GPU), and hidden states then go through host memory.
#pragma once

#include "runtime/dist/device_link.h"

namespace h2oflex {

DeviceLink* job_device_link();
// Destroys the link (before the job's transport and MPI end; main calls it).
void release_job_device_link();

}  // namespace h2oflex
