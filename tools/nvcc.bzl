"""nvcc_binary: builds a CUDA program with the machine's nvcc, the way users build theirs.

The program links the REAL CUDA libraries in /usr/local/cuda/lib64 (cudart as a shared library,
`-cudart shared`, so that preloaded hooks and the simulator see its calls) and carries no rpath:
at run time LD_LIBRARY_PATH decides whether the real libraries or test/gpusim's stand-ins load.
"""

def nvcc_binary(name, srcs, hdrs = [], libs = [], nvcc_opts = [], **kwargs):
    """srcs: .cu/.cc files; libs: extra -l names (cublas, cublasLt, nccl)."""
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
        name = name + "_nvcc",
        srcs = srcs + hdrs,
        outs = [name],
        cmd = cmd,
        executable = True,
        local = True,  # nvcc and the CUDA toolkit live outside the workspace
        **kwargs
    )

def nvcc_shared_library(name, srcs, hdrs = [], libs = [], nvcc_opts = [], **kwargs):
    """A shared library built by nvcc (`-shared`, position-independent), as users build CUDA
    extension modules: DT_NEEDED on libcudart.so (and the `libs`), no rpath. `name` is the file
    name (for example "libmodule.so")."""
    cmd = " ".join([
        "/usr/local/cuda/bin/nvcc",
        "-shared -Xcompiler -fPIC",
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
        name = name + "_nvcc",
        srcs = srcs + hdrs,
        outs = [name],
        cmd = cmd,
        local = True,
        **kwargs
    )
