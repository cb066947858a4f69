#include "hook/crash_report.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "format/stack_request.h"
#include "hook/python_stacks.h"
#include "hook/unwind_local.h"

namespace xtimer {
namespace hook {
namespace {

std::atomic<SocketSource> g_socket{nullptr};
std::atomic<bool> g_prepared{false};
std::atomic<bool> g_crashing{false};  // the first crash takes it; later ones pass on unreported
int g_memfd = -1;
char* g_map = nullptr;  // the memfd, kCrashMemfdBytes
uint64_t g_pcs[kMaxCrashFrames];
PythonRuntime g_python;  // runtime == 0: no CPython (set before g_prepared)
RawPythonFrame g_python_frames[kMaxCrashPythonFrames];

// An append-only writer into a fixed buffer: no allocation, no locale, no stdio.
class Out {
 public:
  Out(char* buf, size_t cap) : buf_(buf), cap_(cap) {}
  Out& Raw(const char* s) {
    while (*s != '\0') Put(*s++);
    return *this;
  }
  // A JSON string; bytes that would need an escape are written as '?'.
  Out& Str(const char* s) {
    Put('"');
    for (; *s != '\0'; ++s) {
      const unsigned char c = static_cast<unsigned char>(*s);
      Put(c < 0x20 || c == '"' || c == '\\' || c == 0x7f ? '?' : *s);
    }
    Put('"');
    return *this;
  }
  // A JSON string escaped in full (the Python report: messages may hold anything), cut to
  // `max` bytes at a UTF-8 character boundary.
  Out& Text(const char* s, size_t max) {
    static const char kHex[] = "0123456789abcdef";
    if (s == nullptr) s = "";
    size_t len = 0;
    while (s[len] != '\0' && len < max) ++len;
    if (s[len] != '\0') {
      while (len > 0 && (static_cast<unsigned char>(s[len]) & 0xc0) == 0x80) --len;
    }
    Put('"');
    for (size_t i = 0; i < len; ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\') {
        Put('\\');
        Put(static_cast<char>(c));
      } else if (c < 0x20 || c == 0x7f) {
        Raw("\\u00");
        Put(kHex[c >> 4]);
        Put(kHex[c & 15]);
      } else {
        Put(static_cast<char>(c));
      }
    }
    Put('"');
    return *this;
  }
  Out& U64(uint64_t v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) Put(digits[--n]);
    return *this;
  }
  Out& I64(int64_t v) {
    if (v < 0) Put('-');
    return U64(v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  }
  Out& Hex(uint64_t v) {
    static const char kDigits[] = "0123456789abcdef";
    Raw("\"0x");
    int shift = 60;
    while (shift > 0 && ((v >> shift) & 15) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) Put(kDigits[(v >> shift) & 15]);
    Put('"');
    return *this;
  }
  size_t Length() const { return ok_ ? len_ : 0; }

 private:
  void Put(char c) {
    if (len_ < cap_) {
      buf_[len_++] = c;
    } else {
      ok_ = false;
    }
  }
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool ok_ = true;
};

int64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Waits until the daemon acknowledged the report, at most kCrashAckWaitMs. True when it did.
bool WaitForAck() {
  const auto* ack = reinterpret_cast<std::atomic<uint32_t>*>(g_map + format::kCrashAckOffset);
  const int64_t deadline = ClockNs(CLOCK_MONOTONIC) + format::kCrashAckWaitMs * 1000000LL;
  while (ack->load(std::memory_order_acquire) != format::kCrashAckMagic &&
         ClockNs(CLOCK_MONOTONIC) < deadline) {
    const timespec pause = {0, 1000000};  // 1 ms; nanosleep is async-signal-safe
    nanosleep(&pause, nullptr);
  }
  return ack->load(std::memory_order_acquire) == format::kCrashAckMagic;
}

// The facts every report has: the calling thread, now.
CrashFacts FactsNow() {
  CrashFacts f;
  f.pid = static_cast<int>(getpid());
  f.tid = static_cast<int>(syscall(SYS_gettid));
  prctl(PR_GET_NAME, f.thread_name, 0, 0, 0);
  f.time_ns = ClockNs(CLOCK_REALTIME);
  return f;
}

bool GiveAltStack(std::string* error) {
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) {
    return true;  // the thread has one already (the application's): kept
  }
  void* mem = mmap(nullptr, kCrashAltStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mem == MAP_FAILED) {
    *error = std::string("alternate signal stack: mmap: ") + strerror(errno);
    return false;
  }
  stack_t ours{};
  ours.ss_sp = mem;
  ours.ss_size = kCrashAltStackBytes;
  if (sigaltstack(&ours, nullptr) != 0) {
    *error = std::string("sigaltstack: ") + strerror(errno);
    munmap(mem, kCrashAltStackBytes);
    return false;
  }
  return true;
}

}  // namespace

size_t FormatCrashReport(char* buf, size_t cap, const CrashFacts& f, const uint64_t* pcs, int n,
                         const RawPythonFrame* python, int n_python) {
  Out o(buf, cap);
  o.Raw("{\"format\": \"xtimer-raw-stacks\", \"version\": 1, \"pid\": ").I64(f.pid);
  o.Raw(", \"capture_time_ns\": ").I64(f.time_ns);
  o.Raw(",\n\"crash\": {\"signal\": ").I64(f.signal).Raw(", \"si_code\": ").I64(f.si_code);
  o.Raw(", \"fault_address\": ").Hex(f.fault_address).Raw(", \"tid\": ").I64(f.tid).Raw("},\n");
  o.Raw("\"threads\": [\n  {\"tid\": ").I64(f.tid).Raw(", \"name\": ").Str(f.thread_name);
  o.Raw(", \"pcs\": [");
  for (int i = 0; i < n; ++i) {
    if (i > 0) o.Raw(", ");
    o.U64(pcs[i]);
  }
  o.Raw("]");
  if (n == 0) o.Raw(", \"error\": \"unwinding failed\"");
  o.Raw("}]");
  if (n_python > 0) {
    o.Raw(",\n\"python_threads\": [\n  {\"tid\": ").I64(f.tid).Raw(", \"frames\": [");
    for (int i = 0; i < n_python; ++i) {
      o.Raw(i > 0 ? ",\n    " : "\n    ").Raw("{\"function\": ");
      o.Text(python[i].function, kMaxPythonFunctionBytes);
      o.Raw(", \"file\": ").Text(python[i].file, kMaxPythonFileBytes);
      o.Raw(", \"line\": ").I64(python[i].line > 0 ? python[i].line : 0).Raw("}");
    }
    o.Raw("]}]");
  }
  o.Raw("}\n");
  return o.Length();
}

bool PrepareCrashReports(SocketSource socket, std::string* error) {
  if (g_prepared.load()) return true;
  const int fd = memfd_create("xtimer-crash", MFD_CLOEXEC);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + strerror(errno);
    return false;
  }
  void* map = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(format::kCrashMemfdBytes)) == 0) {
    map = mmap(nullptr, format::kCrashMemfdBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (map == MAP_FAILED) {
    *error = std::string("crash report memory: ") + strerror(errno);
    close(fd);
    return false;
  }
  memset(map, 0, format::kCrashMemfdBytes);  // resident before any handler runs
  memset(g_pcs, 0, sizeof(g_pcs));
  memset(g_python_frames, 0, sizeof(g_python_frames));
  std::string python_error;
  if (!FindPythonRuntime(&g_python, &python_error)) g_python = PythonRuntime();
  WarmUpUnwinder();
  g_memfd = fd;
  g_map = static_cast<char*>(map);
  g_socket.store(socket);
  g_prepared.store(true);
  return GiveAltStack(error);
}

void ReportCrash(int sig, const siginfo_t* info, void* context) {
  if (!g_prepared.load(std::memory_order_acquire) || g_crashing.exchange(true)) return;
  CrashFacts f = FactsNow();
  f.signal = sig;
  if (info != nullptr) {
    f.si_code = info->si_code;
    f.fault_address = reinterpret_cast<uintptr_t>(info->si_addr);
  }
  const int n = UnwindFromSignal(context, g_pcs, kMaxCrashFrames);
  int n_python = 0;
  if (g_python.runtime != 0) {
    const uint64_t tstate = PythonThreadStateOf(g_python, static_cast<uint64_t>(pthread_self()));
    if (tstate != 0) n_python = ReadPythonFrames(g_python, tstate, g_python_frames,
                                                 kMaxCrashPythonFrames);
  }
  size_t size = 0;
  for (;;) {  // the innermost Python frames matter: drop outer ones until the report fits
    size = FormatCrashReport(g_map, format::kMaxCrashReportBytes, f, g_pcs, n, g_python_frames,
                             n_python);
    if (size > 0 || n_python == 0) break;
    n_python /= 2;
  }
  SocketSource source = g_socket.load();
  const int socket = source != nullptr ? source() : -1;
  if (size == 0 || socket < 0) return;  // no daemon: nobody to wait for
  if (format::SendCrashReport(socket, g_memfd, size)) WaitForAck();
}

size_t FormatPythonExceptionReport(char* buf, size_t cap, const CrashFacts& f, const char* type,
                                   const char* message, const PythonExceptionFrame* frames,
                                   int n) {
  const size_t max = kMaxPythonExceptionText;
  Out o(buf, cap);
  o.Raw("{\"format\": \"xtimer-raw-stacks\", \"version\": 1, \"pid\": ").I64(f.pid);
  o.Raw(", \"capture_time_ns\": ").I64(f.time_ns);
  o.Raw(",\n\"crash\": {\"python_exception\": {\"type\": ").Text(type, max);
  o.Raw(", \"message\": ").Text(message, max).Raw("}, \"tid\": ").I64(f.tid).Raw("},\n");
  o.Raw("\"threads\": [\n  {\"tid\": ").I64(f.tid).Raw(", \"name\": ").Str(f.thread_name);
  o.Raw(", \"pcs\": []}],\n\"python_threads\": [\n  {\"tid\": ").I64(f.tid);
  o.Raw(", \"frames\": [");
  for (int i = 0; i < n; ++i) {
    o.Raw(i > 0 ? ",\n    " : "\n    ").Raw("{\"function\": ").Text(frames[i].function, max);
    o.Raw(", \"file\": ").Text(frames[i].file, max);
    o.Raw(", \"line\": ").I64(frames[i].line > 0 ? frames[i].line : 0).Raw("}");
  }
  o.Raw("]}]}\n");
  return o.Length();
}

int ReportPythonException(const char* type, const char* message,
                          const PythonExceptionFrame* frames, int n) {
  SocketSource source = g_socket.load();
  const int socket = source != nullptr ? source() : -1;
  if (!g_prepared.load(std::memory_order_acquire) || socket < 0 || g_crashing.exchange(true)) {
    return 1;
  }
  const CrashFacts f = FactsNow();
  n = n < 0 ? 0 : n > kMaxPythonExceptionFrames ? kMaxPythonExceptionFrames : n;
  size_t size = 0;
  for (;;) {  // the innermost frames matter: drop outer ones until the report fits
    size = FormatPythonExceptionReport(g_map, format::kMaxCrashReportBytes, f, type, message,
                                       frames, n);
    if (size > 0 || n == 0) break;
    n /= 2;
  }
  if (size == 0 || !format::SendCrashReport(socket, g_memfd, size)) return 1;
  return WaitForAck() ? 0 : -1;
}

}  // namespace hook
}  // namespace xtimer
