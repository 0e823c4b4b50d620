// The block schedule's order of hooks: every decode visit's KV load is queued before the compute
// of the visit before it starts (so the copy overlaps that whole compute), weights are fetched
// once per unit, and without overlap nothing is queued ahead.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/schedule.h"

namespace h2oflex {
namespace {

class Recorder final : public ScheduleHooks {
 public:
  std::vector<std::string> events;
  std::vector<TransferHandle> prefetch_weights(int unit) override {
    events.push_back("weights " + std::to_string(unit));
    return {};
  }
  std::vector<TransferHandle> load_kv(int unit, int batch, int buf) override {
    events.push_back("load " + visit(unit, batch) + " buf " + std::to_string(buf));
    return {TransferHandle{}};  // a load in flight (an empty handle counts as done)
  }
  void compute(int unit, int batch, int buf) override {
    events.push_back("compute " + visit(unit, batch) + " buf " + std::to_string(buf));
  }
  void wait_kv_stores() override { events.push_back("wait stores"); }
  void unit_done(int) override {}

  size_t at(const std::string& event) const {
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i] == event) return i;
    }
    ADD_FAILURE() << "no event '" << event << "'";
    return events.size();
  }

 private:
  static std::string visit(int unit, int batch) {
    return std::to_string(unit) + "/" + std::to_string(batch);
  }
};

StepShape decode_shape(bool overlap) {
  StepShape s;
  s.units = StageUnits{0, 3, 1, 2};  // embedding, two layers, head
  s.batches = 2;
  s.prefill = false;
  s.overlap = overlap;
  return s;
}

TEST(Schedule, NextVisitsKvLoadIsQueuedBeforeThisVisitComputes) {
  Recorder r;
  run_step(r, decode_shape(/*overlap=*/true));
  // Visits of the layers in order: (1,0) (1,1) (2,0) (2,1), alternating buffers.
  EXPECT_LT(r.at("load 1/0 buf 0"), r.at("compute 1/0 buf 0"));
  EXPECT_LT(r.at("load 1/1 buf 1"), r.at("compute 1/0 buf 0"));
  EXPECT_LT(r.at("load 2/0 buf 0"), r.at("compute 1/1 buf 1"));
  EXPECT_LT(r.at("load 2/1 buf 1"), r.at("compute 2/0 buf 0"));
  // ... and only after the visit before it was computed, whose buffer it does not touch.
  EXPECT_GT(r.at("load 2/0 buf 0"), r.at("compute 1/0 buf 0"));
  // The last unit's (the head's) visits load nothing; each unit's weights are fetched once.
  for (const std::string& e : r.events) EXPECT_EQ(e.find("load 3/"), std::string::npos) << e;
  for (int u = 0; u <= 3; ++u) EXPECT_LT(r.at("weights " + std::to_string(u)), r.events.size());
  EXPECT_EQ(r.events.back(), "wait stores");
  int loads = 0;  // one per layer visit: none is loaded twice
  for (const std::string& e : r.events) loads += e.rfind("load ", 0) == 0;
  EXPECT_EQ(loads, 4);
}

TEST(Schedule, WithoutOverlapEachLoadFollowsThePreviousCompute) {
  Recorder r;
  run_step(r, decode_shape(/*overlap=*/false));
  EXPECT_GT(r.at("load 1/1 buf 1"), r.at("compute 1/0 buf 0"));
  EXPECT_GT(r.at("load 2/0 buf 0"), r.at("compute 1/1 buf 1"));
}

}  // namespace
}  // namespace h2oflex
