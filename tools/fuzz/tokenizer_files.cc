// The tokenizer files: vocab.json (before the first NUL byte) and merges.txt (after it); an
// accepted pair must then encode and decode a text with every kind of character.
#include "models/tokenizer/bpe_tokenizer.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(tokenizer_files) {
  using namespace h2oflex;
  const auto [vocab, merges] = fuzz::split_at_nul(fuzz::as_text(data, size));
  const auto vocab_file = fuzz::write_scratch("vocab.json", vocab);
  const auto merges_file = fuzz::write_scratch("merges.txt", merges);
  try {
    const BpeTokenizer tok = BpeTokenizer::load_vocab_merges(vocab_file, merges_file);
    const std::vector<int32_t> ids = tok.encode("Hello, world! 12 \xc3\xa9\xe2\x82\xac \xff\n");
    (void)tok.decode(ids);
  } catch (const InputError&) {
  }
  return 0;
}
