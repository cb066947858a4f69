#!/usr/bin/env python3
"""The Python demo job (demo/python/pydemo.py) under xtimer-launch on the GPU simulator.

pydemo.py loads its CUDA + NCCL module at start and its cuBLAS module after step LATE, both with
ctypes.CDLL (dlopen RTLD_LOCAL), so libcudart, libnccl and libcublas are only in local scopes.
For each configuration (Debian's /usr/bin/python3 with 2 and 4 ranks, a pyenv Python with 2
ranks) the test runs the job three times:
  - without the hook,
  - under xtimer-launch with XTIMER_DISABLE=1 (the hook preloaded, pass-through),
  - under xtimer-launch with its own xtimerd and XTIMER_KERNEL_FILTER set,
and checks that every run exits 0 and that every rank's per-step checksums are identical across
the three runs. While the hooked ranks linger after their last step, it checks the daemon's
/metrics for every rank: up, no drops, exactly the kernels the filter selects (both Pydemo
kernels, or only PydemoGelu), one AllReduce, AllGather and Broadcast per step, and one GemmEx and
one Sgemm per step after the late load.

Under /usr/bin/python3 (3.11) the job also imports the extension module pydemo_ext with importlib
(--ext) and round-trips its three results through it every step: the daemon must then report 3
device-to-device copies per step for every rank.

Usage: pydemo_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH PYDEMO_PY
       LIBPYDEMO_CORE LIBPYDEMO_GEMM PYDEMO_EXT
"""

import glob
import os
import pwd
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, stop_daemon)

STEPS = 5
LATE = 2  # the cuBLAS module is loaded after step 2: GEMMs in steps 3..5
DEBIAN_PYTHON = "/usr/bin/python3"
# Per run, the kernel filter and how many kernels it selects per rank and step (pydemo launches
# PydemoScale and PydemoGelu once per step).
FILTERS = {2: ("Pydemo", 2), 4: ("PydemoGelu", 1)}
CHECKSUM = re.compile(r"^\[rank (\d+)\] pydemo: step (\d+)/\d+ checksum ([0-9a-f]{16}) ", re.M)


def pyenv_python():
    """A pyenv CPython other than 3.11 (preferably 3.12, else 3.8), or None."""
    roots = [os.environ.get("PYENV_ROOT", ""),
             os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")]
    for version in ("3.12", "3.8", "3.13", "3.10", "3.9"):
        for root in filter(None, roots):
            found = sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin",
                                                  "python3")))
            if found and os.access(found[-1], os.X_OK):
                return found[-1]
    return None


class Job:
    def __init__(self, p, extra):
        self.p = p
        self.pydemo, core, gemm, ext = extra
        self.lib_dir = os.path.dirname(core)
        if os.path.dirname(gemm) != self.lib_dir or os.path.dirname(ext) != self.lib_dir:
            fail("the three modules of demo/python are in different directories")

    def argv(self, python, ranks, linger):
        return [python, self.p.demo_launch, "--nproc", str(ranks), "--timeout", "240", "--",
                self.p.gpusim_run, python, self.pydemo, "--lib-dir", self.lib_dir,
                "--steps", str(STEPS), "--late-step", str(LATE), "--linger", str(linger)] + \
            (["--ext"] if python == DEBIAN_PYTHON else [])


def checksums(name, output, ranks):
    """{(rank, step): checksum}, every rank and step present; fails otherwise."""
    found = {(int(r), int(s)): c for r, s, c in CHECKSUM.findall(output)}
    want = {(r, s) for r in range(ranks) for s in range(1, STEPS + 1)}
    if set(found) != want:
        fail("%s: checksum lines for %s, expected every rank and step:\n%s" %
             (name, sorted(found), output))
    return found


def finish(job, name, ranks):
    status = job.wait(240)
    output = job.output()
    if status != 0:
        fail("%s exited %d:\n%s" % (name, status, output))
    if not re.search(r"^launch: all %d ranks exited 0" % ranks, output, re.M):
        fail("%s: no launcher success line:\n%s" % (name, output))
    return checksums(name, output, ranks)


def run_config(p, job, python, ranks):
    label = "%s, %d ranks" % (python, ranks)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for var in ("XTIMER_DISABLE", "XTIMER_KERNEL_FILTER"):
        env.pop(var, None)
    # Under sanitizer builds, LeakSanitizer would report the interpreter's own allocations.
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))

    plain = finish(Background("plain-%d" % ranks, job.argv(python, ranks, 0), env, p.tmp),
                   label + " without the hook", ranks)
    log("%s: without the hook: %d checksum lines" % (label, len(plain)))

    run_dir = p.run_dir("disabled%d" % ranks)
    metrics, control = free_ports(2)
    disabled_env = dict(env, XTIMER_DISABLE="1")
    argv = p.launch_argv(run_dir, metrics, control, "pydemo-off")
    argv.insert(argv.index("--"), "--no-daemon")
    disabled = finish(Background("disabled-%d" % ranks, argv + job.argv(python, ranks, 0),
                                 disabled_env, p.tmp), label + " with XTIMER_DISABLE=1", ranks)
    compare(label, "XTIMER_DISABLE=1", plain, disabled)

    run_dir = p.run_dir("hooked%d" % ranks)
    metrics, control = free_ports(2)
    regex, kernels_per_step = FILTERS[ranks]
    # Exact counts of every op per rank and step: the overhead budget at 100% times them all (at
    # the default 1% the hook counts every op but times a sample: docs/hook.md).
    hooked_env = dict(env, XTIMER_KERNEL_FILTER=regex, XTIMER_OVERHEAD_BUDGET="100%")
    hooked = Background("hooked-%d" % ranks, p.launch_argv(run_dir, metrics, control, "pydemo") +
                        job.argv(python, ranks, 20), hooked_env, p.tmp)
    try:
        wait_lingering(hooked, ranks)
        check_metrics(label, metrics, ranks, regex, kernels_per_step, python == DEBIAN_PYTHON)
        hooked_sums = finish(hooked, label + " under xtimer-launch", ranks)
    finally:
        hooked.kill()
        stop_daemon(run_dir)
    compare(label, "xtimer-launch", plain, hooked_sums)


def compare(label, what, plain, other):
    for key in sorted(plain):
        if plain[key] != other[key]:
            fail("%s: rank %d step %d: checksum %s with %s, %s without the hook" %
                 (label, key[0], key[1], other[key], what, plain[key]))
    log("%s: %s: all %d checksums identical to the run without the hook" %
        (label, what, len(plain)))


def wait_lingering(job, ranks):
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        output = job.output()
        if len(re.findall(r"^\[rank \d+\] pydemo: lingering", output, re.M)) == ranks:
            return
        if job.proc.poll() is not None:
            fail("%s exited (%s) before every rank lingered:\n%s" %
                 (job.name, job.proc.returncode, output))
        time.sleep(0.1)
    fail("%s: not every rank lingered within 240 s:\n%s" % (job.name, job.output()))


def expected(ranks, kernels_per_step, ext):
    """[(what, rank, metric, labels, value)] that the daemon must report."""
    want = []
    for rank in range(ranks):
        r = str(rank)
        want.append(("up", rank, "xtimer_rank_up", {"rank": r}, 1))
        want.append(("pydemo_ext copies", rank, "xtimer_ops_total",
                     {"rank": r, "kind": "memcpy", "operation": "MemcpyDtoD"},
                     3 * STEPS if ext else 0))
        want.append(("kernels", rank, "xtimer_ops_total",
                     {"rank": r, "kind": "kernel", "operation": "KernelLaunch"},
                     kernels_per_step * STEPS))
        for op in ("AllReduce", "AllGather", "Broadcast"):
            want.append((op, rank, "xtimer_ops_total",
                         {"rank": r, "kind": "collective", "operation": op}, STEPS))
        for op in ("GemmEx", "Sgemm"):
            want.append((op, rank, "xtimer_ops_total",
                         {"rank": r, "kind": "matmul", "operation": op}, STEPS - LATE))
    return want


def check_metrics(label, port, ranks, regex, kernels_per_step, ext):
    """Waits (30 s at most) until the daemon reports exactly the expected counts."""
    want = expected(ranks, kernels_per_step, ext)
    deadline = time.monotonic() + 30
    while True:
        samples = parse(scrape(port))
        wrong = []
        for what, rank, metric, labels, value in want:
            got = sum(v for _, v in select(samples, metric, **labels))
            if got != value:
                wrong.append("rank %d %s: %g, expected %g" % (rank, what, got, value))
        if not wrong or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if wrong:
        fail("%s: the daemon's /metrics:\n  %s" % (label, "\n  ".join(wrong)))
    for labels, v in select(samples, "xtimer_ring_records_dropped_total"):
        if v != 0:
            fail("%s: rank %s dropped %d records" % (label, labels.get("rank"), v))
    log("%s: /metrics: every rank up, %d kernel(s) per step (XTIMER_KERNEL_FILTER=%s), "
        "AllReduce/AllGather/Broadcast every step, GemmEx and Sgemm in the %d steps after the "
        "late load,%s no drops" % (label, kernels_per_step, regex, STEPS - LATE,
                                   " pydemo_ext's device-to-device copies," if ext else ""))


def main(argv):
    if len(argv) != 11:
        fail(__doc__)
    p = Paths(argv[:7], __doc__)
    job = Job(p, [os.path.abspath(a) for a in argv[7:11]])
    configs = [(DEBIAN_PYTHON, 2), (DEBIAN_PYTHON, 4)]
    other = pyenv_python()
    if other is None:
        fail("no pyenv CPython found (~/.pyenv/versions/3.12.* or 3.8.*, or $PYENV_ROOT)")
    configs.append((other, 2))
    try:
        for python, ranks in configs:
            run_config(p, job, python, ranks)
    finally:
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)
