#include "test/gpusim/cublas/lt_descriptors.h"

#include <cstring>

namespace xtsim {
namespace blas {
namespace {

#define XTSIM_FIELD(ATTR, TYPE, MEMBER) \
  AttrField { ATTR, offsetof(TYPE, MEMBER), sizeof(TYPE::MEMBER) }

// Sizes follow the types cublasLt.h documents for each attribute.
const AttrField kMatmulDescFields[] = {
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, MatmulDesc, compute_type),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_SCALE_TYPE, MatmulDesc, scale_type),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_POINTER_MODE, MatmulDesc, pointer_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_TRANSA, MatmulDesc, transa),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_TRANSB, MatmulDesc, transb),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_TRANSC, MatmulDesc, transc),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_FILL_MODE, MatmulDesc, fill_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE, MatmulDesc, epilogue),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_BIAS_POINTER, MatmulDesc, bias_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, MatmulDesc, bias_batch_stride),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, MatmulDesc, epilogue_aux_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, MatmulDesc, epilogue_aux_ld),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, MatmulDesc,
                epilogue_aux_batch_stride),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, MatmulDesc,
                alpha_vector_batch_stride),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, MatmulDesc, sm_count_target),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, MatmulDesc, a_scale_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, MatmulDesc, b_scale_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, MatmulDesc, c_scale_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, MatmulDesc, d_scale_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, MatmulDesc, amax_d_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, MatmulDesc, epilogue_aux_data_type),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, MatmulDesc,
                epilogue_aux_scale_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, MatmulDesc,
                epilogue_aux_amax_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_FAST_ACCUM, MatmulDesc, fast_accum),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, MatmulDesc, bias_data_type),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, MatmulDesc, a_scale_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, MatmulDesc, b_scale_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, MatmulDesc, c_scale_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, MatmulDesc, d_scale_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, MatmulDesc, epilogue_aux_scale_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, MatmulDesc, d_out_scale_pointer),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, MatmulDesc, d_out_scale_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, MatmulDesc, emulation_descriptor),
};

const AttrField kMatrixLayoutFields[] = {
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_TYPE, MatrixLayout, type),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_ORDER, MatrixLayout, order),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_ROWS, MatrixLayout, rows),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_COLS, MatrixLayout, cols),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_LD, MatrixLayout, ld),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, MatrixLayout, batch_count),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, MatrixLayout, strided_batch_offset),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, MatrixLayout, plane_offset),
    XTSIM_FIELD(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, MatrixLayout, batch_mode),
};

const AttrField kMatmulPreferenceFields[] = {
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_SEARCH_MODE, MatmulPreference, search_mode),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, MatmulPreference, max_workspace_bytes),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, MatmulPreference,
                reduction_scheme_mask),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, MatmulPreference,
                min_alignment_a_bytes),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, MatmulPreference,
                min_alignment_b_bytes),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, MatmulPreference,
                min_alignment_c_bytes),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, MatmulPreference,
                min_alignment_d_bytes),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, MatmulPreference, max_waves_count),
    XTSIM_FIELD(CUBLASLT_MATMUL_PREF_IMPL_MASK, MatmulPreference, impl_mask),
};

#undef XTSIM_FIELD

const AttrField* Find(AttrTable table, int attr) {
  for (size_t i = 0; i < table.count; ++i) {
    if (table.fields[i].attr == attr) return &table.fields[i];
  }
  return nullptr;
}

template <size_t N>
AttrTable TableOf(const AttrField (&fields)[N]) {
  return AttrTable{fields, N};
}

}  // namespace

AttrTable MatmulDescAttrs() { return TableOf(kMatmulDescFields); }
AttrTable MatrixLayoutAttrs() { return TableOf(kMatrixLayoutFields); }
AttrTable MatmulPreferenceAttrs() { return TableOf(kMatmulPreferenceFields); }

cublasStatus_t SetAttribute(void* desc, AttrTable table, int attr, const void* buf,
                            size_t size_in_bytes) {
  const AttrField* field = Find(table, attr);
  if (field == nullptr || buf == nullptr || size_in_bytes != field->size) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  memcpy(static_cast<char*>(desc) + field->offset, buf, field->size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t GetAttribute(const void* desc, AttrTable table, int attr, void* buf,
                            size_t size_in_bytes, size_t* size_written) {
  const AttrField* field = Find(table, attr);
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size_in_bytes == 0) {
    if (size_written == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *size_written = field->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size_in_bytes != field->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, static_cast<const char*>(desc) + field->offset, field->size);
  if (size_written != nullptr) *size_written = field->size;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace blas
}  // namespace xtsim
