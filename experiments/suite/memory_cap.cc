#include "experiments/suite/memory_cap.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace h2oflex {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

// Writes `text` to a cgroup control file; "" on success, else "PATH: reason".
std::string write_control(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (f) f << text << std::flush;
  if (!f) return path + ": " + std::strerror(errno != 0 ? errno : EIO);
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The mount point and mount root of the first mount in `mountinfo` whose filesystem type is
// `fstype` and, if `option` is given, whose super options include it.
std::optional<std::pair<std::string, std::string>> find_mount(const std::string& mountinfo,
                                                              const std::string& fstype,
                                                              const std::string& option) {
  for (const std::string& line : split(mountinfo, '\n')) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
    const std::vector<std::string> f = split(line, ' ');
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 >= f.size() || f[dash + 1] != fstype) continue;
    if (!option.empty()) {
      bool has = false;
      for (const std::string& o : split(f[dash + 3], ',')) has = has || o == option;
      if (!has) continue;
    }
    return std::make_pair(f[4], f[3]);
  }
  return std::nullopt;
}

// A cgroup path as seen from a mount of its hierarchy whose root is `mount_root`.
std::string under_mount(const std::string& mount_point, const std::string& mount_root,
                        const std::string& cgroup_path) {
  std::string rel = cgroup_path;
  if (mount_root != "/" && rel.rfind(mount_root, 0) == 0) rel = rel.substr(mount_root.size());
  return (fs::path(mount_point) / fs::path(rel).relative_path()).lexically_normal().string();
}

}  // namespace

std::optional<CgroupPlace> find_memory_cgroup_place(const std::string& proc_self_cgroup,
                                                    const std::string& mountinfo,
                                                    std::string* why_not) {
  std::optional<std::string> v1_path, v2_path;
  for (const std::string& line : split(proc_self_cgroup, '\n')) {
    // HIERARCHY-ID:CONTROLLERS:PATH ("0::PATH" is the v2 hierarchy)
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && controllers.empty()) v2_path = path;
    for (const std::string& c : split(controllers, ',')) {
      if (c == "memory") v1_path = path;
    }
  }
  if (v1_path) {
    const auto mount = find_mount(mountinfo, "cgroup", "memory");
    if (!mount) {
      *why_not = "the memory controller is a cgroup v1 one, but its hierarchy is not mounted";
      return std::nullopt;
    }
    const std::string own = under_mount(mount->first, mount->second, *v1_path);
    return CgroupPlace{own, false, own + "/cgroup.procs"};
  }
  if (v2_path) {
    const auto mount = find_mount(mountinfo, "cgroup2", "");
    if (!mount) {
      *why_not = "no cgroup2 filesystem is mounted";
      return std::nullopt;
    }
    return CgroupPlace{mount->first, true,
                       under_mount(mount->first, mount->second, *v2_path) + "/cgroup.procs"};
  }
  *why_not = "this process is in no memory cgroup hierarchy (/proc/self/cgroup)";
  return std::nullopt;
}

std::unique_ptr<MemoryCap> MemoryCap::create(uint64_t bytes, std::string* why_not) {
  std::optional<CgroupPlace> place = find_memory_cgroup_place(
      read_text("/proc/self/cgroup"), read_text("/proc/self/mountinfo"), why_not);
  if (!place) return nullptr;
  if (place->v2) {
    // The root hands the memory controller to its children (a no-op when it already does).
    const std::string controllers = read_text(place->parent + "/cgroup.controllers");
    if (controllers.find("memory") == std::string::npos) {
      *why_not = "the cgroup v2 root " + place->parent + " has no memory controller";
      return nullptr;
    }
    const std::string e = write_control(place->parent + "/cgroup.subtree_control", "+memory");
    if (!e.empty()) {
      *why_not = "cannot enable the memory controller: " + e;
      return nullptr;
    }
  }
  static std::atomic<int> serial{0};
  const std::string dir =
      place->parent + "/h2oflex-cap-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) {
    *why_not = "cannot make the memory cgroup " + dir + ": " + ec.message();
    return nullptr;
  }
  std::unique_ptr<MemoryCap> cap(new MemoryCap(*place, dir, bytes));
  const std::string n = std::to_string(bytes);
  std::string e;
  if (place->v2) {
    e = write_control(dir + "/memory.max", n);
    if (e.empty() && fs::exists(dir + "/memory.swap.max")) {
      e = write_control(dir + "/memory.swap.max", "0");
    }
  } else {
    e = write_control(dir + "/memory.limit_in_bytes", n);
    // Memory plus swap: the same limit, so that swapping is no way around it.
    if (e.empty() && fs::exists(dir + "/memory.memsw.limit_in_bytes")) {
      e = write_control(dir + "/memory.memsw.limit_in_bytes", n);
    }
  }
  if (!e.empty()) {
    *why_not = "cannot limit the memory cgroup: " + e;
    return nullptr;
  }
  return cap;
}

MemoryCap::~MemoryCap() {
  std::error_code ec;
  fs::remove(dir_, ec);  // rmdir: the group is empty once its child has exited
}

ChildResult MemoryCap::run(const std::vector<std::string>& argv) {
  const std::string pid = std::to_string(::getpid());
  const std::string e = write_control(dir_ + "/cgroup.procs", pid);
  if (!e.empty()) {
    ChildResult r;
    r.output = "cannot join the memory cgroup: " + e;
    return r;
  }
  ChildResult r = run_child(argv);
  const std::string back = write_control(place_.self_procs, pid);
  if (!back.empty()) r.output += "\n(cannot leave the memory cgroup: " + back + ")";
  return r;
}

uint64_t MemoryCap::peak_bytes() const {
  const std::string text =
      read_text(dir_ + (place_.v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  try {
    return text.empty() ? 0 : std::stoull(text);
  } catch (const std::exception&) {
    return 0;
  }
}

std::string drop_page_cache() {
  ::sync();
  const std::string e = write_control("/proc/sys/vm/drop_caches", "3");
  return e.empty() ? "" : "page cache not dropped (" + e + ")";
}

}  // namespace h2oflex
