// Which units each pipeline stage runs. The engine numbers its units embedding (0), decoder
// layers (1 .. units-2), head (units-1); a stage is a contiguous range of them, so hidden
// states cross from stage s to s+1 exactly once per step.
#pragma once

#include <cstddef>
#include <vector>

namespace h2oflex {

// Units [begin, end) of one stage.
struct StageRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
  bool contains(size_t unit) const { return unit >= begin && unit < end; }
  bool operator==(const StageRange&) const = default;
};

// Splits `units` units into `stages` contiguous ranges that cover them in order: the embedding
// in stage 0, the head in the last stage, and the decoder layers spread as evenly as possible
// (the first units-2 mod stages stages take one layer more), since the layers dominate the
// time and the slowest stage sets the pipeline's pace. Throws InputError when stages < 1,
// when there is no embedding and head (units < 2), or when some stage would get no decoder
// layer (stages > units-2).
std::vector<StageRange> plan_stages(size_t units, size_t stages);

}  // namespace h2oflex
