// The timeline file: one per rank, written by xtimerd on a dump, read by `xtimer timeline`.
//
// Name: {rank:05d}-{world:05d}.timeline (rank -1 is written as "unknown-<pid>"). Little-endian.
//
//   FileHeader                          64 bytes, magic "XTTLINE1", version kTimelineVersion
//   Metadata block                      MetadataHeader + metadata_bytes of payload (CRC-32 checked)
//   Event block 0..                     BlockHeader + count EventRecords (CRC-32 checked), up to
//                                       kEventsPerBlock events each; the last may be shorter
//
// Metadata payload: a sequence of fields, each `u16 tag, u32 length, length bytes`; unknown tags are
// skipped (so later versions may add fields), known tags are:
//   kTagJob, kTagHost, kTagNode, kTagPod  UTF-8 strings
//   kTagIdentity   i32 pid, i32 rank, i32 local_rank, i32 world_size, i32 device
//   kTagClock      i64 realtime_ns, i64 monotonic_ns: read together when the dump was written;
//                  event times are CLOCK_REALTIME ns of the node that wrote the file
//   kTagStrings    u32 count, then count x (u16 length, bytes): the string table; index 0 is ""
//   kTagComms      u32 count, then count x (u64 id, u64 parent_id, i32 size, i32 rank,
//                  i32 global_rank, u32 nmembers, nmembers x i32 member global ranks (-1: unknown))
//   kTagDump       i64 dump_time_ns, i64 window_begin_ns, i64 window_end_ns, u32 kinds mask
//   kTagHookCost   i64 hook_start_ns (CLOCK_REALTIME), u64 own_ns, u32 budget_ppm, u32 count,
//                  then count (<= 16) x (u64 calls, u64 timed) by OpKind: what the hook cost the
//                  process up to the dump (docs/timeline.md); absent from daemons before it
//   kTagNvtx       u32 count, then count x NvtxEntry (48 bytes): the process's NVTX events in
//                  the dump's window (host slices); absent when there were none
//
// Events are in completion order per stream; readers must not assume a global order.
//
// A reader rejects a file whose header or metadata is bad, with an error that says what and where,
// and recovers every intact event block before the first bad or truncated one (it reports how many
// events it recovered and why it stopped).
#ifndef XTIMER_TIMELINE_FORMAT_H_
#define XTIMER_TIMELINE_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "format/record.h"

namespace xtimer {
namespace timeline {

constexpr char kFileMagic[8] = {'X', 'T', 'T', 'L', 'I', 'N', 'E', '1'};
constexpr uint32_t kTimelineVersion = 1;
constexpr uint32_t kMetadataMagic = 0x4154454d;  // "META"
constexpr uint32_t kBlockMagic = 0x4b4c4258;     // "XBLK"
constexpr uint32_t kEventsPerBlock = 4096;
constexpr size_t kMaxMetadataBytes = 64u << 20;

// Limits a reader holds every field to (docs/timeline-format.md, "Limits"). A file whose metadata
// breaks one is rejected; an event that breaks one is left out and the file reported incomplete,
// so no crafted value sizes an allocation or reaches the analysis.
constexpr int32_t kMaxWorldSize = 1 << 20;  // world size, ranks, communicator sizes
constexpr int64_t kMaxTimeNs = format::kMaxTimeNs;  // times: [0, 2^62) ns, as in the ring
constexpr int64_t kMaxDurationNs = int64_t{7} * 86400 * 1000000000;  // a week
constexpr int64_t kMaxGemmDim = (int64_t{1} << 31) - 1;  // m, n, k, batch (cuBLAS's int range)
constexpr double kMaxGemmElements = 1099511627776.0;  // 2^40: m*k, k*n, m*n of one matrix
constexpr uint64_t kMaxOpBytes = uint64_t{1} << 48;  // bytes moved by one op (256 TiB)

struct FileHeader {
  char magic[8];          //  0  kFileMagic
  uint32_t version;       //  8  kTimelineVersion
  uint32_t header_size;   // 12  sizeof(FileHeader)
  uint32_t event_size;    // 16  sizeof(EventRecord)
  uint32_t flags;         // 20  0
  uint64_t event_count;   // 24  total events in all blocks (0 if the writer did not finish)
  int64_t created_ns;     // 32  CLOCK_REALTIME
  uint8_t reserved[24];   // 40
};
static_assert(sizeof(FileHeader) == 64, "FileHeader layout");

struct MetadataHeader {
  uint32_t magic;           //  0  kMetadataMagic
  uint32_t crc32;           //  4  CRC-32 (IEEE) of the payload
  uint64_t payload_bytes;   //  8  <= kMaxMetadataBytes
};
static_assert(sizeof(MetadataHeader) == 16, "MetadataHeader layout");

struct BlockHeader {
  uint32_t magic;   //  0  kBlockMagic
  uint32_t count;   //  4  events in this block, 1..kEventsPerBlock
  uint32_t crc32;   //  8  CRC-32 (IEEE) of the count * sizeof(EventRecord) bytes that follow
  uint32_t index;   // 12  0-based block number
};
static_assert(sizeof(BlockHeader) == 16, "BlockHeader layout");

enum MetadataTag : uint16_t {
  kTagJob = 1,
  kTagHost = 2,
  kTagNode = 3,
  kTagPod = 4,
  kTagIdentity = 5,
  kTagClock = 6,
  kTagStrings = 7,
  kTagComms = 8,
  kTagDump = 9,
  kTagHookCost = 10,
  kTagNvtx = 11,
};

// One NVTX event of kTagNvtx: format::NvtxRecord with its strings as string-table indexes.
struct NvtxEntry {
  uint8_t event;      //  0  format::NvtxEvent: 1 range (push/pop), 2 start, 3 end, 4 mark
  uint8_t flags;      //  1  format::kNvtx*
  uint16_t category;  //  2  the NVTX category when below 65536, else 0 (older files: 0)
  uint32_t tid;       //  4  OS thread id
  uint32_t name;      //  8  string table index of the message (0: none)
  uint32_t domain;    // 12  string table index of the domain's name (0: the default domain)
  int64_t start_ns;   // 16  range, start, mark
  int64_t end_ns;     // 24  range, end, mark
  uint64_t range_id;  // 32  start, end: pairs them
  int32_t depth;      // 40  range: nesting level in its domain on its thread, [0, 1024)
  uint32_t color;     // 44  ARGB (flags bit 0)
};
static_assert(sizeof(NvtxEntry) == 48, "NvtxEntry layout is part of the file format");
constexpr uint32_t kHookCostKinds = 16;  // kTagHookCost's most (calls, timed) pairs

// kind, op and dtype use the values of format/record.h (OpKind, Operation, DType); flags too.
struct EventRecord {
  uint16_t op;            //   0
  uint8_t kind;           //   2
  uint8_t dtype;          //   3
  uint8_t flags;          //   4  format::kFlag*
  uint8_t reserved0;      //   5
  int16_t device;         //   6
  uint32_t name;          //   8  string table index of the kernel name (0: none)
  int32_t peer;           //  12  send/recv peer (communicator rank), else -1
  uint64_t stream;        //  16
  int64_t cpu_launch_ns;  //  24
  int64_t gpu_start_ns;   //  32
  int64_t duration_ns;    //  40
  uint64_t bytes;         //  48
  int64_t m;              //  56
  int64_t n;              //  64
  int64_t k;              //  72
  uint64_t comm_id;       //  80
  uint64_t seq;           //  88
  int32_t root;           //  96
  uint32_t group_id;      // 100
  int64_t batch;          // 104
};
static_assert(sizeof(EventRecord) == 112, "EventRecord layout is part of the file format");

// dump_kernel_type bits (the seed's DumpKernelTrace field): 0 means all.
constexpr uint32_t kDumpMatmul = 1u << 0;
constexpr uint32_t kDumpNccl = 1u << 1;       // collectives and send/recv
constexpr uint32_t kDumpHostAndMemory = 1u << 2;  // copies, memsets, kernels, graphs, host syncs

}  // namespace timeline
}  // namespace xtimer

#endif  // XTIMER_TIMELINE_FORMAT_H_
