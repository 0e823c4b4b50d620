// The block schedule's order of hooks: every decode visit's KV load is queued before the visit
// before it waits for its own load (so the load queue never waits for this thread between them,
// and the copy overlaps that visit's whole compute), weights are fetched once per unit, and
// without overlap nothing is queued ahead.
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
  void wait_kv_load(int unit, int batch, std::vector<TransferHandle>& handles) override {
    events.push_back("wait " + visit(unit, batch) + " (" + std::to_string(handles.size()) +
                     " handles)");
    handles.clear();
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
  size_t last_at(const std::string& event) const {
    for (size_t i = events.size(); i-- > 0;) {
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
  // ... and before the visit before it waits for its own load, so the two are queued back to back;
  EXPECT_LT(r.at("load 1/1 buf 1"), r.at("wait 1/0 (1 handles)"));
  EXPECT_LT(r.at("load 2/0 buf 0"), r.at("wait 1/1 (1 handles)"));
  EXPECT_LT(r.at("load 2/1 buf 1"), r.at("wait 2/0 (1 handles)"));
  EXPECT_LT(r.at("wait 2/1 (1 handles)"), r.at("compute 2/1 buf 1"));
  // ... but only after the visit that last used its buffer was computed.
  EXPECT_GT(r.at("load 2/0 buf 0"), r.at("compute 1/0 buf 0"));
  EXPECT_GT(r.at("load 2/1 buf 1"), r.at("compute 1/1 buf 1"));
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
  EXPECT_GT(r.at("wait 1/1 (1 handles)"), r.at("load 1/1 buf 1"));
}

TEST(Schedule, NextDecodeStepsFirstLoadIsQueuedBeforeTheLastVisitComputes) {
  Recorder r;
  StepShape s = decode_shape(/*overlap=*/true);
  s.next_decode_first_batch = 0;
  KvPrefetch next = run_step(r, s);
  // The last visit (2/1) computes in buffer 1; the next step's first (1/0) loads into buffer 0
  // before it, so the load overlaps that compute, the head and the next embedding.
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.unit, 1);
  EXPECT_EQ(next.batch, 0);
  EXPECT_EQ(next.buf, 0);
  EXPECT_LT(r.last_at("load 1/0 buf 0"), r.at("compute 2/1 buf 1"));
  EXPECT_LT(r.last_at("load 1/0 buf 0"), r.at("wait 2/1 (1 handles)"));
  EXPECT_GT(r.last_at("load 1/0 buf 0"), r.at("compute 2/0 buf 0"));
  // The next step's second visit (1/1) loads into buffer 1 once the last visit computed there,
  // before the head: it follows the first load without waiting for the head and the embedding.
  EXPECT_EQ(next.second.size(), 1u);
  EXPECT_GT(r.last_at("load 1/1 buf 1"), r.at("compute 2/1 buf 1"));
  EXPECT_LT(r.last_at("load 1/1 buf 1"), r.at("compute 3/0 buf 0"));

  // The next step starts with that load in flight: it does not load the visit again.
  Recorder r2;
  s.next_decode_first_batch.reset();
  EXPECT_TRUE(run_step(r2, s, std::move(next)).empty());
  for (const std::string& e : r2.events) EXPECT_NE(e, "load 1/0 buf 0");
  for (const std::string& e : r2.events) EXPECT_NE(e, "load 1/1 buf 1");
  EXPECT_LT(r2.at("wait 1/0 (1 handles)"), r2.at("compute 1/0 buf 0"));  // the carried loads
  EXPECT_LT(r2.at("wait 1/1 (1 handles)"), r2.at("compute 1/1 buf 1"));
  EXPECT_LT(r2.at("load 2/0 buf 0"), r2.at("wait 1/1 (1 handles)"));
  EXPECT_GT(r2.at("load 2/0 buf 0"), r2.at("compute 1/0 buf 0"));
}

TEST(Schedule, NoNextStepLoadIntoTheBufferTheLastVisitComputesIn) {
  Recorder r;
  StepShape s = decode_shape(/*overlap=*/true);
  s.batches = 1;
  s.units = StageUnits{0, 2, 1, 1};  // one layer, one batch: its only visit is first and last
  s.next_decode_first_batch = 0;
  EXPECT_TRUE(run_step(r, s).empty());
  s.units = StageUnits{0, 4, 1, 3};  // three layers: 1/0 and 3/0 both compute in buffer 1
  EXPECT_TRUE(run_step(r, s).empty());
  // Prefill loads nothing, and without overlap nothing is queued ahead.
  s.units = StageUnits{0, 3, 1, 2};
  s.prefill = true;
  EXPECT_TRUE(run_step(r, s).empty());
  s.prefill = false;
  s.overlap = false;
  EXPECT_TRUE(run_step(r, s).empty());
  // The control: two layers, one batch, overlap: 1/0 computes in buffer 1, 2/0 in buffer 0.
  s.overlap = true;
  EXPECT_FALSE(run_step(r, s).empty());
}

// One GPU batch: the next step's second visit is the second layer's, in the buffer of this step's
// last visit; carried into the next step, neither of its first two visits is loaded again.
TEST(Schedule, NextStepsSecondLoadWithOneBatchIsTheSecondLayers) {
  Recorder r;
  StepShape s = decode_shape(/*overlap=*/true);
  s.batches = 1;
  s.next_decode_first_batch = 0;
  KvPrefetch next = run_step(r, s);  // 1/0 computes in buffer 1, 2/0 in buffer 0
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next.buf, 1);
  EXPECT_EQ(next.second.size(), 1u);
  EXPECT_GT(r.last_at("load 2/0 buf 0"), r.at("compute 2/0 buf 0"));
  EXPECT_LT(r.last_at("load 2/0 buf 0"), r.at("compute 3/0 buf 1"));
  Recorder r2;
  s.next_decode_first_batch.reset();
  run_step(r2, s, std::move(next));
  for (const std::string& e : r2.events) EXPECT_EQ(e.rfind("load ", 0), std::string::npos) << e;
  EXPECT_LT(r2.at("wait 2/0 (1 handles)"), r2.at("compute 2/0 buf 0"));
}

TEST(Schedule, ACarriedLoadMustBeTheFirstVisits) {
  Recorder r;
  StepShape s = decode_shape(/*overlap=*/true);
  KvPrefetch wrong{2, 0, 0, {TransferHandle{}}, {}};
  EXPECT_THROW(run_step(r, s, std::move(wrong)), std::exception);
}

}  // namespace
}  // namespace h2oflex
