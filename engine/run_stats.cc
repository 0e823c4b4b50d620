#include "engine/run_stats.h"

namespace h2oflex {

StageBusy busy_now(const TransferEngine& t, double compute_s) {
  return {compute_s, t.busy_seconds(QueueId::WeightLoad), t.busy_seconds(QueueId::CacheLoad),
          t.busy_seconds(QueueId::CacheStore)};
}

StageBusy busy_between(const StageBusy& a, const StageBusy& b) {
  return {b.compute - a.compute, b.weight_load - a.weight_load, b.cache_load - a.cache_load,
          b.cache_store - a.cache_store};
}

}  // namespace h2oflex
