#include "experiments/common/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace h2oflex {

namespace {

// Closes the descriptors it holds when the run ends, however it ends.
struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, ChildOutput output,
                      const std::string& stderr_file) {
  ChildResult r;
  if (argv.empty()) {
    r.output = "no program to run";
    return r;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  Pipe pipe;
  FileActions fa;
  posix_spawn_file_actions_addopen(&fa.actions, 0, "/dev/null", O_RDONLY, 0);
  if (output == ChildOutput::Collect) {
    if (::pipe2(pipe.fd, O_CLOEXEC) != 0) {
      r.output = std::string("cannot create a pipe: ") + std::strerror(errno);
      return r;
    }
    posix_spawn_file_actions_adddup2(&fa.actions, pipe.fd[1], 1);
    if (stderr_file.empty()) {
      posix_spawn_file_actions_adddup2(&fa.actions, pipe.fd[1], 2);
    } else {
      posix_spawn_file_actions_addopen(&fa.actions, 2, stderr_file.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
  } else {
    posix_spawn_file_actions_addopen(&fa.actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa.actions, 1, 2);
  }
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, args[0], &fa.actions, nullptr, args.data(), environ);
  if (err != 0) {
    r.output = "cannot start " + argv[0] + ": " + std::strerror(err);
    return r;
  }
  if (output == ChildOutput::Collect) {
    ::close(pipe.fd[1]);  // the child holds its own copy; EOF comes when it exits
    pipe.fd[1] = -1;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(pipe.fd[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      r.output.append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      r.output += std::string("waiting for ") + argv[0] + ": " + std::strerror(errno);
      return r;
    }
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace h2oflex
