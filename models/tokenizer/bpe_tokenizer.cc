#include "models/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>

#include "models/tokenizer/added_tokens.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/pipeline.h"
#include "models/tokenizer/special_token_config.h"
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

// SentencePiece's byte tokens "<0x00>" .. "<0xFF>".
std::string byte_token(uint8_t b) {
  char name[8];
  std::snprintf(name, sizeof(name), "<0x%02X>", b);
  return name;
}

}  // namespace

struct BpeTokenizer::Tables {
  StringMap token_to_id;
  std::vector<std::string> id_to_token;  // the token as the files spell it (decoder input)
  std::vector<std::string> id_to_bytes;  // what each id decodes to under a ByteLevel decoder
  std::vector<bool> has_token;           // ids can have gaps
  std::vector<bool> special;
  std::unordered_map<uint64_t, Merge> merges;

  tokenizer::AddedTokenMatcher raw_added;         // matched in the text as given
  tokenizer::AddedTokenMatcher normalized_added;  // matched after the normalizer
  std::vector<tokenizer::NormalizerStep> normalizer;
  std::vector<tokenizer::PreTokenizerStep> pre_tokenizer;
  std::vector<tokenizer::DecoderStep> decoder;
  bool byte_level_decoder = false;  // decoder is exactly ByteLevel: id_to_bytes suffices

  bool byte_level = true;
  std::array<int32_t, 256> byte_ids{};      // byte level: each byte's symbol token, -1 if absent
  std::array<int32_t, 256> fallback_ids{};  // "<0xXX>" tokens, -1 where absent
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;
  int32_t unk = -1;

  std::vector<int32_t> prefix;  // put before the text by encode(.., add_bos = true)
  std::vector<int32_t> suffix;  // and after it
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t pad = -1;
  std::vector<int32_t> stop_ids;

  // A piece's ids and the bytes of it that no token stands for.
  struct EncodedPiece {
    std::vector<int32_t> ids;
    size_t dropped_bytes = 0;
  };
  // Pieces seen before; filled up to kMaxCacheEntries, then only read.
  mutable std::shared_mutex cache_mutex;
  mutable std::unordered_map<std::string, EncodedPiece, StringHash, std::equal_to<>> cache;

  explicit Tables(const TokenizerFiles& files);
  void use_opt_conventions(const std::string& source);
  void use_model_conventions(const TokenizerFiles& files,
                             const tokenizer::SpecialTokenConfig& config);
  // These three return the count of bytes dropped (see BpeTokenizer::encode).
  size_t encode_text(std::string_view text, size_t offset, std::vector<int32_t>& out) const;
  size_t encode_piece(const tokenizer::Piece& piece, std::vector<int32_t>& out) const;
  size_t initial_symbols(std::string_view piece, std::vector<int32_t>& symbols) const;
  void merge_symbols(const std::vector<int32_t>& initial, std::vector<int32_t>& out) const;
};

BpeTokenizer::Tables::Tables(const TokenizerFiles& files)
    : normalizer(files.normalizer),
      pre_tokenizer(files.pre_tokenizer),
      decoder(files.decoder),
      byte_level(files.byte_level),
      ignore_merges(files.ignore_merges),
      byte_fallback(files.byte_fallback),
      fuse_unk(files.fuse_unk) {
  const std::string& source = files.vocab_source;
  int32_t max_id = -1;
  for (const auto& [token, id] : files.vocab) max_id = std::max(max_id, id);
  for (const AddedToken& t : files.added) max_id = std::max(max_id, t.id);
  id_to_token.resize(size_t(max_id + 1));
  id_to_bytes.resize(size_t(max_id + 1));
  has_token.resize(size_t(max_id + 1));
  special.resize(size_t(max_id + 1));

  for (const auto& [token, id] : files.vocab) {
    token_to_id.emplace(token, id);
    id_to_token[id] = token;
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
    special[t.id] = t.special;
    // A normalized token is looked for in normalized text, so its own text is normalized too;
    // Hugging Face also decodes it to that normalized text.
    if (t.normalized) {
      id_to_token[t.id] = tokenizer::normalize(normalizer, t.content);
      normalized_added.add(id_to_token[t.id], t.id, t.single_word, t.lstrip, t.rstrip);
    } else {
      id_to_token[t.id] = t.content;
      raw_added.add(t.content, t.id, t.single_word, t.lstrip, t.rstrip);
    }
  }
  // A token that is not made of byte symbols decodes to its own text, as in Hugging Face.
  for (size_t id = 0; id < id_to_token.size(); ++id) {
    if (has_token[id])
      id_to_bytes[id] = tokenizer::symbols_to_bytes(id_to_token[id]).value_or(id_to_token[id]);
  }
  byte_level_decoder =
      decoder.size() == 1 && decoder[0].kind == tokenizer::DecoderStep::Kind::kByteLevel;

  // A vocabulary may lack some byte symbols (SmolLM2's has no token for 21 bytes that its
  // training text never held); initial_symbols() treats those as Hugging Face does.
  for (int b = 0; b < 256; ++b) {
    const auto symbol = token_to_id.find(tokenizer::bytes_to_symbols(std::string(1, char(b))));
    byte_ids[b] = symbol == token_to_id.end() ? -1 : symbol->second;
    const auto fallback = token_to_id.find(byte_token(uint8_t(b)));
    fallback_ids[b] = fallback == token_to_id.end() ? -1 : fallback->second;
  }
  if (files.unk_token) {
    const auto it = token_to_id.find(*files.unk_token);
    H2OFLEX_INPUT_CHECK(it != token_to_id.end(), "tokenizer file ", source,
                        ": model.unk_token: ", quote_excerpt(*files.unk_token),
                        " is not in model.vocab");
    unk = it->second;
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
}

void BpeTokenizer::Tables::use_opt_conventions(const std::string& source) {
  const auto required = [&](const char* token) {
    const auto it = token_to_id.find(std::string_view(token));
    H2OFLEX_INPUT_CHECK(it != token_to_id.end(), "tokenizer file ", source,
                        ": the vocabulary has no '", token, "' token (OPT convention)");
    return it->second;
  };
  eos = required(tokenizer::kOptEosToken);
  pad = required(tokenizer::kOptPadToken);
  bos = eos;
  prefix = {eos};
  stop_ids = {eos};
}

void BpeTokenizer::Tables::use_model_conventions(const TokenizerFiles& files,
                                                 const tokenizer::SpecialTokenConfig& config) {
  for (int32_t id : files.template_prefix) {
    H2OFLEX_INPUT_CHECK(id < int32_t(has_token.size()) && has_token[id], "tokenizer file ",
                        files.vocab_source, ": post_processor: id ", id, " names no token");
  }
  for (int32_t id : files.template_suffix) {
    H2OFLEX_INPUT_CHECK(id < int32_t(has_token.size()) && has_token[id], "tokenizer file ",
                        files.vocab_source, ": post_processor: id ", id, " names no token");
  }
  // A named token's id; -1 when the file says null.
  const auto id_of = [&](const tokenizer::NamedToken& t) {
    if (!t.name) return -1;
    const auto it = token_to_id.find(*t.name);
    H2OFLEX_INPUT_CHECK(it != token_to_id.end(), t.where, ": token ", quote_excerpt(*t.name),
                        " is not in the tokenizer's vocabulary");
    return it->second;
  };
  const auto first_or = [](const std::vector<int32_t>& ids, int32_t fallback) {
    return ids.empty() ? fallback : ids.front();
  };

  if (config.bos.given) {
    bos = id_of(config.bos);
  } else if (!files.template_prefix.empty()) {
    bos = files.template_prefix.front();
  } else {
    bos = config.config_bos_id.value_or(-1);
  }
  if (config.eos.given) {
    eos = id_of(config.eos);
  } else {
    eos = first_or(config.generation_eos_ids,
                   first_or(config.config_eos_ids, first_or(files.template_suffix, -1)));
  }
  pad = config.pad.given ? id_of(config.pad) : config.config_pad_id.value_or(-1);

  prefix = files.template_prefix;
  if (config.add_bos) {
    H2OFLEX_INPUT_CHECK(!*config.add_bos || bos >= 0, config.add_bos_where,
                        ": true, but the model names no bos_token");
    prefix = *config.add_bos ? std::vector<int32_t>{bos} : std::vector<int32_t>{};
  }
  suffix = files.template_suffix;
  if (config.add_eos) {
    H2OFLEX_INPUT_CHECK(!*config.add_eos || eos >= 0, config.add_eos_where,
                        ": true, but the model names no eos_token");
    suffix = *config.add_eos ? std::vector<int32_t>{eos} : std::vector<int32_t>{};
  }

  if (eos >= 0) stop_ids.push_back(eos);
  const std::vector<int32_t>& listed =
      config.has_generation_config ? config.generation_eos_ids : config.config_eos_ids;
  stop_ids.insert(stop_ids.end(), listed.begin(), listed.end());
  std::sort(stop_ids.begin(), stop_ids.end());
  stop_ids.erase(std::unique(stop_ids.begin(), stop_ids.end()), stop_ids.end());
}

void BpeTokenizer::Tables::merge_symbols(const std::vector<int32_t>& initial,
                                         std::vector<int32_t>& out) const {
  // Symbols form a linked list; a merge joins a symbol with its right neighbour. Candidates are
  // taken lowest rank first, leftmost first among equal ranks, and re-checked when popped
  // because earlier merges may have consumed their symbols.
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
  const int32_t n = int32_t(initial.size());
  if (n == 0) return;
  std::vector<Symbol> symbols(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) symbols[i] = {initial[i], i - 1, i + 1 < n ? i + 1 : -1};
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

size_t BpeTokenizer::Tables::initial_symbols(std::string_view piece,
                                             std::vector<int32_t>& symbols) const {
  // One symbol per character; for a byte-level model a character is one byte's symbol. A
  // character missing from the vocabulary becomes its "<0xXX>" tokens (byte fallback; for a
  // byte-level model those of the symbol's UTF-8 spelling, as Hugging Face looks them up), or the
  // unknown token, fused with unknown neighbours when fuse_unk is set, or, with neither, is
  // dropped: its neighbours become adjacent and may merge. As in Hugging Face, a pending unknown
  // token is written out only before the next known character (byte tokens do not flush it).
  bool pending_unk = false;
  size_t dropped = 0;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t length = byte_level ? 1 : tokenizer::decode_utf8_at(piece, pos).length;
    const std::string_view ch = piece.substr(pos, length);
    pos += length;
    int32_t id = -1;
    if (byte_level) {
      id = byte_ids[uint8_t(ch[0])];
    } else if (const auto it = token_to_id.find(ch); it != token_to_id.end()) {
      id = it->second;
    }
    if (id >= 0) {
      if (pending_unk) symbols.push_back(unk);
      pending_unk = false;
      symbols.push_back(id);
      continue;
    }
    const std::string spelled = byte_level ? tokenizer::bytes_to_symbols(ch) : std::string(ch);
    if (byte_fallback && std::all_of(spelled.begin(), spelled.end(),
                                     [&](char b) { return fallback_ids[uint8_t(b)] >= 0; })) {
      for (char b : spelled) symbols.push_back(fallback_ids[uint8_t(b)]);
      continue;
    }
    if (unk < 0) {
      dropped += length;
      continue;
    }
    if (pending_unk && !fuse_unk) symbols.push_back(unk);
    pending_unk = true;
  }
  if (pending_unk) symbols.push_back(unk);
  return dropped;
}

size_t BpeTokenizer::Tables::encode_piece(const tokenizer::Piece& piece,
                                          std::vector<int32_t>& out) const {
  const std::string& text = piece.text;
  if (byte_level && text.size() == 1 && byte_ids[uint8_t(text[0])] >= 0) {
    out.push_back(byte_ids[uint8_t(text[0])]);
    return 0;
  }
  if (ignore_merges) {
    // A piece that is a token as a whole is that token, merges or not.
    const auto it = token_to_id.find(byte_level ? tokenizer::bytes_to_symbols(text) : text);
    if (it != token_to_id.end()) {
      out.push_back(it->second);
      return 0;
    }
  }
  const bool cacheable = text.size() <= kMaxCachedPieceBytes;
  if (cacheable) {
    std::shared_lock lock(cache_mutex);
    const auto it = cache.find(text);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.ids.begin(), it->second.ids.end());
      return it->second.dropped_bytes;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(text.size());
  const size_t dropped = initial_symbols(text, symbols);
  const size_t start = out.size();
  merge_symbols(symbols, out);
  if (!cacheable) return dropped;
  std::unique_lock lock(cache_mutex);
  if (cache.size() < kMaxCacheEntries) {
    cache.emplace(text,
                  EncodedPiece{std::vector<int32_t>(out.begin() + start, out.end()), dropped});
  }
  return dropped;
}

size_t BpeTokenizer::Tables::encode_text(std::string_view text, size_t offset,
                                         std::vector<int32_t>& out) const {
  // As Hugging Face: normalize the stretch between raw added tokens, look for the normalized
  // added tokens in the result, pre-tokenize what lies between them and run BPE on each piece.
  const std::string normalized = tokenizer::normalize(normalizer, text);
  std::vector<tokenizer::TextSegment> segments;
  normalized_added.split(normalized, segments);
  std::vector<tokenizer::Piece> pieces;
  size_t dropped = 0;
  for (const tokenizer::TextSegment& s : segments) {
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    pieces.clear();
    tokenizer::pre_tokenize(pre_tokenizer, s.text, offset == 0 && s.offset == 0, pieces);
    for (const tokenizer::Piece& p : pieces) dropped += encode_piece(p, out);
  }
  return dropped;
}

BpeTokenizer::BpeTokenizer(std::shared_ptr<const Tables> tables) : tables_(std::move(tables)) {}

BpeTokenizer BpeTokenizer::load(const std::filesystem::path& dir) {
  const std::filesystem::path json_file = dir / "tokenizer.json";
  if (std::filesystem::exists(json_file)) return load_tokenizer_json(json_file);
  return load_vocab_merges(dir / "vocab.json", dir / "merges.txt");
}

BpeTokenizer BpeTokenizer::load_tokenizer_json(const std::filesystem::path& file) {
  TokenizerFiles files = tokenizer::read_tokenizer_json(file);
  H2OFLEX_INPUT_CHECK(files.not_gpt2_key.empty(), "tokenizer file ", file.string(),
                      ": unsupported setting ", files.not_gpt2_key,
                      " for a GPT-2/OPT tokenizer (only GPT-2 byte-level BPE is read here; "
                      "load_tokenizer() reads the other kinds)");
  // GPT-2 token bytes are their decoding, whatever the file's decoder says (null included).
  files.decoder = {{tokenizer::DecoderStep::Kind::kByteLevel, "", "", 0, 0, false}};
  auto tables = std::make_shared<Tables>(files);
  tables->use_opt_conventions(files.vocab_source);
  return BpeTokenizer(std::move(tables));
}

BpeTokenizer BpeTokenizer::load_vocab_merges(const std::filesystem::path& vocab_file,
                                             const std::filesystem::path& merges_file) {
  const TokenizerFiles files = tokenizer::read_vocab_merges(vocab_file, merges_file);
  auto tables = std::make_shared<Tables>(files);
  tables->use_opt_conventions(files.vocab_source);
  return BpeTokenizer(std::move(tables));
}

BpeTokenizer BpeTokenizer::load_model_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  H2OFLEX_INPUT_CHECK(fs::is_directory(dir), "tokenizer directory ", dir.string(),
                      ": not a directory");
  const fs::path json_file = dir / "tokenizer.json";
  if (!fs::exists(json_file)) {
    const bool has_gpt2_files = fs::exists(dir / "vocab.json") || fs::exists(dir / "merges.txt");
    H2OFLEX_INPUT_CHECK(
        has_gpt2_files || !fs::exists(dir / "tokenizer.model"), "tokenizer file ",
        (dir / "tokenizer.model").string(),
        ": SentencePiece tokenizer.model files are not read; convert it to tokenizer.json "
        "(for example transformers' AutoTokenizer.from_pretrained(dir).save_pretrained(dir))");
    H2OFLEX_INPUT_CHECK(has_gpt2_files, "tokenizer directory ", dir.string(),
                        ": no tokenizer.json, or vocab.json + merges.txt");
    return load_vocab_merges(dir / "vocab.json", dir / "merges.txt");
  }
  return from_parts(tokenizer::read_tokenizer_json(json_file),
                    tokenizer::read_special_token_config(dir));
}

BpeTokenizer BpeTokenizer::from_parts(const TokenizerFiles& files,
                                      const tokenizer::SpecialTokenConfig& config) {
  auto tables = std::make_shared<Tables>(files);
  tables->use_model_conventions(files, config);
  return BpeTokenizer(std::move(tables));
}

BpeTokenizer load_tokenizer(const std::filesystem::path& model_dir) {
  return BpeTokenizer::load_model_dir(model_dir);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos,
                                          size_t* dropped_bytes) const {
  const Tables& t = *tables_;
  size_t dropped = 0;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos) ids.insert(ids.end(), t.prefix.begin(), t.prefix.end());
  std::vector<tokenizer::TextSegment> segments;
  t.raw_added.split(text, segments);
  for (const tokenizer::TextSegment& s : segments) {
    if (s.id >= 0) {
      ids.push_back(s.id);
    } else {
      dropped += t.encode_text(s.text, s.offset, ids);
    }
  }
  if (add_bos) ids.insert(ids.end(), t.suffix.begin(), t.suffix.end());
  if (dropped_bytes != nullptr) *dropped_bytes = dropped;
  return ids;
}

std::string BpeTokenizer::decode_impl(std::span<const int32_t> ids, bool skip_special,
                                      bool lossy) const {
  const Tables& t = *tables_;
  const auto wanted = [&](int32_t id) {
    return id >= 0 && size_t(id) < t.has_token.size() && t.has_token[id] &&
           !(skip_special && t.special[id]);
  };
  if (t.byte_level_decoder) {
    std::string out;
    for (int32_t id : ids) {
      if (wanted(id)) out += t.id_to_bytes[id];
    }
    return lossy ? tokenizer::to_valid_utf8(out) : out;
  }
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (wanted(id)) tokens.push_back(t.id_to_token[id]);
  }
  std::string out = tokenizer::decode_tokens(t.decoder, std::move(tokens), lossy);
  return lossy ? tokenizer::to_valid_utf8(out) : out;
}

std::string BpeTokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  return decode_impl(ids, skip_special, /*lossy=*/false);
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return decode_impl(ids, skip_special, /*lossy=*/true);
}

std::optional<int32_t> BpeTokenizer::bos_to_prepend() const {
  if (tables_->prefix.empty()) return std::nullopt;
  return tables_->prefix.front();
}
std::optional<int32_t> BpeTokenizer::eos_to_append() const {
  if (tables_->suffix.empty()) return std::nullopt;
  return tables_->suffix.front();
}
int32_t BpeTokenizer::bos_id() const {
  return tables_->bos;
}
int32_t BpeTokenizer::eos_id() const {
  return tables_->eos;
}
int32_t BpeTokenizer::pad_id() const {
  return tables_->pad;
}
const std::vector<int32_t>& BpeTokenizer::stop_ids() const {
  return tables_->stop_ids;
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
