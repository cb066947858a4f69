#include "cli/readers/crash_input.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace cli {
namespace {

const char kPythonCrash[] =
    R"J({"format": "xtimer-crash", "version": 1, "job": "train", "host": "node-a", "pid": 42,
 "ranks": [3], "world_size": 8, "time_ns": 1, "signal": 0, "signal_name": "python_exception",
 "si_code": 0, "fault_address": "", "tid": 42, "thread": "python3",
 "frame": "load_batch (data.py:24)",
 "frames": [{"function": "load_batch", "file": "/j/data.py", "line": 24}],
 "exception": {"type": "ValueError", "message": "bad\nbatch"}, "dir": "/d", "stacks_files": []})J";

void Write(const std::string& path, const std::string& text) {
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  fputs(text.c_str(), f);
  fclose(f);
}

TEST(ParseCrashJson, ReadsTheFrameAndAPythonException) {
  CrashInfo c;
  std::string error;
  ASSERT_TRUE(ParseCrashJson(kPythonCrash, &c, &error)) << error;
  EXPECT_EQ(c.job, "train");
  EXPECT_EQ(c.host, "node-a");
  EXPECT_EQ(c.pid, 42);
  EXPECT_EQ(c.ranks, std::vector<int32_t>{3});
  EXPECT_EQ(c.frame, "load_batch (data.py:24) [uncaught ValueError: bad batch]");
  ASSERT_TRUE(ParseCrashJson(R"J({"format": "xtimer-crash", "version": 1, "job": "j", "pid": 7,
      "ranks": [0, 1], "frame": "CrashHere (crash_program)"})J", &c, &error)) << error;
  EXPECT_EQ(c.frame, "CrashHere (crash_program)");
}

TEST(ParseCrashJson, RefusesHostileAndTruncatedReports) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(kPythonCrash).substr(0, 200), "byte"},
      {"[1, 2]", "not a JSON object"},
      {std::string(100, '['), "byte"},
      {R"J({"format": "xtimer-raw-stacks", "version": 1})J", "\"format\" is not"},
      {R"J({"format": "xtimer-crash", "version": 2})J", "\"version\" is 2"},
      {R"J({"format": "xtimer-crash", "version": 1, "job": "j", "pid": -1})J", "\"pid\""},
      {R"J({"format": "xtimer-crash", "version": 1, "job": "j", "pid": 1, "frame": "f",
          "ranks": ["x"]})J", "\"ranks\" holds a value that is no rank"},
      {R"J({"format": "xtimer-crash", "version": 1, "job": "j", "pid": 1, "frame": "f",
          "ranks": [1], "exception": "E"})J", "\"exception\" is not an object"},
      {R"J({"format": "xtimer-crash", "version": 1, "job": "j", "pid": 1, "frame": "f",
          "ranks": [1], "exception": {"message": "m"}})J", "exception: \"type\" is missing"},
      {R"J({"format": "xtimer-crash", "version": 1, "job": "j", "pid": 1, "ranks": [1],
          "frame": ")J" + std::string(5000, 'f') + "\"}", "\"frame\" is 5000 bytes long"},
  };
  for (const auto& c : cases) {
    CrashInfo info;
    std::string error;
    EXPECT_FALSE(ParseCrashJson(c.first, &info, &error)) << c.first;
    EXPECT_NE(error.find(c.second), std::string::npos) << error;
  }
}

// A dump root with hang-X/train/ (the dump) and crash folders beside it: the exited rank of the
// matching pid, rank and host gets the frame; a bad report is a problem, never a crash.
TEST(AddCrashFrames, FindsReportsBesideTheDumpAndMatchesPidRankAndHost) {
  char tmpl[] = "/tmp/crash_input_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  for (const char* d : {"/hang-0x1-2", "/hang-0x1-2/train", "/crash-1-42", "/crash-1-42/train",
                        "/crash-2-43", "/crash-2-43/train", "/crash-3-44"}) {
    ASSERT_EQ(mkdir((root + d).c_str(), 0700), 0) << d;
  }
  Write(root + "/crash-1-42/train/crash.json", kPythonCrash);
  Write(root + "/crash-2-43/train/crash.json", "{\"format\": \"xtimer-crash\", \"vers");
  ASSERT_EQ(symlink("/etc/passwd", (root + "/crash-3-44/crash.json").c_str()), 0);
  std::vector<analysis::RankInput> ranks(3);
  for (int i = 0; i < 3; ++i) {
    ranks[i].rank = 3;
    ranks[i].pid = 42;
    ranks[i].node = "node-a";
    ranks[i].exit.exited = true;
  }
  ranks[1].node = "node-b";        // another host's pid 42
  ranks[2].exit.exited = false;    // alive: no exited verdict to show it in
  std::vector<std::string> problems;
  AddCrashFrames({root + "/hang-0x1-2/train/"}, &ranks, &problems);
  EXPECT_EQ(ranks[0].exit.crash_frame, "load_batch (data.py:24) [uncaught ValueError: bad batch]");
  EXPECT_EQ(ranks[1].exit.crash_frame, "");
  EXPECT_EQ(ranks[2].exit.crash_frame, "");
  ASSERT_EQ(problems.size(), 1u);  // the truncated one; the symbolic link is not followed
  EXPECT_NE(problems[0].find("crash-2-43/train/crash.json: "), std::string::npos) << problems[0];
  EXPECT_EQ(FindCrashReports({root + "/hang-0x1-2"}).size(), 2u);  // the dump folder itself
  EXPECT_EQ(FindCrashReports({"/nonexistent/dump"}).size(), 0u);
  std::string rm = "rm -rf " + root;
  ASSERT_EQ(system(rm.c_str()), 0);
}

// Issue 36: a user wrote its own crash.json naming another job's pid, rank and host, and the
// analysis took its frame. Evidence is the daemon's copy in its crash folder; a report another
// user could have written is left out and said so.
TEST(AddCrashFrames, ReadsTheDaemonsCopyAndLeavesOutWhatAnotherUserCouldWrite) {
  char tmpl[] = "/tmp/crash_input_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  for (const char* d : {"/hang-0x1-2", "/hang-0x1-2/train", "/crash-5-50", "/crash-5-50/train",
                        "/crash-6-60", "/crash-6-60/train"}) {
    ASSERT_EQ(mkdir((root + d).c_str(), 0755), 0) << d;
  }
  auto report = [](int pid, const std::string& frame) {
    return R"J({"format": "xtimer-crash", "version": 1, "job": "train", "host": "node-a",
               "pid": )J" + std::to_string(pid) + R"J(, "ranks": [3], "frame": ")J" + frame +
           R"J("})J";
  };
  Write(root + "/crash-5-50/crash.json", report(50, "CrashHere (train)"));  // the daemon's copy
  Write(root + "/crash-5-50/train/crash.json", report(50, "Forged (libevil.so)"));
  Write(root + "/crash-6-60/train/crash.json", report(60, "ForgedByUid2601 (libevil.so)"));
  ASSERT_EQ(chmod((root + "/crash-6-60/train").c_str(), 0777), 0);  // anyone could write there
  std::vector<analysis::RankInput> ranks(2);
  for (int i = 0; i < 2; ++i) {
    ranks[i].rank = 3;
    ranks[i].pid = i == 0 ? 50 : 60;
    ranks[i].node = "node-a";
    ranks[i].exit.exited = true;
  }
  std::vector<std::string> problems;
  AddCrashFrames({root + "/hang-0x1-2/train/"}, &ranks, &problems);
  EXPECT_EQ(ranks[0].exit.crash_frame, "CrashHere (train)");
  EXPECT_EQ(ranks[1].exit.crash_frame, "");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("crash-6-60/train/crash.json: not used as evidence"),
            std::string::npos)
      << problems[0];
  std::string rm = "rm -rf " + root;
  ASSERT_EQ(system(rm.c_str()), 0);
}

// The report of a process without a rank ("ranks": []) is read and names that process (rank -1,
// same pid and host), never a rank of the same pid.
TEST(AddCrashFrames, ReportWithoutRanksNamesTheProcessWithoutARank) {
  char tmpl[] = "/tmp/crash_input_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  for (const char* d : {"/hang-0x1-2", "/hang-0x1-2/serve", "/crash-1-77", "/crash-1-77/serve"}) {
    ASSERT_EQ(mkdir((root + d).c_str(), 0700), 0) << d;
  }
  Write(root + "/crash-1-77/serve/crash.json",
        R"J({"format": "xtimer-crash", "version": 1, "job": "serve", "host": "node-a", "pid": 77,
            "ranks": [], "world_size": -1, "frame": "CrashHere (server)"})J");
  std::vector<analysis::RankInput> ranks(2);
  for (auto& r : ranks) {
    r.pid = 77;
    r.node = "node-a";
    r.exit.exited = true;
  }
  ranks[1].rank = 0;  // a rank of the same pid: not the process the report names
  std::vector<std::string> problems;
  AddCrashFrames({root + "/hang-0x1-2/serve/"}, &ranks, &problems);
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ(ranks[0].exit.crash_frame, "CrashHere (server)");
  EXPECT_EQ(ranks[1].exit.crash_frame, "");
  std::string rm = "rm -rf " + root;
  ASSERT_EQ(system(rm.c_str()), 0);
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
