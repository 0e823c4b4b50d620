// Model hyper-parameters read from GGUF metadata, the rules every architecture shares: sizes,
// special-token ids, and the rope settings the families cannot run.
#pragma once

#include <cstdint>
#include <string>

#include "models/gguf/gguf_file.h"

namespace h2oflex {

// An integer key that must be in 1 .. 2^40; InputError naming the key otherwise.
int64_t gguf_positive(const GgufFile& file, const std::string& key);

// The vocabulary size: `token_embd.weight`'s row count (the token list may be shorter or
// absent); InputError when that tensor is missing or not 2-D.
int64_t gguf_vocab(const GgufFile& file);

// `tokenizer.ggml.<name>_token_id` (e.g. "bos") or `fallback` when absent; InputError naming the
// key when it is past the vocabulary of `vocab` tokens.
int32_t gguf_token_id(const GgufFile& file, const std::string& name, int64_t vocab,
                      int32_t fallback);

// Refuses `<prefix>rope.scaling.type` / `<prefix>rope.scaling.factor` unless they say none / 1.
void gguf_refuse_rope_scaling(const GgufFile& file, const std::string& prefix);

}  // namespace h2oflex
