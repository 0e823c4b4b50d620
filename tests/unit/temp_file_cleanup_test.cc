// The temporary-file registry (issue 49, defects 4 and 11): SIGINT / SIGTERM remove every
// registered file and still end the process; generate's stop request keeps the first signal and
// hands the second on; a weight-layout build interrupted by SIGINT leaves no weights.bin.tmp.
// Each case runs in a forked child, which the signal ends.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>

#include "experiments/generate/stop_signal.h"
#include "offload/weights/weight_layout.h"
#include "runtime/core/temp_file_cleanup.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

class TempFileCleanup : public testing_support::ScratchDirTest {
 protected:
  // Runs `body` in a child; returns the signal that ended it (0 when it exited).
  static int signal_ending(const std::function<void()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      body();
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  fs::path make(const std::string& name) {
    std::ofstream(dir() / name) << "partial";
    return dir() / name;
  }
};

TEST_F(TempFileCleanup, SignalRemovesRegisteredFilesAndEndsTheProcess) {
  for (const int sig : {SIGINT, SIGTERM}) {
    const fs::path a = make("a.tmp"), b = make("b.tmp"), kept = make("kept");
    EXPECT_EQ(signal_ending([&] {
                install_temp_file_cleanup();
                const TempFile ta(a.string()), tb(b.string());
                TempFile tk(kept.string());
                tk.keep();
                ::raise(sig);
              }),
              sig);
    EXPECT_FALSE(fs::exists(a)) << sig;
    EXPECT_FALSE(fs::exists(b)) << sig;
    EXPECT_TRUE(fs::exists(kept)) << "a kept file was removed";
  }
}

TEST_F(TempFileCleanup, GuardRemovesItsFileUnlessKept) {
  const fs::path a = make("a.tmp"), b = make("b.tmp");
  {
    const TempFile ta(a.string());
    TempFile tb(b.string());
    tb.keep();
  }
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::exists(b));
}

// generate's first signal only asks the job to stop; the second reaches the cleanup.
TEST_F(TempFileCleanup, SecondSignalAfterAStopRequestStillRemovesTheFiles) {
  const fs::path a = make("errors.jsonl.tmp");
  const fs::path survived = dir() / "first-signal-survived";
  EXPECT_EQ(signal_ending([&] {
              install_temp_file_cleanup();
              const TempFile ta(a.string());
              const generate::StopSignalGuard stop;
              ::raise(SIGINT);
              if (stop.requested()) std::ofstream(survived) << "";
              ::raise(SIGINT);
            }),
            SIGINT);
  EXPECT_TRUE(fs::exists(survived)) << "the first signal was not taken as a stop request";
  EXPECT_FALSE(fs::exists(a)) << "the second signal left the temporary file";
}

// Defect 11: SIGINT during a layout build (here: while the second tensor is produced).
TEST_F(TempFileCleanup, InterruptedLayoutBuildLeavesNoTemporaryData) {
  const std::vector<TensorSpec> specs{{"a", {1024}, DType::F32, 4096},
                                      {"b", {1024}, DType::F32, 4096}};
  EXPECT_EQ(signal_ending([&] {
              install_temp_file_cleanup();
              WeightLayout::open_or_build(
                  dir().string(), "key", specs,
                  [](const TensorSpec& t, uint64_t, std::span<std::byte> out) {
                    std::fill(out.begin(), out.end(), std::byte{1});
                    if (t.name == "b") ::raise(SIGINT);
                  },
                  {});
            }),
            SIGINT);
  EXPECT_FALSE(fs::exists(dir() / "weights.bin.tmp")) << "the partial layout was left";
  EXPECT_TRUE(fs::is_empty(dir()));
}

}  // namespace
}  // namespace h2oflex
