#include "models/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <functional>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/gpt2_pretokenizer.h"
#include "models/tokenizer/tokenizer_files.h"
#include "models/tokenizer/utf8.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex {

using tokenizer::AddedToken;
using tokenizer::MergeRule;
using tokenizer::TokenizerFiles;

namespace {

// Hash and equality that accept std::string_view keys without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

struct Merge {
  int32_t rank;
  int32_t merged_id;
};

// Pieces longer than this are encoded but not cached, bounding the cache's memory.
constexpr size_t kMaxCachedPieceBytes = 128;
constexpr size_t kMaxCacheEntries = 1 << 16;

}  // namespace

struct BpeTokenizer::Tables {
  StringMap token_to_id;
  std::vector<std::string> id_to_bytes;  // what each id decodes to
  std::vector<bool> has_token;           // ids can have gaps
  std::vector<bool> special;
  std::array<int32_t, 256> byte_ids{};  // the single-byte token of each byte
  std::unordered_map<uint64_t, Merge> merges;
  // Added tokens matched in the text, longest first so the first hit is the longest match.
  std::vector<std::pair<std::string, int32_t>> added;
  std::array<bool, 256> added_first_byte{};
  int32_t eos = -1;
  int32_t pad = -1;

  // Pieces seen before; filled up to kMaxCacheEntries, then only read.
  mutable std::shared_mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache;

  explicit Tables(const TokenizerFiles& files);
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void merge_piece(std::string_view piece, std::vector<int32_t>& out) const;
};

BpeTokenizer::Tables::Tables(const TokenizerFiles& files) {
  const std::string& source = files.vocab_source;
  int32_t max_id = -1;
  for (const auto& [token, id] : files.vocab) max_id = std::max(max_id, id);
  for (const AddedToken& t : files.added) max_id = std::max(max_id, t.id);
  id_to_bytes.resize(size_t(max_id + 1));
  has_token.resize(size_t(max_id + 1));
  special.resize(size_t(max_id + 1));

  for (const auto& [token, id] : files.vocab) {
    token_to_id.emplace(token, id);
    // A token that is not made of byte symbols decodes to its own text, as in Hugging Face.
    id_to_bytes[id] = tokenizer::symbols_to_bytes(token).value_or(token);
    has_token[id] = true;
  }
  for (const AddedToken& t : files.added) {
    const auto it = token_to_id.find(t.content);
    if (it != token_to_id.end()) {
      H2OFLEX_INPUT_CHECK(it->second == t.id, "tokenizer file ", source, ": added token ",
                          quote_excerpt(t.content), " has id ", t.id,
                          " but the vocabulary gives it ", it->second);
    } else {
      H2OFLEX_INPUT_CHECK(!has_token[t.id], "tokenizer file ", source, ": added token ",
                          quote_excerpt(t.content), " reuses id ", t.id);
      token_to_id.emplace(t.content, t.id);
      has_token[t.id] = true;
    }
    id_to_bytes[t.id] = t.content;  // added tokens decode to their text
    special[t.id] = t.special;
    added.emplace_back(t.content, t.id);
    added_first_byte[uint8_t(t.content[0])] = true;
  }
  std::stable_sort(added.begin(), added.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

  for (int b = 0; b < 256; ++b) {
    const std::string symbol = tokenizer::bytes_to_symbols(std::string(1, char(b)));
    const auto it = token_to_id.find(symbol);
    H2OFLEX_INPUT_CHECK(it != token_to_id.end(), "tokenizer file ", source,
                        ": the vocabulary lacks the byte token '", symbol, "' (byte ", b,
                        "), so not every text can be encoded");
    byte_ids[b] = it->second;
  }

  merges.reserve(files.merges.size());
  for (size_t rank = 0; rank < files.merges.size(); ++rank) {
    const MergeRule& m = files.merges[rank];
    const auto left = token_to_id.find(m.left);
    const auto right = token_to_id.find(m.right);
    H2OFLEX_INPUT_CHECK(left != token_to_id.end(), m.where, ": unknown token ",
                        quote_excerpt(m.left));
    H2OFLEX_INPUT_CHECK(right != token_to_id.end(), m.where, ": unknown token ",
                        quote_excerpt(m.right));
    const auto merged = token_to_id.find(m.left + m.right);
    H2OFLEX_INPUT_CHECK(merged != token_to_id.end(), m.where, ": merged token ",
                        quote_excerpt(m.left + m.right), " is not in the vocabulary");
    // A repeated rule keeps its last rank, as Hugging Face and GPT-2's encoder.py do.
    merges[pair_key(left->second, right->second)] = {int32_t(rank), merged->second};
  }

  const auto required = [&](const char* token) {
    const auto it = token_to_id.find(std::string_view(token));
    H2OFLEX_INPUT_CHECK(it != token_to_id.end(), "tokenizer file ", source,
                        ": the vocabulary has no '", token, "' token (OPT convention)");
    return it->second;
  };
  eos = required(tokenizer::kOptEosToken);
  pad = required(tokenizer::kOptPadToken);
}

void BpeTokenizer::Tables::merge_piece(std::string_view piece, std::vector<int32_t>& out) const {
  // Symbols form a linked list over the piece's bytes; a merge joins a symbol with its right
  // neighbour. Candidates are taken lowest rank first, leftmost first among equal ranks, and
  // re-checked when popped because earlier merges may have consumed their symbols.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  const int32_t n = int32_t(piece.size());
  std::vector<Symbol> symbols(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids[uint8_t(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto find_merge = [&](int32_t pos) -> const Merge* {
    const int32_t next = symbols[pos].next;
    if (next < 0) return nullptr;
    const auto it = merges.find(pair_key(symbols[pos].id, symbols[next].id));
    return it == merges.end() ? nullptr : &it->second;
  };
  const auto push = [&](int32_t pos) {
    if (const Merge* m = find_merge(pos)) queue.push({m->rank, pos});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (symbols[c.pos].id < 0) continue;  // consumed by a merge to its left
    const Merge* m = find_merge(c.pos);
    if (m == nullptr || m->rank != c.rank) continue;  // the pair changed since it was queued
    const int32_t right = symbols[c.pos].next;
    symbols[c.pos].id = m->merged_id;
    symbols[c.pos].next = symbols[right].next;
    if (symbols[right].next >= 0) symbols[symbols[right].next].prev = c.pos;
    symbols[right].id = -1;
    if (symbols[c.pos].prev >= 0) push(symbols[c.pos].prev);
    push(c.pos);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) out.push_back(symbols[i].id);
}

void BpeTokenizer::Tables::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.size() == 1) {
    out.push_back(byte_ids[uint8_t(piece[0])]);
    return;
  }
  if (piece.size() > kMaxCachedPieceBytes) {
    merge_piece(piece, out);
    return;
  }
  {
    std::shared_lock lock(cache_mutex);
    const auto it = cache.find(piece);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_piece(piece, out);
  std::unique_lock lock(cache_mutex);
  if (cache.size() < kMaxCacheEntries) {
    cache.emplace(std::string(piece), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

void BpeTokenizer::Tables::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  for (std::string_view piece : tokenizer::split_gpt2(text)) encode_piece(piece, out);
}

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Tables> tables) : tables_(std::move(tables)) {}

BpeTokenizer BpeTokenizer::load(const std::filesystem::path& dir) {
  const std::filesystem::path json_file = dir / "tokenizer.json";
  if (std::filesystem::exists(json_file)) return load_tokenizer_json(json_file);
  return load_vocab_merges(dir / "vocab.json", dir / "merges.txt");
}

BpeTokenizer BpeTokenizer::load_tokenizer_json(const std::filesystem::path& file) {
  return BpeTokenizer(std::make_shared<const Tables>(tokenizer::read_tokenizer_json(file)));
}

BpeTokenizer BpeTokenizer::load_vocab_merges(const std::filesystem::path& vocab_file,
                                             const std::filesystem::path& merges_file) {
  return BpeTokenizer(
      std::make_shared<const Tables>(tokenizer::read_vocab_merges(vocab_file, merges_file)));
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos) const {
  const Tables& t = *tables_;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos) ids.push_back(t.eos);

  // Split around added tokens (leftmost, then longest match); BPE the text between them.
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const std::pair<std::string, int32_t>* hit = nullptr;
    if (t.added_first_byte[uint8_t(text[pos])]) {
      for (const auto& candidate : t.added) {
        if (text.substr(pos).starts_with(candidate.first)) {
          hit = &candidate;
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    t.encode_plain(text.substr(plain_start, pos - plain_start), ids);
    ids.push_back(hit->second);
    pos += hit->first.size();
    plain_start = pos;
  }
  t.encode_plain(text.substr(plain_start), ids);
  return ids;
}

std::string BpeTokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  const Tables& t = *tables_;
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= t.has_token.size() || !t.has_token[id]) continue;
    if (skip_special && t.special[id]) continue;
    out += t.id_to_bytes[id];
  }
  return out;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return tokenizer::to_valid_utf8(decode_bytes(ids, skip_special));
}

int32_t BpeTokenizer::bos_id() const {
  return tables_->eos;
}
int32_t BpeTokenizer::eos_id() const {
  return tables_->eos;
}
int32_t BpeTokenizer::pad_id() const {
  return tables_->pad;
}
size_t BpeTokenizer::vocab_size() const {
  return tables_->has_token.size();
}

std::optional<int32_t> BpeTokenizer::token_to_id(std::string_view token) const {
  const auto it = tables_->token_to_id.find(token);
  if (it == tables_->token_to_id.end()) return std::nullopt;
  return it->second;
}

bool BpeTokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < tables_->special.size() && tables_->special[id];
}

}  // namespace h2oflex
