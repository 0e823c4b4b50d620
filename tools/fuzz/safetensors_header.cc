// The safetensors header parser: length prefix, JSON header, every entry's checks; then every
// small tensor it accepts is read, so accepted offsets must really lie inside the file.
#include "models/loaders/safetensors.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(safetensors_header) {
  using namespace h2oflex;
  const auto file = fuzz::write_scratch("model.safetensors", fuzz::as_text(data, size));
  try {
    const SafetensorsReader r = SafetensorsReader::open(file);
    for (const TensorInfo& t : r.tensors()) {
      if (t.nbytes > (1u << 20)) continue;
      (void)r.read(t, DType::F32);
    }
  } catch (const InputError&) {
  } catch (const IoError&) {
  }
  return 0;
}
