#include "daemon/dumps/op_log_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "daemon/base/log.h"
#include "daemon/dumps/dump_root.h"
#include "daemon/dumps/dump_writer.h"

namespace xtimer {
namespace daemon {
namespace {

constexpr const char* kOpLogDir = "oplog";

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string SegmentName(const std::string& base, int segment, const std::string& ext) {
  char num[16];
  snprintf(num, sizeof num, ".%03d.", segment);
  return base + num + ext;
}

}  // namespace

OpLogFiles::OpLogFiles(const OpLogFilesOptions& options) : options_(options) {}

OpLogFiles::~OpLogFiles() {
  for (auto& [key, s] : streams_) CloseSegment(&s);
  for (auto& [job, fd] : jobs_) {
    if (fd >= 0) close(fd);
  }
}

std::string OpLogFiles::JobDir(const std::string& job) const {
  return options_.root + "/" + kOpLogDir + "/" + JobDirName(job);
}

int OpLogFiles::JobDirFd(const std::string& job, uint32_t uid) {
  auto it = jobs_.find(job);
  if (it != jobs_.end()) return it->second;
  const std::string dir = JobDir(job);
  std::string error;
  int fd = OpenDirUnderRoot(options_.root, dir, &error);
  if (fd >= 0 && !GiveJobDirTo(fd, dir, uid, &error)) {
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    last_error_ = "op log of job " + job + ": " + error;
    Logf("%s", last_error_.c_str());
  }
  jobs_[job] = fd;
  return fd;
}

bool OpLogFiles::OpenSegment(Stream* s) {
  for (int tries = 0; tries < 1000; ++tries) {
    ++s->segment;
    const std::string name = SegmentName(s->base, s->segment, s->ext);
    const int fd = openat(s->dir_fd, name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      s->fd = fd;
      s->segment_bytes = 0;
      return true;
    }
    if (errno != EEXIST) {
      last_error_ = "op log: cannot create " + name + ": " + strerror(errno);
      Logf("%s", last_error_.c_str());
      return false;
    }
  }
  last_error_ = "op log: 1000 segments of " + s->base + " exist already: remove old ones";
  return false;
}

void OpLogFiles::WriteBuffer(Stream* s) {
  if (s->buffer.empty() || s->fd < 0) return;
  if (!WriteAll(s->fd, s->buffer)) {
    last_error_ = "op log: writing " + s->base + ": " + strerror(errno);
    Logf("%s", last_error_.c_str());
  }
  s->buffer.clear();
}

void OpLogFiles::CloseSegment(Stream* s) {
  if (s->fd < 0) return;
  WriteBuffer(s);
  close(s->fd);
  s->fd = -1;
  closed_.push_back({s->job, SegmentName(s->base, s->segment, s->ext), s->segment_bytes});
}

void OpLogFiles::Delete(const Closed& c) {
  auto it = jobs_.find(c.job);
  std::string error;
  const int fd = it != jobs_.end() ? it->second : OpenDirUnderRoot(options_.root, JobDir(c.job),
                                                                     &error);
  if (fd >= 0 && (unlinkat(fd, c.name.c_str(), 0) == 0 || errno == ENOENT)) ++segments_deleted_;
  if (fd >= 0 && it == jobs_.end()) close(fd);
}

bool OpLogFiles::MakeRoom(uint64_t need) {
  while (total_bytes_ + need > options_.max_total_bytes && !closed_.empty()) {
    const Closed& c = closed_.front();
    Delete(c);
    total_bytes_ -= std::min(total_bytes_, c.bytes);
    closed_.pop_front();
  }
  return total_bytes_ + need <= options_.max_total_bytes;
}

bool OpLogFiles::Append(const std::string& job, uint32_t uid, const std::string& stream,
                        OpLogFormat f, bool anomaly, const std::string& text) {
  const uint64_t lines = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
  Stream& s = streams_[{job, stream}];
  if (s.dir_fd < 0) {
    s.dir_fd = JobDirFd(job, uid);
    s.job = job;
    s.base = stream;
    s.ext = OpLogExtension(f);
    s.header = OpLogHeader(f, anomaly);
  }
  if (s.dir_fd < 0) {
    dropped_lines_ += lines;
    return false;
  }
  const bool full = s.fd >= 0 && s.segment_bytes > s.header.size() &&
                    s.segment_bytes + text.size() > options_.rotate_bytes;
  if (full) CloseSegment(&s);
  const uint64_t need = text.size() + (s.fd < 0 ? s.header.size() : 0);
  if (!MakeRoom(need) || (s.fd < 0 && !OpenSegment(&s))) {
    dropped_lines_ += lines;
    return false;
  }
  if (s.segment_bytes == 0) s.buffer += s.header;
  s.buffer += text;
  s.segment_bytes += need;
  total_bytes_ += need;
  if (s.buffer.size() >= options_.buffer_bytes) WriteBuffer(&s);
  return true;
}

void OpLogFiles::Flush() {
  for (auto& [key, s] : streams_) WriteBuffer(&s);
}

void OpLogFiles::CloseJob(const std::string& job) {
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->first.first == job) {
      CloseSegment(&it->second);
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
  auto dir = jobs_.find(job);
  if (dir != jobs_.end()) {
    if (dir->second >= 0) close(dir->second);
    jobs_.erase(dir);
  }
}

}  // namespace daemon
}  // namespace xtimer
