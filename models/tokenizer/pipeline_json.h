// Reading the normalizer, pre_tokenizer, decoder and post_processor of tokenizer.json.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/json_fields.h"
#include "models/tokenizer/pipeline.h"

namespace h2oflex::tokenizer {

// Each reader takes the value at `where` (null: the stage is absent) and throws InputError
// naming the file and key for a type or setting it does not implement.

// NFC, Prepend, Replace (String pattern) and Sequence.
std::vector<NormalizerStep> parse_normalizer(const nlohmann::json& value, const JsonWhere& where);

struct PreTokenizerSpec {
  std::vector<PreTokenizerStep> steps;
  bool byte_level = false;  // ends with ByteLevel: the model sees GPT-2 byte symbols
};
// ByteLevel (add_prefix_space false; last), Split (Isolated, not inverted), Metaspace, Sequence.
PreTokenizerSpec parse_pre_tokenizer(const nlohmann::json& value, const JsonWhere& where);

// ByteLevel, Replace (String pattern), ByteFallback, Fuse, Strip, Metaspace and Sequence.
std::vector<DecoderStep> parse_decoder(const nlohmann::json& value, const JsonWhere& where);

// What the post-processor adds around a single text: TemplateProcessing's special tokens before
// and after $A (at most one each), possibly inside a Sequence with ByteLevel (which adds none).
struct TemplateSpec {
  bool present = false;
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};
TemplateSpec parse_post_processor(const nlohmann::json& value, const JsonWhere& where);

}  // namespace h2oflex::tokenizer
