// The poller: one thread per process (started by the first hooked call, every signal blocked).
//
// Each cycle it (1) drains the queue fed by the hot path into per-stream FIFOs, (2) completes ops
// per stream in order: when the stream's last op is done every op before it is (a stream
// completes in order: one query for the backlog), else it queries the end event of each head op
// and stops at the first one not done, so a slow stream never delays another, (3) computes GPU start and duration with
// the real cudaEventElapsedTime (a float in ms: the ns value is llround(ms * 1e6), exact to about
// 1e-7 relative) and aligns the start to the host clock, (4) writes OpRecords, NameRecords and
// CommRecords to the ring, returns events to their pool, (5) publishes the in-flight table (per
// communicator and device: progress, and the oldest collective in flight, started or queued, with
// the op that blocks its stream; see PublishInflight) and the heartbeat, and (6) keeps the
// registration with the daemon (retrying every second), reading the daemon's stack requests
// from it every 10 ms and handing them to the StackService (hook/stack_service.h). It cycles
// every millisecond while ops are pending and backs off to 20 ms when idle.
#ifndef XTIMER_HOOK_POLLER_H_
#define XTIMER_HOOK_POLLER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "format/ring.h"
#include "format/stack_request.h"
#include "hook/stack_service.h"
#include "hook/state.h"

namespace xtimer {
namespace hook {

class Poller {
 public:
  explicit Poller(State* state);
  void Start();
  // Stops and joins the thread (at exit).
  void Stop();
  // Waits until `queued` entries have been handled (written or discarded). False on timeout.
  bool WaitFor(uint64_t queued, int timeout_ms);

  uint64_t written() const { return written_.load(); }
  uint64_t ring_dropped() const;
  // The ring's shared header once the ring exists, else nullptr (any thread, signal handlers).
  format::RingHeader* header() const { return header_.load(); }

 private:
  struct StreamKey {
    int device;
    uint64_t stream;
    bool operator==(const StreamKey& o) const { return device == o.device && stream == o.stream; }
  };
  struct StreamKeyHash {
    size_t operator()(const StreamKey& k) const {
      return std::hash<uint64_t>()(k.stream * 31 + static_cast<uint64_t>(k.device));
    }
  };
  struct Fifo {
    std::deque<Pending> ops;
    uint32_t group_id = 0;  // timing of the last timed group member, for its followers
    int64_t group_start_ns = 0;
    int64_t group_duration_ns = 0;
    uint32_t finished_group_id = 0;  // the group of the last timed op completed, timed or not
    uint32_t queued_group_id = 0;    // the group of the last group op queued (timed or tracked)
    cudaEvent_t queued_group_start = nullptr;  // ... its start event (nullptr: tracked)
  };
  // A collective in flight: its record and the start event that precedes it on its stream (its
  // own, or its group leader's for a follower; nullptr when none). The event stays out of the
  // pool until the op completes, which removes the entry first.
  struct InflightColl {
    format::OpRecord rec;
    cudaEvent_t start = nullptr;
    bool follower = false;
    bool untimed = false;  // tracked only (budget.h): started or queued is not known
    bool started = false;  // cached once seen: a start event does not un-fire
    int64_t gpu_start_ns = 0;
  };
  struct Flight {
    uint64_t issued = 0;
    uint64_t completed = 0;
    std::deque<int64_t> launches;  // host launch times of ops in flight, in issue order
    std::deque<InflightColl> colls;  // collectives in flight, in issue order
    int64_t last_activity_ns = 0;
  };
  using FlightKey = std::pair<uint64_t, int>;  // (comm id, device); comm id 0: every other op

  void Run();
  // One cycle; returns whether anything is still pending.
  bool Cycle();
  void Drain();
  // Adds events to every device pool that runs low (state.h: kEventGrowStep up to kMaxEvents).
  void GrowPools();
  // The hook's counters (untimed ops, own time, ops considered and timed) into the ring header.
  void PublishCounters();
  // Makes `device` the poller thread's current device before its CUDA calls for that device, so
  // that no call of the poller's creates a context on a device the process does not use (a
  // thread's first runtime call with no device set would make device 0's primary context). The
  // first time, also puts the thread in cudaStreamCaptureModeThreadLocal for good: its queries
  // then never invalidate an application's capture (cuda_api.h, CaptureModeScope). The device is
  // never switched back. False when the runtime refused the device.
  bool UseDevice(int device);
  void CompleteStreams();
  // Whether the last op queued on `f` (and so, a stream completing in order, every op before it)
  // is done: one query for a whole backlog. False for fewer than two ops or an unknown answer.
  bool TailDone(const Fifo& f);
  // Completes `p`, the head of `fifo` (`done`: known complete, no query needed); false: the head
  // is not done yet.
  bool Complete(Fifo* fifo, Pending* p, bool done);
  bool CompleteTracked(Fifo* fifo, Pending* p, bool done);  // a kTracked head: its mark
  bool CompleteProfiled(Fifo* fifo, Pending* p, bool done);  // a kProfiled head: NCCL's report
  void Emit(Pending* p);
  void EmitName(uint32_t name_id);
  // Sends NVTX string `id` (format::RecordType::kNvtxString) unless it was sent; 0 is none.
  void EmitNvtxString(uint32_t id);
  void Issue(const Pending& p, const Fifo* fifo);
  void Finish(const Pending& p);
  // Drops f's collectives listed before sequence number `seq`, which just completed.
  void DropPassed(Flight* f, uint64_t seq);
  void Write(const format::RecordSlot& r);
  void PublishInflight(int64_t now);
  // The row's oldest collective: started (its start event fired) or queued, and for a queued
  // one the oldest unfinished op on its stream. Queries events on this thread only.
  void DescribeOldest(InflightColl* c, format::InflightCollective* out);
  void DescribeBlocker(const InflightColl& c, format::InflightBlocker* out);
  // Connects to the daemon, checks its peer credentials (format::CheckDaemonPeer) and sends the
  // ring; re-checks an open connection.
  void Register(int64_t now);
  void ResendIdentity();
  // Reads what the daemon sent on `fd`: whole StackRequests, each handed to stacks_. False when
  // the connection is closed or out of step (a message that is not a request).
  bool ReadRequests(int fd);
  // Writes the communicator records still waiting to be re-sent while the ring has room.
  void ResendPending();

  State* state_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> running_{false};
  std::optional<format::RingWriter> ring_;
  std::atomic<format::RingHeader*> header_{nullptr};  // for ring_dropped() from other threads
  bool rank_known_ = false;
  int global_rank_ = -1;
  std::unordered_map<StreamKey, Fifo, StreamKeyHash> fifos_;
  std::map<FlightKey, Flight> flights_;
  // PublishInflight's working space, kept from one publication to the next so that none
  // allocates or initializes the whole table: (busiest-first key, flight) and the rows.
  std::vector<std::pair<int64_t, std::map<FlightKey, Flight>::value_type*>> publish_order_;
  format::InflightRow publish_rows_[format::kMaxInflight];
  std::vector<bool> names_sent_;
  std::vector<bool> nvtx_strings_sent_;
  // Every CommRecord written, by (comm id, device): a communicator of ncclCommInitAll has a rank
  // on each device of the process. Sent again on each registration after the first, so a
  // restarted daemon (which reads on from where its predecessor stopped) knows every
  // communicator's rank and size. Names are sent again at their next use.
  std::map<std::pair<uint64_t, int>, format::RecordSlot> comm_records_;
  std::deque<std::pair<uint64_t, int>> resend_;  // keys of comm_records_ not yet re-sent
  int registrations_ = 0;
  bool peer_refusal_logged_ = false;  // an untrusted daemon was reported (once)
  StackService stacks_;
  unsigned char request_buf_[sizeof(format::StackRequest)] = {};
  size_t request_have_ = 0;  // bytes of a request received so far
  std::atomic<uint64_t> handled_{0};
  std::atomic<uint64_t> written_{0};
  int64_t next_connect_ns_ = 0;
  int64_t next_check_ns_ = 0;
  int current_device_ = -1;       // the poller thread's current device, once UseDevice set one
  bool capture_mode_set_ = false;  // the thread's capture interaction mode is thread-local
  bool inflight_dirty_ = true;
  int64_t next_publish_ns_ = 0;
  int64_t next_epoch_ns_ = 0;
};

}  // namespace hook
}  // namespace xtimer

#endif  // XTIMER_HOOK_POLLER_H_
