#include "hook/python_stacks.h"

#include "hook/python_debug_offsets.h"
#include "hook/python_frame_walker.h"
#include "hook/python_layout.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace xtimer {
namespace hook {
namespace {

constexpr size_t kMaxTracebackText = 8u << 20;  // CPython prints <= 100 threads x 100 frames

using DumpFn = const char* (*)(int fd, void* interp, void* current_tstate);
using IsInitializedFn = int (*)();

// A CPython symbol: global scope first, then any libpython* loaded RTLD_LOCAL (embedding hosts,
// a Python extension loaded by a non-Python host), reached with dlopen(RTLD_NOLOAD).
struct Finder {
  const char* symbol;
  void* found = nullptr;
};

int VisitObject(dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Finder*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || *path == '\0') return 0;
  const char* base = strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  if (strncmp(base, "libpython", 9) != 0) return 0;
  void* handle = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return 0;
  f->found = dlsym(handle, f->symbol);
  dlclose(handle);  // RTLD_NOLOAD took a reference: give it back
  return f->found != nullptr ? 1 : 0;
}

using GetVersionFn = const char* (*)();

// The minor version of CPython 3 from the exported Py_Version (3.11 and later), else from the
// text of Py_GetVersion ("3.8.18 (default, ...)", no interpreter state needed); -1 unknown.
int MinorVersion() {
  if (auto* v = static_cast<const unsigned long*>(FindPythonSymbol("Py_Version"))) {
    return ((*v >> 24) & 0xff) == 3 ? static_cast<int>((*v >> 16) & 0xff) : -1;
  }
  auto get = reinterpret_cast<GetVersionFn>(FindPythonSymbol("Py_GetVersion"));
  const char* text = get != nullptr ? get() : nullptr;
  if (text == nullptr || strncmp(text, "3.", 2) != 0) return -1;
  char* end = nullptr;
  const long minor = strtol(text + 2, &end, 10);
  return end != text + 2 && *end == '.' && minor >= 0 && minor < 100 ? static_cast<int>(minor) : -1;
}

// "3.13", "3.?" when unknown.
std::string VersionText() {
  const int minor = MinorVersion();
  return minor >= 0 ? "3." + std::to_string(minor) : "3.?";
}

bool ReadAll(int fd, std::string* out) {
  off_t size = lseek(fd, 0, SEEK_END);
  if (size < 0) return false;
  out->assign(std::min(static_cast<size_t>(size), kMaxTracebackText), '\0');
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = pread(fd, &(*out)[done], out->size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, strlen(prefix), prefix) == 0;
}

// "  File \"f.py\", line 42 in func"; false when the line is not a frame.
bool ParseFrame(const std::string& line, PythonFrame* frame) {
  if (!StartsWith(line, "  File \"")) return false;
  size_t at = line.rfind("\", line ");
  if (at == std::string::npos || at < 8) return false;
  size_t in = line.find(" in ", at + 8);
  if (in == std::string::npos) return false;
  frame->file = line.substr(8, at - 8);
  frame->function = line.substr(in + 4);
  std::string number = line.substr(at + 8, in - (at + 8));
  char* end = nullptr;
  long v = strtol(number.c_str(), &end, 10);
  frame->line = end != number.c_str() && *end == '\0' && v > 0 && v < INT32_MAX ? static_cast<int>(v)
                                                                                 : 0;  // "???"
  return true;
}

}  // namespace

void* FindPythonSymbol(const char* symbol) {
  if (void* p = dlsym(RTLD_DEFAULT, symbol)) return p;
  Finder f{symbol};
  dl_iterate_phdr(&VisitObject, &f);
  return f.found;
}

bool FindPythonRuntime(PythonRuntime* out, std::string* error) {
  error->clear();
  if (FindPythonSymbol("Py_IsInitialized") == nullptr) return false;  // no CPython here
  const void* runtime = FindPythonSymbol("_PyRuntime");
  const void* code_type = FindPythonSymbol("PyCode_Type");
  if (runtime == nullptr || code_type == nullptr) {
    *error = "CPython without _PyRuntime or PyCode_Type";
    return false;
  }
  const int minor = MinorVersion();
  if (minor >= 13) {
    if (!LayoutFromDebugOffsets(runtime, &out->layout, error)) return false;
  } else if (!PythonLayoutOf(minor, &out->layout)) {
    *error = "frames are read on 3.8 to 3.13 only";
    return false;
  }
  out->runtime = reinterpret_cast<uint64_t>(runtime);
  out->code_type = reinterpret_cast<uint64_t>(code_type);
  return true;
}

bool WalkPythonThreads(const PythonRuntime& rt, std::vector<PythonThread>* threads,
                       std::string* error) {
  std::vector<uint64_t> tstates(kMaxPythonWalkThreads);
  const int n = PythonThreadStates(rt, tstates.data(), kMaxPythonWalkThreads);
  if (n < 0) {
    *error = "the interpreter's thread list could not be read";
    return false;
  }
  std::unique_ptr<RawPythonFrame[]> frames(new RawPythonFrame[kMaxPythonWalkFrames]);
  for (int i = 0; i < n; ++i) {
    PythonThread t;
    t.thread_id = PythonThreadIdOf(rt, tstates[i]);
    t.tid = PythonNativeTidOf(rt, tstates[i]);
    const int k = ReadPythonFrames(rt, tstates[i], frames.get(), kMaxPythonWalkFrames);
    for (int j = 0; j < k; ++j) {
      t.frames.push_back(PythonFrame{frames[j].function, frames[j].file, frames[j].line});
    }
    threads->push_back(std::move(t));
  }
  return true;
}

bool ParsePythonTracebacks(const std::string& text, std::vector<PythonThread>* threads,
                           std::string* error) {
  threads->clear();
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    const char* header = StartsWith(line, "Thread 0x")           ? "Thread 0x"
                         : StartsWith(line, "Current thread 0x") ? "Current thread 0x"
                                                                 : nullptr;
    if (header != nullptr) {
      PythonThread t;
      t.thread_id = strtoull(line.c_str() + strlen(header), nullptr, 16);
      threads->push_back(t);
      continue;
    }
    PythonFrame frame;
    if (ParseFrame(line, &frame)) {
      if (threads->empty()) {
        *error = "line " + std::to_string(line_no) + ": a frame before any thread";
        return false;
      }
      threads->back().frames.push_back(frame);
      continue;
    }
    // Blank lines between threads, "  ..." (frames cut), "  <no Python frame>",
    // "  Garbage-collecting", "..." (threads cut): nothing to keep.
    if (line.empty() || StartsWith(line, "  ") || line == "...") continue;
    *error = "line " + std::to_string(line_no) + ": unexpected text \"" + line.substr(0, 80) + "\"";
    return false;
  }
  return true;
}

PythonCapture CapturePythonStacks() {
  PythonCapture c;
  auto initialized = reinterpret_cast<IsInitializedFn>(FindPythonSymbol("Py_IsInitialized"));
  if (initialized == nullptr) return c;  // no CPython here
  c.python = true;
  auto dump = reinterpret_cast<DumpFn>(FindPythonSymbol("_Py_DumpTracebackThreads"));
  if (initialized() == 0) {
    c.error = "the Python interpreter is not initialized (starting or finalizing)";
    return c;
  }
  if (dump == nullptr) {  // 3.9 and 3.10 (hidden), 3.13 (gone): the frame walker reads them
    PythonRuntime rt;
    std::string why;
    if (!FindPythonRuntime(&rt, &why) || !WalkPythonThreads(rt, &c.threads, &why)) {
      c.error = "CPython " + VersionText() + ": " + why;
    }
    return c;
  }
  int fd = memfd_create("xtimer-python-stacks", MFD_CLOEXEC);
  if (fd < 0) {
    c.error = std::string("memfd_create: ") + strerror(errno);
    return c;
  }
  // NULL, NULL: it finds the main interpreter itself, as for faulthandler's watchdog thread.
  const char* why = dump(fd, nullptr, nullptr);
  std::string text;
  if (why != nullptr) {
    c.error = std::string("_Py_DumpTracebackThreads: ") + why;
  } else if (!ReadAll(fd, &text)) {
    c.error = "cannot read the Python tracebacks back";
  } else if (!ParsePythonTracebacks(text, &c.threads, &c.error)) {
    c.error = "unreadable Python tracebacks: " + c.error;
  }
  close(fd);
  return c;
}

}  // namespace hook
}  // namespace xtimer
