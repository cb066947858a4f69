// The files of the op log and the anomaly log (docs/oplog.md "Files"): under the dump root, one
// folder per job (DUMP_ROOT/oplog/JOB, given to the job's uid with mode 0700 as dump folders
// are), one stream per rank (and one anomaly stream per node) cut into numbered segments
// (`rank-00003.000.jsonl`, `.001`, ...) of at most `rotate_bytes` each, every CSV segment with
// its header. All segments together stay under `max_total_bytes`: the oldest closed segments
// are deleted first; when only open segments are left, new lines are dropped and counted.
// Folders are opened without following symlinks (daemon/dumps/dump_root.h); files are created with
// O_EXCL | O_NOFOLLOW (a segment that exists, from an earlier daemon, is skipped).
// Not thread-safe: one owner (the op log's writer thread).
#ifndef XTIMER_DAEMON_OP_LOG_FILES_H_
#define XTIMER_DAEMON_OP_LOG_FILES_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "daemon/dumps/op_log.h"

namespace xtimer {
namespace daemon {

struct OpLogFilesOptions {
  std::string root;                               // the dump root (checked, absolute)
  uint64_t rotate_bytes = uint64_t{64} << 20;     // --op-log-rotate-mb
  uint64_t max_total_bytes = uint64_t{1} << 30;   // --op-log-max-mb
  size_t buffer_bytes = 64 << 10;                 // a stream's buffer is written past this
};

class OpLogFiles {
 public:
  explicit OpLogFiles(const OpLogFilesOptions& options);
  ~OpLogFiles();  // writes what is buffered and closes every file
  OpLogFiles(const OpLogFiles&) = delete;
  OpLogFiles& operator=(const OpLogFiles&) = delete;

  // Appends whole lines (`text`, ending in '\n') to the stream `stream` ("rank-00003") of `job`,
  // whose folder belongs to `uid`. `anomaly` picks the CSV header. False when the lines were
  // dropped (the cap, or the folder or file could not be made: see last_error()).
  bool Append(const std::string& job, uint32_t uid, const std::string& stream, OpLogFormat f,
              bool anomaly, const std::string& text);
  // Writes every stream's buffer to its file (the flush interval).
  void Flush();
  // Closes the streams and the folder of `job` (its ranks are gone): their segments become
  // deletable.
  void CloseJob(const std::string& job);

  uint64_t total_bytes() const { return total_bytes_; }  // every segment, buffered text included
  uint64_t dropped_lines() const { return dropped_lines_; }
  uint64_t segments_deleted() const { return segments_deleted_; }
  const std::string& last_error() const { return last_error_; }
  // The job's folder (absolute path).
  std::string JobDir(const std::string& job) const;

 private:
  struct Stream {
    int fd = -1;
    int dir_fd = -1;  // not owned (jobs_)
    std::string job;
    std::string base;  // "rank-00003"
    std::string ext;   // "jsonl"
    std::string header;
    int segment = -1;
    uint64_t segment_bytes = 0;
    std::string buffer;
  };
  struct Closed {
    std::string job;
    std::string name;
    uint64_t bytes;
  };
  int JobDirFd(const std::string& job, uint32_t uid);
  bool OpenSegment(Stream* s);
  void CloseSegment(Stream* s);
  void WriteBuffer(Stream* s);
  // Deletes closed segments, oldest first, until `need` more bytes fit under the cap.
  bool MakeRoom(uint64_t need);

  const OpLogFilesOptions options_;
  // Deletes a closed segment, through its job's open folder or, for a closed job, the folder
  // opened again without following symlinks.
  void Delete(const Closed& c);

  std::map<std::string, int> jobs_;  // open job -> its folder's fd (-1: it could not be made)
  std::map<std::pair<std::string, std::string>, Stream> streams_;  // (job, stream)
  std::deque<Closed> closed_;
  uint64_t total_bytes_ = 0;
  uint64_t dropped_lines_ = 0;
  uint64_t segments_deleted_ = 0;
  std::string last_error_;
};

}  // namespace daemon
}  // namespace xtimer

#endif  // XTIMER_DAEMON_OP_LOG_FILES_H_
