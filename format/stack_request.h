// Stack capture over the registration connection (docs/stacks.md "Capture"): the daemon asks a
// registered process for its stacks; the process answers with its raw capture in a memfd.
//
//   daemon -> hook  StackRequest (16 bytes, plain data)
//   hook -> daemon  StackReply (24 bytes) with the memfd as SCM_RIGHTS; the memfd holds `size`
//                   bytes of raw capture JSON ("xtimer-raw-stacks", docs/stacks.md), at most
//                   kMaxRawStacksBytes. The daemon symbolizes it (never the stuck process) and
//                   writes the per-rank .stacks file.
//
// The daemon sends nothing else on the connection, so the hook reads whole requests; the hook
// sends nothing else after its Hello, so every later message to the daemon is a StackReply. A
// reply whose id the daemon did not ask for, or whose size is over the limit, is dropped.
//
// Crash reports (docs/crash.md) use the same message unasked: request id kCrashReportId (0; the
// daemon numbers its requests from 1), a memfd of kCrashMemfdBytes prepared at hook start whose
// first `size` (<= kMaxCrashReportBytes) bytes are the raw capture JSON of the crashing thread
// with a "crash" object. The crashing thread then waits (at most kCrashAckWaitMs) until the
// daemon, having read the process's memory map and symbolized the report, writes kCrashAckMagic
// at kCrashAckOffset of that memfd: the process must be alive while the daemon symbolizes.
#ifndef XTIMER_FORMAT_STACK_REQUEST_H_
#define XTIMER_FORMAT_STACK_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace xtimer {
namespace format {

constexpr uint32_t kStackRequestMagic = 0x4b545358;  // "XSTK"
constexpr uint32_t kStackReplyMagic = 0x52545358;    // "XSTR"
constexpr uint32_t kStackProtocolVersion = 1;
constexpr uint64_t kMaxRawStacksBytes = 16ull << 20;
constexpr uint64_t kCrashReportId = 0;
constexpr uint64_t kMaxCrashReportBytes = 64ull << 10;
constexpr uint64_t kCrashAckOffset = kMaxCrashReportBytes;  // a uint32_t written by the daemon
constexpr uint64_t kCrashMemfdBytes = kMaxCrashReportBytes + 4096;
constexpr uint32_t kCrashAckMagic = 0x4b434158;  // "XACK"
constexpr int kCrashAckWaitMs = 3000;

struct StackRequest {
  uint32_t magic;    // kStackRequestMagic
  uint32_t version;  // kStackProtocolVersion
  uint64_t request_id;
};
static_assert(sizeof(StackRequest) == 16, "StackRequest layout");

struct StackReply {
  uint32_t magic;    // kStackReplyMagic
  uint32_t version;  // kStackProtocolVersion
  uint64_t request_id;
  uint64_t size;     // bytes of raw capture JSON in the memfd, <= kMaxRawStacksBytes
};
static_assert(sizeof(StackReply) == 24, "StackReply layout");

// Daemon side: sends a request without blocking (a full socket buffer fails). False with *error.
bool SendStackRequest(int socket_fd, uint64_t request_id, std::string* error);

// Hook side: decodes `n` received bytes as one request. False with *error for anything else.
bool ParseStackRequest(const void* data, size_t n, StackRequest* request, std::string* error);

// Hook side: sends the reply and `memfd` (which the caller still owns and closes). False with
// *error.
bool SendStackReply(int socket_fd, uint64_t request_id, int memfd, uint64_t size,
                    std::string* error);

// Hook side, from a fatal-signal handler: sends the crash report's StackReply (kCrashReportId)
// with `memfd`. Async-signal-safe: one sendmsg (MSG_DONTWAIT), no allocation; false when it
// failed.
bool SendCrashReport(int socket_fd, int memfd, uint64_t size);

// Daemon side: tells the crashing process that its report was taken (writes kCrashAckMagic at
// kCrashAckOffset of the report's memfd). False when the write failed.
bool AckCrashReport(int memfd);

// Daemon side: receives one reply. Returns its memfd (close-on-exec) or -1 with *error: a message
// that is not one whole StackReply with exactly one fd, or a size over kMaxRawStacksBytes, is
// rejected (any fds it carried closed). Returns -1 with *error "connection closed" at EOF and
// "would block" when nothing is there.
int ReceiveStackReply(int socket_fd, StackReply* reply, std::string* error);

// Daemon side: reads the reply's `size` bytes from `memfd` (pread from 0: the sender's file
// offset does not matter). False with *error when the memfd holds fewer bytes.
bool ReadRawStacks(int memfd, uint64_t size, std::string* out, std::string* error);

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_STACK_REQUEST_H_
