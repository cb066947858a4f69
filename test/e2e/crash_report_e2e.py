#!/usr/bin/env python3
"""Crash reports (docs/crash.md): a rank that dies of SIGSEGV in CrashHere.

hook/programs/crash_program runs three times under xtimer-launch (one daemon, --exit-hook set
through XTIMER_EXIT_HOOK in the daemon's environment), each time under `sh -c`:
  none    no handler of its own: the daemon writes crash-<s>-<pid>/<job>/00000-00001.stacks whose
          crashing thread's innermost frame is CrashHere, crash.json naming CrashHere and
          SIGSEGV, counts xtimer_rank_crashes_total{signal="SIGSEGV"} and runs the exit hook with
          that JSON on stdin; the shell sees status 139.
  before  its own SIGSEGV handler installed before the hook starts: the handler is still called
          (the hook chains to it), the crash is reported, status 139.
  after   its own handler installed after the hook started: the handler is called (the hook does
          not install over it), status 139; the hook's report is not expected.

Usage: crash_report_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH CRASH_PROGRAM
"""

import glob
import json
import os
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, status, stop_daemon)

JOB = "crashrep"


def wait_for(what, ok, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ok()
        if got:
            return got
        time.sleep(0.1)
    fail("%s: not within %d s" % (what, timeout))


def registered(control):
    """True once a live process of the job is registered (earlier runs' are exited)."""
    def ok():
        try:
            return any(p.get("job") == JOB and not p.get("exited")
                       for p in status(control)["processes"])
        except OSError:
            return False
    return ok


def run_mode(p, program, mode, run_dir, metrics, control, env):
    go = os.path.join(p.tmp, "go-" + mode)
    script = '"$0" %s %s; echo "sh status $?"' % (mode, go)
    job = Background("crash-" + mode, p.launch_argv(run_dir, metrics, control, JOB) +
                     [p.gpusim_run, "sh", "-c", script, program], env, p.tmp)
    try:
        job.wait_for_line(r"^ready$", 60)
        wait_for("%s: the daemon lists the program" % mode, registered(control), 30)
        open(go, "w").close()
        job.wait(60)
    finally:
        job.kill()
    out = job.output()
    log("--- %s ---\n%s" % (mode, out[-2000:]))
    if "sh status 139" not in out:
        fail("%s: the shell did not see status 139 (death by SIGSEGV)" % mode)
    handler = "application handler called" in out
    if handler != (mode != "none"):
        fail("%s: the application's own handler was %scalled" % (mode, "" if handler else "not "))


def check_report(dump_root, hook_out):
    """The report of the run without a handler: files, crash.json and the exit hook's input."""
    reports = sorted(glob.glob(os.path.join(dump_root, "crash-*", JOB, "crash.json")))
    if not reports:
        fail("no crash-*/%s/crash.json under %s" % (JOB, dump_root))
    with open(reports[0]) as f:
        report = json.load(f)
    log("crash.json: %s" % json.dumps(report)[:600])
    if report["signal_name"] != "SIGSEGV" or report["signal"] != 11:
        fail("crash.json does not name SIGSEGV: %s" % report)
    if not report["frame"].startswith("CrashHere"):
        fail("crash.json's frame is %r, want CrashHere" % report["frame"])
    stacks = os.path.join(os.path.dirname(reports[0]), "00000-00001.stacks")
    with open(stacks) as f:
        s = json.load(f)
    thread = [t for t in s["threads"] if t["tid"] == report["tid"]]
    if not thread or s["frames"][thread[0]["frames"][0]]["function"] != "CrashHere":
        fail("the .stacks file's crashing thread does not start in CrashHere: %s" % s)
    hooks = wait_for("the exit hook's output", lambda: sorted(glob.glob(hook_out + ".[0-9]*")), 15)
    with open(hooks[0]) as f:
        given = json.load(f)
    if given["frame"] != report["frame"] or given["signal_name"] != "SIGSEGV":
        fail("the exit hook was given %s" % given)
    return len(reports)


def main(argv):
    if len(argv) != 8:
        fail(__doc__)
    program = os.path.abspath(argv[7])
    p = Paths(argv[:7], __doc__)
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    dump_root = os.path.join(p.tmp, "dumps")
    hook = os.path.join(p.tmp, "exit_hook.sh")
    hook_out = os.path.join(p.tmp, "hook-out")
    with open(hook, "w") as f:
        # Renamed into place: the test never reads a half-written file.
        f.write('#!/bin/sh\ncat > "$1.tmp$$" && mv "$1.tmp$$" "$1.$$"\n')
    os.chmod(hook, stat.S_IRWXU)
    env = dict(os.environ)
    env.update({"XTIMER_CONTROL_PORT": str(control), "XTIMER_DUMP_ROOT": dump_root,
                "XTIMER_EXIT_HOOK": hook + " " + hook_out, "RANK": "0", "WORLD_SIZE": "1"})
    try:
        run_mode(p, program, "none", run_dir, metrics, control, env)
        reports = wait_for("the crash report", lambda: check_report(dump_root, hook_out), 15)
        run_mode(p, program, "before", run_dir, metrics, control, env)
        run_mode(p, program, "after", run_dir, metrics, control, env)
        crashes = select(parse(scrape(metrics)), "xtimer_rank_crashes_total", job=JOB, rank="0",
                         signal="SIGSEGV")
        log("xtimer_rank_crashes_total: %s (%d report folders)" % (crashes, reports))
        if crashes != [({"job": JOB, "rank": "0", "signal": "SIGSEGV"}, 2.0)]:
            fail("want 2 crashes counted (no handler, handler before the hook): %s" % crashes)
    finally:
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)
