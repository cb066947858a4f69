#include "stacktrace/stacks_file.h"

#include <cstdio>

#include "stacktrace/json_reader.h"
#include "stacktrace/stacks_stream.h"
#include "util/json.h"
#include "util/process_name.h"

namespace xtimer {
namespace stacktrace {
namespace {

using Fields = JsonFields;

bool ParseFrame(const JsonValue& v, size_t index, Frame* out, std::string* error) {
  std::string where = "frames[" + std::to_string(index) + "]: ";
  if (v.type != JsonValue::kObject) return *error = where + "is not an object", false;
  Fields f(v, where, error);
  std::string kind;
  int64_t line = 0;
  if (!f.Str("kind", 16, true, &kind) || !f.Str("function", kMaxStringBytes, true, &out->function) ||
      !f.Str("module", kMaxStringBytes, false, &out->module) ||
      !f.Str("file", kMaxStringBytes, false, &out->file) ||
      !f.Int("line", 0, INT32_MAX, false, &line)) {
    return false;
  }
  if (kind != "native" && kind != "python") {
    return f.Fail("kind", "is \"" + kind.substr(0, 32) + "\": expected \"native\" or \"python\"");
  }
  out->kind = kind == "python" ? Frame::kPython : Frame::kNative;
  out->line = static_cast<int32_t>(line);
  return true;
}

bool ParseThread(const JsonValue& v, size_t index, size_t table_size, Thread* out,
                 std::string* error) {
  std::string where = "threads[" + std::to_string(index) + "]: ";
  if (v.type != JsonValue::kObject) return *error = where + "is not an object", false;
  Fields f(v, where, error);
  if (!f.Int("tid", 0, INT32_MAX, true, &out->tid) ||
      !f.Str("name", kMaxStringBytes, false, &out->name) ||
      !f.Str("error", kMaxStringBytes, false, &out->error)) {
    return false;
  }
  const JsonValue* frames = f.Array("frames", kMaxFramesPerThread);
  if (frames == nullptr) return false;
  out->frames.reserve(frames->items.size());
  for (const JsonValue& i : frames->items) {
    if (!i.is_integer || i.integer < 0 || static_cast<uint64_t>(i.integer) >= table_size) {
      return f.Fail("frames", "holds an index outside the frame table (" +
                                  std::to_string(table_size) + " frames)");
    }
    out->frames.push_back(static_cast<uint32_t>(i.integer));
  }
  return true;
}

bool ParseIdentity(const JsonValue& doc, StacksFile* out, std::string* error) {
  Fields f(doc, "", error);
  std::string format;
  int64_t version = 0, world = 0, rank = 0, local_rank = -1, device = -1;
  if (!f.Str("format", 64, true, &format)) return false;
  if (format != kStacksFormat) return f.Fail("format", "is not \"xtimer-stacks\"");
  if (!f.Int("version", 1, INT32_MAX, true, &version)) return false;
  if (version != kStacksVersion) {
    return f.Fail("version", "is " + std::to_string(version) +
                                 ": this xtimer reads version 1 (a newer xtimer wrote the file?)");
  }
  // world_size and rank -1 together: a process whose rank is not known (a pid-named file).
  if (!f.Int("world_size", -1, kMaxWorldSize, true, &world)) return false;
  if (world == 0) return f.Fail("world_size", "is 0: a world has 1 .. 2^20 ranks (-1: unknown)");
  if (!f.Int("rank", world < 0 ? -1 : 0, world < 0 ? -1 : world - 1, true, &rank) ||
      !f.Int("local_rank", -1, kMaxWorldSize, false, &local_rank) ||
      !f.Int("device", -1, kMaxWorldSize, false, &device) ||
      !f.Str("job", kMaxLabelBytes, false, &out->job) ||
      !f.Str("host", kMaxLabelBytes, false, &out->host) ||
      !f.Int("pid", 0, INT32_MAX, false, &out->pid) ||
      !f.Int("capture_time_ns", 0, INT64_MAX, false, &out->capture_time_ns) ||
      !f.Str("process_state", kMaxLabelBytes, false, &out->process_state) ||
      !f.Str("error", kMaxStringBytes, false, &out->error)) {
    return false;
  }
  out->world_size = static_cast<int32_t>(world);
  out->rank = static_cast<int32_t>(rank);
  out->local_rank = static_cast<int32_t>(local_rank);
  out->device = static_cast<int32_t>(device);
  return true;
}

}  // namespace

bool ParseStacksJson(const std::string& text, StacksFile* out, std::string* error) {
  return ParseStacksStream(text, out) || ParseStacksDom(text, out, error);
}

bool ParseStacksDom(const std::string& text, StacksFile* out, std::string* error) {
  *out = StacksFile();
  if (text.size() > kMaxFileBytes) {
    *error = "file is " + std::to_string(text.size()) + " bytes, over " +
             std::to_string(kMaxFileBytes);
    return false;
  }
  JsonValue doc;
  if (!ParseJson(text, &doc, error)) return false;
  if (doc.type != JsonValue::kObject) return *error = "not a JSON object", false;
  if (!ParseIdentity(doc, out, error)) return false;
  Fields f(doc, "", error);
  const JsonValue* frames = f.Array("frames", kMaxFrameTable);
  const JsonValue* threads = frames ? f.Array("threads", kMaxThreads) : nullptr;
  if (threads == nullptr) return false;
  out->frames.resize(frames->items.size());
  for (size_t i = 0; i < frames->items.size(); ++i) {
    if (!ParseFrame(frames->items[i], i, &out->frames[i], error)) return false;
  }
  out->threads.resize(threads->items.size());
  for (size_t i = 0; i < threads->items.size(); ++i) {
    if (!ParseThread(threads->items[i], i, out->frames.size(), &out->threads[i], error)) {
      return false;
    }
  }
  return true;
}

const char* KindName(Frame::Kind kind) {
  switch (kind) {
    case Frame::kPython: return "python";
    case Frame::kThread: return "thread";
    case Frame::kError: return "error";
    default: return "native";
  }
}

std::string StacksFileName(int32_t rank, int32_t world_size) {
  char name[64];
  std::snprintf(name, sizeof name, "%05d-%05d%s", rank, world_size, kStacksSuffix);
  return name;
}

std::string StacksFileName(const StacksIdentity& id) {
  if (HasRank(id)) return StacksFileName(id.rank, id.world_size);
  return RanklessName(id.pid, id.device) + kStacksSuffix;
}

std::string WriteStacksJson(const StacksFile& f) {
  std::string s = "{\"format\": \"xtimer-stacks\", \"version\": 1, \"job\": " + JsonQuote(f.job) +
                  ", \"rank\": " + std::to_string(f.rank) +
                  ", \"world_size\": " + std::to_string(f.world_size) +
                  ", \"local_rank\": " + std::to_string(f.local_rank) +
                  (f.device >= 0 ? ", \"device\": " + std::to_string(f.device) : "") +
                  ", \"host\": " + JsonQuote(f.host) + ", \"pid\": " + std::to_string(f.pid) +
                  ",\n \"capture_time_ns\": " + std::to_string(f.capture_time_ns) +
                  ", \"process_state\": " + JsonQuote(f.process_state);
  if (!f.error.empty()) s += ", \"error\": " + JsonQuote(f.error);
  s += ",\n \"frames\": [";
  for (size_t i = 0; i < f.frames.size(); ++i) {
    const Frame& fr = f.frames[i];
    s += std::string(i ? ",\n  " : "\n  ") + "{\"kind\": \"" + KindName(fr.kind) +
         "\", \"function\": " + JsonQuote(fr.function) + ", \"module\": " + JsonQuote(fr.module);
    if (fr.line > 0) s += ", \"line\": " + std::to_string(fr.line);
    if (!fr.file.empty()) s += ", \"file\": " + JsonQuote(fr.file);
    s += "}";
  }
  s += "],\n \"threads\": [";
  for (size_t i = 0; i < f.threads.size(); ++i) {
    const Thread& t = f.threads[i];
    s += std::string(i ? ",\n  " : "\n  ") + "{\"tid\": " + std::to_string(t.tid) +
         ", \"name\": " + JsonQuote(t.name);
    if (!t.error.empty()) s += ", \"error\": " + JsonQuote(t.error);
    s += ", \"frames\": [";
    for (size_t k = 0; k < t.frames.size(); ++k) {
      s += (k ? ", " : "") + std::to_string(t.frames[k]);
    }
    s += "]}";
  }
  return s + "]}\n";
}

}  // namespace stacktrace
}  // namespace xtimer
