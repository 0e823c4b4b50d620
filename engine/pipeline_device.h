// What computes a pipeline run, and what its device tier is.
#pragma once

namespace h2oflex {

enum class PipelineDevice {
  Cpu,          // the CPU computes; the device tier is a RAM arena it computes on in place
  CpuIsolated,  // the same arena, but treated like a GPU's memory: every byte into or out of it
                // is an explicit copy (weights and activations staged, KV metadata on the
                // device, delegated attention copies q/k/v): the GPU data path, testable on a CPU
  Cuda,         // the GPU computes; the device tier is GPU memory (needs a CUDA build)
};

// "cpu", "cpu-isolated", "cuda".
const char* pipeline_device_name(PipelineDevice d);

}  // namespace h2oflex
