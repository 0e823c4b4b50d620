// The real `h2oflex generate` process on the demo model: killed with SIGKILL mid-job and
// restarted (twice), it ends with every id exactly once and the same texts as an uninterrupted
// run; SIGTERM finishes the block in flight and exits 0; bad arguments exit 2 before any work.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "tests/generate/generate_test_support.h"

extern char** environ;

namespace h2oflex::testing {
namespace {

using nlohmann::json;

constexpr int kRequests = 120;
constexpr int kBatch = 2;

// Varied prompt lengths (1..60 words), two malformed lines among them.
std::string job_input() {
  const char* words[] = {"amber", "field", "over", "the", "hill", "a", "slow", "train", "north"};
  std::string text;
  for (int i = 0; i < kRequests; ++i) {
    std::string prompt;
    for (int w = 0; w < 1 + (i * 37) % 60; ++w)
      prompt += std::string(w ? " " : "") + words[(i + w * 5) % 9];
    json j = {{"id", std::string("p").append(std::to_string(i))}, {"prompt", prompt}};
    if (i % 4 == 1) j["max_new_tokens"] = 8;
    text += j.dump() + "\n";
    if (i == 10) text += "{\"id\": \"broken\"\n";
    if (i == 20) text += "{\"custom_id\": \"nobody\", \"body\": {}}\n";
  }
  return text;
}

class GenerateProcessTest : public GenerateScratchTest {
 protected:
  void SetUp() override {
    GenerateScratchTest::SetUp();
    write_text(dir() / "in.jsonl", job_input());
  }

  std::vector<std::string> args(const std::string& output) const {
    return {H2OFLEX_BINARY, "generate", "--model", demo_model_dir().string(), "--input",
            (dir() / "in.jsonl").string(), "--output", (dir() / output).string(), "--set",
            "batch_size=" + std::to_string(kBatch), "--set", "gen_len=24",
            // The reference is a job of its own: `auto` is measured by each job and may choose
            // differently (a resumed job keeps its own choice, job_record_test.cc).
            "--set", "compute_dtype=f32"};
  }

  // Starts the process with stdout/stderr in files; one OpenMP thread keeps it quick on a
  // loaded machine and identical between runs.
  pid_t spawn(const std::vector<std::string>& argv) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = (dir() / ("run" + std::to_string(runs_++) + ".log")).string();
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    std::vector<std::string> env_text{"OMP_NUM_THREADS=1"};
    for (char** e = environ; *e; ++e) {
      if (std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0) env_text.push_back(*e);
    }
    std::vector<char*> env;
    for (auto& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), env.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << "cannot start " << cargv[0];
    last_log_ = log;
    return pid;
  }

  // Waits up to 60 s; returns the raw wait status.
  int wait_for(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "process did not finish in 60 s; log:\n" << read_text(last_log_);
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return status;
  }

  int run_to_end(const std::vector<std::string>& argv) {
    const int status = wait_for(spawn(argv));
    EXPECT_TRUE(WIFEXITED(status)) << read_text(last_log_);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static int64_t newlines(const fs::path& file) {
    const std::string text = read_text(file);
    return std::count(text.begin(), text.end(), '\n');
  }

  // Starts a run and sends `sig` once the output holds at least `lines` more lines. Returns the
  // wait status (one that exited on its own, too early, is returned as it is).
  int interrupt_after(const std::string& output, int64_t lines, int sig) {
    const fs::path out = dir() / output;
    const int64_t start = fs::exists(out) ? newlines(out) : 0;
    const pid_t pid = spawn(args(output));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    while (!(fs::exists(out) && newlines(out) >= start + lines)) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        ADD_FAILURE() << "the job ended before the signal; log:\n" << read_text(last_log_);
        return status;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ::kill(pid, sig);
    return wait_for(pid);
  }

  std::map<std::string, json> results(const std::string& output) {
    std::map<std::string, json> by_id;
    for (const json& j : read_jsonl(dir() / output)) {
      EXPECT_TRUE(by_id.emplace(j.at("id").get<std::string>(), j).second) << "duplicate " << j;
    }
    return by_id;
  }

  const std::string& last_log() const { return last_log_; }

 private:
  int runs_ = 0;
  std::string last_log_;
};

TEST_F(GenerateProcessTest, SigkillAndResumeMatchAnUninterruptedRun) {
  ASSERT_EQ(run_to_end(args("reference.jsonl")), 0);
  const auto reference = results("reference.jsonl");
  ASSERT_EQ(reference.size(), static_cast<size_t>(kRequests));
  for (const auto& [id, r] : reference) {
    EXPECT_FALSE(r["text"].get<std::string>().empty()) << id;
    EXPECT_GT(r["completion_tokens"].get<int>(), 0) << id;
  }
  const auto errors = read_jsonl(dir() / "reference.errors.jsonl");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0]["line"], 12);  // after the 11 requests p0..p10
  EXPECT_EQ(errors[1]["line"], 23);
  EXPECT_EQ(errors[1]["id"], "nobody");

  // Two kills at different points, then a run to the end.
  for (int64_t lines : {6, 30}) {
    const int status = interrupt_after("out.jsonl", lines, SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the job ended before the kill; status " << status;
    // What a kill in the middle of a write() leaves behind (a kill rarely lands there by itself).
    std::ofstream(dir() / "out.jsonl", std::ios::app) << R"({"id":"p7","text":"torn mid-wr)";
  }
  const int64_t before_resume = newlines(dir() / "out.jsonl");
  EXPECT_LT(before_resume, kRequests);
  ASSERT_EQ(run_to_end(args("out.jsonl")), 0);
  EXPECT_NE(read_text(last_log()).find("removed a partial last line"), std::string::npos);
  EXPECT_EQ(results("out.jsonl"), reference);
  EXPECT_EQ(newlines(dir() / "out.jsonl"), kRequests);

  // A finished job run again has nothing to do and changes nothing.
  const std::string done = read_text(dir() / "out.jsonl");
  ASSERT_EQ(run_to_end(args("out.jsonl")), 0);
  EXPECT_EQ(read_text(dir() / "out.jsonl"), done);
}

TEST_F(GenerateProcessTest, SigtermFinishesTheBlockAndExitsZero) {
  const int status = interrupt_after("out.jsonl", 3, SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Told at once that the signal was heard and what a second one does (issue 14, 17).
  EXPECT_NE(read_text(last_log()).find("a second signal ends the job at once"), std::string::npos)
      << read_text(last_log());
  const int64_t lines = newlines(dir() / "out.jsonl");
  EXPECT_LT(lines, kRequests) << "the job ended before the signal";
  EXPECT_EQ(read_jsonl(dir() / "out.jsonl").size(), static_cast<size_t>(lines));  // all whole
  EXPECT_EQ(lines % kBatch, 0) << "a block was cut short";  // all blocks are full here
  ASSERT_EQ(run_to_end(args("out.jsonl")), 0);
  ASSERT_EQ(run_to_end(args("reference.jsonl")), 0);
  EXPECT_EQ(results("out.jsonl"), results("reference.jsonl"));
}

TEST_F(GenerateProcessTest, MissingModelOrInputExitsTwoBeforeStarting) {
  auto a = args("out.jsonl");
  a[3] = (dir() / "no-such-model").string();
  EXPECT_EQ(run_to_end(a), 2);
  auto b = args("out.jsonl");
  b[5] = (dir() / "no-such-input.jsonl").string();
  EXPECT_EQ(run_to_end(b), 2);
  EXPECT_FALSE(fs::exists(dir() / "out.jsonl"));
}

}  // namespace
}  // namespace h2oflex::testing
