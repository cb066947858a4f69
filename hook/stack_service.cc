#include "hook/stack_service.h"

#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "format/stack_request.h"
#include "hook/log.h"

namespace xtimer {
namespace hook {
namespace {

constexpr size_t kMaxStringBytes = 4096;  // the .stacks file's limit for a name or file

// `s` (at most kMaxStringBytes of it) as a JSON string. Unlike util/json.h's JsonQuote, bytes
// >= 0x80 stay as they are: the daemon reads strings as bytes, so UTF-8 file and function names
// arrive unchanged (JsonQuote's \u00XX would turn each byte into a Latin-1 character).
std::string Quote(const std::string& s) {
  std::string out = "\"";
  const size_t n = std::min(s.size(), kMaxStringBytes);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char esc[8];
      snprintf(esc, sizeof(esc), "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Cut(size_t kept, size_t had) {
  return "stack cut to " + std::to_string(kept) + " of " + std::to_string(had) +
         " frames (raw capture over " + std::to_string(format::kMaxRawStacksBytes) + " bytes)";
}

void AppendThreads(const std::vector<ThreadStack>& threads, size_t max_frames, std::string* j) {
  *j += "\"threads\": [";
  for (size_t i = 0; i < threads.size(); ++i) {
    const ThreadStack& t = threads[i];
    const size_t n = std::min(t.pcs.size(), max_frames);
    *j += (i ? ",\n  " : "\n  ");
    *j += "{\"tid\": " + std::to_string(t.tid) + ", \"name\": " + Quote(t.name) + ", \"pcs\": [";
    char pc[32];
    for (size_t k = 0; k < n; ++k) {
      const int len = snprintf(pc, sizeof(pc), k ? ", %llu" : "%llu",
                               static_cast<unsigned long long>(t.pcs[k]));
      j->append(pc, static_cast<size_t>(len));
    }
    *j += "]";
    if (t.handler_ns > 0) *j += ", \"handler_ns\": " + std::to_string(t.handler_ns);
    std::string error = t.error;
    if (n < t.pcs.size()) error += (error.empty() ? "" : "; ") + Cut(n, t.pcs.size());
    if (!error.empty()) *j += ", \"error\": " + Quote(error);
    *j += "}";
  }
  *j += "]";
}

void AppendPython(const PythonCapture& python, const std::map<uint64_t, int>& tids,
                  size_t max_frames, std::string* j) {
  if (!python.python) return;
  *j += ",\n\"python_threads\": [";
  for (size_t i = 0; i < python.threads.size(); ++i) {
    const PythonThread& t = python.threads[i];
    auto known = tids.find(t.thread_id);
    const int tid = t.tid != 0 ? t.tid : known != tids.end() ? known->second : 0;
    *j += (i ? ",\n  " : "\n  ");
    *j += "{\"thread_id\": " + std::to_string(t.thread_id) +
          ", \"tid\": " + std::to_string(tid) + ", \"frames\": [";
    const size_t n = std::min(t.frames.size(), max_frames);
    for (size_t k = 0; k < n; ++k) {
      const PythonFrame& f = t.frames[k];
      *j += std::string(k ? ", " : "") + "{\"function\": " + Quote(f.function) +
            ", \"file\": " + Quote(f.file) + ", \"line\": " + std::to_string(f.line) + "}";
    }
    *j += "]}";
  }
  *j += "]";
  if (!python.error.empty()) *j += ",\n\"python_error\": " + Quote(python.error);
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

std::string Build(int pid, int64_t capture_time_ns, const std::vector<ThreadStack>& threads,
                  const PythonCapture& python, const std::map<uint64_t, int>& tids,
                  size_t max_frames) {
  std::string j;
  j.reserve(1 << 20);
  j += "{\"format\": \"xtimer-raw-stacks\", \"version\": 1, \"pid\": " + std::to_string(pid) +
       ", \"capture_time_ns\": " + std::to_string(capture_time_ns) + ",\n";
  AppendThreads(threads, max_frames, &j);
  AppendPython(python, tids, max_frames, &j);
  j += "}\n";
  return j;
}

// The most frames per thread whose pcs (at most 22 bytes each: ", " and 20 digits) fit beside
// `others` bytes (the text with no frames at all, every cut message included).
size_t FramesThatFit(const std::vector<ThreadStack>& threads, size_t others) {
  if (others >= format::kMaxRawStacksBytes) return 0;
  const size_t budget = format::kMaxRawStacksBytes - others;
  size_t lo = 0, hi = kMaxCaptureFrames;
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    size_t bytes = 0;
    for (const ThreadStack& t : threads) bytes += std::min(t.pcs.size(), mid) * 22;
    if (bytes <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace

std::string RawStacksJson(int pid, int64_t capture_time_ns, const std::vector<ThreadStack>& threads,
                          const PythonCapture& python) {
  std::map<uint64_t, int> tids;  // pthread_t -> tid, as the signal handlers recorded them
  for (const ThreadStack& t : threads) {
    if (t.pthread_id != 0) tids[t.pthread_id] = t.tid;
  }
  // Cut every stack to fewer frames until the text fits (4096 threads x 1024 pcs would not):
  // first to what the pcs' worst size allows next to everything else, then by halves.
  for (size_t max_frames = FramesThatFit(threads, Build(pid, capture_time_ns, threads, python,
                                                       tids, 0).size());
       ; max_frames /= 2) {
    std::string j = Build(pid, capture_time_ns, threads, python, tids, max_frames);
    if (j.size() <= format::kMaxRawStacksBytes || max_frames == 0) return j;
  }
}

bool AnswerStackRequest(int socket_fd, uint64_t request_id, const std::atomic<bool>* stop,
                        std::string* error) {
  const int64_t now = RealtimeNs();
  std::vector<ThreadStack> threads = CaptureNativeStacks(stop);
  PythonCapture python;  // left empty when exiting: the threads' errors say why
  if (stop == nullptr || !stop->load()) python = CapturePythonStacks();
  const std::string json = RawStacksJson(getpid(), now, threads, python);
  int fd = memfd_create("xtimer-raw-stacks", MFD_CLOEXEC);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < json.size()) {
    ssize_t n = write(fd, json.data() + done, json.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = std::string("writing the raw capture: ") + strerror(errno);
      close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  bool ok = format::SendStackReply(socket_fd, request_id, fd, json.size(), error);
  close(fd);
  return ok;
}

bool StackService::Submit(int socket_fd, uint64_t request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || queue_.size() >= kMaxQueuedStackRequests) {
    close(socket_fd);
    return false;
  }
  if (!thread_.joinable()) {
    // Every signal blocked: the capture signal must never interrupt the capturer itself.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this] { Run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  queue_.emplace_back(socket_fd, request_id);
  cv_.notify_one();
  return true;
}

void StackService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stopping_.store(true);
    for (auto& q : queue_) close(q.first);
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StackService::Run() {
  pthread_setname_np(pthread_self(), "xtimer-stacks");
  for (;;) {
    std::pair<int, uint64_t> request;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      request = queue_.front();
      queue_.pop_front();
    }
    std::string error;
    if (!AnswerStackRequest(request.first, request.second, &stopping_, &error)) {
      LogLine("stack request %llu not answered: %s",
              static_cast<unsigned long long>(request.second), error.c_str());
    }
    close(request.first);
  }
}

}  // namespace hook
}  // namespace xtimer
