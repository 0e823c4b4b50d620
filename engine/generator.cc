#include "engine/generator.h"

#include <algorithm>

#include "engine/layer_step.h"
#include "engine/model_footprint.h"
#include "runtime/core/timer.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {

PaddedBatch pad_prompts(const std::vector<std::vector<int32_t>>& prompts, int32_t pad_id) {
  PaddedBatch pb;
  pb.batch = static_cast<int64_t>(prompts.size());
  for (const auto& p : prompts) {
    H2OFLEX_INPUT_CHECK(!p.empty(), "empty prompt");
    pb.seq = std::max<int64_t>(pb.seq, static_cast<int64_t>(p.size()));
  }
  pb.ids = Tensor::empty({pb.batch * pb.seq}, DType::I32);
  pb.positions = Tensor::empty({pb.batch * pb.seq}, DType::I32);
  for (int64_t b = 0; b < pb.batch; ++b) {
    const int64_t n = static_cast<int64_t>(prompts[b].size());
    const int32_t pad = static_cast<int32_t>(pb.seq - n);
    pb.pad.push_back(pad);
    for (int64_t t = 0; t < pb.seq; ++t) {
      const bool real = t >= pad;
      pb.ids.data<int32_t>()[b * pb.seq + t] = real ? prompts[b][t - pad] : pad_id;
      pb.positions.data<int32_t>()[b * pb.seq + t] = real ? static_cast<int32_t>(t - pad) : -1;
    }
  }
  return pb;
}

void choose_tokens(const Tensor& logits, const GenerationSettings& opt, int64_t first_row, int step,
                   const std::vector<std::vector<int32_t>>& generated, std::vector<int32_t>& ids) {
  if (opt.on_step_logits) opt.on_step_logits(first_row, step, ops::on_device(logits, Device::CPU));
  if (!opt.forced.empty()) {
    ids.resize(static_cast<size_t>(logits.dim(0)));
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::vector<int32_t>& row = opt.forced.at(static_cast<size_t>(first_row) + i);
      H2OFLEX_CHECK(!row.empty(), "forced tokens: row ", first_row + static_cast<int64_t>(i),
                    " is empty");
      ids[i] = row[std::min(static_cast<size_t>(step), row.size() - 1)];
    }
    return;
  }
  // The adjusted copy on the host; the engine's logits stay as computed.
  const bool adjust = !opt.logit_bias.empty() || !opt.presence_penalty.empty();
  Tensor biased;
  if (adjust) {
    biased = ops::on_device(logits, Device::CPU).clone();
    H2OFLEX_CHECK(biased.dtype() == DType::F32 && biased.rank() == 2,
                  "logit_bias / presence_penalty: logits must be [rows, vocab] f32");
    const int64_t vocab = biased.dim(1);
    for (int64_t i = 0; i < biased.dim(0); ++i) {
      const size_t row = static_cast<size_t>(first_row + i);
      float* v = biased.data<float>() + i * vocab;
      if (!opt.logit_bias.empty()) {
        for (const auto& [id, bias] : opt.logit_bias.at(row)) {
          if (id >= 0 && id < vocab) v[id] += bias;
        }
      }
      if (!opt.presence_penalty.empty() && opt.presence_penalty.at(row) != 0.0f &&
          row < generated.size()) {
        std::vector<int32_t> seen = generated[row];
        std::sort(seen.begin(), seen.end());
        seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
        for (int32_t id : seen) {
          if (id >= 0 && id < vocab) v[id] -= opt.presence_penalty.at(row);
        }
      }
    }
  }
  const Tensor& scores = adjust ? biased : logits;
  if (opt.temperature <= 0.0f) {
    ops::argmax(scores, ids);
    return;
  }
  std::vector<uint64_t> keys(static_cast<size_t>(logits.dim(0)));
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t row = static_cast<size_t>(first_row) + i;
    keys[i] = opt.row_keys.empty() ? row : opt.row_keys.at(row);
  }
  ops::sample(scores, {opt.temperature, opt.top_p, opt.seed}, keys, static_cast<uint64_t>(step),
              ids);
}

Tensor decode_positions(const std::vector<int32_t>& pad, int32_t padded) {
  Tensor pos = Tensor::empty({static_cast<int64_t>(pad.size())}, DType::I32);
  for (size_t i = 0; i < pad.size(); ++i) pos.data<int32_t>()[i] = padded - pad[i];
  return pos;
}

policy::MemoryPlan plan_in_ram(const DecoderModel& model, const GenerationSettings& g,
                               int64_t batch, int64_t prompt_len) {
  policy::Policy all_on_device;
  all_on_device.gpu_batch_size = static_cast<int>(batch);
  policy::PlanShape shape;
  shape.prompt_len = prompt_len;
  shape.gen_len = g.gen_len;
  shape.kv_slots = g.eviction.capacity(static_cast<int>(prompt_len), g.gen_len);
  check_kv_row_format(g.cache_format, model.kv_geometry().head_dim);
  shape.kv_format = kv_storage_format(g.kv_dtype, g.cache_format);
  shape.separate_device = g.device != Device::CPU;
  shape.gpu = g.device.is_cuda();
  return policy::plan_memory(model_footprint(model, matrix_dtype_for(g.compute)), all_on_device,
                             shape);
}

GenerateOutput generate_in_ram(const DecoderModel& model, const ModelWeights& host_weights,
                               const std::vector<std::vector<int32_t>>& prompts,
                               const GenerationSettings& opt) {
  const Device dev = opt.device;
  const ModelWeights w = host_weights.on_device(dev);
  std::vector<std::unique_ptr<UnitWeights>> units;
  for (int u = 0; u < model.units(); ++u) units.push_back(model.bind(u, w.of_unit(model, u)));
  const UnitWeights& embedding = *units.front();
  const UnitWeights& head = *units.back();
  const SpecialTokens tokens = model.special_tokens();
  const KvGeometry g = model.kv_geometry();
  const PaddedBatch pb = pad_prompts(prompts, tokens.pad);
  const int64_t b = pb.batch, s = pb.seq, H = model.hidden(), kv_heads = g.kv_heads;
  const int64_t d = g.head_dim, L = model.layers(), vocab = model.vocab();
  const int capacity = opt.eviction.capacity(static_cast<int>(s), opt.gen_len);
  H2OFLEX_INPUT_CHECK(s + opt.gen_len <= model.max_positions(), "prompt (", s, ") + gen_len (",
                      opt.gen_len, ") exceeds the model's ", model.max_positions(), " positions");
  GenerateOutput out;
  out.tokens.resize(static_cast<size_t>(b));
  std::vector<KvSlots> cache;
  for (int64_t l = 0; l < L; ++l) {
    cache.push_back(
        KvSlots::allocate(b, kv_heads, capacity, d, opt.kv_dtype, dev, opt.cache_format));
  }

  // Prefill.
  Stopwatch watch;
  Tensor hidden = ops::empty({b * s, H}, DType::F32, dev);
  const Tensor prompt_pos = ops::on_device(pb.positions, dev);
  model.embed(embedding, opt.compute, ops::on_device(pb.ids, dev), prompt_pos, hidden);
  Tensor k = ops::empty({b, s, kv_heads, d}, DType::F32, dev);
  Tensor v = ops::empty({b, s, kv_heads, d}, DType::F32, dev);
  Tensor colsum = ops::empty({b, kv_heads, s}, DType::F32, dev);
  const bool scores = opt.eviction.uses_attention_scores();
  for (int64_t l = 0; l < L; ++l) {
    prefill_layer(model, *units[l + 1], opt.compute, hidden, b, s, pb.pad, prompt_pos, k, v,
                  opt.eviction, scores ? &colsum : nullptr);
    kv_prefill(opt.eviction, k, v, scores ? &colsum : nullptr, pb.pad, cache[l]);
  }
  if (opt.all_prompt_logits && opt.on_logits) {
    Tensor all = ops::empty({b * s, vocab}, DType::F32, dev);
    model.logits(head, opt.compute, hidden, all);
    opt.on_logits(-1, ops::on_device(all, Device::CPU));
  }
  // Its own buffer: last_positions returns scratch that the decode layers reuse.
  Tensor last = ops::empty({b, H}, DType::F32, dev);
  ops::copy(last_positions(hidden, b, s), last);
  Tensor logits = ops::empty({b, vocab}, DType::F32, dev);
  model.logits(head, opt.compute, last, logits);
  out.prefill_s = watch.elapsed();

  // Decode.
  watch.reset();
  std::vector<bool> done(static_cast<size_t>(b), false);
  std::vector<int32_t> next;
  Tensor ids = Tensor::empty({b}, DType::I32);
  for (int step = 0; step < opt.gen_len; ++step) {
    if (opt.on_logits) opt.on_logits(step, ops::on_device(logits, Device::CPU));
    choose_tokens(logits, opt, 0, step, out.tokens, next);
    bool all_done = true;
    for (int64_t i = 0; i < b; ++i) {
      if (!done[i]) {
        out.tokens[i].push_back(next[i]);
        if (opt.stop_at_eos && next[i] == tokens.eos) done[i] = true;
      }
      all_done = all_done && done[i];
    }
    if (all_done || step + 1 == opt.gen_len) break;
    if (opt.stop_requested && opt.stop_requested()) {
      out.stopped = true;
      break;
    }
    const int32_t t = static_cast<int32_t>(s + step);  // padded position of the new token
    for (int64_t i = 0; i < b; ++i) ids.data<int32_t>()[i] = next[i];
    const Tensor pos = ops::scratch_copy(ops::Scratch::Positions, decode_positions(pb.pad, t), dev);
    model.embed(embedding, opt.compute, ops::scratch_copy(ops::Scratch::TokenIds, ids, dev), pos,
                last);
    for (int64_t l = 0; l < L; ++l) {
      decode_layer(model, *units[l + 1], opt.compute, opt.eviction, t, pos, last, cache[l]);
    }
    model.logits(head, opt.compute, last, logits);
  }
  out.decode_s = watch.elapsed();
  if (opt.capture_kept) {
    for (const KvSlots& c : cache) out.kept.push_back(kept_positions(c.pos));
  }
  return out;
}

}  // namespace h2oflex
