#!/usr/bin/env python3
"""kill -9 of xtimerd in the middle of a dump, then a restart: no temporary file and no empty
folder remains under the dump root (issue 20), and the dumps that completed are kept.

  - 2 ranks of the demo job under xtimer-launch, their daemon's dump root in the test's tmp;
  - a completed dump first ("kept");
  - strace attached to every thread of the daemon turns the dump writer's first renameat (a
    rank's NAME.tmp.PID file about to be renamed into place) into SIGKILL: the daemon dies in the
    middle of the dump "killed", deterministically, with its temporary file on disk (checked);
  - a daemon restarted on the same run directory and dump root removes the temporary file and
    the folders that held only it; "kept" is untouched; the job runs on to exit 0.

Usage: dump_kill_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
"""

import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, control, daemon_pid, fail, free_ports, log,  # noqa: E402
                     stop_daemon, wait_ranks)


def walk(root):
    """(temporary files, empty folders, regular files) under root, relative paths."""
    tmps, empty, files = [], [], []
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        if d != root and not dirs and not names:
            empty.append(rel)
        for n in names:
            (tmps if ".tmp." in n else files).append(os.path.join(rel, n))
    return sorted(tmps), sorted(empty), sorted(files)


def wait_for(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    fail("timed out after %d s waiting for %s" % (timeout, what))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (the launcher has not reaped it yet) is dead too.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def kill_in_first_rename(pid, tmp):
    """Attaches strace to every thread of `pid`; its first renameat gets SIGKILL instead."""
    strace = shutil.which("strace")
    if strace is None:
        fail("strace is not installed (tools/install-deps.sh installs it)")
    out = os.path.join(tmp, "strace.log")
    proc = subprocess.Popen([strace, "-f", "-p", str(pid), "-o", out, "-e",
                             "trace=rename,renameat,renameat2", "-e",
                             "inject=rename,renameat,renameat2:signal=KILL"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # strace says "Process N attached" on stderr for each thread once it holds them.
    line = proc.stderr.readline().decode(errors="replace")
    if "attached" not in line:
        proc.kill()
        fail("strace could not attach to xtimerd %d: %s" % (pid, line))
    return proc


def main(argv):
    p = Paths(argv, __doc__)
    run_dir = p.run_dir("node")
    dump_root = os.environ["XTIMER_DUMP_ROOT"]
    metrics, cp = free_ports(2)
    env = dict(os.environ)
    env["XTIMER_SIM_TFLOPS_BF16"] = "0.02"  # GPU-bound: ~140 ms per step
    job = None
    tracer = None
    try:
        job = Background("job", p.launch_argv(run_dir, metrics, cp, "killjob") + [
            sys.executable, p.demo_launch, "--nproc", "2", "--timeout", "240", "--",
            p.gpusim_run, p.train_step, "--tp", "2", "--steps", "150", "--hidden", "256",
            "--seq", "256", "--layers", "2"], env, p.tmp)
        wait_ranks(cp, [0, 1], 60)
        answer = control(cp, "DumpKernelTrace", {"dump_path": "kept", "history": 1000}, 30)
        if answer.get("state") != "written":
            fail("the first dump: %s" % answer)
        _, _, kept = walk(dump_root)
        log("a completed dump: %s" % kept)

        pid = daemon_pid(run_dir)
        tracer = kill_in_first_rename(pid, p.tmp)
        try:
            control(cp, "DumpKernelTrace", {"dump_path": "killed", "history": 1000}, 30)
            fail("the dump answered although its daemon should have died in it")
        except OSError as e:
            log("the dump request ended without an answer (%s)" % e.__class__.__name__)
        wait_for("xtimerd %d to die" % pid, lambda: not alive(pid), 30)
        tracer.wait(30)
        tmps, empty, _ = walk(dump_root)
        if not tmps:
            fail("no temporary file under the dump root: the kill did not land in the dump")
        log("xtimerd %d killed in the middle of the dump; left behind: %s" % (pid, tmps))

        start = subprocess.run([p.xtimerd, "--daemonize", "--run-dir", run_dir, "--dump-root",
                                dump_root, "--metrics-port", str(metrics), "--control-port",
                                str(cp)], capture_output=True, timeout=30)
        if start.returncode != 0:
            fail("restarting xtimerd failed: %s" % (start.stdout + start.stderr).decode())
        wait_ranks(cp, [0, 1], 60)  # serving, and the ranks are back
        tmps, empty, files = walk(dump_root)
        if tmps or empty:
            fail("after the restart: temporary files %s, empty folders %s" % (tmps, empty))
        if files != kept:
            fail("the completed dump changed: %s, was %s" % (files, kept))
        log("restarted: no temporary file, no empty folder; the completed dump kept (%d files)"
            % len(files))
        status = job.wait(240)
        if status != 0:
            fail("the job exited %d:\n%s" % (status, job.output()))
        log("the job ran to completion with exit 0")
    finally:
        if tracer is not None and tracer.poll() is None:
            tracer.kill()
        if job is not None:
            job.kill()
        stop_daemon(run_dir, signal.SIGTERM)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)
