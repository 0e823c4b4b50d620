#include "experiments/generate/prepared_request.h"

#include <algorithm>

#include "models/chat_template/template_error.h"
#include "runtime/core/error.h"

namespace h2oflex::generate {

std::vector<PreparedRequest> prepare_requests(const std::vector<GenerateRequest>& requests,
                                              const BpeTokenizer& tokenizer,
                                              const chat_template::ChatTemplate* chat,
                                              const RequestDefaults& defaults,
                                              int64_t max_positions,
                                              std::vector<LineError>& errors) {
  std::vector<PreparedRequest> out;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const GenerateRequest& r = requests[i];
    PreparedRequest p;
    p.index = i;
    if (r.messages) {
      H2OFLEX_INPUT_CHECK(chat != nullptr, "input line ", r.line, " (id \"", r.id,
                          "\"): 'messages' needs the model's chat template, and the model has "
                          "none (no \"chat_template\" in tokenizer_config.json, no "
                          "chat_template.jinja)");
      std::string text;
      try {
        text = chat->render(chat_template::value_from_json(*r.messages),
                            /*add_generation_prompt=*/true);
      } catch (const chat_template::RaisedException& e) {
        errors.push_back(LineError{r.line, r.id,
                                   detail::concat("the chat template (", chat->where(),
                                                  ") rejects the messages: ", e.what())});
        continue;
      } catch (const chat_template::TemplateError& e) {
        errors.push_back(LineError{r.line, r.id,
                                   detail::concat("the chat template (", chat->where(),
                                                  ") failed on the messages: ", e.what())});
        continue;
      }
      p.prompt_ids = tokenizer.encode(text, /*add_bos=*/false, &p.dropped_bytes);
    } else if (r.prompt_ids) {
      p.prompt_ids = *r.prompt_ids;
      const auto beyond = std::find_if(p.prompt_ids.begin(), p.prompt_ids.end(), [&](int32_t id) {
        return id >= static_cast<int64_t>(tokenizer.vocab_size());
      });
      if (beyond != p.prompt_ids.end()) {
        errors.push_back(
            LineError{r.line, r.id,
                      detail::concat("prompt token ", *beyond, " is beyond the vocabulary of ",
                                     tokenizer.vocab_size(), " tokens")});
        continue;
      }
    } else {
      p.prompt_ids = tokenizer.encode(r.prompt, /*add_bos=*/true, &p.dropped_bytes);
    }
    p.max_new_tokens = r.max_new_tokens.value_or(defaults.max_new_tokens);
    p.temperature = r.temperature.value_or(defaults.temperature);
    p.top_p = p.temperature > 0 ? r.top_p.value_or(defaults.top_p) : 1.0f;
    bool known_ids = true;
    for (const auto& [id, bias] : r.logit_bias) {
      if (id >= static_cast<int64_t>(tokenizer.vocab_size())) {
        errors.push_back(
            LineError{r.line, r.id,
                      detail::concat("logit_bias names token ", id, ", beyond the vocabulary of ",
                                     tokenizer.vocab_size(), " tokens")});
        known_ids = false;
        break;
      }
    }
    if (!known_ids) continue;
    const int64_t n = static_cast<int64_t>(p.prompt_ids.size());
    if (n >= max_positions) {
      errors.push_back(
          LineError{r.line, r.id,
                    detail::concat("prompt is ", n, " tokens, longer than the model's context of ",
                                   max_positions, " positions")});
      continue;
    }
    if (n + p.max_new_tokens > max_positions) {
      errors.push_back(LineError{
          r.line, r.id,
          detail::concat("prompt (", n, " tokens) + max_new_tokens (", p.max_new_tokens,
                         ") exceeds the model's context of ", max_positions, " positions")});
      continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace h2oflex::generate
