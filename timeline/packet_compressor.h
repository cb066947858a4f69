// Packs a run of encoded `Trace.packet` fields into `TracePacket.compressed_packets` (field 50):
// each holds a zlib stream of up to kChunkBytes of whole packets, framed as a Trace, exactly what
// Perfetto's own service writes and trace_processor / ui.perfetto.dev inflate in place.
#ifndef XTIMER_TIMELINE_PACKET_COMPRESSOR_H_
#define XTIMER_TIMELINE_PACKET_COMPRESSOR_H_

#include <cstddef>
#include <string>

struct libdeflate_compressor;

namespace xtimer {
namespace timeline {

class PacketCompressor {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;  // uncompressed bytes per compressed packet
  static constexpr int kMaxLevel = 12;            // libdeflate's levels: 1 (fastest) .. 12

  // `level` in 1..kMaxLevel.
  explicit PacketCompressor(int level);
  ~PacketCompressor();
  PacketCompressor(const PacketCompressor&) = delete;
  PacketCompressor& operator=(const PacketCompressor&) = delete;

  // Appends to `out` the packets in `packets` (a sequence of Trace.packet fields, as the
  // converter encodes them) as compressed packets. Packets are never split; one larger than
  // kChunkBytes gets a compressed packet of its own.
  void Compress(const std::string& packets, std::string* out);

 private:
  void CompressChunk(const char* data, size_t n, std::string* out);

  libdeflate_compressor* compressor_;
  std::string scratch_;
};

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_PACKET_COMPRESSOR_H_
