// The control service end to end inside one process: a real ControlServer on a free port, driven
// over HTTP/1.1 (raw sockets, as curl does) and gRPC (the generated stub), dumping synthetic
// processes fed straight into the Aggregator. Every documented error is in one table.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "daemon/base/test_util.h"
#include "daemon/control/control_handler.h"
#include "daemon/control/control_json.h"
#include "daemon/control/control_server.h"
#include "daemon/diagnosis/diagnosis.h"
#include "daemon/diagnosis/hang_check.h"
#include "daemon/dumps/dump_writer.h"
#include "daemon/model/aggregator.h"
#include "proto/hosting.grpc.pb.h"
#include "timeline/timeline_io.h"
#include "util/clock.h"

namespace xtimer {
namespace daemon {
namespace {

std::string HttpPost(int port, const std::string& path, const std::string& body, int* status,
                     const std::string& method = "POST") {
  *status = 0;
  const int fd = testing::ConnectLoopback(port);
  if (fd < 0) return "";
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "Content-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body;
  size_t off = 0;
  while (off < req.size()) {
    ssize_t n = send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  if (resp.compare(0, 9, "HTTP/1.1 ") != 0) return "";
  *status = atoi(resp.c_str() + 9);
  size_t b = resp.find("\r\n\r\n");
  return b == std::string::npos ? "" : resp.substr(b + 4);
}

int64_t NowS() { return RealtimeNs() / 1000000000; }

class ControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = testing::MakeTempDir("ctl");
    std::string error;
    ASSERT_TRUE(PrepareDumpRoot(tmp_ + "/root", &root_, &error)) << error;
    aggregator_ = std::make_unique<Aggregator>(AggregatorOptions(), RealtimeNs());
    dumps_ = std::make_unique<DumpManager>(aggregator_.get(), root_, "testnode", RealtimeNs);
    diagnosis_ = std::make_unique<LiveDiagnosis>(aggregator_.get(), DiagnosisOptions(),
                                                 RealtimeNs);
    ControlOptions o;
    o.node = "testnode";
    o.start_ns = RealtimeNs();
    o.now_ns = RealtimeNs;
    o.diagnosis = diagnosis_.get();
    handler_ = std::make_unique<ControlHandler>(aggregator_.get(), dumps_.get(), o);
    server_ = std::make_unique<ControlServer>(handler_.get());
    port_ = server_->Start("127.0.0.1", 0, &error);
    ASSERT_GT(port_, 0) << error;
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = HostingService::NewStub(channel_);
  }
  void TearDown() override {
    server_.reset();
    handler_.reset();
    diagnosis_.reset();
    dumps_.reset();
    aggregator_.reset();
    testing::RemoveTree(tmp_);
  }

  ProcessId AddRank(int rank, int world, const std::string& job = "job1") {
    format::Identity id;
    id.job = job;
    id.host = "h";
    id.rank = rank;
    id.local_rank = rank;
    id.world_size = world;
    return aggregator_->AddProcess(1000 + rank, id);
  }

  // n records launched at t0, t0+1ms, ...: matmul, allreduce, memcpy in turn.
  void Feed(ProcessId id, int n, int64_t t0_ns) {
    std::vector<format::RecordSlot> v;
    for (int i = 0; i < n; ++i) {
      const format::Operation ops[] = {format::Operation::kGemmEx, format::Operation::kAllReduce,
                                       format::Operation::kMemcpyHtoD};
      format::RecordSlot s = testing::MakeOp(ops[i % 3], format::DType::kBF16, 1000);
      s.op.cpu_launch_ns = t0_ns + int64_t{i} * 1000000;
      s.op.gpu_start_ns = s.op.cpu_launch_ns + 100;
      s.op.seq = static_cast<uint64_t>(i);
      if (i % 3 == 1) {
        s.op.comm_id = 77;
        s.op.comm_size = 2;
        s.op.count = 16;
        s.op.bytes = 32;
      } else if (i % 3 == 0) {
        s.op.m = s.op.n = s.op.k = 64;
      } else {
        s.op.bytes = 4096;
      }
      v.push_back(s);
    }
    aggregator_->Ingest(id, v.data(), v.size(), RealtimeNs());
  }

  grpc::Status GrpcDump(const DumpKernelTraceRequest& req, DumpKernelTraceResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return stub_->DumpKernelTrace(&ctx, req, resp);
  }

  static uint64_t CountEvents(const std::string& path, std::string* error = nullptr) {
    timeline::ReadResult r = timeline::ReadTimeline(path, [](const timeline::EventRecord&) {});
    if (error) *error = r.error;
    return r.ok ? r.events : ~uint64_t{0};
  }

  std::string tmp_, root_;
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<DumpManager> dumps_;
  std::unique_ptr<LiveDiagnosis> diagnosis_;
  std::unique_ptr<ControlHandler> handler_;
  std::unique_ptr<ControlServer> server_;
  int port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<HostingService::Stub> stub_;
};

struct BadCase {
  const char* name;
  std::string body;   // JSON; "@ROOT" is replaced with the dump root
  int http;           // expected HTTP status
  const char* field;  // the error message must contain this
};

TEST_F(ControlTest, EveryDocumentedErrorOverHttpAndGrpc) {
  // A symlink inside the root that leads outside, and a plain file.
  ASSERT_EQ(symlink("/tmp", (root_ + "/escape").c_str()), 0);
  ASSERT_EQ(mkdir((root_ + "/ok").c_str(), 0755), 0);
  { FILE* f = fopen((root_ + "/afile").c_str(), "w"); ASSERT_TRUE(f); fclose(f); }
  const std::string now = std::to_string(NowS());
  const std::string ms = std::to_string(NowS() * 1000);
  const std::string past = std::to_string(NowS() - 3600);
  const std::vector<BadCase> cases = {
      {"malformed JSON", R"({"dump_path":"@ROOT/x", "dump_count": )", 400, "bad request body"},
      {"not an object", R"([1, 2])", 400, "bad request body"},
      {"trailing garbage", R"({"dump_path":"@ROOT/x","dump_count":1} x)", 400, "bad request body"},
      {"unknown field", R"({"dump_path":"@ROOT/x","dump_cnt":5})", 400, "dump_cnt"},
      {"bad type: count", R"({"dump_path":"@ROOT/x","dump_count":"many"})", 400, "dump_count"},
      {"bad type: path", R"({"dump_path":5,"dump_count":1})", 400, "dump_path"},
      {"bad type: ranks", R"({"dump_path":"@ROOT/x","dump_count":1,"ranks":["zero"]})", 400, "ranks"},
      {"int32 overflow", R"({"dump_path":"@ROOT/x","dump_count":1,"dump_kernel_type":99999999999})",
       400, "dump_kernel_type"},
      {"fractional count", R"({"dump_path":"@ROOT/x","dump_count":1.5})", 400, "dump_count"},
      {"negative count", R"({"dump_path":"@ROOT/x","dump_count":-1})", 400, "dump_count"},
      {"count too large", R"({"dump_path":"@ROOT/x","dump_count":1000001})", 400, "dump_count"},
      {"history too large", R"({"dump_path":"@ROOT/x","history":10000001})", 400, "history"},
      {"negative history", R"({"dump_path":"@ROOT/x","history":-5})", 400, "history"},
      {"negative duration", R"({"dump_path":"@ROOT/x","duration_s":-1})", 400, "duration_s"},
      {"duration too long", R"({"dump_path":"@ROOT/x","duration_s":3601})", 400, "duration_s"},
      {"nothing to dump", R"({"dump_path":"@ROOT/x"})", 400, "dump_count"},
      {"kernel type 8", R"({"dump_path":"@ROOT/x","dump_count":1,"dump_kernel_type":8})", 400,
       "dump_kernel_type"},
      {"kernel type -1", R"({"dump_path":"@ROOT/x","dump_count":1,"dump_kernel_type":-1})", 400,
       "dump_kernel_type"},
      {"dump_time in ms", R"({"dump_path":"@ROOT/x","dump_count":1,"dump_time":)" + ms + "}", 400,
       "dump_time"},
      {"dump_time negative", R"({"dump_path":"@ROOT/x","dump_count":1,"dump_time":-1})", 400,
       "dump_time"},
      {"dump_time in the past", R"({"dump_path":"@ROOT/x","dump_count":1,"dump_time":)" + past +
                                    "}", 400, "history"},
      {"timeout_s too long", R"({"dump_path":"@ROOT/x","dump_count":1,"timeout_s":601})", 400,
       "timeout_s"},
      {"idle_timeout_s negative", R"({"dump_path":"@ROOT/x","dump_count":1,"idle_timeout_s":-1})",
       400, "idle_timeout_s"},
      {"negative rank", R"({"dump_path":"@ROOT/x","dump_count":1,"ranks":[0,-1]})", 400, "ranks"},
      {"empty job", R"({"dump_path":"@ROOT/x","dump_count":1,"jobs":[""]})", 400, "jobs"},
      {"no dump_path", R"({"dump_count":1,"dump_time":)" + now + "}", 400, "dump_path"},
      {"outside the root", R"({"dump_path":"/etc/xtimer","dump_count":1})", 400, "dump_path"},
      {"the seed's path", R"({"dump_path":"/root/output","dump_count":10000,"dump_time":)" + now +
                              R"(,"dump_kernel_type":7})", 400, "outside the dump root"},
      {"dot-dot", R"({"dump_path":"@ROOT/ok/../../x","dump_count":1})", 400, "dump_path"},
      {"symlink out", R"({"dump_path":"@ROOT/escape/x","dump_count":1})", 400, "dump_path"},
      {"through a file", R"({"dump_path":"@ROOT/afile/x","dump_count":1})", 400, "dump_path"},
      // Issue 36: a user dumped into crash-0 and planted a crash.json there naming another job.
      {"a crash folder", R"({"dump_path":"crash-0","dump_count":1})", 400, "daemon's own"},
      {"in a crash folder", R"({"dump_path":"@ROOT/crash-1-2/x","dump_count":1})", 400,
       "daemon's own"},
      {"the op logs", R"({"dump_path":"oplog/job","dump_count":1})", 400, "daemon's own"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string body = c.body;
    for (size_t at; (at = body.find("@ROOT")) != std::string::npos;) body.replace(at, 5, root_);
    int status = 0;
    std::string out = HttpPost(port_, "/HostingService/DumpKernelTrace", body, &status);
    EXPECT_EQ(status, c.http) << out;
    EXPECT_NE(out.find(c.field), std::string::npos) << out;
    EXPECT_NE(out.find("\"code\":\"INVALID_ARGUMENT\""), std::string::npos) << out;
    // The same request over gRPC, where the JSON can be expressed as a message at all.
    DumpKernelTraceRequest req;
    if (google::protobuf::util::JsonStringToMessage(body, &req).ok()) {
      DumpKernelTraceResponse resp;
      grpc::Status gs = GrpcDump(req, &resp);
      EXPECT_EQ(gs.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << gs.error_message();
      EXPECT_NE(gs.error_message().find(c.field), std::string::npos) << gs.error_message();
    }
  }
  // Transport-level errors.
  int status = 0;
  std::string out = HttpPost(port_, "/HostingService/Nope", "{}", &status);
  EXPECT_EQ(status, 404);
  EXPECT_NE(out.find("DumpKernelTrace"), std::string::npos) << out;
  out = HttpPost(port_, "/metrics", "", &status, "GET");
  EXPECT_EQ(status, 404);
  out = HttpPost(port_, "/HostingService/Status", "", &status, "DELETE");
  EXPECT_EQ(status, 405);
  std::string big(kMaxRequestBytes + 1, ' ');
  out = HttpPost(port_, "/HostingService/DumpKernelTrace", big, &status);
  EXPECT_EQ(status, 413) << out;
  DumpKernelTraceRequest req;
  req.set_dump_path(std::string(kMaxRequestBytes + 10, 'a'));
  DumpKernelTraceResponse resp;
  EXPECT_EQ(GrpcDump(req, &resp).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  req.set_dump_path(std::string(kMaxPathBytes + 1, 'a'));
  req.set_dump_count(1);
  grpc::Status gs = GrpcDump(req, &resp);
  EXPECT_EQ(gs.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(gs.error_message().find("dump_path"), std::string::npos);
}

// A dump whose jobs or ranks match no registered process fails with NOT_FOUND and the jobs and
// ranks the daemon has (a job name's typo used to answer "written" with no file), over both
// transports; it neither writes a folder nor replaces the last dump.
TEST_F(ControlTest, DumpMatchingNothingFailsWithTheJobsPresent) {
  int status = 0;
  std::string out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                             R"({"dump_path":"none","history":10,"jobs":["job1"]})", &status);
  EXPECT_EQ(status, 404) << out;
  EXPECT_NE(out.find("no process is registered with this daemon"), std::string::npos) << out;
  // Without a filter, an empty daemon answers with no file (a state, not a mistake).
  out = HttpPost(port_, "/HostingService/DumpKernelTrace", R"({"dump_path":"none","history":10})",
                 &status);
  EXPECT_EQ(status, 200) << out;
  EXPECT_NE(out.find("no registered process matches: nothing to dump"), std::string::npos) << out;
  AddRank(0, 4);
  AddRank(1, 4);
  AddRank(3, 4);
  AddRank(0, 1, "otherjob");
  out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                 R"({"dump_path":"typo","history":10,"jobs":["jbo1"]})", &status);
  EXPECT_EQ(status, 404) << out;
  EXPECT_NE(out.find("\"code\":\"NOT_FOUND\""), std::string::npos) << out;
  EXPECT_NE(out.find("no registered process matches jobs 'jbo1'; this daemon has job(s) "
                     "'job1' (ranks 0-1 3), 'otherjob' (ranks 0)"),
            std::string::npos)
      << out;
  DumpKernelTraceRequest req;
  req.set_dump_path("typo");
  req.set_history(10);
  req.add_jobs("otherjob");
  req.add_ranks(2);
  DumpKernelTraceResponse resp;
  grpc::Status gs = GrpcDump(req, &resp);
  EXPECT_EQ(gs.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(gs.error_message().find("matches jobs 'otherjob' and ranks 2; this daemon has"),
            std::string::npos)
      << gs.error_message();
  struct stat st;
  EXPECT_NE(stat((root_ + "/typo").c_str(), &st), 0);
  EXPECT_EQ(dumps_->Current().dir, root_ + "/none");  // the last dump is still the empty one
  req.clear_ranks();
  ASSERT_TRUE(GrpcDump(req, &resp).ok());
  EXPECT_EQ(resp.files_size(), 1);
}

TEST_F(ControlTest, HistoryDumpWritesEveryRankAndFilters) {
  auto r0 = AddRank(0, 2), r1 = AddRank(1, 2);
  AddRank(0, 1, "otherjob");
  const int64_t t0 = RealtimeNs() - 10000000000;
  Feed(r0, 90, t0);
  Feed(r1, 90, t0);
  int status = 0;
  std::string out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                             R"({"dump_path":"h","history":1000,"jobs":["job1"]})", &status);
  ASSERT_EQ(status, 200) << out;
  EXPECT_NE(out.find("\"state\":\"written\""), std::string::npos) << out;
  std::string error;
  EXPECT_EQ(CountEvents(root_ + "/h/job1/00000-00002.timeline", &error), 90u) << error;
  EXPECT_EQ(CountEvents(root_ + "/h/job1/00001-00002.timeline", &error), 90u) << error;
  struct stat st;
  EXPECT_NE(stat((root_ + "/h/otherjob").c_str(), &st), 0);  // filtered out by jobs

  // Only NCCL (bit 1), last 10, rank 1, over gRPC.
  DumpKernelTraceRequest req;
  req.set_dump_path(root_ + "/g");
  req.set_history(10);
  req.set_dump_kernel_type(2);
  req.add_ranks(1);
  DumpKernelTraceResponse resp;
  grpc::Status gs = GrpcDump(req, &resp);
  ASSERT_TRUE(gs.ok()) << gs.error_message();
  ASSERT_EQ(resp.files_size(), 1);
  EXPECT_EQ(resp.files(0).path(), root_ + "/g/job1/00001-00002.timeline");
  EXPECT_EQ(resp.files(0).events(), 10u);
  std::vector<timeline::EventRecord> events;
  timeline::ReadResult rr = timeline::ReadTimeline(
      resp.files(0).path(), [&](const timeline::EventRecord& e) { events.push_back(e); });
  ASSERT_TRUE(rr.ok && rr.complete) << rr.error;
  ASSERT_EQ(events.size(), 10u);
  for (const auto& e : events) {
    EXPECT_EQ(e.op, static_cast<uint16_t>(format::Operation::kAllReduce));
    EXPECT_EQ(e.comm_id, 77u);
  }
  EXPECT_EQ(events.back().seq, 88u);  // the newest allreduce of the 90 records
  EXPECT_EQ(rr.metadata.rank, 1);
  EXPECT_EQ(rr.metadata.world_size, 2);
  EXPECT_EQ(rr.metadata.job, "job1");
  EXPECT_EQ(rr.metadata.node, "testnode");
  EXPECT_EQ(rr.metadata.kinds, 2u);
}

// A crashed rank ends its part of a count capture at once, a live rank that stops issuing ops
// ends after the idle timeout; a count capture of a job that has ended is written in the reply,
// which names the ranks that fell short; the crashed rank's history stays dumpable.
TEST_F(ControlTest, ExitedAndIdleRanksEndACountCapture) {
  auto r0 = AddRank(0, 2), r1 = AddRank(1, 2);
  Feed(r1, 30, RealtimeNs() - 5000000000);
  aggregator_->MarkExited(r1, ExitCause{format::ExitKind::kSignal, 11}, RealtimeNs());
  int status = 0;
  std::string out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                             R"({"dump_path":"c","dump_count":100,"idle_timeout_s":1})", &status);
  ASSERT_EQ(status, 200) << out;
  EXPECT_NE(out.find("\"state\":\"capturing\""), std::string::npos) << out;
  Feed(r0, 60, RealtimeNs() + 1000000);
  const int64_t start = MonotonicNs();
  ASSERT_TRUE(dumps_->WaitIdle(20000));
  EXPECT_LT(MonotonicNs() - start, int64_t{15} * 1000000000);  // idle 1 s, not the 600 s deadline
  DumpStatus d = dumps_->Current();
  EXPECT_EQ(dumps_->captures_held(), 0u);  // written: the copies went, the status stays
  ASSERT_EQ(d.files.size(), 2u);
  EXPECT_EQ(d.files[0].rank, 0);
  EXPECT_EQ(d.files[0].captured, 60u);
  EXPECT_EQ(d.files[0].ended, "idle");
  EXPECT_FALSE(d.files[0].fell_short);
  EXPECT_EQ(d.files[1].captured, 0u);
  EXPECT_EQ(d.files[1].ended, "exited");
  EXPECT_TRUE(d.files[1].fell_short);
  StatusResponse sr;
  ASSERT_TRUE(handler_->Status(StatusRequest(), &sr).ok());
  ASSERT_EQ(sr.last_dump().files_size(), 2);
  EXPECT_TRUE(sr.last_dump().files(1).fell_short());
  EXPECT_EQ(sr.last_dump().files(1).ended(), "exited");
  ASSERT_EQ(sr.processes_size(), 2);
  EXPECT_FALSE(sr.processes(0).exited());
  EXPECT_FALSE(sr.processes(0).has_exit_cause());  // absent while it runs
  EXPECT_TRUE(sr.processes(1).exited());
  EXPECT_FALSE(sr.processes(1).up());
  EXPECT_EQ(sr.processes(1).exit_cause(), ExitCauseCode::signal);
  EXPECT_EQ(sr.processes(1).exit_code(), 11);

  // The whole job has ended: the capture is written at once, and the reply says who fell short.
  aggregator_->MarkExited(r0, ExitCause{format::ExitKind::kExited, 0}, RealtimeNs());
  DumpKernelTraceRequest req;
  req.set_dump_path("ended");
  req.set_dump_count(100);
  DumpKernelTraceResponse resp;
  ASSERT_TRUE(GrpcDump(req, &resp).ok());
  EXPECT_EQ(resp.state(), "written");
  EXPECT_NE(resp.message().find("rank 0 (0 of 100 events, exited), rank 1 (0 of 100 events, "
                                "exited)"),
            std::string::npos)
      << resp.message();
  ASSERT_EQ(resp.files_size(), 2);
  EXPECT_TRUE(resp.files(0).fell_short());

  // A history dump after the crash holds the crashed rank's file.
  out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                 R"({"dump_path":"after","history":1000,"ranks":[1]})", &status);
  ASSERT_EQ(status, 200) << out;
  std::string error;
  EXPECT_EQ(CountEvents(root_ + "/after/job1/00001-00002.timeline", &error), 30u) << error;
}

TEST_F(ControlTest, CaptureFromDumpTimeBusyAndReset) {
  auto r0 = AddRank(0, 2), r1 = AddRank(1, 2);
  const int64_t t = NowS() + 1;
  // Records from before dump_time must not be captured.
  Feed(r0, 30, RealtimeNs() - 5000000000);
  int status = 0;
  std::string out = HttpPost(
      port_, "/HostingService/DumpKernelTrace",
      R"({"dump_path":")" + root_ + R"(/c","dump_count":20,"dump_time":)" + std::to_string(t) +
          R"(,"dump_kernel_type":7})",
      &status);
  ASSERT_EQ(status, 200) << out;
  EXPECT_NE(out.find("\"state\":\"capturing\""), std::string::npos) << out;
  EXPECT_NE(out.find(root_ + "/c/job1/00001-00002.timeline"), std::string::npos) << out;

  // A second dump is refused while the first captures, over both transports.
  out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                 R"({"dump_path":"other","history":5})", &status);
  EXPECT_EQ(status, 409) << out;
  EXPECT_NE(out.find("reset"), std::string::npos) << out;
  DumpKernelTraceRequest req;
  req.set_dump_path("other");
  req.set_history(5);
  DumpKernelTraceResponse resp;
  EXPECT_EQ(GrpcDump(req, &resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  Feed(r0, 25, t * 1000000000);
  Feed(r1, 25, t * 1000000000);
  ASSERT_TRUE(dumps_->WaitIdle(10000));
  std::string error;
  EXPECT_EQ(CountEvents(root_ + "/c/job1/00000-00002.timeline", &error), 20u) << error;
  EXPECT_EQ(CountEvents(root_ + "/c/job1/00001-00002.timeline", &error), 20u) << error;
  EXPECT_EQ(dumps_->Current().state, "written");

  // A capture that cannot finish (no records come), cancelled by reset.
  out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                 R"({"dump_path":"d","dump_count":5})", &status);
  ASSERT_EQ(status, 200) << out;
  Feed(r0, 3, RealtimeNs() + 1000000);
  out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                 R"({"dump_path":"e","history":4,"reset":true})", &status);
  ASSERT_EQ(status, 200) << out;
  EXPECT_EQ(CountEvents(root_ + "/d/job1/00000-00002.timeline", &error), 3u) << error;
  EXPECT_EQ(CountEvents(root_ + "/e/job1/00000-00002.timeline", &error), 4u) << error;

  // Duration mode ends by itself.
  out = HttpPost(port_, "/HostingService/DumpKernelTrace",
                 R"({"dump_path":"f","duration_s":0.2})", &status);
  ASSERT_EQ(status, 200) << out;
  Feed(r1, 10, RealtimeNs() + 1000000);
  ASSERT_TRUE(dumps_->WaitIdle(5000));
  EXPECT_EQ(CountEvents(root_ + "/f/job1/00001-00002.timeline", &error), 10u) << error;
}

TEST_F(ControlTest, StatusOverBothTransports) {
  AddRank(3, 4, "jobS");
  int status = 0;
  std::string out = HttpPost(port_, "/HostingService/Status", "", &status, "GET");
  ASSERT_EQ(status, 200) << out;
  EXPECT_NE(out.find("\"jobS\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"dump_root\":\"" + root_ + "\""), std::string::npos) << out;
  StatusRequest req;
  StatusResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub_->Status(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.processes_size(), 1);
  EXPECT_EQ(resp.processes(0).rank(), 3);
  EXPECT_EQ(resp.ranks_size(), 1);
  EXPECT_EQ(resp.record_version(), format::kRecordVersion);
}

TEST_F(ControlTest, StatusDescribesTheOldestCollectiveInFlight) {
  auto id = AddRank(0, 2, "jobI");
  const int64_t now = RealtimeNs();
  format::RecordSlot name;
  memset(&name, 0, sizeof(name));
  name.name.version = format::kRecordVersion;
  name.name.type = static_cast<uint8_t>(format::RecordType::kName);
  name.name.flags = format::kNameLast;
  name.name.name_id = 3;
  name.name.length = 8;
  memcpy(name.name.text, "gemm_big", 8);
  aggregator_->Ingest(id, &name, 1, now);
  ProcessStatus st;
  st.identity.job = "jobI";
  st.identity.host = "h";
  st.identity.rank = 0;
  st.identity.world_size = 2;
  st.inflight_valid = true;
  format::InflightRow row{0x77, 5, 4, now - 3 * 1000000000LL};
  row.device = 1;
  row.oldest.state = format::InflightState::kQueued;
  row.oldest.op = static_cast<uint16_t>(format::Operation::kReduce);
  row.oldest.dtype = static_cast<uint8_t>(format::DType::kBF16);
  row.oldest.seq = 5;
  row.oldest.count = 64;
  row.oldest.root = 1;
  row.oldest.comm_size = 2;
  row.oldest.launch_ns = now - 2 * 1000000000LL;
  row.oldest.blocker.op = static_cast<uint16_t>(format::Operation::kKernelLaunch);
  row.oldest.blocker.kind = static_cast<uint8_t>(format::OpKind::kKernel);
  row.oldest.blocker.name_id = 3;
  row.oldest.blocker.launch_ns = now - 3 * 1000000000LL;
  st.inflight.push_back(row);
  aggregator_->UpdateStatus(id, st);
  StatusResponse resp;
  ASSERT_TRUE(handler_->Status(StatusRequest(), &resp).ok());
  ASSERT_EQ(resp.processes_size(), 1);
  ASSERT_EQ(resp.processes(0).comms_size(), 1);
  const CommProgress& c = resp.processes(0).comms(0);
  EXPECT_EQ(c.device(), 1);
  EXPECT_EQ(c.inflight().state(), CollectiveArrival::queued);
  EXPECT_EQ(c.inflight().seq(), 5u);
  EXPECT_EQ(c.inflight().op(), OpCode::Reduce);
  EXPECT_EQ(c.inflight().dtype(), DTypeCode::bf16);
  EXPECT_EQ(c.inflight().count(), 64u);
  EXPECT_EQ(c.inflight().root(), 1);
  EXPECT_EQ(c.inflight().comm_size(), 2);
  EXPECT_GE(c.inflight().issue_age_s(), 2);
  EXPECT_EQ(c.blocked_by().rfind("kernel gemm_big launched ", 0), 0u) << c.blocked_by();
  EXPECT_FALSE(c.blocked_by_communication()) << "behind a kernel: its own work";
  EXPECT_EQ(c.last_completed_age_s(), -1);  // nothing completed on it yet
  EXPECT_EQ(c.comm_id(), "0x0000000000000077");
  std::string json, error;
  ASSERT_TRUE(MessageToJson(resp, &json, &error)) << error;
  EXPECT_NE(json.find("\"comm_id\":\"0x0000000000000077\""), std::string::npos) << json;
}

// The one-port pitfall: many concurrent gRPC and HTTP calls must all complete promptly.
// Rank 0 waits in AllReduce seq 1000 for 400 s (past --hang-timeout: no cadence is known);
// rank 1 never issued it.
TEST_F(ControlTest, HangCheckOverBothTransports) {
  const ProcessId ids[2] = {AddRank(0, 2), AddRank(1, 2)};
  const int64_t now = RealtimeNs();
  for (int r = 0; r < 2; ++r) {
    Feed(ids[r], 30, now - int64_t{500} * 1000000000);
    ProcessStatus st;
    st.identity.job = "job1";
    st.identity.host = "h";
    st.identity.rank = r;
    st.identity.local_rank = r;
    st.identity.world_size = 2;
    st.heartbeat_ns = now;
    st.inflight_valid = true;
    format::InflightRow row{77, 999, 28, 0};
    if (r == 0) {
      row.last_issued_seq = 1000;
      row.oldest_launch_ns = now - int64_t{400} * 1000000000;
      row.oldest.state = format::InflightState::kStarted;
      row.oldest.op = static_cast<uint16_t>(format::Operation::kAllReduce);
      row.oldest.seq = 1000;
      row.oldest.count = 16;
      row.oldest.comm_size = 2;
      row.oldest.root = -1;
      row.oldest.launch_ns = row.oldest_launch_ns;
      row.oldest.gpu_start_ns = row.oldest_launch_ns + 1000;
    }
    st.inflight.push_back(row);
    aggregator_->UpdateStatus(ids[r], st);
  }
  diagnosis_->RunOnce();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  HangCheckResponse resp;
  ASSERT_TRUE(stub_->HangCheck(&ctx, HangCheckRequest(), &resp).ok());
  EXPECT_EQ(resp.node(), "testnode");
  ASSERT_EQ(resp.ranks_size(), 2);
  EXPECT_EQ(resp.ranks(0).comms(0).comm_id(), "0x000000000000004d");  // 77
  EXPECT_EQ(resp.ranks(0).comms(0).inflight().seq(), 1000u);
  EXPECT_EQ(resp.ranks(0).comms(0).inflight().state(), CollectiveArrival::started);
  ASSERT_EQ(resp.verdicts_size(), 1) << resp.DebugString();
  EXPECT_EQ(resp.verdicts(0).kind(), VerdictKind::never_issued) << resp.DebugString();
  ASSERT_EQ(resp.verdicts(0).culprit_ranks_size(), 1);
  EXPECT_EQ(resp.verdicts(0).culprit_ranks(0), 1);

  // curl -s -X POST http://127.0.0.1:PORT/HostingService/HangCheck -d '{}'
  int status = 0;
  std::string out = HttpPost(port_, "/HostingService/HangCheck", "{}", &status);
  EXPECT_EQ(status, 200) << out;
  EXPECT_NE(out.find("\"kind\":\"never_issued\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"culprit_ranks\":[1]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"seq\":\"1000\""), std::string::npos) << out;  // uint64 as a string
  // The state is an enum on the wire, its JSON spelled as the metrics' label.
  EXPECT_NE(out.find("\"state\":\"started\""), std::string::npos) << out;
  // Communicator ids in hex text, as in metrics and traces (they were decimal strings).
  EXPECT_NE(out.find("\"comm_id\":\"0x000000000000004d\""), std::string::npos) << out;
  EXPECT_EQ(out.find("\"comm_id\":\"77\""), std::string::npos) << out;
  EXPECT_EQ(resp.verdicts(0).comm_id(), "0x000000000000004d");
  out = HttpPost(port_, "/HostingService/HangCheck", "{\"job\": \"nope\"}", &status);
  EXPECT_EQ(status, 200) << out;
  EXPECT_EQ(out.find("never_issued"), std::string::npos) << out;
  out = HttpPost(port_, "/HostingService/HangCheck", "{\"bogus\": 1}", &status);
  EXPECT_EQ(status, 400) << out;
}

// Access (docs/security.md "Peers and identity"): a caller that is not privileged sees, dumps and
// HangChecks only the jobs its uid registered; a remote one none without --control-allow-remote.
TEST_F(ControlTest, AUserSeesDumpsAndHangChecksOnlyItsOwnJobs) {
  const ProcessId root_job = AddRank(0, 1);  // job1, this test's uid (root)
  format::Identity id;
  id.job = "userjob";
  id.host = "h";
  id.rank = 0;
  id.local_rank = 0;
  id.world_size = 1;
  const ProcessId user_job = aggregator_->AddProcess(Registrant{2000, 1000, "t"}, id, nullptr);
  ASSERT_NE(user_job, 0u);
  const int64_t now = RealtimeNs();
  Feed(root_job, 10, now - int64_t{2} * 1000000000);
  Feed(user_job, 10, now - int64_t{2} * 1000000000);
  diagnosis_->RunOnce();
  Caller user;
  user.privileged = false;
  user.uid = 1000;

  StatusResponse st;
  ASSERT_TRUE(handler_->Status(StatusRequest(), &st, user).ok());
  ASSERT_EQ(st.processes_size(), 1);
  EXPECT_EQ(st.processes(0).job(), "userjob");

  DumpKernelTraceRequest req;
  req.set_dump_path("mine");
  req.set_history(10);
  req.add_jobs("job1");
  DumpKernelTraceResponse resp;
  CallStatus cs = handler_->DumpKernelTrace(req, &resp, user);
  EXPECT_EQ(cs.code, Code::kPermissionDenied);
  EXPECT_NE(cs.message.find("a dump of job 'job1': uid 1000 may use only the jobs its own"),
            std::string::npos)
      << cs.message;
  req.clear_jobs();
  // The dump folder goes to uid 1000 (GiveJobDirTo): a sandbox's user namespace may not map it.
  const std::string probe = tmp_ + "/probe";
  ASSERT_EQ(mkdir(probe.c_str(), 0755), 0);
  if (chown(probe.c_str(), 1000, 1000) != 0) {
    fprintf(stderr, "skipping the user's own dump: chown to uid 1000: %s\n", strerror(errno));
  } else {
    cs = handler_->DumpKernelTrace(req, &resp, user);
    ASSERT_TRUE(cs.ok()) << cs.message;
    ASSERT_EQ(resp.files_size(), 1);
    EXPECT_EQ(resp.files(0).job(), "userjob");
    struct stat st;
    ASSERT_EQ(stat((root_ + "/mine/userjob").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 1000u);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  req.set_reset(true);
  EXPECT_EQ(handler_->DumpKernelTrace(req, &resp, user).code, Code::kPermissionDenied);

  HangCheckRequest hc;
  hc.set_job("job1");
  HangCheckResponse hr;
  EXPECT_EQ(handler_->HangCheck(hc, &hr, user).code, Code::kPermissionDenied);
  hc.clear_job();
  ASSERT_TRUE(handler_->HangCheck(hc, &hr, user).ok());
  ASSERT_EQ(hr.ranks_size(), 1) << hr.DebugString();
  EXPECT_EQ(hr.ranks(0).job(), "userjob");

  Caller remote;
  remote.privileged = false;
  remote.remote = true;
  ASSERT_TRUE(handler_->Status(StatusRequest(), &st, remote).ok());
  st.Clear();
  ASSERT_TRUE(handler_->Status(StatusRequest(), &st, remote).ok());
  EXPECT_EQ(st.processes_size(), 0);
  cs = handler_->HangCheck(HangCheckRequest(), &hr, remote);
  EXPECT_EQ(cs.code, Code::kPermissionDenied);
  EXPECT_NE(cs.message.find("--control-allow-remote"), std::string::npos) << cs.message;
  std::string json;
  EXPECT_EQ(HandleJson(handler_.get(), "HangCheck", "{}", &json, remote), 403);
  EXPECT_NE(json.find("PERMISSION_DENIED"), std::string::npos) << json;

  // This test runs as root or as the daemon's user: privileged over the real port.
  int status = 0;
  const std::string out = HttpPost(port_, "/HostingService/Status", "{}", &status);
  EXPECT_EQ(status, 200) << out;
  EXPECT_NE(out.find("\"job1\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"userjob\""), std::string::npos) << out;
}

TEST_F(ControlTest, AJobsDumpFolderIsItsUsersAlone) {
  const std::string dir = tmp_ + "/jobdir";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  std::string error;
  ASSERT_TRUE(GiveJobDirTo(fd, dir, geteuid(), &error)) << error;
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // The daemon's folder that holds files (another job's, whose label maps to the same name) is
  // not given away.
  ASSERT_EQ(close(creat((dir + "/00000-00001.timeline").c_str(), 0600)), 0);
  EXPECT_FALSE(GiveJobDirTo(fd, dir, 4242, &error));
  EXPECT_NE(error.find("already holds files of another user's job"), std::string::npos) << error;
  unlink((dir + "/00000-00001.timeline").c_str());
  // A folder of another user is never given to a third one (it may hold the other's files).
  if (fchown(fd, 4242, 4242) != 0) {
    fprintf(stderr, "skipping the other-owner case: chown to 4242: %s\n", strerror(errno));
  } else {
    EXPECT_FALSE(GiveJobDirTo(fd, dir, 4343, &error));
    EXPECT_NE(error.find(dir + " belongs to uid 4242, not the job's uid 4343"), std::string::npos)
        << error;
    EXPECT_TRUE(GiveJobDirTo(fd, dir, 4242, &error)) << error;
  }
  close(fd);
}

// 8 clients at once, half gRPC (a new channel per call), half HTTP: every call completes. The
// test is about completion, not speed: under ThreadSanitizer on a loaded 2-core machine one call
// took over 5 s (170 of 200 within a 5 s deadline), so each call gets 60 s, and each failure is
// reported with its transport and status.
TEST_F(ControlTest, ConcurrentGrpcAndHttpCallsAllComplete) {
  std::atomic<int> ok{0};
  std::mutex failures_mu;
  std::vector<std::string> failures;
  auto failed = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(failures_mu);
    failures.push_back(why);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        if (t % 2 == 0) {
          auto ch = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                        grpc::InsecureChannelCredentials());
          auto stub = HostingService::NewStub(ch);
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
          StatusRequest req;
          StatusResponse resp;
          const grpc::Status st = stub->Status(&ctx, req, &resp);
          if (st.ok()) {
            ++ok;
          } else {
            failed("gRPC: " + std::to_string(st.error_code()) + " " + st.error_message());
          }
        } else {
          int status = 0;
          const std::string body = HttpPost(port_, "/HostingService/Status", "{}", &status);
          if (status == 200) {
            ++ok;
          } else {
            failed("HTTP " + std::to_string(status) + ": " + body.substr(0, 200));
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 200);
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

// Randomized requests through the same JSON entry the fuzzer drives: every answer is one of the
// documented statuses with a JSON body, and nothing escapes the dump root.
TEST_F(ControlTest, RandomizedJsonRequests) {
  AddRank(0, 1);
  std::mt19937 rng(12345);
  const std::vector<std::string> keys = {"dump_path", "dump_count", "dump_time", "dump_kernel_type",
                                         "reset", "duration_s", "history", "ranks", "jobs", "bogus"};
  const std::vector<std::string> values = {
      "0", "1", "-1", "7", "8", "1e400", "\"x\"", "\"../x\"", "\"/etc\"", "\"" + root_ + "/r\"",
      "true", "null", "[]", "[0,1]", "[\"a\"]", "{}", "2147483648", "9223372036854775808", "0.5",
      "\"\\u0000\"", "1000001", "3600", std::to_string(NowS())};
  const std::vector<std::string> junk = {"", "{", "}", ",", ":", "\"", "\\", "\xff", "[", "]"};
  for (int i = 0; i < 3000; ++i) {
    std::string body = "{";
    const int n = static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) {
      body += (k ? "," : "") + ("\"" + keys[rng() % keys.size()] + "\":") +
              values[rng() % values.size()];
    }
    body += "}";
    if (rng() % 4 == 0) body.insert(rng() % (body.size() + 1), junk[rng() % junk.size()]);
    std::string json;
    const int status = HandleJson(handler_.get(), rng() % 8 ? "DumpKernelTrace" : "Status", body, &json);
    ASSERT_TRUE(status == 200 || status == 400 || status == 409) << status << " " << body;
    ASSERT_FALSE(json.empty());
    ASSERT_EQ(json[0], '{') << json;
    if (status == 409 || (status == 200 && json.find("capturing") != std::string::npos)) {
      DumpStatus st;
      DumpRequest reset;
      reset.dir = root_;
      reset.history = 1;
      reset.reset = true;
      std::string error;
      dumps_->Start(reset, &st, &error);  // cancel, so the next request is not refused
    }
  }
  // Nothing was written outside the root.
  struct stat st;
  EXPECT_NE(stat((tmp_ + "/x").c_str(), &st), 0);
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
