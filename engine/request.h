// One entry point into the engine: a typed request (the model, the device, the placement policy,
// the budgets, the generation settings and the prompts), run by `engine::run`. The engine
// chooses the path (all in RAM, or the block-schedule pipeline over tiers and stages) and builds
// the pipeline's spec itself; the commands, the suites and the Python package only fill a Request
// from their configs (parsed once, into these types) and read the Result.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/pipeline.h"
#include "engine/pipeline_device.h"
#include "engine/run_stats.h"
#include "models/decoder_model.h"
#include "policy/memory_plan.h"
#include "policy/run_policy.h"

namespace h2oflex::engine {

// The model a request runs and where its weights come from.
struct ModelInput {
  std::shared_ptr<const DecoderModel> model;
  WeightProducer producer;
  PartialWeightProducer partial_producer;  // optional: faster layout writing for dummy weights
  PackedWeightProducer packed_producer;    // optional: a GGUF tensor's blocks as stored
  std::string weights_key;                 // identifies the weights (offload layouts reuse it)
};

struct Request {
  ModelInput model;
  PipelineDevice device = PipelineDevice::Cpu;
  // The placement over tiers. None: in RAM on a CPU; on a GPU everything on the device, one GPU
  // batch of all the prompts.
  std::optional<policy::Policy> policy;
  policy::HardwareLimits limits;  // 0 budget = unlimited (host_mem also bounds the in-RAM path)
  GenerationSettings gen;         // gen_len, compute, kv_dtype, eviction, sampling
  // On the pipeline at most the policy's block (a shorter list is filled up with copies of its
  // last prompt, whose results are dropped); in RAM any number.
  std::vector<std::vector<int32_t>> prompts;
  int projected_steps = 0;  // > 0: time this many decode steps and extrapolate
  // Weights already loaded (on the request's device) for the in-RAM path: a request without a
  // policy that carries them runs in RAM on its device, reusing them (generate loads them once
  // per job). Without them the in-RAM path loads its own.
  const ModelWeights* resident_weights = nullptr;
  // What a refusal names ("run.yaml: batch_size 8"): the in-RAM memory check's subject.
  std::string subject;
};

enum class Path { InRam, Pipeline };

// The one rule: a policy, or a GPU without resident weights, takes the pipeline; else in RAM.
Path choose_path(const Request& request);

// The policy the pipeline runs for `request`: its own, or everything on the device in one GPU
// batch of all its prompts.
policy::Policy pipeline_policy(const Request& request);

// What a run tells while it works, and how it is stopped.
struct Observer {
  ProgressFn on_progress;  // optional: the pipeline's progress (the engine prints nothing)
  // Optional: asked between decode steps; true ends the run there (Result::stopped, the tokens
  // so far). In one process only: pipeline stages stop between blocks (their callers' loop).
  std::function<bool()> stop_requested;
};

struct Result {
  Path path = Path::InRam;
  policy::Policy policy;  // what the pipeline ran (pipeline_policy); default in RAM
  // Tokens and phase times on both paths; the pipeline's statistics (bytes moved, peaks, the
  // plan per tier, busy times) on the pipeline only.
  PipelineResult run;
  // The run's sizes as its plan stores them: every weight as stored (compressed where the
  // policy compresses), the KV cache of all the prompts at the eviction rule's capacity, and
  // the prompts' hidden states (f32).
  double model_bytes = 0, cache_bytes = 0, hidden_bytes = 0;
  // The device's peak: the pipeline's measured peak under a policy, else (everything on the
  // compute device) the model and the cache.
  double peak_device_bytes = 0;
  bool stopped = false;  // Observer::stop_requested ended the run early
};

// Runs the request on the path choose_path picks. Throws InputError when it cannot fit (the
// in-RAM memory check, the pipeline's budget refusal) or a stage disagrees.
Result run(const Request& request, const Observer& observer = {});

// The memory plan the pipeline would allocate for `request` (nothing is allocated or loaded):
// this process's stage's, for `run --plan-only`.
policy::MemoryPlan plan(const Request& request);

}  // namespace h2oflex::engine
