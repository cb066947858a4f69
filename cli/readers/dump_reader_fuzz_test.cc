// Runs the dump reader's fuzz entry (cli/dump_reader_fuzzer.cc) on random inputs and on the
// crafted headers of issue 20 (world 2^31-1, a rank past the world, negative durations, huge
// shapes, times near INT64_MAX), so that CI exercises it without libFuzzer.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "format/record.h"
#include "timeline/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace xtimer {
namespace cli {
namespace {

void Put(std::vector<uint8_t>* b, const void* p, size_t n) {
  const uint8_t* u = static_cast<const uint8_t*>(p);
  b->insert(b->end(), u, u + n);
}

// One file of job "a": rank, world, then `events` copies of `e`.
void AddFile(std::vector<uint8_t>* b, int32_t rank, int32_t world, const timeline::EventRecord& e,
             uint8_t events) {
  const uint8_t job = 1;
  Put(b, &job, 1);
  Put(b, &rank, 4);
  Put(b, &world, 4);
  Put(b, &events, 1);
  for (uint8_t i = 0; i < events; ++i) Put(b, &e, sizeof(e));
}

// An AllReduce of communicator 9 (seq 1): it becomes an Arrival of the analysis.
timeline::EventRecord Good() {
  timeline::EventRecord e{};
  e.op = static_cast<uint16_t>(format::Operation::kAllReduce);
  e.kind = static_cast<uint8_t>(format::OpKind::kCollective);
  e.gpu_start_ns = 1767225600000000000;
  e.duration_ns = 1000000;
  e.bytes = 4096;
  e.comm_id = 9;
  e.seq = 1;
  e.peer = e.root = -1;
  return e;
}

TEST(DumpReaderFuzz, CraftedHeadersAndEvents) {
  std::vector<timeline::EventRecord> bad(5, Good());
  bad[0].duration_ns = -5;
  bad[1].duration_ns = INT64_MAX - 5;
  bad[2].gpu_start_ns = INT64_MAX - 10;
  bad[3].peer = INT32_MAX;
  bad[4].bytes = UINT64_MAX;
  for (int32_t world : {2, INT32_MAX, 1 << 24, -7, 0}) {
    for (const timeline::EventRecord& e : bad) {
      std::vector<uint8_t> b = {2};  // three files
      AddFile(&b, 0, 2, Good(), 3);
      AddFile(&b, 1, world, e, 2);
      AddFile(&b, INT32_MAX, world, e, 1);
      LLVMFuzzerTestOneInput(b.data(), b.size());
    }
  }
}

TEST(DumpReaderFuzz, RandomInputs) {
  std::mt19937_64 rng(20);
  for (int i = 0; i < 300; ++i) {
    std::vector<uint8_t> b(rng() % 2048);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
}

}  // namespace
}  // namespace cli
}  // namespace xtimer
