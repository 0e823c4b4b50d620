// A GGUF file's tokenizer and chat template, from its metadata (`tokenizer.ggml.*`,
// `tokenizer.chat_template`), written as the Hugging Face documents they stand for
// (tokenizer.json, tokenizer_config.json) and read by the same code that reads those files, so
// a GGUF model and its Hugging Face directory tokenize alike.
//
// `tokenizer.ggml.model` gpt2 (byte-level BPE) is read: `tokenizer.ggml.tokens` in id order,
// `tokenizer.ggml.merges`, token types (CONTROL: special added tokens; USER_DEFINED: added
// tokens), and the pre-tokenizer llama.cpp names by `tokenizer.ggml.pre`. `llama`
// (SentencePiece: tokens, `tokenizer.ggml.scores`, token types, byte fallback) is read by
// models/gguf/gguf_spm_tokenizer. Others are refused naming the key.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "models/chat_template/chat_template.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex {

// llama.cpp's token types (llama_token_type), the values of `tokenizer.ggml.token_type`.
namespace gguf_token_type {
constexpr int64_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;
}

// tokenizer.json and tokenizer_config.json (special tokens, add_bos_token, chat_template) as the
// metadata describes them. InputError naming the key for anything not read.
nlohmann::json gguf_tokenizer_json(const GgufFile& file);
nlohmann::json gguf_tokenizer_config_json(const GgufFile& file);

BpeTokenizer load_gguf_tokenizer(const GgufFile& file);

// nullopt when the file has no `tokenizer.chat_template`.
std::optional<chat_template::ChatTemplate> load_gguf_chat_template(const GgufFile& file);

}  // namespace h2oflex
