#include "daemon/model/blocked_by.h"

#include <cinttypes>
#include <cstdio>

#include "format/record.h"

namespace xtimer {
namespace daemon {

std::string DescribeBlocker(const format::InflightBlocker& b, const std::string& kernel_name,
                            int64_t now_ns) {
  if (b.op == 0) return "";
  using format::OpKind;
  const auto kind = static_cast<OpKind>(b.kind);
  const char* op = format::OperationName(static_cast<format::Operation>(b.op));
  char what[256];
  switch (kind) {
    case OpKind::kKernel:
      if (kernel_name.empty()) {
        snprintf(what, sizeof(what), "kernel #%" PRIu32, b.name_id);
      } else {
        snprintf(what, sizeof(what), "kernel %.200s", kernel_name.c_str());
      }
      break;
    case OpKind::kMatmul:
      snprintf(what, sizeof(what), "%s m=%" PRId64 " n=%" PRId64 " k=%" PRId64, op, b.m, b.n,
               b.k);
      break;
    case OpKind::kMemcpy:
    case OpKind::kMemset:
      snprintf(what, sizeof(what), "%s of %" PRIu64 " bytes", op, b.bytes);
      break;
    case OpKind::kCollective:
    case OpKind::kP2P: {
      char comm[format::kCommIdTextSize];
      format::CommIdText(b.comm_id, comm);
      if (kind == OpKind::kCollective) {
        snprintf(what, sizeof(what), "%s seq %" PRIu64 " on comm %s", op, b.seq, comm);
      } else {
        snprintf(what, sizeof(what), "%s on comm %s", op, comm);
      }
      break;
    }
    default:
      snprintf(what, sizeof(what), "%s", op);
  }
  const double age_s =
      b.launch_ns > 0 && now_ns > b.launch_ns ? static_cast<double>(now_ns - b.launch_ns) * 1e-9 : 0;
  char out[320];
  snprintf(out, sizeof(out), "%s launched %.1f s ago", what, age_s);
  return out;
}

}  // namespace daemon
}  // namespace xtimer
