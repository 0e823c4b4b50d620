// Unicode Normalization Form C, the "NFC" normalizer of Hugging Face tokenizer.json files.
#pragma once

#include <string>
#include <string_view>

namespace h2oflex::tokenizer {

// Returns text in NFC: canonical decomposition, canonical ordering of combining marks, then
// canonical composition (Unicode Standard Annex #15), with the data of tools/gen_nfc_tables.py.
// Bytes that are not well-formed UTF-8 are copied unchanged and block composition across them,
// so any byte string is accepted.
std::string to_nfc(std::string_view text);

// The Unicode version the NFC tables were generated from.
const char* nfc_tables_version();

}  // namespace h2oflex::tokenizer
