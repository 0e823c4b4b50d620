// SnapKV checked against an independent reference in double precision: at prefill each KV head
// keeps its last `recent` prompt tokens (the observation window) and the `heavy` earlier ones
// that the window's queries attend to most, after 1-D max pooling over neighbouring keys; every
// generated token is then kept. The engine side is eviction_reference.h's Engine.
#include <gtest/gtest.h>

#include <random>

#include "eviction_reference.h"

namespace h2oflex {
namespace {

using namespace eviction_reference;

struct SnapReference {
  const Problem& p;
  Reference attn;  // its logits and softmax; its own eviction is unused
  std::vector<std::vector<bool>> alive;

  explicit SnapReference(const Problem& prob) : p(prob), attn(prob) {
    alive.assign(static_cast<size_t>(p.batch * p.kv_heads), std::vector<bool>(p.total(), false));
  }

  // Raw window attention and its pooled form for (b, g), as the policy ranks the prompt.
  std::vector<double> pooled(int b, int g) const {
    const int p0 = p.pad[b], w = std::min(p.recent, p.prompt - p0), first = p.prompt - w;
    std::vector<double> raw(p.total(), 0.0);
    for (int h = g * p.group(); h < (g + 1) * p.group(); ++h) {
      for (int i = first; i < p.prompt; ++i) {
        std::vector<bool> causal(p.total(), false);
        for (int j = p0; j <= i; ++j) causal[j] = true;
        const auto pr = attn.probs(b, h, i, causal);
        for (int j = 0; j < p.total(); ++j) raw[j] += pr[j];
      }
    }
    std::vector<double> out(raw);
    const int half = KvRule::kWindowPool / 2;
    for (int j = p0; j < first; ++j) {
      double m = -1e300;
      for (int t = std::max(p0, j - half); t <= std::min(first - 1, j + half); ++t) {
        m = std::max(m, raw[t]);
      }
      out[j] = m;
    }
    return out;
  }

  void prefill() {
    for (int b = 0; b < p.batch; ++b) {
      for (int g = 0; g < p.kv_heads; ++g) {
        select_prompt(p, p.pad[b], pooled(b, g), alive[b * p.kv_heads + g]);
      }
    }
  }

  // Appends token t everywhere (nothing is evicted) and returns each query head's output.
  std::vector<std::vector<double>> decode(int t) {
    std::vector<std::vector<double>> outs(static_cast<size_t>(p.batch * p.heads));
    for (int b = 0; b < p.batch; ++b) {
      for (int g = 0; g < p.kv_heads; ++g) {
        auto& al = alive[b * p.kv_heads + g];
        al[t] = true;
        for (int h = g * p.group(); h < (g + 1) * p.group(); ++h) {
          const auto pr = attn.probs(b, h, t, al);
          std::vector<double> out(p.dim, 0.0);
          for (int j = 0; j < p.total(); ++j) {
            if (!al[j]) continue;
            for (int d = 0; d < p.dim; ++d) out[d] += pr[j] * p.v[p.kv_at(b, j, g) + d];
          }
          outs[b * p.heads + h] = out;
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

void compare_snapkv(const Problem& p) {
  SnapReference ref(p);
  Engine eng(p, "snapkv");
  ref.prefill();
  eng.prefill();
  for (int b = 0; b < p.batch; ++b) {
    for (int g = 0; g < p.kv_heads; ++g) {
      ASSERT_EQ(eng.kept(b, g), ref.kept(b, g)) << "prefill seq " << b << " head " << g;
    }
  }
  for (int t = p.prompt; t < p.total(); ++t) {
    const auto want = ref.decode(t);
    const Tensor out = eng.decode(t);
    for (int bh = 0; bh < p.batch * p.heads; ++bh) {
      for (int d = 0; d < p.dim; ++d) {
        ASSERT_NEAR(out.data<float>()[bh * p.dim + d], want[bh][d], 1e-4) << "step " << t;
      }
    }
    for (int b = 0; b < p.batch; ++b) {
      for (int g = 0; g < p.kv_heads; ++g) {
        ASSERT_EQ(eng.kept(b, g), ref.kept(b, g)) << "step " << t << " seq " << b;
      }
    }
  }
}

TEST(SnapKvReference, PrefillSelectionAndGrowingDecodeMatch) {
  compare_snapkv(make_problem(3, 3, 4, 32, 10, 5, 4, {0, 6, 13}));
}

TEST(SnapKvReference, ManySeedsShapesAndGroupedHeads) {
  for (uint32_t seed = 70; seed < 80; ++seed) {
    std::mt19937 rng(seed);
    const int prompt = 6 + static_cast<int>(rng() % 30);
    const int heavy = static_cast<int>(rng() % 7), recent = 1 + static_cast<int>(rng() % 8);
    const std::vector<int> pad = {0, static_cast<int>(rng() % prompt)};
    const int kv_heads = seed % 2 ? 2 : 4;
    SCOPED_TRACE("seed " + std::to_string(seed));
    compare_snapkv(make_problem(seed, 2, 4, prompt, 6, heavy, recent, pad, kv_heads));
  }
}

// The window's pooled attention, not the whole prompt's column sums, picks the heavy tokens:
// SnapKV and H2O keep different prompt tokens, and SnapKV's cache grows while H2O's does not.
TEST(SnapKvReference, DiffersFromH2OAndKeepsGeneratedTokens) {
  const Problem p = make_problem(9, 2, 4, 40, 8, 4, 3, {0, 0});
  Engine snap(p, "snapkv"), h2o(p, "h2o");
  snap.prefill();
  h2o.prefill();
  bool differ = false;
  for (int b = 0; b < p.batch; ++b) {
    for (int g = 0; g < p.kv_heads; ++g) differ |= snap.kept(b, g) != h2o.kept(b, g);
  }
  EXPECT_TRUE(differ);
  for (int t = p.prompt; t < p.total(); ++t) snap.decode(t);
  EXPECT_EQ(snap.kept(0, 0).size(), static_cast<size_t>(4 + 3 + p.gen));
}

}  // namespace
}  // namespace h2oflex
