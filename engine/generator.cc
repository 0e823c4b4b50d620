#include "engine/generator.h"

#include <algorithm>

#include "runtime/core/timer.h"
#include "engine/layer_step.h"
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

void choose_tokens(const Tensor& logits, const GenerateOptions& opt, int64_t first_row, int step,
                   std::vector<int32_t>& ids) {
  if (opt.temperature <= 0.0f) {
    ops::argmax(logits, ids);
    return;
  }
  std::vector<uint64_t> keys(static_cast<size_t>(logits.dim(0)));
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t row = static_cast<size_t>(first_row) + i;
    keys[i] = opt.row_keys.empty() ? row : opt.row_keys.at(row);
  }
  ops::sample(logits, {opt.temperature, opt.top_p, opt.seed}, keys, static_cast<uint64_t>(step),
              ids);
}

OptWeights weights_on_device(const OptWeights& w, Device device) {
  OptWeights out = w;
  auto move = [&](Tensor& t) {
    if (t.raw() != nullptr) t = ops::on_device(t, device);
  };
  for (Tensor* t : {&out.embed.tokens, &out.embed.positions, &out.embed.project_in,
                    &out.embed.project_out, &out.embed.final_ln_w, &out.embed.final_ln_b}) {
    move(*t);
  }
  for (OptLayerWeights& l : out.layers) {
    for (Tensor* t :
         {&l.attn_ln_w, &l.attn_ln_b, &l.q_w, &l.q_b, &l.k_w, &l.k_b, &l.v_w, &l.v_b, &l.o_w,
          &l.o_b, &l.ffn_ln_w, &l.ffn_ln_b, &l.fc1_w, &l.fc1_b, &l.fc2_w, &l.fc2_b}) {
      move(*t);
    }
  }
  return out;
}

GenerateOutput generate_in_ram(const OptConfig& cfg, const OptWeights& host_weights,
                               const std::vector<std::vector<int32_t>>& prompts,
                               const GenerateOptions& opt) {
  const Device dev = opt.device;
  const OptWeights w = weights_on_device(host_weights, dev);
  const PaddedBatch pb = pad_prompts(prompts, cfg.pad_id);
  const int64_t b = pb.batch, s = pb.seq, H = cfg.hidden, heads = cfg.heads;
  const int64_t d = cfg.head_dim();
  const int capacity = opt.eviction.capacity(static_cast<int>(s), opt.gen_len);
  H2OFLEX_INPUT_CHECK(s + opt.gen_len <= cfg.max_positions, "prompt (", s, ") + gen_len (",
                      opt.gen_len, ") exceeds the model's ", cfg.max_positions, " positions");
  GenerateOutput out;
  out.tokens.resize(static_cast<size_t>(b));
  std::vector<KvSlots> cache;
  for (int64_t l = 0; l < cfg.layers; ++l) {
    cache.push_back(KvSlots::allocate(b, heads, capacity, d, opt.kv_dtype, dev));
  }

  // Prefill.
  Stopwatch watch;
  Tensor hidden = ops::empty({b * s, H}, DType::F32, dev);
  opt_embed(cfg, w.embed, opt.compute, ops::on_device(pb.ids, dev),
            ops::on_device(pb.positions, dev), hidden);
  Tensor k = ops::empty({b, s, heads, d}, DType::F32, dev);
  Tensor v = ops::empty({b, s, heads, d}, DType::F32, dev);
  Tensor colsum = ops::empty({b, heads, s}, DType::F32, dev);
  const bool scores = opt.eviction.uses_attention_scores();
  for (int64_t l = 0; l < cfg.layers; ++l) {
    opt_layer_prefill(cfg, w.layers[l], opt.compute, hidden, b, s, pb.pad, k, v,
                      scores ? &colsum : nullptr);
    kv_prefill(opt.eviction, k, v, scores ? &colsum : nullptr, pb.pad, cache[l]);
  }
  if (opt.all_prompt_logits && opt.on_logits) {
    Tensor all = ops::empty({b * s, cfg.vocab}, DType::F32, dev);
    opt_logits(cfg, w.embed, opt.compute, hidden, all);
    opt.on_logits(-1, ops::on_device(all, Device::CPU));
  }
  // Its own buffer: last_positions returns scratch that the decode layers reuse.
  Tensor last = ops::empty({b, H}, DType::F32, dev);
  ops::copy(last_positions(hidden, b, s), last);
  Tensor logits = ops::empty({b, cfg.vocab}, DType::F32, dev);
  opt_logits(cfg, w.embed, opt.compute, last, logits);
  out.prefill_s = watch.elapsed();

  // Decode.
  watch.reset();
  std::vector<bool> done(static_cast<size_t>(b), false);
  std::vector<int32_t> next;
  Tensor ids = Tensor::empty({b}, DType::I32), pos = Tensor::empty({b}, DType::I32);
  for (int step = 0; step < opt.gen_len; ++step) {
    if (opt.on_logits) opt.on_logits(step, ops::on_device(logits, Device::CPU));
    choose_tokens(logits, opt, 0, step, next);
    bool all_done = true;
    for (int64_t i = 0; i < b; ++i) {
      if (!done[i]) {
        out.tokens[i].push_back(next[i]);
        if (opt.stop_at_eos && next[i] == cfg.eos_id) done[i] = true;
      }
      all_done = all_done && done[i];
    }
    if (all_done || step + 1 == opt.gen_len) break;
    const int32_t t = static_cast<int32_t>(s + step);  // padded position of the new token
    for (int64_t i = 0; i < b; ++i) {
      ids.data<int32_t>()[i] = next[i];
      pos.data<int32_t>()[i] = t - pb.pad[i];
    }
    opt_embed(cfg, w.embed, opt.compute, ops::scratch_copy(ops::Scratch::TokenIds, ids, dev),
              ops::scratch_copy(ops::Scratch::Positions, pos, dev), last);
    for (int64_t l = 0; l < cfg.layers; ++l) {
      decode_layer(cfg, w.layers[l], opt.compute, opt.eviction, t, last, cache[l]);
    }
    opt_logits(cfg, w.embed, opt.compute, last, logits);
  }
  out.decode_s = watch.elapsed();
  if (opt.capture_kept) {
    for (const KvSlots& c : cache) out.kept.push_back(kept_positions(c.pos));
  }
  return out;
}

}  // namespace h2oflex
