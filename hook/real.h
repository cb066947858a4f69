// The real (next in link order) definition of an intercepted or used function, resolved lazily
// with dlsym(RTLD_NEXT, name) and typed by decltype of the vendor header's declaration.
#ifndef XTIMER_HOOK_REAL_H_
#define XTIMER_HOOK_REAL_H_

#include <atomic>

namespace xtimer {
namespace hook {

// dlsym(RTLD_NEXT, name); logs once and returns null when absent.
void* ResolveNext(const char* name);

template <typename Fn>
class Real {
 public:
  constexpr explicit Real(const char* name) : name_(name) {}
  // The real function, or null when no later object defines it.
  Fn get() {
    void* p = ptr_.load(std::memory_order_relaxed);
    if (__builtin_expect(p == nullptr, 0)) {
      p = ResolveNext(name_);
      ptr_.store(p, std::memory_order_relaxed);
    }
    return reinterpret_cast<Fn>(p);
  }
  const char* name() const { return name_; }

 private:
  const char* name_;
  std::atomic<void*> ptr_{nullptr};
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_REAL_H_
