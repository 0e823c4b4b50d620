// A suite row's memory cap (`memory_cap: 2GiB`): the row's process runs in a memory cgroup of
// that limit, after the page cache is dropped, so that h2oflex and a peer beyond memory get the
// same RAM and start cold (a peer that mmaps its weights pages them through the same limit).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiments/common/child_process.h"

namespace h2oflex {

// Where a memory cgroup for this process's children can be made, from the texts of
// /proc/self/cgroup and /proc/self/mountinfo: a cgroup v1 memory hierarchy (a child of this
// process's own memory cgroup; v1 has no rule against processes in inner groups) when the
// memory controller is bound to v1, else the root of the cgroup v2 mount (the root alone may hold
// processes and hand the memory controller to children). `why_not` says why there is none.
struct CgroupPlace {
  std::string parent;      // directory under which the group is made
  bool v2 = false;         // memory.max / memory.peak, else memory.limit_in_bytes / ...
  std::string self_procs;  // the cgroup.procs this process belongs in (to move back)
};
std::optional<CgroupPlace> find_memory_cgroup_place(const std::string& proc_self_cgroup,
                                                    const std::string& mountinfo,
                                                    std::string* why_not);

class MemoryCap {
 public:
  // Makes a fresh group limited to `bytes` (swap included); nullptr and `why_not` when the
  // machine gives none (no cgroup memory controller, no permission).
  static std::unique_ptr<MemoryCap> create(uint64_t bytes, std::string* why_not);
  ~MemoryCap();  // removes the group
  MemoryCap(const MemoryCap&) = delete;
  MemoryCap& operator=(const MemoryCap&) = delete;

  // Runs argv (as run_child) inside the group: this process joins the group while it starts
  // and waits for the child, which inherits it (no window in which the child runs uncapped),
  // then goes back to its own group. What this process had allocated stays charged where it was.
  ChildResult run(const std::vector<std::string>& argv);

  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return dir_; }
  // The group's peak memory use so far (its page cache included); 0 when the kernel keeps none.
  uint64_t peak_bytes() const;

 private:
  MemoryCap(CgroupPlace place, std::string dir, uint64_t bytes)
      : place_(std::move(place)), dir_(std::move(dir)), bytes_(bytes) {}
  CgroupPlace place_;
  std::string dir_;
  uint64_t bytes_;
};

// sync(), then drops the page cache (and reclaimable slab) through /proc/sys/vm/drop_caches;
// "" when done, else why not (e.g. not writable in a container).
std::string drop_page_cache();

}  // namespace h2oflex
