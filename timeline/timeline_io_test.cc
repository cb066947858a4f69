#include "timeline/timeline_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "gtest/gtest.h"

namespace xtimer {
namespace timeline {
namespace {

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

Metadata SampleMetadata() {
  Metadata m;
  m.job = "llama";
  m.host = "node-a";
  m.node = "a";
  m.pod = "pod-7";
  m.pid = 4242;
  m.rank = 3;
  m.local_rank = 1;
  m.world_size = 16;
  m.device = 1;
  m.clock_realtime_ns = 1700000000123456789;
  m.clock_monotonic_ns = 987654321;
  m.strings = {"", "ampere_bf16_s16816gemm", std::string(300, 'x')};
  CommInfo c;
  c.id = 0x1234567890abcdefull;
  c.parent_id = 7;
  c.size = 4;
  c.rank = 2;
  c.global_rank = 3;
  c.members = {0, 1, 3, -1};
  m.comms = {c, CommInfo{}};
  m.dump_time_ns = 11;
  m.window_begin_ns = 12;
  m.window_end_ns = 13;
  m.kinds = kDumpMatmul | kDumpNccl;
  m.hook.present = true;
  m.hook.start_ns = 5;
  m.hook.own_ns = 1234;
  m.hook.budget_ppm = 10000;
  m.hook.calls = {0, 100, 30};
  m.hook.timed = {0, 2, 30};
  return m;
}

EventRecord Event(uint64_t i) {
  EventRecord e{};
  e.op = 32;
  e.kind = 2;
  e.dtype = 4;
  e.device = 1;
  e.name = static_cast<uint32_t>(i % 3);
  e.peer = -1;
  e.stream = 0x7f00 + i % 4;
  e.cpu_launch_ns = 1000 + static_cast<int64_t>(i) * 10;
  e.gpu_start_ns = 2000 + static_cast<int64_t>(i) * 10;
  e.duration_ns = static_cast<int64_t>(i);
  e.bytes = i * 3;
  e.seq = i;
  e.root = -1;
  return e;
}

std::string WriteSample(uint64_t events, const std::string& name) {
  std::string path = TempDir() + "/" + name;
  std::string error;
  auto w = TimelineWriter::Create(path, SampleMetadata(), &error);
  EXPECT_NE(w, nullptr) << error;
  for (uint64_t i = 0; i < events; ++i) EXPECT_TRUE(w->Append(Event(i)));
  EXPECT_EQ(w->events(), events);
  EXPECT_TRUE(w->Finish(&error)) << error;
  return path;
}

size_t MetadataEnd(const std::vector<uint8_t>& bytes) {
  MetadataHeader mh;
  std::memcpy(&mh, bytes.data() + sizeof(FileHeader), sizeof(mh));
  return sizeof(FileHeader) + sizeof(mh) + mh.payload_bytes;
}

TEST(TimelineFileName, Formats) {
  EXPECT_EQ(TimelineFileName(3, 16, 99), "00003-00016.timeline");
  EXPECT_EQ(TimelineFileName(-1, 16, 99), "pid-99.timeline");
  EXPECT_EQ(TimelineFileName(-1, -1, 99, 1), "pid-99-dev1.timeline");
}

TEST(Crc32, KnownValue) {
  EXPECT_EQ(Crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(Crc32("6789", 4, Crc32("12345", 5)), 0xCBF43926u);
}

TEST(TimelineIo, RoundTrip) {
  const uint64_t n = 2 * kEventsPerBlock + 17;
  std::string path = WriteSample(n, "roundtrip.timeline");
  std::vector<EventRecord> got;
  ReadResult r = ReadTimeline(path, [&](const EventRecord& e) { got.push_back(e); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(got.size(), n);
  for (uint64_t i = 0; i < n; ++i) {
    EventRecord want = Event(i);
    ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(EventRecord)), 0) << i;
  }
  Metadata want = SampleMetadata();
  const Metadata& m = r.metadata;
  EXPECT_EQ(m.job, want.job);
  EXPECT_EQ(m.host, want.host);
  EXPECT_EQ(m.node, want.node);
  EXPECT_EQ(m.pod, want.pod);
  EXPECT_EQ(m.pid, want.pid);
  EXPECT_EQ(m.rank, want.rank);
  EXPECT_EQ(m.local_rank, want.local_rank);
  EXPECT_EQ(m.world_size, want.world_size);
  EXPECT_EQ(m.device, want.device);
  EXPECT_EQ(m.clock_realtime_ns, want.clock_realtime_ns);
  EXPECT_EQ(m.clock_monotonic_ns, want.clock_monotonic_ns);
  EXPECT_EQ(m.strings, want.strings);
  ASSERT_EQ(m.comms.size(), 2u);
  EXPECT_EQ(m.comms[0].id, want.comms[0].id);
  EXPECT_EQ(m.comms[0].parent_id, 7u);
  EXPECT_EQ(m.comms[0].size, 4);
  EXPECT_EQ(m.comms[0].rank, 2);
  EXPECT_EQ(m.comms[0].global_rank, 3);
  EXPECT_EQ(m.comms[0].members, want.comms[0].members);
  EXPECT_TRUE(m.comms[1].members.empty());
  EXPECT_EQ(m.dump_time_ns, 11);
  EXPECT_EQ(m.window_begin_ns, 12);
  EXPECT_EQ(m.window_end_ns, 13);
  EXPECT_EQ(m.kinds, kDumpMatmul | kDumpNccl);
  EXPECT_TRUE(m.hook.present);
  EXPECT_EQ(m.hook.start_ns, 5);
  EXPECT_EQ(m.hook.own_ns, 1234u);
  EXPECT_EQ(m.hook.budget_ppm, 10000u);
  EXPECT_EQ(m.hook.calls, want.hook.calls);
  EXPECT_EQ(m.hook.timed, want.hook.timed);
  // The buffer reader agrees.
  std::vector<uint8_t> bytes = Slurp(path);
  uint64_t count = 0;
  ReadResult rb =
      ReadTimelineBuffer(bytes.data(), bytes.size(), [&](const EventRecord&) { ++count; });
  EXPECT_TRUE(rb.complete);
  EXPECT_EQ(count, n);
}

TEST(TimelineIo, BlocksComeAfterTheMetadata) {
  const uint64_t n = 2 * kEventsPerBlock + 17;
  std::string path = WriteSample(n, "blocks.timeline");
  std::vector<size_t> counts;
  int metadata_calls = 0;
  uint64_t next = 0;
  BlockCallbacks cb;
  cb.on_metadata = [&](const Metadata& m) {
    EXPECT_TRUE(counts.empty()) << "metadata after a block";
    EXPECT_EQ(m.comms.size(), 2u);
    ++metadata_calls;
  };
  cb.on_block = [&](const EventRecord* events, size_t count) {
    counts.push_back(count);
    for (size_t i = 0; i < count; ++i, ++next) {
      EventRecord want = Event(next);
      ASSERT_EQ(std::memcmp(&events[i], &want, sizeof(EventRecord)), 0) << next;
    }
  };
  ReadResult r = ReadTimelineBlocks(path, cb);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.events, n);
  EXPECT_EQ(metadata_calls, 1);
  EXPECT_EQ(counts, (std::vector<size_t>{kEventsPerBlock, kEventsPerBlock, 17}));
}

TEST(TimelineIo, BlocksAreWhereTheReaderSays) {
  const uint64_t n = kEventsPerBlock + 5;
  std::string path = WriteSample(n, "layout.timeline");
  std::vector<uint8_t> bytes = Slurp(path);
  std::vector<std::pair<uint64_t, uint32_t>> blocks;
  BlockCallbacks cb;
  cb.on_block_at = [&](uint64_t offset, uint32_t count) { blocks.push_back({offset, count}); };
  cb.on_block = [](const EventRecord*, size_t) {};
  ASSERT_TRUE(ReadTimelineBlocks(path, cb).complete);
  ASSERT_EQ(blocks.size(), 2u);
  uint64_t next = 0;
  for (const auto& b : blocks) {
    for (uint32_t i = 0; i < b.second; ++i, ++next) {
      const EventRecord want = Event(next);
      ASSERT_LE(b.first + (i + 1) * sizeof(EventRecord), bytes.size());
      EXPECT_EQ(std::memcmp(bytes.data() + b.first + i * sizeof(EventRecord), &want,
                            sizeof(EventRecord)), 0) << next;
    }
  }
  EXPECT_EQ(next, n);
}

TEST(TimelineIo, EmptyFileIsComplete) {
  std::string path = WriteSample(0, "empty.timeline");
  ReadResult r = ReadTimeline(path, [](const EventRecord&) {});
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.events, 0u);
}

TEST(TimelineIo, NoPartialFileUnderFinalName) {
  std::string path = TempDir() + "/partial.timeline";
  unlink(path.c_str());
  std::string error;
  {
    auto w = TimelineWriter::Create(path, SampleMetadata(), &error);
    ASSERT_NE(w, nullptr);
    w->Append(Event(1));
    struct stat st;
    EXPECT_NE(stat(path.c_str(), &st), 0);  // not visible before Finish
  }  // destroyed without Finish: the temporary file is removed
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0);
}

TEST(TimelineIo, CreateFailsInMissingDirectory) {
  std::string error;
  auto w = TimelineWriter::Create("/nonexistent-dir/x.timeline", SampleMetadata(), &error);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(error.find("/nonexistent-dir/x.timeline"), std::string::npos) << error;
}

TEST(TimelineIo, MissingFile) {
  ReadResult r = ReadTimeline("/nonexistent.timeline", [](const EventRecord&) {});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("cannot open /nonexistent.timeline"), std::string::npos) << r.error;
}

TEST(TimelineIo, TruncationAtManyOffsets) {
  const uint64_t n = 2 * kEventsPerBlock + 5;
  std::vector<uint8_t> bytes = Slurp(WriteSample(n, "trunc.timeline"));
  const size_t meta_end = MetadataEnd(bytes);
  const size_t block_bytes = sizeof(BlockHeader) + kEventsPerBlock * sizeof(EventRecord);
  std::vector<size_t> cuts;
  for (size_t c = 0; c <= meta_end + 64; ++c) cuts.push_back(c);
  for (size_t c = meta_end; c < bytes.size(); c += 997) cuts.push_back(c);
  for (size_t k = 1; k <= 2; ++k) {
    cuts.push_back(meta_end + k * block_bytes - 1);
    cuts.push_back(meta_end + k * block_bytes);
    cuts.push_back(meta_end + k * block_bytes + 1);
  }
  cuts.push_back(bytes.size() - 1);
  for (size_t cut : cuts) {
    uint64_t delivered = 0;
    ReadResult r = ReadTimelineBuffer(bytes.data(), cut, [&](const EventRecord&) { ++delivered; });
    SCOPED_TRACE("cut at " + std::to_string(cut));
    EXPECT_FALSE(r.complete);
    EXPECT_FALSE(r.error.empty());
    EXPECT_EQ(delivered, r.events);
    if (cut < meta_end) {
      EXPECT_FALSE(r.ok);
      EXPECT_NE(r.error.find("offset"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find("truncated"), std::string::npos) << r.error;
      continue;
    }
    ASSERT_TRUE(r.ok) << r.error;
    uint64_t whole_blocks = (cut - meta_end) / block_bytes;
    EXPECT_EQ(r.events, whole_blocks * kEventsPerBlock);
    EXPECT_NE(r.error.find("recovered " + std::to_string(r.events) + " events"), std::string::npos)
        << r.error;
  }
}

TEST(TimelineIo, FlippedBytes) {
  const uint64_t n = 2 * kEventsPerBlock + 5;
  const std::vector<uint8_t> good = Slurp(WriteSample(n, "flip.timeline"));
  const size_t meta_end = MetadataEnd(good);
  const size_t block_bytes = sizeof(BlockHeader) + kEventsPerBlock * sizeof(EventRecord);
  struct Case {
    size_t offset;
    bool ok;
    uint64_t events;
    const char* message;
  };
  const Case cases[] = {
      {0, false, 0, "bad magic at offset 0"},
      {8, false, 0, "unsupported version"},
      {16, false, 0, "bad event_size"},
      {64, false, 0, "bad metadata magic at offset 64"},
      {68, false, 0, "metadata CRC mismatch at offset 80"},
      {90, false, 0, "metadata CRC mismatch"},
      {meta_end + 1, true, 0, "bad magic of block 0"},
      {meta_end + 100, true, 0, "CRC mismatch in block 0"},
      {meta_end + block_bytes + 12, true, kEventsPerBlock, "block 1 at offset"},
      {meta_end + block_bytes + 5000, true, kEventsPerBlock, "CRC mismatch in block 1"},
      {meta_end + 2 * block_bytes + 20, true, 2 * kEventsPerBlock, "CRC mismatch in block 2"},
      {24, true, n, "the header says"},  // event_count
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes = good;
    bytes[c.offset] ^= 0x40;
    ReadResult r = ReadTimelineBuffer(bytes.data(), bytes.size(), [](const EventRecord&) {});
    SCOPED_TRACE("flip at " + std::to_string(c.offset));
    EXPECT_EQ(r.ok, c.ok) << r.error;
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.events, c.events);
    EXPECT_NE(r.error.find(c.message), std::string::npos) << r.error;
  }
}

// Hand-built files to reach metadata errors that survive the CRC.
template <typename T>
void Put(std::string* s, T v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

std::string Field(uint16_t tag, const std::string& payload, int64_t len_override = -1) {
  std::string f;
  Put<uint16_t>(&f, tag);
  Put<uint32_t>(&f, len_override >= 0 ? static_cast<uint32_t>(len_override)
                                      : static_cast<uint32_t>(payload.size()));
  f += payload;
  return f;
}

std::vector<uint8_t> BuildFile(const std::string& payload, uint64_t payload_bytes_override = 0) {
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, 8);
  h.version = kTimelineVersion;
  h.header_size = sizeof(h);
  h.event_size = sizeof(EventRecord);
  MetadataHeader mh{};
  mh.magic = kMetadataMagic;
  mh.crc32 = Crc32(payload.data(), payload.size());
  mh.payload_bytes = payload_bytes_override ? payload_bytes_override : payload.size();
  std::string s(reinterpret_cast<const char*>(&h), sizeof(h));
  s.append(reinterpret_cast<const char*>(&mh), sizeof(mh));
  s += payload;
  return std::vector<uint8_t>(s.begin(), s.end());
}

ReadResult ReadBytes(const std::vector<uint8_t>& b) {
  return ReadTimelineBuffer(b.data(), b.size(), [](const EventRecord&) {});
}

TEST(TimelineIo, HugeLengthsInMetadata) {
  {
    ReadResult r = ReadBytes(BuildFile(Field(kTagJob, "abc", 0x7fffffff)));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("metadata field tag 1 at offset 80: length 2147483647 exceeds"),
              std::string::npos)
        << r.error;
  }
  {
    std::string p;
    Put<uint32_t>(&p, 0xffffffffu);
    ReadResult r = ReadBytes(BuildFile(Field(kTagStrings, p)));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("string table count 4294967295 exceeds the field"), std::string::npos)
        << r.error;
  }
  {
    std::string p;
    Put<uint32_t>(&p, 2);
    Put<uint16_t>(&p, 1);
    p += "a";
    Put<uint16_t>(&p, 60000);  // runs past the field
    ReadResult r = ReadBytes(BuildFile(Field(kTagStrings, p)));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("string 1 of 2 runs past the field"), std::string::npos) << r.error;
  }
  {
    std::string p;
    Put<uint32_t>(&p, 1);
    Put<uint64_t>(&p, 1);
    Put<uint64_t>(&p, 0);
    Put<int32_t>(&p, 2);
    Put<int32_t>(&p, 0);
    Put<int32_t>(&p, 0);
    Put<uint32_t>(&p, 0x40000000u);  // members
    ReadResult r = ReadBytes(BuildFile(Field(kTagComms, p)));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("member count 1073741824 exceeds the field"), std::string::npos)
        << r.error;
  }
  {
    std::string p;
    Put<uint32_t>(&p, 100000000u);
    ReadResult r = ReadBytes(BuildFile(Field(kTagComms, p)));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("communicator count 100000000 exceeds"), std::string::npos) << r.error;
  }
  {
    ReadResult r = ReadBytes(BuildFile(Field(kTagIdentity, "short")));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("identity field shorter than 20 bytes"), std::string::npos) << r.error;
  }
  {
    ReadResult r = ReadBytes(BuildFile("", uint64_t{1} << 40));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("metadata size 1099511627776 at offset 72 exceeds the limit"),
              std::string::npos)
        << r.error;
  }
  {
    ReadResult r = ReadBytes(BuildFile("", 1000));  // larger than the file
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("truncated metadata at offset 80"), std::string::npos) << r.error;
  }
}

TEST(TimelineIo, UnknownMetadataTagsAreSkipped) {
  std::string identity;
  for (int32_t v : {77, 5, 1, 8, 1}) Put<int32_t>(&identity, v);
  std::string payload = Field(999, std::string(1000, '\xff')) + Field(kTagHost, "h1") +
                        Field(0xffff, "") + Field(kTagIdentity, identity + "future");
  ReadResult r = ReadBytes(BuildFile(payload));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.complete) << r.error;
  EXPECT_EQ(r.metadata.host, "h1");
  EXPECT_EQ(r.metadata.pid, 77);
  EXPECT_EQ(r.metadata.rank, 5);
  EXPECT_EQ(r.metadata.world_size, 8);
  EXPECT_EQ(r.metadata.strings, std::vector<std::string>{""});
}


NvtxEntry NvtxRange(int64_t start, int64_t end, int32_t depth) {
  NvtxEntry e{};
  e.event = 1;  // format::NvtxEvent::kRange
  e.tid = 77;
  e.name = 1;
  e.start_ns = start;
  e.end_ns = end;
  e.depth = depth;
  return e;
}

std::string NvtxFile(const std::vector<NvtxEntry>& nvtx, const std::string& name) {
  Metadata m = SampleMetadata();
  m.nvtx = nvtx;
  const std::string path = TempDir() + "/" + name;
  std::string error;
  auto w = TimelineWriter::Create(path, m, &error);
  EXPECT_NE(w, nullptr) << error;
  if (w != nullptr) {
    EXPECT_TRUE(w->Finish(&error)) << error;
  }
  return path;
}

TEST(TimelineIo, NvtxEventsRoundTrip) {
  NvtxEntry mark = NvtxRange(30, 30, 0);
  mark.event = 4;
  mark.domain = 2;
  mark.color = 0xff00ff00;
  const std::vector<NvtxEntry> nvtx = {NvtxRange(10, 20, 0), NvtxRange(12, 18, 1), mark};
  ReadResult r = ReadTimelineMetadata(NvtxFile(nvtx, "nvtx.timeline"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.metadata.nvtx.size(), nvtx.size());
  for (size_t i = 0; i < nvtx.size(); ++i) {
    EXPECT_EQ(std::memcmp(&r.metadata.nvtx[i], &nvtx[i], sizeof(NvtxEntry)), 0) << i;
  }
  // A file without NVTX events carries no NVTX field.
  EXPECT_TRUE(ReadTimelineMetadata(NvtxFile({}, "no_nvtx.timeline")).metadata.nvtx.empty());
}

TEST(TimelineIo, NvtxEventsOutsideTheLimitsRejectTheFile) {
  NvtxEntry bad_string = NvtxRange(10, 20, 0);
  bad_string.name = 3;  // SampleMetadata's string table has 3 entries
  NvtxEntry bad_event = NvtxRange(10, 20, 0);
  bad_event.event = 9;
  const std::vector<std::pair<NvtxEntry, std::string>> cases = {
      {NvtxRange(20, 10, 0), "NVTX event 0: duration -10 is outside"},
      {NvtxRange(10, 20, 1024), "NVTX event 0: depth 1024 is outside"},
      {NvtxRange(-1, 20, 0), "NVTX event 0: start_ns -1 is outside"},
      {bad_string, "NVTX event 0: string index past the string table"},
      {bad_event, "NVTX event 0: unknown event 9"},
  };
  for (const auto& c : cases) {
    ReadResult r = ReadTimelineMetadata(NvtxFile({c.first}, "bad_nvtx.timeline"));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find(c.second), std::string::npos) << r.error;
  }
  std::string field;
  Put<uint32_t>(&field, 2);  // two entries announced, one present
  field.append(std::string(sizeof(NvtxEntry), '\0'));
  ReadResult r = ReadBytes(BuildFile(Field(kTagNvtx, field)));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("NVTX event count 2 exceeds the field"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace timeline
}  // namespace xtimer
