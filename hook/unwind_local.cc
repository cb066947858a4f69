#define UNW_LOCAL_ONLY
#include "hook/unwind_local.h"

#include <libunwind.h>

namespace xtimer {
namespace hook {
namespace {

int Walk(unw_cursor_t* cursor, uint64_t* pcs, int max) {
  int n = 0;
  while (n < max) {
    unw_word_t ip = 0;
    if (unw_get_reg(cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    pcs[n++] = static_cast<uint64_t>(ip);
    if (unw_step(cursor) <= 0) break;
  }
  return n;
}

}  // namespace

int UnwindFromSignal(void* ucontext, uint64_t* pcs, int max) {
  if (ucontext == nullptr || max <= 0) return 0;
  unw_cursor_t cursor;
  // On x86-64 and aarch64 unw_context_t is the kernel's ucontext_t: the handler's context is
  // the interrupted thread's registers, and UNW_INIT_SIGNAL_FRAME says its pc is exact (not a
  // return address).
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(ucontext), UNW_INIT_SIGNAL_FRAME) !=
      0) {
    return 0;
  }
  return Walk(&cursor, pcs, max);
}

void WarmUpUnwinder() {
  unw_context_t context;
  unw_cursor_t cursor;
  if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) return;
  uint64_t pcs[64];
  Walk(&cursor, pcs, 64);
}

}  // namespace hook
}  // namespace xtimer
