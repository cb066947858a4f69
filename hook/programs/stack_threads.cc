// Threads for //hook:stack_capture_test, run with libxtimer.so preloaded (no CUDA needed: the C
// API's xtimer_enabled starts the hook). Threads:
//   sleeper  sleeps in XtSleeperFunction (nanosleep)
//   spinner  spins in XtSpinnerFunction (not with "gap")
//   blocked  has every signal blocked, sleeps
//   gap      (with argument "gap") reads CLOCK_MONOTONIC in a loop and keeps the largest gap
//            between consecutive reads: how long a capture stopped it
//   (with argument "take" the program installs its own handler for SIGRTMIN+3, the default
//   capture signal)
// Prints "FUNCTION ADDRESS" for the two functions, then "ready". Commands on stdin, one letter a
// line: "r" resets the largest gap, "g" prints "gap NS"; end of input stops the threads, exit 0.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reset{false};
std::atomic<long long> g_gap_ns{0};

long long NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

extern "C" __attribute__((noinline)) void XtSleeperFunction() {
  while (!g_stop.load()) {
    timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

bool g_spin_stop = false;  // read with a builtin: inline even at -O0 (std::atomic's is a call)

extern "C" __attribute__((noinline)) void XtSpinnerFunction() {
  volatile unsigned long long n = 0;
  while (!__atomic_load_n(&g_spin_stop, __ATOMIC_RELAXED)) n = n + 1;
}

namespace {

void Blocked() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
  XtSleeperFunction();
}

void Gap() {
  long long last = NowNs();
  long long max = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    const long long now = NowNs();
    if (g_reset.exchange(false, std::memory_order_relaxed)) max = 0;
    if (now - last > max) {
      max = now - last;
      g_gap_ns.store(max, std::memory_order_relaxed);
    }
    last = now;
  }
}

std::thread Named(const char* name, void (*fn)()) {
  std::thread t(fn);
  pthread_setname_np(t.native_handle(), name);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  auto enabled = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "xtimer_enabled"));
  if (enabled == nullptr || enabled() != 1) {
    fprintf(stderr, "stack_threads: libxtimer.so is not preloaded or is off\n");
    return 2;
  }
  std::vector<std::thread> threads;
  threads.push_back(Named("sleeper", &XtSleeperFunction));
  const bool gap = argc > 1 && strcmp(argv[1], "gap") == 0;
  if (!gap) threads.push_back(Named("spinner", &XtSpinnerFunction));  // gap: one spinning thread
  threads.push_back(Named("blocked", &Blocked));
  if (gap) threads.push_back(Named("gap", &Gap));
  if (argc > 1 && strcmp(argv[1], "take") == 0) {
    // The application takes the capture signal (the default one) for itself.
    struct sigaction own;
    memset(&own, 0, sizeof(own));
    own.sa_handler = [](int) {};
    sigaction(SIGRTMIN + 3, &own, nullptr);
  }
  printf("XtSleeperFunction %p\nXtSpinnerFunction %p\nready\n",
         reinterpret_cast<void*>(&XtSleeperFunction), reinterpret_cast<void*>(&XtSpinnerFunction));
  fflush(stdout);
  char line[64];
  while (fgets(line, sizeof(line), stdin) != nullptr) {
    if (line[0] == 'r' && gap) {
      g_reset.store(true);
      while (g_reset.load()) std::this_thread::yield();  // the gap thread saw it
      printf("reset\n");
    } else if (line[0] == 'g') {
      printf("gap %lld\n", g_gap_ns.load());
    }
    fflush(stdout);
  }
  g_stop.store(true);
  __atomic_store_n(&g_spin_stop, true, __ATOMIC_RELAXED);
  for (auto& t : threads) t.join();
  return 0;
}
