// Local unwinding with libunwind (UNW_LOCAL_ONLY lives in unwind_local.cc alone: local and
// remote unwinding must not share a source file, /work/shared/BUILD-NOTES.md item 5).
#ifndef XTIMER_HOOK_UNWIND_LOCAL_H_
#define XTIMER_HOOK_UNWIND_LOCAL_H_

#include <cstdint>

namespace xtimer {
namespace hook {

// Description: the stack of the thread a signal interrupted, from the handler's third argument.
// Thread safety: async-signal-safe (no allocation, no lock of ours; libunwind's local unwinder
// only), so a stack-capture or crash handler may call it.
// Input: ucontext, the signal handler's `void* context`; pcs, room for `max` entries.
// Output: pcs[0] is the interrupted pc, the others return addresses, innermost first.
// Return: how many pcs were written (0 when libunwind cannot start).
int UnwindFromSignal(void* ucontext, uint64_t* pcs, int max);

// Runs one unwind of the caller's own stack, so that libunwind's one-time initialisation happens
// outside any signal handler. Call once before the first capture.
void WarmUpUnwinder();

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_UNWIND_LOCAL_H_
