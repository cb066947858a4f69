#!/usr/bin/env python3
"""Errors that used to speak library jargon now say what happened and what to do.

  - xtimerd on a metrics port another process holds (prometheus-cpp only said "null context when
    constructing CivetServer"): names the port, says it is in use, by which pid, and the flag;
  - the same for a taken control port;
  - `xtimer dump` against a closed port (gRPC: "failed to connect to all addresses"): asks whether
    xtimerd runs there and how to start it;
  - `xtimer dump` against the metrics port (gRPC on an HTTP/1 server): "is this the control port?";
  - `xtimer dump --job typo`: exit 1 with the daemon's reason (it printed "0 file(s)", exit 0);
  - `xtimer analyze --hosts` of a node that has no rank yet: exit 1 saying so (it blamed --groups);
  - bytes that are neither HTTP/1.1 nor gRPC sent to the control port: the reply and the daemon's
    log say so ("is ... pointed at the control port?");
  - malformed HTTP/1.1 on the control port (docs/control.md): two Content-Length headers from
    real curl get 400, Transfer-Encoding 501, bare-LF lines 400 and a 20 KB header 431 (raw
    sockets), each answer followed by the daemon closing the connection.

Usage: error_messages_e2e.py XTIMERD XTIMER
"""

import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_lib import fail, free_ports, log, scrape  # noqa: E402


def run(argv, timeout=60):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return r.returncode, r.stdout.decode(errors="replace")


def expect(what, text, *needles):
    missing = [n for n in needles if n not in text]
    if missing:
        fail("%s: %s missing from:\n%s" % (what, missing, text))
    log("ok: " + what)


def taken_port(xtimerd, tmp, which):
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    free = free_ports(1)[0]
    ports = {"metrics": (port, free), "control": (free, port)}[which]
    try:
        rc, out = run([xtimerd, "--run-dir", os.path.join(tmp, which), "--metrics-port",
                       str(ports[0]), "--control-port", str(ports[1]), "--once", "1"])
    finally:
        holder.close()
    if rc == 0:
        fail("xtimerd started on a taken %s port:\n%s" % (which, out))
    expect("taken %s port" % which, out, "the %s port %d on 127.0.0.1 is already in use" % (
        which, port), "by pid %d (" % os.getpid(), "--%s-port" % which)


def curl_status(control, *args):
    """Real curl against the control port; returns (HTTP status, body)."""
    rc, out = run(["curl", "-sS", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"] +
                  list(args) + ["http://127.0.0.1:%d/HostingService/Status" % control])
    body, _, code = out.rstrip("\n").rpartition("\n")
    if rc != 0 or not code.isdigit():
        fail("curl failed (rc %d):\n%s" % (rc, out))
    return int(code), body


def raw_http(control, data):
    """Sends raw bytes; returns the whole reply, failing unless the daemon closes the connection
    (recv returns EOF) within 20 s."""
    with socket.create_connection(("127.0.0.1", control), timeout=20) as s:
        s.sendall(data)
        reply = b""
        while True:
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                fail("the control port kept the connection open after %r" % reply[:200])
            if not chunk:
                return reply.decode(errors="replace")
            reply += chunk


def malformed_http(control):
    code, body = curl_status(control, "-H", "Content-Length: 2", "-H", "Content-Length: 2",
                             "-d", "{}")
    if code != 400:
        fail("two Content-Length headers: HTTP %d, expected 400:\n%s" % (code, body))
    expect("two Content-Length headers", body, "more than one Content-Length")
    code, body = curl_status(control, "-H", "Transfer-Encoding: chunked", "-d", "{}")
    if code != 501:
        fail("Transfer-Encoding: HTTP %d, expected 501:\n%s" % (code, body))
    expect("Transfer-Encoding", body, "Content-Length")
    code, body = curl_status(control)  # a good request still works
    if code != 200:
        fail("Status over curl: HTTP %d:\n%s" % (code, body))
    reply = raw_http(control, b"POST /HostingService/Status HTTP/1.1\nHost: x\n"
                              b"Content-Length: 2\n\n{}")
    expect("bare LF", reply, "HTTP/1.1 400", "bare LF", "CRLF", "Connection: close")
    reply = raw_http(control, b"POST /HostingService/Status HTTP/1.1\r\nContent-Length: 2\r\n"
                              b"Content-Length: 2\r\n\r\n{}")
    expect("two Content-Length headers (raw)", reply, "HTTP/1.1 400",
           "more than one Content-Length")
    reply = raw_http(control, b"GET /HostingService/Status HTTP/1.1\r\nX-Pad: " +
                     b"a" * 20000 + b"\r\n\r\n")
    expect("a 20 KB header", reply, "HTTP/1.1 431", "16384")


def main(argv):
    if len(argv) != 3:
        fail(__doc__)
    xtimerd, xtimer = [os.path.abspath(a) for a in argv[1:]]
    tmp = tempfile.mkdtemp(prefix="xt-err-", dir="/tmp")
    # A dump root of the test's own: root's default (/var/lib/xtimer/dumps) may not exist, and the
    # sandbox cannot create it, which would stop xtimerd before the port checks under test.
    os.environ["XTIMER_DUMP_ROOT"] = os.path.join(tmp, "dumps")
    taken_port(xtimerd, tmp, "metrics")
    taken_port(xtimerd, tmp, "control")

    closed = free_ports(1)[0]
    rc, out = run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % closed, "--path", "x", "--count",
                   "1", "--timeout", "5"])
    if rc == 0:
        fail("xtimer dump against a closed port exited 0:\n" + out)
    expect("dump against a closed port", out, "127.0.0.1:%d" % closed,
           "is xtimerd running on that host", "xtimerd --control-port")

    metrics, control = free_ports(2)
    log_file = os.path.join(tmp, "xtimerd.log")
    daemon = subprocess.Popen([xtimerd, "--run-dir", os.path.join(tmp, "up"), "--metrics-port",
                               str(metrics), "--control-port", str(control), "--log-file",
                               log_file])
    try:
        deadline = time.monotonic() + 30
        while scrape(metrics, must=False) is None:
            if time.monotonic() > deadline or daemon.poll() is not None:
                fail("xtimerd did not come up")
            time.sleep(0.2)
        rc, out = run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % metrics, "--path", "x",
                       "--count", "1", "--timeout", "5"])
        if rc == 0:
            fail("xtimer dump against the metrics port exited 0:\n" + out)
        expect("gRPC pointed at the metrics port", out, "is this the control port?")

        # A dump whose --job matches nothing fails with the daemon's reason (it printed
        # "written, 0 file(s)" and exited 0).
        rc, out = run([xtimer, "dump", "--hosts", "127.0.0.1:%d" % control, "--path", "x",
                       "--history", "10", "--job", "typo", "--timeout", "5"])
        if rc != 1:
            fail("xtimer dump --job typo exited %d, not 1:\n%s" % (rc, out))
        expect("dump --job typo", out, "FAILED: no match: ",
               "no process is registered with this daemon: nothing matches")

        # `analyze --hosts` of a node with no job yet says so (it blamed --groups: "describes 4
        # ranks; the job has 0", fault campaign seed 1 runs 42 and 134), exit 1.
        rc, out = run([xtimer, "analyze", "--hosts", "127.0.0.1:%d" % control, "--job", "j",
                       "--groups", "tp2-pp2", "--json"])
        if rc != 1:
            fail("xtimer analyze --hosts of a node without ranks exited %d, not 1:\n%s" % (rc, out))
        expect("analyze --hosts without ranks", out, "no rank of job 'j' on the 1 node(s)")

        with socket.create_connection(("127.0.0.1", control), timeout=10) as s:
            s.sendall(b"\x16\x03\x01hello, not http\r\n\r\n")
            reply = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        expect("non-HTTP bytes to the control port", reply.decode(errors="replace"),
               "400", "pointed at the control port")
        deadline = time.monotonic() + 10
        while True:
            with open(log_file, errors="replace") as f:
                text = f.read()
            if "pointed at the control port" in text or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        expect("the daemon's log about non-HTTP bytes", text, "neither HTTP/1.1 nor gRPC")
        malformed_http(control)
    finally:
        daemon.terminate()
        daemon.wait(30)


if __name__ == "__main__":
    main(sys.argv)
