#include "experiments/sha256.h"

#include <openssl/evp.h>

#include <cstdio>

#include "runtime/core/error.h"

namespace h2oflex {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  H2OFLEX_CHECK(EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) == 1,
                "EVP_Digest(sha256) failed");
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

}  // namespace h2oflex
