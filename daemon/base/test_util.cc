#include "daemon/base/test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace xtimer {
namespace daemon {
namespace testing {

std::string MakeTempDir(const char* prefix) {
  const char* base = getenv("XTIMER_TEST_TMP");
  std::string tmpl = std::string(base != nullptr && *base ? base : "/tmp") + "/" + prefix +
                     ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

void RemoveTree(const std::string& dir) {
  if (dir.size() < 6) return;
  std::string out;
  RunCapture({"/bin/rm", "-rf", dir}, "", &out);
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string RunfilesPath(const std::string& relative) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr) {
    return std::string(srcdir) + "/" + (ws != nullptr ? ws : "xtimer") + "/" + relative;
  }
  return relative;
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!log.empty()) {
      int f = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (f >= 0) {
        dup2(f, 1);
        dup2(f, 2);
        close(f);
      }
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int WaitExit(pid_t pid, int timeout_ms) {
  for (int waited = 0;; waited += 10) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (r < 0) return -1;
    if (waited >= timeout_ms) return -1;
    usleep(10000);
  }
}

int RunCapture(const std::vector<std::string>& argv, const std::string& stdin_data,
               std::string* output) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  signal(SIGPIPE, SIG_IGN);
  size_t off = 0;
  while (off < stdin_data.size()) {
    ssize_t n = write(in[1], stdin_data.data() + off, stdin_data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(in[1]);
  output->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(out[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output->append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ConnectLoopback(int port, int rcvbuf) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string HttpGet(int port, const std::string& path, int* status) {
  *status = 0;
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string resp;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t sp = resp.find(' ');
  size_t body = resp.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return "";
  *status = atoi(resp.c_str() + sp + 1);
  return resp.substr(body + 4);
}

double Sample(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return NAN;
}

std::vector<std::string> Lines(const std::string& exposition, const std::string& name) {
  std::vector<std::string> out;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size(), name) == 0) out.push_back(line);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<Mapping> ResidentMappings(const std::string& smaps_path) {
  std::vector<Mapping> out;
  std::istringstream lines(ReadFile(smaps_path));
  for (std::string line; std::getline(lines, line);) {
    unsigned long start = 0, end = 0;
    char perms[8];
    unsigned long offset = 0, inode = 0;
    char dev[16];
    int name_at = 0;
    // "start-end perms offset dev inode [name]"; field lines ("Rss:   12 kB") do not match.
    if (sscanf(line.c_str(), "%lx-%lx %7s %lx %15s %lu %n", &start, &end, perms, &offset, dev,
               &inode, &name_at) == 6) {
      out.push_back({start, line.substr(static_cast<size_t>(name_at)), 0});
    } else if (!out.empty() && line.rfind("Rss:", 0) == 0) {
      out.back().rss_kb += atoll(line.c_str() + 4);
    }
  }
  return out;
}

format::RecordSlot MakeComm(uint64_t comm_id, int rank, int size) {
  format::RecordSlot s;
  memset(&s, 0, sizeof(s));
  s.comm.version = format::kRecordVersion;
  s.comm.type = static_cast<uint8_t>(format::RecordType::kComm);
  s.comm.comm_id = comm_id;
  s.comm.rank = rank;
  s.comm.size = size;
  return s;
}

format::RecordSlot MakeOp(format::Operation op, format::DType dtype, int64_t duration_ns) {
  format::RecordSlot s;
  memset(&s, 0, sizeof(s));
  s.op.version = format::kRecordVersion;
  s.op.type = static_cast<uint8_t>(format::RecordType::kOp);
  s.op.op = static_cast<uint16_t>(op);
  s.op.kind = format::KindOfOperation(s.op.op);
  s.op.dtype = static_cast<uint8_t>(dtype);
  s.op.duration_ns = duration_ns;
  s.op.batch = 1;
  s.op.peer = -1;
  s.op.root = -1;
  return s;
}

}  // namespace testing
}  // namespace daemon
}  // namespace xtimer
