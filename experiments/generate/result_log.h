// The job's output file: one JSON result per line, appended a block at a time and made durable
// before the next block starts, so an interrupted job can resume from it.
//
// Each line goes to the file with a single write() and the block ends with fsync(), so a crash
// leaves whole lines plus at most one partial last line. open() recognizes that partial line and
// truncates it away, and refuses (rather than truncate) a file whose content is not ours.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace h2oflex::generate {

class ResultLog {
 public:
  // Opens or creates `path`, takes an exclusive lock on it (a second job writing the same output
  // is an InputError), reads the ids already written and removes a torn last line. A file it
  // created is removed again when the log is destroyed by an exception before any line.
  static ResultLog open(const std::string& path);

  ResultLog(ResultLog&& other) noexcept;
  ResultLog& operator=(ResultLog&&) = delete;
  ResultLog(const ResultLog&) = delete;
  ~ResultLog();

  const std::unordered_set<std::string>& done_ids() const { return done_; }
  int64_t lines() const { return lines_; }
  // Bytes of a partial last line removed by open() (0 when the file ended cleanly).
  int64_t truncated_bytes() const { return truncated_; }

  // Appends one line per element (each a JSON object without newline), then fsyncs. Records the
  // ids as done. Throws IoError on a failed or short write.
  void append(const std::vector<std::string>& lines, const std::vector<std::string>& ids);

 private:
  ResultLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  void recover();

  std::string path_;
  int fd_ = -1;
  std::unordered_set<std::string> done_;
  int64_t lines_ = 0;
  int64_t size_ = 0;
  int64_t truncated_ = 0;
  bool created_ = false;      // open() created the file
  int uncaught_at_open_ = 0;  // std::uncaught_exceptions() then: more at destruction = a failure
};

}  // namespace h2oflex::generate
