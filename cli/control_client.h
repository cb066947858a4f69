// What the commands that talk to xtimerd's control port share (`xtimer dump`, `xtimer analyze
// --hosts`): the host list and the explanation of a failed call.
#ifndef XTIMER_CLI_CONTROL_CLIENT_H_
#define XTIMER_CLI_CONTROL_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

namespace xtimer {
namespace cli {

// `s` split at `sep`, parts trimmed, empty parts dropped.
std::vector<std::string> Split(const std::string& s, char sep);

// The gRPC targets of --hosts (comma lists) and --hosts-file (one host[:port] per line, '#'
// starts a comment): a host without a port gets $XTIMER_CONTROL_PORT or 18888 (IPv6 addresses
// are bracketed); none given: 127.0.0.1. Returns false with *error when the file cannot be read.
bool ControlTargets(const std::vector<std::string>& hosts, const std::string& hosts_file,
                    std::vector<std::string>* targets, std::string* error);

// What a failed call means for the user; gRPC's own words follow in parentheses.
std::string ExplainRpcError(const grpc::Status& st, const std::string& target);

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_CONTROL_CLIENT_H_
