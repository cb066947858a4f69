"""Workloads of the real-GPU check (tools/gpu_check/gpu_check.py), one per subcommand.

Each runs on a real NVIDIA GPU, under xtimer or not, and prints its own measurements as the last
line of stdout: `RESULT {json}`. They use only what the frameworks offer (PyTorch, CuPy, JAX); the
check compares their figures with what xtimer recorded.

Usage: python3 workloads.py SUBCOMMAND [ARGS]
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time


def result(**fields):
    print("RESULT " + json.dumps(fields), flush=True)


def gemm():
    """An 8192^3 bf16 matmul, 3 warm-ups then 10 timed by torch.cuda.Event each."""
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e6)  # ns
    copy_src = torch.empty(1 << 29, device="cuda", dtype=torch.int16)  # 1 GiB
    copy_dst = torch.empty_like(copy_src)
    copy_times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        copy_dst.copy_(copy_src)
        end.record()
        end.synchronize()
        copy_times.append(start.elapsed_time(end) * 1e6)
    result(gemm_ns=statistics.median(times), copy_ns=statistics.median(copy_times[1:]))


def train(steps, port="0", ranks="1", rank="0"):
    """A host-bound loop, issue 35's: 32 bf16 Linear(256) layers, batch 32, every gradient
    all-reduced (NCCL, the TCP store on 127.0.0.1:`port`), SGD; rank 0's median step time. With
    `ranks` > 1 (one GPU each) rank 0 starts ranks 1.. as processes of this script, each named
    by RANK / WORLD_SIZE / LOCAL_RANK before any CUDA call (the hook reads them at its first).
    hook/bench/host_bound_step.cu is its shape on the simulator."""
    ranks, rank = int(ranks), int(rank)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks))
    children = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "train", str(steps),
                                  str(port), str(ranks), str(r)]) for r in range(1, ranks)
                if rank == 0]
    import torch
    import torch.distributed as dist
    torch.manual_seed(0)
    device = torch.device("cuda:%d" % rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%s" % port, rank=rank,
                            world_size=ranks, device_id=device)
    layers = [torch.nn.Linear(256, 256, device=device, dtype=torch.bfloat16) for _ in range(32)]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(32, 256, device=device, dtype=torch.bfloat16)
    step_ns = []
    for i in range(int(steps)):
        t0 = time.perf_counter_ns()
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        torch.cuda.synchronize(device)
        if i >= 20:
            step_ns.append(time.perf_counter_ns() - t0)
    dist.destroy_process_group()
    if any(c.wait() != 0 for c in children):
        sys.exit("train: a rank failed")
    if rank == 0:
        result(step_ns=statistics.median(step_ns))


def compiled():
    """A torch.compile'd function: its fused kernels are Triton kernels launched through the
    driver API."""
    import torch

    @torch.compile
    def fused(x, y):
        return torch.nn.functional.gelu(x * y + 1.0).sum(dim=-1)

    x = torch.randn(4096, 4096, device="cuda")
    y = torch.randn(4096, 4096, device="cuda")
    for _ in range(20):
        fused(x, y)
    torch.cuda.synchronize()
    result(calls=20)


def graphs(mode):
    """torch.cuda.graph capture (capture_error_mode=mode) of matmuls and an all-reduce while a
    background thread keeps kernels running on its own stream; then 20 replays."""
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    collective = True
    try:
        dist.init_process_group("nccl", rank=0, world_size=1)
    except Exception as e:  # the capture is still checked without the collective
        collective = False
        print("no process group: %s" % e, file=sys.stderr)
    a = torch.randn(2048, 2048, device="cuda")
    stop = threading.Event()

    def background():
        s = torch.cuda.Stream()
        z = torch.randn(1024, 1024, device="cuda")
        with torch.cuda.stream(s):
            while not stop.is_set():
                z = z @ z
                z = z / z.norm()
    worker = threading.Thread(target=background)
    worker.start()
    time.sleep(0.2)
    static_out = None
    error = ""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture, as PyTorch recommends
        for _ in range(3):
            b = a @ a
            if collective:
                dist.all_reduce(b)
    torch.cuda.current_stream().wait_stream(s)
    try:
        with torch.cuda.graph(g, capture_error_mode=mode):
            static_out = a @ a
            static_out = static_out @ a
            if collective:
                dist.all_reduce(static_out)
        for _ in range(20):
            g.replay()
        torch.cuda.synchronize()
    except Exception as e:
        error = str(e).splitlines()[0] if str(e) else type(e).__name__
    stop.set()
    worker.join()
    torch.cuda.synchronize()
    if collective:
        dist.destroy_process_group()
    result(ok=not error, error=error, collective=collective)


def cupy_mm():
    import cupy
    a = cupy.random.random((4096, 4096), dtype=cupy.float32)
    b = cupy.random.random((4096, 4096), dtype=cupy.float32)
    for _ in range(5):
        c = a @ b
    cupy.cuda.runtime.deviceSynchronize()
    result(sum=float(c[0, 0]))


def jax_mm():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp
    a = jnp.ones((4096, 4096), dtype=jnp.bfloat16)
    for _ in range(5):
        a = jnp.dot(a, a) / 4096.0
    a.block_until_ready()
    result(value=float(a[0, 0]), platform=jax.devices()[0].platform)


def crash_here():
    import ctypes
    ctypes.string_at(0)  # SIGSEGV inside a ctypes call


def crash():
    import torch
    torch.ones(1, device="cuda").sum().item()  # the process uses the GPU (and so the hook)
    print("crashing now", flush=True)
    crash_here()


def wait_here(seconds):
    time.sleep(seconds)


def stacks():
    """Does GPU work, says so, then waits in wait_here() until the check has its stacks."""
    import torch
    (torch.ones(1024, device="cuda") * 2).sum().item()
    print("READY", flush=True)
    wait_here(float(os.environ.get("GPU_CHECK_WAIT_S", "60")))
    result(waited=True)


def mapped_library(stem):
    """The path of the first mapped object whose name starts with `stem` (e.g. libcudart.so)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith(stem):
                return path
    return None


def per_call_ns(fn, n=100000):
    """Host time of one call of fn(), the cost of an empty ctypes call removed."""
    import ctypes
    libc = ctypes.CDLL(None)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        libc.getpid()
    empty = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return max(0.0, (time.perf_counter_ns() - t0 - empty) / n)


def calls():
    """What the CUDA calls a per-op timer makes cost on the calling thread (docs/gpu-check.md):
    the real libcudart and libcuda that PyTorch loaded, through ctypes, 100k calls each."""
    import ctypes
    import torch
    torch.ones(1, device="cuda").sum().item()
    rt = ctypes.CDLL(mapped_library("libcudart.so"))
    drv = ctypes.CDLL(mapped_library("libcuda.so"))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    timing, untimed = ctypes.c_void_p(), ctypes.c_void_p()
    rt.cudaEventCreateWithFlags(ctypes.byref(timing), 0)
    rt.cudaEventCreateWithFlags(ctypes.byref(untimed), 2)  # cudaEventDisableTiming
    status = ctypes.c_int()
    ms = ctypes.c_float()
    host = ctypes.c_void_p()
    rt.cudaHostAlloc(ctypes.byref(host), 64, 0)
    dev_ptr = ctypes.c_uint64()
    rt.cudaHostGetDevicePointer(ctypes.byref(dev_ptr), host, 0)
    out = {}
    out["cudaEventRecord (timing)"] = per_call_ns(lambda: rt.cudaEventRecord(timing, stream))
    out["cudaEventRecord (no timing)"] = per_call_ns(lambda: rt.cudaEventRecord(untimed, stream))
    rt.cudaEventRecord(timing, stream)
    rt.cudaDeviceSynchronize()
    out["cudaEventQuery (done)"] = per_call_ns(lambda: rt.cudaEventQuery(timing))
    out["cudaEventElapsedTime"] = per_call_ns(lambda: rt.cudaEventElapsedTime(
        ctypes.byref(ms), timing, timing))
    out["cudaStreamIsCapturing"] = per_call_ns(lambda: rt.cudaStreamIsCapturing(
        stream, ctypes.byref(status)))
    write = lambda: drv.cuStreamWriteValue32(stream, dev_ptr, ctypes.c_uint32(1), 0)
    rc = write()
    out["cuStreamWriteValue32"] = per_call_ns(write, n=20000) if rc == 0 else "error %d" % rc
    rt.cudaDeviceSynchronize()
    result(ns={k: v if isinstance(v, str) else "%.0f ns" % v for k, v in out.items()})


COMMANDS = {"calls": calls, "gemm": gemm, "train": train, "compiled": compiled, "graphs": graphs,
            "cupy": cupy_mm, "jax": jax_mm, "crash": crash, "stacks": stacks}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit("usage: workloads.py {%s} [ARGS]" % ",".join(COMMANDS))
    COMMANDS[sys.argv[1]](*sys.argv[2:])
