#include "cli/control_client.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "util/parallel_for.h"
#include "util/default_ports.h"

namespace xtimer {
namespace cli {
namespace {

std::string CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "invalid argument";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "busy";
    case grpc::StatusCode::NOT_FOUND:
      return "no match";
    case grpc::StatusCode::UNAVAILABLE:
      return "unavailable";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "timed out";
    case grpc::StatusCode::INTERNAL:
      return "failed";
    default:
      return "error " + std::to_string(static_cast<int>(c));
  }
}

}  // namespace

std::string ExplainRpcError(const grpc::Status& st, const std::string& target) {
  const std::string& m = st.error_message();
  auto has = [&m](const char* s) { return m.find(s) != std::string::npos; };
  std::string what;
  if (has("HTTP/2") || has("http1") || has("HTTP/1")) {
    what = target + " answered, but not with gRPC: is this the control port? xtimerd takes "
           "commands on --control-port (default 18888); its metrics port (--metrics-port, "
           "default 18889) serves plain HTTP";
  } else if (st.error_code() == grpc::StatusCode::UNAVAILABLE &&
             (has("failed to connect") || has("onnection refused"))) {
    what = "nothing accepts connections on " + target + ": is xtimerd running on that host with "
           "that --control-port? xtimer-launch starts one for a job; or start it with "
           "`xtimerd --control-port PORT` (and --control-address 0.0.0.0 to be reached from other "
           "hosts)";
  } else {
    return CodeName(st.error_code()) + ": " + m;
  }
  return what + " (gRPC: " + CodeName(st.error_code()) + ": " + m + ")";
}

namespace {

// "host:port" -> whether the port is a number from 1 to 65535.
bool ValidPort(const std::string& target) {
  const std::string port = target.substr(target.rfind(':') + 1);
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  const int n = std::atoi(port.c_str());
  return n >= 1 && n <= 65535;
}

// Appends the hosts of --hosts-file `path`; false with *error when it cannot be read or names
// none (an empty file must not fall back to the local daemon).
bool ReadHostsFile(const std::string& path, std::vector<std::string>* hosts, std::string* error) {
  std::ifstream f(path);
  std::string line;
  const size_t before = hosts->size();
  while (f && std::getline(f, line)) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    for (const std::string& h : SplitList(line, ' ')) hosts->push_back(h);
  }
  if (!f.eof()) {  // not opened, or a read failed (a directory)
    *error = "cannot read --hosts-file " + path;
    return false;
  }
  if (hosts->size() == before) {
    *error = "--hosts-file " + path + " names no host (one host[:port] per line)";
    return false;
  }
  return true;
}

}  // namespace

bool ControlTargets(const std::vector<std::string>& given, const std::string& hosts_file,
                    std::vector<std::string>* targets, std::string* error) {
  const char* env_port = std::getenv("XTIMER_CONTROL_PORT");
  const std::string default_port =
      env_port && *env_port ? env_port : std::to_string(kDefaultControlPort);
  std::vector<std::string> hosts;
  for (const std::string& g : given) {
    for (const std::string& h : SplitList(g, ',')) hosts.push_back(h);
  }
  if (!given.empty() && hosts.empty()) {
    *error = "--hosts names no host";
    return false;
  }
  if (!hosts_file.empty() && !ReadHostsFile(hosts_file, &hosts, error)) return false;
  if (hosts.empty()) hosts.push_back("127.0.0.1");
  for (std::string& h : hosts) {
    const bool bracketed = !h.empty() && h[0] == '[';
    const size_t colon = h.rfind(':');
    const bool has_port = bracketed ? h.find("]:") != std::string::npos
                                    : (colon != std::string::npos && h.find(':') == colon);
    if (!has_port)
      h = (h.find(':') != std::string::npos && !bracketed ? "[" + h + "]" : h) + ":" + default_port;
    if (!ValidPort(h)) {
      *error = "bad port in host " + h + ": expected a number from 1 to 65535";
      return false;
    }
  }
  *targets = std::move(hosts);
  return true;
}

void AddHostsFlags(std::vector<std::string>* hosts, std::string* hosts_file, const char* where,
                   CommandLine* cl) {
  const std::string port = std::to_string(kDefaultControlPort);
  const std::string hosts_help =
      "host:port,... of the nodes' xtimerd control ports (a host without :port gets "
      "$XTIMER_CONTROL_PORT or " + port + ")" + (*where ? std::string("; default ") + where : "");
  cl->List("--hosts", hosts, hosts_help.c_str()).Placeholder("LIST");
  cl->Text("--hosts-file", hosts_file, "one host[:port] per line ('#' starts a comment)")
      .Placeholder("FILE");
}

std::shared_ptr<grpc::Channel> ControlChannel(const std::string& target, int max_receive_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_receive_bytes);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

std::chrono::system_clock::time_point DeadlineIn(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

void OnEveryNode(size_t n, const std::function<void(size_t)>& call) {
  if (n > 0) ParallelFor(n, static_cast<int>(n), call);  // one thread a node: calls mostly wait
}

}  // namespace cli
}  // namespace xtimer
