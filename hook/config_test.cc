#include "hook/config.h"

#include <signal.h>
#include <unistd.h>

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "util/default_paths.h"

namespace xtimer {
namespace hook {
namespace {

std::map<std::string, std::string>* g_env;
std::string* g_warnings;

const char* FakeGetEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}
void FakeWarn(const char* message) { *g_warnings += std::string(message) + "\n"; }

Config Read(std::map<std::string, std::string> env, std::string* warnings = nullptr) {
  std::string w;
  g_env = &env;
  g_warnings = &w;
  Config c = ReadConfig(&FakeGetEnv, &FakeWarn);
  if (warnings != nullptr) *warnings = w;
  return c;
}

TEST(ConfigTest, Defaults) {
  Config c = Read({{"XTIMER_HOST", "h1"}});
  EXPECT_FALSE(c.disabled);
  // util/default_paths.h's rule: root's daemon, else this user's own run directory.
  EXPECT_EQ(c.socket_path, ClientRunDir(geteuid()) + "/xtimerd.sock");
  EXPECT_EQ(c.job, "default");
  EXPECT_EQ(c.host, "h1");
  EXPECT_EQ(c.pod, "h1");
  EXPECT_EQ(c.ring_capacity, 65536u);
  EXPECT_EQ(c.sample_rate, 1u);
  EXPECT_EQ(c.kernel_filter, "");
  EXPECT_EQ(c.rank, -1);
  EXPECT_EQ(c.local_rank, -1);
  EXPECT_EQ(c.world_size, -1);
}

TEST(ConfigTest, IdentityFallbacks) {
  Config c = Read({{"XTIMER_RUN_DIR", "/run/x"},
                   {"TORCHELASTIC_RUN_ID", "te"},
                   {"SLURM_JOB_ID", "77"},
                   {"POD_NAME", "pod-3"},
                   {"OMPI_COMM_WORLD_RANK", "5"},
                   {"SLURM_LOCALID", "1"},
                   {"PMI_SIZE", "8"}});
  EXPECT_EQ(c.socket_path, "/run/x/xtimerd.sock");
  EXPECT_EQ(c.job, "te");
  EXPECT_EQ(c.pod, "pod-3");
  EXPECT_EQ(c.rank, 5);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.world_size, 8);
  c = Read({{"XTIMER_JOB", "j"}, {"SLURM_JOB_ID", "77"}, {"RANK", "2"}, {"SLURM_PROCID", "9"},
            {"XTIMER_DAEMON_SOCKET", "/s.sock"}, {"XTIMER_POD", "p"}, {"POD_NAME", "q"}});
  EXPECT_EQ(c.job, "j");
  EXPECT_EQ(c.rank, 2);  // torchrun's RANK first
  EXPECT_EQ(c.socket_path, "/s.sock");
  EXPECT_EQ(c.pod, "p");
  // The job label comes from util/job_identity (its own test covers every source and the order).
  c = Read({{"SLURM_JOB_ID", "77"}, {"PMIX_NAMESPACE", "9"}});
  EXPECT_EQ(c.job, "slurm-77");
  c = Read({{"PMIX_NAMESPACE", "9"}, {"OMPI_COMM_WORLD_RANK", "1"}});
  EXPECT_EQ(c.job, "mpi-9");
  c = Read({{"XTIMER_JOB", "my run/2"}});
  EXPECT_EQ(c.job, "my_run_2");
}

TEST(ConfigTest, OverheadBudgetIsAPercentage) {
  std::string w;
  EXPECT_EQ(Read({}, &w).budget_ppm, 10000u);  // 1% by default
  EXPECT_EQ(Read({{"XTIMER_OVERHEAD_BUDGET", "100%"}}, &w).budget_ppm, kFullBudgetPpm);
  EXPECT_EQ(Read({{"XTIMER_OVERHEAD_BUDGET", "0.5"}}, &w).budget_ppm, 5000u);
  EXPECT_EQ(Read({{"XTIMER_OVERHEAD_BUDGET", "2%"}}, &w).budget_ppm, 20000u);
  EXPECT_EQ(w, "");
  for (const char* bad : {"0", "-1", "101%", "1%%", "lots", "", "1 %"}) {
    w.clear();
    EXPECT_EQ(Read({{"XTIMER_OVERHEAD_BUDGET", bad}}, &w).budget_ppm, 10000u) << bad;
    if (*bad != '\0') EXPECT_NE(w.find("XTIMER_OVERHEAD_BUDGET"), std::string::npos) << bad;
  }
}

TEST(ConfigTest, KnobsAndMalformedValues) {
  std::string w;
  Config c = Read({{"XTIMER_DISABLE", "1"},
                   {"XTIMER_RING_CAPACITY", "1024"},
                   {"XTIMER_SAMPLE_RATE", "10"},
                   {"XTIMER_KERNEL_FILTER", "gemm|attn"}},
                  &w);
  EXPECT_TRUE(c.disabled);
  EXPECT_EQ(c.ring_capacity, 1024u);
  EXPECT_EQ(c.sample_rate, 10u);
  EXPECT_EQ(c.kernel_filter, "gemm|attn");
  EXPECT_EQ(w, "");
  c = Read({{"XTIMER_DISABLE", "0"}, {"XTIMER_SAMPLE_RATE", "0"}, {"RANK", "x"},
            {"XTIMER_RING_CAPACITY", "lots"}},
           &w);
  EXPECT_FALSE(c.disabled);
  EXPECT_EQ(c.sample_rate, 1u);
  EXPECT_EQ(c.ring_capacity, 65536u);
  EXPECT_EQ(c.rank, -1);
  EXPECT_NE(w.find("XTIMER_SAMPLE_RATE=0"), std::string::npos);
  EXPECT_NE(w.find("XTIMER_RING_CAPACITY=lots"), std::string::npos);
  EXPECT_NE(w.find("RANK=x"), std::string::npos);
}

TEST(ConfigTest, KernelFilter) {
  Config c = Read({});
  EXPECT_TRUE(c.kernels);  // every kernel by default
  EXPECT_EQ(c.kernel_filter, "");
  for (const char* off : {"off", "0", ""}) {
    c = Read({{"XTIMER_KERNEL_FILTER", off}});
    EXPECT_FALSE(c.kernels) << off;
  }
  c = Read({{"XTIMER_KERNEL_FILTER", "gemm"}});
  EXPECT_TRUE(c.kernels);
  EXPECT_EQ(c.kernel_filter, "gemm");
}

TEST(ConfigTest, PythonTrace) {
  EXPECT_EQ(Read({}).python_trace, "default");
  EXPECT_FALSE(Read({}).python_trace_explicit);
  EXPECT_TRUE(Read({{"XTIMER_PY_TRACE", "default"}}).python_trace_explicit);
  for (const char* off : {"off", "0", ""}) {
    EXPECT_EQ(Read({{"XTIMER_PY_TRACE", off}}).python_trace, "") << off;
  }
  EXPECT_EQ(Read({{"XTIMER_PY_TRACE", "m:f,default"}}).python_trace, "m:f,default");
}

TEST(ConfigTest, OpLogRequest) {
  std::string w;
  EXPECT_EQ(Read({}, &w).op_log, format::OpLogRequest::kNone);
  EXPECT_EQ(Read({{"XTIMER_LOG", "jsonl"}}, &w).op_log, format::OpLogRequest::kJsonl);
  EXPECT_EQ(Read({{"XTIMER_LOG", "csv"}}, &w).op_log, format::OpLogRequest::kCsv);
  EXPECT_EQ(w, "");
  EXPECT_EQ(Read({{"XTIMER_LOG", "parquet"}}, &w).op_log, format::OpLogRequest::kNone);
  EXPECT_NE(w.find("XTIMER_LOG=parquet: use jsonl or csv"), std::string::npos);
}

TEST(ConfigTest, DaemonUidAndJobToken) {
  Config c = Read({});
  EXPECT_EQ(c.daemon_uid, -1);
  EXPECT_EQ(c.job_token, "");
  c = Read({{"XTIMER_DAEMON_UID", "1001"}, {"XTIMER_JOB_TOKEN", "abc"}});
  EXPECT_EQ(c.daemon_uid, 1001);
  EXPECT_EQ(c.job_token, "abc");
  std::string warnings;
  c = Read({{"XTIMER_DAEMON_UID", "root"}, {"XTIMER_JOB_TOKEN", std::string(49, 'x')}},
           &warnings);
  EXPECT_EQ(c.daemon_uid, -1);
  EXPECT_EQ(c.job_token, "");
  EXPECT_NE(warnings.find("ignoring malformed XTIMER_DAEMON_UID=root"), std::string::npos);
  EXPECT_NE(warnings.find("ignoring XTIMER_JOB_TOKEN: longer than 48 bytes"), std::string::npos);
}

TEST(ConfigTest, StackSignal) {
  EXPECT_EQ(Read({}).stack_signal, SIGRTMIN + 3);
  EXPECT_EQ(Read({{"XTIMER_STACK_SIGNAL", "0"}}).stack_signal, 0);
  EXPECT_EQ(Read({{"XTIMER_STACK_SIGNAL", std::to_string(SIGRTMAX)}}).stack_signal, SIGRTMAX);
  for (const char* bad : {"11", "-1", "x", "1000"}) {
    std::string w;
    EXPECT_EQ(Read({{"XTIMER_STACK_SIGNAL", bad}}, &w).stack_signal, SIGRTMIN + 3) << bad;
    EXPECT_NE(w.find("ignoring XTIMER_STACK_SIGNAL="), std::string::npos) << w;
    EXPECT_NE(w.find("not 0 (off) or a real-time signal"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace hook
}  // namespace xtimer
