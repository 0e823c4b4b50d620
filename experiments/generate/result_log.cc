#include "experiments/generate/result_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <utility>

#include "runtime/core/error.h"

namespace h2oflex::generate {

namespace {

// Every line we write starts with this (the result's first key is "id").
constexpr std::string_view kLineStart = "{\"id\":";

std::string errno_text() {
  return std::strerror(errno);
}

// A complete line is ours when it is a JSON object with a string id and a string text.
bool is_result_line(std::string_view line, std::string& id) {
  nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return false;
  auto id_it = doc.find("id");
  auto text_it = doc.find("text");
  if (id_it == doc.end() || !id_it->is_string() || text_it == doc.end() || !text_it->is_string()) {
    return false;
  }
  id = id_it->get<std::string>();
  return true;
}

// What a crash can leave after the last whole line: the start of one of our lines, or zeros
// (some file systems extend a file before its data reaches the disk).
bool looks_torn(std::string_view tail) {
  if (std::all_of(tail.begin(), tail.end(), [](char c) { return c == '\0'; })) return true;
  const size_t n = std::min(tail.size(), kLineStart.size());
  return tail.substr(0, n) == kLineStart.substr(0, n);
}

void fsync_parent_dir(const std::string& path) {
  std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;  // best effort: the file itself is fsynced
  ::fsync(dfd);
  ::close(dfd);
}

}  // namespace

ResultLog ResultLog::open(const std::string& path) {
  H2OFLEX_INPUT_CHECK(!std::filesystem::is_directory(path), "output '", path, "' is a directory");
  const bool existed = std::filesystem::exists(path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  H2OFLEX_INPUT_CHECK(fd >= 0, "cannot open output file '", path, "': ", errno_text());
  ResultLog log(path, fd);
  log.created_ = !existed;
  log.uncaught_at_open_ = std::uncaught_exceptions();
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    throw InputError(
        detail::concat("output file '", path, "' is locked: another generate job is writing it"));
  }
  if (!existed) fsync_parent_dir(path);
  log.recover();
  return log;
}

ResultLog::ResultLog(ResultLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      done_(std::move(other.done_)),
      lines_(other.lines_),
      size_(other.size_),
      truncated_(other.truncated_),
      created_(other.created_),
      uncaught_at_open_(other.uncaught_at_open_) {}

ResultLog::~ResultLog() {
  if (fd_ < 0) return;
  // A job that fails before its first result (a full disk while writing its error report)
  // leaves no output it created with nothing in it; removed while the lock is still held.
  if (created_ && lines_ == 0 && std::uncaught_exceptions() > uncaught_at_open_) {
    ::unlink(path_.c_str());
  }
  ::close(fd_);  // also releases the lock
}

void ResultLog::recover() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    throw IoError(detail::concat("stat '", path_, "': ", errno_text()));
  }
  const int64_t file_size = st.st_size;
  std::string pending;      // bytes of the line being assembled
  int64_t line_offset = 0;  // file offset where `pending` starts
  int64_t good_end = 0;     // end of the last whole result line
  std::vector<char> chunk(1 << 20);
  for (int64_t off = 0; off < file_size;) {
    const ssize_t n = ::pread(fd_, chunk.data(), chunk.size(), off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw IoError(detail::concat("reading '", path_, "' at offset ", off, ": ",
                                   n < 0 ? errno_text() : std::string("unexpected end of file")));
    }
    for (ssize_t i = 0; i < n; ++i) {
      const char c = chunk[static_cast<size_t>(i)];
      if (c != '\n') {
        pending.push_back(c);
        continue;
      }
      std::string id;
      if (!is_result_line(pending, id)) {
        throw InputError(detail::concat("output file '", path_, "': line ", lines_ + 1,
                                        " (byte offset ", line_offset,
                                        ") is not a generate result; refusing to append to a "
                                        "file this job did not write (choose another --output)"));
      }
      done_.insert(std::move(id));
      ++lines_;
      pending.clear();
      line_offset = off + i + 1;
      good_end = line_offset;
    }
    off += n;
  }
  size_ = file_size;
  if (pending.empty()) return;
  H2OFLEX_INPUT_CHECK(looks_torn(pending), "output file '", path_, "': the last line (byte offset ",
                      line_offset,
                      ") has no newline and is not a partial result line; refusing to truncate "
                      "it (choose another --output)");
  if (::ftruncate(fd_, good_end) != 0 || ::fsync(fd_) != 0) {
    throw IoError(
        detail::concat("truncating '", path_, "' to ", good_end, " bytes: ", errno_text()));
  }
  truncated_ = file_size - good_end;
  size_ = good_end;
}

void ResultLog::append(const std::vector<std::string>& lines, const std::vector<std::string>& ids) {
  H2OFLEX_CHECK(lines.size() == ids.size(), "lines ", lines.size(), " ids ", ids.size());
  std::string buf;
  for (size_t i = 0; i < lines.size(); ++i) {
    buf.assign(lines[i]);
    buf.push_back('\n');
    // One write() per line: a crash can tear only the line being written, never interleave.
    ssize_t n;
    do {
      n = ::write(fd_, buf.data(), buf.size());
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(buf.size())) {
      throw IoError(
          detail::concat("writing '", path_, "' at offset ", size_, " (", buf.size(),
                         " bytes): ", n < 0 ? errno_text() : detail::concat("short write of ", n)));
    }
    size_ += n;
    ++lines_;
  }
  if (::fsync(fd_) != 0) throw IoError(detail::concat("fsync '", path_, "': ", errno_text()));
  for (const auto& id : ids) done_.insert(id);
}

}  // namespace h2oflex::generate
