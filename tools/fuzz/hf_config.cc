// The Hugging Face config.json reader and its conversion to the engine's OPT config.
#include "models/loaders/hf_config.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(hf_config) {
  using namespace h2oflex;
  const auto file = fuzz::write_scratch("config.json", fuzz::as_text(data, size));
  try {
    const HfOptConfig hf = read_hf_opt_config(file);
    (void)to_opt_config(hf, "fuzz");
  } catch (const InputError&) {
  }
  return 0;
}
