#!/usr/bin/env python3
"""pysteps: one rank of a PyTorch-shaped training loop, through the ctypes modules of pydemo.py
(libpydemo_core.so: CUDA + NCCL; libpydemo_nvtx.so: NVTX v3 push/pop ranges, as
torch.cuda.nvtx.range_push/range_pop), the shape xtimer has to find steps in:

  for each step:   [NVTX range --nvtx NAME, when given]
    batch = next(loader)           Loader.__next__: the host prepares a batch (--load-ms)
    forward                        two kernels
    backward                       one in-place all-reduce per parameter (--params P, of a few
                                   sizes, close together, as DDP's per-parameter hooks)
    optimizer.step()               Optimizer.step: one device synchronize (the gradients
                                   ready), then a Python update of the host's parameters

Before the first step every rank joins one all-reduce and a synchronize (a barrier: no rank's
first step waits for a slower start). The program measures its own steps: the time from the top
of one iteration to the top of the next (the last one: to the end of the loop), and prints them
as "pysteps: rank R step-times-ns T1,T2,...", then waits for --wait-file (when given) to exist
before it closes the communicator, so that a monitor can read the final state.

Environment: RANK, WORLD_SIZE, LOCAL_RANK and XTIMER_DEMO_RENDEZVOUS as for pydemo.py. Standard
library only. Exit status: 0 success, 1 a failed CUDA/NCCL call, 2 bad usage. See docs/demo.md.
"""

import argparse
import ctypes
import os
import sys
import time

import pydemo  # beside this file: its ctypes modules, rendezvous and errors

PROG = "pysteps"
# Gradient sizes (fp32 elements) of the parameters, cycled: a few sizes, as a model's layers.
SIZES = (16384, 4096, 4096, 1024, 16384, 256, 4096, 1024)
CORE = dict(pydemo.CORE, forward=(pydemo.INT, [pydemo.VP]),
            allreduce=(pydemo.INT, [pydemo.VP, pydemo.INT]),
            synchronize=(pydemo.INT, [pydemo.VP]))
NVTX = {"push": (pydemo.INT, [ctypes.c_char_p]), "pop": (pydemo.INT, [])}


def say(msg):
    print("%s: %s" % (PROG, msg), flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="pysteps.py", description=__doc__.split("\n\n")[0],
                                epilog="See docs/demo.md.")
    p.add_argument("--steps", type=int, default=40, help="steps (default 40)")
    p.add_argument("--params", type=int, default=16, metavar="P",
                   help="parameters, one all-reduce each per step (default 16)")
    p.add_argument("--load-ms", type=float, default=20, metavar="MS",
                   help="milliseconds Loader.__next__ takes per batch (default 20)")
    p.add_argument("--nvtx", metavar="NAME",
                   help="wrap each step in an NVTX push/pop range NAME (libpydemo_nvtx.so)")
    p.add_argument("--lib-dir", metavar="DIR",
                   help="directory of libpydemo_core.so and libpydemo_nvtx.so (default: this "
                        "script's directory)")
    p.add_argument("--wait-file", metavar="PATH",
                   help="after the last step, wait until PATH exists before closing")
    args = p.parse_args(argv)
    if args.steps < 2 or args.params < 1 or args.load_ms < 0:
        p.error("--steps must be >= 2, --params >= 1 and --load-ms not negative")
    args.lib_dir = args.lib_dir or os.path.dirname(os.path.abspath(__file__))
    return args


class Loader:
    """The data loader: each batch takes the host load_s seconds (reading, decoding)."""

    def __init__(self, load_s):
        self.load_s = load_s
        self.batch = 0

    def __iter__(self):
        return self

    def __next__(self):
        time.sleep(self.load_s)
        self.batch += 1
        return self.batch


class Optimizer:
    """An optimizer over host copies of the parameters: step() waits for the gradients (the
    step's one device synchronize) and updates every parameter in Python."""

    def __init__(self, core, handle, params):
        self.core, self.handle = core, handle
        self.params = [[0.0] * 64 for _ in range(params)]

    def step(self):
        self.core.check(self.core.synchronize(self.handle), "synchronize")
        for p in self.params:
            for i in range(len(p)):
                p[i] -= 0.001 * (p[i] - 1.0)


def train(args, core, handle, nvtx):
    """The step loop; each step's time in ns, top of one iteration to the top of the next."""
    loader, optimizer = Loader(args.load_ms / 1000), Optimizer(core, handle, args.params)
    name = args.nvtx.encode() if args.nvtx else None
    tops = []
    for step in range(args.steps):
        tops.append(time.perf_counter_ns())
        if name:
            nvtx.push(name)
        next(loader)
        core.check(core.forward(handle), "forward")
        for i in range(args.params):  # backward: the gradients' all-reduces, last layer first
            core.check(core.allreduce(handle, SIZES[i % len(SIZES)]), "all-reduce %d" % i)
        optimizer.step()
        if name:
            nvtx.pop()
    tops.append(time.perf_counter_ns())
    return [b - a for a, b in zip(tops, tops[1:])]


def run(args):
    rank, world = pydemo.env_int("RANK", 0), pydemo.env_int("WORLD_SIZE", 1)
    local_rank = pydemo.env_int("LOCAL_RANK", rank)
    n = max(SIZES)
    core = pydemo.Library(args.lib_dir, "libpydemo_core.so", "pydemo_core", CORE)
    nvtx = pydemo.Library(args.lib_dir, "libpydemo_nvtx.so", "pydemo_nvtx", NVTX) \
        if args.nvtx else None
    uid = pydemo.rendezvous(core, rank, world, 120)
    handle = pydemo.VP()
    core.check(core.open(rank, world, local_rank, uid, n, 1, 1, ctypes.byref(handle)), "open")
    core.check(core.allreduce(handle, 1), "barrier")
    core.check(core.synchronize(handle), "barrier")
    times = train(args, core, handle, nvtx)
    say("rank %d step-times-ns %s" % (rank, ",".join(str(t) for t in times)))
    say("rank %d done: %d steps, %d all-reduces each, median step %.3f ms" % (
        rank, args.steps, args.params, sorted(times)[len(times) // 2] / 1e6))
    while args.wait_file and not os.path.exists(args.wait_file):
        time.sleep(0.05)
    core.check(core.close(handle), "close")


def main(argv):
    args = parse_args(argv)
    try:
        run(args)
    except pydemo.DemoError as e:
        print("%s: rank %s: %s" % (PROG, os.environ.get("RANK", "0"), e), file=sys.stderr,
              flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
