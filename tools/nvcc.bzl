"""nvcc_binary, nvcc_shared_library: build CUDA code with the machine's nvcc, the way users do.

The outputs link the REAL CUDA libraries in /usr/local/cuda/lib64 (cudart as a shared library,
`-cudart shared`, so that preloaded hooks and the simulator see its calls) and carry no rpath:
at run time LD_LIBRARY_PATH decides whether the real libraries or test/gpusim's stand-ins load.
"""

def _nvcc(name, out, srcs, hdrs, libs, nvcc_opts, executable, **kwargs):
    cmd = " ".join([
        "/usr/local/cuda/bin/nvcc",
        "-cudart shared",
        "-std=c++17 -O2 -g -I.",
        "-Xcompiler -Wall",
        " ".join(nvcc_opts),
        "-o $@",
        " ".join(["$(location %s)" % s for s in srcs]),
        "-L/usr/local/cuda/lib64",
        " ".join(["-l" + l for l in libs]),
    ])
    native.genrule(
        name = name,
        srcs = srcs + hdrs,
        outs = [out],
        cmd = cmd,
        executable = executable,
        local = True,  # nvcc and the CUDA toolkit live outside the workspace
        **kwargs
    )

def nvcc_binary(name, srcs, hdrs = [], libs = [], nvcc_opts = [], **kwargs):
    """srcs: .cu/.cc files; libs: extra -l names (cublas, cublasLt, nccl)."""
    _nvcc(name + "_nvcc", name, srcs, hdrs, libs, nvcc_opts, True, **kwargs)

def nvcc_shared_library(name, srcs, hdrs = [], libs = [], nvcc_opts = [], **kwargs):
    """A shared library `name` (the file name, e.g. "libmodule.so") that programs load with
    dlopen, as Python's ctypes and CUDA extension modules are: `-shared`, position-independent,
    DT_NEEDED on libcudart.so.13 and on the libraries in libs, no rpath."""
    _nvcc(name + "_nvcc", name, srcs, hdrs, libs, ["-shared", "-Xcompiler -fPIC"] + nvcc_opts,
          False, **kwargs)
