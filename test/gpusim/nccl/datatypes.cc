#include "test/gpusim/nccl/datatypes.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace xtsim {
namespace nccl {
namespace {

// fp8 values are stored as raw bytes; distinct types select the format.
struct Fp8E4M3 {
  __nv_fp8_storage_t bits;
};
struct Fp8E5M2 {
  __nv_fp8_storage_t bits;
};

// How a stored element becomes a value we can compute with, and back. The conversions are the
// CUDA headers' own host implementations, so rounding matches the device.
template <typename T>
struct Traits {
  using Compute = T;
  static Compute Load(T x) { return x; }
  static T Store(Compute x) { return x; }
};
template <>
struct Traits<__half> {
  using Compute = float;
  static float Load(__half x) { return __half2float(x); }
  static __half Store(float x) { return __float2half_rn(x); }
};
template <>
struct Traits<__nv_bfloat16> {
  using Compute = float;
  static float Load(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __nv_bfloat16 Store(float x) { return __float2bfloat16_rn(x); }
};
template <>
struct Traits<Fp8E4M3> {
  using Compute = float;
  static float Load(Fp8E4M3 x) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.bits, __NV_E4M3)));
  }
  // e4m3 has no infinity: saturate to the largest finite value, as the GPU's satfinite does.
  static Fp8E4M3 Store(float x) { return {__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)}; }
};
template <>
struct Traits<Fp8E5M2> {
  using Compute = float;
  static float Load(Fp8E5M2 x) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(x.bits, __NV_E5M2)));
  }
  // e5m2 is IEEE-like: overflow becomes infinity.
  static Fp8E5M2 Store(float x) { return {__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)}; }
};

// The operators, as types so that each loop below is compiled (and inlined) per operator. Integer
// arithmetic goes through the unsigned type of the same width so that overflow wraps instead of
// being undefined behaviour.
struct AddOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};
struct MulOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return std::fmax(a, b);
    else
      return std::max(a, b);
  }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return std::fmin(a, b);
    else
      return std::min(a, b);
  }
};

template <typename T, typename F>
void Combine(T* out, const T* in, size_t count, F f) {
  using Tr = Traits<T>;
  for (size_t i = 0; i < count; ++i) out[i] = Tr::Store(f(Tr::Load(out[i]), Tr::Load(in[i])));
}

template <typename T>
void Reduce(void* dst, const void* const* srcs, int nsrcs, size_t count, ncclRedOp_t op) {
  T* out = static_cast<T*>(dst);
  if (nsrcs <= 0) return;
  std::memcpy(out, srcs[0], count * sizeof(T));
  for (int k = 1; k < nsrcs; ++k) {
    const T* in = static_cast<const T*>(srcs[k]);
    switch (op) {
      case ncclProd:
        Combine(out, in, count, MulOp());
        break;
      case ncclMax:
        Combine(out, in, count, MaxOp());
        break;
      case ncclMin:
        Combine(out, in, count, MinOp());
        break;
      default:
        Combine(out, in, count, AddOp());
        break;
    }
  }
}

template <typename T>
void Scale(void* dst, const void* src, size_t count, const void* scalar) {
  using Tr = Traits<T>;
  T s;
  std::memcpy(&s, scalar, sizeof(T));
  const auto factor = Tr::Load(s);
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) out[i] = Tr::Store(MulOp()(Tr::Load(in[i]), factor));
}

template <typename T>
void Divide(void* dst, size_t count, int divisor) {
  using Tr = Traits<T>;
  using C = typename Tr::Compute;
  T* out = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) {
    C v = Tr::Load(out[i]);
    if constexpr (std::is_integral_v<C>) {
      // Divide in 64 bits: nranks need not fit in the element type.
      using W = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
      out[i] = static_cast<T>(static_cast<W>(v) / static_cast<W>(divisor));
    } else {
      out[i] = Tr::Store(v / static_cast<C>(divisor));
    }
  }
}

template <typename T>
void Reciprocal(void* out, int n) {
  using Tr = Traits<T>;
  using C = typename Tr::Compute;
  T r = Tr::Store(static_cast<C>(1.0 / n));
  std::memcpy(out, &r, sizeof(T));
}

template <typename T>
constexpr TypeKernels MakeKernels(const char* name) {
  static_assert(sizeof(T) <= kMaxElementSize, "element too large for a PreMulSum scalar");
  return {sizeof(T), name, !std::is_integral_v<T>, Scale<T>, Reduce<T>, Divide<T>, Reciprocal<T>};
}

// Indexed by ncclDataType_t.
const TypeKernels kKernels[ncclNumTypes] = {
    MakeKernels<int8_t>("int8"),        MakeKernels<uint8_t>("uint8"),
    MakeKernels<int32_t>("int32"),      MakeKernels<uint32_t>("uint32"),
    MakeKernels<int64_t>("int64"),      MakeKernels<uint64_t>("uint64"),
    MakeKernels<__half>("float16"),     MakeKernels<float>("float32"),
    MakeKernels<double>("float64"),     MakeKernels<__nv_bfloat16>("bfloat16"),
    MakeKernels<Fp8E4M3>("float8e4m3"), MakeKernels<Fp8E5M2>("float8e5m2"),
};
static_assert(ncclNumTypes == 12, "a datatype was added to nccl.h: extend kKernels");

}  // namespace

const TypeKernels* KernelsFor(ncclDataType_t type) {
  int index = static_cast<int>(type);
  if (index < 0 || index >= ncclNumTypes) return nullptr;
  return &kKernels[index];
}

const char* RedOpName(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "ncclSum";
    case ncclProd:
      return "ncclProd";
    case ncclMax:
      return "ncclMax";
    case ncclMin:
      return "ncclMin";
    case ncclAvg:
      return "ncclAvg";
    default:
      return "PreMulSum";
  }
}

}  // namespace nccl
}  // namespace xtsim
