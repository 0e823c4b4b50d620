// The engine is typed on DecoderModel alone: a second family, defined only here, runs through the
// in-RAM generator and the pipeline. The toy differs from OPT where an engine could silently
// assume OPT: no positional encoding at all, a query width (heads * head_dim) unlike the hidden
// width, no biases, an untied head, and one LayerNorm per layer. Its prompt logits are checked
// against a plain-loop forward pass written here, and the pipeline against the in-RAM path over
// random placements with H2O.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/generator.h"
#include "models/loaders/dummy_weights.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

constexpr int64_t kHidden = 24, kHeads = 2, kHeadDim = 8, kFfn = 32, kVocab = 300, kLayers = 2;
constexpr int64_t kQ = kHeads * kHeadDim;

struct ToyLayer final : UnitWeights {
  Tensor wq, wk, wv, wo, ln_w, ln_b, w1, w2;
};
struct ToyEnds final : UnitWeights {
  Tensor table;  // embedding: the token table; head: the output matrix
};

class ToyModel final : public DecoderModel {
 public:
  ToyModel() {
    add("embed", {kVocab, kHidden}, -1);
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "layer" + std::to_string(l) + ".";
      add(p + "wq", {kQ, kHidden}, l);
      add(p + "wk", {kQ, kHidden}, l);
      add(p + "wv", {kQ, kHidden}, l);
      add(p + "wo", {kHidden, kQ}, l);
      add(p + "layer_norm.weight", {kHidden}, l);
      add(p + "layer_norm.bias", {kHidden}, l);
      add(p + "w1", {kFfn, kHidden}, l);
      add(p + "w2", {kHidden, kFfn}, l);
    }
    add("head", {kVocab, kHidden}, -1);
    units_ = group_units(specs_, kLayers, [](const WeightSpec& s) {
      return s.name == "embed" ? UnitSide::Embedding : UnitSide::Head;
    });
  }
  const std::string& name() const override { return name_; }
  int64_t layers() const override { return kLayers; }
  int64_t hidden() const override { return kHidden; }
  int64_t vocab() const override { return kVocab; }
  int64_t max_positions() const override { return 64; }
  SpecialTokens special_tokens() const override { return {1, 2, 0}; }
  KvGeometry kv_geometry() const override {
    return {kHeads, kHeads, kHeadDim, 1.0f / std::sqrt(static_cast<float>(kHeadDim))};
  }
  const std::vector<WeightSpec>& weight_specs() const override { return specs_; }
  const std::vector<std::vector<size_t>>& unit_tensors() const override { return units_; }
  std::unique_ptr<UnitWeights> bind(int unit, const std::vector<Tensor>& t) const override {
    if (unit == 0 || unit == head_unit()) {
      auto e = std::make_unique<ToyEnds>();
      e->table = t.at(0);
      return e;
    }
    auto l = std::make_unique<ToyLayer>();
    l->wq = t.at(0), l->wk = t.at(1), l->wv = t.at(2), l->wo = t.at(3);
    l->ln_w = t.at(4), l->ln_b = t.at(5), l->w1 = t.at(6), l->w2 = t.at(7);
    return l;
  }
  void embed(const UnitWeights& u, ops::ComputeType, const Tensor& ids, const Tensor&,
             Tensor& hidden) const override {
    ops::embed_tokens(ids, static_cast<const ToyEnds&>(u).table, hidden);
  }
  void attention_input(const UnitWeights& u, ops::ComputeType ct, const Tensor& hidden,
                       const Tensor&, Tensor& q, Tensor& k, Tensor& v) const override {
    const auto& w = static_cast<const ToyLayer&>(u);
    ops::linear(hidden, w.wq, nullptr, q, ct);
    ops::linear(hidden, w.wk, nullptr, k, ct);
    ops::linear(hidden, w.wv, nullptr, v, ct);
  }
  void layer_finish(const UnitWeights& u, ops::ComputeType ct, Tensor& hidden,
                    const Tensor& attn) const override {
    const auto& w = static_cast<const ToyLayer&>(u);
    const int64_t rows = hidden.dim(0);
    const Device dev = hidden.device();
    Tensor proj = ops::scratch(ops::Scratch::Projection, {rows, kHidden}, DType::F32, dev);
    ops::linear(attn, w.wo, nullptr, proj, ct);
    ops::add_inplace(hidden, proj);
    Tensor x = ops::scratch(ops::Scratch::Normed, {rows, kHidden}, DType::F32, dev);
    ops::layer_norm(hidden, w.ln_w, w.ln_b, 1e-5f, x);
    Tensor mid = ops::scratch(ops::Scratch::Ffn, {rows, kFfn}, DType::F32, dev);
    ops::linear(x, w.w1, nullptr, mid, ct, /*relu=*/true);
    ops::linear(mid, w.w2, nullptr, proj, ct);
    ops::add_inplace(hidden, proj);
  }
  void logits(const UnitWeights& u, ops::ComputeType ct, const Tensor& hidden,
              Tensor& logits) const override {
    ops::linear(hidden, static_cast<const ToyEnds&>(u).table, nullptr, logits, ct);
  }
  int64_t scratch_elems_per_row() const override { return 3 * kHidden + kQ + kFfn; }

 private:
  void add(std::string n, Shape shape, int layer) {
    const WeightRole role = shape.size() == 2 ? WeightRole::Matrix : WeightRole::Vector;
    specs_.push_back({std::move(n), std::move(shape), role, layer});
  }
  std::string name_ = "toy";
  std::vector<WeightSpec> specs_;
  std::vector<std::vector<size_t>> units_;
};

// The toy's forward pass over one unpadded prompt, written with loops: logits of every position.
std::vector<float> reference_logits(const ToyModel& m, const ModelWeights& w,
                                    const std::vector<int32_t>& ids) {
  const int64_t s = static_cast<int64_t>(ids.size());
  auto W = [&](const std::string& n) { return w.named(m, n).data<float>(); };
  // y[r, n] = sum_k x[r, k] * mat[n, k]
  auto matmul = [](const std::vector<float>& x, const float* mat, int64_t rows, int64_t k,
                   int64_t n) {
    std::vector<float> y(static_cast<size_t>(rows * n), 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t i = 0; i < k; ++i) acc += double(x[r * k + i]) * mat[j * k + i];
        y[r * n + j] = static_cast<float>(acc);
      }
    return y;
  };
  std::vector<float> h(static_cast<size_t>(s * kHidden));
  for (int64_t t = 0; t < s; ++t)
    for (int64_t i = 0; i < kHidden; ++i) h[t * kHidden + i] = W("embed")[ids[t] * kHidden + i];
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    const auto q = matmul(h, W(p + "wq"), s, kHidden, kQ);
    const auto k = matmul(h, W(p + "wk"), s, kHidden, kQ);
    const auto v = matmul(h, W(p + "wv"), s, kHidden, kQ);
    std::vector<float> attn(static_cast<size_t>(s * kQ), 0.0f);
    const double scale = 1.0 / std::sqrt(double(kHeadDim));
    for (int64_t hd = 0; hd < kHeads; ++hd)
      for (int64_t t = 0; t < s; ++t) {
        std::vector<double> e(static_cast<size_t>(t + 1));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < kHeadDim; ++d)
            dot += double(q[t * kQ + hd * kHeadDim + d]) * k[j * kQ + hd * kHeadDim + d];
          e[j] = dot * scale;
          mx = std::max(mx, e[j]);
        }
        for (auto& x : e) sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < kHeadDim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j <= t; ++j) acc += e[j] / sum * v[j * kQ + hd * kHeadDim + d];
          attn[t * kQ + hd * kHeadDim + d] = static_cast<float>(acc);
        }
      }
    const auto o = matmul(attn, W(p + "wo"), s, kQ, kHidden);
    for (size_t i = 0; i < h.size(); ++i) h[i] += o[i];
    std::vector<float> x(h.size());
    for (int64_t t = 0; t < s; ++t) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < kHidden; ++i) mean += h[t * kHidden + i];
      mean /= kHidden;
      for (int64_t i = 0; i < kHidden; ++i) var += std::pow(h[t * kHidden + i] - mean, 2);
      var /= kHidden;
      for (int64_t i = 0; i < kHidden; ++i)
        x[t * kHidden + i] = static_cast<float>(
            (h[t * kHidden + i] - mean) / std::sqrt(var + 1e-5) * W(p + "layer_norm.weight")[i] +
            W(p + "layer_norm.bias")[i]);
    }
    auto mid = matmul(x, W(p + "w1"), s, kHidden, kFfn);
    for (auto& z : mid) z = std::max(z, 0.0f);
    const auto out = matmul(mid, W(p + "w2"), s, kFfn, kHidden);
    for (size_t i = 0; i < h.size(); ++i) h[i] += out[i];
  }
  return matmul(h, W("head"), s, kHidden, kVocab);
}

// Dummy matrices are N(0, 0.02): too small for a signal through two layers. Scale them up so
// the logits differ between tokens and a wrong attention shows.
WeightProducer toy_weights() {
  return [](const WeightSpec& spec, DType dtype, void* dst) {
    dummy_weight_producer(9)(spec, DType::F32, dst);
    ASSERT_EQ(dtype, DType::F32);
    if (spec.role != WeightRole::Matrix) return;
    float* f = static_cast<float*>(dst);
    for (int64_t i = 0; i < shape_numel(spec.shape); ++i) f[i] *= 20.0f;
  };
}

TEST(ToyFamily, InRamPromptLogitsMatchAPlainForwardPass) {
  const ToyModel model;
  const ModelWeights w = load_model_weights(model, DType::F32, toy_weights());
  const std::vector<std::vector<int32_t>> prompts = {{5, 9, 13, 7, 21, 3}, {8, 30, 11}};
  GenerationSettings g;
  g.gen_len = 1;
  g.all_prompt_logits = true;
  std::vector<float> all;
  g.on_logits = [&](int step, const Tensor& l) {
    if (step < 0) all.assign(l.data<float>(), l.data<float>() + l.numel());
  };
  generate_in_ram(model, w, prompts, g);
  const int64_t seq = 6;
  ASSERT_EQ(all.size(), static_cast<size_t>(2 * seq * kVocab));
  double max_ref = 0, max_err = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    const auto ref = reference_logits(model, w, prompts[b]);
    const int64_t len = static_cast<int64_t>(prompts[b].size()), pad = seq - len;
    for (int64_t t = 0; t < len; ++t)
      for (int64_t v = 0; v < kVocab; ++v) {
        const float got = all[(b * seq + pad + t) * kVocab + v];
        max_err = std::max(max_err, double(std::fabs(got - ref[t * kVocab + v])));
        max_ref = std::max(max_ref, double(std::fabs(ref[t * kVocab + v])));
      }
  }
  EXPECT_GT(max_ref, 0.5);  // a real signal, not near-zero logits
  EXPECT_LT(max_err, 1e-4 * max_ref);
}

TEST(ToyFamily, PipelineMatchesInRamOverRandomPlacementsWithH2O) {
  // The invariance helper loads dummy weights for any family; the toy needs nothing else.
  testing_support::expect_invariant(std::make_shared<const ToyModel>(),
                                    policy::kv_rule("h2o", 0, 2, 3), 6, 6);
}

}  // namespace
}  // namespace h2oflex
