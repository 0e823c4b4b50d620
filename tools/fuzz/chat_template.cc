// A chat template: parsed, and when it parses, rendered for a few conversations. Refusals and
// syntax errors are InputError; a failure while rendering is TemplateError or the template's
// own raise_exception() (RaisedException). Anything else is a finding.
#include "models/chat_template/chat_template.h"
#include "models/chat_template/template_error.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(chat_template) {
  using namespace h2oflex;
  using chat_template::Value;
  static const char* const kConversations[] = {
      R"([{"role": "user", "content": "Hi"}])",
      R"([{"role": "system", "content": " s "}, {"role": "user", "content": "é\n{{"},
          {"role": "assistant", "content": ""}, {"role": "user", "content": "q", "n": 1.5}])",
  };
  try {
    const chat_template::ChatTemplate t(
        std::string(fuzz::as_text(data, size)), "fuzz",
        {{"bos_token", Value::string("<s>")}, {"eos_token", Value::string("</s>")}});
    for (const char* c : kConversations) {
      for (bool prompt : {true, false}) {
        try {
          (void)t.render(chat_template::value_from_json(nlohmann::ordered_json::parse(c)), prompt);
        } catch (const chat_template::TemplateError&) {
        } catch (const chat_template::RaisedException&) {
        }
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}
