#!/usr/bin/env python3
"""Makes the README's pictures and its example verdict from one real run.

    tools/readme_images.py [--bin-dir DIR] [--out DIR] [--work DIR]

The diagnosis job (demo/diag_job) runs 8 ranks (tp2-pp2-dp2) on two emulated nodes under
xtimer-launch, one xtimerd each, on the GPU simulator, with rank 2's host sleeping 40 ms before
its launches every step, as a slow data loader does (--host-gap 2:40). While it runs, `xtimer dump` captures 4 s of every rank; then
`xtimer analyze` (its text is printed: the README quotes it), `xtimer timeline` and
`xtimer report` read the dump, and headless Chromium takes two screenshots into --out
(default docs/images):

  report.png  the top of the HTML report of `xtimer report`
  trace.png   100 ms of every rank's GPU stream as Perfetto's own trace processor
              (timeline/perfetto_tp/query.mjs) reads it from trace.pftrace, drawn here as SVG
              (Perfetto's UI does not run offline)

--bin-dir: the optimized build (default: `bazel info -c opt bazel-bin`, built first);
--work: where the run, the dump, the trace and the report stay (default a new /tmp folder);
--version: the one version string. See docs/demo.md, "The README's pictures".
Needs node (tools/install-perfetto-tp.sh) and chromium (tools/install-deps.sh).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
TP_DIR = os.environ.get("XTIMER_PERFETTO_TP", "/var/cache/xtimer/perfetto-tp-v55.3")
FAULT = ["--host-gap", "2:40"]
WINDOW_NS = 100 * 1000 * 1000
COLORS = {"matmul": "#4477aa", "collective": "#ee7733", "p2p": "#228833"}


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_job(bin_dir, work):
    """Runs the job on two emulated nodes, dumps it mid-run; returns the job's dump folder."""
    ports = free_ports(4)
    env = dict(os.environ, XTIMER_DUMP_ROOT=os.path.join(work, "dumps"))
    os.makedirs(env["XTIMER_DUMP_ROOT"], exist_ok=True)
    procs, outs = [], []
    for node in (0, 1):
        out = open(os.path.join(work, "node%d.out" % node), "w")
        outs.append(out.name)
        procs.append(subprocess.Popen(
            [bin_dir + "/launcher/xtimer-launch", "--run-dir", "%s/node%d" % (work, node),
             "--metrics-port", str(ports[2 * node]), "--control-port", str(ports[2 * node + 1]),
             "--job", "demo", "--", REPO + "/demo/launch.py", "--nnodes", "2",
             "--nproc-per-node", "4", "--node-rank", str(node), "--rdzv-dir", work + "/rdzv",
             "--timeout", "300", "--", bin_dir + "/test/gpusim/gpusim-run",
             bin_dir + "/demo/diag_job", "--steps", "400", "--linger", "2"] + FAULT,
            stdout=out, stderr=subprocess.STDOUT, env=env))
    try:
        wait_for(outs[0], "step 50/400", procs)
        hosts = "127.0.0.1:%d,127.0.0.1:%d" % (ports[1], ports[3])
        subprocess.run([bin_dir + "/cli/xtimer", "dump", "--hosts", hosts, "--path", "run1",
                        "--count", "100000", "--duration", "4"], check=True, env=env,
                       stdout=sys.stderr)
        for p in procs:
            if p.wait(timeout=300) != 0:
                sys.exit("readme_images: the job failed; see %s" % " ".join(outs))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for node in (0, 1):
            stop_daemon("%s/node%d/xtimerd.pid" % (work, node))
    return os.path.join(env["XTIMER_DUMP_ROOT"], "run1", "demo")


def wait_for(path, text, procs):
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with open(path) as f:
            if text in f.read():
                return
        if any(p.poll() is not None for p in procs):
            sys.exit("readme_images: the job ended before '%s'; see %s" % (text, path))
        time.sleep(0.2)
    sys.exit("readme_images: no '%s' in %s within 300 s" % (text, path))


def stop_daemon(pidfile):
    try:
        with open(pidfile) as f:
            pid = int(f.read())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)


def device_slices(trace):
    """The GPU streams' slices of a 100 ms window in the middle, as the trace processor reads them."""
    base = ("from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid) "
            "join process p using (upid) where t.name like 'dev %'")
    sql = ["select min(s.ts) as t0, max(s.ts + s.dur) as t1 " + base,
           "select s.ts, s.dur, s.category, s.name, p.name as process " + base]
    out = subprocess.run(["node", REPO + "/timeline/perfetto_tp/query.mjs", TP_DIR, trace] + sql,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    bounds, rows = [json.loads(l)["rows"] for l in out.stdout.decode().splitlines()
                    if l.startswith("{")]
    start = (int(bounds[0]["t0"]) + int(bounds[0]["t1"])) // 2
    return start, [r for r in rows
                   if int(r["ts"]) < start + WINDOW_NS and int(r["ts"]) + r["dur"] > start]


def trace_svg(start, rows):
    """One lane per rank, slices coloured by category, the time axis in ms."""
    ranks = sorted({r["process"] for r in rows}, key=lambda p: int(p.split()[1]))
    left, width, lane, top = 110, 860, 26, 30
    x = lambda ns: left + max(0, min(WINDOW_NS, ns - start)) * width / WINDOW_NS
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="%d" '
             'font-family="sans-serif" font-size="13">' % (top + lane * len(ranks) + 60)]
    for ms in range(0, 101, 10):
        px = left + ms * width / 100
        parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>'
                     '<text x="%.1f" y="20" text-anchor="middle">%d ms</text>'
                     % (px, top - 4, px, top + lane * len(ranks), px, ms))
    for i, rank in enumerate(ranks):
        y = top + i * lane
        parts.append('<text x="8" y="%d">%s</text>' % (y + 17, rank))
        for r in rows:
            if r["process"] != rank:
                continue
            x0, x1 = x(int(r["ts"])), x(int(r["ts"]) + r["dur"])
            parts.append('<rect x="%.2f" y="%d" width="%.2f" height="20" fill="%s"/>'
                         % (x0, y + 3, max(x1 - x0, 0.5), COLORS.get(r["category"], "#999")))
    y = top + lane * len(ranks) + 30
    for j, (cat, color) in enumerate(sorted(COLORS.items())):
        parts.append('<rect x="%d" y="%d" width="14" height="14" fill="%s"/><text x="%d" y="%d">'
                     '%s</text>' % (left + j * 150, y - 12, color, left + j * 150 + 20, y, cat))
    return "\n".join(parts + ["</svg>"])


def screenshot(html, png, size):
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--screenshot=" + png, "--window-size=" + size,
                    "file://" + html], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    kb = os.path.getsize(png) / 1024
    print("readme_images: wrote %s (%.0f KB)" % (png, kb), file=sys.stderr)
    if kb > 200:
        sys.exit("readme_images: %s is over 200 KB" % png)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "images"))
    parser.add_argument("--work")
    with open(os.path.join(REPO, "VERSION")) as f:
        parser.add_argument("--version", action="version", version=f.readline().strip())
    args = parser.parse_args()
    bin_dir = args.bin_dir
    if not bin_dir:
        subprocess.run([REPO + "/tools/dev.sh", "build"], check=True)
        bin_dir = subprocess.run(["bazel", "info", "-c", "opt", "bazel-bin"], cwd=REPO,
                                 stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="xtimer-readme-"))
    os.makedirs(args.out, exist_ok=True)
    dump = run_job(bin_dir, work)
    xtimer = bin_dir + "/cli/xtimer"
    subprocess.run([xtimer, "analyze", dump, "--groups", "tp2-pp2-dp2"], check=True)
    trace = os.path.join(dump, "trace.pftrace")
    subprocess.run([xtimer, "timeline", dump, "-o", trace], check=True, stdout=subprocess.DEVNULL)
    report = os.path.join(work, "report.html")
    subprocess.run([xtimer, "report", dump, "--groups", "tp2-pp2-dp2", "-o", report], check=True,
                   stderr=subprocess.DEVNULL)
    screenshot(report, os.path.join(os.path.abspath(args.out), "report.png"), "1000,1150")
    page = os.path.join(work, "trace.html")
    with open(page, "w") as f:
        f.write("<!doctype html><body style='margin:8px'>%s</body>" % trace_svg(*device_slices(trace)))
    screenshot(page, os.path.join(os.path.abspath(args.out), "trace.png"), "1000,330")
    print("readme_images: run, dump, trace and report in %s" % work, file=sys.stderr)


if __name__ == "__main__":
    main()
