#include <gtest/gtest.h>

#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

TEST(ByteSize, ParsesUnits) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("4GiB"), 4ull * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("512MiB"), 512ull * 1024 * 1024);
  EXPECT_EQ(parse_byte_size("1GB"), 1000000000ull);
  EXPECT_EQ(parse_byte_size("1.5 GiB"), 1610612736ull);
  EXPECT_EQ(parse_byte_size("64k"), 65536u);
  EXPECT_EQ(parse_byte_size("10 kb"), 10000u);
  EXPECT_EQ(parse_byte_size("7B"), 7u);
  EXPECT_EQ(parse_byte_size("2TiB"), 2ull << 40);
}

TEST(ByteSize, RejectsBadTextNamingIt) {
  for (const char* bad : {"", "GiB", "-1", "12 parsecs", "1.2.3", "99999999999999999999"}) {
    try {
      parse_byte_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(parse_byte_size("20000000TiB"), InputError);
}

}  // namespace
}  // namespace h2oflex
