// config.json of every family (model_type dispatch in models/model_catalog) into the engine's
// model, which also builds the weight specs and rotary tables from what was read.
#include "models/model_catalog.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(hf_config) {
  using namespace h2oflex;
  const auto file = fuzz::write_scratch("config.json", fuzz::as_text(data, size));
  try {
    (void)hf_model(file, "fuzz");
  } catch (const InputError&) {
  }
  return 0;
}
