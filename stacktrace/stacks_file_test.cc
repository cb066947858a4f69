#include "stacktrace/stacks_file.h"

#include <string>

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

StacksFile Sample() {
  StacksFile f;
  f.job = "train";
  f.rank = 3;
  f.world_size = 8;
  f.local_rank = 3;
  f.host = "node-a";
  f.pid = 4242;
  f.capture_time_ns = 1764000000123456789LL;
  f.process_state = "S";
  f.frames = {{Frame::kNative, "ncclAllReduce", "/usr/lib/libnccl.so.2", 0},
              {Frame::kPython, "train_step", "/job/train.py", 88}};
  f.threads = {{4242, "MainThread", {0, 1}, ""}, {4243, "worker", {}, "signals blocked"}};
  return f;
}

// `text` with the first `from` replaced by `to`.
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

std::string ErrorOf(const std::string& text) {
  StacksFile f;
  std::string error;
  EXPECT_FALSE(ParseStacksJson(text, &f, &error));
  return error;
}

TEST(StacksFileTest, RoundTrips) {
  StacksFile in = Sample(), out;
  std::string error;
  ASSERT_TRUE(ParseStacksJson(WriteStacksJson(in), &out, &error)) << error;
  EXPECT_EQ(out.job, "train");
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.world_size, 8);
  EXPECT_EQ(out.local_rank, 3);
  EXPECT_EQ(out.host, "node-a");
  EXPECT_EQ(out.pid, 4242);
  EXPECT_EQ(out.capture_time_ns, 1764000000123456789LL);
  EXPECT_EQ(out.process_state, "S");
  ASSERT_EQ(out.frames.size(), 2u);
  EXPECT_EQ(out.frames[1].kind, Frame::kPython);
  EXPECT_EQ(out.frames[1].line, 88);
  EXPECT_EQ(out.frames[0].module, "/usr/lib/libnccl.so.2");
  ASSERT_EQ(out.threads.size(), 2u);
  EXPECT_EQ(out.threads[0].frames, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(out.threads[1].error, "signals blocked");
  EXPECT_EQ(StacksFileName(3, 8), "00003-00008.stacks");
}

// UTF-8 names and paths (a user's home, a Python file, a thread name) read back byte for byte.
TEST(StacksFileTest, RoundTripsUtf8) {
  StacksFile in = Sample(), out;
  in.frames[1].module = "/home/r\xc3\xa9mi/\xe8\xae\xad\xe7\xbb\x83.py";
  in.threads[1].name = "w\xf0\x9f\x98\x80";
  std::string error;
  ASSERT_TRUE(ParseStacksJson(WriteStacksJson(in), &out, &error)) << error;
  EXPECT_EQ(out.frames[1].module, in.frames[1].module);
  EXPECT_EQ(out.threads[1].name, in.threads[1].name);
}

TEST(StacksFileTest, NativeFileAndLineRoundTrip) {
  StacksFile in = Sample(), out;
  in.frames[0].line = 120;
  in.frames[0].file = "/src/nccl/all_reduce.cc";
  const std::string text = WriteStacksJson(in);
  EXPECT_NE(text.find("\"line\": 120, \"file\": \"/src/nccl/all_reduce.cc\""), std::string::npos)
      << text;
  std::string error;
  ASSERT_TRUE(ParseStacksJson(text, &out, &error)) << error;
  EXPECT_EQ(out.frames[0].line, 120);
  EXPECT_EQ(out.frames[0].file, "/src/nccl/all_reduce.cc");
  EXPECT_EQ(out.frames[1].file, "");
  EXPECT_EQ(WriteStacksJson(in).find("\"file\": \"\""), std::string::npos);  // absent when unknown
}

TEST(StacksFileTest, RefusesOutOfRangeFields) {
  std::string good = WriteStacksJson(Sample());
  EXPECT_EQ(ErrorOf(Replace(good, "\"world_size\": 8", "\"world_size\": 2000000")),
            "\"world_size\" is 2000000, outside [-1, 1048576]");
  EXPECT_EQ(ErrorOf(Replace(good, "\"rank\": 3", "\"rank\": 8")),
            "\"rank\" is 8, outside [0, 7]");
  EXPECT_EQ(ErrorOf(Replace(good, "\"version\": 1", "\"version\": 2")),
            "\"version\" is 2: this xtimer reads version 1 (a newer xtimer wrote the file?)");
  EXPECT_EQ(ErrorOf(Replace(good, "xtimer-stacks", "other")),
            "\"format\" is not \"xtimer-stacks\"");
  EXPECT_EQ(ErrorOf(Replace(good, "\"frames\": [0, 1]", "\"frames\": [0, 2]")),
            "threads[0]: \"frames\" holds an index outside the frame table (2 frames)");
  EXPECT_EQ(ErrorOf(Replace(good, "\"kind\": \"python\"", "\"kind\": \"java\"")),
            "frames[1]: \"kind\" is \"java\": expected \"native\" or \"python\"");
  EXPECT_EQ(ErrorOf(Replace(good, "\"tid\": 4242", "\"tid\": \"x\"")),
            "threads[0]: \"tid\" is not a whole number");
  EXPECT_EQ(ErrorOf(Replace(good, "\"rank\": 3,", "")), "\"rank\" is missing");
  EXPECT_NE(ErrorOf(good.substr(0, good.size() / 2)).find("truncated"), std::string::npos);
  EXPECT_EQ(ErrorOf("[]"), "not a JSON object");
}

// A process whose rank is not known: rank and world size -1, named by its pid (and device).
TEST(StacksFileTest, RanklessProcessRoundTripsWithItsPidName) {
  StacksFile in = Sample(), out;
  in.rank = -1;
  in.world_size = -1;
  std::string error;
  ASSERT_TRUE(ParseStacksJson(WriteStacksJson(in), &out, &error)) << error;
  EXPECT_FALSE(HasRank(out));
  EXPECT_EQ(out.rank, -1);
  EXPECT_EQ(out.device, -1);
  EXPECT_EQ(out.threads.size(), 2u);
  EXPECT_EQ(StacksFileName(out), "pid-4242.stacks");
  in.device = 1;
  ASSERT_TRUE(ParseStacksJson(WriteStacksJson(in), &out, &error)) << error;
  EXPECT_EQ(out.device, 1);
  EXPECT_EQ(StacksFileName(out), "pid-4242-dev1.stacks");
  // A reused StacksFile (the fast reader) forgets the previous file's device.
  ASSERT_TRUE(ParseStacksJson(WriteStacksJson(Sample()), &out, &error)) << error;
  EXPECT_EQ(out.device, -1);
  EXPECT_TRUE(HasRank(out));
  EXPECT_EQ(StacksFileName(out), "00003-00008.stacks");
}

TEST(StacksFileTest, RefusesHalfKnownRanks) {
  StacksFile f = Sample();
  f.world_size = -1;
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)), "\"rank\" is 3, outside [-1, -1]");
  f = Sample();
  f.rank = -1;
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)), "\"rank\" is -1, outside [0, 7]");
  f.world_size = 0;
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)),
            "\"world_size\" is 0: a world has 1 .. 2^20 ranks (-1: unknown)");
  f = Sample();
  f.device = 2000000;
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)), "\"device\" is 2000000, outside [-1, 1048576]");
}

TEST(StacksFileTest, RefusesTooManyFramesAndLongStrings) {
  StacksFile f = Sample();
  f.threads[0].frames.assign(kMaxFramesPerThread + 1, 0);
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)), "threads[0]: \"frames\" has 1025 entries, over 1024");
  f = Sample();
  f.threads.resize(kMaxThreads + 1, f.threads[0]);
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)), "\"threads\" has 4097 entries, over 4096");
  f = Sample();
  f.frames[0].function.assign(kMaxStringBytes + 1, 'x');
  EXPECT_EQ(ErrorOf(WriteStacksJson(f)), "frames[0]: \"function\" is 4097 bytes long, over 4096");
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer
