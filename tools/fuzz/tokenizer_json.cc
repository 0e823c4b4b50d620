// A model directory's tokenizer: tokenizer.json (before the first NUL byte) and, when given,
// tokenizer_config.json (after it), read by load_tokenizer(); an accepted directory must encode
// every byte value and every kind of character (counting what it drops) and decode the ids.
// tools/fuzz.sh adds the test fixtures' tokenizers and SmolLM2's (from its cache) as seeds.
#include <filesystem>
#include <string>

#include "models/tokenizer/bpe_tokenizer.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(tokenizer_json) {
  using namespace h2oflex;
  const auto [tokenizer, config] = fuzz::split_at_nul(fuzz::as_text(data, size));
  const auto dir = fuzz::scratch_dir() / "tokenizer_json";
  std::filesystem::create_directories(dir);
  fuzz::write_scratch("tokenizer_json/tokenizer.json", tokenizer);
  std::filesystem::remove(dir / "tokenizer_config.json");
  if (!config.empty()) fuzz::write_scratch("tokenizer_json/tokenizer_config.json", config);
  std::string text = "Hello, world! 12 345 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xff\n";
  for (int b = 0; b < 256; ++b) text.push_back(static_cast<char>(b));
  try {
    const BpeTokenizer tok = load_tokenizer(dir);
    size_t dropped = 0;
    const std::vector<int32_t> ids = tok.encode(text, true, &dropped);
    (void)tok.decode(ids);
    (void)tok.decode_bytes(ids, false);
  } catch (const InputError&) {
  }
  return 0;
}
