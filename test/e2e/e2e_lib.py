"""Helpers shared by the end-to-end tests: free ports, processes, Prometheus text parsing."""

import glob
import json
import math
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


def log(msg):
    print("e2e: " + msg, flush=True)


LOG_DIRS = []  # directories whose *.log files are printed when a test fails


class Failure(Exception):
    """What fail() raises instead of exiting when FAIL_RAISES is set (a tool that runs many
    scenarios, e.g. tools/fault_campaign, records a failed one and goes on)."""


FAIL_RAISES = False


def fail(msg):
    if FAIL_RAISES:
        raise Failure(msg)
    print("FAIL: " + msg, flush=True)
    for d in LOG_DIRS:
        for root, _, files in os.walk(d):
            for name in sorted(files):
                if name.endswith(".log"):
                    path = os.path.join(root, name)
                    with open(path, errors="replace") as f:
                        print("---- %s (last 40 lines)" % path)
                        print("".join(f.readlines()[-40:]), flush=True)
    sys.exit(1)


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def scrape(port, timeout=30, must=True):
    """The exposition of 127.0.0.1:port/metrics; on failure fails the test, or None if not must.

    The tests check what a scrape says, not how fast it comes (daemon_bench measures that:
    docs/benchmarks.md): beside four busy processes and a 4-rank job on 2 cores, one scrape of
    cluster_recipes' daemon took over 5 s (2026-11-29), so the bound is only against a daemon
    that never answers."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=timeout) as r:
            return r.read().decode()
    except OSError as e:
        if not must:
            return None
        fail("cannot scrape 127.0.0.1:%d/metrics: %s" % (port, e))


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Returns [(name, {label: value}, float)] for every sample of a text exposition."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            fail("unparsable exposition line: %r" % line)
        labels = dict(_LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def select(samples, name, **want):
    return [(l, v) for n, l, v in samples if n == name and all(l.get(k) == w for k, w in want.items())]


def control(port, method, request, timeout=30):
    """The JSON answer of HostingService/<method> on the control port (docs/control.md).

    As with scrape(), the bound is only against a daemon that never answers: in a plain suite run
    (2026-11-29, four tests at once on 2 cores) one Status of cluster_recipes' Slurm daemon took
    over 5 s. Tests of how fast the daemon answers pass their own timeout."""
    req = urllib.request.Request("http://127.0.0.1:%d/HostingService/%s" % (port, method),
                                 data=json.dumps(request).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read().decode())


def status(port):
    return control(port, "Status", {})


def exit_hook(tmp):
    """(command, output prefix): an XTIMER_EXIT_HOOK script in `tmp` that writes each report it
    gets on stdin to OUTPUT.PID, renamed into place so that a test never reads half a file."""
    hook = os.path.join(tmp, "exit_hook.sh")
    with open(hook, "w") as f:
        f.write('#!/bin/sh\ncat > "$1.tmp$$" && mv "$1.tmp$$" "$1.$$"\n')
    os.chmod(hook, 0o700)
    return hook, os.path.join(tmp, "hook-out")


def wait_for(what, ok, timeout):
    """ok()'s first true value, polled every 0.1 s; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ok()
        if got:
            return got
        time.sleep(0.1)
    fail("%s: not within %d s" % (what, timeout))


def wait_ranks(port, want, timeout):
    """Waits until the daemon on `port` has the ranks `want` registered with records flowing."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        try:
            s = status(port)
            seen = sorted(p["rank"] for p in s["processes"] if int(p["records_written"]) > 0)
            if seen == want:
                return s
        except OSError:
            pass
        time.sleep(0.3)
    fail("daemon on :%d: ranks with records %s, expected %s" % (port, seen, want))


def daemon_pid(run_dir):
    try:
        with open(os.path.join(run_dir, "xtimerd.pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def stop_daemon(run_dir, sig=signal.SIGTERM):
    pid = daemon_pid(run_dir)
    if pid is None:
        return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def descendants(pid):
    """The pids of every descendant of `pid` (from /proc/*/stat), children before grandchildren."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


def pyenv_python(version):
    """(path of pyenv's newest CPython `version` ("3.12"), or None; the roots looked in)."""
    roots = [os.environ.get("PYENV_ROOT", ""),
             os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")]
    paths = sorted(p for root in filter(None, roots)
                   for p in glob.glob(os.path.join(root, "versions", version + ".*", "bin",
                                                   "python" + version)))
    return (paths[-1] if paths else None), [r for r in roots if r]


def pythons():
    """The CPythons the Python tests run on: Debian's python3, then pyenv's 3.8, 3.12 and 3.13
    where installed."""
    found = ["/usr/bin/python3"]
    for version in ("3.8", "3.12", "3.13"):
        path, roots = pyenv_python(version)
        if path:
            found.append(path)
        else:
            log("SKIP CPython %s: not installed under %s" % (version, " or ".join(roots)))
    return found


def every_python(versions):
    """Debian's python3 and pyenv's newest CPython of every version in `versions` ("3.8"...):
    a version that is missing fails the test (it is not skipped)."""
    found = ["/usr/bin/python3"]
    for version in versions:
        path, roots = pyenv_python(version)
        if path is None:
            fail("CPython %s is required and not installed under %s (pyenv install %s)" %
                 (version, " or ".join(roots), version))
        found.append(path)
    return found


class Background:
    """A child process whose output is collected in a file and echoed at the end."""

    def __init__(self, name, argv, env, out_dir):
        self.name = name
        self.path = os.path.join(out_dir, name + ".log")
        self.file = open(self.path, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def output(self):
        with open(self.path, "rb") as f:
            return f.read().decode(errors="replace")

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            fail("%s did not finish within %d s:\n%s" % (self.name, timeout, self.output()))

    def kill(self):
        """SIGKILL to the process and every descendant, wherever their process groups are
        (launchers start ranks in groups of their own; they would outlive the test)."""
        if self.proc.poll() is None:
            pids = descendants(self.proc.pid)
            os.killpg(self.proc.pid, signal.SIGKILL)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()

    def stop(self, grace=15):
        """SIGTERM to the process group (a launcher then stops the ranks it started in their own
        process groups), SIGKILL after `grace` seconds."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def wait_for_line(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.output()):
                return
            if self.proc.poll() is not None:
                fail("%s exited (%s) before printing /%s/:\n%s" %
                     (self.name, self.proc.returncode, pattern, self.output()))
            time.sleep(0.1)
        fail("%s did not print /%s/ within %d s:\n%s" % (self.name, pattern, timeout, self.output()))


class Paths:
    """The six programs every end-to-end test takes, and its scratch directories."""

    def __init__(self, argv, doc):
        if len(argv) != 7:
            fail(doc)
        (self.launch, self.xtimerd, self.lib, self.gpusim_run, self.train_step,
         self.demo_launch) = [os.path.abspath(a) for a in argv[1:]]
        self.tmp = tempfile.mkdtemp(prefix="e2e-", dir=os.environ.get("TEST_TMPDIR"))
        # Unix socket paths are limited to 107 bytes: run directories live under /tmp.
        self.short = tempfile.mkdtemp(prefix="xt-", dir="/tmp")
        LOG_DIRS.extend([self.tmp, self.short])
        # Every daemon a test starts gets a dump root of its own unless the test names one: the
        # root default, /var/lib/xtimer/dumps, is outside the sandbox (docs/security.md).
        os.environ.setdefault("XTIMER_DUMP_ROOT", os.path.join(self.tmp, "dumps"))

    def run_dir(self, name):
        return os.path.join(self.short, name)

    def launch_argv(self, run_dir, metrics_port, control_port, job):
        """xtimer-launch with its own daemon on run_dir, up to and including '--'; job None: no
        --job (the launcher derives the label, util/job_identity.h)."""
        return [self.launch, "--run-dir", run_dir, "--metrics-port", str(metrics_port),
                "--control-port", str(control_port), "--lib", self.lib, "--daemon", self.xtimerd
                ] + (["--job", job] if job is not None else []) + ["--"]

    def cleanup(self):
        shutil.rmtree(self.short, ignore_errors=True)


def start_prometheus(port, targets, tmp, rule_files=(), scrape_every=("1s", "1s"), nice=0):
    """A real Prometheus server scraping the daemons on 127.0.0.1:targets every `scrape_every[0]`
    with a timeout of `scrape_every[1]` (default every second), keeping the job label they expose
    (honor_labels, as docs/metrics.md says to configure it), and evaluating the rule files given
    (e.g. deploy/prometheus/xtimer-rules.yml). A `nice` other than 0 starts it under
    `nice -n NICE` (every thread inherits it; a negative one needs root, without which nice
    warns and runs it at the usual priority)."""
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        fail("prometheus is not installed (tools/install-deps.sh installs it)")
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
        if rule_files:
            f.write("rule_files:\n" + "".join("  - '%s'\n" % os.path.abspath(r)
                                             for r in rule_files))
        f.write("scrape_configs:\n  - job_name: xtimer\n"
                "    scrape_interval: %s\n    scrape_timeout: %s\n" % scrape_every +
                "    honor_labels: true\n    static_configs:\n      - targets: [%s]\n" %
                ", ".join("'127.0.0.1:%d'" % t for t in targets))
    argv = [prometheus, "--config.file=" + config,
            "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
            "--web.listen-address=127.0.0.1:%d" % port]
    return Background("prometheus", (["nice", "-n", str(nice)] if nice else []) + argv,
                      os.environ, tmp)


def _prometheus_instant(port, expr, attempts):
    """The `data` of an instant query's answer; fails the test when Prometheus rejects it, or
    does not answer in `attempts` tries of 15 s (a loaded machine may delay one answer)."""
    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(expr))
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=15) as r:
                body = json.load(r)
            break
        except urllib.error.HTTPError as e:
            fail("Prometheus rejected %r: %s" % (expr, e.read().decode(errors="replace")))
        except OSError as e:
            if attempt + 1 == attempts:
                fail("Prometheus did not answer %r (%d tries): %s" % (expr, attempts, e))
    if body.get("status") != "success":
        fail("Prometheus answered %r with %s" % (expr, body))
    return body["data"]


def prometheus_query(port, expr, attempts=3):
    """[(labels, value)] of an instant query whose result is a vector (values as floats: NaN
    and Inf included)."""
    data = _prometheus_instant(port, expr, attempts)
    if data["resultType"] != "vector":
        fail("Prometheus answered %r with a %s, not a vector" % (expr, data["resultType"]))
    return [(r["metric"], float(r["value"][1])) for r in data["result"]]


def true_bus_bandwidths(port, job):
    """{comm: (rules' true bus bandwidth, daemons'), B/s} of `job` now, over the communicators
    on which the daemons report one operation (their xtimer_bus_bandwidth_true_bytes_per_second is per
    operation, the rules' xtimer:comm_true_bus_bandwidth_bytes_per_second per communicator);
    the daemons' figure is the largest of any member, as the rules' is."""
    rules = {l["comm"]: v for l, v in prometheus_query(
        port, 'xtimer:comm_true_bus_bandwidth_bytes_per_second{job="%s"}' % job)}
    daemons = {l["comm"]: v for l, v in prometheus_query(
        port, 'max by (comm) (xtimer_bus_bandwidth_true_bytes_per_second{job="%s"}) and on (comm) '
              '(count by (comm) (count by (comm, op) (xtimer_bus_bandwidth_true_bytes_per_second{job="%s"}))'
              ' == 1)' % (job, job))}
    return {c: (rules[c], daemons[c]) for c in rules.keys() & daemons.keys()}


def check_true_bus_bandwidth(pairs, what, tolerance=0.05):
    """Fails unless `pairs` ({comm: (rules, daemons)}) is not empty and every pair agrees within
    `tolerance` (one formula: bus bytes / transfer time, docs/prometheus-rules.md)."""
    if not pairs:
        fail("%s: no communicator had both the rules' true bus bandwidth and the daemons' "
             "(xtimer:comm_true_bus_bandwidth_bytes_per_second, xtimer_bus_bandwidth_true_bytes_per_second)"
             % what)
    for comm, (rules, daemons) in sorted(pairs.items()):
        log("%s: true bus bandwidth of %s: rules %.2f GB/s, daemons %.2f GB/s" % (
            what, comm, rules / 1e9, daemons / 1e9))
        if abs(rules - daemons) > tolerance * daemons:
            fail("%s: the rules' true bus bandwidth of %s is %.2f GB/s, the daemons' %.2f GB/s "
                 "(they must agree within %.0f%%)" % (what, comm, rules / 1e9, daemons / 1e9,
                                                     100 * tolerance))


def check_rules_finite(port, job=None, seconds=1800):
    """Fails the test if any sample of any series the rules recorded (xtimer:*) for `job` (every
    job: None) in the last `seconds` is NaN or Inf (the rules guard every denominator:
    docs/prometheus-rules.md). Reads the raw samples (a range selector), so a NaN that came and
    went is caught too."""
    expr = '{__name__=~"xtimer:.+"%s}[%ds]' % ("" if job is None else ', job="%s"' % job,
                                               seconds)
    data = _prometheus_instant(port, expr, 3)
    if data["resultType"] != "matrix":
        fail("Prometheus answered %r with a %s, not a matrix" % (expr, data["resultType"]))
    bad, samples = [], 0
    for r in data["result"]:
        values = [float(v) for _, v in r["values"]]
        samples += len(values)
        nonfinite = [v for v in values if not math.isfinite(v)]
        if nonfinite:
            bad.append("%s: %d of %d samples, e.g. %s" % (
                r["metric"], len(nonfinite), len(values), nonfinite[0]))
    if bad:
        fail("%s: %d of %d recorded rule series have NaN or Inf samples:\n  %s" % (
            job or "every job", len(bad), len(data["result"]), "\n  ".join(bad[:20])))
    if not data["result"]:
        fail("%s: the rules recorded no series in %d s" % (job or "every job", seconds))
    log("%s: %d recorded rule series, %d samples, none NaN or Inf" % (
        job or "every job", len(data["result"]), samples))


def dump_http(cp):
    """A history dump of 10 records per rank over HTTP (curl) to 127.0.0.1:cp; its seconds."""
    t0 = time.monotonic()
    r = subprocess.run(["curl", "-sS", "-m", "10", "-d", '{"dump_path": "load", "history": 10}',
                        "http://127.0.0.1:%d/HostingService/DumpKernelTrace" % cp],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0 or '"state":"written"' not in out:
        fail("dump over HTTP failed (curl exit %d): %s" % (r.returncode, out))
    return time.monotonic() - t0


def dump_grpc(xtimer, cp):
    """The same over gRPC (`xtimer dump`); its seconds."""
    t0 = time.monotonic()
    r = subprocess.run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % cp, "--path", "load",
                        "--history", "10", "--timeout", "10"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    out = r.stdout.decode(errors="replace")
    if r.returncode != 0 or "written" not in out:
        fail("dump over gRPC (xtimer dump) failed (exit %d): %s" % (r.returncode, out))
    return time.monotonic() - t0


def rss_mb(pid):
    """The process's resident set (VmRSS), MiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    fail("no VmRSS for pid %d" % pid)
