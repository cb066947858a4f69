#include "hook/exit_marker.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include "hook/crash_report.h"

namespace xtimer {
namespace hook {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
constexpr int kMaxSignal = 65;

std::atomic<HeaderSource> g_source{nullptr};
std::atomic<bool> g_installed{false};
struct sigaction g_previous[kMaxSignal];  // written before our handler is installed

void Handler(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  HeaderSource source = g_source.load(std::memory_order_relaxed);
  format::RingHeader* header = source != nullptr ? source() : nullptr;
  const uint64_t before = header != nullptr ? MarkSignal(header, sig) : 0;
  ReportCrash(sig, info, context);  // the daemon symbolizes it while the process still exists
  const struct sigaction& prev = g_previous[sig];
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler == SIG_IGN) {
    // Ignored before us: nothing happens, as without the hook.
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
  } else {
    // The default action: restore it and deliver the signal again, so that the process ends
    // exactly as it would have (status, core dump). A fault re-raises on return as well.
    sigaction(sig, &prev, nullptr);
    raise(sig);
    errno = saved_errno;
    return;
  }
  // The application's handler returned: the process lives on, so it is not ending this way.
  if (header != nullptr) header->exit_state.store(before, std::memory_order_release);
  errno = saved_errno;
}

}  // namespace

uint64_t MarkSignal(format::RingHeader* header, int signal) {
  return header->exit_state.exchange(
      format::EncodeExitState(format::ExitKind::kSignal, static_cast<uint32_t>(signal)),
      std::memory_order_acq_rel);
}

void MarkExited(format::RingHeader* header, int status) {
  if (header == nullptr) return;
  header->exit_state.store(
      format::EncodeExitState(format::ExitKind::kExited, static_cast<uint32_t>(status) & 255),
      std::memory_order_release);
}

bool InstallFatalSignalMarkers(HeaderSource source) {
  g_source.store(source, std::memory_order_relaxed);
  if (g_installed.exchange(true)) return true;
  bool ok = true;
  for (int sig : kSignals) {
    struct sigaction ours;
    memset(&ours, 0, sizeof(ours));
    ours.sa_sigaction = &Handler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    if (sigaction(sig, nullptr, &g_previous[sig]) != 0 ||
        sigaction(sig, &ours, nullptr) != 0) {
      ok = false;
    }
  }
  return ok;
}

}  // namespace hook
}  // namespace xtimer
