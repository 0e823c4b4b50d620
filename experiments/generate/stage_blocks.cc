#include "experiments/generate/stage_blocks.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/core/error.h"

namespace h2oflex::generate {

namespace {

std::optional<BlockWork> work_of(const nlohmann::json& j) {
  if (j.value("end", false)) return std::nullopt;
  BlockWork w;
  w.prompts = j.at("prompts").get<std::vector<std::vector<int32_t>>>();
  w.prompt_len = j.at("prompt_len").get<int>();
  w.gen_len = j.at("gen_len").get<int>();
  w.temperature = j.at("temperature").get<float>();
  w.top_p = j.at("top_p").get<float>();
  w.seed = j.at("seed").get<uint64_t>();
  w.row_keys = j.at("row_keys").get<std::vector<uint64_t>>();
  w.presence_penalty = j.at("presence_penalty").get<std::vector<float>>();
  w.logit_bias = j.at("logit_bias").get<std::vector<std::vector<std::pair<int32_t, float>>>>();
  return w;
}

}  // namespace

void share_block(Transport& t, const BlockWork& w) {
  H2OFLEX_CHECK(w.forced.empty() && !w.on_step_logits && !w.eviction,
                "pipeline stages run generate's blocks, not scoring work");
  const nlohmann::json j = {{"prompts", w.prompts},
                            {"prompt_len", w.prompt_len},
                            {"gen_len", w.gen_len},
                            {"temperature", w.temperature},
                            {"top_p", w.top_p},
                            {"seed", w.seed},
                            {"row_keys", w.row_keys},
                            {"logit_bias", w.logit_bias},
                            {"presence_penalty", w.presence_penalty}};
  broadcast_text(t, j.dump(), 0);
}

void share_end(Transport& t) {
  broadcast_text(t, nlohmann::json{{"end", true}}.dump(), 0);
}

int64_t follow_blocks(Transport& t, const BlockRunner& run_block) {
  int64_t blocks = 0;
  for (;;) {
    const std::optional<BlockWork> work = work_of(nlohmann::json::parse(broadcast_text(t, "", 0)));
    if (!work) return blocks;
    run_block(*work);
    ++blocks;
  }
}

}  // namespace h2oflex::generate
