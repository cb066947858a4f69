// The real definition of an intercepted or used vendor function, resolved at its first use
// (resolve.h: the global scope after libxtimer.so, else the vendor library wherever it was loaded)
// and typed by decltype of the vendor header's declaration. After the first successful
// resolution, get() is one relaxed atomic load.
#ifndef XTIMER_HOOK_REAL_H_
#define XTIMER_HOOK_REAL_H_

#include <atomic>

#include "hook/resolve.h"

namespace xtimer {
namespace hook {

// Logs once per function that no loaded library defines it (the shim then fails the call).
void WarnUnresolved(const char* name, std::atomic<bool>* warned);

template <typename Fn>
class Real {
 public:
  constexpr explicit Real(const char* name) : name_(name) {}
  Real(const Real&) = delete;
  Real& operator=(const Real&) = delete;

  // The real function, or null while no loaded object defines it (retried at later calls; the
  // first miss is reported once on stderr).
  Fn get() const {
    Fn fn = get_optional();
    if (__builtin_expect(fn == nullptr, 0)) WarnUnresolved(name_, &warned_);
    return fn;
  }
  // get(), without the message when absent (for functions the hook can do without).
  Fn get_optional() const {
    void* p = ptr_.load(std::memory_order_relaxed);
    if (__builtin_expect(p == nullptr, 0)) {
      p = ResolveReal(name_);
      if (p != nullptr) ptr_.store(p, std::memory_order_relaxed);
    }
    return reinterpret_cast<Fn>(p);
  }
  const char* name() const { return name_; }
  // Tests: `fn` stands for the real function (null: resolved again at the next use).
  void SetForTesting(Fn fn) { ptr_.store(reinterpret_cast<void*>(fn), std::memory_order_relaxed); }

 private:
  const char* name_;
  mutable std::atomic<void*> ptr_{nullptr};
  mutable std::atomic<bool> warned_{false};
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_REAL_H_
