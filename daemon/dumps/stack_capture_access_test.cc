// Symbolization is no oracle over a process its user cannot read (issue 36, item 4): a process
// of uid 65534 (`nobody`) registers, then runs a setuid-root program while a child keeps its
// connection and answers DumpStack with addresses it chooses in that program's memory. Before
// the program runs, the same addresses of the user's own memory are named; after, the file says
// why nothing is, and names no module of the setuid program. Needs root (the test drops a child
// to uid 65534 and makes a setuid copy of sleep); skipped otherwise, saying so.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/base/test_util.h"
#include "daemon/dumps/dump_root.h"
#include "daemon/dumps/stack_capture.h"
#include "format/registration.h"
#include "format/stack_request.h"
#include "stacktrace/stacks_file.h"

extern "C" __attribute__((noinline)) int AccessTestLeaf(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}

namespace xtimer {
namespace daemon {
namespace {

namespace st = stacktrace;

constexpr uint32_t kNobody = 65534;

// The raw capture of one thread whose pcs are `pcs`.
std::string Capture(const std::vector<uint64_t>& pcs) {
  std::string list;
  for (uint64_t pc : pcs) list += (list.empty() ? "" : ", ") + std::to_string(pc);
  return R"({"format": "xtimer-raw-stacks", "version": 1, "pid": 1, "capture_time_ns": 5,
     "threads": [{"tid": 1, "name": "main", "pcs": [)" + list + "]}]}";
}

// The grandchild: holds the registration `conn` and answers each stack request with the pcs of
// the next line of `pcs_fd` (decimal, space separated); exits when that pipe closes.
[[noreturn]] void Answerer(int conn, int pcs_fd) {
  fcntl(conn, F_SETFL, fcntl(conn, F_GETFL) & ~O_NONBLOCK);  // wait for each request
  FILE* in = fdopen(pcs_fd, "r");
  char line[4096];
  while (in != nullptr && fgets(line, sizeof line, in) != nullptr) {
    std::vector<uint64_t> pcs;
    std::istringstream words(line);
    for (uint64_t pc; words >> pc;) pcs.push_back(pc);
    format::StackRequest req;
    if (recv(conn, &req, sizeof(req), MSG_WAITALL) != sizeof(req)) _exit(4);
    const std::string text = Capture(pcs);
    const int memfd = memfd_create("stacks", MFD_CLOEXEC);
    std::string error;
    if (memfd < 0 || write(memfd, text.data(), text.size()) != ssize_t(text.size()) ||
        !format::SendStackReply(conn, req.request_id, memfd, text.size(), &error)) {
      _exit(5);
    }
    close(memfd);
  }
  _exit(0);
}

// The user's process (forked before any thread starts): drops to uid 65534, registers when `go`
// says, leaves its connection to a child (Answerer), and runs `setuid_program` when `exec_fd`
// says. Reports 'u' on `report` when it cannot become uid 65534, 'r' once registered.
[[noreturn]] void UserProcess(const std::string& socket, const std::string& setuid_program,
                              int go, int exec_fd, int pcs_fd, int report) {
  if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) {
    _exit(write(report, "u", 1) == 1 ? 0 : 2);
  }
  prctl(PR_SET_DUMPABLE, 1);  // as any process of this user (it came from root)
  char c;
  if (read(go, &c, 1) != 1) _exit(3);
  std::string error;
  format::Identity id;
  id.job = "job";
  id.host = "node-a";
  id.rank = 0;
  id.local_rank = 0;
  id.world_size = 8;
  auto ring = format::RingWriter::Create(64, id, &error);
  const int conn = ring ? format::ConnectToDaemon(socket, &error) : -1;
  if (conn < 0 || !format::SendRing(conn, ring->fd(), &error)) _exit(6);
  if (fork() == 0) Answerer(conn, pcs_fd);
  close(conn);
  close(pcs_fd);
  if (write(report, "r", 1) != 1 || read(exec_fd, &c, 1) != 1) _exit(7);
  execl(setuid_program.c_str(), "sleep", "600", static_cast<char*>(nullptr));
  _exit(8);
}

class StackCaptureAccessTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (capturer_ != nullptr) {
      stop_ = true;
      thread_.join();
    }
    if (user_ > 0) {
      kill(user_, SIGKILL);
      testing::WaitExit(user_, 10000);
    }
    testing::RemoveTree(dir_);
  }
  // Captures the registered process into root_/NAME; returns its one file's info and contents.
  StackFileInfo CaptureInto(const std::string& name, st::StacksFile* file) {
    StackDumpRequest r;
    r.dir = root_ + "/" + name;
    r.timeout_ms = 5000;
    const std::vector<StackFileInfo> files = capturer_->Capture(r);
    EXPECT_EQ(files.size(), 1u);
    if (files.size() != 1) return {};
    std::string error;
    EXPECT_TRUE(st::ParseStacksJson(testing::ReadFile(files[0].path), file, &error)) << error;
    return files[0];
  }

  std::string dir_, root_;
  pid_t user_ = -1;
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<RingServer> server_;
  std::unique_ptr<StackCapturer> capturer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Addresses inside the first executable mapping of `path` in process `pid`'s maps (read as root).
std::vector<uint64_t> AddressesIn(pid_t pid, const std::string& path) {
  std::istringstream maps(testing::ReadFile("/proc/" + std::to_string(pid) + "/maps"));
  for (std::string line; std::getline(maps, line);) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path) ||
        sscanf(line.c_str(), "%llx-%llx %7s", &start, &end, perms) != 3 || perms[2] != 'x') {
      continue;
    }
    return {start + 0x40, start + (end - start) / 2, end - 0x40};
  }
  return {};
}

TEST_F(StackCaptureAccessTest, NoModuleOfASetuidProgramTheUserRuns) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a child drops to uid 65534 and runs setuid";
  dir_ = testing::MakeTempDir("stack_capture_access_test");
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  const std::string program = dir_ + "/setuid-sleep";
  std::string out;
  ASSERT_EQ(testing::RunCapture({"/bin/cp", "/bin/sleep", program}, "", &out), 0) << out;
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  const std::string socket = dir_ + "/xtimerd.sock";
  int go[2], exec_pipe[2], pcs[2], report[2];
  ASSERT_EQ(pipe(go) | pipe(exec_pipe) | pipe(pcs) | pipe(report), 0);
  user_ = fork();  // before any thread of this test starts
  if (user_ == 0) {
    close(go[1]);
    close(exec_pipe[1]);
    close(pcs[1]);
    close(report[0]);
    UserProcess(socket, program, go[0], exec_pipe[0], pcs[0], report[1]);
  }
  for (int fd : {go[0], exec_pipe[0], pcs[0], report[1]}) close(fd);

  std::string error;
  ASSERT_TRUE(PrepareDumpRoot(dir_ + "/root", &root_, &error)) << error;
  aggregator_ = std::make_unique<Aggregator>(AggregatorOptions());
  RingServerOptions so;
  so.socket_path = socket;
  server_ = std::make_unique<RingServer>(so, aggregator_.get());
  ASSERT_TRUE(server_->Listen(&error)) << error;
  capturer_ = std::make_unique<StackCapturer>(
      aggregator_.get(), [this](ProcessId id, int t, StackSink s) { server_->AskStacks(id, t, s); },
      root_, "node-a", [] { return int64_t{1764000000} * 1000000000; });
  thread_ = std::thread([this] { server_->Run(&stop_); });
  ASSERT_EQ(write(go[1], "g", 1), 1);
  char c = 0;
  ASSERT_EQ(read(report[0], &c, 1), 1) << "the user's process died";
  if (c == 'u') GTEST_SKIP() << "setuid(65534) is not allowed here (a user namespace?)";
  ASSERT_EQ(c, 'r');
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 1; }, 10000));

  // The user's own memory: named, as before.
  const uint64_t leaf = reinterpret_cast<uint64_t>(&AccessTestLeaf) + 1;
  const std::string own = std::to_string(leaf) + "\n";
  ASSERT_EQ(write(pcs[1], own.data(), own.size()), ssize_t(own.size()));
  st::StacksFile before;
  StackFileInfo info = CaptureInto("before", &before);
  EXPECT_EQ(info.outcome, "written") << info.error;
  ASSERT_EQ(before.threads.size(), 1u) << before.error;
  EXPECT_EQ(before.frames[before.threads[0].frames[0]].function, "AccessTestLeaf");

  // The user's process runs the setuid program; its child still holds the connection.
  ASSERT_EQ(write(exec_pipe[1], "x", 1), 1);
  std::vector<uint64_t> addresses;
  ASSERT_TRUE(testing::WaitFor([&] { return !(addresses = AddressesIn(user_, program)).empty(); },
                               10000));
  struct stat proc;
  ASSERT_EQ(stat(("/proc/" + std::to_string(user_)).c_str(), &proc), 0);
  if (proc.st_uid != 0) GTEST_SKIP() << "the setuid bit did not take (a nosuid mount?)";
  std::string chosen;
  for (uint64_t a : addresses) chosen += std::to_string(a) + " ";
  chosen += "\n";
  ASSERT_EQ(write(pcs[1], chosen.data(), chosen.size()), ssize_t(chosen.size()));
  st::StacksFile after;
  info = CaptureInto("after", &after);
  EXPECT_EQ(info.outcome, "denied");
  EXPECT_NE(after.error.find("not symbolized: process " + std::to_string(user_) +
                             " is no longer readable by uid 65534"),
            std::string::npos)
      << after.error;
  EXPECT_TRUE(after.threads.empty());
  for (const st::Frame& f : after.frames) EXPECT_EQ(f.module.find(program), std::string::npos);
  EXPECT_EQ(testing::ReadFile(info.path).find("setuid-sleep"), std::string::npos);
  EXPECT_EQ(capturer_->Outcomes()["denied"], 1u);
  for (int fd : {go[1], exec_pipe[1], pcs[1], report[0]}) close(fd);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
