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
Then the same program without a rank (no RANK, WORLD_SIZE or launcher rank, no communicator): a
process that is named by its pid where a rank would be (docs/ranks.md). While it waits, its live
stacks come through DumpStack (pid-PID.stacks in the dump path, the content in the answer) and
`xtimer stacks --hosts` (saved and merged, the summary naming HOST:pid-PID in main); when it
crashes, crash.json has its frames (CrashHere first), `"ranks": []` and the pid-named .stacks file.
Then a 2-rank simulator job (demo/train_step, launch.py --crash-step 1:2) whose rank 1 dies of
SIGSEGV in the simulated NCCL's Crash: HangCheck's exited verdict, the automatic hang dump's
summary and `xtimer analyze` of that dump (text and JSON) name Crash as the crashing frame.

Usage: crash_report_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH CRASH_PROGRAM
       XTIMER
"""

import glob
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, control, fail, free_ports, log, parse,  # noqa: E402
                     scrape, select, status, stop_daemon, wait_for, exit_hook)

JOB = "crashrep"
JOB_MULTI = "crashjob"
JOB_RANKLESS = "crashpid"
# What tells the hook a rank (docs/launcher.md): all absent for the process without a rank.
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                  "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
                  "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")
# The exited verdict's evidence with the simulated NCCL's faulting function (docs/crash.md).
EXITED_IN_CRASH = re.compile(
    r"rank 1 exited: signal 11 \(SIGSEGV\) in [^\n]*::Crash\(int, long\) \(libnccl\.so\.2\)")


def registered(control, job=JOB):
    """The first live process of the job once one is registered (earlier runs' are exited)."""
    def ok():
        try:
            return next((p for p in status(control)["processes"]
                         if p.get("job") == job and not p.get("exited")), None)
        except OSError:
            return None
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
    """The report of the run without a handler: files, crash.json and the exit hook's input.
    None while the daemon has not written crash.json yet (it may finish after the process died:
    the hook waits at most 3 s for its acknowledgement)."""
    reports = sorted(glob.glob(os.path.join(dump_root, "crash-*", JOB, "crash.json")))
    if not reports:
        return None
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


def live_stacks_without_rank(xtimer, control_port, pid, out):
    """DumpStack and `xtimer stacks --hosts` of the waiting process without a rank: both name it
    by its pid, and its main thread's stack reaches main."""
    name = "pid-%d.stacks" % pid
    answer = control(control_port, "DumpStack", {"dump_path": "live-rankless",
                                                  "jobs": [JOB_RANKLESS], "with_content": True},
                     timeout=30)
    files = answer.get("files", [])
    log("DumpStack: %s" % answer.get("message"))
    if len(files) != 1 or not files[0].get("path", "").endswith("/%s/%s" % (JOB_RANKLESS, name)):
        fail("DumpStack did not write %s for the process without a rank: %s" % (name, answer))
    content = json.loads(files[0]["content"])
    if content["rank"] != -1 or content["world_size"] != -1 or content["pid"] != pid:
        fail("the pid-named file does not say rank and world size -1: %s" % files[0]["content"])
    main = [t for t in content["threads"] if t["tid"] == pid]
    names = [content["frames"][i]["function"] for i in main[0]["frames"]] if main else []
    if "main" not in names:
        fail("the live stack of the process without a rank does not reach main: %s" % names)
    done = subprocess.run([xtimer, "stacks", "--hosts", "127.0.0.1:%d" % control_port, "--job",
                           JOB_RANKLESS, "--path", "cli-rankless", "-o", out],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60)
    log("xtimer stacks --hosts (exit %d):\n%s" % (done.returncode, done.stdout))
    want = re.compile(r"^process \S+:pid-%d \(1\) in .*\bmain\b" % pid, re.M)
    if done.returncode != 0 or not want.search(done.stdout):
        fail("xtimer stacks --hosts does not show the process without a rank as HOST:pid-%d in "
             "main (exit %d)" % (pid, done.returncode))
    if not glob.glob(os.path.join(out, "nodes", "*", JOB_RANKLESS, name)):
        fail("xtimer stacks --hosts did not save %s under %s/nodes" % (name, out))


def crash_without_rank(p, xtimer, ports, dump_root, env):
    """The crash program without a rank: live stacks while it waits, then its crash report."""
    metrics, control_port = ports
    env = {k: v for k, v in env.items() if k not in RANK_VARIABLES}
    go = os.path.join(p.tmp, "go-rankless")
    job = Background("crash-rankless", p.launch_argv(p.run_dir("node"), metrics, control_port,
                                                     JOB_RANKLESS) +
                     [p.gpusim_run, p.crash_program, "none", go], env, p.tmp)
    try:
        job.wait_for_line(r"^ready$", 60)
        proc = wait_for("the daemon lists the process without a rank",
                        registered(control_port, JOB_RANKLESS), 30)
        log("registered: %s" % proc)
        if proc.get("rank", 0) != -1:  # JSON leaves out a rank of 0
            fail("the process was given a rank: %s" % proc)
        live_stacks_without_rank(xtimer, control_port, proc["pid"], os.path.join(p.tmp, "live"))
        open(go, "w").close()
        job.wait(60)
    finally:
        job.kill()

    def report():
        found = glob.glob(os.path.join(dump_root, "crash-*", JOB_RANKLESS, "crash.json"))
        return found and found[0]
    path = wait_for("crash-*/%s/crash.json" % JOB_RANKLESS, report, 30)
    with open(path) as f:
        crash = json.load(f)
    log("crash.json without a rank: %s" % json.dumps(crash)[:600])
    name = "pid-%d.stacks" % proc["pid"]
    if not crash["frames"] or crash["frames"][0]["function"] != "CrashHere":
        fail("crash.json of the process without a rank has no CrashHere frame: %s" % crash)
    if crash["ranks"] != [] or crash["world_size"] != -1 or crash["frame"].split()[0] != "CrashHere":
        fail("crash.json names a rank, or not its frame: %s" % crash)
    if [os.path.basename(f) for f in crash["stacks_files"]] != [name]:
        fail("crash.json's stacks files are not [%s]: %s" % (name, crash["stacks_files"]))


def job_crash(p, xtimer, ports, dump_root, env):
    """Rank 1 of a 2-rank simulator job dies of SIGSEGV in the simulated NCCL's Crash: HangCheck
    (HTTP JSON), the automatic hang dump's summary and `xtimer analyze` of that dump (text and
    JSON, the crash report read from the crash folder beside the dump) show the crashing frame in
    the exited verdict."""
    metrics, control_port = ports
    env = {k: v for k, v in env.items() if k not in ("RANK", "WORLD_SIZE")}
    job = Background("crashjob", p.launch_argv(p.run_dir("node"), metrics, control_port,
                                               JOB_MULTI) +
                     [sys.executable, p.demo_launch, "--nproc", "2", "--crash-step", "1:2",
                      "--grace", "60", "--timeout", "120", "--", p.gpusim_run, p.train_step,
                      "--tp", "2", "--steps", "4", "--hidden", "64", "--seq", "64", "--layers",
                      "1"], env, p.tmp)
    try:
        job.wait_for_line(r"XTIMER_SIM_CRASH: rank 1 crashes", 90)

        def hang_check():
            for v in control(control_port, "HangCheck", {"job": JOB_MULTI}).get("verdicts", []):
                found = [e for e in v.get("evidence", []) if EXITED_IN_CRASH.search(e)]
                if v.get("kind") == "exited" and found:
                    return found[0]
            return None
        evidence = wait_for("HangCheck's exited verdict naming Crash", hang_check, 30)
        log("HangCheck: %s" % evidence)

        def summary():
            for path in glob.glob(os.path.join(dump_root, "hang-*", JOB_MULTI, "hang-summary*")):
                with open(path) as f:
                    text = f.read()
                if EXITED_IN_CRASH.search(text):
                    return os.path.dirname(path)
            return None
        dump = wait_for("the automatic hang dump's summary naming Crash", summary, 30)
        log("hang dump: %s" % dump)
        for flags in ([], ["--json"]):
            done = subprocess.run([xtimer, "analyze", dump] + flags, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
            if done.returncode not in (0, 3) or not EXITED_IN_CRASH.search(done.stdout):
                fail("xtimer analyze %s %s (exit %d) does not name Crash in the exited "
                     "verdict:\n%s" % (dump, " ".join(flags), done.returncode, done.stdout))
        log("xtimer analyze (text and JSON): the exited verdict names Crash")
    finally:
        job.kill()


def main(argv):
    if len(argv) != 9:
        fail(__doc__)
    program = os.path.abspath(argv[7])
    xtimer = os.path.abspath(argv[8])
    p = Paths(argv[:7], __doc__)
    run_dir = p.run_dir("node")
    metrics, control = free_ports(2)
    dump_root = os.path.join(p.tmp, "dumps")
    hook, hook_out = exit_hook(p.tmp)
    env = dict(os.environ)
    env.update({"XTIMER_CONTROL_PORT": str(control), "XTIMER_DUMP_ROOT": dump_root,
                "XTIMER_EXIT_HOOK": hook + " " + hook_out, "RANK": "0", "WORLD_SIZE": "1"})
    try:
        run_mode(p, program, "none", run_dir, metrics, control, env)
        reports = wait_for("crash-*/%s/crash.json under %s" % (JOB, dump_root),
                           lambda: check_report(dump_root, hook_out), 30)
        run_mode(p, program, "before", run_dir, metrics, control, env)
        run_mode(p, program, "after", run_dir, metrics, control, env)
        crashes = select(parse(scrape(metrics)), "xtimer_rank_crashes_total", job=JOB, rank="0",
                         signal="SIGSEGV")
        log("xtimer_rank_crashes_total: %s (%d report folders)" % (crashes, reports))
        if crashes != [({"job": JOB, "rank": "0", "signal": "SIGSEGV"}, 2.0)]:
            fail("want 2 crashes counted (no handler, handler before the hook): %s" % crashes)
        p.crash_program = program
        crash_without_rank(p, xtimer, (metrics, control), dump_root, env)
        job_crash(p, xtimer, (metrics, control), dump_root, env)
    finally:
        stop_daemon(run_dir)
        p.cleanup()
    print("PASS")


if __name__ == "__main__":
    main(sys.argv)
