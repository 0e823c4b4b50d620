#include "models/gguf/gguf_metadata.h"

#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex {

int64_t gguf_vocab(const GgufFile& f) {
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) {
    throw InputError(f.where("tensor 'token_embd.weight' (the token embedding) is missing"));
  }
  if (embd->dims.size() != 2) {
    throw InputError(f.where(
        detail::concat("tensor 'token_embd.weight' has ", embd->dims.size(), " dims; 2 expected")));
  }
  return static_cast<int64_t>(embd->dims[1]);
}

int64_t gguf_positive(const GgufFile& f, const std::string& key) {
  const uint64_t v = f.uint(key);
  if (v == 0 || v > (uint64_t{1} << 40))
    f.key_error(key, detail::concat("is ", v, "; out of range"));
  return static_cast<int64_t>(v);
}

int32_t gguf_token_id(const GgufFile& f, const std::string& name, int64_t vocab, int32_t fallback) {
  const std::string key = "tokenizer.ggml." + name + "_token_id";
  if (f.find(key) == nullptr) return fallback;
  const uint64_t id = f.uint(key);
  if (id >= uint64_t(vocab)) {
    f.key_error(key, detail::concat("is ", id, ", past the vocabulary (", vocab, " tokens)"));
  }
  return static_cast<int32_t>(id);
}

void gguf_refuse_rope_scaling(const GgufFile& f, const std::string& p) {
  for (const char* key : {"rope.scaling.type", "rope.scaling.factor"}) {
    if (f.find(p + key) == nullptr) continue;
    if (std::string(key) == "rope.scaling.type" && f.string(p + key) == "none") continue;
    if (std::string(key) == "rope.scaling.factor" && f.number(p + key) == 1.0) continue;
    f.key_error(p + key, "is given; rope scaling from GGUF metadata is not supported");
  }
}

}  // namespace h2oflex
