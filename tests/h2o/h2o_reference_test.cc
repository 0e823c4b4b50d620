// H2O eviction checked against an independent, mask-based reference written here: it keeps the
// whole KV, marks evicted positions dead, and re-derives every choice in double precision with
// its own loops — no code shared with the engine's kernels or slot bookkeeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "engine/kv_slots.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

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

Problem make_problem(uint32_t seed, int batch, int heads, int prompt, int gen, int heavy,
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
struct Reference {
  const Problem& p;
  std::vector<std::vector<bool>> alive;    // [b*h][t]
  std::vector<std::vector<double>> score;  // [b*h][t]

  explicit Reference(const Problem& prob) : p(prob) {
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
          sc[j] += pr[j];
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

  explicit Engine(const Problem& prob) : p(prob) {
    rule = policy::kv_rule("h2o", 0, p.heavy, p.recent);
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

void check_same_kept(const Problem& p, const Reference& ref, const Engine& eng, const char* when) {
  for (int b = 0; b < p.batch; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      ASSERT_EQ(eng.kept(b, h), ref.kept(b, h)) << when << " seq " << b << " head " << h;
    }
  }
}

void check_invariants(const Problem& p, const Engine& eng, int last) {
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

void run_and_compare(const Problem& p) {
  Reference ref(p);
  Engine eng(p);
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

TEST(H2OReference, PrefillAndEveryDecodeStepMatch) {
  run_and_compare(make_problem(1, 3, 4, 24, 20, 4, 3, {0, 5, 11}));
}

TEST(H2OReference, ManySeedsAndShapes) {
  for (uint32_t seed = 2; seed < 12; ++seed) {
    std::mt19937 rng(seed);
    const int prompt = 8 + static_cast<int>(rng() % 24);
    const int heavy = 1 + static_cast<int>(rng() % 6), recent = 1 + static_cast<int>(rng() % 6);
    std::vector<int> pad = {0, static_cast<int>(rng() % prompt), static_cast<int>(rng() % prompt)};
    run_and_compare(make_problem(seed, 3, 3, prompt, 12, heavy, recent, pad));
  }
}

TEST(H2OReference, ShortPromptsKeepEverythingUntilTheBudgetFills) {
  // 20 - 16 = 4 real tokens < budget 6: nothing is evicted at prefill.
  run_and_compare(make_problem(21, 2, 2, 20, 10, 3, 3, {16, 0}));
}

TEST(H2OReference, OneSequenceNeverChangesAnothersKeptSet) {
  Problem a = make_problem(5, 2, 3, 20, 10, 3, 4, {0, 3});
  Problem b = a;
  std::mt19937 rng(99);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int t = 0; t < b.total(); ++t) {  // rewrite sequence 1 entirely
    for (int h = 0; h < b.heads; ++h) {
      for (int d = 0; d < b.dim; ++d) {
        b.q[b.at(1, t, h) + d] = n(rng);
        b.k[b.at(1, t, h) + d] = n(rng);
        b.v[b.at(1, t, h) + d] = n(rng);
      }
    }
  }
  Engine ea(a), eb(b);
  ea.prefill();
  eb.prefill();
  for (int t = a.prompt; t < a.total(); ++t) {
    ea.decode(t);
    eb.decode(t);
    for (int h = 0; h < a.heads; ++h) ASSERT_EQ(ea.kept(0, h), eb.kept(0, h)) << "step " << t;
  }
  bool some_differ = false;
  for (int h = 0; h < a.heads; ++h) some_differ |= ea.kept(1, h) != eb.kept(1, h);
  EXPECT_TRUE(some_differ) << "the rewritten sequence should have chosen differently";
}

}  // namespace
}  // namespace h2oflex
