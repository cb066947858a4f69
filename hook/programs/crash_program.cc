// A program that dies of SIGSEGV in CrashHere, for //test/e2e:crash_report_e2e (docs/crash.md).
// Run with libxtimer.so preloaded (no CUDA needed: the C API's xtimer_enabled starts the hook).
//   crash_program MODE GO_FILE
// MODE: "none" (no handler of its own), "before" (installs its own SIGSEGV handler before the
// hook starts) or "after" (after the hook started). Its handler writes "application handler
// called" to stderr, restores the default action and returns, so the fault kills the process.
// It prints "ready" once the hook is on, waits until GO_FILE exists (the test creates it once the
// daemon lists the process), then faults.
#include <dlfcn.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {

void AppHandler(int) {
  static const char kText[] = "application handler called\n";
  ssize_t ignored = write(2, kText, sizeof(kText) - 1);
  (void)ignored;
  signal(SIGSEGV, SIG_DFL);  // the fault repeats on return and kills the process
}

void InstallAppHandler() {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = &AppHandler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
}

}  // namespace

// A real invalid write, not instrumented by the sanitizers (their reports would replace the
// signal).
extern "C" __attribute__((noinline, no_sanitize("address", "thread", "undefined"))) void
CrashHere() {
  int* volatile target = nullptr;
  *target = 1;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "none") != 0 && strcmp(argv[1], "before") != 0 &&
                    strcmp(argv[1], "after") != 0)) {
    fprintf(stderr, "usage: crash_program none|before|after GO_FILE\n");
    return 2;
  }
  if (strcmp(argv[1], "before") == 0) InstallAppHandler();
  auto enabled = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "xtimer_enabled"));
  if (enabled == nullptr || enabled() != 1) {
    fprintf(stderr, "crash_program: libxtimer.so is not preloaded or is off\n");
    return 2;
  }
  if (strcmp(argv[1], "after") == 0) InstallAppHandler();
  printf("ready\n");
  fflush(stdout);
  while (access(argv[2], F_OK) != 0) {
    const timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  CrashHere();
  return 0;
}
