// A minimal protobuf wire-format encoder for the converter's hot path (no allocation per field).
#ifndef XTIMER_TIMELINE_PROTO_WIRE_H_
#define XTIMER_TIMELINE_PROTO_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace xtimer {
namespace timeline {
namespace wire {

// A fixed-capacity byte buffer for the hot path (the caller bounds what goes in).
template <size_t N>
struct FixedBuf {
  char data[N];
  size_t n = 0;
  void append(const char* p, size_t k) {
    std::memcpy(data + n, p, k);
    n += k;
  }
  void push_back(char c) { data[n++] = c; }
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  void clear() { n = 0; }
};

template <typename Out>
inline void Varint(Out* out, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}
template <typename Out>
inline void Tag(Out* out, uint32_t field, uint32_t type) {
  Varint(out, (field << 3) | type);
}
template <typename Out>
inline void U64(Out* out, uint32_t field, uint64_t v) {
  Tag(out, field, 0);
  Varint(out, v);
}
template <typename Out>
inline void I64(Out* out, uint32_t field, int64_t v) {
  U64(out, field, static_cast<uint64_t>(v));
}
template <typename Out>
inline void Fixed64(Out* out, uint32_t field, uint64_t v) {
  Tag(out, field, 1);
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}
template <typename Out>
inline void Double(Out* out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  Fixed64(out, field, bits);
}
template <typename Out>
inline void Bytes(Out* out, uint32_t field, const char* p, size_t n) {
  Tag(out, field, 2);
  Varint(out, n);
  out->append(p, n);
}
template <typename Out>
inline void Bytes(Out* out, uint32_t field, const std::string& s) {
  Bytes(out, field, s.data(), s.size());
}
template <typename Out, size_t N>
inline void Bytes(Out* out, uint32_t field, const FixedBuf<N>& b) {
  Bytes(out, field, b.data, b.n);
}

}  // namespace wire
}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_PROTO_WIRE_H_
