// Finds a model directory's chat template as transformers does: chat_template.jinja, else
// tokenizer_config.json's "chat_template" (a string, or a list of {name, template} of which
// "default" is used), with the special tokens (bos_token, eos_token, ...) as its variables.
#pragma once

#include <filesystem>
#include <optional>

#include "models/chat_template/chat_template.h"
#include "models/tokenizer/special_token_config.h"

namespace h2oflex::chat_template {

// nullopt when the model has no chat template. InputError naming the file and key for a
// template of the wrong type, a list without "default", or a template this renderer refuses.
std::optional<ChatTemplate> load_model_chat_template(const std::filesystem::path& dir);

// The special tokens transformers passes to a template (bos_token, eos_token, unk_token,
// pad_token), as strings; those `config` does not name stay undefined.
Dict special_token_variables(const tokenizer::SpecialTokenConfig& config);

}  // namespace h2oflex::chat_template
