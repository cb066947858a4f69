#include "timeline/timeline_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <utility>

#include <libdeflate.h>

#include "format/record.h"
#include "util/clock.h"
#include "util/process_name.h"

namespace xtimer {
namespace timeline {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// ---- metadata encoding ----
template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutField(std::string* out, uint16_t tag, const std::string& payload) {
  Put<uint16_t>(out, tag);
  Put<uint32_t>(out, static_cast<uint32_t>(payload.size()));
  out->append(payload);
}

std::string EncodeMetadata(const Metadata& m) {
  std::string out, f;
  PutField(&out, kTagJob, m.job);
  PutField(&out, kTagHost, m.host);
  PutField(&out, kTagNode, m.node);
  PutField(&out, kTagPod, m.pod);
  f.clear();
  Put<int32_t>(&f, m.pid);
  Put<int32_t>(&f, m.rank);
  Put<int32_t>(&f, m.local_rank);
  Put<int32_t>(&f, m.world_size);
  Put<int32_t>(&f, m.device);
  PutField(&out, kTagIdentity, f);
  f.clear();
  Put<int64_t>(&f, m.clock_realtime_ns);
  Put<int64_t>(&f, m.clock_monotonic_ns);
  PutField(&out, kTagClock, f);
  f.clear();
  Put<uint32_t>(&f, static_cast<uint32_t>(m.strings.size()));
  for (const std::string& s : m.strings) {
    size_t n = s.size() > 0xffff ? 0xffff : s.size();
    Put<uint16_t>(&f, static_cast<uint16_t>(n));
    f.append(s.data(), n);
  }
  PutField(&out, kTagStrings, f);
  f.clear();
  Put<uint32_t>(&f, static_cast<uint32_t>(m.comms.size()));
  for (const CommInfo& c : m.comms) {
    Put<uint64_t>(&f, c.id);
    Put<uint64_t>(&f, c.parent_id);
    Put<int32_t>(&f, c.size);
    Put<int32_t>(&f, c.rank);
    Put<int32_t>(&f, c.global_rank);
    Put<uint32_t>(&f, static_cast<uint32_t>(c.members.size()));
    for (int32_t r : c.members) Put<int32_t>(&f, r);
  }
  PutField(&out, kTagComms, f);
  f.clear();
  Put<int64_t>(&f, m.dump_time_ns);
  Put<int64_t>(&f, m.window_begin_ns);
  Put<int64_t>(&f, m.window_end_ns);
  Put<uint32_t>(&f, m.kinds);
  PutField(&out, kTagDump, f);
  if (m.hook.present) {
    f.clear();
    const uint32_t n = static_cast<uint32_t>(
        std::min<size_t>({m.hook.calls.size(), m.hook.timed.size(), kHookCostKinds}));
    Put<int64_t>(&f, m.hook.start_ns);
    Put<uint64_t>(&f, m.hook.own_ns);
    Put<uint32_t>(&f, m.hook.budget_ppm);
    Put<uint32_t>(&f, n);
    for (uint32_t i = 0; i < n; ++i) {
      Put<uint64_t>(&f, m.hook.calls[i]);
      Put<uint64_t>(&f, m.hook.timed[i]);
    }
    PutField(&out, kTagHookCost, f);
  }
  if (!m.nvtx.empty()) {
    f.clear();
    Put<uint32_t>(&f, static_cast<uint32_t>(m.nvtx.size()));
    f.append(reinterpret_cast<const char*>(m.nvtx.data()), m.nvtx.size() * sizeof(NvtxEntry));
    PutField(&out, kTagNvtx, f);
  }
  return out;
}

// ---- metadata decoding (untrusted input) ----
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool Get(T* v) {
    if (n_ - pos_ < sizeof(T)) return false;
    std::memcpy(v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetBytes(size_t len, std::string* s) {
    if (n_ - pos_ < len) return false;
    s->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  size_t remaining() const { return n_ - pos_; }
  size_t pos() const { return pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

// Parses one known field; returns an empty string or what is wrong with it.
std::string ParseField(uint16_t tag, Cursor c, Metadata* m) {
  switch (tag) {
    case kTagJob:
      c.GetBytes(c.remaining(), &m->job);
      return "";
    case kTagHost:
      c.GetBytes(c.remaining(), &m->host);
      return "";
    case kTagNode:
      c.GetBytes(c.remaining(), &m->node);
      return "";
    case kTagPod:
      c.GetBytes(c.remaining(), &m->pod);
      return "";
    case kTagIdentity:
      if (!c.Get(&m->pid) || !c.Get(&m->rank) || !c.Get(&m->local_rank) || !c.Get(&m->world_size) ||
          !c.Get(&m->device)) {
        return "identity field shorter than 20 bytes";
      }
      return "";
    case kTagClock:
      if (!c.Get(&m->clock_realtime_ns) || !c.Get(&m->clock_monotonic_ns)) {
        return "clock field shorter than 16 bytes";
      }
      return "";
    case kTagDump:
      if (!c.Get(&m->dump_time_ns) || !c.Get(&m->window_begin_ns) || !c.Get(&m->window_end_ns) ||
          !c.Get(&m->kinds)) {
        return "dump field shorter than 28 bytes";
      }
      return "";
    case kTagStrings: {
      uint32_t count = 0;
      if (!c.Get(&count)) return "string table without a count";
      if (count > c.remaining() / 2) {
        return "string table count " + std::to_string(count) + " exceeds the field";
      }
      m->strings.clear();
      m->strings.reserve(count);
      for (uint32_t i = 0; i < count; ++i) {
        uint16_t len = 0;
        std::string s;
        if (!c.Get(&len) || !c.GetBytes(len, &s)) {
          return "string " + std::to_string(i) + " of " + std::to_string(count) +
                 " runs past the field";
        }
        m->strings.push_back(std::move(s));
      }
      if (m->strings.empty()) m->strings.push_back("");
      return "";
    }
    case kTagComms: {
      uint32_t count = 0;
      if (!c.Get(&count)) return "communicator table without a count";
      if (count > c.remaining() / 32) {
        return "communicator count " + std::to_string(count) + " exceeds the field";
      }
      m->comms.clear();
      m->comms.reserve(count);
      for (uint32_t i = 0; i < count; ++i) {
        CommInfo ci;
        uint32_t nmembers = 0;
        if (!c.Get(&ci.id) || !c.Get(&ci.parent_id) || !c.Get(&ci.size) || !c.Get(&ci.rank) ||
            !c.Get(&ci.global_rank) || !c.Get(&nmembers)) {
          return "communicator " + std::to_string(i) + " runs past the field";
        }
        if (nmembers > c.remaining() / 4) {
          return "communicator " + std::to_string(i) + " member count " + std::to_string(nmembers) +
                 " exceeds the field";
        }
        ci.members.resize(nmembers);
        for (uint32_t k = 0; k < nmembers; ++k) c.Get(&ci.members[k]);
        m->comms.push_back(std::move(ci));
      }
      return "";
    }
    case kTagHookCost: {
      HookCost& h = m->hook;
      uint32_t n = 0;
      if (!c.Get(&h.start_ns) || !c.Get(&h.own_ns) || !c.Get(&h.budget_ppm) || !c.Get(&n)) {
        return "hook cost field shorter than 24 bytes";
      }
      if (n > kHookCostKinds || n > c.remaining() / 16) {
        return "hook cost kind count " + std::to_string(n) + " exceeds the field";
      }
      h.calls.resize(n);
      h.timed.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        c.Get(&h.calls[i]);
        c.Get(&h.timed[i]);
      }
      h.present = true;
      return "";
    }
    case kTagNvtx: {
      uint32_t count = 0;
      if (!c.Get(&count)) return "NVTX table without a count";
      if (count > c.remaining() / sizeof(NvtxEntry)) {
        return "NVTX event count " + std::to_string(count) + " exceeds the field";
      }
      m->nvtx.resize(count);
      for (NvtxEntry& e : m->nvtx) c.Get(&e);
      return "";
    }
    default:
      return "";  // unknown tags are skipped
  }
}

// Compacts the events of block `index` that keep within the limits to its front; returns how many.
// Counts the others in *rejected, the first one's reason in *why.
uint32_t KeepInRange(EventRecord* events, uint32_t count, uint32_t index, uint64_t* rejected,
                     std::string* why) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (EventWithinLimits(events[i])) {
      if (kept != i) events[kept] = events[i];
      ++kept;
      continue;
    }
    if (*rejected == 0) *why = "block " + std::to_string(index) + " event " + std::to_string(i) +
                               ": " + EventOutOfRange(events[i]);
    ++*rejected;
  }
  return kept;
}

std::string ParseMetadata(const uint8_t* data, size_t size, uint64_t base_offset, Metadata* m) {
  Cursor c(data, size);
  while (c.remaining() > 0) {
    uint64_t at = base_offset + c.pos();
    uint16_t tag = 0;
    uint32_t len = 0;
    if (!c.Get(&tag) || !c.Get(&len)) {
      return "metadata field header truncated at offset " + std::to_string(at);
    }
    if (len > c.remaining()) {
      return "metadata field tag " + std::to_string(tag) + " at offset " + std::to_string(at) +
             ": length " + std::to_string(len) + " exceeds the metadata block";
    }
    std::string err = ParseField(tag, Cursor(data + c.pos(), len), m);
    if (!err.empty()) {
      return "metadata field tag " + std::to_string(tag) + " at offset " + std::to_string(at) +
             ": " + err;
    }
    std::string skip;
    c.GetBytes(len, &skip);
  }
  return "";
}

// A sequential byte source: a file or a buffer.
class Source {
 public:
  virtual ~Source() = default;
  // Reads up to n bytes; returns how many were read (short only at the end).
  virtual size_t Read(void* dst, size_t n) = 0;
  // Bytes left, when known (for sanity checks before large allocations); SIZE_MAX otherwise.
  virtual uint64_t Remaining() const = 0;
};

class BufferSource : public Source {
 public:
  BufferSource(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t Read(void* dst, size_t n) override {
    size_t k = n < n_ - pos_ ? n : n_ - pos_;
    if (k) std::memcpy(dst, p_ + pos_, k);
    pos_ += k;
    return k;
  }
  uint64_t Remaining() const override { return n_ - pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

class FileSource : public Source {
 public:
  FileSource(FILE* f, uint64_t size) : f_(f), left_(size) {}
  size_t Read(void* dst, size_t n) override {
    size_t k = std::fread(dst, 1, n, f_);
    left_ = k > left_ ? 0 : left_ - k;
    return k;
  }
  uint64_t Remaining() const override { return left_; }

 private:
  FILE* f_;
  uint64_t left_;
};

BlockCallbacks EachEvent(const std::function<void(const EventRecord&)>& on_event) {
  BlockCallbacks cb;
  cb.on_block = [&on_event](const EventRecord* events, size_t count) {
    for (size_t i = 0; i < count; ++i) on_event(events[i]);
  };
  return cb;
}

// The file header, and the header bytes this reader does not know; "" or why not. *offset: where
// the metadata starts.
std::string ReadFileHeader(Source* src, FileHeader* h, uint64_t* offset) {
  const size_t got = src->Read(h, sizeof(*h));
  if (got < sizeof(*h)) {
    return "truncated file header at offset 0: " + std::to_string(got) + " of " +
           std::to_string(sizeof(*h)) + " bytes";
  }
  if (std::memcmp(h->magic, kFileMagic, sizeof(kFileMagic)) != 0) {
    return "bad magic at offset 0: not a timeline file";
  }
  if (h->version != kTimelineVersion) {
    return "unsupported version " + std::to_string(h->version) + " at offset 8 (this reader: " +
           std::to_string(kTimelineVersion) + ")";
  }
  if (h->header_size < sizeof(FileHeader) || h->header_size > 4096) {
    return "bad header_size " + std::to_string(h->header_size) + " at offset 12";
  }
  if (h->event_size != sizeof(EventRecord)) {
    return "bad event_size " + std::to_string(h->event_size) + " at offset 16 (expected " +
           std::to_string(sizeof(EventRecord)) + ")";
  }
  *offset = sizeof(*h);
  if (h->header_size > sizeof(*h)) {
    std::string skip(h->header_size - sizeof(*h), '\0');
    if (src->Read(&skip[0], skip.size()) < skip.size()) {
      return "truncated file header at offset " + std::to_string(*offset);
    }
    *offset = h->header_size;
  }
  return "";
}

// The metadata section at *offset, checked (CRC, limits); "" or why not. *offset: past it.
std::string ReadMetadata(Source* src, uint64_t* offset, Metadata* metadata) {
  MetadataHeader mh;
  const std::string at = std::to_string(*offset);
  if (src->Read(&mh, sizeof(mh)) < sizeof(mh)) return "truncated metadata header at offset " + at;
  if (mh.magic != kMetadataMagic) return "bad metadata magic at offset " + at;
  const std::string body_at = std::to_string(*offset + sizeof(mh));
  if (mh.payload_bytes > kMaxMetadataBytes) {
    return "metadata size " + std::to_string(mh.payload_bytes) + " at offset " +
           std::to_string(*offset + 8) + " exceeds the limit of " +
           std::to_string(kMaxMetadataBytes);
  }
  if (mh.payload_bytes > src->Remaining()) {
    return "truncated metadata at offset " + body_at + ": " + std::to_string(src->Remaining()) +
           " of " + std::to_string(mh.payload_bytes) + " bytes";
  }
  std::string payload(static_cast<size_t>(mh.payload_bytes), '\0');
  if (src->Read(&payload[0], payload.size()) < payload.size()) {
    return "truncated metadata at offset " + body_at;
  }
  *offset += sizeof(mh);
  const uint8_t* pp = reinterpret_cast<const uint8_t*>(payload.data());
  if (Crc32(pp, payload.size()) != mh.crc32) {
    return "metadata CRC mismatch at offset " + std::to_string(*offset);
  }
  std::string err = ParseMetadata(pp, payload.size(), *offset, metadata);
  if (err.empty()) {
    err = MetadataOutOfRange(*metadata);
    if (!err.empty()) err = "metadata at offset " + std::to_string(*offset) + ": " + err;
  }
  *offset += payload.size();
  return err;
}

// Event block `index` at *offset into *block (grown to the largest block read, so a header-only
// read allocates nothing); its event count, 0 at the end of the file. *stop: why reading must
// stop (a damaged or truncated block).
uint32_t ReadBlock(Source* src, uint32_t index, uint64_t offset, std::vector<EventRecord>* block,
                   std::string* stop) {
  BlockHeader bh;
  const size_t got = src->Read(&bh, sizeof(bh));
  if (got == 0) return 0;
  const std::string where =
      "block " + std::to_string(index) + " at offset " + std::to_string(offset);
  if (got < sizeof(bh)) {
    *stop = "truncated header of " + where;
  } else if (bh.magic != kBlockMagic) {
    *stop = "bad magic of " + where;
  } else if (bh.count == 0 || bh.count > kEventsPerBlock) {
    *stop = "bad event count " + std::to_string(bh.count) + " in " + where;
  } else if (bh.index != index) {
    *stop = where + " says it is block " + std::to_string(bh.index);
  }
  if (!stop->empty()) return 0;
  const size_t bytes = static_cast<size_t>(bh.count) * sizeof(EventRecord);
  if (bytes > src->Remaining()) {
    *stop = "truncated " + where + ": " + std::to_string(src->Remaining()) + " of " +
            std::to_string(bytes) + " event bytes";
    return 0;
  }
  if (block->size() < bh.count) block->resize(bh.count);
  const size_t read = src->Read(block->data(), bytes);
  if (read < bytes) {
    *stop = "truncated " + where + ": " + std::to_string(read) + " of " + std::to_string(bytes) +
            " event bytes";
    return 0;
  }
  if (Crc32(block->data(), bytes) != bh.crc32) {
    *stop = "CRC mismatch in " + where;
    return 0;
  }
  return bh.count;
}

// Every event block after the metadata, to cb.on_block; what was read and why it stopped in *r.
void ReadBlocks(Source* src, const BlockCallbacks& cb, const FileHeader& h, uint64_t offset,
                ReadResult* r) {
  std::vector<EventRecord> block;
  uint32_t index = 0;
  std::string stop, rejected_why;
  for (;; ++index) {
    const uint32_t count = ReadBlock(src, index, offset, &block, &stop);
    if (count == 0) break;
    if (cb.on_block_at) cb.on_block_at(offset + sizeof(BlockHeader), count);
    const uint32_t kept = KeepInRange(block.data(), count, index, &r->rejected, &rejected_why);
    if (kept > 0) cb.on_block(block.data(), kept);
    r->events += kept;
    offset += sizeof(BlockHeader) + static_cast<uint64_t>(count) * sizeof(EventRecord);
  }
  if (stop.empty() && h.event_count != r->events + r->rejected) {
    stop = h.event_count == 0 ? "the header's event count is 0: the writer did not finish"
                              : "the header says " + std::to_string(h.event_count) +
                                    " events, the blocks hold " +
                                    std::to_string(r->events + r->rejected);
  }
  if (!stop.empty()) {
    r->error = "recovered " + std::to_string(r->events) + " events in " + std::to_string(index) +
               " intact blocks; stopped: " + stop;
  }
  if (r->rejected > 0) {
    r->error += std::string(r->error.empty() ? "" : "; ") + std::to_string(r->rejected) +
                " events out of range left out (first: " + rejected_why + ")";
  }
}

ReadResult ReadFrom(Source* src, const BlockCallbacks& cb) {
  ReadResult r;
  FileHeader h;
  uint64_t offset = 0;
  r.error = ReadFileHeader(src, &h, &offset);
  if (r.error.empty()) r.error = ReadMetadata(src, &offset, &r.metadata);
  if (!r.error.empty()) return r;
  r.ok = true;
  if (cb.on_metadata) cb.on_metadata(r.metadata);
  ReadBlocks(src, cb, h, offset, &r);
  r.complete = r.error.empty();
  return r;
}

}  // namespace

// libdeflate's CRC-32 uses PCLMULQDQ where the CPU has it (several GB/s): the reader checks every
// block, so this is most of a conversion's read cost.
uint32_t Crc32(const void* data, size_t size, uint32_t crc) {
  return libdeflate_crc32(crc, data, size);
}

std::string TimelineFileName(int rank, int world_size, int pid, int device) {
  if (rank < 0) return RanklessName(pid, device) + ".timeline";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%05d-%05d.timeline", rank, world_size);
  return buf;
}

struct TimelineWriter::Impl {
  int dir_fd = AT_FDCWD;  // path and tmp_path are relative to it; owned unless AT_FDCWD
  std::string path;
  std::string tmp_path;
  FILE* file = nullptr;
  std::vector<EventRecord> block;
  uint32_t next_block = 0;
  uint64_t events = 0;
  std::string error;  // sticky
  bool finished = false;

  bool Fail(const std::string& what) {
    if (error.empty()) error = what;
    return false;
  }
  bool Write(const void* p, size_t n) {
    if (!error.empty()) return false;
    if (std::fwrite(p, 1, n, file) != n) return Fail(Errno("write", tmp_path));
    return true;
  }
  bool FlushBlock() {
    if (block.empty()) return error.empty();
    BlockHeader bh{};
    bh.magic = kBlockMagic;
    bh.count = static_cast<uint32_t>(block.size());
    bh.crc32 = Crc32(block.data(), block.size() * sizeof(EventRecord));
    bh.index = next_block++;
    bool ok = Write(&bh, sizeof(bh)) && Write(block.data(), block.size() * sizeof(EventRecord));
    block.clear();
    return ok;
  }
  // Creates tmp_path exclusively, never through a symlink.
  bool OpenTemporary() {
    for (int attempt = 0; attempt < 2; ++attempt) {
      int fd = openat(dir_fd, tmp_path.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd < 0 && errno == EEXIST && attempt == 0) {
        unlinkat(dir_fd, tmp_path.c_str(), 0);
        continue;
      }
      if (fd < 0) return false;
      file = fdopen(fd, "wb");
      if (file == nullptr) close(fd);
      return file != nullptr;
    }
    return false;
  }
  ~Impl() {
    if (dir_fd != AT_FDCWD) close(dir_fd);
  }
};

std::unique_ptr<TimelineWriter> TimelineWriter::Create(const std::string& path,
                                                       const Metadata& metadata,
                                                       std::string* error) {
  return CreateAt(AT_FDCWD, path, metadata, error);
}

std::unique_ptr<TimelineWriter> TimelineWriter::CreateAt(int dir_fd, const std::string& path,
                                                         const Metadata& metadata,
                                                         std::string* error) {
  std::unique_ptr<TimelineWriter> w(new TimelineWriter());
  w->impl_.reset(new Impl());
  Impl& im = *w->impl_;
  if (dir_fd != AT_FDCWD && (im.dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0)) < 0) {
    im.dir_fd = AT_FDCWD;
    if (error) *error = Errno("cannot duplicate the directory descriptor for", path);
    return nullptr;
  }
  im.path = path;
  im.tmp_path = path + ".tmp." + std::to_string(getpid());
  if (!im.OpenTemporary()) {
    if (error) *error = Errno("cannot create", im.tmp_path);
    return nullptr;
  }
  std::string payload = EncodeMetadata(metadata);
  if (payload.size() > kMaxMetadataBytes) {
    if (error) *error = "metadata of " + std::to_string(payload.size()) + " bytes is too large";
    return nullptr;  // the destructor removes the temporary file
  }
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof(h.magic));
  h.version = kTimelineVersion;
  h.header_size = sizeof(FileHeader);
  h.event_size = sizeof(EventRecord);
  h.created_ns = RealtimeNs();
  MetadataHeader mh{};
  mh.magic = kMetadataMagic;
  mh.crc32 = Crc32(payload.data(), payload.size());
  mh.payload_bytes = payload.size();
  if (!im.Write(&h, sizeof(h)) || !im.Write(&mh, sizeof(mh)) ||
      !im.Write(payload.data(), payload.size())) {
    if (error) *error = im.error;
    return nullptr;
  }
  im.block.reserve(kEventsPerBlock);
  return w;
}

TimelineWriter::~TimelineWriter() {
  if (impl_ && impl_->file != nullptr) {
    std::fclose(impl_->file);
    unlinkat(impl_->dir_fd, impl_->tmp_path.c_str(), 0);
  }
}

bool TimelineWriter::Append(const EventRecord& event) {
  Impl& im = *impl_;
  if (!im.error.empty()) return false;
  if (im.finished) return im.Fail("Append after Finish");
  im.block.push_back(event);
  ++im.events;
  if (im.block.size() == kEventsPerBlock) return im.FlushBlock();
  return true;
}

bool TimelineWriter::Finish(std::string* error) {
  Impl& im = *impl_;
  if (!im.finished) {
    im.finished = true;
    if (im.FlushBlock() && im.error.empty()) {
      uint64_t count = im.events;
      if (std::fseek(im.file, offsetof(FileHeader, event_count), SEEK_SET) != 0) {
        im.Fail(Errno("seek", im.tmp_path));
      } else {
        im.Write(&count, sizeof(count));
      }
    }
    if (im.error.empty() && std::fflush(im.file) != 0) im.Fail(Errno("flush", im.tmp_path));
    if (im.error.empty() && fsync(fileno(im.file)) != 0) im.Fail(Errno("fsync", im.tmp_path));
    if (std::fclose(im.file) != 0) im.Fail(Errno("close", im.tmp_path));
    im.file = nullptr;
    if (im.error.empty() &&
        renameat(im.dir_fd, im.tmp_path.c_str(), im.dir_fd, im.path.c_str()) != 0) {
      im.Fail(Errno("rename to " + im.path + ":", im.tmp_path));
    }
    if (!im.error.empty()) unlinkat(im.dir_fd, im.tmp_path.c_str(), 0);
  }
  if (!im.error.empty()) {
    if (error) *error = im.error;
    return false;
  }
  return true;
}

uint64_t TimelineWriter::events() const { return impl_->events; }

ReadResult ReadTimelineBlocks(const std::string& path, const BlockCallbacks& callbacks) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    ReadResult r;
    r.error = Errno("cannot open", path);
    return r;
  }
  struct stat st;
  uint64_t size = fstat(fileno(f), &st) == 0 ? static_cast<uint64_t>(st.st_size) : UINT64_MAX;
  FileSource src(f, size);
  ReadResult r = ReadFrom(&src, callbacks);
  std::fclose(f);
  return r;
}

ReadResult ReadTimelineMetadata(const std::string& path) {
  ReadResult r;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    r.error = Errno("cannot open", path);
    return r;
  }
  struct stat st;
  uint64_t size = fstat(fileno(f), &st) == 0 ? static_cast<uint64_t>(st.st_size) : UINT64_MAX;
  FileSource src(f, size);
  FileHeader h;
  uint64_t offset = 0;
  r.error = ReadFileHeader(&src, &h, &offset);
  if (r.error.empty()) r.error = ReadMetadata(&src, &offset, &r.metadata);
  r.ok = r.error.empty();
  std::fclose(f);
  return r;
}

ReadResult ReadTimeline(const std::string& path,
                        const std::function<void(const EventRecord&)>& on_event) {
  return ReadTimelineBlocks(path, EachEvent(on_event));
}

ReadResult ReadTimelineBuffer(const uint8_t* data, size_t size,
                              const std::function<void(const EventRecord&)>& on_event) {
  BufferSource src(data, size);
  return ReadFrom(&src, EachEvent(on_event));
}

namespace {

std::string Range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return "";
  return std::string(field) + " " + std::to_string(v) + " is outside [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "]";
}

// Every event's fields are held to these (timeline/format.h): calls check(field, value, lo, hi)
// for each, in order, until one returns false. Every event of every file passes here, so the
// test (EventWithinLimits) makes no text; the reason is written only for an event that fails.
template <typename Check>
bool EachLimit(const EventRecord& e, Check check) {
  return check("duration_ns", e.duration_ns, 0, kMaxDurationNs) &&
         check("gpu_start_ns", e.gpu_start_ns, 0, kMaxTimeNs - 1) &&
         check("cpu_launch_ns", e.cpu_launch_ns, 0, kMaxTimeNs - 1) &&
         check("m", e.m, 0, kMaxGemmDim) && check("n", e.n, 0, kMaxGemmDim) &&
         check("k", e.k, 0, kMaxGemmDim) && check("batch", e.batch, 0, kMaxGemmDim) &&
         check("peer", e.peer, -1, kMaxWorldSize - 1) &&
         check("root", e.root, -1, kMaxWorldSize - 1);
}

// m, n and k are within [0, kMaxGemmDim] here.
bool GemmTooLarge(const EventRecord& e) {
  if ((e.m | e.n | e.k) < (int64_t{1} << 20)) return false;  // every product below 2^40
  const double m = static_cast<double>(e.m), n = static_cast<double>(e.n),
               k = static_cast<double>(e.k);
  return m * k > kMaxGemmElements || k * n > kMaxGemmElements || m * n > kMaxGemmElements;
}

}  // namespace

bool EventWithinLimits(const EventRecord& e) {
  // lo <= v <= hi as one unsigned comparison (lo <= hi).
  auto within = [](const char*, int64_t v, int64_t lo, int64_t hi) {
    return static_cast<uint64_t>(v) - static_cast<uint64_t>(lo) <=
           static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  };
  return EachLimit(e, within) && e.bytes <= kMaxOpBytes && !GemmTooLarge(e);
}

std::string EventOutOfRange(const EventRecord& e) {
  if (EventWithinLimits(e)) return std::string();
  if (e.duration_ns < 0) return "duration_ns " + std::to_string(e.duration_ns) + " is negative";
  std::string bad;
  EachLimit(e, [&bad](const char* field, int64_t v, int64_t lo, int64_t hi) {
    bad = Range(field, v, lo, hi);
    return bad.empty();
  });
  if (!bad.empty()) return bad;
  if (e.bytes > kMaxOpBytes) {
    return "bytes " + std::to_string(e.bytes) + " is over " + std::to_string(kMaxOpBytes);
  }
  return "GEMM shape " + std::to_string(e.m) + "x" + std::to_string(e.n) + "x" +
         std::to_string(e.k) + " has a matrix of more than 2^40 elements";
}

// What makes an NVTX event break the limits, or "" (its strings index a table of `strings`).
std::string NvtxEntryOutOfRange(const NvtxEntry& e, size_t strings) {
  if (e.event == 0 || e.event > format::kNvtxEventMax) {
    return "unknown event " + std::to_string(e.event);
  }
  if (e.name >= strings || e.domain >= strings) return "string index past the string table";
  std::string bad = Range("start_ns", e.start_ns, 0, kMaxTimeNs - 1);
  if (bad.empty()) bad = Range("end_ns", e.end_ns, 0, kMaxTimeNs - 1);
  const auto event = static_cast<format::NvtxEvent>(e.event);
  if (bad.empty() && (event == format::NvtxEvent::kRange || event == format::NvtxEvent::kMark)) {
    bad = Range("duration", e.end_ns - e.start_ns, 0, kMaxDurationNs);
  }
  if (bad.empty() && event == format::NvtxEvent::kRange) {
    bad = Range("depth", e.depth, 0, format::kMaxNvtxDepth - 1);
  }
  return bad;
}

std::string MetadataOutOfRange(const Metadata& m) {
  std::string bad = Range("world_size", m.world_size, -1, kMaxWorldSize);
  if (bad.empty()) bad = Range("rank", m.rank, -1, (m.world_size > 0 ? m.world_size : kMaxWorldSize) - 1);
  if (bad.empty()) bad = Range("local_rank", m.local_rank, -1, kMaxWorldSize - 1);
  for (size_t i = 0; bad.empty() && i < m.comms.size(); ++i) {
    const CommInfo& c = m.comms[i];
    bad = Range("size", c.size, 0, kMaxWorldSize);
    if (bad.empty()) bad = Range("rank", c.rank, -1, kMaxWorldSize - 1);
    if (bad.empty()) bad = Range("global_rank", c.global_rank, -1, kMaxWorldSize - 1);
    if (bad.empty() && c.members.size() > static_cast<size_t>(kMaxWorldSize)) {
      bad = std::to_string(c.members.size()) + " members";
    }
    if (!bad.empty()) bad = "communicator " + std::to_string(i) + ": " + bad;
  }
  for (size_t i = 0; bad.empty() && i < m.nvtx.size(); ++i) {
    bad = NvtxEntryOutOfRange(m.nvtx[i], m.strings.size());
    if (!bad.empty()) bad = "NVTX event " + std::to_string(i) + ": " + bad;
  }
  return bad;
}

}  // namespace timeline
}  // namespace xtimer
