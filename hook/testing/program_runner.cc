#include "hook/testing/program_runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "hook/testing/preloaded_exec.h"

namespace xtimer {
namespace hook {
namespace testing {

std::string TmpDir() {
  static const std::string dir = [] {
    const char* t = getenv("XTIMER_TEST_TMP");
    std::string tmpl = std::string(t != nullptr ? t : "/tmp") + "/xth-XXXXXX";
    char* d = mkdtemp(&tmpl[0]);
    return std::string(d != nullptr ? d : "/tmp");
  }();
  return dir;
}

pid_t SpawnProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& out_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    for (const std::string& e : env) putenv(strdup(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int ReapProgram(pid_t pid, const std::string& out_path, std::string* out) {
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  unlink(out_path.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> Runner::Hooked(const std::vector<std::string>& program_and_args) const {
  std::vector<std::string> argv = {gpusim_run, self, "--exec-preloaded"};
  argv.insert(argv.end(), program_and_args.begin(), program_and_args.end());
  return argv;
}

bool Runner::RunHooked(const std::vector<std::string>& program_and_args, const char* tag,
                       const std::vector<std::string>& extra_env, FakeDaemon::Ring* ring,
                       std::string* out) const {
  std::string sock = TmpDir() + "/" + tag + ".sock";
  std::string error;
  auto daemon = FakeDaemon::Start(sock, &error);
  EXPECT_NE(daemon, nullptr) << error;
  if (daemon == nullptr) return false;
  // The programs' tests check every op: the budget at 100% times them all (an extra_env entry
  // later in the list overrides it).
  std::vector<std::string> env = {"XT_HOOK_LIB=" + hook_lib, "XTIMER_DAEMON_SOCKET=" + sock,
                                  "XTIMER_OVERHEAD_BUDGET=100%"};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::string out_path = TmpDir() + "/" + tag + ".out";
  int rc = ReapProgram(SpawnProgram(Hooked(program_and_args), env, out_path), out_path, out);
  EXPECT_EQ(rc, 0) << *out;
  if (rc != 0) return false;
  daemon->ReadAll();
  auto rings = daemon->rings();
  EXPECT_EQ(rings.size(), 1u) << *out;
  if (rings.size() != 1) return false;
  *ring = rings[0];
  EXPECT_EQ(ring->dropped, 0u);
  EXPECT_EQ(ring->invalid, 0u);
  return true;
}

std::vector<format::OpRecord> OpsOfKind(const FakeDaemon::Ring& ring, format::OpKind kind) {
  std::vector<format::OpRecord> out;
  for (const auto& r : ring.records) {
    if (r.header.type == static_cast<uint8_t>(format::RecordType::kOp) &&
        r.op.kind == static_cast<uint8_t>(kind)) {
      out.push_back(r.op);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const format::OpRecord& a,
                                              const format::OpRecord& b) {
    return a.cpu_launch_ns < b.cpu_launch_ns;
  });
  return out;
}

std::string NameOf(const FakeDaemon::Ring& ring, uint32_t name_id, format::RecordType type) {
  std::string text;
  for (const auto& r : ring.records) {
    if (r.header.type != static_cast<uint8_t>(type) ||
        r.name.name_id != name_id) {
      continue;
    }
    text.append(r.name.text, r.name.length);
    if (r.name.flags & format::kNameLast) return text;
  }
  return "";
}

int StartProgramTest(int* argc, char** argv, int more, const char* usage,
                     std::vector<std::string>* paths) {
  const int exec_status = ExecPreloadedIfAsked(*argc, argv);
  if (exec_status >= 0) return exec_status;
  ::testing::InitGoogleTest(argc, argv);
  if (*argc != 3 + more) {
    fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  paths->clear();
  paths->push_back(AbsolutePath(argv[1], false));
  paths->push_back(AbsolutePath("/proc/self/exe"));
  for (int i = 2; i < *argc; ++i) paths->push_back(AbsolutePath(argv[i]));
  return -1;
}

}  // namespace testing
}  // namespace hook
}  // namespace xtimer
