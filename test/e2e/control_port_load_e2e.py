#!/usr/bin/env python3
"""The control port holds against slow and idle local clients (issue 9, docs/control.md).

  - 100 connections trickle an HTTP request one byte a second for 30 s (each one the daemon
    closes is reopened, so 100 always trickle): meanwhile dump requests over HTTP (curl) and over
    gRPC (`xtimer dump`) succeed every second, a scrape a second of the metrics port answers
    within 1 s, and the daemon's VmRSS grows < 50 MB;
  - 2,000 idle connections (1,500 that send nothing, 500 that send the HTTP/2 preface and an
    empty SETTINGS frame, then nothing): each is closed within the idle timeout (plus scheduling
    slack), dumps over HTTP and gRPC succeed meanwhile, and xtimer_refused_connections_total
    counts the closures by cause.

Usage: control_port_load_e2e.py LAUNCH XTIMERD LIB GPUSIM_RUN TRAIN_STEP DEMO_LAUNCH XTIMER
"""

import os
import queue
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import (LOG_DIRS, dump_grpc, dump_http, fail, free_ports, log, parse,  # noqa: E402
                     rss_mb, scrape, select, status)

IDLE_TIMEOUT_S = 5  # the daemon's defaults (daemon/base/flags.h)
REQUEST_TIMEOUT_S = 10
SLACK_S = 4  # the 100 ms deadline tick, plus a busy 2-core machine
TRICKLE = b"POST /HostingService/Status HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def start_daemon(xtimerd, tmp):
    mp, cp = free_ports(2)
    run_dir = tempfile.mkdtemp(prefix="xt-", dir="/tmp")
    LOG_DIRS.append(run_dir)
    logf = open(os.path.join(tmp, "xtimerd.log"), "w")
    proc = subprocess.Popen([xtimerd, "--run-dir", run_dir, "--dump-root",
                             os.path.join(tmp, "dumps"), "--metrics-port", str(mp),
                             "--control-port", str(cp)], stdout=logf, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            status(cp)
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                fail("xtimerd did not answer Status on :%d" % cp)
            time.sleep(0.1)
    return proc, mp, cp, run_dir


def trickle(xtimer, pid, cp, mp):
    base = rss_mb(pid)
    scrapes = []
    conns = {}  # socket -> bytes sent
    reopened = 0
    peak = base
    dumps = []
    t_end = time.monotonic() + 30
    tick = 0
    while time.monotonic() < t_end:
        t_next = time.monotonic() + 1
        while len(conns) < 100:
            conns[socket.create_connection(("127.0.0.1", cp), timeout=5)] = 0
        for s in list(conns):
            try:
                s.send(TRICKLE[conns[s]:conns[s] + 1], socket.MSG_DONTWAIT)
                conns[s] = min(conns[s] + 1, len(TRICKLE) - 3)  # never completes the request
            except OSError:
                s.close()
                del conns[s]
                reopened += 1
        dumps.append(dump_http(cp) if tick % 2 == 0 else dump_grpc(xtimer, cp))
        t0 = time.monotonic()
        scrape(mp, timeout=1)  # the metrics port answers a scrape a second within 1 s meanwhile
        scrapes.append(time.monotonic() - t0)
        tick += 1
        peak = max(peak, rss_mb(pid))
        time.sleep(max(0.0, t_next - time.monotonic()))
    for s in conns:
        s.close()
    log("trickle: 100 connections for 30 s, %d closed by the daemon and reopened; %d dumps "
        "(HTTP and gRPC alternating) all succeeded, slowest %.2f s; VmRSS %.1f -> peak %.1f MB"
        % (reopened, len(dumps), max(dumps), base, peak))
    log("trickle: %d scrapes of /metrics meanwhile, slowest %.3f s" % (len(scrapes), max(scrapes)))
    if max(scrapes) > 1:
        fail("trickle: a scrape took %.2f s (limit 1 s)" % max(scrapes))
    if peak - base >= 50:
        fail("trickle: VmRSS grew %.1f MB (limit 50)" % (peak - base))
    # Each trickler is closed at the latest REQUEST_TIMEOUT_S after connecting: in 30 s, every one
    # of the first 100 was at least once.
    if reopened < 100:
        fail("trickle: only %d trickling connections were closed by the daemon in 30 s" % reopened)


def open_idle(cp, n_raw, n_h2, watcher):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n_raw + n_h2 + 512
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            fail("this test needs %d open files; the hard limit is %d" % (want, hard))
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    opened = 0
    for i in range(n_raw + n_h2):
        s = socket.socket()
        s.settimeout(10)
        s.connect(("127.0.0.1", cp))
        opened_at = time.monotonic()
        if i % 4 == 3 and n_h2 > 0:
            s.sendall(H2_PREFACE)
            n_h2 -= 1
        s.setblocking(False)
        watcher.add(s, opened_at)
        opened += 1
    return opened


class ClosureWatcher(threading.Thread):
    """Watches connections from the moment each is opened and records how long it lived until
    the daemon closed it, so the test's own work (opening 2,000 connections, the dumps) never
    counts as a connection's lifetime on a loaded machine."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sel = selectors.DefaultSelector()
        self.new = queue.Queue()
        self.lifetimes = []
        self.stop = threading.Event()

    def add(self, sock, opened_at):
        self.new.put((sock, opened_at))

    def open_count(self):
        return len(self.sel.get_map()) + self.new.qsize()

    def run(self):
        while not self.stop.is_set():
            while not self.new.empty():
                sock, t = self.new.get()
                self.sel.register(sock, selectors.EVENT_READ, t)
            if not self.sel.get_map():
                time.sleep(0.02)
                continue
            for key, _ in self.sel.select(timeout=0.05):
                try:
                    if key.fileobj.recv(65536):
                        continue  # gRPC's SETTINGS or GOAWAY: not closed yet
                except BlockingIOError:
                    continue
                except OSError:
                    pass  # reset: closed
                self.lifetimes.append(time.monotonic() - key.data)
                self.sel.unregister(key.fileobj)
                key.fileobj.close()

    def finish(self, timeout):
        """Waits until every connection closed or `timeout` s; returns how many are left open."""
        deadline = time.monotonic() + timeout
        while self.open_count() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.stop.set()
        self.join()
        left = len(self.sel.get_map())
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        return left


def idle(xtimer, pid, cp, mp):
    base = rss_mb(pid)
    t0 = time.monotonic()
    watcher = ClosureWatcher()
    watcher.start()
    open_idle(cp, 1500, 500, watcher)
    log("idle: 2,000 connections opened in %.2f s" % (time.monotonic() - t0))
    times = [dump_http(cp), dump_grpc(xtimer, cp), dump_http(cp), dump_grpc(xtimer, cp)]
    peak = rss_mb(pid)
    left = watcher.finish(IDLE_TIMEOUT_S + REQUEST_TIMEOUT_S + 30)
    lifetimes = watcher.lifetimes
    log("idle: dumps meanwhile all succeeded (slowest %.2f s); %d connections closed by the "
        "daemon, longest lived %.2f s, %d left open; VmRSS %.1f -> %.1f MB"
        % (max(times), len(lifetimes), max(lifetimes or [0]), left, base, peak))
    if left:
        fail("idle: %d connections still open %d s after they were opened" % (
            left, IDLE_TIMEOUT_S + REQUEST_TIMEOUT_S + 30))
    if max(lifetimes) > IDLE_TIMEOUT_S + SLACK_S:
        fail("idle: a connection lived %.2f s (idle timeout %d s)" % (max(lifetimes),
                                                                       IDLE_TIMEOUT_S))
    samples = parse(scrape(mp))
    refused = {l["cause"]: v for l, v in select(samples, "xtimer_refused_connections_total",
                                                 port="control")}
    log("idle: xtimer_refused_connections_total{port=\"control\"} by cause: %s" % refused)
    if sum(refused.values()) < 1500:
        fail("idle: the refusal counter says %s, expected >= 1500 closures" % refused)


def main():
    argv = sys.argv
    if len(argv) != 8:
        fail(__doc__)
    xtimerd, xtimer = os.path.abspath(argv[2]), os.path.abspath(argv[7])
    tmp = tempfile.mkdtemp(prefix="e2e-", dir=os.environ.get("TEST_TMPDIR"))
    LOG_DIRS.append(tmp)
    proc, mp, cp, run_dir = start_daemon(xtimerd, tmp)
    try:
        trickle(xtimer, proc.pid, cp, mp)
        idle(xtimer, proc.pid, cp, mp)
        if proc.poll() is not None:
            fail("xtimerd exited during the test")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(run_dir, ignore_errors=True)
    log("PASS")


if __name__ == "__main__":
    main()
