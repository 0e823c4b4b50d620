// The GGUF reader: header, every metadata value type (arrays nested), tensor infos, alignment,
// data ranges; then every small tensor it accepts whose type the block table unpacks is read,
// so accepted offsets must really lie inside the file.
#include <vector>

#include "models/gguf/gguf_file.h"
#include "runtime/core/error.h"
#include "tools/fuzz/fuzz_target.h"

H2OFLEX_FUZZ_TARGET(gguf_header) {
  using namespace h2oflex;
  const auto file = fuzz::write_scratch("model.gguf", fuzz::as_text(data, size));
  try {
    const GgufFile g = GgufFile::open(file);
    for (const GgufTensorInfo& t : g.tensors()) {
      if (t.numel() > (1u << 16) || t.format->unpack == nullptr) continue;
      std::vector<float> values(t.numel());
      g.read_f32(t, values.data());
    }
  } catch (const InputError&) {
  } catch (const IoError&) {
  }
  return 0;
}
