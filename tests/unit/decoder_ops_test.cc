// The ops LLaMA-family and GPT-NeoX decoders need (RMSNorm, rotary embedding, SwiGLU, exact GELU,
// the fused-QKV split) and grouped-query attention, on the CPU backend, each against a naive loop
// written here in double precision from the formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

Tensor random_f32(Shape shape, uint32_t seed, float std = 1.0f, float mean = 0.0f) {
  Tensor t = Tensor::empty(std::move(shape), DType::F32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(mean, std);
  for (float& x : t.span<float>()) x = n(rng);
  return t;
}

Tensor ints(Shape shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::empty(std::move(shape), DType::I32);
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  std::copy(values.begin(), values.end(), t.data<int32_t>());
  return t;
}

// Largest |got - want| relative to max(1, |want|), over all elements.
double max_rel_error(const Tensor& got, const std::vector<double>& want) {
  EXPECT_EQ(static_cast<size_t>(got.numel()), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e =
        std::abs(double(got.data<float>()[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    worst = std::max(worst, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
  }
  return worst;
}

// ---- RMSNorm ----

std::vector<double> naive_rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
  const int64_t n = x.dim(-1), rows = x.numel() / n;
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < n; ++i)
      sq += double(x.data<float>()[r * n + i]) * x.data<float>()[r * n + i];
    const double scale = 1.0 / std::sqrt(sq / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      out[r * n + i] = x.data<float>()[r * n + i] * scale * gamma.data<float>()[i];
    }
  }
  return out;
}

TEST(RmsNorm, MatchesTheFormulaAndWorksInPlace) {
  for (int64_t n : {8, 64, 1000, 4096}) {
    Tensor x = random_f32({5, n}, 1, 2.0f, 0.5f);
    Tensor gamma = random_f32({n}, 2, 0.5f, 1.0f);
    const std::vector<double> want = naive_rms_norm(x, gamma, 1e-6);
    Tensor out = Tensor::zeros({5, n}, DType::F32);
    ops::rms_norm(x, gamma, 1e-6f, out);
    EXPECT_LE(max_rel_error(out, want), 2e-6) << n;
    ops::rms_norm(x, gamma, 1e-6f, x);  // out aliases x
    EXPECT_LE(max_rel_error(x, want), 2e-6) << n;
  }
}

TEST(RmsNorm, EpsCountsWhereTheRowIsSmall) {
  // mean(x²) ≈ 1e-6, eps 1e-5: leaving eps out would scale the row about 3.3x too much.
  Tensor x = random_f32({3, 128}, 3, 1e-3f);
  Tensor gamma = random_f32({128}, 4, 1.0f);
  Tensor out = Tensor::zeros({3, 128}, DType::F32);
  ops::rms_norm(x, gamma, 1e-5f, out);
  std::vector<double> want = naive_rms_norm(x, gamma, 1e-5);
  for (double& w : want) w *= 1e3;  // compare at unit scale
  Tensor scaled = out.clone();
  for (float& v : scaled.span<float>()) v *= 1e3f;
  EXPECT_LE(max_rel_error(scaled, want), 2e-6);
}

TEST(RmsNorm, MismatchedGammaIsRejected) {
  Tensor x = random_f32({2, 16}, 5);
  Tensor gamma = random_f32({15}, 6);
  Tensor out = Tensor::zeros({2, 16}, DType::F32);
  EXPECT_THROW(ops::rms_norm(x, gamma, 1e-6f, out), InternalError);
  Tensor g16 = to_dtype(random_f32({16}, 6), DType::F16);
  EXPECT_THROW(ops::rms_norm(x, g16, 1e-6f, out), InternalError);
}

// ---- rotary embedding ----

Tensor neox_inv_freq(int64_t rot_dim, double base) {
  Tensor f = Tensor::empty({rot_dim / 2}, DType::F32);
  for (int64_t i = 0; i < rot_dim / 2; ++i) {
    f.data<float>()[i] = static_cast<float>(1.0 / std::pow(base, 2.0 * i / rot_dim));
  }
  return f;
}

// The rotation written out per element: the angle is the f32 product (as specified), the rotation
// itself double precision.
std::vector<double> naive_rotary(const Tensor& x, const std::vector<int32_t>& pos, int64_t heads,
                                 int64_t rot_dim, const Tensor& inv_freq) {
  const int64_t rows = static_cast<int64_t>(pos.size()), head_dim = x.numel() / (rows * heads);
  std::vector<double> out(x.data<float>(), x.data<float>() + x.numel());
  for (int64_t r = 0; r < rows; ++r) {
    if (pos[r] < 0) continue;
    for (int64_t h = 0; h < heads; ++h) {
      const float* in = x.data<float>() + (r * heads + h) * head_dim;
      double* o = out.data() + (r * heads + h) * head_dim;
      for (int64_t i = 0; i < rot_dim / 2; ++i) {
        const double angle = static_cast<float>(pos[r]) * inv_freq.data<float>()[i];
        const double a = in[i], b = in[i + rot_dim / 2];
        o[i] = a * std::cos(angle) - b * std::sin(angle);
        o[i + rot_dim / 2] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
  return out;
}

TEST(RotaryEmbedding, FullAndPartialRotationMatchTheFormula) {
  const int64_t heads = 3, head_dim = 16, rows = 6;
  const std::vector<int32_t> pos = {0, 1, 7, -1, 2047, 31};
  for (int64_t rot_dim : {16, 8, 2}) {  // full (LLaMA), NeoX's rotary_pct 0.5, one pair
    const Tensor x0 = random_f32({rows, heads * head_dim}, 7);
    const Tensor inv_freq = neox_inv_freq(rot_dim, 10000.0);
    Tensor x = x0.clone();
    ops::rotary_embedding(x, ints({rows}, pos), heads, rot_dim, inv_freq);
    EXPECT_LE(max_rel_error(x, naive_rotary(x0, pos, heads, rot_dim, inv_freq)), 2e-6) << rot_dim;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < head_dim; ++i) {
          const int64_t at = (r * heads + h) * head_dim + i;
          // Padding rows, position 0 and the dims past rot_dim stay exactly as they were.
          if (pos[r] <= 0 || i >= rot_dim) {
            ASSERT_EQ(x.data<float>()[at], x0.data<float>()[at]) << "row " << r << " dim " << i;
          }
        }
      }
    }
  }
}

TEST(RotaryEmbedding, RotationPreservesNormsAndDependsOnRelativePosition) {
  // q at position m and k at position n: their rotated dot product depends only on m - n.
  const int64_t head_dim = 32, heads = 1;
  const Tensor inv_freq = neox_inv_freq(head_dim, 10000.0);
  const Tensor q0 = random_f32({1, head_dim}, 8), k0 = random_f32({1, head_dim}, 9);
  const auto rotated_dot = [&](int32_t m, int32_t n) {
    Tensor q = q0.clone(), k = k0.clone();
    ops::rotary_embedding(q, ints({1}, {m}), heads, head_dim, inv_freq);
    ops::rotary_embedding(k, ints({1}, {n}), heads, head_dim, inv_freq);
    double dot = 0;
    for (int64_t i = 0; i < head_dim; ++i) dot += double(q.data<float>()[i]) * k.data<float>()[i];
    return dot;
  };
  EXPECT_NEAR(rotated_dot(10, 3), rotated_dot(107, 100), 1e-4);
  EXPECT_GT(std::abs(rotated_dot(10, 3) - rotated_dot(10, 4)), 1e-3);
}

TEST(RotaryEmbedding, BadArgumentsAreRejected) {
  Tensor x = random_f32({2, 2 * 8}, 10);
  const Tensor pos = ints({2}, {0, 1});
  EXPECT_THROW(ops::rotary_embedding(x, pos, 2, 7, neox_inv_freq(6, 1e4)), InternalError);  // odd
  EXPECT_THROW(ops::rotary_embedding(x, pos, 2, 10, neox_inv_freq(10, 1e4)), InternalError);
  EXPECT_THROW(ops::rotary_embedding(x, pos, 2, 8, neox_inv_freq(6, 1e4)), InternalError);
  EXPECT_THROW(ops::rotary_embedding(x, pos, 3, 4, neox_inv_freq(4, 1e4)), InternalError);
  EXPECT_THROW(ops::rotary_embedding(x, ints({3}, {0, 1, 2}), 2, 8, neox_inv_freq(8, 1e4)),
               InternalError);
}

// ---- SwiGLU and GELU ----

TEST(SiluMul, MatchesTheFormulaIncludingLargeInputsAndInPlace) {
  Tensor gate = random_f32({7, 300}, 11, 3.0f);
  gate.data<float>()[0] = 90.0f;   // exp(-g) underflows
  gate.data<float>()[1] = -90.0f;  // exp(-g) overflows: the product is -0
  gate.data<float>()[2] = 0.0f;
  const Tensor up = random_f32({7, 300}, 12);
  std::vector<double> want(static_cast<size_t>(gate.numel()));
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = gate.data<float>()[i];
    want[i] = g / (1.0 + std::exp(-g)) * up.data<float>()[i];
  }
  Tensor out = Tensor::zeros(gate.shape(), DType::F32);
  ops::silu_mul(gate, up, out);
  EXPECT_LE(max_rel_error(out, want), 1e-6);
  ops::silu_mul(gate, up, gate);  // out aliases gate
  EXPECT_LE(max_rel_error(gate, want), 1e-6);
  Tensor short_up = random_f32({7, 299}, 13);
  EXPECT_THROW(ops::silu_mul(gate, short_up, out), InternalError);
}

TEST(Gelu, IsTheExactErfFormNotTheTanhApproximation) {
  Tensor x = Tensor::empty({4001}, DType::F32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = -10.0f + 0.005f * i;
  std::vector<double> want(static_cast<size_t>(x.numel()));
  double tanh_gap = 0;  // how far the tanh approximation is from the exact form on this grid
  for (size_t i = 0; i < want.size(); ++i) {
    const double v = x.data<float>()[i];
    want[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    const double approx =
        0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    tanh_gap = std::max(tanh_gap, std::abs(approx - want[i]));
  }
  ops::gelu(x);
  const double err = max_rel_error(x, want);
  EXPECT_LE(err, 1e-6);
  EXPECT_GT(tanh_gap, 100 * err) << "the test would not tell the two forms apart";
}

// ---- fused QKV split ----

TEST(SplitQkvHeads, EachHeadsThirdsGoToQKAndV) {
  const int64_t rows = 4, heads = 3, d = 5;
  Tensor qkv = Tensor::empty({rows, heads * 3 * d}, DType::F32);
  for (int64_t i = 0; i < qkv.numel(); ++i) qkv.data<float>()[i] = static_cast<float>(i);
  Tensor q = Tensor::zeros({rows, heads * d}, DType::F32), k = Tensor::zeros(q.shape(), DType::F32);
  Tensor v = Tensor::zeros(q.shape(), DType::F32);
  ops::split_qkv_heads(qkv, heads, q, k, v);
  Tensor* parts[3] = {&q, &k, &v};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int part = 0; part < 3; ++part) {
        for (int64_t t = 0; t < d; ++t) {
          const float want = qkv.data<float>()[r * heads * 3 * d + h * 3 * d + part * d + t];
          ASSERT_EQ(parts[part]->data<float>()[(r * heads + h) * d + t], want)
              << "row " << r << " head " << h << " part " << part << " dim " << t;
        }
      }
    }
  }
  Tensor wrong = Tensor::zeros({rows, heads * d + 1}, DType::F32);
  EXPECT_THROW(ops::split_qkv_heads(qkv, heads, q, wrong, v), InternalError);
  EXPECT_THROW(ops::split_qkv_heads(qkv, 4, q, k, v), InternalError);  // 45 is not 4 heads of 3
}

// ---- grouped-query attention ----

// Query head hq reads KV head hq / (h / kvh), as Hugging Face's repeat_kv lays the heads out.
int64_t kv_head_of(int64_t hq, int64_t h, int64_t kvh) {
  return hq / (h / kvh);
}

struct PrefillWant {
  std::vector<double> out, colsum;
};

PrefillWant naive_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                          const std::vector<int32_t>& pad, double scale) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3), kvh = k.dim(2);
  PrefillWant w;
  w.out.assign(static_cast<size_t>(q.numel()), 0.0);
  w.colsum.assign(static_cast<size_t>(b * kvh * s), 0.0);
  const auto qat = [&](int64_t bi, int64_t t, int64_t hi) { return ((bi * s + t) * h + hi) * d; };
  const auto kat = [&](int64_t bi, int64_t t, int64_t g) { return ((bi * s + t) * kvh + g) * d; };
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hq = 0; hq < h; ++hq) {
      const int64_t g = kv_head_of(hq, h, kvh);
      for (int64_t i = pad[bi]; i < s; ++i) {
        std::vector<double> logit(static_cast<size_t>(s), 0.0);
        double mx = -1e300, z = 0;
        for (int64_t j = pad[bi]; j <= i; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < d; ++t) {
            dot += double(q.data<float>()[qat(bi, i, hq) + t]) * k.data<float>()[kat(bi, j, g) + t];
          }
          logit[j] = dot * scale;
          mx = std::max(mx, logit[j]);
        }
        for (int64_t j = pad[bi]; j <= i; ++j) z += std::exp(logit[j] - mx);
        for (int64_t j = pad[bi]; j <= i; ++j) {
          const double p = std::exp(logit[j] - mx) / z;
          w.colsum[(bi * kvh + g) * s + j] += p;
          for (int64_t t = 0; t < d; ++t) {
            w.out[qat(bi, i, hq) + t] += p * v.data<float>()[kat(bi, j, g) + t];
          }
        }
      }
    }
  }
  return w;
}

// k/v with each KV head repeated for every query head that reads it: [b, s, h, d].
Tensor repeat_kv(const Tensor& kv, int64_t h) {
  const int64_t b = kv.dim(0), s = kv.dim(1), kvh = kv.dim(2), d = kv.dim(3);
  Tensor out = Tensor::empty({b, s, h, d}, DType::F32);
  for (int64_t bt = 0; bt < b * s; ++bt) {
    for (int64_t hq = 0; hq < h; ++hq) {
      std::copy_n(kv.data<float>() + (bt * kvh + kv_head_of(hq, h, kvh)) * d, d,
                  out.data<float>() + (bt * h + hq) * d);
    }
  }
  return out;
}

TEST(GroupedQueryAttention, PrefillOutputAndPerKvHeadColumnSumsMatchTheFormula) {
  const int64_t b = 3, s = 13, h = 8, d = 16;
  const std::vector<int32_t> pad = {0, 4, 12};
  const float scale = 0.25f;
  for (int64_t kvh : {8, 4, 2, 1}) {
    const Tensor q = random_f32({b, s, h, d}, 20), k = random_f32({b, s, kvh, d}, 21);
    const Tensor v = random_f32({b, s, kvh, d}, 22);
    Tensor out = Tensor::zeros({b, s, h, d}, DType::F32);
    Tensor colsum = Tensor::zeros({b, kvh, s}, DType::F32);
    ops::attention_prefill(q, k, v, pad, scale, out, &colsum, ops::ComputeType::F32);
    const PrefillWant want = naive_prefill(q, k, v, pad, scale);
    EXPECT_LE(max_rel_error(out, want.out), 1e-5) << "kv heads " << kvh;
    EXPECT_LE(max_rel_error(colsum, want.colsum), 1e-5) << "kv heads " << kvh;
    // Every real query row spreads probability 1 over its keys: per KV head and sequence the
    // column sums add up to (query heads per KV head) * (real rows).
    for (int64_t bi = 0; bi < b; ++bi) {
      double total = 0;
      for (int64_t j = 0; j < s; ++j) total += colsum.data<float>()[(bi * kvh + 0) * s + j];
      EXPECT_NEAR(total, double(h / kvh) * (s - pad[bi]), 1e-4);
    }
  }
}

// Prompts longer than one block of queries: blocks that start mid-prompt, pads that end inside a
// block, a last block of one row, and a sequence that is all padding but its last position.
TEST(GroupedQueryAttention, PrefillAcrossQueryBlocksMatchesTheFormula) {
  const int64_t b = 3, s = 150, h = 4, d = 32;
  const std::vector<int32_t> pad = {0, 21, 149};
  for (int64_t kvh : {4, 2}) {
    const Tensor q = random_f32({b, s, h, d}, 40), k = random_f32({b, s, kvh, d}, 41);
    const Tensor v = random_f32({b, s, kvh, d}, 42);
    Tensor out = Tensor::zeros({b, s, h, d}, DType::F32);
    Tensor colsum = Tensor::zeros({b, kvh, s}, DType::F32);
    ops::attention_prefill(q, k, v, pad, 0.2f, out, &colsum, ops::ComputeType::F32);
    const PrefillWant want = naive_prefill(q, k, v, pad, 0.2f);
    EXPECT_LE(max_rel_error(out, want.out), 1e-5) << "kv heads " << kvh;
    EXPECT_LE(max_rel_error(colsum, want.colsum), 1e-5) << "kv heads " << kvh;
  }
}

TEST(GroupedQueryAttention, PrefillEqualsMultiHeadAttentionOverRepeatedKv) {
  const int64_t b = 2, s = 11, h = 6, kvh = 2, d = 8;
  const std::vector<int32_t> pad = {3, 0};
  const Tensor q = random_f32({b, s, h, d}, 23), k = random_f32({b, s, kvh, d}, 24);
  const Tensor v = random_f32({b, s, kvh, d}, 25);
  Tensor out = Tensor::zeros({b, s, h, d}, DType::F32),
         col = Tensor::zeros({b, kvh, s}, DType::F32);
  ops::attention_prefill(q, k, v, pad, 0.3f, out, &col, ops::ComputeType::F32);
  Tensor mha_out = Tensor::zeros({b, s, h, d}, DType::F32),
         mha_col = Tensor::zeros({b, h, s}, DType::F32);
  ops::attention_prefill(q, repeat_kv(k, h), repeat_kv(v, h), pad, 0.3f, mha_out, &mha_col,
                         ops::ComputeType::F32);
  for (int64_t i = 0; i < out.numel(); ++i) {
    ASSERT_EQ(out.data<float>()[i], mha_out.data<float>()[i]) << i;  // the same arithmetic
  }
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t g = 0; g < kvh; ++g) {
      for (int64_t j = 0; j < s; ++j) {
        double want = 0;
        for (int64_t m = 0; m < h / kvh; ++m) {
          want += mha_col.data<float>()[(bi * h + g * (h / kvh) + m) * s + j];
        }
        EXPECT_NEAR(col.data<float>()[(bi * kvh + g) * s + j], want, 1e-5);
      }
    }
  }
}

TEST(GroupedQueryAttention, PrefillNamesMismatchedHeads) {
  const Tensor q = random_f32({1, 4, 6, 8}, 26), k = random_f32({1, 4, 4, 8}, 27);
  Tensor out = Tensor::zeros(q.shape(), DType::F32);
  try {
    ops::attention_prefill(q, k, k, {0}, 1.0f, out, nullptr, ops::ComputeType::F32);
    FAIL() << "6 query heads over 4 KV heads was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("6 query heads are not a multiple of 4 KV heads"),
              std::string::npos)
        << e.what();
  }
  const Tensor k2 = random_f32({1, 4, 2, 8}, 28);
  Tensor per_query_head = Tensor::zeros({1, 6, 4}, DType::F32);  // must be [1, 2, 4]
  EXPECT_THROW(
      ops::attention_prefill(q, k2, k2, {0}, 1.0f, out, &per_query_head, ops::ComputeType::F32),
      InternalError);
  const Tensor k_short = random_f32({1, 3, 2, 8}, 29);
  EXPECT_THROW(
      ops::attention_prefill(q, k_short, k_short, {0}, 1.0f, out, nullptr, ops::ComputeType::F32),
      InternalError);
}

struct DecodeCase {
  int64_t b = 2, h = 8, kvh = 2, cap = 20, d = 16;
  Tensor q, k_new, v_new, k_cache, v_cache, slot_pos;
};

// Slots with a few empty ones (NaN contents that must not matter), one KV head nearly empty.
DecodeCase decode_case(int64_t kvh, DType cache_dtype, int64_t cap = 20, int64_t d = 16) {
  DecodeCase c;
  c.kvh = kvh;
  c.cap = cap;
  c.d = d;
  c.q = random_f32({c.b, c.h, c.d}, 30);
  c.k_new = random_f32({c.b, kvh, c.d}, 31);
  c.v_new = random_f32({c.b, kvh, c.d}, 32);
  Tensor kf = random_f32({c.b, kvh, c.cap, c.d}, 33), vf = random_f32({c.b, kvh, c.cap, c.d}, 34);
  std::vector<int32_t> pos(static_cast<size_t>(c.b * kvh * c.cap));
  for (size_t i = 0; i < pos.size(); ++i) {
    const bool empty = i % 7 == 3 || (i / c.cap == 1 && i % c.cap >= 4);
    pos[i] = empty ? -1 : static_cast<int32_t>(i % c.cap * 3);
    if (empty) {
      for (int64_t t = 0; t < c.d; ++t) {
        kf.data<float>()[i * c.d + t] = std::numeric_limits<float>::quiet_NaN();
        vf.data<float>()[i * c.d + t] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  c.k_cache = cache_dtype == DType::F32 ? kf : to_dtype(kf, cache_dtype);
  c.v_cache = cache_dtype == DType::F32 ? vf : to_dtype(vf, cache_dtype);
  c.slot_pos = ints({c.b, kvh, c.cap}, pos);
  return c;
}

// Head sizes 64 and 128 take the AVX-512 kernel where the CPU has it (16 slots at a time: caps
// below, at and between multiples of 16), 16 the portable loops.
TEST(GroupedQueryAttention, DecodeOutputAndPerKvHeadProbabilitiesMatchTheFormula) {
  struct Size {
    int64_t cap, d;
  };
  for (const Size size : {Size{20, 16}, Size{37, 64}, Size{16, 64}, Size{5, 128}, Size{33, 128}})
    for (DType dt : {DType::F32, DType::BF16}) {
      for (int64_t kvh : {8, 2, 1}) {
        const DecodeCase c = decode_case(kvh, dt, size.cap, size.d);
        const Tensor kc = to_dtype(c.k_cache, DType::F32), vc = to_dtype(c.v_cache, DType::F32);
        const double scale = 0.2;
        std::vector<double> want_out(static_cast<size_t>(c.b * c.h * c.d), 0.0);
        std::vector<double> want_probs(static_cast<size_t>(c.b * kvh * c.cap), 0.0);
        std::vector<double> want_new(static_cast<size_t>(c.b * kvh), 0.0);
        for (int64_t bi = 0; bi < c.b; ++bi) {
          for (int64_t hq = 0; hq < c.h; ++hq) {
            const int64_t bg = bi * kvh + kv_head_of(hq, c.h, kvh);
            const float* qv = c.q.data<float>() + (bi * c.h + hq) * c.d;
            const auto score = [&](const float* key) {
              double dot = 0;
              for (int64_t t = 0; t < c.d; ++t) dot += double(qv[t]) * key[t];
              return dot * scale;
            };
            std::vector<double> e(static_cast<size_t>(c.cap), 0.0);
            const double self_logit = score(c.k_new.data<float>() + bg * c.d);
            double mx = self_logit;
            for (int64_t j = 0; j < c.cap; ++j) {
              if (c.slot_pos.data<int32_t>()[bg * c.cap + j] >= 0) {
                mx = std::max(mx, score(kc.data<float>() + (bg * c.cap + j) * c.d));
              }
            }
            double z = std::exp(self_logit - mx);
            for (int64_t j = 0; j < c.cap; ++j) {
              if (c.slot_pos.data<int32_t>()[bg * c.cap + j] >= 0) {
                z += e[j] = std::exp(score(kc.data<float>() + (bg * c.cap + j) * c.d) - mx);
              }
            }
            const double p_self = std::exp(self_logit - mx) / z;
            want_new[bg] += p_self;
            double* o = want_out.data() + (bi * c.h + hq) * c.d;
            for (int64_t t = 0; t < c.d; ++t) o[t] = p_self * c.v_new.data<float>()[bg * c.d + t];
            for (int64_t j = 0; j < c.cap; ++j) {
              if (c.slot_pos.data<int32_t>()[bg * c.cap + j] < 0) continue;
              want_probs[bg * c.cap + j] += e[j] / z;
              for (int64_t t = 0; t < c.d; ++t) {
                o[t] += e[j] / z * vc.data<float>()[(bg * c.cap + j) * c.d + t];
              }
            }
          }
        }
        Tensor out = Tensor::zeros({c.b, c.h, c.d}, DType::F32);
        Tensor probs = Tensor::zeros({c.b, kvh, c.cap}, DType::F32);
        Tensor self = Tensor::zeros({c.b, kvh}, DType::F32);
        ops::attention_decode(c.q, c.k_cache, c.v_cache, c.slot_pos, c.k_new, c.v_new,
                              static_cast<float>(scale), out, &probs, &self);
        const std::string label = std::string(dtype_name(dt)) + ", kv heads " +
                                  std::to_string(kvh) + ", cap " + std::to_string(c.cap) + ", d " +
                                  std::to_string(c.d);
        EXPECT_LE(max_rel_error(out, want_out), 1e-5) << label;
        EXPECT_LE(max_rel_error(probs, want_probs), 1e-5) << label;
        EXPECT_LE(max_rel_error(self, want_new), 1e-5) << label;
        for (int64_t i = 0; i < probs.numel(); ++i) {
          if (c.slot_pos.data<int32_t>()[i] < 0) {
            ASSERT_EQ(probs.data<float>()[i], 0.0f) << label << " empty slot " << i;
          }
        }
      }
    }
}

TEST(GroupedQueryAttention, DecodeEqualsMultiHeadAttentionOverRepeatedSlots) {
  const DecodeCase c = decode_case(2, DType::F32);
  const int64_t group = c.h / c.kvh;
  // The same slots repeated per query head: [b, h, cap, d], [b, h, cap] and [b, h, d].
  const auto repeat_heads = [&](const Tensor& t, int64_t inner) {
    Shape shape = t.shape();
    shape[1] = c.h;
    Tensor out = Tensor::empty(shape, t.dtype());
    const size_t row = static_cast<size_t>(inner) * dtype_size(t.dtype());
    for (int64_t bi = 0; bi < c.b; ++bi) {
      for (int64_t hq = 0; hq < c.h; ++hq) {
        std::memcpy(static_cast<char*>(out.raw()) + (bi * c.h + hq) * row,
                    static_cast<const char*>(t.raw()) + (bi * c.kvh + hq / group) * row, row);
      }
    }
    return out;
  };
  Tensor out = Tensor::zeros({c.b, c.h, c.d}, DType::F32);
  Tensor probs = Tensor::zeros({c.b, c.kvh, c.cap}, DType::F32);
  Tensor self = Tensor::zeros({c.b, c.kvh}, DType::F32);
  ops::attention_decode(c.q, c.k_cache, c.v_cache, c.slot_pos, c.k_new, c.v_new, 0.2f, out, &probs,
                        &self);
  Tensor mha_out = Tensor::zeros({c.b, c.h, c.d}, DType::F32);
  Tensor mha_probs = Tensor::zeros({c.b, c.h, c.cap}, DType::F32);
  Tensor mha_self = Tensor::zeros({c.b, c.h}, DType::F32);
  ops::attention_decode(c.q, repeat_heads(c.k_cache, c.cap * c.d),
                        repeat_heads(c.v_cache, c.cap * c.d), repeat_heads(c.slot_pos, c.cap),
                        repeat_heads(c.k_new, c.d), repeat_heads(c.v_new, c.d), 0.2f, mha_out,
                        &mha_probs, &mha_self);
  for (int64_t i = 0; i < out.numel(); ++i) {
    ASSERT_EQ(out.data<float>()[i], mha_out.data<float>()[i]) << i;
  }
  // The per-KV-head sums add the query heads' probabilities in head order, in f32.
  for (int64_t bg = 0; bg < c.b * c.kvh; ++bg) {
    float self_total = 0.0f;
    for (int64_t m = 0; m < group; ++m) self_total += mha_self.data<float>()[bg * group + m];
    EXPECT_EQ(self.data<float>()[bg], self_total) << bg;
    for (int64_t j = 0; j < c.cap; ++j) {
      float total = 0.0f;
      for (int64_t m = 0; m < group; ++m) {
        total += mha_probs.data<float>()[(bg * group + m) * c.cap + j];
      }
      EXPECT_EQ(probs.data<float>()[bg * c.cap + j], total) << bg << " slot " << j;
    }
  }
}

TEST(GroupedQueryAttention, DecodeNamesMismatchedShapes) {
  const DecodeCase c = decode_case(2, DType::F32);
  Tensor out = Tensor::zeros({c.b, c.h, c.d}, DType::F32);
  Tensor per_query_head = Tensor::zeros({c.b, c.h, c.cap}, DType::F32);  // must be [b, kvh, cap]
  EXPECT_THROW(ops::attention_decode(c.q, c.k_cache, c.v_cache, c.slot_pos, c.k_new, c.v_new, 1.0f,
                                     out, &per_query_head, nullptr),
               InternalError);
  Tensor self_per_query_head = Tensor::zeros({c.b, c.h}, DType::F32);
  EXPECT_THROW(ops::attention_decode(c.q, c.k_cache, c.v_cache, c.slot_pos, c.k_new, c.v_new, 1.0f,
                                     out, nullptr, &self_per_query_head),
               InternalError);
  const Tensor q_new_shape = random_f32({c.b, c.h, c.d}, 35);  // new k with query heads
  EXPECT_THROW(ops::attention_decode(c.q, c.k_cache, c.v_cache, c.slot_pos, q_new_shape, c.v_new,
                                     1.0f, out, nullptr, nullptr),
               InternalError);
  const Tensor q3 = random_f32({c.b, 3, c.d}, 36);
  Tensor out3 = Tensor::zeros({c.b, 3, c.d}, DType::F32);
  try {
    ops::attention_decode(q3, c.k_cache, c.v_cache, c.slot_pos, c.k_new, c.v_new, 1.0f, out3,
                          nullptr, nullptr);
    FAIL() << "3 query heads over 2 KV heads was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("3 query heads are not a multiple of 2 KV heads"),
              std::string::npos)
        << e.what();
  }
}

// Each (sequence, slot) gets the mean of its heads' scores in every head; sequences stay apart.
TEST(AverageOverHeads, EveryHeadGetsTheMean) {
  Tensor t = Tensor::empty({2, 3, 2}, DType::F32);
  const float v[] = {1, 10, 2, 20, 6, 30, /* sequence 1 */ -3, 0.5f, 3, 0.5f, 0, 0.5f};
  std::copy(std::begin(v), std::end(v), t.data<float>());
  ops::average_over_heads(t);
  const float want[] = {3, 20, 3, 20, 3, 20, 0, 0.5f, 0, 0.5f, 0, 0.5f};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(t.data<float>()[i], want[i]) << i;
}

}  // namespace
}  // namespace h2oflex
