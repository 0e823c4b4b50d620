// The free-space check every writer of large files makes before writing a byte, so a full disk
// is a clear refusal instead of a file that fills the file system and is then left behind.
#pragma once

#include <cstdint>
#include <string>

namespace h2oflex {

// Bytes an unprivileged process may still write on the file system holding `dir`.
// Throws InputError naming `dir` when it cannot be asked.
uint64_t free_bytes_at(const std::string& dir);

// Throws InputError when fewer than `needed` bytes are free at `dir`: "<what> needs N bytes
// (X GiB) in 'dir' but only F bytes (Y GiB) are free", then `advice` when given.
void check_free_space(const std::string& dir, uint64_t needed, const std::string& what,
                      const std::string& advice = "");

// Reserves the first `bytes` of the open file `fd` (posix_fallocate). IoError naming `path`, the
// size and the reason when the file system refuses (a full disk); a file system that cannot
// reserve (EOPNOTSUPP, EINVAL) is no error: the blocks come as they are written.
void reserve_file_blocks(int fd, const std::string& path, uint64_t bytes);

}  // namespace h2oflex
