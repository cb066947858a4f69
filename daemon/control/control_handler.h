// The control service's logic, independent of the transport: requests and answers are the
// messages of proto/hosting.proto, errors a code and a sentence. ControlServer
// (daemon/control/control_server.h) calls it for gRPC requests, and through the JSON front
// (daemon/control/control_json.h) for HTTP/1.1 JSON requests; tests and the fuzzer call either.
// Dump paths are resolved by the dump root's rules (daemon/dumps/dump_root.h).
//
// Adding a method: an rpc in proto/hosting.proto, a method here, its line in the table in
// control_json.cc (Methods()); the gRPC service in control_server.cc forwards one line too.
#ifndef XTIMER_DAEMON_CONTROL_HANDLER_H_
#define XTIMER_DAEMON_CONTROL_HANDLER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "daemon/diagnosis/diagnosis.h"
#include "daemon/dumps/dump_root.h"  // PrepareDumpRoot, for the handler's users
#include "daemon/dumps/dump_writer.h"
#include "daemon/dumps/stack_capture.h"
#include "daemon/model/aggregator.h"
#include "proto/hosting.pb.h"
#include "util/version.h"

namespace xtimer {
namespace daemon {

// gRPC's status code numbers (so that this library needs no gRPC).
enum class Code : int {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kPermissionDenied = 7,
  kFailedPrecondition = 9,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
};

struct CallStatus {
  Code code = Code::kOk;
  std::string message;
  bool ok() const { return code == Code::kOk; }
};

// Who calls (daemon/control/control_caller.h finds it for the transports). A privileged caller
// (root,
// the daemon's user, a remote one with --control-allow-remote) sees and dumps every job; any
// other sees only the jobs whose processes its uid registered (docs/security.md).
struct Caller {
  bool privileged = true;
  bool remote = false;  // its user cannot be known
  uint32_t uid = 0;
};

constexpr size_t kMaxRequestBytes = 64 * 1024;  // JSON body or protobuf message
constexpr size_t kMaxFilterEntries = 4096;      // ranks, jobs

struct ControlOptions {
  std::string version = kVersion;  // //:VERSION
  std::string node;             // host name
  int64_t start_ns = 0;         // daemon start (CLOCK_REALTIME)
  std::function<int64_t()> now_ns;  // CLOCK_REALTIME
  const LiveDiagnosis* diagnosis = nullptr;  // HangCheck's verdicts; null: HangCheck fails
  StackCapturer* stacks = nullptr;           // DumpStack's captures; null: DumpStack fails
};

class ControlHandler {
 public:
  ControlHandler(Aggregator* aggregator, DumpManager* dumps, ControlOptions options);

  // Each method answers `caller` with the jobs it may see only (Caller).
  CallStatus DumpKernelTrace(const DumpKernelTraceRequest& request,
                             DumpKernelTraceResponse* response, const Caller& caller = Caller());
  CallStatus Status(const StatusRequest& request, StatusResponse* response,
                    const Caller& caller = Caller());
  // The live diagnosis's current verdicts with their evidence, and every local rank's progress
  // (docs/control.md "HangCheck"), as of its latest pass (at most a second old).
  CallStatus HangCheck(const HangCheckRequest& request, HangCheckResponse* response,
                       const Caller& caller = Caller());

  // Captures the stacks of the chosen ranks into dump_path/<job>/ (docs/stacks.md "Capture from
  // the daemon"); returns when every file is written (about timeout_s at most). Access as dumps.
  CallStatus DumpStack(const DumpStackRequest& request, DumpStackResponse* response,
                       const Caller& caller = Caller());

  // Validation alone (the table-driven tests and the fuzzer use it too).
  CallStatus Validate(const DumpKernelTraceRequest& request, DumpRequest* out) const;

 private:
  Aggregator* aggregator_;
  DumpManager* dumps_;
  ControlOptions options_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_CONTROL_HANDLER_H_
