#include "models/model_positions.h"

#include "runtime/core/error.h"

namespace h2oflex {

void check_fits_positions(const DecoderModel& model, int64_t prompt_len, int64_t gen_len,
                          const std::string& where, const std::string& prompt_name,
                          const std::string& gen_name) {
  H2OFLEX_INPUT_CHECK(prompt_len + gen_len <= model.max_positions(), where, ": ", prompt_name, " (",
                      prompt_len, ") + ", gen_name, " (", gen_len, ") exceeds ", model.name(),
                      "'s ", model.max_positions(), " positions");
}

}  // namespace h2oflex
