// Stack captures through a real RingServer from stand-in processes (this test's threads) that
// register a ring and answer stack requests with raw captures of this binary's own addresses,
// and hostile stand-ins: silent, garbage, oversized replies, a pipe instead of a memfd.
#include "daemon/dumps/stack_capture.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "daemon/base/test_util.h"
#include "daemon/control/control_handler.h"
#include "daemon/control/control_server.h"
#include "daemon/dumps/dump_root.h"
#include "daemon/dumps/dump_writer.h"
#include "format/registration.h"
#include "format/stack_request.h"
#include "proto/hosting.grpc.pb.h"
#include "stacktrace/stacks_file.h"
#include "util/clock.h"

// The frames the good stand-in reports: a leaf, CPython's eval loop (its Python frames go
// there), an outer function.
extern "C" __attribute__((noinline)) int StandInLeaf(int x) {
  asm volatile("" ::: "memory");
  return x + 1;
}
extern "C" __attribute__((noinline)) int _PyEval_EvalFrameDefault(int x) {
  asm volatile("" ::: "memory");
  return x + 2;
}
namespace stand_in {
__attribute__((noinline)) int Outer(double x) {
  asm volatile("" ::: "memory");
  return static_cast<int>(x);
}
}  // namespace stand_in

namespace xtimer {
namespace daemon {
namespace {

namespace st = stacktrace;

// kSlow answers its first request only when the second one came (so: late, while the second is
// pending in the daemon), then that one, then every later one at once.
enum class Mode { kGood, kSilent, kGarbage, kHuge, kPipe, kSlow };

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

std::string GoodCapture() {
  const long tid = syscall(SYS_gettid);
  return R"({"format": "xtimer-raw-stacks", "version": 1, "pid": 1, "capture_time_ns": 5,
     "threads": [{"tid": )" + std::to_string(tid) + R"(, "name": "main", "pcs": [)" +
         std::to_string(Addr(reinterpret_cast<void*>(&StandInLeaf)) + 1) + ", " +
         std::to_string(Addr(reinterpret_cast<void*>(&_PyEval_EvalFrameDefault)) + 2) + ", " +
         std::to_string(Addr(reinterpret_cast<void*>(&stand_in::Outer)) + 2) + R"(]}],
     "python_threads": [{"thread_id": 9, "tid": )" + std::to_string(tid) +
         R"(, "frames": [{"function": "train_step", "file": "/job/train.py", "line": 88}]}]})";
}

// Reads the next stack request on `fd`; false when `stop` is set first.
bool NextRequest(int fd, const std::atomic<bool>* stop, format::StackRequest* req) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (stop->load()) return false;
    if (poll(&p, 1, 20) == 1) break;
  }
  return recv(fd, req, sizeof(*req), 0) == sizeof(*req);
}

// Answers one stack request on `fd` as `mode` says; returns when the request was handled or
// `stop` is set.
void AnswerOnce(int fd, Mode mode, const std::atomic<bool>* stop) {
  format::StackRequest req;
  if (!NextRequest(fd, stop, &req)) return;
  std::string error;
  const int memfd = memfd_create("stacks", MFD_CLOEXEC);
  const std::string text = GoodCapture();
  ASSERT_EQ(write(memfd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  switch (mode) {
    case Mode::kSlow: {
      format::StackRequest next;
      if (!NextRequest(fd, stop, &next)) break;
      EXPECT_TRUE(format::SendStackReply(fd, req.request_id, memfd, text.size(), &error)) << error;
      EXPECT_TRUE(format::SendStackReply(fd, next.request_id, memfd, text.size(), &error)) << error;
      break;
    }
    case Mode::kGood:
      EXPECT_TRUE(format::SendStackReply(fd, req.request_id, memfd, text.size(), &error)) << error;
      break;
    case Mode::kSilent:  // reads the request, never answers (the connection stays open)
      break;
    case Mode::kGarbage:
      EXPECT_EQ(send(fd, "garbage garbage garbage garbage!", 32, 0), 32);
      break;
    case Mode::kHuge: {
      format::StackReply r{format::kStackReplyMagic, format::kStackProtocolVersion,
                           req.request_id, uint64_t{1} << 40};
      EXPECT_EQ(send(fd, &r, sizeof(r), 0), static_cast<ssize_t>(sizeof(r)));
      break;
    }
    case Mode::kPipe: {
      int pipe_fds[2];
      ASSERT_EQ(pipe(pipe_fds), 0);
      EXPECT_TRUE(format::SendStackReply(fd, req.request_id, pipe_fds[0], 10, &error)) << error;
      close(pipe_fds[0]);
      close(pipe_fds[1]);
      break;
    }
  }
  close(memfd);
}

// A good or slow stand-in answers every request; the others one.
void Answer(int fd, Mode mode, const std::atomic<bool>* stop) {
  do {
    AnswerOnce(fd, mode, stop);
  } while ((mode == Mode::kGood || mode == Mode::kSlow) && !stop->load());
}

// rank -1: a process that has not said its rank and world size (no RANK, no communicator).
format::Identity Id(int rank) {
  format::Identity id;
  id.job = "job";
  id.host = "node-a";
  id.rank = rank;
  id.local_rank = rank;
  id.world_size = rank < 0 ? -1 : 8;
  return id;
}

class StackCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("stack_capture_test");
    std::string error;
    ASSERT_TRUE(PrepareDumpRoot(dir_ + "/root", &root_, &error)) << error;
    aggregator_ = std::make_unique<Aggregator>(AggregatorOptions());
    RingServerOptions so;
    so.socket_path = dir_ + "/xtimerd.sock";
    so.max_per_pid = 64;
    server_ = std::make_unique<RingServer>(so, aggregator_.get());
    ASSERT_TRUE(server_->Listen(&error)) << error;
    thread_ = std::thread([this] { server_->Run(&stop_); });
    capturer_ = std::make_unique<StackCapturer>(
        aggregator_.get(),
        [this](ProcessId id, int t, StackSink s) { server_->AskStacks(id, t, s); }, root_, "node-a",
        [] { return int64_t{1764000000} * 1000000000; });
  }
  // The control port in front of the capturer (DumpStack over HTTP/JSON and gRPC).
  int StartControl() {
    dumps_ = std::make_unique<DumpManager>(aggregator_.get(), root_, "node-a", RealtimeNs);
    ControlOptions o;
    o.node = "node-a";
    o.now_ns = RealtimeNs;
    o.stacks = capturer_.get();
    handler_ = std::make_unique<ControlHandler>(aggregator_.get(), dumps_.get(), o);
    control_ = std::make_unique<ControlServer>(handler_.get());
    std::string error;
    const int port = control_->Start("127.0.0.1", 0, &error);
    EXPECT_GT(port, 0) << error;
    return port;
  }
  void TearDown() override {
    control_.reset();
    answer_stop_ = true;
    for (std::thread& t : answerers_) t.join();
    for (int fd : fds_) close(fd);
    stop_ = true;
    thread_.join();
    server_.reset();
    testing::RemoveTree(dir_);
  }
  // A stand-in rank that answers one request as `mode` says.
  void StandIn(int rank, Mode mode) {
    std::string error;
    auto w = format::RingWriter::Create(64, Id(rank), &error);
    ASSERT_TRUE(w.has_value()) << error;
    const int fd = format::ConnectToDaemon(dir_ + "/xtimerd.sock", &error);
    ASSERT_GE(fd, 0) << error;
    ASSERT_TRUE(format::SendRing(fd, w->fd(), &error)) << error;
    writers_.push_back(std::make_unique<format::RingWriter>(std::move(*w)));
    fds_.push_back(fd);
    answerers_.emplace_back([this, fd, mode] { Answer(fd, mode, &answer_stop_); });
  }
  st::StacksFile Read(int rank) {
    st::StacksFile f;
    std::string error;
    const std::string text =
        testing::ReadFile(root_ + "/out/job/" + st::StacksFileName(rank, 8));
    EXPECT_TRUE(st::ParseStacksJson(text, &f, &error)) << error << ": " << text;
    return f;
  }

  std::string dir_, root_;
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<DumpManager> dumps_;
  std::unique_ptr<ControlHandler> handler_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<RingServer> server_;
  std::unique_ptr<StackCapturer> capturer_;
  std::atomic<bool> stop_{false}, answer_stop_{false};
  std::thread thread_;
  std::vector<std::thread> answerers_;
  std::vector<std::unique_ptr<format::RingWriter>> writers_;
  std::vector<int> fds_;
};

TEST_F(StackCaptureTest, WritesSymbolizedStacksAndSaysWhyForHostileRanks) {
  StandIn(0, Mode::kGood);
  StandIn(1, Mode::kSilent);
  StandIn(2, Mode::kGarbage);
  StandIn(3, Mode::kHuge);
  StandIn(4, Mode::kPipe);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 5; }, 5000));

  StackDumpRequest r;
  r.dir = root_ + "/out";
  r.timeout_ms = 1500;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<StackFileInfo> files = capturer_->Capture(r);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 3.0);  // the silent rank costs its deadline (1.5 s), not more
  ASSERT_EQ(files.size(), 5u);

  const st::StacksFile good = Read(0);
  EXPECT_EQ(good.error, "");
  EXPECT_EQ(good.host, "node-a");
  EXPECT_EQ(good.pid, getpid());
  EXPECT_EQ(good.capture_time_ns, 5);
  EXPECT_NE(good.process_state, "");
  ASSERT_EQ(good.threads.size(), 1u);
  std::vector<std::string> names;
  for (uint32_t i : good.threads[0].frames) names.push_back(good.frames[i].function);
  EXPECT_EQ(names, (std::vector<std::string>{"StandInLeaf", "train_step", "stand_in::Outer(double)"}));
  EXPECT_EQ(good.frames[good.threads[0].frames[1]].line, 88);

  EXPECT_EQ(Read(1).error, "no answer in 1.5 s");
  EXPECT_NE(Read(2).error.find("bad reply"), std::string::npos) << Read(2).error;
  EXPECT_NE(Read(3).error.find("over the"), std::string::npos) << Read(3).error;
  EXPECT_EQ(Read(4).error, "bad reply: its file descriptor is not a memfd");
  const auto outcomes = capturer_->Outcomes();
  EXPECT_EQ(outcomes.at("written"), 1u);
  EXPECT_EQ(outcomes.at("no_answer"), 1u);
  EXPECT_EQ(outcomes.at("bad_reply"), 3u);
  const auto families = StackCaptureCollector(capturer_.get()).Collect();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "xtimer_stack_captures_total");
  ASSERT_EQ(families[0].metric.size(), 3u);  // by outcome name
  EXPECT_EQ(families[0].metric[0].label.at(0).value, "bad_reply");
  EXPECT_EQ(families[0].metric[0].counter.value, 3);

  // The daemon still serves: a rank chosen alone answers again at once.
  StandIn(5, Mode::kGood);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 6; }, 5000));
  r.ranks = {5};
  const auto again = capturer_->Capture(r);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].outcome, "written");
  EXPECT_EQ(again[0].path, root_ + "/out/job/00005-00008.stacks");
  EXPECT_EQ(again[0].threads, 1);
}

// DumpStack with real curl and with the gRPC client; its refusals.
TEST_F(StackCaptureTest, DumpStackOverCurlAndGrpc) {
  StandIn(3, Mode::kGood);
  StandIn(6, Mode::kSilent);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 2; }, 5000));
  const int port = StartControl();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/HostingService/DumpStack";
  std::string out;
  // curl from $PATH (RunCapture execs a path).
  ASSERT_EQ(testing::RunCapture({"/bin/sh", "-c", "exec curl \"$@\"", "curl", "-sS", "-H", "Content-Type: application/json", "-d",
                                 R"({"dump_path": "out", "ranks": [3], "jobs": ["job"]})", url},
                                "", &out),
            0)
      << out;
  EXPECT_NE(out.find("\"outcome\":\"written\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"message\":\"1 of 1 ranks' stacks written in " + root_ + "/out/"),
            std::string::npos)
      << out;
  EXPECT_EQ(Read(3).threads.size(), 1u);

  // gRPC: all ranks; the silent one is named with its reason.
  auto stub = HostingService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  DumpStackRequest req;
  req.set_dump_path(root_ + "/grpc");
  req.set_timeout_s(0.5);
  DumpStackResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status status = stub->DumpStack(&ctx, req, &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(resp.files_size(), 2);
  EXPECT_EQ(resp.node(), "node-a");
  EXPECT_NE(resp.message().find("1 of 2 ranks' stacks written"), std::string::npos);
  EXPECT_NE(resp.message().find("rank 6: no answer in 0.5 s"), std::string::npos) << resp.message();

  // xtimer stacks --hosts: this node and one that does not answer (partial: exit 3), merged.
  const std::string cli_out = dir_ + "/cli";
  const int dead = testing::FreePort();
  const int rc = testing::RunCapture(
      {testing::RunfilesPath("cli/xtimer"), "stacks", "--hosts",
       "127.0.0.1:" + std::to_string(port) + ",127.0.0.1:" + std::to_string(dead), "--ranks", "3",
       "--path", "cli", "-o", cli_out},
      "", &out);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("rank 3 (1) in StandInLeaf <- train_step (train.py:88) <- "
                     "stand_in::Outer"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("127.0.0.1:" + std::to_string(dead) + ": "), std::string::npos) << out;
  EXPECT_EQ(testing::ReadFile(cli_out + "/nodes/0-node-a/job/00003-00008.stacks"),
            testing::ReadFile(root_ + "/cli/job/00003-00008.stacks"));
  EXPECT_NE(testing::ReadFile(cli_out + "/stacks.svg").find("StandInLeaf"), std::string::npos);

  // Refusals: outside the root, a bad timeout, no match.
  const std::pair<std::string, std::string> bad[] = {
      {R"({"dump_path": "/etc"})", "outside the dump root"},
      {R"({"dump_path": "x", "timeout_s": 31})", "timeout_s: must be in [0, 30]"},
      {R"({"dump_path": "x", "jobs": ["nope"]})", "no registered process matches jobs 'nope'"},
  };
  for (const auto& b : bad) {
    ASSERT_EQ(testing::RunCapture({"/bin/sh", "-c", "exec curl \"$@\"", "curl", "-sS", "-d",
                                   b.first, url},
                                  "", &out),
              0)
        << out;
    EXPECT_NE(out.find(b.second), std::string::npos) << out;
  }
}

// A process whose rank is not known has stacks too, named by its pid where a rank would be: the
// file pid-PID.stacks (rank and world size -1), DumpStack's answer, and `xtimer stacks --hosts`,
// which names it node-a:pid-PID beside the ranks, never as a number.
TEST_F(StackCaptureTest, ProcessWithoutRankIsNamedByItsPid) {
  StandIn(-1, Mode::kGood);
  StandIn(2, Mode::kGood);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 2; }, 5000));
  const int port = StartControl();
  const std::string pid = std::to_string(getpid());
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/HostingService/DumpStack";
  std::string out;
  ASSERT_EQ(testing::RunCapture({"/bin/sh", "-c", "exec curl \"$@\"", "curl", "-sS", "-d",
                                 R"({"dump_path": "out", "with_content": true})", url},
                                "", &out),
            0)
      << out;
  EXPECT_NE(out.find("\"path\":\"" + root_ + "/out/job/pid-" + pid + ".stacks\""),
            std::string::npos) << out;
  EXPECT_NE(out.find("2 of 2 ranks' stacks written"), std::string::npos) << out;
  st::StacksFile f;
  std::string error;
  ASSERT_TRUE(st::ParseStacksJson(testing::ReadFile(root_ + "/out/job/pid-" + pid + ".stacks"),
                                  &f, &error)) << error;
  EXPECT_FALSE(st::HasRank(f));
  EXPECT_EQ(f.rank, -1);
  EXPECT_EQ(f.pid, getpid());
  ASSERT_EQ(f.threads.size(), 1u);
  EXPECT_EQ(f.frames[f.threads[0].frames[0]].function, "StandInLeaf");

  const std::string cli_out = dir_ + "/cli";
  const int rc = testing::RunCapture(
      {testing::RunfilesPath("cli/xtimer"), "stacks", "--hosts",
       "127.0.0.1:" + std::to_string(port), "--path", "cli", "-o", cli_out},
      "", &out);
  EXPECT_EQ(rc, 3) << out;  // partial: 7 ranks of the world of 8 have no file
  EXPECT_NE(out.find("xtimer stacks: 1 ranks of a world of 8 and 1 process without a rank"),
            std::string::npos) << out;
  EXPECT_NE(out.find("rank 2 and process node-a:pid-" + pid +
                     " (2) in StandInLeaf <- train_step (train.py:88)"),
            std::string::npos) << out;
  EXPECT_EQ(testing::ReadFile(cli_out + "/nodes/0-node-a/job/pid-" + pid + ".stacks"),
            testing::ReadFile(root_ + "/cli/job/pid-" + pid + ".stacks"));
  EXPECT_NE(testing::ReadFile(cli_out + "/stacks.folded")
                .find("[rank 2 and process node-a:pid-" + pid + "] 2"),
            std::string::npos) << testing::ReadFile(cli_out + "/stacks.folded");
}

// A rank that answers after its deadline, while the next request is pending: that capture says
// "no answer"; the late reply is dropped and does not spoil the next capture.
TEST_F(StackCaptureTest, LateReplyIsDroppedAndTheNextCaptureWorks) {
  StandIn(2, Mode::kSlow);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 1; }, 5000));
  StackDumpRequest r;
  r.dir = root_ + "/slow";
  r.timeout_ms = 300;
  auto files = capturer_->Capture(r);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].outcome, "no_answer");
  r.timeout_ms = 5000;
  files = capturer_->Capture(r);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].outcome, "written") << files[0].error;
  EXPECT_EQ(files[0].error, "");
}

TEST_F(StackCaptureTest, PendingRequestsPerConnectionAreBounded) {
  StandIn(0, Mode::kSilent);
  ASSERT_TRUE(testing::WaitFor([&] { return server_->registered() == 1; }, 5000));
  const uint64_t id = aggregator_->TakeSnapshot(0, false).processes.at(0).id;
  std::atomic<int> refused{0}, answered{0};
  for (size_t i = 0; i < kMaxPendingStackRequests + 3; ++i) {
    server_->AskStacks(id, 200, [&](StackAnswer a) {
      if (a.outcome == "refused") ++refused;
      ++answered;
      if (a.memfd >= 0) close(a.memfd);
    });
  }
  ASSERT_TRUE(testing::WaitFor([&] { return answered == int(kMaxPendingStackRequests) + 3; }, 5000));
  EXPECT_EQ(refused, 3);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
