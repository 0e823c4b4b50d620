#include "experiments/common/output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "runtime/core/error.h"
#include "runtime/core/temp_file_cleanup.h"

namespace h2oflex {

namespace {

namespace fs = std::filesystem;

// The path with every existing component's links resolved (the last one need not exist yet).
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal() : p;
}

// Same file: same resolved path, or (hard links, bind mounts) the same inode.
bool same_file(const std::string& a, const std::string& b) {
  if (resolved(a) == resolved(b)) return true;
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Empty when a file can be created in `dir`, else why not. Root passes every permission check,
// so a real file is created and removed rather than asking access().
std::string create_probe(const fs::path& dir) {
  const fs::path probe = dir / (".h2oflex-write-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

}  // namespace

void check_writable_directory(const std::string& dir, const std::string& what) {
  std::error_code ec;
  H2OFLEX_INPUT_CHECK(fs::exists(dir, ec), what, " '", dir, "' does not exist");
  H2OFLEX_INPUT_CHECK(fs::is_directory(dir, ec), what, " '", dir, "' is not a directory");
  const std::string why = create_probe(dir);
  H2OFLEX_INPUT_CHECK(why.empty(), what, " '", dir, "': cannot create files there: ", why);
}

std::string temporary_path_for(const std::string& path) {
  return path + ".tmp";
}

void add_directory_inputs(std::vector<NamedPath>& inputs, const std::string& dir,
                          const std::string& what) {
  std::error_code ec;
  if (!dir.empty() && fs::is_regular_file(dir, ec)) {  // a model that is one file (GGUF)
    inputs.push_back({"the model file", dir});
    return;
  }
  if (dir.empty() || !fs::is_directory(dir, ec)) return;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) inputs.push_back({"a file of " + what, it->path().string()});
  }
}

std::vector<NamedPath> files_in(const std::string& dir, const std::vector<std::string>& names,
                                const std::string& what) {
  std::vector<NamedPath> out;
  for (const std::string& name : names) {
    out.push_back({what + " file " + name, (fs::path(dir) / name).string()});
  }
  return out;
}

OutputDirectory::OutputDirectory(const std::string& dir, const std::string& what) {
  H2OFLEX_INPUT_CHECK(!dir.empty(), what, ": a directory is needed");
  std::error_code ec;
  std::vector<std::string> missing;
  for (fs::path p = fs::absolute(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  created_.assign(missing.rbegin(), missing.rend());
  H2OFLEX_INPUT_CHECK(!ec, what, " '", dir, "': cannot create the directory: ", ec.message());
  H2OFLEX_INPUT_CHECK(fs::is_directory(dir, ec), what, " '", dir, "' is not a directory");
}

OutputDirectory::~OutputDirectory() {
  std::error_code ec;
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove(*it, ec);  // if empty
}

void check_output_paths(const std::vector<NamedPath>& inputs,
                        const std::vector<NamedPath>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty()) continue;
    std::error_code ec;
    H2OFLEX_INPUT_CHECK(!fs::is_directory(out.path, ec), out.what, " '", out.path,
                        "' is a directory; give a file name");
    const fs::path parent = resolved(out.path).parent_path();
    H2OFLEX_INPUT_CHECK(fs::is_directory(parent, ec), out.what, " '", out.path, "': directory '",
                        parent.string(), "' does not exist");
    const std::string why = create_probe(parent);
    H2OFLEX_INPUT_CHECK(why.empty(), out.what, " '", out.path, "': cannot create files in '",
                        parent.string(), "': ", why);
    for (const NamedPath& in : inputs) {
      if (in.path.empty()) continue;
      H2OFLEX_INPUT_CHECK(!same_file(out.path, in.path), out.what, " '", out.path, "' and ",
                          in.what, " '", in.path,
                          "' are the same file; writing the one would destroy the other");
      const std::string tmp = temporary_path_for(out.path);
      H2OFLEX_INPUT_CHECK(!same_file(tmp, in.path), out.what, " '", out.path,
                          "' is written through '", tmp, "', which is ", in.what, " '", in.path,
                          "'; writing the one would destroy the other");
    }
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j].path.empty()) continue;
      H2OFLEX_INPUT_CHECK(!same_file(out.path, outputs[j].path), out.what, " '", out.path, "' and ",
                          outputs[j].what, " '", outputs[j].path,
                          "' are the same file; give them different names");
    }
  }
}

std::string beside_output(const std::string& output_path, const std::string& suffix) {
  constexpr std::string_view kExtension = ".jsonl";
  std::string base = output_path;
  if (base.size() > kExtension.size() &&
      base.compare(base.size() - kExtension.size(), kExtension.size(), kExtension) == 0) {
    base.resize(base.size() - kExtension.size());
  }
  return base + suffix;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(detail::concat("cannot create '", tmp, "': ", std::strerror(errno)));
  TempFile cleanup(tmp);  // removed on a failure below and on SIGINT / SIGTERM
  std::string why;
  for (size_t done = 0; done < text.size() && why.empty();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = detail::concat("writing at offset ", done, ": ",
                           n < 0 ? std::strerror(errno) : "no progress");
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (why.empty() && ::fsync(fd) != 0) why = detail::concat("fsync: ", std::strerror(errno));
  ::close(fd);
  if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    why = detail::concat("renaming it to '", path, "': ", std::strerror(errno));
  }
  if (!why.empty()) throw IoError(detail::concat("'", tmp, "': ", why));
  cleanup.keep();
}

}  // namespace h2oflex
