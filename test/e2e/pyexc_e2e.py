#!/usr/bin/env python3
"""Uncaught Python exceptions (docs/crash.md "Uncaught Python exceptions").

hook/programs/pyexc_program.py raises ValueError in load_batch (called by train_step) under
xtimer-launch (one daemon, --exit-hook set through XTIMER_EXIT_HOOK in the daemon's environment),
under `sh -c`, on Debian's python3 and pyenv's 3.8, 3.12 and 3.13, in three modes:
  none    no excepthook of its own;
  before  its own sys.excepthook set before the hook starts;
  after   its own sys.excepthook set after the hook started.
Every run: the shell sees status 1 and Python's traceback; the application's excepthook, when
set, is called; the daemon writes crash-<s>-<pid>/<job>/crash.json with signal_name
"python_exception", the exception's type and message and the traceback's frames (load_batch at
the raising line, then train_step), and the .stacks file beside it holds the same Python frames;
the exit hook receives that JSON.
At the end xtimer_rank_crashes_total{signal="python_exception"} counts every run.

Then a native crash inside Python (issue 34), on Debian's python3 and pyenv's 3.8 to 3.13 (a
version missing fails the test): the program's "segv" mode passes NULL to libc's strlen through
ctypes in crash_in_native, called by native_step, called by main, called from the module. The
shell sees status 139; crash.json's frames start with the native frames of the crash and then
hold the four Python frames, function and file:line each, innermost first (on 3.11+ one C-level
evaluation runs all four); the .stacks file's thread holds the same Python frames after native
ones; the exit hook receives that JSON; xtimer_rank_crashes_total{signal="SIGSEGV"} counts
every run.

Usage: pyexc_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH PYEXC_PROGRAM
"""

import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, every_python, fail, free_ports, log,  # noqa: E402
                     parse, pythons, scrape, select, status, stop_daemon, wait_for, exit_hook)

JOB = "pyexc"
MESSAGE = 'bad batch 7: "quoted"\nsecond line'
# The native crash's Python frames, innermost first: (function, the marker of its line).
SEGV_FRAMES = [("crash_in_native", "# the segv line"), ("native_step", "# the native step line"),
               ("main", "# the main line"), ("<module>", "# the module line")]


def live_pid(control_port):
    """The pid of the job's live process once the daemon lists it (earlier runs' exited)."""
    def ok():
        try:
            return next((p["pid"] for p in status(control_port)["processes"]
                         if p.get("job") == JOB and not p.get("exited")), None)
        except OSError:
            return None
    return ok


def marked_line(program, marker):
    with open(program) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text)


def raising_line(program):
    return marked_line(program, "# the crashing line")


def run_mode(p, python, program, mode, ports, env):
    metrics, control_port = ports
    label = "%s %s" % (os.path.basename(python), mode)
    go = os.path.join(p.tmp, "go-%s-%s" % (os.path.basename(python), mode))
    script = '"$0" "$1" %s %s; echo "sh status $?"' % (mode, go)
    job = Background("pyexc-%s-%s" % (os.path.basename(python), mode),
                     p.launch_argv(p.run_dir("node"), metrics, control_port, JOB) +
                     [p.gpusim_run, "sh", "-c", script, python, program], env, p.tmp)
    try:
        job.wait_for_line(r"(?m)^ready$", 60)
        pid = wait_for("%s: the daemon lists the program" % label, live_pid(control_port), 30)
        open(go, "w").close()
        job.wait(60)
    finally:
        job.kill()
    out = job.output()
    if mode == "segv":
        if "sh status 139" not in out:
            fail("%s: want status 139 (SIGSEGV):\n%s" % (label, out))
        return pid
    if "sh status 1" not in out or "ValueError: bad batch 7" not in out:
        fail("%s: want Python's traceback and status 1:\n%s" % (label, out))
    called = "application excepthook called: ValueError" in out
    if called != (mode != "none"):
        fail("%s: the application's excepthook was %scalled:\n%s" %
             (label, "" if called else "not ", out))
    return pid


def check_report(label, dump_root, pid, line, hook_out):
    paths = glob.glob(os.path.join(dump_root, "crash-*-%d" % pid, JOB, "crash.json"))
    if not paths:
        fail("%s: no crash-*-%d/%s/crash.json under %s" % (label, pid, JOB, dump_root))
    with open(paths[0]) as f:
        report = json.load(f)
    want_frames = [{"function": "load_batch", "line": line}, {"function": "train_step",
                                                               "line": line + 4}]
    got_frames = [{"function": fr.get("function"), "line": fr.get("line")}
                  for fr in report["frames"][:2]]
    if (report["signal_name"] != "python_exception" or report["signal"] != 0 or
            report.get("exception") != {"type": "ValueError", "message": MESSAGE} or
            got_frames != want_frames or
            os.path.basename(report["frames"][0]["file"]) != "pyexc_program.py" or
            report["frame"] != "load_batch (pyexc_program.py:%d)" % line):
        fail("%s: crash.json is not the ValueError in load_batch at line %d:\n%s" %
             (label, line, json.dumps(report, indent=1)))
    with open(os.path.join(os.path.dirname(paths[0]), "00000-00001.stacks")) as f:
        stacks = json.load(f)
    thread = [t for t in stacks["threads"] if t["tid"] == report["tid"]]
    first = stacks["frames"][thread[0]["frames"][0]] if thread and thread[0]["frames"] else {}
    if (first.get("kind"), first.get("function"), first.get("line")) != (
            "python", "load_batch", line):
        fail("%s: the .stacks file's thread does not start in load_batch:\n%s" % (label, stacks))
    check_exit_hook(label, pid, report, hook_out)
    return report


def check_exit_hook(label, pid, report, hook_out):
    def hook_inputs():
        inputs = []
        for path in glob.glob(hook_out + ".[0-9]*"):
            with open(path) as f:
                inputs.append(json.load(f))
        return [i for i in inputs if i.get("pid") == pid]
    given = wait_for("%s: the exit hook's input" % label, hook_inputs, 15)
    if given[0] != report:
        fail("%s: the exit hook was given %s" % (label, given[0]))


def check_segv_report(label, dump_root, pid, program, hook_out):
    """crash.json and the .stacks file of the SIGSEGV in crash_in_native: native frames, then
    every Python frame of the chain with its file and line."""
    paths = glob.glob(os.path.join(dump_root, "crash-*-%d" % pid, JOB, "crash.json"))
    with open(paths[0]) as f:
        report = json.load(f)
    want = [(function, "pyexc_program.py", marked_line(program, marker))
            for function, marker in SEGV_FRAMES]
    frames = report["frames"]
    python = [(fr.get("function"), os.path.basename(fr.get("file", "")), fr.get("line"))
              for fr in frames if "file" in fr]
    if (report["signal_name"] != "SIGSEGV" or not frames or "file" in frames[0] or
            python[:len(want)] != want):
        fail("%s: crash.json is not a SIGSEGV in native code under %s:\n%s" %
             (label, want, json.dumps(report, indent=1)))
    with open(os.path.join(os.path.dirname(paths[0]), "00000-00001.stacks")) as f:
        stacks = json.load(f)
    thread = [t for t in stacks["threads"] if t["tid"] == report["tid"]]
    listed = [stacks["frames"][i] for i in thread[0]["frames"]] if thread else []
    in_stacks = [(fr["function"], os.path.basename(fr["module"]), fr.get("line"))
                 for fr in listed if fr["kind"] == "python"]
    if not listed or listed[0]["kind"] != "native" or in_stacks[:len(want)] != want:
        fail("%s: the .stacks file's thread is not native frames then %s:\n%s" %
             (label, want, json.dumps(stacks, indent=1)))
    check_exit_hook(label, pid, report, hook_out)
    return report


def main(argv):
    if len(argv) != 8:
        fail(__doc__)
    program = os.path.abspath(argv[7])
    p = Paths(argv[:7], __doc__)
    ports = free_ports(2)
    dump_root = os.path.join(p.tmp, "dumps")
    hook, hook_out = exit_hook(p.tmp)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update({"XTIMER_CONTROL_PORT": str(ports[1]), "XTIMER_DUMP_ROOT": dump_root,
                "XTIMER_EXIT_HOOK": hook + " " + hook_out, "RANK": "0", "WORLD_SIZE": "1"})
    line = raising_line(program)
    runs = 0
    try:
        for python in pythons():
            for mode in ("none", "before", "after"):
                label = "%s %s" % (os.path.basename(python), mode)
                pid = run_mode(p, python, program, mode, ports, env)
                wait_for("%s: the crash report" % label, lambda: glob.glob(
                    os.path.join(dump_root, "crash-*-%d" % pid, JOB, "crash.json")), 15)
                report = check_report(label, dump_root, pid, line, hook_out)
                runs += 1
                log("%s: reported %s in %s" % (label, report["exception"]["type"],
                                                report["frame"]))
        crashes = select(parse(scrape(ports[0])), "xtimer_rank_crashes_total", job=JOB,
                         rank="0", signal="python_exception")
        if crashes != [({"job": JOB, "rank": "0", "signal": "python_exception"}, float(runs))]:
            fail("want %d crashes counted with signal=python_exception: %s" % (runs, crashes))
        segvs = 0
        for python in every_python(("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")):
            label = "%s segv" % os.path.basename(python)
            pid = run_mode(p, python, program, "segv", ports, env)
            wait_for("%s: the crash report" % label, lambda: glob.glob(
                os.path.join(dump_root, "crash-*-%d" % pid, JOB, "crash.json")), 15)
            report = check_segv_report(label, dump_root, pid, program, hook_out)
            segvs += 1
            log("%s: reported %s in %s, Python frames %s" % (
                label, report["signal_name"], report["frame"],
                " <- ".join("%s:%s" % (fr["function"], fr["line"])
                            for fr in report["frames"] if "file" in fr)))
        crashes = select(parse(scrape(ports[0])), "xtimer_rank_crashes_total", job=JOB,
                         rank="0", signal="SIGSEGV")
        if crashes != [({"job": JOB, "rank": "0", "signal": "SIGSEGV"}, float(segvs))]:
            fail("want %d crashes counted with signal=SIGSEGV: %s" % (segvs, crashes))
    finally:
        stop_daemon(p.run_dir("node"))
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)
