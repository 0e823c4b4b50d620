// One line of a generate job's input. parse_request_line never throws: every problem must come
// back as a LineError.
#include "experiments/generate/request_line.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(request_line) {
  using namespace h2oflex;
  const generate::ParsedLine p = generate::parse_request_line(fuzz::as_text(data, size), 1);
  if (p.request.has_value() == p.error.has_value()) __builtin_trap();  // exactly one of them
  return 0;
}
