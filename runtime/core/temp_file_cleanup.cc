#include "runtime/core/temp_file_cleanup.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// The handler may only read what is already in place: fixed buffers, lock-free flags.
constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;

struct Slot {
  std::atomic<bool> claimed{false};  // taken by a TempFile (being filled or in use)
  std::atomic<bool> used{false};     // complete: the handler unlinks it
  char path[kPathBytes] = {};
};

Slot g_slots[kSlots];
struct sigaction g_previous_int, g_previous_term;
std::atomic<bool> g_installed{false};

extern "C" void on_cleanup_signal(int sig) {
  for (Slot& s : g_slots) {
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  }
  sigaction(sig, sig == SIGINT ? &g_previous_int : &g_previous_term, nullptr);
  ::raise(sig);
}

int take_slot(const std::string& path) {
  H2OFLEX_CHECK(path.size() < kPathBytes, "temporary file path too long: ", path);
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    // Claimed first, filled, then published: the handler sees a slot only once it is complete.
    if (!g_slots[i].claimed.compare_exchange_strong(expected, true)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].used.store(true, std::memory_order_release);
    return i;
  }
  H2OFLEX_CHECK(false, "more than ", kSlots, " temporary files at once");
  return -1;
}

void release_slot(int i) {
  g_slots[i].used.store(false, std::memory_order_release);
  g_slots[i].claimed.store(false, std::memory_order_release);
}

}  // namespace

void install_temp_file_cleanup() {
  if (g_installed.exchange(true)) return;
  struct sigaction sa = {};
  sa.sa_handler = on_cleanup_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_previous_int);
  sigaction(SIGTERM, &sa, &g_previous_term);
}

TempFile::TempFile(std::string path) : path_(std::move(path)), slot_(take_slot(path_)) {}

TempFile::~TempFile() {
  if (slot_ < 0) return;
  ::unlink(path_.c_str());
  keep();
}

void TempFile::keep() {
  if (slot_ < 0) return;
  release_slot(slot_);
  slot_ = -1;
}

}  // namespace h2oflex
