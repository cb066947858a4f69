#!/usr/bin/env python3
"""pydemo: one rank of a Python job that reaches CUDA, cuBLAS and NCCL the way Python jobs do,
through shared libraries it loads at run time with ctypes.CDLL (dlopen with RTLD_LOCAL, ctypes'
default), never linked into the interpreter:

  libpydemo_core.so  (DT_NEEDED libcudart.so.13, libnccl.so.2), loaded at start: every step copies
                     the rank's inputs to the device, runs two kernels (PydemoScale, PydemoGelu)
                     and an all-reduce, an all-gather and a broadcast on the world communicator,
                     and copies the results back;
  libpydemo_gemm.so  (DT_NEEDED libcublas.so.13, libcudart.so.13), loaded only after step
                     --late-step: from then on every step also runs a bf16 cublasGemmEx and an
                     fp32 cublasSgemm on the core's stream.

With --ext (CPython 3.11 only) it also imports pydemo_ext, a real CPython extension module built
against /usr/include/python3.11, with importlib (dlopen with sys.getdlopenflags(): RTLD_NOW,
local scope; DT_NEEDED libcudart.so.13), and every step round-trips its results through that
module's device memory (host to device, device to device, device to host).

Each step's inputs come from a data loader (the iterator Loader, whose __next__ builds them on
the host); with --slow-loader it also waits on one rank, and --gc-rank forces a full garbage
collection (gc.collect()) every step on another: the host-side causes of a late rank that
XTIMER_PY_TRACE ('__main__:Loader.__next__@data') and xtimer's GC tracing show.

Every step checks the three results exactly (they depend on copies and NCCL only) and prints a
checksum of them, so that runs with and without a preloaded hook can be compared line by line.

Environment, as demo/launch.py (or torchrun) sets it: RANK, WORLD_SIZE, LOCAL_RANK and
XTIMER_DEMO_RENDEZVOUS, a directory shared by the ranks: rank 0 writes its NCCL id there
(pydemo_nccl_unique_id, atomically) and the others wait for it. Standard library only; runs on
any CPython 3.6 or later. Exit status: 0 success, 1 a failed CUDA/cuBLAS/NCCL call or check,
2 bad usage. See docs/demo.md.
"""

import argparse
import ctypes
import gc
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import sys
import time
from array import array

PROG = "pydemo"
ID_FILE = "pydemo_nccl_unique_id"
EXT_FILE = "pydemo_ext.cpython-311-x86_64-linux-gnu.so"


class DemoError(Exception):
    pass


def say(msg):
    print("%s: %s" % (PROG, msg), flush=True)


def read_version():
    """The one version string, //:VERSION at the repository root (symlinks resolved)."""
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "VERSION")
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError as e:
        return "unknown (cannot read %s: %s)" % (path, e.strerror)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="pydemo.py", description=__doc__.split("\n\n")[0],
                                epilog="See docs/demo.md.")
    p.add_argument("--version", action="version", version=read_version(),
                   help="print the version and exit")
    p.add_argument("--steps", type=int, default=6, help="steps (default 6)")
    p.add_argument("--late-step", type=int, default=3, metavar="L",
                   help="load libpydemo_gemm.so after step L (default 3; 0: before step 1; "
                        ">= steps: never)")
    p.add_argument("--elements", type=int, default=65536, metavar="N",
                   help="fp32 elements all-reduced per step (default 65536)")
    p.add_argument("--gemm-dim", type=int, default=512, metavar="D",
                   help="the GEMMs are D x D x D (default 512)")
    p.add_argument("--lib-dir", metavar="DIR",
                   help="directory holding libpydemo_core.so and libpydemo_gemm.so (default: "
                        "this script's directory)")
    p.add_argument("--ext", action="store_true",
                   help="also import the extension module %s with importlib and round-trip "
                        "each step's results through it (CPython 3.11 only)" % EXT_FILE)
    p.add_argument("--rendezvous-timeout", type=float, default=120, metavar="S",
                   help="seconds a rank waits for rank 0's NCCL id (default 120)")
    p.add_argument("--linger", type=float, default=0, metavar="S",
                   help="stay alive S seconds after the last step, communicator open, so that "
                        "monitors can read the final state (default 0)")
    p.add_argument("--stall", action="append", default=[], metavar="R:S:WHERE",
                   help="rank R stops before step S's work, forever (a hang to take stacks "
                        "of): WHERE is 'python' (spins in the Python function stall_in_python) "
                        "or 'native' (sleeps in libc's sleep called through ctypes.PyDLL, which "
                        "holds the GIL, from stall_in_native); repeatable")
    p.add_argument("--slow-loader", metavar="R:MS",
                   help="on rank R, the data loader's __next__ waits MS milliseconds more per "
                        "batch (a slow disk, a starved loader worker)")
    p.add_argument("--gc-rank", type=int, metavar="R",
                   help="rank R runs gc.collect() (a full collection, generation 2) every step")
    args = p.parse_args(argv)
    try:
        args.slow_loader = parse_slow_loader(args.slow_loader)
    except ValueError as e:
        p.error("--slow-loader %s" % e)
    try:
        args.stall = dict(parse_stall(s) for s in args.stall)
    except ValueError as e:
        p.error("--stall %s" % e)
    if args.steps < 1 or args.late_step < 0 or args.elements < 1 or args.gemm_dim < 1:
        p.error("--steps, --elements and --gemm-dim must be >= 1 and --late-step >= 0")
    if args.ext and sys.version_info[:2] != (3, 11):
        p.error("--ext needs CPython 3.11 (%s is built against /usr/include/python3.11); this is "
                "%s" % (EXT_FILE, platform.python_version()))
    if args.rendezvous_timeout <= 0 or args.linger < 0:
        p.error("--rendezvous-timeout must be positive and --linger not negative")
    args.lib_dir = args.lib_dir or os.path.dirname(os.path.abspath(__file__))
    return args


def parse_stall(text):
    """'R:S:WHERE' -> (R, (S, WHERE)); ValueError says what is wrong."""
    parts = text.split(":")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or \
            parts[2] not in STALLS:
        raise ValueError("%r: expected RANK:STEP:WHERE, WHERE one of %s" %
                         (text, ", ".join(sorted(STALLS))))
    if int(parts[1]) < 1:
        raise ValueError("%r: steps count from 1" % text)
    return int(parts[0]), (int(parts[1]), parts[2])


def parse_slow_loader(text):
    """'R:MS' -> (R, seconds); None -> (-1, 0); ValueError says what is wrong."""
    if text is None:
        return -1, 0.0
    rank, _, ms = text.partition(":")
    try:
        if not rank.isdigit() or float(ms) <= 0:
            raise ValueError
        return int(rank), float(ms) / 1000
    except ValueError:
        raise ValueError("%r: expected RANK:MILLISECONDS, milliseconds positive" % text)


class Loader:
    """The data loader: each step's inputs (inputs()), built on the host; `delay_s` more per
    batch on a slow rank."""

    def __init__(self, rank, world, sizes, delay_s):
        self.rank, self.world, self.sizes, self.delay_s = rank, world, sizes, delay_s
        self.step = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.delay_s:
            time.sleep(self.delay_s)
        self.step += 1
        return inputs(self.rank, self.world, self.step, *self.sizes)


def stall_in_python():
    """Spins in Python code forever: the interpreter is busy, the GIL is taken and released as
    usual. The line below is what a stack capture must name."""
    n = 0
    while True:
        n += 1


def stall_in_native():
    """Calls libc's sleep through ctypes.PyDLL, which keeps the GIL for the whole call: no other
    Python thread of this process runs until it returns."""
    libc = ctypes.PyDLL(None)
    while True:
        libc.sleep(3600)


STALLS = {"python": stall_in_python, "native": stall_in_native}


def env_int(name, default):
    text = os.environ.get(name, "")
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise DemoError("%s=%r is not an integer" % (name, text))


class Library:
    """A module of this demo loaded with ctypes.CDLL: dlopen(path, RTLD_NOW | RTLD_LOCAL)."""

    def __init__(self, lib_dir, name, prefix, signatures):
        path = os.path.join(lib_dir, name)
        try:
            self.dll = ctypes.CDLL(path)
        except OSError as e:
            raise DemoError("cannot load %s: %s (build //demo/python:libs, or pass --lib-dir)" %
                            (path, e))
        self.name = name
        self.last_error = self.function(prefix + "_last_error", ctypes.c_char_p, [])
        for fn, (restype, argtypes) in signatures.items():
            setattr(self, fn, self.function(prefix + "_" + fn, restype, argtypes))

    def function(self, symbol, restype, argtypes):
        f = getattr(self.dll, symbol)
        f.restype, f.argtypes = restype, argtypes
        return f

    def check(self, status, what):
        if status != 0:
            message = self.last_error().decode(errors="replace")
            raise DemoError("%s: %s: %s" % (self.name, what, message))


VP, INT, FP = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)
CORE = {
    "unique_id_size": (INT, []),
    "get_unique_id": (INT, [ctypes.c_char_p]),
    "open": (INT, [INT, INT, INT, ctypes.c_char_p, INT, INT, INT, ctypes.POINTER(VP)]),
    "stream": (VP, [VP]),
    "step": (INT, [VP, FP, FP, FP, INT, FP, FP, FP]),
    "close": (INT, [VP]),
}
GEMM = {
    "open": (INT, [VP, INT, ctypes.POINTER(VP)]),
    "run": (INT, [VP]),
    "close": (INT, [VP]),
}


def scope(dlopen_flags):
    return "RTLD_GLOBAL" if dlopen_flags & os.RTLD_GLOBAL else "RTLD_LOCAL"


def import_ext(lib_dir):
    """pydemo_ext, imported from lib_dir with importlib as `import` would (dlopen RTLD_LOCAL)."""
    path = os.path.join(lib_dir, EXT_FILE)
    loader = importlib.machinery.ExtensionFileLoader("pydemo_ext", path)
    spec = importlib.util.spec_from_file_location("pydemo_ext", path, loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as e:
        raise DemoError("cannot import %s: %s (build //demo/python:libs, or pass --lib-dir)" %
                        (path, e))
    return module


def rendezvous(core, rank, world, timeout):
    """Rank 0's NCCL id, shared through XTIMER_DEMO_RENDEZVOUS."""
    size = core.unique_id_size()
    buf = ctypes.create_string_buffer(size)
    if world == 1:
        core.check(core.get_unique_id(buf), "ncclGetUniqueId")
        return buf.raw
    directory = os.environ.get("XTIMER_DEMO_RENDEZVOUS")
    if not directory:
        raise DemoError("XTIMER_DEMO_RENDEZVOUS is not set: with WORLD_SIZE > 1 it must name a "
                        "directory shared by the ranks (demo/launch.py sets it)")
    path = os.path.join(directory, ID_FILE)
    if rank == 0:
        core.check(core.get_unique_id(buf), "ncclGetUniqueId")
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(buf.raw)
        os.replace(tmp, path)
        return buf.raw
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as f:
                data = f.read()
            if len(data) == size:
                return data
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise DemoError("rank 0's NCCL id did not appear in %s within %g s (--rendezvous-timeout)" %
                    (path, timeout))


def floats(values):
    return array("f", values)


def pointer(arr):
    return ctypes.cast(arr.buffer_info()[0], FP)


def inputs(rank, world, step, n, m, b):
    """This rank's inputs of a step, and every rank's expected results (small integers, exact in
    fp32 whatever the order of the sum)."""
    root = (step - 1) % world
    reduce_in = floats((rank + 1) * step + i % 17 for i in range(n))
    gather_in = floats(rank * 1000 + step * 10 + i % 7 for i in range(m))
    bcast_in = floats(root * 100 + step + i % 3 if rank == root else 0 for i in range(b))
    ranks_sum = world * (world + 1) // 2
    want = (floats(step * ranks_sum + world * (i % 17) for i in range(n)),
            floats(r * 1000 + step * 10 + i % 7 for r in range(world) for i in range(m)),
            floats(root * 100 + step + i % 3 for i in range(b)))
    return root, (reduce_in, gather_in, bcast_in), want


def check(step, what, got, want):
    if got == want:
        return
    i = next(i for i in range(len(want)) if got[i] != want[i])
    raise DemoError("step %d: %s: element %d is %r, expected %r" % (step, what, i, got[i], want[i]))


def verify(step, outs, want, ext):
    """Checks the step's results, and their round trip through pydemo_ext when imported."""
    for what, got, w in zip(("all-reduce", "all-gather", "broadcast"), outs, want):
        check(step, what, got, w)
        if ext is not None:
            try:
                back = floats(ext.roundtrip(got.tobytes()))
            except RuntimeError as e:
                raise DemoError("step %d: %s" % (step, e))
            check(step, what + " through pydemo_ext", back, w)


def run(args):
    rank, world = env_int("RANK", 0), env_int("WORLD_SIZE", 1)
    local_rank = env_int("LOCAL_RANK", rank)
    if not 0 <= rank < world:
        raise DemoError("RANK %d is not in [0, WORLD_SIZE %d)" % (rank, world))
    n, m, b = args.elements, 256, 1024
    core = Library(args.lib_dir, "libpydemo_core.so", "pydemo_core", CORE)
    if rank == 0:
        say("python %s (%s); %d ranks; %s loaded with ctypes.CDLL (%s)" %
            (platform.python_version(), sys.executable, world, core.name,
             scope(ctypes.DEFAULT_MODE)))
    uid = rendezvous(core, rank, world, args.rendezvous_timeout)
    handle = VP()
    core.check(core.open(rank, world, local_rank, uid, n, m, b, ctypes.byref(handle)), "open")
    ext = import_ext(args.lib_dir) if args.ext else None
    if ext is not None and rank == 0:
        say("imported pydemo_ext with importlib (%s)" % scope(sys.getdlopenflags()))
    gemm, gemm_handle = None, VP()
    outs = (floats(bytes(4 * n)), floats(bytes(4 * m * world)), floats(bytes(4 * b)))
    digest = hashlib.sha256()
    slow_rank, delay_s = args.slow_loader
    loader = Loader(rank, world, (n, m, b), delay_s if rank == slow_rank else 0)
    if rank == slow_rank:
        say("rank %d: the data loader waits %g ms more per batch" % (rank, delay_s * 1000))
    if rank == args.gc_rank:
        say("rank %d: gc.collect() every step" % rank)
    for step in range(1, args.steps + 1):
        if gemm is None and step > args.late_step:
            gemm = Library(args.lib_dir, "libpydemo_gemm.so", "pydemo_gemm", GEMM)
            gemm.check(gemm.open(core.stream(handle), args.gemm_dim, ctypes.byref(gemm_handle)),
                       "open")
            say("loaded %s before step %d: cuBLAS is used from now on" % (gemm.name, step))
        if args.stall.get(rank, (0, ""))[0] == step:
            where = args.stall[rank][1]
            say("stalling in %s before step %d" % (STALLS[where].__name__, step))
            STALLS[where]()
        root, ins, want = next(loader)
        if rank == args.gc_rank:
            gc.collect()
        core.check(core.step(handle, *[pointer(a) for a in ins], root, *[pointer(a) for a in outs]),
                   "step %d" % step)
        if gemm is not None:
            gemm.check(gemm.run(gemm_handle), "step %d" % step)
        verify(step, outs, want, ext)
        step_sum = hashlib.sha256(b"".join(a.tobytes() for a in outs)).hexdigest()[:16]
        digest.update(step_sum.encode())
        say("step %d/%d checksum %s (all-reduce ok, all-gather ok, broadcast from rank %d ok%s)" %
            (step, args.steps, step_sum, root,
             (", 2 gemms" if gemm is not None else "") + (", pydemo_ext ok" if ext else "")))
    say("done: %d steps on %d ranks, all checks passed; checksum of all steps %s" %
        (args.steps, world, digest.hexdigest()[:16]))
    if args.linger > 0:
        say("lingering %g s" % args.linger)
        time.sleep(args.linger)
    if gemm is not None:
        gemm.check(gemm.close(gemm_handle), "close")
    core.check(core.close(handle), "close")


def main(argv):
    args = parse_args(argv)
    try:
        run(args)
    except DemoError as e:
        print("%s: rank %s: %s" % (PROG, os.environ.get("RANK", "0"), e), file=sys.stderr,
              flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
