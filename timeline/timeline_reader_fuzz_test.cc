// Runs the fuzz target on random and mutated inputs so that CI exercises it without libFuzzer.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "timeline/timeline_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace xtimer {
namespace timeline {
namespace {

std::vector<uint8_t> ValidFile() {
  std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                     "/fuzz_seed.timeline";
  Metadata m;
  m.host = "h";
  m.rank = 1;
  m.strings = {"", "k"};
  CommInfo c;
  c.id = 9;
  c.size = 2;
  c.members = {0, 1};
  m.comms = {c};
  std::string error;
  auto w = TimelineWriter::Create(path, m, &error);
  EventRecord e{};
  for (int i = 0; i < 5000; ++i) {
    e.seq = i;
    w->Append(e);
  }
  w->Finish(&error);
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  int ch;
  while ((ch = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(ch));
  std::fclose(f);
  return out;
}

TEST(TimelineReaderFuzz, RandomBytes) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> b(rng() % 512);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    if (b.size() >= 8 && (i % 2)) std::memcpy(b.data(), kFileMagic, 8);  // get past the magic
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
}

TEST(TimelineReaderFuzz, MutatedValidFile) {
  const std::vector<uint8_t> seed = ValidFile();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> b = seed;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) {
      // Mostly hit the header and metadata, where lengths live.
      size_t at = (rng() % 4) ? rng() % std::min<size_t>(b.size(), 400) : rng() % b.size();
      b[at] = static_cast<uint8_t>(rng());
    }
    if (rng() % 3 == 0) b.resize(rng() % b.size());
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
}

}  // namespace
}  // namespace timeline
}  // namespace xtimer
