#include "hook/stack_capture.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "hook/unwind_local.h"

namespace xtimer {
namespace hook {
namespace {

// A slot the handler writes: reserved (and touched) at install time, never allocated later.
// States: free -> armed (capturer chose a thread) -> busy (its handler unwinds) -> done (copied
// out, then free). A thread that answers after the capturer gave up leaves its slot busy, then
// done; a done slot is reused, a busy one is not.
enum SlotState : int { kFree = 0, kArmed, kBusy, kDone };
constexpr int kSlots = 4;

struct Slot {
  std::atomic<int> state{kFree};
  std::atomic<int> tid{0};
  uint64_t pthread_id = 0;
  int count = 0;
  int64_t handler_ns = 0;  // how long the thread ran the handler (CLOCK_MONOTONIC)
  uint64_t pcs[kMaxCaptureFrames];
};
static_assert(sizeof(std::atomic<int>) == sizeof(int), "futex word");

Slot g_slots[kSlots];
std::atomic<Slot*> g_armed{nullptr};
std::atomic<int> g_signal{0};
struct sigaction g_previous;  // written before our handler is installed

int Futex(std::atomic<int>* word, int op, int value, const timespec* timeout) {
  return static_cast<int>(
      syscall(SYS_futex, reinterpret_cast<int*>(word), op, value, timeout, nullptr, 0));
}

void Chain(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
  }
  // SIG_DFL would end the process: a stray capture signal is ignored instead.
}

// Async-signal-safe: atomics, syscalls and the local unwinder only.
// clock_gettime is async-signal-safe (POSIX), a vDSO call here.
int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void Handler(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  Slot* s = g_armed.load(std::memory_order_acquire);
  const int self = static_cast<int>(syscall(SYS_gettid));
  const bool ours = s != nullptr && info != nullptr && info->si_code == SI_TKILL &&
                    info->si_pid == getpid() && s->tid.load(std::memory_order_acquire) == self;
  int expected = kArmed;
  if (ours && s->state.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
    const int64_t entered = MonotonicNs();
    s->pthread_id = static_cast<uint64_t>(pthread_self());
    s->count = UnwindFromSignal(context, s->pcs, kMaxCaptureFrames);
    s->handler_ns = MonotonicNs() - entered;
    s->state.store(kDone, std::memory_order_release);
    Futex(&s->state, FUTEX_WAKE_PRIVATE, 1, nullptr);
  } else if (!ours) {
    Chain(sig, info, context);
  }
  errno = saved_errno;
}

// Up to 4 KiB of a /proc file; "" when unreadable.
std::string ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[4096];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof(buf));
  } while (n < 0 && errno == EINTR);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::vector<int> ListThreads() {
  std::vector<int> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long tid = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<int>(tid));
  }
  closedir(dir);
  std::sort(tids.begin(), tids.end());
  return tids;
}

bool HandlerIsOurs(int signo) {
  struct sigaction current;
  if (sigaction(signo, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &Handler;
}

Slot* FreeSlot() {
  for (Slot& s : g_slots) {
    int state = s.state.load(std::memory_order_acquire);
    if (state == kFree || state == kDone) {
      s.state.store(kFree, std::memory_order_relaxed);
      return &s;
    }
  }
  return nullptr;
}

// Waits until the slot is done or `timeout_ns` passed; true when done.
bool WaitDone(Slot* s, int64_t timeout_ns) {
  const int64_t deadline = MonotonicNs() + timeout_ns;
  for (;;) {
    int state = s->state.load(std::memory_order_acquire);
    if (state == kDone) return true;
    int64_t left = deadline - MonotonicNs();
    if (left <= 0) return false;
    timespec ts = {static_cast<time_t>(left / 1000000000), static_cast<long>(left % 1000000000)};
    Futex(&s->state, FUTEX_WAIT_PRIVATE, state, &ts);
  }
}

// Interrupts one thread and copies its stack out of the slot.
void SignalOne(int signo, ThreadStack* t) {
  Slot* s = FreeSlot();
  if (s == nullptr) {
    t->error = "every capture slot is held by a thread still in its handler";
    return;
  }
  s->tid.store(t->tid, std::memory_order_relaxed);
  s->count = 0;
  s->handler_ns = 0;
  s->state.store(kArmed, std::memory_order_release);
  g_armed.store(s, std::memory_order_release);
  if (syscall(SYS_tgkill, getpid(), t->tid, signo) != 0) {
    const int e = errno;
    g_armed.store(nullptr, std::memory_order_release);
    s->state.store(kFree, std::memory_order_release);
    t->error = e == ESRCH ? "thread exited" : std::string("tgkill: ") + strerror(e);
    return;
  }
  const bool done = WaitDone(s, kThreadAnswerMs * 1000000LL);
  g_armed.store(nullptr, std::memory_order_release);
  if (!done) {
    int expected = kArmed;
    // Not yet in the handler: the slot is free again (a late signal finds no armed slot). In
    // the handler (busy): the slot stays out of use until the handler finishes.
    s->state.compare_exchange_strong(expected, kFree, std::memory_order_acq_rel);
    t->error = "no answer in " + std::to_string(kThreadAnswerMs) +
               " ms (thread stuck in the kernel?)";
    return;
  }
  t->pthread_id = s->pthread_id;
  t->handler_ns = s->handler_ns;
  t->pcs.assign(s->pcs, s->pcs + std::min(s->count, kMaxCaptureFrames));
  if (s->count == 0) t->error = "unwinding failed";
  s->state.store(kFree, std::memory_order_release);
}

}  // namespace

bool ParseSigBlk(const std::string& status_text, uint64_t* mask) {
  size_t at = status_text.find("\nSigBlk:");
  if (at == std::string::npos) return false;
  const char* p = status_text.c_str() + at + 8;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 16);
  if (end == p || errno != 0) return false;
  *mask = v;
  return true;
}

bool InstallStackSignal(int signo, std::string* error) {
  if (g_signal.load() != 0) return true;
  for (Slot& s : g_slots) memset(s.pcs, 0, sizeof(s.pcs));  // resident before any handler runs
  WarmUpUnwinder();
  struct sigaction ours;
  memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = &Handler;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  if (sigaction(signo, nullptr, &g_previous) != 0 || sigaction(signo, &ours, nullptr) != 0) {
    *error = "sigaction(" + std::to_string(signo) + "): " + strerror(errno);
    return false;
  }
  g_signal.store(signo);
  return true;
}

int StackSignal() { return g_signal.load(); }

std::vector<ThreadStack> CaptureNativeStacks(const std::atomic<bool>* stop) {
  const int signo = g_signal.load();
  const int self = static_cast<int>(syscall(SYS_gettid));
  std::vector<int> tids = ListThreads();
  tids.erase(std::remove(tids.begin(), tids.end(), self), tids.end());
  const size_t listed = tids.size();
  if (tids.size() > static_cast<size_t>(kMaxCaptureThreads)) tids.resize(kMaxCaptureThreads);
  std::string common;  // an error every thread gets
  if (signo == 0) {
    common = "native capture is off (XTIMER_STACK_SIGNAL=0)";
  } else if (!HandlerIsOurs(signo)) {
    common = "capture signal " + std::to_string(signo) + " taken by the application";
  }
  const int64_t deadline = MonotonicNs() + kCaptureBudgetMs * 1000000LL;
  std::vector<ThreadStack> out(tids.size());
  for (size_t i = 0; i < tids.size(); ++i) {
    ThreadStack& t = out[i];
    t.tid = tids[i];
    const std::string dir = "/proc/self/task/" + std::to_string(t.tid);
    t.name = ReadSmallFile(dir + "/comm");
    if (!t.name.empty() && t.name.back() == '\n') t.name.pop_back();
    uint64_t blocked = 0;
    if (!common.empty()) {
      t.error = common;
    } else if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      t.error = "capture stopped: the process is exiting";
    } else if (MonotonicNs() >= deadline) {
      t.error = "capture time limit (" + std::to_string(kCaptureBudgetMs) + " ms) reached";
    } else if (!ParseSigBlk(ReadSmallFile(dir + "/status"), &blocked)) {
      t.error = "thread exited";
    } else if ((blocked >> (signo - 1)) & 1) {
      t.error = "signals blocked";
    } else {
      SignalOne(signo, &t);
    }
  }
  if (listed > tids.size() && !out.empty()) {
    std::string& e = out.back().error;
    e += (e.empty() ? "" : "; ") + std::to_string(listed - tids.size()) +
         " more threads left out (at most " + std::to_string(kMaxCaptureThreads) + ")";
  }
  return out;
}

}  // namespace hook
}  // namespace xtimer
