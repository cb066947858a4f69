// libFuzzer entry for the dump reader (`xtimer analyze`'s input): the bytes describe up to four
// timeline files of two jobs (each file's job, rank, world size and raw events come from the
// input), written with the real writer so that they pass the CRCs and reach the range checks, the
// world-size vote and the allocation by world size. Whatever they claim, ReadDump must finish,
// keep the world within timeline::kMaxWorldSize and report, not use, what breaks the limits.
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "cli/readers/dump_reader.h"
#include "timeline/format.h"
#include "timeline/timeline_io.h"

namespace {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T Get() {
    T v{};
    const size_t n = size_ - pos_ < sizeof(T) ? size_ - pos_ : sizeof(T);
    std::memcpy(&v, data_ + pos_, n);
    pos_ += n;
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Removes the input's directory (flat: the writer's files only) without a shell per run.
void RemoveDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) abort();
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && unlink((dir + "/" + name).c_str()) != 0) abort();
  }
  closedir(d);
  if (rmdir(dir.c_str()) != 0) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace tl = xtimer::timeline;
  const char* base = getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/dump_fuzz.XXXXXX";
  if (mkdtemp(&dir[0]) == nullptr) abort();
  Input in(data, size);
  const int files = 1 + in.Get<uint8_t>() % 4;
  for (int f = 0; f < files; ++f) {
    tl::Metadata m;
    m.job = in.Get<uint8_t>() % 4 == 0 ? "b" : "a";
    m.host = "h" + std::to_string(f);
    m.pid = 100 + f;
    m.rank = in.Get<int32_t>();
    m.world_size = in.Get<int32_t>();
    std::string error;
    auto w = tl::TimelineWriter::Create(dir + "/" + std::to_string(f) + ".timeline", m, &error);
    if (!w) abort();
    const int events = in.Get<uint8_t>() % 8;
    for (int e = 0; e < events; ++e) w->Append(in.Get<tl::EventRecord>());
    if (!w->Finish(&error)) abort();
  }
  xtimer::cli::DumpReadOptions options;
  options.inputs = {dir};
  options.job = "a";
  options.jobs = 1;
  xtimer::cli::DumpInput out;
  std::string error;
  if (xtimer::cli::ReadDump(options, &out, &error)) {
    if (out.world < 0 || out.world > tl::kMaxWorldSize) __builtin_trap();
    if (out.missing.size() > static_cast<size_t>(tl::kMaxWorldSize)) __builtin_trap();
    if (out.ranks.size() > static_cast<size_t>(files)) __builtin_trap();
    // Nothing out of the limits reaches the analysis.
    for (const xtimer::analysis::RankInput& r : out.ranks) {
      for (const xtimer::analysis::Arrival& a : r.arrivals) {
        if (a.start_ns < 0 || a.start_ns >= tl::kMaxTimeNs || a.bytes > tl::kMaxOpBytes) {
          __builtin_trap();
        }
        if (a.end_ns != 0 && (a.end_ns < a.start_ns || a.end_ns - a.start_ns > tl::kMaxDurationNs)) {
          __builtin_trap();
        }
      }
    }
  }
  RemoveDir(dir);
  return 0;
}
