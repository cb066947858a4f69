#include "daemon/ingest/ring_server.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <fstream>
#include <map>
#include <string>

#include "daemon/base/test_util.h"
#include "daemon/model/aggregator.h"
#include "format/registration.h"

namespace xtimer {
namespace daemon {
namespace {

using format::DType;
using format::Operation;
using testing::MakeOp;

format::Identity Id(int rank) {
  format::Identity id;
  id.job = "job";
  id.host = "host";
  id.pod = "pod";
  id.rank = rank;
  id.local_rank = rank;
  id.world_size = 4;
  return id;
}

class RingServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("ring_server_test");
    ASSERT_FALSE(dir_.empty());
    AggregatorOptions ao;
    ao.history = 1000;
    aggregator_ = std::make_unique<Aggregator>(ao);
    StartServer(Options());
  }
  RingServerOptions Options() const {
    RingServerOptions so;
    so.socket_path = dir_ + "/xtimerd.sock";
    so.status_interval_ms = 0;
    so.register_timeout_ms = 100;
    so.max_per_pid = 64;  // every test connection comes from this one process
    return so;
  }
  void StartServer(const RingServerOptions& so) {
    server_.reset();
    server_ = std::make_unique<RingServer>(so, aggregator_.get());
    std::string error;
    ASSERT_TRUE(server_->Listen(&error)) << error;
  }
  void TearDown() override {
    server_.reset();
    testing::RemoveTree(dir_);
  }

  // A connected, registered writer: returns the socket fd.
  int Register(format::RingWriter* w) {
    std::string error;
    int fd = format::ConnectToDaemon(dir_ + "/xtimerd.sock", &error);
    EXPECT_GE(fd, 0) << error;
    EXPECT_TRUE(format::SendRing(fd, w->fd(), &error)) << error;
    return fd;
  }

  format::RingWriter NewWriter(int rank, uint32_t capacity = 256) {
    std::string error;
    auto w = format::RingWriter::Create(capacity, Id(rank), &error);
    EXPECT_TRUE(w.has_value()) << error;
    return std::move(*w);
  }

  void Cycle(int n = 3) {
    for (int i = 0; i < n; ++i) server_->RunOnce(1);
  }

  std::string dir_;
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<RingServer> server_;
};

TEST_F(RingServerTest, RegistersReadsAndForgetsProcesses) {
  format::RingWriter a = NewWriter(0);
  format::RingWriter b = NewWriter(1);
  int fa = Register(&a);
  int fb = Register(&b);
  Cycle();
  EXPECT_EQ(server_->registered(), 2u);
  for (int i = 0; i < 100; ++i) {
    auto r = MakeOp(Operation::kGemmEx, DType::kBF16, 1000);
    ASSERT_TRUE(a.Write(r));
    ASSERT_TRUE(b.Write(r));
  }
  a.PublishInflight(nullptr, 0);
  Cycle();
  Snapshot snap = aggregator_->TakeSnapshot(RealtimeNs());
  ASSERT_EQ(snap.processes.size(), 2u);
  for (const ProcessSnapshot& p : snap.processes) {
    ASSERT_EQ(p.series.size(), 1u);
    EXPECT_EQ(p.series[0].count, 100u);
    EXPECT_EQ(p.written, 100u);
    EXPECT_EQ(p.pid, getpid());
  }

  // Records written just before the process exits are still counted; the exited process stays
  // (rank_up 0, cause: no marker, so the connection was lost) for the grace period.
  for (int i = 0; i < 10; ++i) b.Write(MakeOp(Operation::kGemmEx, DType::kBF16, 1000));
  close(fb);
  Cycle();
  EXPECT_EQ(server_->registered(), 1u);
  snap = aggregator_->TakeSnapshot(RealtimeNs());
  ASSERT_EQ(snap.processes.size(), 2u);
  EXPECT_EQ(snap.connected, 1u);
  EXPECT_FALSE(snap.processes[0].exited);
  const ProcessSnapshot& gone = snap.processes[1];
  EXPECT_EQ(gone.rank, 1);
  EXPECT_TRUE(gone.exited);
  EXPECT_FALSE(gone.up);
  EXPECT_EQ(gone.exit_cause.kind, format::ExitKind::kNone);
  EXPECT_STREQ(format::ExitKindName(gone.exit_cause.kind), "connection_lost");
  ASSERT_EQ(gone.series.size(), 1u);
  EXPECT_EQ(gone.series[0].count, 110u);
  EXPECT_EQ(aggregator_->History(gone.key()).size(), 110u);
  close(fa);
  Cycle();
  EXPECT_EQ(server_->registered(), 0u);
  EXPECT_EQ(aggregator_->TakeSnapshot(RealtimeNs()).registrations, 2u);
}

// Resident bytes of this process's mappings of rings other than the one at `writer_base` (the
// writer's own): the server's mapping, from /proc/self/smaps.
size_t ServerRingRss(const void* writer_base) {
  size_t rss = 0;
  for (const testing::Mapping& m : testing::ResidentMappings("/proc/self/smaps")) {
    if (m.name.find("memfd:xtimer-ring") != std::string::npos &&
        m.start != reinterpret_cast<uintptr_t>(writer_base)) {
      rss += static_cast<size_t>(m.rss_kb) * 1024;
    }
  }
  return rss;
}

TEST_F(RingServerTest, RingsWithinTheMappedAllowanceStayMappedOthersAreHandedBack) {
  for (const size_t allowance : {size_t{64} << 20, size_t{0}}) {
    SCOPED_TRACE(allowance);
    RingServerOptions so = Options();
    so.mapped_ring_bytes = allowance;
    StartServer(so);
    format::RingWriter w = NewWriter(0, 8192);  // 1 MiB of records
    const int fd = Register(&w);
    Cycle();
    for (int i = 0; i < 4096; ++i) {  // 512 KiB, past the 256 KiB release step
      ASSERT_TRUE(w.Write(MakeOp(Operation::kGemmEx, DType::kBF16, 1000)));
    }
    Cycle();
    ASSERT_EQ(w.header()->read_pos.load(), 4096u);
    const size_t rss = ServerRingRss(w.header());
    if (allowance > 0) {
      EXPECT_GE(rss, size_t{512} << 10);  // read once, kept: the next lap reads without faults
    } else {
      EXPECT_LT(rss, size_t{256} << 10);  // handed back
    }
    close(fd);
    Cycle();
  }
}

// Ops of the one process in the aggregator, 0 when none was read yet.
uint64_t OpsRead(Aggregator* aggregator) {
  const Snapshot snap = aggregator->TakeSnapshot(RealtimeNs());
  return snap.processes.empty() || snap.processes[0].series.empty()
             ? 0
             : snap.processes[0].series[0].count;
}

TEST_F(RingServerTest, SlowRingsAreReadInBatchesAndWholeWhenTheirConnectionEnds) {
  RingServerOptions so = Options();
  so.status_interval_ms = 60000;  // only the first cycle publishes a status
  so.read_delay_ms = 60000;
  StartServer(so);
  format::RingWriter w = NewWriter(0, 256);  // a batch: 64 records, a quarter of the ring
  const int fd = Register(&w);
  Cycle();
  ASSERT_EQ(server_->registered(), 1u);
  auto write = [&](int n) {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(w.Write(MakeOp(Operation::kGemmEx, DType::kBF16, 1000)));
  };
  write(1);  // a ring never read is read at once
  Cycle();
  EXPECT_EQ(OpsRead(aggregator_.get()), 1u);
  write(63);  // below a batch, read long ago: waits for the delay
  Cycle();
  EXPECT_EQ(OpsRead(aggregator_.get()), 1u);
  write(1);  // a batch waits: read in the next cycle
  Cycle(1);
  EXPECT_EQ(OpsRead(aggregator_.get()), 65u);
  write(5);
  Cycle();
  EXPECT_EQ(OpsRead(aggregator_.get()), 65u);
  close(fd);  // the process ended: what it left is read before it is marked exited
  Cycle();
  EXPECT_EQ(server_->registered(), 0u);
  EXPECT_EQ(OpsRead(aggregator_.get()), 70u);
}

TEST_F(RingServerTest, ASlowRingsRecordsAreReadOnceTheDelayPassed) {
  RingServerOptions so = Options();
  so.status_interval_ms = 60000;
  so.read_delay_ms = 1;
  StartServer(so);
  format::RingWriter w = NewWriter(0, 256);
  const int fd = Register(&w);
  Cycle();
  for (int round = 1; round <= 3; ++round) {
    ASSERT_TRUE(w.Write(MakeOp(Operation::kGemmEx, DType::kBF16, 1000)));
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          server_->RunOnce(1);
          return OpsRead(aggregator_.get()) == static_cast<uint64_t>(round);
        },
        30000))
        << "round " << round;
  }
  close(fd);
}

TEST_F(RingServerTest, ExitMarkersGiveTheCauseAndInflightOpsStayFrozen) {
  format::RingWriter crashed = NewWriter(0);
  format::RingWriter clean = NewWriter(1);
  int fc = Register(&crashed);
  int fl = Register(&clean);
  Cycle();
  // Rank 0 dies of SIGSEGV with all-reduce 7 of communicator 0xabc in flight since 5 s ago.
  const int64_t launched = RealtimeNs() - int64_t{5} * 1000000000;
  format::InflightRow row = {0xabc, 7, 6, launched};
  crashed.PublishInflight(&row, 1);
  Cycle();
  crashed.header()->exit_state.store(format::EncodeExitState(format::ExitKind::kSignal, 11));
  clean.header()->exit_state.store(format::EncodeExitState(format::ExitKind::kExited, 3));
  close(fc);
  close(fl);
  Cycle();
  EXPECT_EQ(server_->registered(), 0u);
  // Later, its in-flight age is still the one it had when it died.
  const Snapshot snap = aggregator_->TakeSnapshot(RealtimeNs() + int64_t{60} * 1000000000);
  ASSERT_EQ(snap.processes.size(), 2u);
  const ProcessSnapshot& p0 = snap.processes[0];
  EXPECT_TRUE(p0.exited);
  EXPECT_EQ(p0.exit_cause.kind, format::ExitKind::kSignal);
  EXPECT_EQ(p0.exit_cause.value, 11);
  const CommSnapshot* comm = nullptr;
  for (const CommSnapshot& c : p0.comms) {
    if (c.comm_id == 0xabc) comm = &c;
  }
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->last_issued_seq, 7u);
  EXPECT_EQ(comm->last_completed_seq, 6u);
  EXPECT_GE(InflightAgeSeconds(p0, comm->oldest_launch_ns), 4.5);
  EXPECT_LT(InflightAgeSeconds(p0, comm->oldest_launch_ns), 30);
  EXPECT_EQ(snap.processes[1].exit_cause.kind, format::ExitKind::kExited);
  EXPECT_EQ(snap.processes[1].exit_cause.value, 3);
}

TEST_F(RingServerTest, SocketModeIsSetWhateverTheUmask) {
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/xtimerd.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

// Connection closed by the daemon (EOF), waiting a few cycles.
bool ClosedByDaemon(int fd, const std::function<void()>& cycle) {
  for (int i = 0; i < 50; ++i) {
    cycle();
    char b;
    const ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
    if (n == 0) return true;
  }
  return false;
}

TEST_F(RingServerTest, ARankHeldWithAnotherTokenIsRefusedAndItsConnectionClosed) {
  format::RingWriter first = NewWriter(0), second = NewWriter(0), late = NewWriter(-1);
  std::string error;
  const int a = Register(&first);  // no token
  Cycle();
  const int b = format::ConnectToDaemon(dir_ + "/xtimerd.sock", &error);
  ASSERT_GE(b, 0) << error;
  ASSERT_TRUE(format::SendRing(b, second.fd(), &error, "another-job")) << error;
  EXPECT_TRUE(ClosedByDaemon(b, [&] { Cycle(1); }));
  EXPECT_EQ(aggregator_->refused("identity_token"), 1u);
  // A rank learned after registration is checked as well.
  const int c = format::ConnectToDaemon(dir_ + "/xtimerd.sock", &error);
  ASSERT_GE(c, 0) << error;
  ASSERT_TRUE(format::SendRing(c, late.fd(), &error, "another-job")) << error;
  Cycle();
  EXPECT_EQ(aggregator_->process_count(), 2u);
  late.SetRank(0, 0, 4);
  EXPECT_TRUE(ClosedByDaemon(c, [&] { Cycle(1); }));
  EXPECT_EQ(aggregator_->refused("identity_token"), 2u);
  EXPECT_EQ(server_->registered(), 1u);
  EXPECT_EQ(aggregator_->process_count(), 1u);
  close(a);
  close(b);
  close(c);
}

// A child process of `uid` that registers a ring naming `job` as rank 0 and stays connected
// until Stop() kills it (the daemon takes its uid and pid from the connection, SO_PEERCRED).
class ForeignRank {
 public:
  // Forks; the child waits for Go() before it drops to `uid` and registers.
  ForeignRank(const std::string& socket_path, const std::string& job) {
    format::Identity id = Id(0);
    id.job = job;
    std::string error;
    writer_ = format::RingWriter::Create(256, id, &error);
    if (pipe(go_) != 0 || pipe(said_) != 0) return;
    pid_ = fork();
    if (pid_ == 0) RunChild(socket_path);
  }
  ~ForeignRank() { Stop(); }
  pid_t pid() const { return pid_; }
  // Lets the child register as `uid`: "" once its ring is sent, else why not ("setresuid: ..."
  // when this machine cannot switch users).
  std::string Go(uint32_t uid) {
    if (pid_ <= 0 || !writer_.has_value()) return "fork or ring failed";
    if (write(go_[1], &uid, sizeof(uid)) != static_cast<ssize_t>(sizeof(uid))) return "go";
    char buf[256] = {};
    const ssize_t n = read(said_[0], buf, sizeof(buf) - 1);
    return n <= 0 ? "the child said nothing" : std::string(buf, n) == "ok" ? "" : buf;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    for (int fd : {go_[0], go_[1], said_[0], said_[1]}) close(fd);
    pid_ = 0;
  }

 private:
  [[noreturn]] void RunChild(const std::string& socket_path) {
    uint32_t uid = 0;
    std::string said = "ok";
    std::string error;
    if (read(go_[0], &uid, sizeof(uid)) != static_cast<ssize_t>(sizeof(uid))) _exit(1);
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 ||
        setresuid(uid, uid, uid) != 0) {
      said = std::string("setresuid: ") + strerror(errno);
    } else {
      const int fd = format::ConnectToDaemon(socket_path, &error);
      if (fd < 0 || !format::SendRing(fd, writer_->fd(), &error)) said = "register: " + error;
    }
    if (write(said_[1], said.data(), said.size()) < 0) _exit(1);
    for (;;) pause();  // connected until Stop() kills it
  }

  std::optional<format::RingWriter> writer_;
  pid_t pid_ = -1;
  int go_[2] = {-1, -1}, said_[2] = {-1, -1};
};

// Issue 20, "Job labels and their owners" (docs/security.md): between two unprivileged users a
// label taken first never blocks the other's job, and a label that names a Slurm job belongs to
// the processes in that job's cgroup, in whatever order they come.
TEST_F(RingServerTest, LabelsOfUnprivilegedUsersAreScopedUnlessTheirCgroupBindsThem) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the ranks register as uids 65534 and 1000";
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);  // the other users reach the socket
  // A fake kernel view: the cgroup of each child as the test writes it.
  RingServerOptions so = Options();
  so.kernel_roots.proc = dir_ + "/proc";
  so.kernel_roots.cgroup = dir_ + "/cgroup";
  const std::string job_dir = "system.slice/slurmstepd.scope/job_1234";
  ASSERT_EQ(std::system(("mkdir -p " + so.kernel_roots.cgroup + "/" + job_dir + "/step_0 " +
                         so.kernel_roots.cgroup + "/system.slice/slurmstepd.scope/job_99")
                            .c_str()),
            0);
  StartServer(so);
  const std::string sock = so.socket_path;
  auto in_cgroup = [&](pid_t pid, const std::string& path) {
    ASSERT_EQ(mkdir((so.kernel_roots.proc + "/" + std::to_string(pid)).c_str(), 0755) == 0 ||
                  errno == EEXIST,
              true);
    std::ofstream(so.kernel_roots.proc + "/" + std::to_string(pid) + "/cgroup")
        << "0::/" << path << "\n";
  };
  mkdir(so.kernel_roots.proc.c_str(), 0755);
  // Squatters first: uid 65534 takes "victim" and "slurm-1234" (from outside the Slurm job, and
  // from another Slurm job's cgroup); then uid 1000's real ranks come.
  ForeignRank squat_victim(sock, "victim"), squat_slurm(sock, "slurm-1234"),
      squat_other_job(sock, "slurm-1234"), real_victim(sock, "victim"),
      real_slurm(sock, "slurm-1234");
  in_cgroup(squat_other_job.pid(), "system.slice/slurmstepd.scope/job_99");
  in_cgroup(real_slurm.pid(), job_dir + "/step_0");
  const std::string why = squat_victim.Go(65534);
  if (why.rfind("setresuid", 0) == 0) GTEST_SKIP() << why << " (a sandbox maps root only)";
  ASSERT_EQ(why, "");
  ASSERT_EQ(squat_slurm.Go(65534), "");
  ASSERT_EQ(squat_other_job.Go(65534), "");
  Cycle();
  ASSERT_EQ(real_victim.Go(1000), "");
  ASSERT_EQ(real_slurm.Go(1000), "");
  Cycle();
  std::map<pid_t, std::string> job_of;
  for (const ProcessSnapshot& p : aggregator_->TakeSnapshot(RealtimeNs()).processes) {
    EXPECT_FALSE(p.exited) << p.pid;
    job_of[p.pid] = p.job;
  }
  EXPECT_EQ(job_of[squat_victim.pid()], "victim@u65534");
  EXPECT_EQ(job_of[squat_slurm.pid()], "slurm-1234@u65534");
  EXPECT_EQ(job_of[squat_other_job.pid()], "slurm-1234@u65534");
  EXPECT_EQ(job_of[real_victim.pid()], "victim@u1000");
  EXPECT_EQ(job_of[real_slurm.pid()], "slurm-1234");  // bound to Slurm job 1234 by its cgroup
  EXPECT_EQ(job_of.size(), 5u);
  EXPECT_EQ(aggregator_->refused("identity_owner"), 0u);
  // The test's own process (root) keeps its label as given.
  format::RingWriter own = NewWriter(0);
  const int fd = Register(&own);
  Cycle();
  bool plain = false;
  for (const ProcessSnapshot& p : aggregator_->TakeSnapshot(RealtimeNs()).processes) {
    plain |= p.pid == getpid() && p.job == "job";
  }
  EXPECT_TRUE(plain);
  close(fd);
}

TEST_F(RingServerTest, RejectsBadRegistrations) {
  std::string error;
  const std::string path = dir_ + "/xtimerd.sock";
  // 1. Bytes without a descriptor.
  int f1 = format::ConnectToDaemon(path, &error);
  ASSERT_EQ(write(f1, "garbage-garbage!", 16), 16);
  // 2. A pipe instead of a memfd.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  int f2 = format::ConnectToDaemon(path, &error);
  ASSERT_TRUE(format::SendRing(f2, p[0], &error));
  // 3. An unsealed memfd with a plausible size.
  int mfd = memfd_create("fake", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(mfd, format::RegionSize(64)), 0);
  int f3 = format::ConnectToDaemon(path, &error);
  ASSERT_TRUE(format::SendRing(f3, mfd, &error));
  // 4. A sealed memfd whose header is garbage.
  int gfd = memfd_create("garbage", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(gfd, format::RegionSize(64)), 0);
  ASSERT_EQ(fcntl(gfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  ASSERT_EQ(pwrite(gfd, "not a ring header", 17, 0), 17);
  int f4 = format::ConnectToDaemon(path, &error);
  ASSERT_TRUE(format::SendRing(f4, gfd, &error));
  // 5. A connection that never sends anything.
  int f5 = format::ConnectToDaemon(path, &error);
  Cycle();
  usleep(150000);
  Cycle();
  EXPECT_EQ(server_->registered(), 0u);
  const Snapshot snap = aggregator_->TakeSnapshot(RealtimeNs());
  EXPECT_EQ(snap.registrations_rejected, 5u);
  EXPECT_EQ(aggregator_->refused("bad_hello"), 1u);
  EXPECT_EQ(aggregator_->refused("bad_ring"), 3u);
  EXPECT_EQ(aggregator_->refused("timeout"), 1u);
  char c;
  EXPECT_EQ(read(f5, &c, 1), 0);  // the daemon closed it
  for (int fd : {f1, f2, f3, f4, f5, p[0], p[1], mfd, gfd}) close(fd);

  // The daemon still accepts a good ring.
  format::RingWriter w = NewWriter(2);
  int fw = Register(&w);
  Cycle();
  EXPECT_EQ(server_->registered(), 1u);
  close(fw);
}

// Writes random garbage into a real ring's slots and header while the server reads it: the
// server survives, counts invalid records, and keeps serving.
TEST_F(RingServerTest, SurvivesAGarbageWritingRing) {
  format::RingWriter w = NewWriter(0, 64);
  int fw = Register(&w);
  Cycle();
  ASSERT_EQ(server_->registered(), 1u);
  format::RingHeader* h = w.header();
  auto* slots = reinterpret_cast<unsigned char*>(h) + format::kHeaderSize;
  const uint32_t cap = h->capacity;
  std::mt19937_64 rng(12345);
  uint64_t pos = h->write_pos.load();
  for (int iter = 0; iter < 2000; ++iter) {
    // Random bytes in a few slots, sometimes with a valid version/type prefix to reach deeper.
    for (int k = 0; k < 8; ++k) {
      unsigned char* s = slots + (rng() % cap) * format::kRecordSize;
      for (size_t i = 0; i < format::kRecordSize; i += 8) {
        uint64_t v = rng();
        memcpy(s + i, &v, 8);
      }
      if (rng() % 2) {
        s[0] = format::kRecordVersion;
        s[1] = 0;
        s[2] = static_cast<unsigned char>(1 + rng() % 3);
      }
    }
    switch (rng() % 6) {
      case 0:  // impossible positions
        h->write_pos.store(rng());
        pos = h->write_pos.load();
        break;
      case 1:
        h->read_pos.store(rng());
        break;
      case 2:  // identity without NUL, garbage ranks
        memset(h->job, 0xff, sizeof(h->job));
        memset(h->host, '"', sizeof(h->host));
        h->rank.store(static_cast<int32_t>(rng()));
        h->local_rank.store(static_cast<int32_t>(rng()));
        break;
      case 3:  // a garbage in-flight table
        h->inflight_count.store(static_cast<uint32_t>(rng()));
        for (auto& e : h->inflight) {
          e.comm_id.store(rng());
          e.last_issued_seq.store(rng());
          e.oldest_launch_ns.store(static_cast<int64_t>(rng()));
        }
        for (auto& d : h->inflight_detail) {  // details, garbage and plausible
          d.device.store(static_cast<int32_t>(rng() % 8) - 2);
          d.state.store(static_cast<uint8_t>(rng() % 4));
          d.op.store(static_cast<uint16_t>(rng() % 2 ? 32 + rng() % 8 : rng()));
          d.dtype.store(static_cast<uint8_t>(rng() % 16));
          d.root.store(static_cast<int32_t>(rng() % 5) - 2);
          d.comm_size.store(static_cast<int32_t>(rng() % 5) - 1);
          d.launch_ns.store(static_cast<int64_t>(rng()));
          d.gpu_start_ns.store(rng() % 2 ? 0 : static_cast<int64_t>(rng()));
          d.blocker_op.store(static_cast<uint16_t>(rng() % 2 ? 80 : rng()));
          d.blocker_kind.store(static_cast<uint8_t>(rng() % 9));
          d.blocker_name_id.store(static_cast<uint32_t>(rng()));
          d.blocker_m.store(static_cast<int64_t>(rng()));
          d.blocker_launch_ns.store(static_cast<int64_t>(rng()));
        }
        break;
      default:  // plausible progress over the garbage
        pos = h->read_pos.load() + rng() % (cap + 1);
        h->write_pos.store(pos);
        break;
    }
    server_->RunOnce(0);
    if (iter % 100 == 0) {
      Snapshot snap = aggregator_->TakeSnapshot(RealtimeNs());
      ASSERT_EQ(snap.processes.size(), 1u);
    }
  }
  Snapshot snap = aggregator_->TakeSnapshot(RealtimeNs());
  ASSERT_EQ(snap.processes.size(), 1u);
  EXPECT_GT(snap.processes[0].invalid, 0u);
  EXPECT_GT(snap.processes[0].lost, 0u);
  EXPECT_EQ(server_->registered(), 1u);
  close(fw);
  Cycle();
  EXPECT_EQ(server_->registered(), 0u);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
