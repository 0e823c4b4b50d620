// The one rule for a workload's length, applied by `run`, `policy: auto` and `plan` alike.
#pragma once

#include <cstdint>
#include <string>

#include "models/decoder_model.h"

namespace h2oflex {

// A prompt of `prompt_len` tokens and `gen_len` generated ones must fit the model's positions.
// InputError "WHERE: PROMPT_NAME (p) + GEN_NAME (g) exceeds MODEL's N positions" otherwise.
void check_fits_positions(const DecoderModel& model, int64_t prompt_len, int64_t gen_len,
                          const std::string& where, const std::string& prompt_name = "prompt_len",
                          const std::string& gen_name = "gen_len");

}  // namespace h2oflex
