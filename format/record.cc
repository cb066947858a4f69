#include "format/record.h"

#include <algorithm>
#include <cstring>

namespace xtimer {
namespace format {

const char* CommIdText(uint64_t id, char (&buf)[kCommIdTextSize]) {
  static const char kDigits[] = "0123456789abcdef";
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < 16; ++i) buf[2 + i] = kDigits[(id >> (60 - 4 * i)) & 0xf];
  buf[18] = '\0';
  return buf;
}

size_t NamePartCount(size_t size) {
  return size == 0 ? 1 : (size + kNameChunk - 1) / kNameChunk;
}

RecordSlot NamePart(uint32_t name_id, const std::string& name, size_t part, RecordType type) {
  RecordSlot slot;
  std::memset(&slot, 0, sizeof(slot));
  NameRecord& n = slot.name;
  n.version = kRecordVersion;
  n.type = static_cast<uint8_t>(type);
  n.flags = part + 1 == NamePartCount(name.size()) ? kNameLast : 0;
  n.name_id = name_id;
  n.part = static_cast<uint16_t>(part);
  const size_t off = std::min(part * kNameChunk, name.size());
  const size_t len = std::min(kNameChunk, name.size() - off);
  n.length = static_cast<uint16_t>(len);
  if (len > 0) std::memcpy(n.text, name.data() + off, len);
  return slot;
}

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kMatmul: return "matmul";
    case OpKind::kCollective: return "collective";
    case OpKind::kP2P: return "p2p";
    case OpKind::kMemcpy: return "memcpy";
    case OpKind::kMemset: return "memset";
    case OpKind::kKernel: return "kernel";
    case OpKind::kGraph: return "graph";
    case OpKind::kHostSync: return "host_sync";
  }
  return "unknown";
}

namespace {

struct OperationInfo {
  Operation op;
  const char* name;
  OpKind kind;
};

constexpr OperationInfo kOperations[] = {
    {Operation::kGemmEx, "GemmEx", OpKind::kMatmul},
    {Operation::kSgemm, "Sgemm", OpKind::kMatmul},
    {Operation::kDgemm, "Dgemm", OpKind::kMatmul},
    {Operation::kHgemm, "Hgemm", OpKind::kMatmul},
    {Operation::kGemmStridedBatchedEx, "GemmStridedBatchedEx", OpKind::kMatmul},
    {Operation::kSgemmStridedBatched, "SgemmStridedBatched", OpKind::kMatmul},
    {Operation::kDgemmStridedBatched, "DgemmStridedBatched", OpKind::kMatmul},
    {Operation::kHgemmStridedBatched, "HgemmStridedBatched", OpKind::kMatmul},
    {Operation::kGemmBatchedEx, "GemmBatchedEx", OpKind::kMatmul},
    {Operation::kLtMatmul, "LtMatmul", OpKind::kMatmul},
    {Operation::kAllReduce, "AllReduce", OpKind::kCollective},
    {Operation::kAllGather, "AllGather", OpKind::kCollective},
    {Operation::kReduceScatter, "ReduceScatter", OpKind::kCollective},
    {Operation::kBroadcast, "Broadcast", OpKind::kCollective},
    {Operation::kReduce, "Reduce", OpKind::kCollective},
    {Operation::kAlltoAll, "AlltoAll", OpKind::kCollective},
    {Operation::kGather, "Gather", OpKind::kCollective},
    {Operation::kScatter, "Scatter", OpKind::kCollective},
    {Operation::kSend, "Send", OpKind::kP2P},
    {Operation::kRecv, "Recv", OpKind::kP2P},
    {Operation::kMemcpyHtoD, "MemcpyHtoD", OpKind::kMemcpy},
    {Operation::kMemcpyDtoH, "MemcpyDtoH", OpKind::kMemcpy},
    {Operation::kMemcpyDtoD, "MemcpyDtoD", OpKind::kMemcpy},
    {Operation::kMemcpyHtoH, "MemcpyHtoH", OpKind::kMemcpy},
    {Operation::kMemcpyDefault, "MemcpyDefault", OpKind::kMemcpy},
    {Operation::kMemset, "Memset", OpKind::kMemset},
    {Operation::kKernelLaunch, "KernelLaunch", OpKind::kKernel},
    {Operation::kGraphLaunch, "GraphLaunch", OpKind::kGraph},
    {Operation::kStreamSynchronize, "StreamSynchronize", OpKind::kHostSync},
    {Operation::kDeviceSynchronize, "DeviceSynchronize", OpKind::kHostSync},
    {Operation::kEventSynchronize, "EventSynchronize", OpKind::kHostSync},
};

// Every Operation value is below kOperationSlots (record.h): Find is one table load.
constexpr size_t kOperationCount = sizeof(kOperations) / sizeof(kOperations[0]);

struct OperationIndex {
  int8_t at[kOperationSlots];  // the index in kOperations of each value, -1 for none
};

constexpr bool AllOperationsBelowSlots() {
  for (const OperationInfo& info : kOperations) {
    if (static_cast<size_t>(info.op) >= kOperationSlots) return false;
  }
  return true;
}
static_assert(AllOperationsBelowSlots(), "raise kOperationSlots");
static_assert(kOperationCount < 128, "kOperations indexes must fit in int8_t");

constexpr OperationIndex MakeOperationIndex() {
  OperationIndex index{};
  for (int8_t& at : index.at) at = -1;
  for (size_t i = 0; i < kOperationCount; ++i) {
    index.at[static_cast<size_t>(kOperations[i].op)] = static_cast<int8_t>(i);
  }
  return index;
}
constexpr OperationIndex kOperationIndex = MakeOperationIndex();

const OperationInfo* Find(uint16_t op) {
  if (op >= kOperationSlots) return nullptr;
  const int8_t at = kOperationIndex.at[op];
  return at < 0 ? nullptr : &kOperations[at];
}

constexpr std::array<uint8_t, kOperationSlots> MakeKindOfOperation() {
  std::array<uint8_t, kOperationSlots> kinds{};
  for (const OperationInfo& info : kOperations) {
    kinds[static_cast<size_t>(info.op)] = static_cast<uint8_t>(info.kind);
  }
  return kinds;
}

}  // namespace

namespace internal {
constexpr std::array<uint8_t, kOperationSlots> kKindOfOperation = MakeKindOfOperation();
}  // namespace internal

const char* OperationName(Operation o) {
  const OperationInfo* info = Find(static_cast<uint16_t>(o));
  return info != nullptr ? info->name : "Unknown";
}

const char* DTypeName(DType d) {
  switch (d) {
    case DType::kUnknown: return "unknown";
    case DType::kF64: return "fp64";
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kF8E4M3: return "fp8_e4m3";
    case DType::kF8E5M2: return "fp8_e5m2";
    case DType::kI8: return "int8";
    case DType::kU8: return "uint8";
    case DType::kI32: return "int32";
    case DType::kU32: return "uint32";
    case DType::kI64: return "int64";
    case DType::kU64: return "uint64";
    case DType::kTF32: return "tf32";
  }
  return "unknown";
}

Operation OperationFromName(const char* name) {
  for (const OperationInfo& info : kOperations) {
    if (std::strcmp(info.name, name) == 0) return info.op;
  }
  return Operation::kUnknown;
}

DType DTypeFromName(const char* name) {
  for (uint8_t d = 1; d <= kDTypeMax; ++d) {
    if (std::strcmp(DTypeName(static_cast<DType>(d)), name) == 0) return static_cast<DType>(d);
  }
  return DType::kUnknown;
}

}  // namespace format
}  // namespace xtimer
