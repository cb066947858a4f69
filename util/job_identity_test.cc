#include "util/job_identity.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace {

std::map<std::string, std::string>* g_env;

const char* FakeGetEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

JobIdentity Derive(std::map<std::string, std::string> env) {
  g_env = &env;
  return DeriveJobIdentity(&FakeGetEnv);
}

// What Open MPI 4.1's mpirun (Debian 12 openmpi-bin) gives every rank.
const std::map<std::string, std::string> kOpenMpi = {
    {"PMIX_NAMESPACE", "1270808577"},
    {"OMPI_MCA_orte_hnp_uri", "1270808576.0;tcp://192.0.2.2:46963;tcp6://[fd00::2]:46161"},
    {"OMPI_COMM_WORLD_RANK", "3"}};

TEST(JobIdentityTest, DefaultWithoutAnySource) {
  JobIdentity j = Derive({{"RANK", "0"}, {"HOSTNAME", "node1"}});
  EXPECT_EQ(j.id, "default");
  EXPECT_EQ(j.source, "default");
}

TEST(JobIdentityTest, EachSourceAlone) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"XTIMER_JOB", "llama-70b"}}, "llama-70b"},
      {{{"TORCHELASTIC_RUN_ID", "rdzv-42"}}, "rdzv-42"},
      {{{"SLURM_JOB_ID", "123"}}, "slurm-123"},
      {{{"SLURM_JOB_ID", "123"}, {"SLURM_STEP_ID", "4"}}, "slurm-123"},  // all steps: one job
      {{{"PMIX_NAMESPACE", "prterun-node1-2211@1"}}, "mpi-prterun-node1-2211_1"},
      {{{"OMPI_MCA_orte_hnp_uri", "1270808576.0;tcp://10.0.0.1:4000"}}, "mpi-1270808576"},
      {{{"PMI_KVSNAME", "kvs_2211_0"}}, "mpi-kvs_2211_0"},
      {{{"PMI_PORT", "node1:41981"}, {"PMI_RANK", "1"}}, "mpi-node1_41981"},
      {{{"JOB_NAME", "pretrain"}, {"KUBERNETES_SERVICE_HOST", "10.96.0.1"}}, "k8s-pretrain"},
      {{{"XTIMER_JOB_DEFAULT", "train.py"}}, "train.py"},
  };
  for (const auto& [env, want] : cases) {
    JobIdentity j = Derive(env);
    EXPECT_EQ(j.id, want) << env.begin()->first;
    EXPECT_EQ(j.source, env.begin()->first == "KUBERNETES_SERVICE_HOST" ? "JOB_NAME"
                                                                         : env.begin()->first);
  }
}

TEST(JobIdentityTest, OpenMpiRanksAgree) {
  std::map<std::string, std::string> env = kOpenMpi;
  EXPECT_EQ(Derive(env).id, "mpi-1270808577");
  env["OMPI_COMM_WORLD_RANK"] = "0";
  EXPECT_EQ(Derive(env).id, "mpi-1270808577");
  env.erase("PMIX_NAMESPACE");  // Open MPI without PMIx: the job family of the HNP's URI
  EXPECT_EQ(Derive(env).id, "mpi-1270808576");
  EXPECT_EQ(Derive(env).source, "OMPI_MCA_orte_hnp_uri");
}

TEST(JobIdentityTest, Order) {
  // Every source set: removing the winner each time walks the documented order.
  std::map<std::string, std::string> env = {
      {"XTIMER_JOB", "x"},          {"TORCHELASTIC_RUN_ID", "t"},
      {"SLURM_JOB_ID", "9"},        {"PMIX_NAMESPACE", "ns"},
      {"OMPI_MCA_orte_hnp_uri", "7.0;tcp://h:1"}, {"PMI_KVSNAME", "kvs"},
      {"PMI_PORT", "h:2"},          {"JOB_NAME", "kj"},
      {"KUBERNETES_SERVICE_HOST", "k"}, {"XTIMER_JOB_DEFAULT", "cmd"}};
  const std::vector<std::pair<std::string, std::string>> order = {
      {"XTIMER_JOB", "x"},        {"TORCHELASTIC_RUN_ID", "t"},
      {"SLURM_JOB_ID", "slurm-9"}, {"PMIX_NAMESPACE", "mpi-ns"},
      {"OMPI_MCA_orte_hnp_uri", "mpi-7"}, {"PMI_KVSNAME", "mpi-kvs"},
      {"PMI_PORT", "mpi-h_2"},    {"JOB_NAME", "k8s-kj"},
      {"XTIMER_JOB_DEFAULT", "cmd"}};
  for (const auto& [variable, want] : order) {
    JobIdentity j = Derive(env);
    EXPECT_EQ(j.source, variable);
    EXPECT_EQ(j.id, want);
    env.erase(variable);
  }
  EXPECT_EQ(Derive(env).id, "default");
}

TEST(JobIdentityTest, SkippedValues) {
  // Empty, torchrun's "none", JOB_NAME outside a pod, and values that sanitize to nothing fall
  // through to the next source.
  EXPECT_EQ(Derive({{"XTIMER_JOB", ""}, {"SLURM_JOB_ID", "5"}}).id, "slurm-5");
  EXPECT_EQ(Derive({{"TORCHELASTIC_RUN_ID", "none"}, {"SLURM_JOB_ID", "5"}}).id, "slurm-5");
  EXPECT_EQ(Derive({{"JOB_NAME", "jenkins-build"}}).id, "default");
  EXPECT_EQ(Derive({{"XTIMER_JOB", ".."}, {"XTIMER_JOB_DEFAULT", "a"}}).id, "a");
  EXPECT_EQ(Derive({{"XTIMER_JOB", "."}}).id, "default");
  EXPECT_EQ(Derive({{"OMPI_MCA_orte_hnp_uri", ".0;tcp://h:1"}}).id, "default");
}

TEST(JobIdentityTest, LabelsAreCutToTheRingField) {
  const std::string longest(kMaxJobIdLength, 'j');
  EXPECT_EQ(Derive({{"XTIMER_JOB", longest + "tail"}}).id, longest);
  EXPECT_EQ(Derive({{"SLURM_JOB_ID", longest}}).id.size(), kMaxJobIdLength);
  EXPECT_EQ(Derive({{"XTIMER_JOB", "run 1/x"}}).id, "run_1_x");
}

}  // namespace
}  // namespace xtimer
