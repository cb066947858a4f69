#include "daemon/model/process_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace xtimer {
namespace daemon {
namespace {

constexpr int64_t kSec = 1000000000;

format::Identity Id(const std::string& job, int rank) {
  format::Identity id;
  id.job = job;
  id.host = "host";
  id.pod = "pod";
  id.rank = rank;
  id.local_rank = rank;
  return id;
}

Registrant Own(int pid, const std::string& token = "") {
  return Registrant{pid, static_cast<uint32_t>(geteuid()), token};
}

TEST(ProcessRegistryTest, IdsAreNeverReusedAndRegistrationsCount) {
  ProcessRegistry reg{AggregatorOptions{}};
  const auto a = reg.Add(Own(10), Id("job", 0), nullptr);
  reg.Remove(a);
  const auto b = reg.Add(Own(11), Id("job", 0), nullptr);
  EXPECT_NE(a, 0u);
  EXPECT_GT(b, a);
  EXPECT_EQ(reg.registrations(), 2u);
  EXPECT_EQ(reg.processes().size(), 1u);
  EXPECT_EQ(reg.Find(a), nullptr);
  ASSERT_NE(reg.Find(b), nullptr);
  EXPECT_EQ(reg.Find(b)->pid, 11);
}

TEST(ProcessRegistryTest, AnotherTokenIsRefusedAndCountedByCause) {
  ProcessRegistry reg{AggregatorOptions{}};
  ASSERT_NE(reg.Add(Own(10, "t1"), Id("job", 0), nullptr), 0u);
  EXPECT_EQ(reg.Add(Own(11, "t2"), Id("job", 0), nullptr), 0u);
  EXPECT_EQ(reg.refusals().count("identity_token"), 1u);
  EXPECT_EQ(reg.processes().size(), 1u);
}

TEST(ProcessRegistryTest, ARankClaimedByAnotherTokenRemovesTheClaimant) {
  ProcessRegistry reg{AggregatorOptions{}};
  ASSERT_NE(reg.Add(Own(10, "t1"), Id("job", 0), nullptr), 0u);
  const auto late = reg.Add(Own(11, "t2"), Id("job", -1), nullptr);
  ASSERT_NE(late, 0u);
  EXPECT_TRUE(reg.ClaimRank(late, Id("job", 1)));
  EXPECT_FALSE(reg.ClaimRank(late, Id("job", 0)));
  EXPECT_EQ(reg.Find(late), nullptr);
  EXPECT_EQ(reg.refusals().count("identity_token"), 1u);
}

TEST(ProcessRegistryTest, ExitedProcessesStayForTheGraceThenExpire) {
  AggregatorOptions o;
  o.exited_grace_ns = 10 * kSec;
  ProcessRegistry reg{o};
  const auto id = reg.Add(Own(10), Id("job", 0), nullptr);
  ExitCause cause;
  cause.kind = format::ExitKind::kSignal;
  reg.MarkExited(id, cause, 100 * kSec);
  ASSERT_NE(reg.Find(id), nullptr);
  EXPECT_FALSE(reg.Find(id)->connected);
  EXPECT_EQ(reg.Find(id)->exited_ns, 100 * kSec);
  EXPECT_EQ(reg.ExpireExited(109 * kSec), 0u);
  EXPECT_EQ(reg.ExpireExited(110 * kSec), 1u);
  EXPECT_EQ(reg.Find(id), nullptr);
}

TEST(ProcessRegistryTest, TooManyExitedDropsTheOldestExitFirst) {
  AggregatorOptions o;
  o.max_exited = 2;
  ProcessRegistry reg{o};
  std::vector<ProcessId> ids;
  for (int r = 0; r < 3; ++r) ids.push_back(reg.Add(Own(10 + r), Id("job", r), nullptr));
  reg.MarkExited(ids[1], ExitCause{}, 1 * kSec);  // exits first
  reg.MarkExited(ids[0], ExitCause{}, 2 * kSec);
  reg.MarkExited(ids[2], ExitCause{}, 3 * kSec);
  EXPECT_EQ(reg.Find(ids[1]), nullptr);
  EXPECT_NE(reg.Find(ids[0]), nullptr);
  EXPECT_NE(reg.Find(ids[2]), nullptr);
}

TEST(ProcessRegistryTest, ChargesAreReturnedWhenAProcessGoes) {
  ProcessRegistry reg{AggregatorOptions{}};
  const auto id = reg.Add(Own(10), Id("job", 0), nullptr);
  const size_t base = reg.budget().total();
  EXPECT_GT(base, 0u);
  ASSERT_TRUE(reg.Reserve(*reg.Find(id), 1000));
  reg.Charge(reg.Find(id), 1000);
  EXPECT_EQ(reg.budget().total(), base + 1000);
  reg.Remove(id);
  EXPECT_EQ(reg.budget().total(), 0u);
}

TEST(ProcessRegistryTest, ReserveDropsExitedProcessesToMakeRoom) {
  AggregatorOptions o;
  o.memory_budget_bytes = size_t{4} << 20;
  o.max_process_bytes = size_t{4} << 20;
  ProcessRegistry reg{o};
  const auto gone = reg.Add(Own(10), Id("job", 0), nullptr);
  const auto live = reg.Add(Own(11), Id("job", 1), nullptr);
  reg.MarkExited(gone, ExitCause{}, kSec);
  ASSERT_NE(reg.Find(gone), nullptr);
  // Past the high-water mark with both, within it once the exited one is gone.
  const size_t over = reg.budget().HighWater() - reg.budget().total() + 1;
  EXPECT_TRUE(reg.Reserve(*reg.Find(live), over));

  EXPECT_EQ(reg.Find(gone), nullptr);
  EXPECT_FALSE(reg.Reserve(*reg.Find(live), o.memory_budget_bytes));
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
