// Per operation signature durations of a dump, with waiting removed (the input of `xtimer diff`,
// compared by cli/op_diff.h). A signature is what makes two calls the same work: the operation (a
// kernel's name), its shape (GEMM m, n, k, batch) or bytes, its dtype, and for communication the
// communicator's size.
#ifndef XTIMER_CLI_READERS_OP_TABLE_H_
#define XTIMER_CLI_READERS_OP_TABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "timeline/timeline_io.h"

namespace xtimer {
namespace cli {

// The name of the one signature a send and its receive share: a transfer is one row, counted once.
constexpr char kTransferName[] = "Send/Recv";

struct OpSignature {
  uint8_t kind = 0;  // format::OpKind
  uint16_t op = 0;   // format::Operation (kSend for a transfer)
  std::string name;  // the operation's name, or the kernel's; kTransferName for send/recv
  uint8_t dtype = 0;
  int64_t m = 0, n = 0, k = 0, batch = 0;
  uint64_t bytes = 0;
  int32_t comm_size = 0;
  bool operator<(const OpSignature& o) const {
    return std::tie(kind, op, name, dtype, m, n, k, batch, bytes, comm_size) <
           std::tie(o.kind, o.op, o.name, o.dtype, o.m, o.n, o.k, o.batch, o.bytes, o.comm_size);
  }
  std::string Shape() const;  // "4096x11008x4096", "64 MiB", ""
};

// One rank's own work of one signature.
struct RankWork {
  uint64_t count = 0;
  double total_ns = 0;
};

struct OpTable {
  int ranks = 0;  // ranks whose files were read
  uint64_t events = 0;
  // ns, waiting removed (docs/analyze-cli.md#xtimer-diff-a-b). A collective's every call counts
  // its instance's transfer: the shortest duration among its calls (the last to arrive waited
  // for nobody). A send and its receive are one transfer, one entry under kTransferName: the
  // shorter of the two durations. A call whose peers were not read counts its own duration.
  std::map<OpSignature, std::vector<int64_t>> durations;
  // By global rank: each rank's own work, its computation, copies and kernels (not
  // communication, which its members share, nor host synchronisation, which is waiting).
  std::map<int32_t, std::map<OpSignature, RankWork>> own;
  // By global rank: its collective and send/recv calls, the measure of how much of the job its
  // files hold (the same program issues as many per step in A and B).
  std::map<int32_t, uint64_t> comm_calls;
  std::vector<std::string> problems;  // "path: why" for inputs or files (partly) unreadable
};

// Reads every timeline file of `inputs` (timeline/inputs.h), each once; host synchronisations
// are left out. Returns false with *error when no file could be read.
bool ReadOpTable(const std::vector<std::string>& inputs, int jobs, OpTable* table,
                 std::string* error);

// One file's part of a table, made as the file is read, so that a reader of the file's events
// for another purpose builds the table in the same pass (the dump reader for `xtimer report`):
// Begin with its metadata, Add its events in file order (timeline::BlockCallbacks), Finish.
// Only its sends and receives are held until Finish (they are paired as a whole).
class OpTableFile {
 public:
  OpTableFile();
  ~OpTableFile();
  OpTableFile(const OpTableFile&) = delete;
  OpTableFile& operator=(const OpTableFile&) = delete;

  // `dir`: the file's folder, its node when the metadata names none.
  void Begin(const timeline::Metadata& m, const std::string& dir);
  void Add(const timeline::EventRecord* events, size_t count);
  void Finish(uint64_t events_read);

  struct Ops;  // what the file contributes (op_table.cc)

 private:
  friend class OpTableBuilder;
  std::unique_ptr<Ops> ops_;
};

// The files' parts in one table. Not thread-safe: one Add at a time.
class OpTableBuilder {
 public:
  OpTableBuilder();
  ~OpTableBuilder();
  OpTableBuilder(const OpTableBuilder&) = delete;
  OpTableBuilder& operator=(const OpTableBuilder&) = delete;

  void Add(OpTableFile* file);  // a finished file, whose part it takes
  // The table of the files added (table->problems left as they are); false with *error when
  // none was.
  bool Finish(OpTable* table, std::string* error);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cli
}  // namespace xtimer

#endif  // XTIMER_CLI_READERS_OP_TABLE_H_
