#!/usr/bin/env python3
"""Peers and identity across users (docs/security.md "Peers and identity", issue 20).

Run as root; the other user is `nobody` (setpriv --reuid 65534 --regid 65534 --clear-groups).
Without root, or where setpriv cannot switch users (a sandbox's user namespace), it says so and
passes without checking.

1. A fake daemon run as nobody on the run directory's socket receives nothing from a root job:
   no byte, no ring fd; the hook says why once. With XTIMER_DAEMON_UID=65534 the same fake does
   get the ring (the check, not a broken fake, made the difference).
3. Over the local control port nobody gets 403 for HangCheck and dumps of root's job, sees only
   its own job in Status, and may HangCheck and dump its own job.
2. An impostor run as nobody that registers as rank 0 of job "victim" before the real job starts,
   and one that comes later, are kept out of root's job: an unprivileged user's label is scoped
   by its uid ("victim@u65534", docs/security.md "Job labels and their owners"). Status,
   /metrics, HangCheck and a history dump of "victim" show the real ranks only, and no
   registration is refused. An impostor job of 2 ranks labelled "victim" whose rank 1 really
   hangs gets its verdict and automatic dump as "victim@u65534"; root's "victim" gets neither.
4. Two unprivileged users, the squatter first: nobody runs job "shared", then uid 1000 runs its
   own "shared". Both run as their own job ("shared@u65534", "shared@u1000") in Status and
   /metrics; uid 1000 sees only its job in Status, HangChecks and dumps it (a folder
   "shared@u1000" of its own, mode 0700); nobody gets 403 for uid 1000's job; no refusal.

Usage: peer_e2e.py LAUNCH XTIMERD LIBXTIMER GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (Background, Paths, control, fail, free_ports, log, parse, scrape,  # noqa: E402
                     select, status)



def as_uid(uid):
    return ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups"]


NOBODY = as_uid(65534)
USER = 1000  # the second unprivileged user (part 4); setpriv needs no passwd entry
OWN_LABEL = "nobodys"  # a job of uid 65534, as its ranks name it
OWN_JOB = OWN_LABEL + "@u65534"  # and as the daemon keeps it (scoped by the owner's uid)
SHARED = "shared"  # the label both unprivileged users give their job in part 4

# Run as nobody: one control call over the local TCP port; prints the HTTP status and the body.
AS_CLIENT = r'''
import json, sys, urllib.error, urllib.request
port, method, body = sys.argv[1], sys.argv[2], sys.argv[3]
req = urllib.request.Request("http://127.0.0.1:%s/HostingService/%s" % (port, method),
                             data=body.encode(), headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
'''
JOB = "victim"
TRAIN = ["--steps", "1000000", "--hidden", "256", "--seq", "256", "--layers", "2"]

FAKE_DAEMON = r'''
import array, json, os, socket, sys
path, report = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(16)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    got, fds = 0, 0
    try:
        while True:
            data, anc, _, _ = c.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += len(payload) // 4
            if not data:
                break
            got += len(data)
            if fds:
                break
    except OSError:
        pass
    with open(report, "a") as f:
        f.write(json.dumps({"bytes": got, "fds": fds}) + "\n")
    c.close()
'''


def can_switch_users():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "not root (or no setpriv)"
    r = subprocess.run(NOBODY + ["true"], capture_output=True, text=True)
    if r.returncode != 0:
        return "setpriv cannot switch to uid 65534 here: " + r.stderr.strip()
    return None


def stage(p, dest):
    """Copies the programs where nobody may run them (the build tree lies under /root)."""
    os.makedirs(dest)
    libdir = os.path.dirname(p.gpusim_run)
    for src in [p.gpusim_run, p.train_step, p.lib, p.demo_launch] + glob.glob(
            os.path.join(libdir, "lib*.so*")):
        shutil.copy(src, dest)
    os.chmod(dest, 0o755)
    for name in os.listdir(dest):
        os.chmod(os.path.join(dest, name), 0o755)
    with open(os.path.join(dest, "fake_daemon.py"), "w") as f:
        f.write(FAKE_DAEMON)
    with open(os.path.join(dest, "as_client.py"), "w") as f:
        f.write(AS_CLIENT)
    return {name: os.path.join(dest, name) for name in os.listdir(dest)}


def rank_env(run_dir, lib, extra):
    env = dict(os.environ)
    for k in ("XTIMER_DAEMON_SOCKET", "XTIMER_JOB_TOKEN", "XTIMER_DAEMON_UID"):
        env.pop(k, None)
    env.update({"LD_PRELOAD": lib, "XTIMER_RUN_DIR": run_dir, "XTIMER_JOB": JOB, "RANK": "0",
                "LOCAL_RANK": "0", "WORLD_SIZE": "1", "XTIMER_HOST": "node"})
    env.update(extra)
    return env


def wait_until(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    fail("%s within %d s" % (what, timeout))


def connections(report):
    try:
        with open(report) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []


def fake_daemon(p, bins):
    """Part 1: the hook hands nothing to a daemon of another uid."""
    run_dir = os.path.join(p.short, "fake")
    os.makedirs(run_dir)
    os.chown(run_dir, 65534, 65534)
    sock, report = os.path.join(run_dir, "xtimerd.sock"), os.path.join(run_dir, "report")
    fake = Background("fake_daemon", NOBODY + [sys.executable, bins["fake_daemon.py"], sock,
                                               report], dict(os.environ), p.tmp)
    try:
        wait_until("the fake daemon listens", lambda: os.path.exists(sock), 20)
        for trusted in (False, True):
            open(report, "w").close()
            os.chown(report, 65534, 65534)  # the fake daemon appends to it
            env = rank_env(run_dir, bins["libxtimer.so"],
                           {"XTIMER_DAEMON_UID": "65534"} if trusted else {})
            name = "job_trusting_nobody" if trusted else "job"
            job = Background(name, [bins["gpusim-run"], bins["train_step"]] + TRAIN, env, p.tmp)
            if trusted:
                wait_until("the fake daemon trusted with XTIMER_DAEMON_UID gets the ring",
                           lambda: any(c["fds"] > 0 for c in connections(report)), 30)
                job.kill()
                continue
            # The hook retries every second: three refused connections, then look.
            wait_until("3 connection attempts", lambda: len(connections(report)) >= 3, 30)
            job.kill()
            got = connections(report)
            if any(c["bytes"] or c["fds"] for c in got):
                fail("the fake daemon of uid 65534 received data from a root job: %s" % got)
            said = [l for l in job.output().splitlines() if "not registering with the daemon" in l]
            if len(said) != 1 or "runs as uid 65534" not in said[0]:
                fail("the hook must say why once, naming uid 65534; it said: %s" % said)
            log("fake daemon as nobody: %d connections, nothing received; the hook said: %s" %
                (len(got), said[0]))
        log("with XTIMER_DAEMON_UID=65534 the same fake daemon got the ring")
    finally:
        fake.kill()


def victim_pids(cp, job=JOB):
    try:
        processes = status(cp)["processes"]
    except OSError:  # the daemon is starting
        return set()
    return {(p["rank"], p["pid"]) for p in processes if p["job"] == job and not p["exited"]}


def refused(mp, cause):
    return sum(v for _, v in select(parse(scrape(mp)), "xtimer_refused_registrations_total",
                                    cause=cause))


def impostor(p, bins):
    """Part 2: nobody cannot take or hide rank 0 of root's job: its label is its own job."""
    run_dir = p.run_dir("node")
    mp, cp = free_ports(2)
    env = dict(os.environ)
    env["XTIMER_DUMP_ROOT"] = os.path.join(p.tmp, "dumps")
    daemon = Background("xtimerd", [p.xtimerd, "--run-dir", run_dir, "--metrics-port", str(mp),
                                    "--control-port", str(cp), "--socket-mode", "0666"],
                        env, p.tmp)
    fake_env = rank_env(run_dir, bins["libxtimer.so"], {})
    first = Background("impostor_first", NOBODY + [bins["gpusim-run"], bins["train_step"]] + TRAIN,
                       fake_env, p.tmp)
    real = later = None
    try:
        wait_until("the impostor registers as rank 0 of its own %s@u65534" % JOB,
                   lambda: (0, first.proc.pid) in victim_pids(cp, JOB + "@u65534"), 60)
        real = Background("real_job", [
            p.launch, "--no-daemon", "--run-dir", run_dir, "--lib", p.lib, "--job", JOB, "--",
            sys.executable, p.demo_launch, "--nproc", "2", "--timeout", "300", "--",
            p.gpusim_run, p.train_step, "--tp", "2"] + TRAIN, env, p.tmp)
        wait_until("root's ranks 0 and 1 register as %s" % JOB,
                   lambda: sorted(r for r, _ in victim_pids(cp)) == [0, 1], 60)
        later = Background("impostor_later",
                           NOBODY + [bins["gpusim-run"], bins["train_step"]] + TRAIN, fake_env,
                           p.tmp)
        wait_until("the later impostor registers as its own %s@u65534" % JOB,
                   lambda: later.proc.pid in {pid for _, pid in victim_pids(cp, JOB + "@u65534")},
                   120)
        for imp in (first, later):
            if imp.proc.poll() is not None:
                fail("a refused process must run on; it exited:\n" + imp.output())
        pids = victim_pids(cp)
        imposters = {first.proc.pid, later.proc.pid}
        if imposters & {pid for _, pid in pids} or sorted(r for r, _ in pids) != [0, 1]:
            fail("Status of %s: %s (impostors %s)" % (JOB, pids, imposters))
        ups = select(parse(scrape(mp)), "xtimer_rank_up", job=JOB)
        if sorted(l["rank"] for l, _ in ups) != ["0", "1"]:
            fail("xtimer_rank_up of %s: %s" % (JOB, ups))
        # HangCheck answers from the live diagnosis's latest pass (one a second).
        real_pids = {pid for _, pid in pids}
        hc = wait_until("HangCheck lists root's ranks only", lambda: (lambda a: a if {
            r["pid"] for r in a.get("ranks", [])} == real_pids else None)(
                control(cp, "HangCheck", {"job": JOB})), 10)
        if hc.get("verdicts"):
            fail("HangCheck shows a verdict: %s" % json.dumps(hc)[:2000])
        d = control(cp, "DumpKernelTrace", {"dump_path": "peer", "history": 100, "jobs": [JOB]},
                    timeout=60)
        files = sorted(os.listdir(os.path.join(env["XTIMER_DUMP_ROOT"], "peer", JOB)))
        timelines = [f for f in files if f.endswith(".timeline")]
        if timelines != ["00000-00002.timeline", "00001-00002.timeline"]:
            fail("dump of %s: %s (%s)" % (JOB, files, d))
        if refused(mp, "identity_owner") != 0:
            fail("no registration should be refused: %d identity_owner" %
                 refused(mp, "identity_owner"))
        log("impostors kept apart as %s@u65534; Status, metrics, HangCheck and the dump of %s "
            "show root's ranks %s only" % (JOB, JOB, sorted(pids)))
        # Fewer busy processes for the parts that follow (the machine may be loaded).
        for imp in (first, later):
            imp.stop(grace=5)
        stalling_impostor(p, bins, run_dir, mp, cp, env["XTIMER_DUMP_ROOT"])
        control_access(p, bins, run_dir, cp, env["XTIMER_DUMP_ROOT"])
        real.stop(grace=5)
        two_users(p, bins, run_dir, mp, cp, env["XTIMER_DUMP_ROOT"])
    finally:
        for b in (later, real, first, daemon):
            if b is not None:
                b.stop(grace=5)


def hang_job_dirs(dump_root):
    """The job folders of the automatic hang dumps: {folder name: [hang-* folders]}."""
    out = {}
    for hang in glob.glob(os.path.join(dump_root, "hang-*")):
        for job in os.listdir(hang):
            if os.path.isdir(os.path.join(hang, job)):
                out.setdefault(job, []).append(os.path.basename(hang))
    return out


def hang_summaries(dump_root, job):
    """The hang summaries of `job`'s automatic dumps, for a failure message."""
    out = []
    for path in sorted(glob.glob(os.path.join(dump_root, "hang-*", job, "hang-summary*.json"))):
        with open(path) as f:
            out.append("%s:\n%s" % (path, f.read()[:6000]))
    return "\n".join(out)


def stalling_impostor(p, bins, run_dir, mp, cp, dump_root):
    """Part 2b: the attack as it was first done: nobody runs a 2-rank job labelled "victim" whose
    rank 1 hangs in a collective (XTIMER_SIM_HANG), beside root's running "victim". The hang is
    real, so the daemon gives a verdict and writes an automatic dump, in nobody's own job
    ("victim@u65534"); root's "victim" gets no verdict (HangCheck, xtimer_hang_verdict and
    xtimer_hang_culprit) and no hang folder."""
    scoped = JOB + "@u65534"
    env = rank_env(run_dir, bins["libxtimer.so"], {"XTIMER_SIM_HANG": "1:30", "TMPDIR": "/tmp"})
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        env.pop(k)
    imp = Background("impostor_hang", NOBODY + [
        sys.executable, bins["launch.py"], "--nproc", "2", "--timeout", "300", "--",
        bins["gpusim-run"], bins["train_step"], "--tp", "2"] + TRAIN, env, p.tmp)
    try:
        wait_until("a verdict in nobody's job %s" % scoped, lambda: control(
            cp, "HangCheck", {"job": scoped}).get("verdicts"), 120)
        wait_until("the automatic dump of %s" % scoped,
                   lambda: scoped in hang_job_dirs(dump_root), 30)
        hc = control(cp, "HangCheck", {"job": JOB})
        if hc.get("verdicts"):
            fail("root's %s has a verdict caused by nobody's hang: %s" % (
                JOB, json.dumps(hc)[:2000]))
        samples = parse(scrape(mp))
        for name in ("xtimer_hang_verdict", "xtimer_hang_culprit"):
            mine = [l for l, v in select(samples, name, job=JOB) if v]
            if mine:
                fail("%s names root's %s: %s" % (name, JOB, mine))
        if JOB in hang_job_dirs(dump_root):
            fail("a hang folder holds root's %s: %s\n%s" % (
                JOB, hang_job_dirs(dump_root), hang_summaries(dump_root, JOB)))
        log("nobody's stalling %s: verdict and dump %s in %s only; root's %s none" % (
            JOB, hang_job_dirs(dump_root)[scoped], scoped, JOB))
    finally:
        imp.stop(grace=5)


def as_nobody(bins, cp, method, body, uid=65534):
    r = subprocess.run(as_uid(uid) + [sys.executable, bins["as_client.py"], str(cp), method,
                                      json.dumps(body)], capture_output=True, text=True,
                       timeout=60)
    code, _, text = r.stdout.partition(" ")
    if not code.isdigit():
        fail("control call as uid %d failed: %s %s" % (uid, r.stdout, r.stderr))
    return int(code), text


def control_access(p, bins, run_dir, cp, dump_root):
    """Part 3: over the local control port nobody may not dump or HangCheck root's job; it may
    its own."""
    env = rank_env(run_dir, bins["libxtimer.so"], {"XTIMER_JOB": OWN_LABEL})
    own = Background("nobodys_job", NOBODY + [bins["gpusim-run"], bins["train_step"]] + TRAIN,
                     env, p.tmp)
    try:
        wait_until("nobody's own job registers", lambda: any(
            q["job"] == OWN_JOB for q in status(cp)["processes"]), 120)
        for method, body in (("HangCheck", {"job": JOB}),
                             ("DumpKernelTrace", {"dump_path": "theft", "history": 10,
                                                  "jobs": [JOB]})):
            code, text = as_nobody(bins, cp, method, body)
            if code != 403 or "uid 65534 may use only the jobs" not in text:
                fail("%s of root's job as nobody: %d %s" % (method, code, text))
        code, text = as_nobody(bins, cp, "Status", {})
        jobs = {q["job"] for q in json.loads(text)["processes"]} if code == 200 else None
        # The impostors of part 2 were nobody's own job (exited now, kept for the grace period).
        nobodys = {OWN_JOB, JOB + "@u65534"}
        if jobs is None or OWN_JOB not in jobs or not jobs <= nobodys:
            fail("Status as nobody lists jobs %s (status %d), want only %s" % (jobs, code, nobodys))
        code, text = as_nobody(bins, cp, "HangCheck", {"job": OWN_JOB})
        if code != 200:
            fail("HangCheck of its own job as nobody: %d %s" % (code, text))
        code, text = as_nobody(bins, cp, "DumpKernelTrace", {"dump_path": "own", "history": 10})
        got = set(os.listdir(os.path.join(dump_root, "own"))) if code == 200 else set()
        if OWN_JOB not in got or not got <= nobodys:
            fail("nobody's dump of its own jobs: %d %s" % (code, text))
        # Each job's dump folder is its user's alone (mode 0700).
        for folder, uid in ((os.path.join(dump_root, "own", OWN_JOB), 65534),
                            (os.path.join(dump_root, "peer", JOB), 0)):
            st = os.stat(folder)
            if st.st_uid != uid or st.st_mode & 0o777 != 0o700:
                fail("%s: uid %d mode %o, want uid %d mode 700" %
                     (folder, st.st_uid, st.st_mode & 0o777, uid))
        if not control(cp, "HangCheck", {"job": JOB}).get("ranks"):
            fail("root's HangCheck of its job lists no rank")
        log("as nobody: HangCheck and dumps of root's job refused (403), Status lists only its "
            "own job, HangCheck and a dump of its own job work; dump folders are 0700, each "
            "owned by its job's user")
    finally:
        own.stop(grace=5)


def two_users(p, bins, run_dir, mp, cp, dump_root):
    """Part 4: a label that nobody took first does not block uid 1000's job of that label."""
    env = rank_env(run_dir, bins["libxtimer.so"], {"XTIMER_JOB": SHARED})
    squatter = Background("shared_squatter", NOBODY + [bins["gpusim-run"], bins["train_step"]] +
                          TRAIN, env, p.tmp)
    real = None
    mine, theirs = SHARED + "@u%d" % USER, SHARED + "@u65534"
    try:
        wait_until("nobody's %s registers first" % SHARED,
                   lambda: squatter.proc.pid in {pid for _, pid in victim_pids(cp, theirs)}, 120)
        real = Background("shared_real", as_uid(USER) + [bins["gpusim-run"], bins["train_step"]] +
                          TRAIN, env, p.tmp)
        wait_until("uid %d's rank 0 registers as %s" % (USER, mine),
                   lambda: victim_pids(cp, mine) == {(0, real.proc.pid)}, 120)
        if victim_pids(cp, theirs) != {(0, squatter.proc.pid)}:
            fail("the squatter's job %s: %s" % (theirs, victim_pids(cp, theirs)))
        for job, pid in ((mine, real.proc.pid), (theirs, squatter.proc.pid)):
            ups = select(parse(scrape(mp)), "xtimer_rank_up", job=job)
            if [(l["rank"], v) for l, v in ups] != [("0", 1.0)]:
                fail("xtimer_rank_up of %s: %s" % (job, ups))
        code, text = as_nobody(bins, cp, "Status", {}, uid=USER)
        jobs = {q["job"] for q in json.loads(text)["processes"]} if code == 200 else None
        if jobs != {mine}:
            fail("Status as uid %d lists jobs %s (status %d), want only %s" %
                 (USER, jobs, code, mine))
        # HangCheck answers from the live diagnosis's latest pass (one a second): the rank that
        # just registered shows from the next pass on.
        def hang_check_as_user():
            code, text = as_nobody(bins, cp, "HangCheck", {"job": mine}, uid=USER)
            ranks = [r["pid"] for r in json.loads(text).get("ranks", [])] if code == 200 else None
            return code, text, ranks
        deadline = time.monotonic() + 10
        code, text, ranks = hang_check_as_user()
        while code == 200 and not ranks and time.monotonic() < deadline:
            time.sleep(0.2)
            code, text, ranks = hang_check_as_user()
        if ranks != [real.proc.pid] or json.loads(text).get("verdicts"):
            fail("HangCheck of %s as uid %d: %d %s" % (mine, USER, code, text[:2000]))
        code, text = as_nobody(bins, cp, "HangCheck", {"job": mine})
        if code != 403:
            fail("HangCheck of uid %d's %s as nobody: %d %s" % (USER, mine, code, text))
        code, text = as_nobody(bins, cp, "DumpKernelTrace", {"dump_path": "shared",
                                                             "history": 10}, uid=USER)
        folder = os.path.join(dump_root, "shared", mine)
        if code != 200 or os.listdir(os.path.join(dump_root, "shared")) != [mine] or \
                os.listdir(folder) != ["00000-00001.timeline"]:
            fail("uid %d's dump: %d %s" % (USER, code, text))
        st = os.stat(folder)
        if st.st_uid != USER or st.st_mode & 0o777 != 0o700:
            fail("%s: uid %d mode %o, want uid %d mode 700" %
                 (folder, st.st_uid, st.st_mode & 0o777, USER))
        if refused(mp, "identity_owner") != 0:
            fail("no registration should be refused: %d identity_owner" %
                 refused(mp, "identity_owner"))
        log("two unprivileged users with one label, the squatter first: %s and %s run apart; "
            "uid %d sees, HangChecks and dumps its own (folder %s, 0700); nothing refused" %
            (theirs, mine, USER, mine))
    finally:
        for b in (real, squatter):
            if b is not None:
                b.stop(grace=5)


def main(argv):
    p = Paths(argv, __doc__)
    why = can_switch_users()
    if why:
        print("SKIP: %s; the checks of this test need root and another uid" % why)
        return 0
    try:
        os.chmod(p.short, 0o755)
        bins = stage(p, os.path.join(p.short, "bin"))
        fake_daemon(p, bins)
        impostor(p, bins)
    finally:
        p.cleanup()
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
