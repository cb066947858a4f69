// The automatic dump's folder name: one id per hang that every node computes alike.
#include "daemon/diagnosis/hang_dumper.h"

#include <gtest/gtest.h>

namespace xtimer {
namespace daemon {
namespace {

constexpr uint64_t kWorld = 0xab, kTp0 = 0x10, kTp1 = 0x11;

RankLive Rank(int rank, std::vector<CommSnapshot> comms) {
  RankLive r;
  r.process.rank = rank;
  r.process.world_size = 4;
  r.process.comms = std::move(comms);
  return r;
}

CommSnapshot Comm(uint64_t id, int size, uint64_t done) {
  CommSnapshot c;
  c.comm_id = id;
  c.comm_size = size;
  c.last_completed_seq = done;
  return c;
}

analysis::HangVerdict Verdict(uint64_t comm, uint64_t seq) {
  analysis::HangVerdict v;
  v.comm_id = comm;
  v.seq = seq;
  return v;
}

// Two nodes of one hang: node 0 (ranks 0, 1) sees its TP communicator stall at seq 31, node 1
// (ranks 2, 3) another one at seq 30; both name the folder after the world communicator, whose
// first uncompleted collective is 57 on both (the folder named after each daemon's clock, or
// after each node's own verdict, differed).
TEST(HangDumper, EveryNodeNamesTheHangAlike) {
  JobLive node0, node1;
  node0.ranks = {Rank(0, {Comm(kTp0, 2, 30), Comm(kWorld, 4, 56)}),
                 Rank(1, {Comm(kTp0, 2, 30), Comm(kWorld, 4, 56)})};
  node0.report.hangs = {Verdict(kTp0, 31)};
  node1.ranks = {Rank(2, {Comm(kTp1, 2, 29), Comm(kWorld, 4, 56)}),
                 Rank(3, {Comm(kTp1, 2, 29), Comm(kWorld, 4, 55)})};  // its record lags
  node1.report.hangs = {Verdict(kTp1, 30)};
  const HangId a = HangIdOf(node0), b = HangIdOf(node1);
  EXPECT_TRUE(a.world);
  EXPECT_EQ(HangDirName(a), "hang-0x00000000000000ab-57");
  EXPECT_EQ(HangDirName(b), HangDirName(a));
  EXPECT_EQ(HangDirName(a, 2), "hang-0x00000000000000ab-57-2");
}

// Of several world-size communicators, the one with the most completed collectives (then the
// smallest id); without one, the head verdict's communicator and seq.
TEST(HangDumper, WorldCommunicatorChoiceAndFallback) {
  JobLive job;
  job.ranks = {Rank(0, {Comm(0xf0, 4, 3), Comm(0xe0, 4, 9), Comm(0xd0, 4, 9)})};
  job.report.hangs = {Verdict(kTp0, 31)};
  EXPECT_EQ(HangDirName(HangIdOf(job)), "hang-0x00000000000000d0-10");
  job.ranks = {Rank(0, {Comm(kTp0, 2, 30), Comm(0, 4, 0)})};
  const HangId local = HangIdOf(job);
  EXPECT_FALSE(local.world);
  EXPECT_EQ(HangDirName(local), "hang-0x0000000000000010-31");
}

}  // namespace
}  // namespace daemon
}  // namespace xtimer
