// Temporary files that must not outlive an interrupted command (a half-written weight layout, a
// bench-io test file of many GiB, a document's `.tmp`): each is registered while it exists, and
// SIGINT / SIGTERM unlink every registered path before the signal takes its usual effect.
// One registry for the whole process, so every writer of large or temporary files uses it.
#pragma once

#include <string>

namespace h2oflex {

// Installs the SIGINT / SIGTERM handler that unlinks the registered paths, then restores the
// disposition it found and raises the signal again (so the process still ends, or a handler
// installed before it runs). Call once, early in main; handlers installed later (generate's
// stop request) hand a signal they do not take on to it.
void install_temp_file_cleanup();

// A registered temporary file: removed when the guard is destroyed (an exception, an early
// return) unless kept, and by the signal handler while registered. At most 64 at once.
class TempFile {
 public:
  explicit TempFile(std::string path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  // The file became a result (renamed into place): no longer removed.
  void keep();

 private:
  std::string path_;
  int slot_ = -1;
};

}  // namespace h2oflex
