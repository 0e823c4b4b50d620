// MpiTransport under mpiexec (dist_mpi_transport_np2, _np3): every rank runs every test, in the
// same order, so a test's transfers and collectives meet their peers'. A rank whose test fails
// ends the job (FailureEndsJob below) rather than run on out of step with the others, which
// would leave them waiting forever.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dist/mpi_transport.h"

namespace h2oflex {
namespace {

const MpiSession* g_session = nullptr;

// Bytes that depend on who sent them, the size and the position: a misplaced, truncated or
// stale message does not pass for the right one.
std::vector<unsigned char> pattern(int from, size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>(i * 31 + bytes * 7 + from);
  return v;
}

// Each rank's message goes to the next rank and the last rank's back to rank 0, the way hidden
// states go forward through the stages and token ids go back. Rank 0 sends first and every
// other rank receives first, so the chain never waits on MPI's buffering.
void ring(MpiTransport& t, size_t bytes, int tag) {
  const int next = (t.rank() + 1) % t.size();
  const int prev = (t.rank() + t.size() - 1) % t.size();
  const auto mine = pattern(t.rank(), bytes);
  std::vector<unsigned char> got(bytes, 0xEE);
  if (t.rank() == 0) t.send(mine.data(), bytes, next, tag);
  t.recv(got.data(), bytes, prev, tag);
  if (t.rank() != 0) t.send(mine.data(), bytes, next, tag);
  EXPECT_EQ(got, pattern(prev, bytes)) << bytes << " bytes from rank " << prev;
}

TEST(MpiTransport, RingCarriesMessagesOfEverySize) {
  MpiTransport t(*g_session);
  ASSERT_GE(t.size(), 2);
  int tag = 0;
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{65537}, size_t{3} << 20}) {
    ring(t, bytes, tag++);
  }
}

TEST(MpiTransport, LargeTransfersGoAsSeveralMessages) {
  const size_t limit = 1000;
  MpiTransport t(*g_session, limit);
  for (size_t bytes : {size_t{0}, size_t{999}, size_t{1000}, size_t{1001}, size_t{12345}}) {
    const size_t before = t.data_messages_sent();
    ring(t, bytes, 9);
    EXPECT_EQ(t.data_messages_sent() - before, (bytes + limit - 1) / limit) << bytes << " bytes";
  }
}

// Every rank sends to the next before it receives from the previous: with blocking sends of
// messages too large for MPI to buffer that is a cycle of ranks each waiting on the next; posted
// ones go in the background. The posted copy is taken at once: the caller's buffer is reused
// right after post. Several posts to one peer arrive in order, split into messages as send's.
TEST(MpiTransport, PostedMessagesDoNotWaitForTheReceiver) {
  const size_t limit = 1 << 20;
  MpiTransport t(*g_session, limit);
  const int next = (t.rank() + 1) % t.size();
  const int prev = (t.rank() + t.size() - 1) % t.size();
  const std::vector<size_t> sizes = {0, 5, size_t{3} << 20, 4096};
  for (size_t bytes : sizes) {
    auto mine = pattern(t.rank(), bytes);
    t.post(mine.data(), bytes, next, 4);
    std::fill(mine.begin(), mine.end(), 0);  // the post holds its own copy
  }
  for (size_t bytes : sizes) {
    std::vector<unsigned char> got(bytes, 0xEE);
    t.recv(got.data(), bytes, prev, 4);
    EXPECT_EQ(got, pattern(prev, bytes)) << bytes << " bytes posted by rank " << prev;
  }
  t.wait_posted();
  t.barrier();
}

// Text whose length the receiver does not know: to the next rank, and from every root to all.
TEST(MpiTransport, TextsCarryTheirLength) {
  MpiTransport t(*g_session, 1000);  // several data messages for the long text
  const int next = (t.rank() + 1) % t.size();
  const int prev = (t.rank() + t.size() - 1) % t.size();
  auto text_of = [](int r) { return std::string(static_cast<size_t>(r) * 1500 + 3, 'a' + r); };
  if (t.rank() == 0) send_text(t, text_of(0), next, 6);
  const std::string got = recv_text(t, prev, 6);
  if (t.rank() != 0) send_text(t, text_of(t.rank()), next, 6);
  EXPECT_EQ(got, text_of(prev));
  for (int root = 0; root < t.size(); ++root) {
    EXPECT_EQ(broadcast_text(t, t.rank() == root ? text_of(root) : "ignored", root), text_of(root))
        << "root " << root;
  }
}

TEST(MpiTransport, ReceiverNeedNotKnowTheSendersLimit) {
  // Rank 0's transport splits at 100 bytes, every other rank's at the default (INT_MAX).
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MpiTransport t(*g_session, world_rank == 0 ? 100 : MpiTransport::kMaxMessageBytes);
  const size_t bytes = 1234;
  if (t.rank() == 0) {
    const auto mine = pattern(0, bytes);
    t.send(mine.data(), bytes, 1, 4);
    EXPECT_EQ(t.data_messages_sent(), 13u);
  } else if (t.rank() == 1) {
    std::vector<unsigned char> got(bytes);
    t.recv(got.data(), bytes, 0, 4);
    EXPECT_EQ(got, pattern(0, bytes));
  }
  t.barrier();
}

TEST(MpiTransport, BroadcastReachesEveryRankFromAnyRoot) {
  MpiTransport t(*g_session, 1000);
  for (int root : {0, t.size() - 1}) {
    for (size_t bytes : {size_t{0}, size_t{5}, size_t{3000}}) {
      std::vector<unsigned char> data =
          t.rank() == root ? pattern(root, bytes) : std::vector<unsigned char>(bytes, 0xEE);
      t.broadcast(data.data(), bytes, root);
      EXPECT_EQ(data, pattern(root, bytes)) << bytes << " bytes from root " << root;
    }
  }
  t.barrier();
}

TEST(MpiTransport, SizeMismatchIsNamedAndTheMessageDrained) {
  // Rank 0 sends 2500 bytes (three messages) where rank 1 expects 1000; the next transfer
  // between the two must still arrive intact.
  MpiTransport t(*g_session, 1000);
  if (t.rank() == 0) {
    const auto big = pattern(0, 2500);
    t.send(big.data(), big.size(), 1, 2);
    const auto next = pattern(0, 64);
    t.send(next.data(), next.size(), 1, 2);
  } else if (t.rank() == 1) {
    std::vector<unsigned char> got(1000);
    try {
      t.recv(got.data(), got.size(), 0, 2);
      ADD_FAILURE() << "a 2500-byte message was received as 1000 bytes";
    } catch (const TransportError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("expected 1000 bytes, got 2500"), std::string::npos) << what;
      EXPECT_NE(what.find("from rank 0"), std::string::npos) << what;
    }
    std::vector<unsigned char> next(64);
    t.recv(next.data(), next.size(), 0, 2);
    EXPECT_EQ(next, pattern(0, 64));
  }
  t.barrier();
}

TEST(MpiTransport, RefusesBadPeersAndTags) {
  MpiTransport t(*g_session);
  char byte = 0;
  EXPECT_THROW(t.send(&byte, 1, t.rank(), 0), TransportError);                    // to itself
  EXPECT_THROW(t.send(&byte, 1, t.size(), 0), TransportError);                    // no such rank
  EXPECT_THROW(t.recv(&byte, 1, -1, 0), TransportError);                          // no such rank
  EXPECT_THROW(t.send(&byte, 1, (t.rank() + 1) % t.size(), -1), TransportError);  // bad tag
  EXPECT_THROW(t.broadcast(&byte, 1, t.size()), TransportError);                  // no such root
  EXPECT_THROW(MpiTransport(*g_session, 0), TransportError);
  try {
    t.send(&byte, 1, t.size(), 0);
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("peer rank " + std::to_string(t.size())),
              std::string::npos)
        << e.what();
  }
}

// Ends the job when this rank fails a test, naming it: the other ranks may be waiting on this
// one in the test's transfers, or would meet it out of step in the next test.
class FailureEndsJob : public ::testing::EmptyTestEventListener {
 public:
  explicit FailureEndsJob(MpiTransport& t) : t_(t) {}
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      t_.abort_all(std::string("test ") + info.test_suite_name() + "." + info.name() + " failed");
    }
  }

 private:
  MpiTransport& t_;
};

}  // namespace
}  // namespace h2oflex

int main(int argc, char** argv) {
  h2oflex::MpiSession session(&argc, &argv);
  h2oflex::g_session = &session;
  testing::InitGoogleTest(&argc, argv);
  h2oflex::MpiTransport world(session);
  // Every rank prints its failures; only rank 0 prints the list of passing tests.
  if (world.rank() != 0) GTEST_FLAG_SET(brief, true);
  testing::UnitTest::GetInstance()->listeners().Append(new h2oflex::FailureEndsJob(world));
  return RUN_ALL_TESTS();
}
