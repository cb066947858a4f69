#include "timeline/packet_compressor.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#include <libdeflate.h>

#include "timeline/proto_wire.h"

namespace xtimer {
namespace timeline {
namespace {

constexpr uint32_t kTracePacket = 1;         // Trace.packet
constexpr uint32_t kCompressedPackets = 50;  // TracePacket.compressed_packets

// Length of the Trace.packet field starting at p (tag, varint length, payload); 0 if malformed.
size_t FieldLength(const char* p, size_t avail) {
  if (avail < 2 || static_cast<uint8_t>(p[0]) != ((kTracePacket << 3) | 2)) return 0;
  uint64_t len = 0;
  size_t i = 1;
  for (int shift = 0; i < avail && shift < 64; shift += 7) {
    uint8_t b = static_cast<uint8_t>(p[i++]);
    len |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return len <= avail - i ? i + len : 0;
  }
  return 0;
}

}  // namespace

PacketCompressor::PacketCompressor(int level)
    : compressor_(libdeflate_alloc_compressor(level)) {
  if (compressor_ == nullptr) throw std::bad_alloc();
}

PacketCompressor::~PacketCompressor() { libdeflate_free_compressor(compressor_); }

void PacketCompressor::Compress(const std::string& packets, std::string* out) {
  const char* p = packets.data();
  size_t n = packets.size();
  size_t begin = 0, pos = 0;
  while (pos < n) {
    size_t len = FieldLength(p + pos, n - pos);
    if (len == 0) std::abort();  // the converter's own encoding: a bug, never input-dependent
    if (pos > begin && pos + len - begin > kChunkBytes) {
      CompressChunk(p + begin, pos - begin, out);
      begin = pos;
    }
    pos += len;
  }
  if (pos > begin) CompressChunk(p + begin, pos - begin, out);
}

void PacketCompressor::CompressChunk(const char* data, size_t n, std::string* out) {
  scratch_.resize(libdeflate_zlib_compress_bound(compressor_, n));
  size_t z = libdeflate_zlib_compress(compressor_, data, n, &scratch_[0], scratch_.size());
  if (z == 0) std::abort();  // cannot happen: the buffer is the library's bound
  // Trace.packet { compressed_packets: <z bytes> }, written straight into `out`.
  wire::FixedBuf<16> inner;  // the compressed_packets tag and length
  wire::Tag(&inner, kCompressedPackets, 2);
  wire::Varint(&inner, z);
  wire::Tag(out, kTracePacket, 2);
  wire::Varint(out, inner.size() + z);
  out->append(inner.data, inner.size());
  out->append(scratch_.data(), z);
}

}  // namespace timeline
}  // namespace xtimer
