// The xtimer_* C API (xtimer.h).
#include "hook/xtimer.h"

#include "hook/recorder.h"
#include "util/version.h"

extern "C" {

__attribute__((visibility("default"))) const char* xtimer_version(void) {
  return xtimer::kVersion;  // //:VERSION; util:version_test ties it to the ring and record layouts
}

__attribute__((visibility("default"))) int xtimer_enabled(void) {
  using namespace xtimer::hook;  // NOLINT(build/namespaces): three names, C API shim
  ErrnoSaver saver;
  if (g_mode.load() == kUninit && !t_in_hook) InitSlow();
  return g_mode.load() == kOn ? 1 : 0;
}

__attribute__((visibility("default"))) int xtimer_flush(int timeout_ms) {
  xtimer::hook::ErrnoSaver saver;
  return xtimer::hook::Flush(timeout_ms < 0 ? 0 : timeout_ms) ? 0 : -1;
}

__attribute__((visibility("default"))) int xtimer_get_stats(xtimer_stats* stats) {
  if (stats == nullptr) return -1;
  xtimer::hook::Stats s = xtimer::hook::GetStats();
  stats->queued = s.queued;
  stats->written = s.written;
  stats->ring_dropped = s.ring_dropped;
  stats->queue_dropped = s.queue_dropped;
  stats->untimed = s.untimed;
  return 0;
}

}  // extern "C"
