#!/usr/bin/env python3
"""The metrics port keeps answering while local clients try to hold it (issue 9).

  - 100 connections trickle one byte a second for 30 s (each one reconnects when the daemon
    drops it): meanwhile a scrape a second must answer within 1 s, a dump a second over HTTP and
    gRPC (alternating) on the control port must succeed, and the daemon's VmRSS must grow by less
    than 50 MB;
  - 2,000 connections open and send nothing: each must be refused or closed within the request
    timeout (--metrics-request-timeout-ms, default 5000 ms; 3 s of slack for a busy machine), and
    the scrapes a second meanwhile must answer within 1 s; the refusals are counted in
    xtimer_refused_connections_total{port="metrics"}.

Usage: metrics_port_load_e2e.py XTIMERD XTIMER
"""

import errno
import os
import resource
import selectors
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402
from e2e_lib import (Background, daemon_pid, dump_grpc, dump_http, fail, free_ports, log,  # noqa: E402
                     parse, rss_mb, select, stop_daemon)

TIMEOUT_S = 5.0  # the daemon's default --metrics-request-timeout-ms
SLACK_S = 3.0


def timed_scrape(port):
    """(seconds, body) of one GET /metrics with a 1 s budget; body None on failure."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.settimeout(max(0.01, 1.0 - (time.monotonic() - start)))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                s.settimeout(max(0.01, 1.0 - (time.monotonic() - start)))
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError as e:
        return time.monotonic() - start, None, str(e)
    text = data.decode(errors="replace")
    if not text.startswith("HTTP/1.1 200"):
        return time.monotonic() - start, None, text[:200]
    return time.monotonic() - start, text.split("\r\n\r\n", 1)[1], ""


class Scraper(threading.Thread):
    """One scrape a second until stopped; records each one's latency and failures."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop, self.latencies, self.failures, self.last = port, False, [], [], None

    def run(self):
        while not self.stop:
            t0 = time.monotonic()
            dt, body, why = timed_scrape(self.port)
            self.latencies.append(dt)
            if body is None or dt > 1.0:
                self.failures.append("%.3f s: %s" % (dt, why))
            else:
                self.last = body
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))

    def finish(self, what):
        self.stop = True
        self.join(5)
        if not self.latencies:
            fail("%s: no scrape ran" % what)
        log("%s: %d scrapes, max %.3f s, median %.3f s" % (
            what, len(self.latencies), max(self.latencies),
            sorted(self.latencies)[len(self.latencies) // 2]))
        if self.failures:
            fail("%s: %d of %d scrapes failed or took over 1 s: %s" % (
                what, len(self.failures), len(self.latencies), self.failures[:5]))


def trickle(port, pid, xtimer, control_port):
    rss0 = rss_mb(pid)
    head = b"GET /metrics HTTP/1.1\r\nX-Slow: "
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
    sent = [0] * 100
    dropped = 0
    dumps = 0
    rss_max = rss0
    scraper = Scraper(port)
    scraper.start()
    end = time.monotonic() + 30
    while time.monotonic() < end:
        tick = time.monotonic()
        for i in range(100):
            byte = head[sent[i]:sent[i] + 1] or b"a"
            try:
                conns[i].send(byte, socket.MSG_DONTWAIT)
                sent[i] += 1
            except OSError:  # dropped by the daemon (request timeout): come back
                dropped += 1
                conns[i].close()
                conns[i] = socket.create_connection(("127.0.0.1", port))
                sent[i] = 0
        rss_max = max(rss_max, rss_mb(pid))
        dumps += 1  # the control port keeps serving dumps meanwhile (fails the test if not)
        (dump_http(control_port) if dumps % 2 else dump_grpc(xtimer, control_port))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    scraper.finish("100 trickling connections for 30 s")
    log("trickle: %d dumps over HTTP and gRPC meanwhile all succeeded" % dumps)
    for c in conns:
        c.close()
    log("trickle: %d drops seen (the daemon's request timeout), VmRSS %.1f MB -> max %.1f MB" % (
        dropped, rss0, rss_max))
    if dropped < 100:
        fail("the daemon dropped only %d trickling connections in 30 s (timeout %.0f s)" % (
            dropped, TIMEOUT_S))
    if rss_max - rss0 >= 50:
        fail("VmRSS grew by %.1f MB (limit 50)" % (rss_max - rss0))


def idle(port, n=2000):
    sel = selectors.DefaultSelector()
    scraper = Scraper(port)
    scraper.start()
    opened = {}
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        rc = s.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            fail("connect: %s" % os.strerror(rc))
        opened[s] = time.monotonic()
        sel.register(s, selectors.EVENT_READ)
    log("idle: %d connections opened" % n)
    worst = 0.0
    deadline = time.monotonic() + TIMEOUT_S + SLACK_S + 10
    while opened and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""  # reset: refused
            if data:
                fail("an idle connection got data: %r" % data[:100])
            worst = max(worst, time.monotonic() - opened.pop(s))
            sel.unregister(s)
            s.close()
    scraper.finish("%d idle connections" % n)
    if opened:
        fail("%d idle connections still open after %.0f s" % (len(opened), TIMEOUT_S + SLACK_S + 10))
    log("idle: all %d closed, the last %.2f s after it was opened" % (n, worst))
    if worst > TIMEOUT_S + SLACK_S:
        fail("an idle connection stayed open %.2f s (timeout %.0f s)" % (worst, TIMEOUT_S))
    time.sleep(1.5)  # one more scrape after the last close
    samples = parse(scraper.last or "")
    refused = sum(v for _, v in select(samples, "xtimer_refused_connections_total", port="metrics"))
    log("idle: xtimer_refused_connections_total{port=\"metrics\"} = %d" % refused)
    if refused < n:
        fail("only %d refusals counted for %d idle connections" % (refused, n))


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    xtimerd, xtimer = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="xt-", dir="/tmp")  # short: the Unix socket lives there
    e2e_lib.LOG_DIRS.append(tmp)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        fail("this test needs 4096 file descriptors; the hard limit is %d" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 4096), hard))
    metrics_port, control_port = free_ports(2)
    run_dir = os.path.join(tmp, "d")
    daemon = Background("xtimerd", [xtimerd, "--run-dir", run_dir, "--metrics-port",
                                    str(metrics_port), "--control-port", str(control_port),
                                    "--dump-root", os.path.join(tmp, "dumps")],
                        dict(os.environ), tmp)
    try:
        daemon.wait_for_line(r"serving:", 60)
        pid = daemon_pid(run_dir)
        trickle(metrics_port, pid, xtimer, control_port)
        idle(metrics_port)
    finally:
        stop_daemon(run_dir)
        daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    log("PASS")


if __name__ == "__main__":
    main()
