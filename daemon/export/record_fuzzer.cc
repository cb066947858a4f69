// libFuzzer target for the daemon's handling of untrusted shared memory: the input becomes the
// contents of a real ring (header fields and slots), which is read by RingReader and fed through
// the Aggregator to the Prometheus families, and through its op tap to the live diagnosis's
// arrival rings (LiveOps), as in xtimerd. Build with clang (see BUILD.bazel).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "daemon/export/metrics.h"
#include "daemon/model/aggregator.h"
#include "daemon/model/live_ops.h"
#include "format/ring.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xtimer;
  std::string error;
  static format::RingWriter* writer = [] {
    std::string e;
    auto w = format::RingWriter::Create(64, format::Identity(), &e);
    return new format::RingWriter(std::move(*w));
  }();
  static format::RingReader* reader = [] {
    std::string e;
    auto r = format::RingReader::Attach(writer->fd(), &e);
    return new format::RingReader(std::move(*r));
  }();
  format::RingHeader* h = writer->header();
  // First bytes: write_pos delta and header scribbles; the rest: slots.
  uint64_t delta = 0;
  if (size >= 8) {
    memcpy(&delta, data, 8);
    data += 8;
    size -= 8;
  }
  if (size >= sizeof(h->job)) {
    memcpy(h->job, data, sizeof(h->job));
    data += sizeof(h->job);
    size -= sizeof(h->job);
  }
  auto* slots = reinterpret_cast<uint8_t*>(h) + format::kHeaderSize;
  memcpy(slots, data, std::min(size, size_t{64} * format::kRecordSize));
  h->write_pos.store(h->read_pos.load() + (delta % 2 ? delta : delta % 65));

  daemon::AggregatorOptions options;
  options.history = 128;
  static daemon::Aggregator* aggregator = new daemon::Aggregator(options);
  static daemon::ProcessId id = aggregator->AddProcess(1, format::Identity());
  static daemon::LiveOps* live = [] {  // the ops reach it through the tap
    auto* l = new daemon::LiveOps();
    aggregator->AddOpTap([l](daemon::ProcessId p, const daemon::TapOp* ops, size_t n) {
      l->AddAll(p, ops, n);
    });
    return l;
  }();
  (void)live;  // held by the tap
  format::RecordSlot buffer[64];
  format::ReadStats stats;
  size_t n = reader->Read(buffer, 64, &stats);
  aggregator->Ingest(id, buffer, n, 1700000000LL * 1000000000LL);
  daemon::ProcessStatus st;
  st.identity = reader->identity();
  format::InflightRow rows[format::kMaxInflight];
  int count = 0;
  st.inflight_valid = reader->Inflight(rows, &count);
  if (st.inflight_valid) st.inflight.assign(rows, rows + count);
  aggregator->UpdateStatus(id, st);
  daemon::BuildFamilies(aggregator->TakeSnapshot(1700000001LL * 1000000000LL));
  return 0;
}
