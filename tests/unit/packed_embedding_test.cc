// ops::embed_tokens on a table kept in its blocks (a GGUF file's token table under
// weight_format: stored): each gathered row equals that row of the table unpacked whole, for
// every packed format (the K formats from random block bytes), and a table whose rows do not
// match the output's width is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/storage_format.h"
#include "runtime/ops/ops.h"
#include "tests/unit/packed_tables.h"

namespace h2oflex {
namespace {

TEST(PackedEmbedding, GatheredRowsEqualTheUnpackedTable) {
  const int64_t vocab = 12, dim = 512;
  const std::vector<int32_t> ids = {3, 0, 11, 3, 7};
  for (const PackedFormatRow& row : packed_format_rows()) {
    SCOPED_TRACE(std::string(row.name));
    const Tensor table = testing_support::random_packed(row.id, vocab, dim, 7);
    Tensor whole = Tensor::empty({vocab, dim}, DType::F32);
    ops::unpack(table, whole);
    Tensor id_tensor = Tensor::empty({static_cast<int64_t>(ids.size())}, DType::I32);
    for (size_t i = 0; i < ids.size(); ++i) id_tensor.data<int32_t>()[i] = ids[i];
    Tensor out = Tensor::empty({static_cast<int64_t>(ids.size()), dim}, DType::F32);
    ops::embed_tokens(id_tensor, table, out);
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int64_t j = 0; j < dim; ++j) {
        ASSERT_EQ(out.data<float>()[i * dim + j], whole.data<float>()[ids[i] * dim + j])
            << "row " << i << " value " << j;
      }
    }
    // Rows of another width than the table's blocks: refused, nothing read past a row.
    Tensor narrow = Tensor::empty({static_cast<int64_t>(ids.size()), dim / 2}, DType::F32);
    EXPECT_THROW(ops::embed_tokens(id_tensor, table, narrow), InternalError);
  }
}

}  // namespace
}  // namespace h2oflex
