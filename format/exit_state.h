// How a writer's process ended, as the hook marks it in its ring header (RingHeader::exit_state)
// and as the daemon, the wire and the analysis name it. The one place of this fact: its kinds,
// its encoding in the shared word, and its spelling.
#ifndef XTIMER_FORMAT_EXIT_STATE_H_
#define XTIMER_FORMAT_EXIT_STATE_H_

#include <cstdint>

namespace xtimer {
namespace format {

// RingHeader::exit_state: how the writer's process is ending, written with one atomic store
// (the signal handler's is its only access to the ring) just before the process ends, read by
// the daemon when the registration connection closes. High 32 bits the kind, low 32 bits its value:
//   0                          running, or gone without saying (killed, _exit): "connection lost"
//   (1 << 32) | (status & 255) exit(status) / return from main was called
//   (2 << 32) | signal         a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) is being
//                              delivered; a handler of the application that returns clears it
// Older writers leave the field 0 (it was padding).
enum class ExitKind : uint32_t { kNone = 0, kExited = 1, kSignal = 2 };
constexpr ExitKind kExitKinds[] = {ExitKind::kNone, ExitKind::kExited, ExitKind::kSignal};
constexpr uint64_t EncodeExitState(ExitKind kind, uint32_t value) {
  return (uint64_t{static_cast<uint32_t>(kind)} << 32) | value;
}

struct ExitState {
  ExitKind kind = ExitKind::kNone;
  int value = 0;  // exit status 0..255, or signal number 1..64
};

// The exit status or signal number; -1 for kNone (gone without saying, no status known): the
// `exit_code` of the metrics, the wire and the analysis.
constexpr int ExitCode(const ExitState& e) { return e.kind == ExitKind::kNone ? -1 : e.value; }

// Decodes an untrusted exit_state word; anything outside the forms above is kNone.
ExitState DecodeExitState(uint64_t word);
// "exit", "signal", or "connection_lost" (kNone: gone without saying): the one spelling of an exit
// cause, for the metrics' cause label, logs, the analysis, and (as ExitCauseCode's value names)
// the wire.
const char* ExitKindName(ExitKind kind);

}  // namespace format
}  // namespace xtimer

#endif  // XTIMER_FORMAT_EXIT_STATE_H_
