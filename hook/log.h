// The hook's one logger: "xtimer[PID]: MESSAGE\n" on stderr, formatted into a stack buffer and
// written with one write(2) (no allocation, no lock; lines longer than 511 bytes are cut).
// errno is left as it was.
#ifndef XTIMER_HOOK_LOG_H_
#define XTIMER_HOOK_LOG_H_

namespace xtimer {
namespace hook {

void LogLine(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_LOG_H_
