// pydemo_ext: a real CPython extension module (PyInit_pydemo_ext), built against
// /usr/include/python3.11 and so only for CPython 3.11, that pydemo.py --ext imports with
// importlib: CPython dlopens it with sys.getdlopenflags() (RTLD_NOW, local scope), and its
// DT_NEEDED libcudart.so.13 lands in that local scope too.
//
// pydemo_ext.roundtrip(data) copies the bytes to the device, device-to-device into a second
// buffer and back, and returns them: the step's results travel through this module's memory.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cuda_runtime.h>

namespace {

PyObject* CudaError(const char* call, cudaError_t err) {
  PyErr_Format(PyExc_RuntimeError, "pydemo_ext: %s failed: %s (%s = %d)", call,
               cudaGetErrorString(err), cudaGetErrorName(err), static_cast<int>(err));
  return nullptr;
}

// Runs the copies; on failure names the call. dev[0], dev[1]: device buffers of n bytes.
const char* Copies(const char* in, char* out, size_t n, void* dev[2], cudaError_t* err) {
  if ((*err = cudaMemcpy(dev[0], in, n, cudaMemcpyHostToDevice)) != cudaSuccess) {
    return "cudaMemcpy(HostToDevice)";
  }
  if ((*err = cudaMemcpy(dev[1], dev[0], n, cudaMemcpyDeviceToDevice)) != cudaSuccess) {
    return "cudaMemcpy(DeviceToDevice)";
  }
  if ((*err = cudaMemcpy(out, dev[1], n, cudaMemcpyDeviceToHost)) != cudaSuccess) {
    return "cudaMemcpy(DeviceToHost)";
  }
  return nullptr;
}

PyObject* Roundtrip(PyObject*, PyObject* args) {
  Py_buffer in;
  if (!PyArg_ParseTuple(args, "y*", &in)) return nullptr;
  const size_t n = static_cast<size_t>(in.len > 0 ? in.len : 1);
  PyObject* result = PyBytes_FromStringAndSize(nullptr, in.len);
  void* dev[2] = {nullptr, nullptr};
  cudaError_t err = cudaSuccess;
  const char* failed = nullptr;
  if (result != nullptr) {
    if ((err = cudaMalloc(&dev[0], n)) != cudaSuccess) {
      failed = "cudaMalloc";
    } else if ((err = cudaMalloc(&dev[1], n)) != cudaSuccess) {
      failed = "cudaMalloc";
    } else if (in.len > 0) {
      failed = Copies(static_cast<const char*>(in.buf), PyBytes_AS_STRING(result), n, dev, &err);
    }
  }
  for (void* p : dev) {
    if (p != nullptr) cudaFree(p);
  }
  PyBuffer_Release(&in);
  if (failed != nullptr) {
    Py_DECREF(result);
    return CudaError(failed, err);
  }
  return result;
}

PyMethodDef kMethods[] = {
    {"roundtrip", Roundtrip, METH_VARARGS,
     "roundtrip(data) -> bytes: data copied to the device, device to device, and back."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "pydemo_ext",
    "CUDA through a CPython extension module imported with importlib (demo/python).", -1,
    kMethods,
};

}  // namespace

PyMODINIT_FUNC PyInit_pydemo_ext() { return PyModule_Create(&kModule); }
