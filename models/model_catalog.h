// Every decoder family the engine runs, in one place: the published shapes by name (for runs
// with dummy weights) and a Hugging Face directory's config.json by its model_type.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "models/decoder_model.h"

namespace h2oflex {

// The published model called `name` (e.g. "opt-30b", "llama-3-8b", "meta-llama/Llama-2-7b",
// "pythia-1b"), or nullptr.
std::shared_ptr<const DecoderModel> published_model(const std::string& name);

// Every published name, family by family, for error messages and --help.
std::vector<std::string> published_model_names();
std::string published_model_list();  // comma-separated

// The model config.json in `dir` describes, named `name`. model_type picks the family: opt,
// llama, mistral, qwen2, gpt_neox; any other is an InputError naming the file and the key.
std::shared_ptr<const DecoderModel> hf_model(const std::filesystem::path& dir,
                                             const std::string& name);

// Checkpoint tensors a family's model may hold beside its weights and that the engine does not
// need: a stored copy of a tied LM head, rotary frequency buffers, causal-mask buffers.
bool is_ignorable_checkpoint_tensor(const std::string& name);

}  // namespace h2oflex
