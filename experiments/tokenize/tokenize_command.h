// `h2oflex tokenize`: the token ids the engine reads for a text, and the text it writes for ids,
// through a model directory's own tokenizer (as llama.cpp's llama-tokenize shows them).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace h2oflex {

struct TokenizeOptions {
  std::string model_dir;    // --model: a directory with tokenizer.json (or vocab.json + merges.txt)
  std::string input;        // --input: JSONL, {"text": ...} per line ({"ids": [...]} to decode)
  bool decode = false;      // --decode: ids to text
  bool no_special = false;  // --no-special: encode without BOS / EOS, decode without special tokens
};

// Adds `tokenize` to `app`, parsing into `options` (which must outlive parsing). Returns the
// subcommand: when it was parsed(), call run_tokenize(options).
CLI::App* add_tokenize_subcommand(CLI::App& app, TokenizeOptions& options);

// Writes one JSON line per input line to stdout, in order: {"ids": [...]} (with
// "dropped_bytes": N when the vocabulary could not spell N bytes of the text), or with --decode
// {"text": ...}. Every line is read and checked before anything is written: a bad line is an
// InputError naming the file and the line, and stdout stays empty.
int run_tokenize(const TokenizeOptions& options);

}  // namespace h2oflex
