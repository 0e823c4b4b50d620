// Token selection: argmax, seeded top-p sampling, and the H2O keep / evict choices.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/core/rng.h"
#include "runtime/cpu/cpu_ops.h"

namespace h2oflex::cpu {

void argmax(const Tensor& logits, std::vector<int32_t>& ids) {
  const int64_t rows = logits.dim(0), n = logits.dim(1);
  ids.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits.data<float>() + r * n;
    ids[r] = static_cast<int32_t>(std::max_element(l, l + n) - l);  // first maximum wins
  }
}

void sample(const Tensor& logits, const SampleParams& params, const std::vector<uint64_t>& row_keys,
            uint64_t step, std::vector<int32_t>& ids) {
  const int64_t rows = logits.dim(0), n = logits.dim(1);
  ids.resize(static_cast<size_t>(rows));
  std::vector<float> prob(static_cast<size_t>(n));
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const float* l = logits.data<float>() + r * n;
    const float mx = *std::max_element(l, l + n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      prob[i] = std::exp((l[i] - mx) / params.temperature);
      sum += prob[i];
    }
    std::iota(order.begin(), order.end(), 0);
    // Highest probability first; equal ones by id so the order is the same on every backend.
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return prob[a] != prob[b] ? prob[a] > prob[b] : a < b; });
    // Nucleus: the shortest prefix whose mass reaches top_p (at least one token).
    double kept = 0;
    int64_t count = 0;
    while (count < n) {
      kept += prob[order[count]] / sum;
      ++count;
      if (kept >= params.top_p) break;
    }
    const float u = uniform_open01(philox4x32(params.seed, row_keys[r], step)[0]);
    const double target = u * kept;
    double acc = 0;
    int32_t choice = order[count - 1];
    for (int64_t i = 0; i < count; ++i) {
      acc += prob[order[i]] / sum;
      if (acc > target) {
        choice = order[i];
        break;
      }
    }
    ids[r] = choice;
  }
}

void select_heavy_recent(const Tensor& colsum, const std::vector<int32_t>& pad, int heavy,
                         int recent, Tensor& keep) {
  const int64_t b = colsum.dim(0), h = colsum.dim(1), s = colsum.dim(2);
  const int64_t budget = heavy + recent;
  std::vector<int32_t> cand;
  for (int64_t bh = 0; bh < b * h; ++bh) {
    const int64_t p0 = pad[bh / h];
    const float* score = colsum.data<float>() + bh * s;
    int32_t* out = keep.data<int32_t>() + bh * budget;
    std::fill_n(out, budget, -1);
    int64_t n_out = 0;
    if (s - p0 <= budget) {
      for (int64_t j = p0; j < s; ++j) out[n_out++] = static_cast<int32_t>(j);
      continue;
    }
    cand.clear();
    for (int64_t j = p0; j < s - recent; ++j) cand.push_back(static_cast<int32_t>(j));
    std::partial_sort(cand.begin(), cand.begin() + heavy, cand.end(), [&](int32_t a, int32_t c) {
      return score[a] != score[c] ? score[a] > score[c] : a < c;
    });
    cand.resize(static_cast<size_t>(heavy));
    std::sort(cand.begin(), cand.end());
    for (int32_t j : cand) out[n_out++] = j;
    for (int64_t j = s - recent; j < s; ++j) out[n_out++] = static_cast<int32_t>(j);
  }
}

void evict_lowest_score(const Tensor& scores, const Tensor& slot_pos,
                        const std::vector<int32_t>& protect_from, Tensor& victim) {
  const int64_t b = scores.dim(0), h = scores.dim(1), cap = scores.dim(2);
  for (int64_t bh = 0; bh < b * h; ++bh) {
    const float* sc = scores.data<float>() + bh * cap;
    const int32_t* pos = slot_pos.data<int32_t>() + bh * cap;
    const int32_t limit = protect_from[bh / h];
    int32_t best = -1;
    for (int64_t j = 0; j < cap; ++j) {
      if (pos[j] < 0 || pos[j] >= limit) continue;
      if (best < 0 || sc[j] < sc[best] || (sc[j] == sc[best] && pos[j] < pos[best])) {
        best = static_cast<int32_t>(j);
      }
    }
    victim.data<int32_t>()[bh] = best;
  }
}

void average_over_heads(Tensor& scores) {
  const int64_t b = scores.dim(0), h = scores.dim(1), n = scores.dim(2);
  float* x = scores.data<float>();
  for (int64_t i = 0; i < b; ++i) {
    float* seq = x + i * h * n;
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t hi = 0; hi < h; ++hi) sum += seq[hi * n + j];
      const float mean = sum / static_cast<float>(h);
      for (int64_t hi = 0; hi < h; ++hi) seq[hi * n + j] = mean;
    }
  }
}

}  // namespace h2oflex::cpu
