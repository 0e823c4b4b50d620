// A file opened for direct (O_DIRECT) I/O, with the alignment the kernel requires for it.
//
// Alignment comes from statx(STATX_DIOALIGN) (fallback 4096 when the kernel or file system does
// not report it). Where O_DIRECT is refused (tmpfs on older kernels: open fails with EINVAL) the
// file is reopened for buffered I/O, with one warning per process, and every alignment is 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace h2oflex {

enum class FileOpen : uint8_t {
  CreateTruncate,  // create or empty the file, read-write
  ReadWrite,       // existing file, read-write
  ReadOnly,        // existing file
};

struct DiskFileOptions {
  bool direct = true;  // try O_DIRECT
  // Remove the path when the object is destroyed (temporary files).
  bool remove_on_close = false;
  // Unlink the path right after opening: the data lives as long as the descriptor, and nothing
  // is left behind even if the process is killed. Implies the file cannot be reopened by name.
  bool unlink_after_open = false;
};

class DiskFile {
 public:
  static std::unique_ptr<DiskFile> open(const std::string& path, FileOpen mode,
                                        DiskFileOptions options = {});
  ~DiskFile();
  DiskFile(const DiskFile&) = delete;
  DiskFile& operator=(const DiskFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool is_direct() const { return direct_; }
  // Required alignment of file offsets and lengths (1 when buffered).
  size_t offset_align() const { return offset_align_; }
  // Required alignment of memory addresses (1 when buffered).
  size_t mem_align() const { return mem_align_; }
  // Larger of the two: a block size every aligned transfer respects.
  size_t block() const { return offset_align_ > mem_align_ ? offset_align_ : mem_align_; }

  uint64_t size() const;           // current length (fstat)
  void truncate(uint64_t length);  // ftruncate; errors name the file
  void sync();                     // fdatasync

  // Serializes read-modify-write of partially covered blocks on this file across queues.
  std::mutex& rmw_mutex() { return rmw_mutex_; }

  // Test hook: behave as if the file system refused O_DIRECT (as tmpfs does on older kernels).
  static void simulate_direct_refusal_for_testing(bool refuse);
  // Test hook: number of buffered-I/O fallback warnings printed so far; reset to 0.
  static int fallback_warnings();
  static void reset_fallback_warnings_for_testing();

 private:
  DiskFile() = default;

  int fd_ = -1;
  std::string path_;
  bool direct_ = false;
  bool remove_on_close_ = false;
  size_t offset_align_ = 1;
  size_t mem_align_ = 1;
  std::mutex rmw_mutex_;
};

// Direct-I/O alignment of an open descriptor from statx(STATX_DIOALIGN): {memory, offset}.
// Returns {0, 0} when not reported.
struct DioAlignment {
  uint32_t mem = 0;
  uint32_t offset = 0;
};
DioAlignment query_dio_alignment(int fd);

}  // namespace h2oflex
