#include "models/gguf/gguf_spm_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "models/gguf/gguf_tokenizer.h"
#include "models/tokenizer/utf8.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

using nlohmann::json;

using namespace gguf_token_type;

// Where each code point of `token` ends (a byte that is not UTF-8 counts as one).
std::vector<size_t> code_point_ends(std::string_view token) {
  std::vector<size_t> ends;
  for (size_t pos = 0; pos < token.size();) {
    pos += tokenizer::decode_utf8_at(token, pos).length;
    ends.push_back(pos);
  }
  return ends;
}

struct Merge {
  size_t left_id, right_id;
  size_t left_chars, right_chars;
  double score;
};

}  // namespace

std::vector<std::pair<std::string, std::string>> sentencepiece_merges(
    const std::vector<std::string>& tokens, const std::vector<double>& scores) {
  std::unordered_map<std::string_view, size_t> ids;
  for (size_t id = 0; id < tokens.size(); ++id) ids.emplace(tokens[id], id);
  std::vector<Merge> merges;
  std::vector<Merge> local;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string_view token = tokens[id];
    const std::vector<size_t> ends = code_point_ends(token);
    local.clear();
    for (size_t cut = 0; cut + 1 < ends.size(); ++cut) {
      const auto left = ids.find(token.substr(0, ends[cut]));
      const auto right = ids.find(token.substr(ends[cut]));
      if (left == ids.end() || right == ids.end()) continue;
      local.push_back({left->second, right->second, cut + 1, ends.size() - cut - 1, scores[id]});
    }
    std::stable_sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return std::pair(a.left_id, a.right_id) < std::pair(b.left_id, b.right_id);
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    return std::tuple(a.score, a.left_chars, a.right_chars) >
           std::tuple(b.score, b.left_chars, b.right_chars);
  });
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) out.emplace_back(tokens[m.left_id], tokens[m.right_id]);
  return out;
}

json sentencepiece_tokenizer_json(const GgufFile& file, const std::vector<std::string>& tokens,
                                  const std::vector<int64_t>& types) {
  const std::vector<double> scores = file.numbers("tokenizer.ggml.scores");
  if (scores.size() != tokens.size()) {
    file.key_error("tokenizer.ggml.scores", detail::concat("has ", scores.size(), " entries for ",
                                                           tokens.size(), " tokens"));
  }
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    // The merges are ranked by score: a NaN would leave them without an order.
    if (!std::isfinite(scores[id])) {
      file.key_error("tokenizer.ggml.scores",
                     detail::concat("gives token ", id, " (", quote_excerpt(tokens[id]),
                                    ") the score ", scores[id], "; scores must be finite"));
    }
    vocab[tokens[id]] = id;
    const int64_t type = types[id];
    if (type == kControl || type == kUnknown || type == kUserDefined) {
      // Matched whole in the text before the rest is split, as transformers and llama.cpp do.
      added.push_back({{"id", id},
                       {"content", tokens[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type != kUserDefined}});
    } else if (type != kNormal && type != kByte && type != kUnused) {
      file.key_error(
          "tokenizer.ggml.token_type",
          detail::concat("gives token ", id, " (", quote_excerpt(tokens[id]), ") type ", type,
                         "; a SentencePiece vocabulary's tokens are normal (1), unknown "
                         "(2), control (3), user-defined (4), unused (5) or byte (6)"));
    }
  }
  if (vocab.size() != tokens.size()) {
    file.key_error("tokenizer.ggml.tokens", "holds a token twice");
  }
  json unk = nullptr;
  if (file.find("tokenizer.ggml.unknown_token_id")) {
    const uint64_t id = file.uint("tokenizer.ggml.unknown_token_id");
    if (id >= tokens.size()) {
      file.key_error(
          "tokenizer.ggml.unknown_token_id",
          detail::concat("is ", id, ", past the token list (", tokens.size(), " tokens)"));
    }
    unk = tokens[id];
  }
  const bool space_prefix = file.find("tokenizer.ggml.add_space_prefix")
                                ? file.boolean("tokenizer.ggml.add_space_prefix")
                                : true;
  json decoders =
      json::array({{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}}});
  if (space_prefix) {
    decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1u}, {"stop", 0u}});
  }
  json merges = json::array();
  for (auto& [left, right] : sentencepiece_merges(tokens, scores)) {
    merges.push_back(json::array({std::move(left), std::move(right)}));
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Metaspace"},
            {"replacement", "▁"},
            {"prepend_scheme", space_prefix ? "first" : "never"},
            {"split", false}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", unk},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

}  // namespace h2oflex
