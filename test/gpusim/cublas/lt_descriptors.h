// cuBLASLt descriptors: the matmul descriptor, matrix layouts and heuristic preferences.
//
// Each descriptor is a plain struct that fits in the opaque storage the header declares
// (cublasLtMatmulDescOpaque_t and friends), because cublasLt*Init_internal builds it in caller
// memory; *Create allocates it on the heap and registers it. A magic tag in the first bytes
// identifies the kind; the registry rejects heap descriptors after *Destroy without reading them.
//
// Attributes are described by one table per kind (attribute id -> field offset and size), so
// get/set follow a single rule set, the documented one:
//   Set: unknown attribute, null buf or sizeInBytes != the attribute's size -> INVALID_VALUE.
//   Get: unknown attribute -> INVALID_VALUE; sizeInBytes == 0 -> *sizeWritten = the attribute's
//        size (INVALID_VALUE when sizeWritten is null); otherwise null buf or a size that does not
//        match -> INVALID_VALUE, else the value is copied and *sizeWritten (if given) set.
// Values are checked when a matmul or heuristic query uses them, not when they are set.
#ifndef XTIMER_TEST_GPUSIM_CUBLAS_LT_DESCRIPTORS_H_
#define XTIMER_TEST_GPUSIM_CUBLAS_LT_DESCRIPTORS_H_

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <new>

#include "test/gpusim/cublas/object_registry.h"

namespace xtsim {
namespace blas {

inline constexpr uint32_t kDeadDescriptor = 0xdeadd35c;

struct MatmulDesc {
  static constexpr uint32_t kMagic = 0x584c4d44;  // "XLMD"
  uint32_t magic = kMagic;
  int32_t compute_type = CUBLAS_COMPUTE_32F;
  int32_t scale_type = CUDA_R_32F;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transa = CUBLAS_OP_N;
  int32_t transb = CUBLAS_OP_N;
  int32_t transc = CUBLAS_OP_N;
  int32_t fill_mode = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  int32_t sm_count_target = 0;
  int32_t epilogue_aux_data_type = -1;
  int32_t bias_data_type = -1;
  int32_t a_scale_mode = 0;
  int32_t b_scale_mode = 0;
  int32_t c_scale_mode = 0;
  int32_t d_scale_mode = 0;
  int32_t epilogue_aux_scale_mode = 0;
  int32_t d_out_scale_mode = 0;
  int8_t fast_accum = 0;
  const void* bias_pointer = nullptr;
  int64_t bias_batch_stride = 0;
  void* epilogue_aux_pointer = nullptr;
  int64_t epilogue_aux_ld = 0;
  int64_t epilogue_aux_batch_stride = 0;
  int64_t alpha_vector_batch_stride = 0;
  const void* a_scale_pointer = nullptr;
  const void* b_scale_pointer = nullptr;
  const void* c_scale_pointer = nullptr;
  const void* d_scale_pointer = nullptr;
  void* amax_d_pointer = nullptr;
  void* epilogue_aux_scale_pointer = nullptr;
  void* epilogue_aux_amax_pointer = nullptr;
  void* d_out_scale_pointer = nullptr;
  cublasLtEmulationDesc_t emulation_descriptor = nullptr;
};

struct MatrixLayout {
  static constexpr uint32_t kMagic = 0x584c4d4c;  // "XLML"
  uint32_t magic = kMagic;
  uint32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  int32_t batch_count = 1;
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;
  int64_t strided_batch_offset = 0;
  int64_t plane_offset = 0;
  uint32_t batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
};

struct MatmulPreference {
  static constexpr uint32_t kMagic = 0x584c4d50;  // "XLMP"
  uint32_t magic = kMagic;
  uint32_t search_mode = CUBLASLT_SEARCH_BEST_FIT;
  uint64_t max_workspace_bytes = 0;
  uint32_t reduction_scheme_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  uint32_t min_alignment_a_bytes = 256;
  uint32_t min_alignment_b_bytes = 256;
  uint32_t min_alignment_c_bytes = 256;
  uint32_t min_alignment_d_bytes = 256;
  float max_waves_count = 0;
  uint64_t impl_mask = ~uint64_t{0};
};

// The opaque storage each descriptor lives in (the *Init variants use the caller's).
template <typename D>
struct OpaqueOf;
template <>
struct OpaqueOf<MatmulDesc> {
  using type = cublasLtMatmulDescOpaque_t;
};
template <>
struct OpaqueOf<MatrixLayout> {
  using type = cublasLtMatrixLayoutOpaque_t;
};
template <>
struct OpaqueOf<MatmulPreference> {
  using type = cublasLtMatmulPreferenceOpaque_t;
};

static_assert(sizeof(MatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t), "MatmulDesc too big");
static_assert(sizeof(MatrixLayout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "MatrixLayout too big");
static_assert(sizeof(MatmulPreference) <= sizeof(cublasLtMatmulPreferenceOpaque_t),
              "MatmulPreference too big");
static_assert(alignof(MatmulDesc) <= alignof(cublasLtMatmulDescOpaque_t) &&
                  alignof(MatrixLayout) <= alignof(cublasLtMatrixLayoutOpaque_t) &&
                  alignof(MatmulPreference) <= alignof(cublasLtMatmulPreferenceOpaque_t),
              "descriptor alignment exceeds the opaque storage's");

// One attribute: where it lives in its descriptor and how many bytes it has.
struct AttrField {
  int attr;
  size_t offset;
  size_t size;
};

struct AttrTable {
  const AttrField* fields;
  size_t count;
};

AttrTable MatmulDescAttrs();
AttrTable MatrixLayoutAttrs();
AttrTable MatmulPreferenceAttrs();

cublasStatus_t SetAttribute(void* desc, AttrTable table, int attr, const void* buf,
                            size_t size_in_bytes);
cublasStatus_t GetAttribute(const void* desc, AttrTable table, int attr, void* buf,
                            size_t size_in_bytes, size_t* size_written);

// ---- Lifetime, shared by the three kinds ----

template <typename D>
ObjectRegistry& Registry() {
  static ObjectRegistry* registry = new ObjectRegistry;
  return *registry;
}

// The descriptor behind a user pointer, or nullptr for null, destroyed or foreign pointers.
template <typename D>
D* Resolve(const typename OpaqueOf<D>::type* p) {
  if (p == nullptr) return nullptr;
  // A heap descriptor destroyed recently is recognised without reading its freed memory.
  if (!Registry<D>().Contains(p) && Registry<D>().RecentlyRemoved(p)) return nullptr;
  D* d = reinterpret_cast<D*>(const_cast<typename OpaqueOf<D>::type*>(p));
  return d->magic == D::kMagic ? d : nullptr;
}

template <typename D>
cublasStatus_t CreateDescriptor(typename OpaqueOf<D>::type** out, const D& value) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  D* d = new (std::nothrow) D(value);
  if (d == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  Registry<D>().Add(d);
  *out = reinterpret_cast<typename OpaqueOf<D>::type*>(d);
  return CUBLAS_STATUS_SUCCESS;
}

// *Init_internal: builds the descriptor in caller storage of `size` bytes.
template <typename D>
cublasStatus_t InitDescriptor(typename OpaqueOf<D>::type* storage, size_t size, const D& value) {
  if (storage == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(D)) return CUBLAS_STATUS_ALLOC_FAILED;
  Registry<D>().ForgetRemoved(storage);
  new (storage) D(value);
  return CUBLAS_STATUS_SUCCESS;
}

// Null is a no-op. A descriptor built by *Init in caller storage is only marked dead.
template <typename D>
cublasStatus_t DestroyDescriptor(typename OpaqueOf<D>::type* p) {
  if (p == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (Registry<D>().Remove(p)) {
    D* d = reinterpret_cast<D*>(p);
    d->magic = kDeadDescriptor;
    delete d;
    return CUBLAS_STATUS_SUCCESS;
  }
  D* d = Resolve<D>(p);
  if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  d->magic = kDeadDescriptor;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace blas
}  // namespace xtsim

#endif  // XTIMER_TEST_GPUSIM_CUBLAS_LT_DESCRIPTORS_H_
