#!/usr/bin/env python3
"""The container image of docker/ for real (docs/deploy.md#the-container-image), with podman.

1. The two Debian bases (docker/build-base.sh: debootstrap + podman import; kept once built).
2. `podman build` of docker/Containerfile from the source tree, the host's /usr/local/cuda
   mounted read-only and a Bazel disk cache mounted into the builder
   ($XTIMER_CONTAINER_BAZEL_CACHE, default /var/cache/xtimer/container-bazel-cache), so that only
   the first build on a machine compiles everything. Its seconds are printed. The untagged
   images left behind (the builder stage, the previous test image) are pruned.
3. The runtime layer: /opt/xtimer/bin/{xtimerd,xtimer-launch,xtimer} run (--version) in the
   image, and /opt/xtimer/lib holds libxtimer.so.
4. `podman run --network host` of the image's default command (the demo on the GPU simulator)
   with free ports: the host scrapes the container's /metrics and must see ranks 0-3 of job
   xtimer-demo up.

Never skips: the image is part of what every machine that runs the suite proves. Without podman,
runc or debootstrap (tools/install-deps.sh installs them), or where podman cannot run a container,
it fails and says so.
Usage: image_test.py CONTAINERFILE PODMAN_SH BUILD_BASE_SH E2E_LIB_DIR
"""

import os
import shutil
import subprocess
import sys
import time

IMAGE = "localhost/xtimer:test"
RUNTIME_BASE = "localhost/xtimer-runtime-base:bookworm"


def main(argv):
    if len(argv) != 5:
        print(__doc__)
        return 2
    containerfile, podman_sh, build_base = [os.path.realpath(a) for a in argv[1:4]]
    sys.path.insert(0, argv[4])
    from e2e_lib import fail, free_ports, log, parse, scrape  # noqa: E402
    podman = [podman_sh]
    repo = os.path.dirname(os.path.dirname(containerfile))  # runfiles link to the source tree

    def run(args, timeout, what):
        t0 = time.monotonic()
        r = subprocess.run(podman + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            fail("%s failed (exit %d):\n%s" % (what, r.returncode, out[-6000:]))
        return out, time.monotonic() - t0

    # 1. The tools, then the bases (root, Debian's mirror), then one container of the base.
    runtime = os.environ.get("XTIMER_PODMAN_RUNTIME", "/usr/sbin/runc")
    missing = [t for t in ("podman", "debootstrap") if shutil.which(t) is None]
    missing += [] if os.access(runtime, os.X_OK) else [runtime]
    if missing:
        fail("%s missing: tools/install-deps.sh installs podman, runc and debootstrap "
             "(the container image is tested on every machine that runs the suite)"
             % ", ".join(missing))
    t0 = time.monotonic()
    r = subprocess.run([build_base], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        fail("docker/build-base.sh failed:\n%s" % r.stdout.decode(errors="replace")[-4000:])
    log("docker/build-base.sh: %.0f s (the bases are kept once built)" % (time.monotonic() - t0))
    run(["run", "--rm", RUNTIME_BASE, "true"], 120,
        "podman run of %s (podman cannot run a container here: see docs/deploy.md, "
        "'Podman here')" % RUNTIME_BASE)

    # 2. The image.
    cache = os.environ.get("XTIMER_CONTAINER_BAZEL_CACHE",
                           "/var/cache/xtimer/container-bazel-cache")
    os.makedirs(cache, exist_ok=True)
    _, seconds = run(["build", "-f", containerfile, "--volume", "/usr/local/cuda:/usr/local/cuda:ro",
                      "--volume", "%s:/bazel-cache" % cache, "-t", IMAGE, repo], 3000,
                     "podman build of docker/Containerfile")
    log("podman build: %.0f s (Bazel disk cache %s)" % (seconds, cache))
    # The builder stage and the image this tag held before stay behind untagged: remove them.
    run(["image", "prune", "-f", "--filter", "label=org.xtimer.build=1"], 300,
        "podman image prune of the stale xtimer images")

    # 3. The runtime layer's programs run in the image.
    for prog in ("xtimerd", "xtimer-launch", "xtimer"):
        out, _ = run(["run", "--rm", IMAGE, "/opt/xtimer/bin/" + prog, "--version"], 120,
                     prog + " --version in the image")
        log("%s --version: %s" % (prog, out.strip().splitlines()[-1]))
    run(["run", "--rm", IMAGE, "test", "-f", "/opt/xtimer/lib/libxtimer.so"], 120,
        "/opt/xtimer/lib/libxtimer.so in the image")

    # 4. The default command, scraped from the host.
    metrics, control = free_ports(2)
    name = "xtimer-image-test-%d" % os.getpid()
    run(["run", "-d", "--name", name, "-e", "XTIMER_METRICS_PORT=%d" % metrics,
         "-e", "XTIMER_CONTROL_PORT=%d" % control, "-e", "XTIMER_DEMO_STEPS=100000", IMAGE],
        120, "podman run of the demo")
    try:
        deadline, ranks = time.monotonic() + 300, set()
        while time.monotonic() < deadline and ranks != {0, 1, 2, 3}:
            text = scrape(metrics, must=False) or ""
            ranks = {int(l["rank"]) for n, l, v in parse(text)
                     if n == "xtimer_rank_up" and l.get("job") == "xtimer-demo" and v == 1}
            time.sleep(0.5)
        if ranks != {0, 1, 2, 3}:
            logs = subprocess.run(podman + ["logs", name], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT).stdout.decode(errors="replace")
            fail("the container's /metrics on 127.0.0.1:%d shows ranks %s of job xtimer-demo "
                 "up, expected 0-3; container log:\n%s" % (metrics, sorted(ranks), logs[-4000:]))
        log("the host scraped ranks 0-3 of job xtimer-demo from the container's :%d/metrics"
            % metrics)
    finally:
        subprocess.run(podman + ["rm", "-f", "-t", "2", name], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
