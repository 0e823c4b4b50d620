#include "offload/io/disk_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

std::atomic<bool> g_refuse_direct{false};
std::atomic<int> g_fallback_warnings{0};

// statx may be missing from older headers; the layout of struct statx is stable ABI, so read the
// two DIOALIGN fields at their fixed offsets from a raw buffer.
constexpr unsigned kStatxDioAlign = 0x2000;
constexpr size_t kStatxMaskOffset = 0x00;
constexpr size_t kStatxDioMemAlignOffset = 0x98;
constexpr size_t kStatxDioOffsetAlignOffset = 0x9c;
constexpr size_t kStatxSize = 0x100;

IoError file_error(const std::string& what, const std::string& path, int err) {
  return IoError(detail::concat(what, " '", path, "': ", std::strerror(err)));
}

}  // namespace

DioAlignment query_dio_alignment(int fd) {
#ifdef SYS_statx
  alignas(8) unsigned char buf[kStatxSize] = {};
  if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, kStatxDioAlign, buf) != 0) return {};
  uint32_t mask = 0;
  std::memcpy(&mask, buf + kStatxMaskOffset, sizeof mask);
  if ((mask & kStatxDioAlign) == 0) return {};
  DioAlignment a;
  std::memcpy(&a.mem, buf + kStatxDioMemAlignOffset, sizeof a.mem);
  std::memcpy(&a.offset, buf + kStatxDioOffsetAlignOffset, sizeof a.offset);
  return a;
#else
  (void)fd;
  return {};
#endif
}

std::unique_ptr<DiskFile> DiskFile::open(const std::string& path, FileOpen mode,
                                         DiskFileOptions options) {
  int flags = O_CLOEXEC;
  switch (mode) {
    case FileOpen::CreateTruncate:
      flags |= O_RDWR | O_CREAT | O_TRUNC;
      break;
    case FileOpen::ReadWrite:
      flags |= O_RDWR;
      break;
    case FileOpen::ReadOnly:
      flags |= O_RDONLY;
      break;
  }
  std::unique_ptr<DiskFile> file(new DiskFile());
  file->path_ = path;
  int fd = -1;
  bool direct = false;
  if (options.direct) {
    if (g_refuse_direct.load()) {
      errno = EINVAL;
    } else {
      fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
    }
    if (fd >= 0) {
      direct = true;
    } else if (errno != EINVAL) {
      throw file_error("cannot open", path, errno);
    } else if (g_fallback_warnings.fetch_add(1) == 0) {
      std::fprintf(stderr,
                   "warning: the file system of '%s' refuses O_DIRECT (tmpfs?); using buffered "
                   "I/O, so throughput includes the page cache\n",
                   path.c_str());
    }
  }
  if (fd < 0) fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) throw file_error("cannot open", path, errno);
  file->fd_ = fd;
  file->direct_ = direct;
  file->remove_on_close_ = options.remove_on_close && !options.unlink_after_open;
  if (options.unlink_after_open && ::unlink(path.c_str()) != 0) {
    throw file_error("cannot unlink temporary file", path, errno);
  }
  if (direct) {
    const DioAlignment a = query_dio_alignment(fd);
    // A file system that accepts O_DIRECT but reports no alignment: be safe with 4096.
    file->offset_align_ = a.offset != 0 ? a.offset : 4096;
    file->mem_align_ = a.mem != 0 ? a.mem : 4096;
  }
  return file;
}

DiskFile::~DiskFile() {
  if (fd_ >= 0) ::close(fd_);
  if (remove_on_close_) ::unlink(path_.c_str());
}

uint64_t DiskFile::size() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) throw file_error("cannot stat", path_, errno);
  return static_cast<uint64_t>(st.st_size);
}

void DiskFile::truncate(uint64_t length) {
  if (ftruncate(fd_, static_cast<off_t>(length)) != 0) {
    throw IoError(detail::concat("cannot resize '", path_, "' to ", length,
                                 " bytes: ", std::strerror(errno)));
  }
}

void DiskFile::sync() {
  if (fdatasync(fd_) != 0) throw file_error("fdatasync failed on", path_, errno);
}

void DiskFile::simulate_direct_refusal_for_testing(bool refuse) {
  g_refuse_direct = refuse;
}
int DiskFile::fallback_warnings() {
  return g_fallback_warnings.load();
}
void DiskFile::reset_fallback_warnings_for_testing() {
  g_fallback_warnings = 0;
}

}  // namespace h2oflex
