// The free-space check and the block reservation every writer of large files uses (issue 49,
// defect 4): a size beyond the free space is refused naming both numbers, and a reservation the
// file system refuses is an error naming the file instead of being ignored.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

class DiskSpace : public testing_support::ScratchDirTest {};

TEST_F(DiskSpace, MoreThanIsFreeIsRefusedNamingNeededAndFreeBytes) {
  const uint64_t free = free_bytes_at(dir().string());
  EXPECT_NO_THROW(check_free_space(dir().string(), free / 2, "the file"));
  try {
    check_free_space(dir().string(), free + (1ull << 40), "the file", "choose less");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the file needs " + std::to_string(free + (1ull << 40)) + " bytes"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("are free; choose less"), std::string::npos) << m;
    EXPECT_NE(m.find(dir().string()), std::string::npos) << m;
  }
  EXPECT_THROW(free_bytes_at((dir() / "missing").string()), InputError);
}

// A reservation past the file-size limit fails as one past a full disk does.
TEST_F(DiskSpace, RefusedReservationIsAnErrorNamingTheFile) {
  const std::string path = (dir() / "big.bin").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    reserve_file_blocks(fd, path, 64ull << 20);
  } catch (const IoError& e) {
    message = e.what();
  }
  EXPECT_NO_THROW(reserve_file_blocks(fd, path, 4096));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  ::close(fd);
  EXPECT_NE(message.find(path), std::string::npos) << "no error, or it names no file: " << message;
  EXPECT_NE(message.find("67108864 bytes"), std::string::npos) << message;
}

}  // namespace
}  // namespace h2oflex
