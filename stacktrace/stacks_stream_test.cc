// The fast path of ParseStacksJson against the reference (stacks_stream.h) on random files and
// on random damage to them: whatever the fast path accepts, the reference accepts with the same
// StacksFile, and ParseStacksJson answers every input as the reference does (same message).
#include "stacktrace/stacks_stream.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace xtimer {
namespace stacktrace {
namespace {

bool SameFrame(const Frame& a, const Frame& b) {
  return a.kind == b.kind && a.function == b.function && a.module == b.module && a.line == b.line &&
         a.file == b.file;
}

bool SameThread(const Thread& a, const Thread& b) {
  return a.tid == b.tid && a.name == b.name && a.frames == b.frames && a.error == b.error;
}

bool Same(const StacksFile& a, const StacksFile& b) {
  if (a.job != b.job || a.rank != b.rank || a.world_size != b.world_size ||
      a.local_rank != b.local_rank || a.host != b.host || a.pid != b.pid ||
      a.capture_time_ns != b.capture_time_ns || a.process_state != b.process_state ||
      a.error != b.error || a.frames.size() != b.frames.size() ||
      a.threads.size() != b.threads.size()) {
    return false;
  }
  for (size_t i = 0; i < a.frames.size(); ++i) {
    if (!SameFrame(a.frames[i], b.frames[i])) return false;
  }
  for (size_t i = 0; i < a.threads.size(); ++i) {
    if (!SameThread(a.threads[i], b.threads[i])) return false;
  }
  return true;
}

// Strings of plain bytes, one in 16 with bytes the writer escapes (util/json.h JsonQuote: quotes,
// backslashes, control and non-ASCII bytes), which the fast path leaves to the reference.
std::string RandomString(std::mt19937* rng, size_t max_len) {
  static const char kPlain[] = "abc_/.:;# <>&";
  static const char kHostile[] = "\"\\\n\t\x01\xc3\xa9\x7f";
  const bool hostile = (*rng)() % 16 == 0;
  std::string s(std::uniform_int_distribution<size_t>(0, max_len)(*rng), 'x');
  for (char& c : s) {
    if ((*rng)() % 4 == 0) c = kPlain[(*rng)() % (sizeof kPlain - 1)];
    if (hostile && (*rng)() % 4 == 0) c = kHostile[(*rng)() % (sizeof kHostile - 1)];
  }
  return s;
}

StacksFile RandomFile(std::mt19937* rng) {
  auto pick = [&](int n) { return static_cast<int>((*rng)() % n); };
  StacksFile f;
  f.world_size = 1 + pick(64);
  f.rank = pick(f.world_size);
  f.local_rank = pick(9) - 1;
  f.job = pick(4) ? "train" : RandomString(rng, 12);
  f.host = pick(4) ? "node-a" : RandomString(rng, 12);
  f.pid = pick(2) ? 4242 : (*rng)() >> 1;
  f.capture_time_ns = static_cast<int64_t>((*rng)()) << pick(32);
  f.process_state = pick(2) ? "S" : "";
  f.error = pick(8) ? "" : RandomString(rng, 20);
  for (int i = pick(12); i > 0; --i) {
    f.frames.push_back({pick(2) ? Frame::kNative : Frame::kPython,
                        pick(3) ? "fn" + std::to_string(pick(50)) : RandomString(rng, 20),
                        pick(3) ? "/lib/libx.so" : RandomString(rng, 20), pick(3) ? 0 : pick(500)});
    if (pick(3) == 0) f.frames.back().file = pick(2) ? "/src/x.cc" : RandomString(rng, 20);
  }
  for (int i = pick(6); i > 0; --i) {
    Thread t{pick(100000), pick(3) ? "worker" : RandomString(rng, 10), {}, ""};
    for (int k = f.frames.empty() ? 0 : pick(20); k > 0; --k) {
      t.frames.push_back(pick(static_cast<int>(f.frames.size())));
    }
    if (pick(6) == 0) t.error = RandomString(rng, 16);
    f.threads.push_back(t);
  }
  switch (pick(16)) {  // one in two files with a value just out of range (the writer checks none)
    case 0: f.rank = f.world_size; break;
    case 1: f.world_size = 0; break;
    case 2: f.world_size = kMaxWorldSize + 1; break;
    case 3: f.local_rank = -2; break;
    case 4: f.pid = -1; break;
    case 5: f.capture_time_ns = -1; break;
    case 6: if (!f.threads.empty()) f.threads[0].tid = -1; break;
    case 7: if (!f.threads.empty()) f.threads[0].frames.push_back(f.frames.size()); break;
    default: break;
  }
  return f;
}

// Damage of the kinds a reader must refuse or read exactly: tokens of other types, numbers the
// fast path leaves to the reference, escapes, duplicate and unknown members, cuts, stray bytes.
std::string Damage(std::string text, std::mt19937* rng) {
  static const char* const kTokens[] = {
      "1.0", "-0", "+1", "1e2", "007", "-1", "99999999999999999999", "9223372036854775807",
      "-9223372036854775808", "4294967296", "65536", "1024", "null", "true", "\"\"", "[]", "{}",
      "\"\\u0041\"", "\"\\\"\"", "\"rank\": 2, ", "\"extra\": [1, {\"a\": 2}], ", "\"frames\": [], ",
      ",", ":", "]", "}", "[", "{", "\"", "\\", " ", "\n", "\x00", "\x1f", "\xff", "-", "0x10"};
  static const char* const kNumbers[] = {
      "0", "1", "-1", "-2", "2", "7", "8", "1024", "1025", "4096", "4097", "65535", "65536",
      "1048576", "1048577", "2147483647", "2147483648", "9223372036854775807"};
  const int edits = 1 + static_cast<int>((*rng)() % 3);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t at = (*rng)() % text.size();
    const size_t digits = text.find_first_of("0123456789", at);
    switch ((*rng)() % 6) {
      case 5:  // the number at or after `at` becomes a boundary value
        if (digits != std::string::npos) {
          text.replace(digits, text.find_first_not_of("0123456789", digits) - digits,
                       kNumbers[(*rng)() % (sizeof kNumbers / sizeof kNumbers[0])]);
        }
        break;
      case 0: text.resize(at); break;
      case 1: text.erase(at, 1 + (*rng)() % 8); break;
      case 2: text[at] = static_cast<char>((*rng)()); break;
      default: {
        const char* token = kTokens[(*rng)() % (sizeof kTokens / sizeof kTokens[0])];
        text.insert(at, token[0] ? std::string(token) : std::string(1, '\0'));
      }
    }
  }
  return text;
}

// Checks one input; counts how many the fast path read. The fast path parses into *reused, the
// StacksFile of earlier inputs (the CLI's readers reuse one per thread), whose strings, frames
// and threads must leave no trace in the result.
void Check(const std::string& text, StacksFile* reused, int* fast, int* accepted) {
  StacksFile reference, combined;
  std::string reference_error, combined_error;
  const bool reference_ok = ParseStacksDom(text, &reference, &reference_error);
  if (ParseStacksStream(text, reused)) {
    ++*fast;
    ASSERT_TRUE(reference_ok) << "the fast path accepts what the reference refuses ("
                              << reference_error << "): " << text;
    ASSERT_TRUE(Same(*reused, reference)) << text;
  }
  const bool combined_ok = ParseStacksJson(text, &combined, &combined_error);
  ASSERT_EQ(combined_ok, reference_ok) << text;
  if (reference_ok) {
    ++*accepted;
    ASSERT_TRUE(Same(combined, reference)) << text;
  } else {
    ASSERT_EQ(combined_error, reference_error) << text;
  }
}

TEST(StacksStreamTest, AgreesWithTheReferenceOnRandomFiles) {
  std::mt19937 rng(20261125);
  int fast = 0, accepted = 0;
  StacksFile reused;
  for (int i = 0; i < 3000; ++i) {
    Check(WriteStacksJson(RandomFile(&rng)), &reused, &fast, &accepted);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(accepted, 1000);  // and the values out of range are refused
  EXPECT_LT(accepted, 2000);
  // Files with escaped strings go to the reference; the others must take the fast path.
  EXPECT_GT(fast, 1000);
}

TEST(StacksStreamTest, AgreesWithTheReferenceOnDamagedFiles) {
  std::mt19937 rng(7);
  int fast = 0, accepted = 0;
  StacksFile reused;
  for (int i = 0; i < 20000; ++i) {
    Check(Damage(WriteStacksJson(RandomFile(&rng)), &rng), &reused, &fast, &accepted);
    if (HasFatalFailure()) return;
  }
  // Both outcomes are exercised: damage the reference reads, and damage it refuses.
  EXPECT_GT(accepted, 500);
  EXPECT_LT(accepted, 19000);
  EXPECT_GT(fast, 200);
}

TEST(StacksStreamTest, LeavesUnusualButValidFilesToTheReference) {
  StacksFile f;
  f.world_size = 2;
  f.frames = {{Frame::kNative, "f", "m", 0}};
  f.threads = {{1, "main", {0}, ""}};
  const std::string good = WriteStacksJson(f);
  StacksFile out;
  EXPECT_TRUE(ParseStacksStream(good, &out));
  for (const std::string& text : {
           "{\"extra\": 1, " + good.substr(1),                  // a member it does not know
           "{\"rank\": 1, " + good.substr(1),                   // a member twice (the first counts)
           "{\"job\": \"\\u0041\", " + good.substr(1),          // an escape
       }) {
    EXPECT_FALSE(ParseStacksStream(text, &out)) << text;
    std::string error;
    EXPECT_TRUE(ParseStacksJson(text, &out, &error)) << error;
  }
  EXPECT_EQ(out.job, "A");
}

}  // namespace
}  // namespace stacktrace
}  // namespace xtimer
