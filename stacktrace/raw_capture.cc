#include "stacktrace/raw_capture.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "stacktrace/json_reader.h"

namespace xtimer {
namespace stacktrace {
namespace {

bool ParseRawThread(const JsonValue& v, size_t index, RawThread* out, std::string* error) {
  const std::string where = "threads[" + std::to_string(index) + "]: ";
  if (v.type != JsonValue::kObject) return *error = where + "is not an object", false;
  JsonFields f(v, where, error);
  if (!f.Int("tid", 0, INT32_MAX, true, &out->tid) ||
      !f.Str("name", kMaxStringBytes, false, &out->name) ||
      !f.Str("error", kMaxStringBytes, false, &out->error)) {
    return false;
  }
  const JsonValue* pcs = f.Array("pcs", kMaxFramesPerThread);
  if (pcs == nullptr) return false;
  for (const JsonValue& pc : pcs->items) {
    if (!pc.is_integer || pc.integer < 0) return f.Fail("pcs", "holds a value that is no address");
    out->pcs.push_back(static_cast<uint64_t>(pc.integer));
  }
  return true;
}

bool ParsePythonThread(const JsonValue& v, size_t index, RawPythonThread* out,
                       std::string* error) {
  const std::string where = "python_threads[" + std::to_string(index) + "]: ";
  if (v.type != JsonValue::kObject) return *error = where + "is not an object", false;
  JsonFields f(v, where, error);
  if (!f.Int("thread_id", 0, INT64_MAX, false, &out->thread_id) ||
      !f.Int("tid", 0, INT32_MAX, false, &out->tid)) {
    return false;
  }
  const JsonValue* frames = f.Array("frames", kMaxFramesPerThread);
  if (frames == nullptr) return false;
  for (size_t i = 0; i < frames->items.size(); ++i) {
    const JsonValue& fv = frames->items[i];
    const std::string fwhere = where + "frames[" + std::to_string(i) + "]: ";
    if (fv.type != JsonValue::kObject) return *error = fwhere + "is not an object", false;
    JsonFields ff(fv, fwhere, error);
    Frame fr;
    fr.kind = Frame::kPython;
    int64_t line = 0;
    if (!ff.Str("function", kMaxStringBytes, true, &fr.function) ||
        !ff.Str("file", kMaxStringBytes, false, &fr.module) ||
        !ff.Int("line", 0, INT32_MAX, false, &line)) {
      return false;
    }
    fr.line = static_cast<int32_t>(line);
    out->frames.push_back(std::move(fr));
  }
  return true;
}

// "python_exception": {"type": ..., "message": ...} of an uncaught Python exception.
bool ParsePythonException(const JsonValue& v, RawCrash* out, std::string* error) {
  if (v.type != JsonValue::kObject) {
    return *error = "crash: \"python_exception\" is not an object", false;
  }
  JsonFields f(v, "crash: python_exception: ", error);
  out->python_exception = true;
  return f.Str("type", kMaxStringBytes, true, &out->exception_type) &&
         f.Str("message", kMaxStringBytes, false, &out->exception_message);
}

bool ParseCrash(const JsonValue& v, RawCrash* out, std::string* error) {
  if (v.type != JsonValue::kObject) return *error = "\"crash\" is not an object", false;
  JsonFields f(v, "crash: ", error);
  out->present = true;
  if (const JsonValue* e = v.Find("python_exception")) {
    if (!ParsePythonException(*e, out, error)) return false;
  }
  // A signal, or an uncaught Python exception (no signal): one of the two.
  if (!f.Int("signal", 1, 64, !out->python_exception, &out->signal) ||
      !f.Int("si_code", INT32_MIN, INT32_MAX, false, &out->si_code) ||
      !f.Str("fault_address", 20, false, &out->fault_address) ||
      !f.Int("tid", 0, INT32_MAX, false, &out->tid)) {
    return false;
  }
  return true;
}

// A frame's kind, function, module, line and file -> its index in the file's frame table.
using FrameIndex =
    std::map<std::tuple<int, std::string, std::string, int32_t, std::string>, uint32_t>;

// Index of `f` in the file's frame table, added when new; -1 when the table is full.
int64_t Intern(const Frame& f, StacksFile* out, FrameIndex* index) {
  const auto key = std::make_tuple(static_cast<int>(f.kind), f.function, f.module, f.line, f.file);
  auto it = index->find(key);
  if (it != index->end()) return it->second;
  if (out->frames.size() >= static_cast<size_t>(kMaxFrameTable)) return -1;
  const auto i = static_cast<uint32_t>(out->frames.size());
  out->frames.push_back(f);
  index->emplace(key, i);
  return i;
}

void AddThread(int64_t tid, const std::string& name, std::string error,
               const std::vector<Frame>& frames, StacksFile* out, FrameIndex* index) {
  Thread t;
  t.tid = tid;
  t.name = name;
  for (const Frame& f : frames) {
    const int64_t i = Intern(f, out, index);
    if (i < 0) {
      error += std::string(error.empty() ? "" : "; ") + "frame table full: stack cut";
      break;
    }
    t.frames.push_back(static_cast<uint32_t>(i));
  }
  t.error = error.substr(0, kMaxStringBytes);
  out->threads.push_back(std::move(t));
}

}  // namespace

bool ParseRawCapture(const std::string& text, RawCapture* out, std::string* error) {
  *out = RawCapture();
  if (text.size() > kMaxFileBytes) return *error = "raw capture over the size limit", false;
  JsonValue doc;
  if (!ParseJson(text, &doc, error)) return false;
  if (doc.type != JsonValue::kObject) return *error = "not a JSON object", false;
  JsonFields f(doc, "", error);
  std::string format;
  int64_t version = 0;
  if (!f.Str("format", 64, true, &format)) return false;
  if (format != kRawStacksFormat) return f.Fail("format", "is not \"xtimer-raw-stacks\"");
  if (!f.Int("version", 1, INT32_MAX, true, &version)) return false;
  if (version != kRawStacksVersion) {
    return f.Fail("version", "is " + std::to_string(version) + ": this daemon reads version 1");
  }
  if (!f.Int("pid", 0, INT32_MAX, false, &out->pid) ||
      !f.Int("capture_time_ns", 0, INT64_MAX, false, &out->capture_time_ns) ||
      !f.Str("python_error", kMaxStringBytes, false, &out->python_error)) {
    return false;
  }
  if (const JsonValue* crash = doc.Find("crash")) {
    if (!ParseCrash(*crash, &out->crash, error)) return false;
  }
  const JsonValue* threads = f.Array("threads", kMaxThreads);
  if (threads == nullptr) return false;
  out->threads.resize(threads->items.size());
  for (size_t i = 0; i < threads->items.size(); ++i) {
    if (!ParseRawThread(threads->items[i], i, &out->threads[i], error)) return false;
  }
  if (doc.Find("python_threads") == nullptr) return true;
  const JsonValue* py = f.Array("python_threads", kMaxThreads);
  if (py == nullptr) return false;
  out->python_threads.resize(py->items.size());
  for (size_t i = 0; i < py->items.size(); ++i) {
    if (!ParsePythonThread(py->items[i], i, &out->python_threads[i], error)) return false;
  }
  return true;
}

bool IsEvalFrame(const Frame& f) {
  return f.kind == Frame::kNative && f.function == "_PyEval_EvalFrameDefault";
}

std::vector<Frame> CombineFrames(const std::vector<Frame>& native,
                                 const std::vector<Frame>& python) {
  std::vector<Frame> out;
  size_t first = native.size(), last = native.size();
  if (!python.empty()) {
    for (size_t i = 0; i < native.size(); ++i) {
      if (!IsEvalFrame(native[i])) continue;
      if (first == native.size()) first = i;
      last = i;
    }
  }
  out.insert(out.end(), native.begin(), native.begin() + first);
  out.insert(out.end(), python.begin(), python.end());
  if (last < native.size()) out.insert(out.end(), native.begin() + last + 1, native.end());
  if (out.size() > static_cast<size_t>(kMaxFramesPerThread)) out.resize(kMaxFramesPerThread);
  return out;
}

void BuildThreads(const RawCapture& raw, const SymbolizeFn& symbolize, StacksFile* out) {
  FrameIndex index;
  std::map<int64_t, const RawPythonThread*> python_by_tid;
  for (const RawPythonThread& p : raw.python_threads) {
    if (p.tid != 0) python_by_tid.emplace(p.tid, &p);
  }
  std::set<const RawPythonThread*> used;
  for (const RawThread& t : raw.threads) {
    auto py = python_by_tid.find(t.tid);
    std::vector<Frame> python;
    if (py != python_by_tid.end()) {
      python = py->second->frames;
      used.insert(py->second);
    }
    const std::vector<Frame> native = symbolize(t.pcs);
    std::string error = t.error;
    const std::vector<Frame> frames = CombineFrames(native, python);
    if (native.size() + python.size() > frames.size() &&
        frames.size() == static_cast<size_t>(kMaxFramesPerThread)) {
      error += std::string(error.empty() ? "" : "; ") + "stack cut at " +
               std::to_string(kMaxFramesPerThread) + " frames";
    }
    AddThread(t.tid, t.name, error, frames, out, &index);
  }
  for (const RawPythonThread& p : raw.python_threads) {
    if (used.count(&p) != 0 || out->threads.size() >= static_cast<size_t>(kMaxThreads)) continue;
    AddThread(p.tid, "python thread " + std::to_string(p.thread_id), "", p.frames, out, &index);
  }
}

}  // namespace stacktrace
}  // namespace xtimer
