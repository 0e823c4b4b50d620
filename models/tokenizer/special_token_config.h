// What a model directory says about its special tokens besides tokenizer.json:
// tokenizer_config.json, special_tokens_map.json, generation_config.json and config.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace h2oflex::tokenizer {

// A token named by a key such as "eos_token": a string, or an object with "content".
struct NamedToken {
  bool given = false;               // some file has the key
  std::optional<std::string> name;  // nullopt when the file says null (the model has none)
  std::string where;                // "tokenizer file FILE: KEY", for messages
};

struct SpecialTokenConfig {
  // tokenizer_config.json, else special_tokens_map.json.
  NamedToken bos;
  NamedToken eos;
  NamedToken pad;
  NamedToken unk;  // passed to chat templates as unk_token
  // tokenizer_config.json's add_bos_token / add_eos_token: when given, they decide whether BOS /
  // EOS go around the text, overriding tokenizer.json's post_processor (as transformers' Llama
  // tokenizers do).
  std::optional<bool> add_bos;
  std::optional<bool> add_eos;
  std::string add_bos_where;
  std::string add_eos_where;
  // generation_config.json's eos_token_id (an id or a list of ids); empty when absent.
  bool has_generation_config = false;
  std::vector<int32_t> generation_eos_ids;
  // config.json's bos_token_id, eos_token_id (an id or a list) and pad_token_id.
  std::optional<int32_t> config_bos_id;
  std::vector<int32_t> config_eos_ids;
  std::optional<int32_t> config_pad_id;
};

// Reads whichever of the files exist in `dir`; InputError naming the file and key for a value
// of the wrong type.
SpecialTokenConfig read_special_token_config(const std::filesystem::path& dir);

// The keys of a tokenizer_config.json document (bos/eos/pad/unk_token, add_bos_token,
// add_eos_token) into `out`, over what it holds; `source` names the document in messages.
void read_tokenizer_config_keys(const nlohmann::json& root, const std::string& source,
                                SpecialTokenConfig& out);

}  // namespace h2oflex::tokenizer
