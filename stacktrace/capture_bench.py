"""Stack capture latency for 8 local ranks (docs/benchmarks.md): a real xtimerd, the diagnosis job
(//demo:diag_job, tp2-pp2-dp2) on 8 simulator ranks under xtimer-launch, then DumpStack over the
control port's HTTP/JSON (as curl sends it) RUNS times. DumpStack returns when every file is
written, so each figure is from the request to all 8 .stacks files written; the script checks
the 8 files and prints, per call, the latency, the latest file's mtime after the request, and the
threads captured, then min / median / max.

  stacktrace/capture_bench.sh [RUNS]   (builds the programs with -c opt, then runs this)
  python3 stacktrace/capture_bench.py LAUNCH XTIMERD LIB GPUSIM_RUN TRAIN_STEP LAUNCH_PY DIAG_JOB [RUNS]
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
from e2e_lib import (Background, Paths, control, fail, free_ports, scrape,  # noqa: E402
                     stop_daemon, wait_ranks)

JOB = "capbench"
WORLD = 8


def start(p, diag_job):
    metrics, ctl = free_ports(2)
    run_dir = p.run_dir("node0")
    root = os.path.join(p.tmp, "dumps")
    os.makedirs(root)
    env = dict(os.environ, XTIMER_HOST="node0", XTIMER_DUMP_ROOT=root)
    daemon = Background("xtimerd", [p.xtimerd, "--run-dir", run_dir, "--metrics-port",
                                    str(metrics), "--control-port", str(ctl)], env, p.tmp)
    deadline = time.monotonic() + 120
    while scrape(metrics, must=False) is None:
        if time.monotonic() > deadline:
            fail("xtimerd did not serve /metrics within 120 s:\n" + daemon.output())
        time.sleep(0.2)
    argv = p.launch_argv(run_dir, metrics, ctl, JOB) + [
        sys.executable, p.demo_launch, "--nproc-per-node", str(WORLD), "--timeout", "900",
        "--grace", "5", "--", p.gpusim_run, diag_job, "--steps", "1000000"]
    job = Background("job", argv, env, p.tmp)
    wait_ranks(ctl, list(range(WORLD)), 180)
    return daemon, job, run_dir, root, ctl


def capture(ctl, root, i):
    """One DumpStack: (seconds to the answer, seconds to the latest file's mtime, threads)."""
    t0_wall, t0 = time.time(), time.monotonic()
    r = control(ctl, "DumpStack", {"dump_path": "bench%d" % i}, timeout=60)
    took = time.monotonic() - t0
    files = [f for f in r.get("files", []) if f.get("outcome") == "written" and f.get("path")]
    if len(files) != WORLD:
        fail("DumpStack %d: %d of %d files written: %s" % (i, len(files), WORLD, r))
    paths = [f["path"] if os.path.isabs(f["path"]) else os.path.join(root, f["path"])
             for f in files]
    written = max(os.stat(path).st_mtime for path in paths) - t0_wall
    return took, written, sum(int(f.get("threads", 0)) for f in files)


def main(argv):
    if len(argv) not in (8, 9):
        fail(__doc__)
    runs = int(argv[8]) if len(argv) == 9 else 10
    p = Paths(argv[:7], __doc__)
    diag_job = os.path.abspath(argv[7])
    daemon = job = None
    try:
        daemon, job, run_dir, root, ctl = start(p, diag_job)
        load = open("/proc/loadavg").read().split()[:3]
        print("capture latency, %d local ranks, %d DumpStack calls; load %s" %
              (WORLD, runs, " ".join(load)))
        took = []
        for i in range(runs):
            t, w, threads = capture(ctl, root, i)
            took.append(t)
            print("call %d: answered in %.3f s, last file written %.3f s after the request, "
                  "%d threads" % (i + 1, t, w, threads))
        print("request to all %d files written: min %.3f s, median %.3f s, max %.3f s; load %s" %
              (WORLD, min(took), statistics.median(took), max(took),
               " ".join(open("/proc/loadavg").read().split()[:3])))
    finally:
        if job:
            job.stop(grace=10)
        if daemon:
            daemon.kill()
            stop_daemon(run_dir)
        p.cleanup()


if __name__ == "__main__":
    main(sys.argv)
