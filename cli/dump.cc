// `xtimer dump`: one DumpKernelTrace request to every node's xtimerd (gRPC, in parallel), all with
// the same dump_time a few seconds ahead, so that every rank of every node captures the same
// window; then (with --wait, the default for captures) polls each node's Status until its files
// are written and reports where every node wrote.
#include <errno.h>
#include <grpcpp/grpcpp.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/control_client.h"
#include "proto/hosting.grpc.pb.h"
#include "util/clock.h"
#include "util/default_ports.h"
#include "util/version.h"

namespace xtimer {
namespace cli {
namespace {

constexpr char kCommand[] = "dump";  // for BadArg (cli/args.h)

const char kUsage[] =
    "usage: xtimer dump --path DIR [what] [where] [options]\n"
    "\n"
    "Asks xtimerd on every node (its control port, gRPC) to write one timeline file per rank,\n"
    "{rank:05d}-{world:05d}.timeline, into DIR/<job>/ on that node. DIR must resolve inside each\n"
    "daemon's dump root (xtimerd --dump-root, XTIMER_DUMP_ROOT; docs/security.md); a\n"
    "relative DIR is taken inside the root. Every node gets the same dump_time, DELAY seconds\n"
    "ahead, so all ranks capture the same window. See docs/control.md.\n"
    "\n"
    "Say what to dump with at least one of --count, --duration and --history; --kinds, --ranks\n"
    "and --job narrow it. Without --hosts or --hosts-file the local daemon is asked.\n";

const char kAfter[] =
    "A rank's capture also ends when its process exits, or after 30 s without an op (a hang).\n"
    "\n"
    "Exit status: 0 when every node wrote its files (or accepted, with --no-wait), 1 when any\n"
    "node failed (a node whose ranks match none of --job/--ranks fails too, naming the jobs\n"
    "and ranks it has; without them, a node with no process writes 0 files), 2 on a usage\n"
    "error, 3 when every file was written but some rank got fewer than half of --count events\n"
    "(the ranks are named; e.g. they exited or hung).\n"
    "\n"
    "example:\n"
    "  xtimer dump --hosts node0:18888,node1:18888 --path /mnt/shared/dumps/run1 --count 10000\n"
    "  xtimer dump --history 5000 --path hang1 --kinds nccl\n";

double NowS() { return RealtimeNs() * 1e-9; }

struct Node {
  std::string target;
  bool ok = false;
  std::string error;
  DumpKernelTraceResponse response;
  DumpState final_state;
  bool waited = false;
};

// --kinds: matmul,nccl,host (or a mask 0-7) into the request's kernel-type mask.
CommandLine::Setter Kinds(DumpKernelTraceRequest* req) {
  return [req](const std::string& s, std::string* expected) {
    *expected = "kinds from matmul, nccl, host, all (or a mask 0-7)";
    int64_t n = 0;
    int mask = 0;
    if (ParseInteger(s, 0, 7, &n)) {
      mask = static_cast<int>(n);
    } else {
      for (const std::string& k : SplitList(s, ',')) {
        if (k == "matmul") {
          mask |= 1;
        } else if (k == "nccl" || k == "collective" || k == "comm") {
          mask |= 2;
        } else if (k == "host" || k == "memory" || k == "mem") {
          mask |= 4;
        } else if (k == "all") {
          mask |= 7;
        } else {
          return false;
        }
      }
    }
    req->set_dump_kernel_type(mask);
    return true;
  };
}

// --ranks 0,1,4-7 into the request.
CommandLine::Setter Ranks(DumpKernelTraceRequest* req) {
  return [req](const std::string& s, std::string* expected) {
    *expected = "a list like 0,1,4-7";
    for (const std::string& r : SplitList(s, ',')) {
      const size_t dash = r.find('-');
      int64_t lo = 0, hi = 0;
      if (dash == std::string::npos) {
        if (!ParseInteger(r, 0, 16777215, &lo)) return false;
        hi = lo;
      } else if (!ParseInteger(r.substr(0, dash), 0, 16777215, &lo) ||
                 !ParseInteger(r.substr(dash + 1), 0, 16777215, &hi) || hi < lo ||
                 hi - lo > 65535) {
        return false;
      }
      for (int64_t x = lo; x <= hi; ++x) req->add_ranks(static_cast<int>(x));
    }
    return true;
  };
}

struct DumpArgs {
  DumpKernelTraceRequest req;
  std::vector<std::string> hosts;
  std::string hosts_file;
  double delay = 3, timeout = 60;
  int64_t at = -1;
  bool wait = true, have_path = false;
};

// The command line into *d; -1 when the command should run, else the exit status.
int ParseDumpArgs(int argc, char** argv, DumpArgs* d) {
  DumpKernelTraceRequest& req = d->req;
  std::string path;
  int64_t count = 0, history = 0;
  double duration = 0;
  bool reset = false, no_wait = false;
  std::vector<std::string> jobs;
  CommandLine cl;
  cl.Text("--path", &path, "the dump's folder, inside each daemon's dump root (required)")
      .Placeholder("DIR");
  constexpr int64_t kMaxCount = 1000000, kMaxHistory = 10000000;
  constexpr double kMaxDurationS = 3600;
  cl.Integer("--count", 1, kMaxCount, &count,
             ("events per rank to capture from dump_time on (at most " +
              std::to_string(kMaxCount) + ")").c_str());
  cl.Custom("--duration", "S", Seconds(0, kMaxDurationS, true, &duration),
            ("capture S seconds from dump_time on (at most " + FormatNumber(kMaxDurationS) +
             "; with --count: whichever ends first)").c_str());
  cl.Integer("--history", 1, kMaxHistory, &history,
             ("include the last N records each daemon already keeps per rank (instant, works "
              "while the job hangs; at most " + std::to_string(kMaxHistory) + ")").c_str());
  cl.Custom("--kinds", "LIST", Kinds(&req),
            "matmul,nccl,host (comma list) or a mask 0-7 (default all)");
  cl.Custom("--ranks", "LIST", Ranks(&req), "only these global ranks: 0,1,4-7");
  cl.List("--job,--jobs", &jobs, "only this job (repeatable, or a comma list)")
      .Placeholder("NAME");
  const std::string local = "127.0.0.1:$XTIMER_CONTROL_PORT or :" +
                            std::to_string(kDefaultControlPort);
  AddHostsFlags(&d->hosts, &d->hosts_file, local.c_str(), &cl);
  cl.Custom("--delay", "S", Seconds(0, 3600, false, &d->delay),
            ("dump_time = now + S seconds " + DefaultIs(d->delay)).c_str());
  cl.Integer("--at", 0, int64_t{1} << 40, &d->at, "dump_time = T (Unix seconds) instead")
      .Placeholder("T");
  cl.Custom("--timeout", "S", Seconds(0, 1e9, true, &d->timeout),
            ("per-request deadline; a count capture ends S seconds after dump_time at the latest "
             "(each daemon writes what it has); the longest wait past a capture's end " +
             DefaultIs(d->timeout)).c_str());
  cl.Switch("--reset", &reset, "cancel a dump already running on a node (its files are written)");
  cl.Switch("--no-wait", &no_wait, "return once every node accepted (captures finish later)");
  const int rc = ParseArgs(kCommand, {kUsage, kAfter}, cl, argc, argv);
  if (rc >= 0) return rc;
  d->have_path = !path.empty();
  req.set_dump_path(path);
  req.set_dump_count(count);
  req.set_history(history);
  req.set_duration_s(duration);
  req.set_reset(reset);
  d->wait = !no_wait;
  for (const std::string& list : jobs) {
    for (const std::string& j : SplitList(list, ',')) req.add_jobs(j);
  }
  if (!d->have_path) return BadArg(kCommand, "--path is required");
  if (d->req.dump_count() == 0 && d->req.duration_s() == 0 && d->req.history() == 0) {
    return BadArg(kCommand, "say what to dump: --count, --duration and/or --history");
  }
  std::vector<std::string> targets;
  std::string error;
  if (!ControlTargets(d->hosts, d->hosts_file, &targets, &error)) return BadArg(kCommand, error);
  d->hosts.swap(targets);
  return -1;
}

// Polls the node's Status until its dump `n->response` is written (or replaced, or late).
void WaitForDump(HostingService::Stub* stub, double timeout, Node* n) {
  const double give_up = n->response.deadline() + std::min(timeout, 60.0);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    grpc::ClientContext sctx;
    sctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    StatusResponse sr;
    grpc::Status ss = stub->Status(&sctx, StatusRequest(), &sr);
    if (ss.ok() && sr.last_dump().dump_id() != n->response.dump_id()) {
      n->ok = false;
      n->error = "the dump was replaced by " + sr.last_dump().dump_id() + " (reset)";
      return;
    }
    if (ss.ok() && sr.last_dump().state() != "capturing") {
      n->final_state = sr.last_dump();
      n->waited = true;
      return;
    }
    if (NowS() > give_up) {
      n->ok = false;
      n->error = "capture not finished by its deadline";
      return;
    }
  }
}

// The request to one node, and (with --wait) the wait for its files.
void DumpOnNode(const DumpArgs& d, Node* n) {
  auto stub = HostingService::NewStub(ControlChannel(n->target));
  grpc::ClientContext ctx;
  ctx.set_deadline(DeadlineIn(d.timeout));
  grpc::Status st = stub->DumpKernelTrace(&ctx, d.req, &n->response);
  if (!st.ok()) {
    n->error = ExplainRpcError(st, n->target);
    return;
  }
  if (n->response.files().empty() && (d.req.jobs_size() > 0 || d.req.ranks_size() > 0)) {
    n->error = "no file: " + n->response.message();  // a daemon from before NOT_FOUND
    return;
  }
  n->ok = true;
  if (d.wait && n->response.state() == "capturing") WaitForDump(stub.get(), d.timeout, n);
}

// Prints what one node wrote; counts its failures and collects its ranks that fell short.
void ReportNode(const Node& n, int* failed, std::vector<std::string>* short_ranks) {
  if (!n.ok) {
    ++*failed;
    printf("%s: FAILED: %s\n", n.target.c_str(), n.error.c_str());
    return;
  }
  const auto& files = n.waited ? n.final_state.files() : n.response.files();
  const std::string state = n.waited ? n.final_state.state() : n.response.state();
  printf("%s (%s): %s, %d file(s) in %s\n", n.target.c_str(), n.response.node().c_str(),
         state.c_str(), files.size(), n.response.dump_dir().c_str());
  for (const DumpFile& f : files) {
    if (!f.error().empty()) {
      ++*failed;
      printf("  %s: FAILED: %s\n", f.path().c_str(), f.error().c_str());
    } else if (state == "capturing") {
      printf("  %s (rank %d, job %s)\n", f.path().c_str(), f.rank(), f.job().c_str());
    } else {
      const std::string ended = f.ended().empty() ? "" : ", capture ended: " + f.ended();
      printf("  %s (rank %d, job %s): %llu events%s\n", f.path().c_str(), f.rank(),
             f.job().c_str(), static_cast<unsigned long long>(f.events()), ended.c_str());
      if (f.fell_short()) {
        short_ranks->push_back("rank " + std::to_string(f.rank()) + " of job " + f.job() +
                               " on " + n.target + ": " + std::to_string(f.captured()) + " of " +
                               std::to_string(f.requested()) + " events (" + f.ended() + ")");
      }
    }
  }
}

// The summary and the exit status over every node.
int ReportNodes(const std::vector<Node>& nodes, int64_t count) {
  int failed = 0;
  std::vector<std::string> short_ranks;
  for (const Node& n : nodes) ReportNode(n, &failed, &short_ranks);
  if (failed) printf("%d failure(s)\n", failed);
  if (!short_ranks.empty()) {
    fprintf(stderr,
            "xtimer dump: partial: %zu rank(s) got fewer than half of --count %lld events:\n",
            short_ranks.size(), static_cast<long long>(count));
    for (const std::string& r : short_ranks) fprintf(stderr, "  %s\n", r.c_str());
    fprintf(stderr, "(exited: the process ended; idle: no op for 30 s, e.g. a hang; deadline: "
                    "--timeout passed. For ops that already ran use --history N.)\n");
  }
  if (failed) return 1;
  return short_ranks.empty() ? 0 : 3;
}

}  // namespace

int DumpMain(int argc, char** argv) {
  DumpArgs d;
  const int rc = ParseDumpArgs(argc, argv, &d);
  if (rc >= 0) return rc;
  DumpKernelTraceRequest& req = d.req;
  const bool capture = req.dump_count() > 0 || req.duration_s() > 0;
  if (req.dump_count() > 0 && req.duration_s() == 0) req.set_timeout_s(std::min(d.timeout, 600.0));
  const double start = NowS();
  req.set_dump_time(d.at >= 0 ? d.at : static_cast<int64_t>(std::ceil(start + d.delay)));
  if (capture) {
    printf("dump_time %lld (in %.1f s) on %zu node(s)\n", static_cast<long long>(req.dump_time()),
           req.dump_time() - start, d.hosts.size());
    fflush(stdout);
  }
  std::vector<Node> nodes(d.hosts.size());
  for (size_t i = 0; i < d.hosts.size(); ++i) nodes[i].target = d.hosts[i];
  OnEveryNode(d.hosts.size(), [&](size_t i) { DumpOnNode(d, &nodes[i]); });
  return ReportNodes(nodes, req.dump_count());
}

}  // namespace cli
}  // namespace xtimer
