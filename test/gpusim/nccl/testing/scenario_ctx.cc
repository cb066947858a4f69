#include "test/gpusim/nccl/testing/scenario_ctx.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <functional>
#include <mutex>

namespace xtsim {
namespace nccl {
namespace testing {
namespace {

std::mutex g_progress_mu;
std::function<void(int, const std::string&)>* g_progress = nullptr;

}  // namespace

size_t ElemSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

bool IsInteger(ncclDataType_t t) { return t <= ncclUint64; }

double Get(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8:
      return static_cast<const int8_t*>(p)[i];
    case ncclUint8:
      return static_cast<const uint8_t*>(p)[i];
    case ncclInt32:
      return static_cast<const int32_t*>(p)[i];
    case ncclUint32:
      return static_cast<const uint32_t*>(p)[i];
    case ncclInt64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case ncclUint64:
      return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case ncclFloat16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case ncclFloat32:
      return static_cast<const float*>(p)[i];
    case ncclFloat64:
      return static_cast<const double*>(p)[i];
    case ncclBfloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case ncclFloat8e4m3:
      return __half2float(
          __half(__nv_cvt_fp8_to_halfraw(static_cast<const uint8_t*>(p)[i], __NV_E4M3)));
    case ncclFloat8e5m2:
      return __half2float(
          __half(__nv_cvt_fp8_to_halfraw(static_cast<const uint8_t*>(p)[i], __NV_E5M2)));
    default:
      return NAN;
  }
}

void Set(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case ncclUint8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case ncclInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case ncclUint32:
      static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      break;
    case ncclInt64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case ncclUint64:
      static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      break;
    case ncclFloat16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      break;
    case ncclFloat32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case ncclFloat64:
      static_cast<double*>(p)[i] = v;
      break;
    case ncclBfloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case ncclFloat8e4m3:
      static_cast<uint8_t*>(p)[i] =
          __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE, __NV_E4M3);
      break;
    case ncclFloat8e5m2:
      static_cast<uint8_t*>(p)[i] =
          __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE, __NV_E5M2);
      break;
    default:
      break;
  }
}

double Tolerance(ncclDataType_t t) {
  switch (t) {
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 0.15;
    case ncclBfloat16:
      return 1e-2;
    case ncclFloat16:
      return 2e-3;
    case ncclFloat32:
      return 1e-5;
    case ncclFloat64:
      return 1e-12;
    default:
      return 0;
  }
}

double Input(int r, size_t k, ncclDataType_t t) {
  if (t == ncclFloat8e4m3 || t == ncclFloat8e5m2) {
    return static_cast<double>((static_cast<size_t>(r) + k) % 2);
  }
  return static_cast<double>((static_cast<size_t>(r) * 7 + k * 3) % 5 + 1);
}

// Fills `count` elements with rank r's inputs starting at input index `first`.
void FillInputs(void* p, ncclDataType_t t, int r, size_t count, size_t first) {
  for (size_t i = 0; i < count; ++i) Set(t, p, i, Input(r, first + i, t));
}

void Ctx::Progress(const std::string& step) {
  std::lock_guard<std::mutex> lock(g_progress_mu);
  if (g_progress != nullptr) (*g_progress)(rank, step);
}

void SetProgressCallback(std::function<void(int, const std::string&)> callback) {
  std::lock_guard<std::mutex> lock(g_progress_mu);
  delete g_progress;
  g_progress =
      callback ? new std::function<void(int, const std::string&)>(std::move(callback)) : nullptr;
}

}  // namespace testing
}  // namespace nccl
}  // namespace xtsim
