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
  EXPECT_EQ(id.op_log, OpLogRequest::kNone);
}

// XTIMER_LOG travels in the header; a value the reader does not know reads as kNone.
TEST(RingTest, OpLogRequest) {
  Identity id = TestIdentity();
  id.op_log = OpLogRequest::kCsv;
  std::string error;
  auto w = RingWriter::Create(64, id, &error);
  ASSERT_TRUE(w.has_value()) << error;
  RingReader r = AttachThroughSocket(*w);
  EXPECT_EQ(r.identity().op_log, OpLogRequest::kCsv);
  w->header()->op_log = 7;
  EXPECT_EQ(r.identity().op_log, OpLogRequest::kNone);
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

InflightRow QueuedBehindKernel() {
  InflightRow row{0xabc, 17, 15, 1000};
  row.device = 3;
  InflightCollective& c = row.oldest;
  c.state = InflightState::kQueued;
  c.op = static_cast<uint16_t>(Operation::kBroadcast);
  c.dtype = static_cast<uint8_t>(DType::kBF16);
  c.seq = 16;
  c.count = 1 << 20;
  c.bytes = 2 << 20;
  c.root = 2;
  c.comm_size = 4;
  c.launch_ns = 2000;
  c.blocker.op = static_cast<uint16_t>(Operation::kKernelLaunch);
  c.blocker.kind = static_cast<uint8_t>(OpKind::kKernel);
  c.blocker.name_id = 7;
  c.blocker.launch_ns = 1500;
  return row;
}

TEST(RingTest, InflightDetailsRoundTrip) {
  static_assert(offsetof(RingHeader, inflight_detail) + sizeof(InflightDetail) * kMaxInflight ==
                    kHeaderSize,
                "the details fill the header");
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  EXPECT_EQ(r.version(), kRingVersion);
  InflightRow rows[2] = {QueuedBehindKernel(), {0xdef, 9, 8, 3000}};
  rows[1].device = 0;
  rows[1].oldest.state = InflightState::kStarted;
  rows[1].oldest.op = static_cast<uint16_t>(Operation::kAllReduce);
  rows[1].oldest.seq = 9;
  rows[1].oldest.gpu_start_ns = 3500;
  w.PublishInflight(rows, 2);
  InflightRow out[kMaxInflight];
  int count = 0;
  uint64_t invalid = 0;
  ASSERT_TRUE(r.Inflight(out, &count, &invalid));
  ASSERT_EQ(count, 2);
  EXPECT_EQ(invalid, 0u);
  EXPECT_EQ(out[0].device, 3);
  const InflightCollective& q = out[0].oldest;
  EXPECT_EQ(q.state, InflightState::kQueued);
  EXPECT_EQ(q.op, static_cast<uint16_t>(Operation::kBroadcast));
  EXPECT_EQ(q.dtype, static_cast<uint8_t>(DType::kBF16));
  EXPECT_EQ(q.seq, 16u);
  EXPECT_EQ(q.count, 1u << 20);
  EXPECT_EQ(q.bytes, 2u << 20);
  EXPECT_EQ(q.root, 2);
  EXPECT_EQ(q.comm_size, 4);
  EXPECT_EQ(q.launch_ns, 2000);
  EXPECT_EQ(q.gpu_start_ns, 0);
  EXPECT_EQ(q.blocker.op, static_cast<uint16_t>(Operation::kKernelLaunch));
  EXPECT_EQ(q.blocker.name_id, 7u);
  EXPECT_EQ(q.blocker.launch_ns, 1500);
  EXPECT_EQ(out[1].oldest.state, InflightState::kStarted);
  EXPECT_EQ(out[1].oldest.gpu_start_ns, 3500);
  EXPECT_EQ(out[1].oldest.blocker.op, 0);
}

TEST(RingTest, InflightDetailValidation) {
  EXPECT_EQ(ValidateInflightRow(QueuedBehindKernel()), nullptr);
  EXPECT_EQ(ValidateInflightRow(InflightRow()), nullptr);
  auto bad = [](void (*mutate)(InflightRow*)) {
    InflightRow row = QueuedBehindKernel();
    mutate(&row);
    return ValidateInflightRow(row);
  };
  EXPECT_STREQ(bad([](InflightRow* r) { r->device = -2; }), "bad device");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.state = static_cast<InflightState>(4); }),
               "bad state");
  // An untimed collective (issued) has no blocker: only a queued one can be behind something.
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.state = InflightState::kIssued; }),
               "a blocker for a collective that started");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.op = 1; }), "op is not a collective");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.dtype = 200; }), "bad dtype");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.root = 4; }), "bad root or communicator size");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.launch_ns = -1; }), "negative time");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.gpu_start_ns = 5; }),
               "a GPU start time for a collective that did not start");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.seq = 15; }),
               "a collective in flight at or below the completed sequence number");
  EXPECT_STREQ(bad([](InflightRow* r) { r->last_completed_seq = 1000; }),
               "a collective in flight at or below the completed sequence number");
  EXPECT_EQ(bad([](InflightRow* r) { r->oldest.seq = 0; }), nullptr);  // no sequence number known
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.blocker.kind = 1; }),
               "blocker op and kind disagree");
  EXPECT_STREQ(bad([](InflightRow* r) { r->oldest.blocker.m = -1; }), "negative blocker field");
  EXPECT_STREQ(bad([](InflightRow* r) {
                 r->oldest.state = InflightState::kStarted;
                 r->oldest.gpu_start_ns = 5;
               }),
               "a blocker for a collective that started");

  // Garbage written straight into the shared header: the row keeps its counters, loses its detail.
  RingWriter w = NewWriter(64);
  RingReader r = AttachThroughSocket(w);
  InflightRow row = QueuedBehindKernel();
  w.PublishInflight(&row, 1);
  w.header()->inflight_detail[0].op.store(0xffff);
  InflightRow out[kMaxInflight];
  int count = 0;
  uint64_t invalid = 0;
  ASSERT_TRUE(r.Inflight(out, &count, &invalid));
  ASSERT_EQ(count, 1);
  EXPECT_EQ(invalid, 1u);
  EXPECT_EQ(out[0].comm_id, 0xabcu);
  EXPECT_EQ(out[0].last_issued_seq, 17u);
  EXPECT_EQ(out[0].device, -1);
  EXPECT_EQ(out[0].oldest.state, InflightState::kNone);
}

TEST(RingTest, ReadsAVersion1Ring) {
  // A ring made by an older hook: 4096-byte header, no details.
  int fd = memfd_create("v1", MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, RegionSize(64, kHeaderSizeV1)), 0);
  ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  void* base = mmap(nullptr, RegionSize(64, kHeaderSizeV1), PROT_READ | PROT_WRITE, MAP_SHARED,
                    fd, 0);
  ASSERT_NE(base, MAP_FAILED);
  auto* h = static_cast<RingHeader*>(base);  // only its first 4096 bytes exist
  h->magic = kRingMagic;
  h->version = kRingVersion1;
  h->header_size = kHeaderSizeV1;
  h->record_size = kRecordSize;
  h->capacity = 64;
  h->inflight_count.store(1);
  h->inflight[0].comm_id.store(0x55);
  h->inflight[0].oldest_launch_ns.store(42);
  auto* slots = reinterpret_cast<RecordSlot*>(static_cast<char*>(base) + kHeaderSizeV1);
  slots[0] = OpWithSeq(5);
  h->write_pos.store(1);
  std::string error;
  auto r = RingReader::Attach(fd, &error);
  ASSERT_TRUE(r.has_value()) << error;
  EXPECT_EQ(r->version(), kRingVersion1);
  RecordSlot buf[4];
  ReadStats stats;
  ASSERT_EQ(r->Read(buf, 4, &stats), 1u);
  EXPECT_EQ(buf[0].op.seq, 5u);
  InflightRow out[kMaxInflight];
  int count = 0;
  ASSERT_TRUE(r->Inflight(out, &count));
  ASSERT_EQ(count, 1);
  EXPECT_EQ(out[0].comm_id, 0x55u);
  EXPECT_EQ(out[0].oldest_launch_ns, 42);
  EXPECT_EQ(out[0].device, -1);
  EXPECT_EQ(out[0].oldest.state, InflightState::kNone);
  // A version 1 header with the version 2 size (or the reverse) is refused.
  h->header_size = kHeaderSize;
  EXPECT_FALSE(RingReader::Attach(fd, &error).has_value());
  munmap(base, RegionSize(64, kHeaderSizeV1));
  close(fd);
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
  Hello hello{kHelloMagic, kHelloVersionNoToken, 1, 0, {}};  // version 1: 16 bytes
  ASSERT_EQ(write(sv[0], &hello, kHelloV1Bytes), static_cast<ssize_t>(kHelloV1Bytes));
  std::string error;
  Hello got;
  EXPECT_EQ(ReceiveRing(sv[1], &got, &error), -1);
  EXPECT_EQ(error, "expected exactly one file descriptor");
  Hello bad{0, kHelloVersion, 1, 0, {}};
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
