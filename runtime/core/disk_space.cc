#include "runtime/core/disk_space.h"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

}  // namespace

uint64_t free_bytes_at(const std::string& dir) {
  struct statvfs st {};
  H2OFLEX_INPUT_CHECK(::statvfs(dir.c_str(), &st) == 0, "'", dir,
                      "': cannot ask its file system for free space: ", std::strerror(errno));
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

void check_free_space(const std::string& dir, uint64_t needed, const std::string& what,
                      const std::string& advice) {
  const uint64_t free = free_bytes_at(dir);
  H2OFLEX_INPUT_CHECK(needed <= free, what, " needs ", needed, " bytes (", gib(needed), ") in '",
                      dir, "' but only ", free, " bytes (", gib(free), ") are free",
                      advice.empty() ? "" : "; ", advice);
}

void reserve_file_blocks(int fd, const std::string& path, uint64_t bytes) {
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err == 0 || err == EOPNOTSUPP || err == EINVAL) return;
  throw IoError(detail::concat("reserving ", bytes, " bytes (", gib(bytes), ") for '", path,
                               "': ", std::strerror(err)));
}

}  // namespace h2oflex
