#include "format/ring.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "format/registration.h"

namespace xtimer {
namespace format {
namespace {

RecordSlot OpWithSeq(uint64_t seq) {
  RecordSlot s;
  memset(&s, 0, sizeof(s));
  s.op.version = kRecordVersion;
  s.op.type = static_cast<uint8_t>(RecordType::kOp);
  s.op.kind = static_cast<uint8_t>(OpKind::kCollective);
  s.op.op = static_cast<uint16_t>(Operation::kAllReduce);
  s.op.dtype = static_cast<uint8_t>(DType::kBF16);
  s.op.seq = seq;
  s.op.comm_size = 8;
  s.op.duration_ns = 1000;
  return s;
}

Identity TestIdentity() {
  Identity id;
  id.job = "job-1";
  id.host = "host-a";
  id.pod = "pod-0";
  id.rank = 3;
  id.local_rank = 1;
  id.world_size = 8;
  return id;
}

RingWriter NewWriter(uint32_t capacity) {
  std::string error;
  auto w = RingWriter::Create(capacity, TestIdentity(), &error);
  EXPECT_TRUE(w.has_value()) << error;
  return std::move(*w);
}

// The writer's fd travels over a real socketpair, as between a process and its daemon.
RingReader AttachThroughSocket(const RingWriter& writer) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::string error;
  EXPECT_TRUE(SendRing(sv[0], writer.fd(), &error)) << error;
  Hello hello;
  int fd = ReceiveRing(sv[1], &hello, &error);
  EXPECT_GE(fd, 0) << error;
  EXPECT_EQ(hello.pid, getpid());
  auto reader = RingReader::Attach(fd, &error);
  EXPECT_TRUE(reader.has_value()) << error;
  close(fd);
  close(sv[0]);
  close(sv[1]);
  return std::move(*reader);
}

TEST(RingTest, IdentityAndCapacity) {
  RingWriter w = NewWriter(100);  // rounded up to a power of two
  RingReader r = AttachThroughSocket(w);
  EXPECT_EQ(r.capacity(), 128u);
  Identity id = r.identity();
  EXPECT_EQ(id.job, "job-1");
  EXPECT_EQ(id.host, "host-a");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(r.pid(), getpid());
  w.SetRank(5, 2, 16);
  EXPECT_EQ(r.identity().rank, 5);
  EXPECT_EQ(r.identity().world_size, 16);
}

TEST(RingTest, ConcurrentWriterAndReaderLoseNothing) {
  RingWriter w = NewWriter(1024);
  RingReader r = AttachThroughSocket(w);
  constexpr uint64_t kCount = 200000;
  std::thread writer([&] {
    for (uint64_t i = 1; i <= kCount;) {
      if (w.Write(OpWithSeq(i))) {
        ++i;
      } else {
        std::this_thread::yield();  // a real writer would drop; this test wants every record
      }
    }
  });
  std::vector<RecordSlot> buf(256);
  ReadStats stats;
  uint64_t expected = 1;
  while (expected <= kCount) {
    size_t n = r.Read(buf.data(), buf.size(), &stats);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(buf[i].op.seq, expected);
      ++expected;
    }
    if (n == 0) std::this_thread::yield();
  }
  writer.join();
  EXPECT_EQ(stats.records, kCount);
  EXPECT_EQ(stats.invalid, 0u);
  EXPECT_EQ(stats.lost, 0u);
  EXPECT_EQ(r.dropped(), w.header()->dropped.load() + 0);
}

TEST(RingTest, FullRingDropsAndCounts) {
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  int accepted = 0;
  for (int i = 0; i < 100; ++i) accepted += w.Write(OpWithSeq(i)) ? 1 : 0;
  EXPECT_EQ(accepted, 64);
  EXPECT_EQ(r.dropped(), 36u);
  EXPECT_EQ(r.backlog(), 64u);
  std::vector<RecordSlot> buf(100);
  ReadStats stats;
  EXPECT_EQ(r.Read(buf.data(), buf.size(), &stats), 64u);
  EXPECT_TRUE(w.Write(OpWithSeq(1000)));
}

TEST(RingTest, InvalidRecordsAreSkipped) {
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  RecordSlot bad = OpWithSeq(1);
  bad.op.op = 9999;
  RecordSlot wrong_kind = OpWithSeq(2);
  wrong_kind.op.kind = static_cast<uint8_t>(OpKind::kMatmul);
  RecordSlot negative = OpWithSeq(3);
  negative.op.duration_ns = -5;
  w.Write(bad);
  w.Write(wrong_kind);
  w.Write(negative);
  w.Write(OpWithSeq(4));
  std::vector<RecordSlot> buf(8);
  ReadStats stats;
  ASSERT_EQ(r.Read(buf.data(), buf.size(), &stats), 1u);
  EXPECT_EQ(buf[0].op.seq, 4u);
  EXPECT_EQ(stats.invalid, 3u);
}

TEST(RingTest, ImpossiblePositionsResynchronise) {
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  w.Write(OpWithSeq(1));
  w.header()->write_pos.store(1000000);  // a hostile writer
  std::vector<RecordSlot> buf(8);
  ReadStats stats;
  EXPECT_EQ(r.Read(buf.data(), buf.size(), &stats), 0u);
  EXPECT_GT(stats.lost, 0u);
  EXPECT_EQ(w.header()->read_pos.load(), 1000000u);
  EXPECT_TRUE(w.Write(OpWithSeq(2)));
  EXPECT_EQ(r.Read(buf.data(), buf.size(), &stats), 1u);
  EXPECT_EQ(buf[0].op.seq, 2u);
}

TEST(RingTest, InflightTableRoundTrip) {
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  InflightRow rows[2] = {{0, 0, 0, 0}, {0xabc, 17, 15, 123456789}};
  w.PublishInflight(rows, 2);
  InflightRow out[kMaxInflight];
  int count = 0;
  ASSERT_TRUE(r.Inflight(out, &count));
  ASSERT_EQ(count, 2);
  EXPECT_EQ(out[1].comm_id, 0xabcu);
  EXPECT_EQ(out[1].last_issued_seq, 17u);
  EXPECT_EQ(out[1].last_completed_seq, 15u);
  EXPECT_EQ(out[1].oldest_launch_ns, 123456789);
}

TEST(RingTest, ExitStateRoundTripAndValidation) {
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  EXPECT_EQ(r.exit_state().kind, ExitKind::kNone);
  w.header()->exit_state.store(EncodeExitState(ExitKind::kExited, 3));
  EXPECT_EQ(r.exit_state().kind, ExitKind::kExited);
  EXPECT_EQ(r.exit_state().value, 3);
  w.header()->exit_state.store(EncodeExitState(ExitKind::kSignal, 11));
  EXPECT_EQ(r.exit_state().kind, ExitKind::kSignal);
  EXPECT_EQ(r.exit_state().value, 11);
  // Untrusted words outside the documented forms read as "no marker".
  for (uint64_t bad : {EncodeExitState(ExitKind::kExited, 256),
                       EncodeExitState(ExitKind::kSignal, 0),
                       EncodeExitState(ExitKind::kSignal, 65), uint64_t{3} << 32, ~uint64_t{0}}) {
    w.header()->exit_state.store(bad);
    EXPECT_EQ(r.exit_state().kind, ExitKind::kNone) << bad;
    EXPECT_EQ(r.exit_state().value, 0) << bad;
  }
}

TEST(RingTest, AttachRejectsWhatIsNotASealedRing) {
  std::string error;
  // A plain file cannot be sealed.
  FILE* f = tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(RingReader::Attach(fileno(f), &error).has_value());
  EXPECT_NE(error.find("F_GET_SEALS"), std::string::npos) << error;
  fclose(f);
  // An unsealed memfd could be shrunk under the reader.
  int fd = memfd_create("t", MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(fd, RegionSize(64)), 0);
  EXPECT_FALSE(RingReader::Attach(fd, &error).has_value());
  EXPECT_NE(error.find("not sealed"), std::string::npos) << error;
  // Sealed, but not a ring.
  ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  EXPECT_FALSE(RingReader::Attach(fd, &error).has_value());
  EXPECT_EQ(error, "bad ring magic");
  close(fd);
  // A ring whose header claims a capacity its size does not have.
  RingWriter w = NewWriter(64);
  w.header()->capacity = 128;
  EXPECT_FALSE(RingReader::Attach(w.fd(), &error).has_value());
  EXPECT_EQ(error, "ring size does not match its capacity");
}

TEST(RegistrationTest, RejectsMessagesWithoutOneFd) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Hello hello{kHelloMagic, kHelloVersion, 1, 0};
  ASSERT_EQ(write(sv[0], &hello, sizeof(hello)), static_cast<ssize_t>(sizeof(hello)));
  std::string error;
  Hello got;
  EXPECT_EQ(ReceiveRing(sv[1], &got, &error), -1);
  EXPECT_EQ(error, "expected exactly one file descriptor");
  Hello bad{0, kHelloVersion, 1, 0};
  ASSERT_EQ(write(sv[0], &bad, sizeof(bad)), static_cast<ssize_t>(sizeof(bad)));
  EXPECT_EQ(ReceiveRing(sv[1], &got, &error), -1);
  EXPECT_EQ(error, "bad hello magic or version");
  close(sv[0]);
  EXPECT_EQ(ReceiveRing(sv[1], &got, &error), -1);
  EXPECT_EQ(error, "connection closed");
  close(sv[1]);
  EXPECT_EQ(ConnectToDaemon("/nonexistent/xtimerd.sock", &error), -1);
  EXPECT_NE(error.find("connect"), std::string::npos);
}

}  // namespace
}  // namespace format
}  // namespace xtimer
