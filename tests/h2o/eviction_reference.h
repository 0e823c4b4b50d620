// An independent, mask-based reference for score-based KV eviction (H2O, TOVA): it keeps the
// whole KV, marks evicted positions dead, and re-derives every choice in double precision with
// its own loops — no code shared with the engine's kernels or slot bookkeeping. Next to it, the
// engine side (ops + KV slots) and the comparison of the two.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/kv_slots.h"
#include "runtime/ops/ops.h"

namespace h2oflex::eviction_reference {

struct Problem {
  int batch, heads, dim, prompt, gen, heavy, recent;
  std::vector<int> pad;  // left padding per sequence
  // q, k, v for every padded position: [b][t][h][d]
  std::vector<float> q, k, v;
  int total() const { return prompt + gen; }
  size_t at(int b, int t, int h) const {
    return ((static_cast<size_t>(b) * total() + t) * heads + h) * dim;
  }
};

inline Problem make_problem(uint32_t seed, int batch, int heads, int prompt, int gen, int heavy,
                            int recent, std::vector<int> pad) {
  Problem p{batch, heads, 16, prompt, gen, heavy, recent, std::move(pad), {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const size_t count = static_cast<size_t>(batch) * p.total() * heads * p.dim;
  for (auto* vec : {&p.q, &p.k, &p.v}) {
    vec->resize(count);
    for (float& x : *vec) x = n(rng);
  }
  return p;
}

// ---- the reference: full KV + alive mask, double precision ----
// How a decode step's probabilities enter the scores: added (H2O) or replacing them (TOVA).
enum class ScoreUpdate { Add, Replace };

struct Reference {
  const Problem& p;
  ScoreUpdate update;
  std::vector<std::vector<bool>> alive;    // [b*h][t]
  std::vector<std::vector<double>> score;  // [b*h][t]

  explicit Reference(const Problem& prob, ScoreUpdate u = ScoreUpdate::Add) : p(prob), update(u) {
    alive.assign(static_cast<size_t>(p.batch * p.heads), std::vector<bool>(p.total(), false));
    score.assign(alive.size(), std::vector<double>(p.total(), 0.0));
  }

  double logit(int b, int h, int qi, int kj) const {
    double s = 0;
    for (int d = 0; d < p.dim; ++d) s += double(p.q[p.at(b, qi, h) + d]) * p.k[p.at(b, kj, h) + d];
    return s / std::sqrt(double(p.dim));
  }

  // Softmax of query qi over the keys where `use` is true.
  std::vector<double> probs(int b, int h, int qi, const std::vector<bool>& use) const {
    std::vector<double> pr(p.total(), 0.0);
    double mx = -1e300, sum = 0;
    for (int j = 0; j < p.total(); ++j)
      if (use[j]) mx = std::max(mx, logit(b, h, qi, j));
    for (int j = 0; j < p.total(); ++j)
      if (use[j]) sum += pr[j] = std::exp(logit(b, h, qi, j) - mx);
    for (double& x : pr) x /= sum;
    return pr;
  }

  void prefill() {
    for (int b = 0; b < p.batch; ++b) {
      for (int h = 0; h < p.heads; ++h) {
        auto& sc = score[b * p.heads + h];
        for (int i = p.pad[b]; i < p.prompt; ++i) {
          std::vector<bool> causal(p.total(), false);
          for (int j = p.pad[b]; j <= i; ++j) causal[j] = true;
          const auto pr = probs(b, h, i, causal);
          for (int j = 0; j < p.total(); ++j) sc[j] += pr[j];
        }
        auto& al = alive[b * p.heads + h];
        const int n = p.prompt - p.pad[b];
        if (n <= p.heavy + p.recent) {
          for (int j = p.pad[b]; j < p.prompt; ++j) al[j] = true;
          continue;
        }
        for (int j = p.prompt - p.recent; j < p.prompt; ++j) al[j] = true;
        std::vector<int> rest;
        for (int j = p.pad[b]; j < p.prompt - p.recent; ++j) rest.push_back(j);
        std::stable_sort(rest.begin(), rest.end(), [&](int a, int c) { return sc[a] > sc[c]; });
        for (int i = 0; i < p.heavy; ++i) al[rest[i]] = true;
      }
    }
  }

  // Decode token at padded position t; returns each (b, h)'s attention output.
  std::vector<std::vector<double>> decode(int t) {
    std::vector<std::vector<double>> outs;
    for (int b = 0; b < p.batch; ++b) {
      for (int h = 0; h < p.heads; ++h) {
        auto& al = alive[b * p.heads + h];
        auto& sc = score[b * p.heads + h];
        std::vector<bool> use = al;
        use[t] = true;
        const auto pr = probs(b, h, t, use);
        std::vector<double> out(p.dim, 0.0);
        for (int j = 0; j < p.total(); ++j) {
          if (!use[j]) continue;
          sc[j] = update == ScoreUpdate::Add ? sc[j] + pr[j] : pr[j];
          for (int d = 0; d < p.dim; ++d) out[d] += pr[j] * p.v[p.at(b, j, h) + d];
        }
        outs.push_back(out);
        al[t] = true;
        int count = 0;
        for (bool a : al) count += a;
        if (count > p.heavy + p.recent) {
          int victim = -1;
          for (int j = 0; j <= t - p.recent; ++j) {
            if (al[j] && (victim < 0 || sc[j] < sc[victim])) victim = j;
          }
          al[victim] = false;
        }
      }
    }
    return outs;
  }

  std::set<int> kept(int b, int h) const {
    std::set<int> s;
    for (int j = 0; j < p.total(); ++j)
      if (alive[b * p.heads + h][j]) s.insert(j);
    return s;
  }
};

// ---- the engine: ops + KV slots ----
struct Engine {
  const Problem& p;
  KvRule rule;
  KvSlots slots;

  explicit Engine(const Problem& prob, const std::string& name = "h2o") : p(prob) {
    rule = policy::kv_rule(name, 0, p.heavy, p.recent);
    slots = KvSlots::allocate(p.batch, p.heads, p.heavy + p.recent, p.dim, DType::F32);
  }

  Tensor gather(const std::vector<float>& src, int t0, int t1) const {
    Tensor out = Tensor::empty({p.batch, t1 - t0, p.heads, p.dim}, DType::F32);
    for (int b = 0; b < p.batch; ++b) {
      for (int t = t0; t < t1; ++t) {
        std::copy_n(&src[p.at(b, t, 0)], p.heads * p.dim,
                    out.data<float>() + ((b * (t1 - t0) + t - t0) * p.heads) * p.dim);
      }
    }
    return out;
  }

  void prefill() {
    Tensor q = gather(p.q, 0, p.prompt), k = gather(p.k, 0, p.prompt), v = gather(p.v, 0, p.prompt);
    Tensor out = Tensor::empty(q.shape(), DType::F32);
    Tensor colsum = Tensor::empty({p.batch, p.heads, p.prompt}, DType::F32);
    std::vector<int32_t> pad(p.pad.begin(), p.pad.end());
    ops::attention_prefill(q, k, v, pad, 1.0f / std::sqrt(float(p.dim)), out, &colsum);
    kv_prefill(rule, k, v, &colsum, pad, slots);
  }

  Tensor decode(int t) {
    const Shape s{p.batch, p.heads, p.dim};
    Tensor q = gather(p.q, t, t + 1).reshape(s), k = gather(p.k, t, t + 1).reshape(s);
    Tensor v = gather(p.v, t, t + 1).reshape(s), out = Tensor::empty(s, DType::F32);
    Tensor probs = Tensor::empty(slots.pos.shape(), DType::F32);
    Tensor self = Tensor::empty({p.batch, p.heads}, DType::F32);
    ops::attention_decode(q, slots.k, slots.v, slots.pos, k, v, 1.0f / std::sqrt(float(p.dim)), out,
                          &probs, &self);
    kv_decode_insert(rule, t, k, v, &probs, &self, slots);
    return out;
  }

  std::set<int> kept(int b, int h) const {
    std::set<int> s;
    const int cap = p.heavy + p.recent;
    for (int j = 0; j < cap; ++j) {
      const int pos = slots.pos.data<int32_t>()[(b * p.heads + h) * cap + j];
      if (pos >= 0) {
        EXPECT_TRUE(s.insert(pos).second) << "position " << pos << " stored twice";
      }
    }
    return s;
  }
};

inline void check_same_kept(const Problem& p, const Reference& ref, const Engine& eng,
                            const char* when) {
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      ASSERT_EQ(eng.kept(b, h), ref.kept(b, h)) << when << " seq " << b << " head " << h;
    }
  }
}

inline void check_invariants(const Problem& p, const Engine& eng, int last) {
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      const auto kept = eng.kept(b, h);
      EXPECT_LE(static_cast<int>(kept.size()), p.heavy + p.recent);
      for (int pos : kept) EXPECT_GE(pos, p.pad[b]) << "padding position kept";
      for (int j = std::max(p.pad[b], last - p.recent + 1); j <= last; ++j) {
        EXPECT_TRUE(kept.count(j)) << "recent position " << j << " missing (seq " << b << ")";
      }
    }
  }
}

// The engine running `policy` against the reference updating scores by `update`, after prefill
// and after every decode step: the same attention output and the same kept positions.
inline void run_and_compare(const Problem& p, const std::string& policy = "h2o",
                            ScoreUpdate update = ScoreUpdate::Add) {
  Reference ref(p, update);
  Engine eng(p, policy);
  ref.prefill();
  eng.prefill();
  check_same_kept(p, ref, eng, "prefill");
  check_invariants(p, eng, p.prompt - 1);
  for (int t = p.prompt; t < p.total(); ++t) {
    const auto expected = ref.decode(t);
    Tensor out = eng.decode(t);
    for (int bh = 0; bh < p.batch * p.heads; ++bh) {
      for (int d = 0; d < p.dim; ++d) {
        ASSERT_NEAR(out.data<float>()[bh * p.dim + d], expected[bh][d], 1e-4) << "step " << t;
      }
    }
    check_same_kept(p, ref, eng, ("decode step " + std::to_string(t)).c_str());
    check_invariants(p, eng, t);
  }
}

}  // namespace h2oflex::eviction_reference
