// Checks a command makes on its files before any work: every output can be written where it is
// going and is none of the inputs and none of the other outputs (compared after resolving links,
// so `--json` pointing at the config through a symlink is caught too). Each command lists every
// file it reads (a model directory's files, a suite and the files it names) and every file it
// writes (a suite's tables and plot), so one check covers them all. Plus the atomic write every
// command uses for its result documents.
#pragma once

#include <string>
#include <vector>

namespace h2oflex {

struct NamedPath {
  std::string what;  // how the user gave it: "--json", "--input", "the config file"
  std::string path;  // empty: not given, skipped
};

// Throws InputError naming the option and the path when an output is a directory, lies in a
// directory that is missing or cannot be written (tried by creating and removing a probe file),
// or is the same file as an input or another output. An output's temporary file
// (temporary_path_for) must not be an input either.
void check_output_paths(const std::vector<NamedPath>& inputs,
                        const std::vector<NamedPath>& outputs);

// Every file in the directory `dir` and below, as inputs named "a file of <what>"; nothing when
// `dir` is no directory (a published model name). A model directory's files are all inputs:
// config, shards, index, tokenizer files and whatever else lies there. A model that is one file
// (a GGUF checkpoint) is that input itself.
void add_directory_inputs(std::vector<NamedPath>& inputs, const std::string& dir,
                          const std::string& what);

// The files `names` in the output directory `dir`, each named "<what> file <name>".
std::vector<NamedPath> files_in(const std::string& dir, const std::vector<std::string>& names,
                                const std::string& what);

// An output directory made for a command: the missing levels of `dir` are created, and removed
// again (when still empty) unless keep() is called, so a command refused after making it leaves
// nothing behind.
class OutputDirectory {
 public:
  OutputDirectory(const std::string& dir, const std::string& what);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;
  void keep() { created_.clear(); }

 private:
  std::vector<std::string> created_;  // deepest last
};

// `path.tmp`: where a document is written before it is renamed over `path`.
std::string temporary_path_for(const std::string& path);

// Throws InputError naming `what` unless `dir` is an existing directory this process can create
// files in (tried the same way).
void check_writable_directory(const std::string& dir, const std::string& what);

// A file that belongs to a JSONL output: `OUT.jsonl` (or `OUT`) with `suffix` in place of the
// extension, e.g. OUT.errors.jsonl, OUT.job.json.
std::string beside_output(const std::string& output_path, const std::string& suffix);

// Writes `text` to `path` through `path.tmp` + rename, so a reader never sees half a document and a
// failure leaves neither a partial file nor the temp file behind. Throws IoError.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace h2oflex
