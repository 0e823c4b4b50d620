// LocalTransport: the single-process job's transport, refusing the transfers it cannot make.
#include <gtest/gtest.h>

#include <string>

#include "runtime/dist/transport.h"

namespace h2oflex {
namespace {

TEST(LocalTransport, IsOneRankWhoseCollectivesAreNoOps) {
  LocalTransport local;
  Transport& t = local;
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.size(), 1);
  t.barrier();
  char data[4] = {'a', 'b', 'c', 'd'};
  t.broadcast(data, sizeof data, 0);
  EXPECT_EQ(std::string(data, 4), "abcd");
}

TEST(LocalTransport, RefusesTransfersNamingThem) {
  LocalTransport t;
  char data[16] = {};
  try {
    t.send(data, sizeof data, 0, 3);
    ADD_FAILURE() << "send to self accepted";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("send of 16 bytes to rank 0"), std::string::npos)
        << e.what();
  }
  try {
    t.recv(data, sizeof data, 0, 3);
    ADD_FAILURE() << "recv from self accepted";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("single-process"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.broadcast(data, sizeof data, 1), TransportError);
}

TEST(LocalTransportDeathTest, AbortAllPrintsAndExitsNonzero) {
  LocalTransport t;
  EXPECT_EXIT(t.abort_all("the model file is gone"), ::testing::ExitedWithCode(1),
              "h2oflex: the model file is gone");
}

}  // namespace
}  // namespace h2oflex
