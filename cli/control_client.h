// What the commands that talk to xtimerd's control port share (`xtimer dump`, `xtimer analyze
// --hosts`, `xtimer stacks --hosts`): the host list, the channel, asking every node at once and
// the explanation of a failed call.
#ifndef XTIMER_CLI_CONTROL_CLIENT_H_
#define XTIMER_CLI_CONTROL_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/command_line.h"
#include "util/split.h"

namespace xtimer {
namespace cli {

// The gRPC targets of --hosts (comma lists) and --hosts-file (one host[:port] per line, '#'
// starts a comment): a host without a port gets $XTIMER_CONTROL_PORT or 18888 (IPv6 addresses
// are bracketed); none given: 127.0.0.1. Returns false with *error when the file cannot be read,
// when --hosts or the file names no host (never the local daemon in their place), or a port is
// not a number from 1 to 65535.
bool ControlTargets(const std::vector<std::string>& hosts, const std::string& hosts_file,
                    std::vector<std::string>* targets, std::string* error);

// Adds --hosts LIST (repeatable) and --hosts-file F to `cl`, with their help. `where` is the
// default when neither is given, for the help ("" when the command needs one of them).
void AddHostsFlags(std::vector<std::string>* hosts, std::string* hosts_file, const char* where,
                   CommandLine* cl);

// A channel to a node's control port that accepts answers of up to `max_receive_bytes` (gRPC's
// default is 4 MB; HangCheck with arrivals and DumpStack with file contents can be larger).
constexpr int kMaxControlAnswerBytes = 64 << 20;
std::shared_ptr<grpc::Channel> ControlChannel(const std::string& target,
                                              int max_receive_bytes = kMaxControlAnswerBytes);

// `now + seconds` as a call deadline.
std::chrono::system_clock::time_point DeadlineIn(double seconds);

// Calls `call(i)` for i in [0, n) at once, one thread each, and returns when all have: every
// node is asked in parallel, so a slow node costs its own deadline only.
void OnEveryNode(size_t n, const std::function<void(size_t)>& call);

// What a failed call means for the user; gRPC's own words follow in parentheses.
std::string ExplainRpcError(const grpc::Status& st, const std::string& target);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_CONTROL_CLIENT_H_
