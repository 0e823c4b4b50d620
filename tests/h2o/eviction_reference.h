// An independent, mask-based reference for score-based KV eviction (H2O, TOVA): it keeps the
// whole KV, marks evicted positions dead, and re-derives every choice in double precision with
// its own loops — no code shared with the engine's kernels or slot bookkeeping. Next to it, the
// engine side (ops + KV slots) and the comparison of the two.
//
// Grouped-query attention: q has `heads` heads, k and v `kv_heads`; query head h reads KV head
// h / (heads / kv_heads), and a KV head's scores add up the probabilities of all its query heads,
// so what is kept is decided per KV head. Rotary embedding (rot_dim > 0): the reference rotates the
// raw q and k itself, in double precision, at each token's real position (its index among the
// sequence's real tokens); the engine applies ops::rotary_embedding before attention and caches
// the rotated keys.
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
  int kv_heads;          // divides heads
  int rot_dim;           // rotary dims per head (even, <= dim); 0 for no rotary embedding
  double rope_base;
  // For every padded position: q [b][t][heads][d], k and v [b][t][kv_heads][d], unrotated.
  std::vector<float> q, k, v;
  int total() const { return prompt + gen; }
  int group() const { return heads / kv_heads; }
  size_t q_at(int b, int t, int h) const {
    return ((static_cast<size_t>(b) * total() + t) * heads + h) * dim;
  }
  size_t kv_at(int b, int t, int g) const {
    return ((static_cast<size_t>(b) * total() + t) * kv_heads + g) * dim;
  }
  // The rotary frequencies as the model holds them: f32, base^(-2i / rot_dim).
  std::vector<float> inv_freq() const {
    std::vector<float> f(static_cast<size_t>(rot_dim / 2));
    for (int i = 0; i < rot_dim / 2; ++i) {
      f[i] = static_cast<float>(1.0 / std::pow(rope_base, 2.0 * i / rot_dim));
    }
    return f;
  }
};

// kv_heads 0 means one KV head per query head.
inline Problem make_problem(uint32_t seed, int batch, int heads, int prompt, int gen, int heavy,
                            int recent, std::vector<int> pad, int kv_heads = 0, int rot_dim = 0) {
  Problem p{batch,
            heads,
            16,
            prompt,
            gen,
            heavy,
            recent,
            std::move(pad),
            kv_heads > 0 ? kv_heads : heads,
            rot_dim,
            10000.0,
            {},
            {},
            {}};
  EXPECT_EQ(p.heads % p.kv_heads, 0);
  EXPECT_TRUE(rot_dim % 2 == 0 && rot_dim <= p.dim);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const size_t positions = static_cast<size_t>(batch) * p.total() * p.dim;
  p.q.resize(positions * heads);
  p.k.resize(positions * p.kv_heads);
  p.v.resize(positions * p.kv_heads);
  for (auto* vec : {&p.q, &p.k, &p.v}) {
    for (float& x : *vec) x = n(rng);
  }
  return p;
}

// ---- the reference: full KV + alive mask, double precision ----

// Prefill selection of one (sequence, KV head) with prompt scores `sc`: every real token when
// they fit in heavy + recent, else the last `recent` and the `heavy` others of highest score
// (ties: the earlier position).
inline void select_prompt(const Problem& p, int p0, const std::vector<double>& sc,
                          std::vector<bool>& al) {
  if (p.prompt - p0 <= p.heavy + p.recent) {
    for (int j = p0; j < p.prompt; ++j) al[j] = true;
    return;
  }
  for (int j = p.prompt - p.recent; j < p.prompt; ++j) al[j] = true;
  std::vector<int> rest;
  for (int j = p0; j < p.prompt - p.recent; ++j) rest.push_back(j);
  std::stable_sort(rest.begin(), rest.end(), [&](int a, int c) { return sc[a] > sc[c]; });
  for (int i = 0; i < p.heavy; ++i) al[rest[i]] = true;
}
// How a decode step's probabilities enter the scores: added (H2O) or replacing them (TOVA); or
// no attention at all: every token's score is a fixed value of its position (`random`'s draw).
enum class ScoreUpdate { Add, Replace, Fixed };

struct Reference {
  const Problem& p;
  ScoreUpdate update;
  std::vector<std::vector<bool>> alive;    // [b*kv_heads][t]
  std::vector<std::vector<double>> score;  // [b*kv_heads][t]
  std::vector<double> q, k;                // as in the problem, rotated when it asks for rotary
  std::vector<double> fixed;               // ScoreUpdate::Fixed: the score of each position
  bool per_layer = false;

  explicit Reference(const Problem& prob, ScoreUpdate u = ScoreUpdate::Add,
                     std::vector<double> fixed_scores = {}, bool shared_over_heads = false)
      : p(prob), update(u), fixed(std::move(fixed_scores)), per_layer(shared_over_heads) {
    alive.assign(static_cast<size_t>(p.batch * p.kv_heads), std::vector<bool>(p.total(), false));
    score.assign(alive.size(), std::vector<double>(p.total(), 0.0));
    q.assign(p.q.begin(), p.q.end());
    k.assign(p.k.begin(), p.k.end());
    if (p.rot_dim == 0) return;
    for (int b = 0; b < p.batch; ++b) {
      for (int t = p.pad[b]; t < p.total(); ++t) {
        for (int h = 0; h < p.heads; ++h) rotate(&q[p.q_at(b, t, h)], t - p.pad[b]);
        for (int g = 0; g < p.kv_heads; ++g) rotate(&k[p.kv_at(b, t, g)], t - p.pad[b]);
      }
    }
  }

  // Half-split rotation of one head's first rot_dim dims by angles position * inv_freq[i] (that
  // product in f32, as the reference model's f32 matmul forms it).
  void rotate(double* x, int position) const {
    const std::vector<float> freq = p.inv_freq();
    const int half = p.rot_dim / 2;
    for (int i = 0; i < half; ++i) {
      const double angle = static_cast<float>(position) * freq[i];
      const double a = x[i], b = x[i + half];
      x[i] = a * std::cos(angle) - b * std::sin(angle);
      x[i + half] = b * std::cos(angle) + a * std::sin(angle);
    }
  }

  // Query head h at qi against its KV head's key at kj.
  double logit(int b, int h, int qi, int kj) const {
    const int g = h / p.group();
    double s = 0;
    for (int d = 0; d < p.dim; ++d) s += q[p.q_at(b, qi, h) + d] * k[p.kv_at(b, kj, g) + d];
    return s / std::sqrt(double(p.dim));
  }

  // Softmax of query head h at qi over the keys where `use` is true.
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

  // per_layer: the scores of a sequence's KV heads are averaged before every choice (TOVA's one
  // kept set per layer), so every head keeps the same positions.
  void share_over_heads(int b) {
    if (!per_layer) return;
    for (int j = 0; j < p.total(); ++j) {
      double sum = 0;
      for (int g = 0; g < p.kv_heads; ++g) sum += score[b * p.kv_heads + g][j];
      for (int g = 0; g < p.kv_heads; ++g) score[b * p.kv_heads + g][j] = sum / p.kv_heads;
    }
  }

  void prefill() {
    for (int b = 0; b < p.batch; ++b) {
      for (int g = 0; g < p.kv_heads; ++g) {
        auto& sc = score[b * p.kv_heads + g];
        if (update == ScoreUpdate::Fixed) {
          for (int j = 0; j < p.total(); ++j) sc[j] = fixed.at(j);
        }
        for (int h = g * p.group(); h < (g + 1) * p.group() && update != ScoreUpdate::Fixed; ++h) {
          for (int i = p.pad[b]; i < p.prompt; ++i) {
            std::vector<bool> causal(p.total(), false);
            for (int j = p.pad[b]; j <= i; ++j) causal[j] = true;
            const auto pr = probs(b, h, i, causal);
            for (int j = 0; j < p.total(); ++j) sc[j] += pr[j];
          }
        }
      }
      share_over_heads(b);
      for (int g = 0; g < p.kv_heads; ++g) {
        select_prompt(p, p.pad[b], score[b * p.kv_heads + g], alive[b * p.kv_heads + g]);
      }
    }
  }

  // Decode token at padded position t; returns each (b, query head)'s attention output.
  std::vector<std::vector<double>> decode(int t) {
    std::vector<std::vector<double>> outs(static_cast<size_t>(p.batch * p.heads));
    for (int b = 0; b < p.batch; ++b) {
      for (int g = 0; g < p.kv_heads; ++g) {
        auto& al = alive[b * p.kv_heads + g];
        auto& sc = score[b * p.kv_heads + g];
        std::vector<bool> use = al;
        use[t] = true;
        std::vector<double> step(p.total(), 0.0);  // this step's probability, summed over heads
        for (int h = g * p.group(); h < (g + 1) * p.group(); ++h) {
          const auto pr = probs(b, h, t, use);
          std::vector<double> out(p.dim, 0.0);
          for (int j = 0; j < p.total(); ++j) {
            if (!use[j]) continue;
            step[j] += pr[j];
            for (int d = 0; d < p.dim; ++d) out[d] += pr[j] * p.v[p.kv_at(b, j, g) + d];
          }
          outs[b * p.heads + h] = out;
        }
        for (int j = 0; j < p.total() && update != ScoreUpdate::Fixed; ++j) {
          if (use[j]) sc[j] = update == ScoreUpdate::Add ? sc[j] + step[j] : step[j];
        }
      }
      share_over_heads(b);
      for (int g = 0; g < p.kv_heads; ++g) {
        auto& al = alive[b * p.kv_heads + g];
        const auto& sc = score[b * p.kv_heads + g];
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

  std::set<int> kept(int b, int g) const {
    std::set<int> s;
    for (int j = 0; j < p.total(); ++j)
      if (alive[b * p.kv_heads + g][j]) s.insert(j);
    return s;
  }
};

// ---- the engine: ops + KV slots ----
struct Engine {
  const Problem& p;
  KvRule rule;
  KvSlots slots;

  // "full" takes no counts; its heavy + recent slots must then hold the whole sequence.
  explicit Engine(const Problem& prob, const std::string& name = "h2o") : p(prob) {
    rule = name == "full" ? policy::kv_rule(name, 0, 0, 0)
                          : policy::kv_rule(name, 0, p.heavy, p.recent);
    slots =
        KvSlots::allocate(p.batch, p.kv_heads, rule.capacity(p.prompt, p.gen), p.dim, DType::F32);
  }

  // Positions t0..t1-1 of every sequence: [b, t1 - t0, heads, d] from a [b][t][heads][d] array.
  Tensor gather(const std::vector<float>& src, int heads, int t0, int t1) const {
    Tensor out = Tensor::empty({p.batch, t1 - t0, heads, p.dim}, DType::F32);
    const size_t row = static_cast<size_t>(heads) * p.dim;
    for (int b = 0; b < p.batch; ++b) {
      for (int t = t0; t < t1; ++t) {
        std::copy_n(&src[(static_cast<size_t>(b) * p.total() + t) * row], row,
                    out.data<float>() + (b * (t1 - t0) + t - t0) * row);
      }
    }
    return out;
  }

  // The rotary embedding at real positions (padded index - pad; padding rows stay as they are).
  void rotate(Tensor& x, int heads, int t0, int t1) const {
    if (p.rot_dim == 0) return;
    Tensor positions = Tensor::empty({p.batch * (t1 - t0)}, DType::I32);
    for (int b = 0; b < p.batch; ++b) {
      for (int t = t0; t < t1; ++t)
        positions.data<int32_t>()[b * (t1 - t0) + t - t0] = t - p.pad[b];
    }
    const std::vector<float> freq = p.inv_freq();
    Tensor inv_freq = Tensor::empty({p.rot_dim / 2}, DType::F32);
    std::copy(freq.begin(), freq.end(), inv_freq.data<float>());
    Tensor rows = x.reshape({p.batch * (t1 - t0), heads * p.dim});
    ops::rotary_embedding(rows, positions, heads, p.rot_dim, inv_freq);
  }

  void prefill() {
    Tensor q = gather(p.q, p.heads, 0, p.prompt), k = gather(p.k, p.kv_heads, 0, p.prompt);
    Tensor v = gather(p.v, p.kv_heads, 0, p.prompt);
    rotate(q, p.heads, 0, p.prompt);
    rotate(k, p.kv_heads, 0, p.prompt);
    Tensor out = Tensor::empty(q.shape(), DType::F32);
    Tensor colsum = Tensor::empty({p.batch, p.kv_heads, p.prompt}, DType::F32);
    std::vector<int32_t> pad(p.pad.begin(), p.pad.end());
    const float scale = 1.0f / std::sqrt(float(p.dim));
    const bool window = rule.prefill == PrefillStat::WindowPooled;
    ops::attention_prefill(q, k, v, pad, scale, out, window ? nullptr : &colsum,
                           ops::ComputeType::F32);
    if (window)
      ops::window_attention_scores(q, k, pad, scale, p.recent, KvRule::kWindowPool, colsum);
    kv_prefill(rule, k, v, &colsum, pad, slots);
  }

  Tensor decode(int t) {
    const Shape qs{p.batch, p.heads, p.dim}, kvs{p.batch, p.kv_heads, p.dim};
    Tensor q = gather(p.q, p.heads, t, t + 1), k = gather(p.k, p.kv_heads, t, t + 1);
    rotate(q, p.heads, t, t + 1);
    rotate(k, p.kv_heads, t, t + 1);
    q = q.reshape(qs);
    k = k.reshape(kvs);
    Tensor v = gather(p.v, p.kv_heads, t, t + 1).reshape(kvs), out = Tensor::empty(qs, DType::F32);
    Tensor probs = Tensor::empty(slots.pos.shape(), DType::F32);
    Tensor self = Tensor::empty({p.batch, p.kv_heads}, DType::F32);
    ops::attention_decode(q, slots.k, slots.v, slots.pos, k, v, 1.0f / std::sqrt(float(p.dim)), out,
                          &probs, &self);
    kv_decode_insert(rule, t, k, v, &probs, &self, slots);
    return out;
  }

  std::set<int> kept(int b, int g) const {
    std::set<int> s;
    const int cap = static_cast<int>(slots.capacity());
    for (int j = 0; j < cap; ++j) {
      const int pos = slots.pos.data<int32_t>()[(b * p.kv_heads + g) * cap + j];
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
    for (int g = 0; g < p.kv_heads; ++g) {
      ASSERT_EQ(eng.kept(b, g), ref.kept(b, g)) << when << " seq " << b << " kv head " << g;
    }
  }
}

inline void check_invariants(const Problem& p, const Engine& eng, int last) {
  for (int b = 0; b < p.batch; ++b) {
    for (int g = 0; g < p.kv_heads; ++g) {
      const auto kept = eng.kept(b, g);
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
                            ScoreUpdate update = ScoreUpdate::Add,
                            std::vector<double> fixed_scores = {}, bool per_layer = false) {
  Reference ref(p, update, std::move(fixed_scores), per_layer);
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
