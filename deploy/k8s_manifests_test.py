#!/usr/bin/env python3
"""Checks the Kubernetes recipe of deploy/k8s/ (docs/deploy.md#kubernetes).

1. Schema: every object of every deploy/k8s/*.yaml against the Kubernetes API schema of the npm
   package kubernetes-models (ServiceMonitor: @kubernetes-models/prometheus-operator), installed
   by tools/install-k8s-models.sh in $XTIMER_K8S_MODELS (default
   /var/cache/xtimer/k8s-models-5.1.0); node runs deploy/k8s/validate/validate.mjs.
2. Consistency, which no schema sees: the Service and the ServiceMonitor select the DaemonSet's
   pods and name its metrics port; the prometheus.io annotations, the container port and the
   daemon's --metrics-port agree; the daemon and the training pods share one hostPath run
   directory, mounted where XTIMER_RUN_DIR and --run-dir say; the training pods run the runtime
   layer's xtimer-launch with --no-daemon; JOB_NAME comes from the Job's job-name label; every
   environment variable the manifests set is documented in docs/environment.md.
3. deploy/k8s/prometheus-scrape.yml: `promtool check config` with its Kubernetes discovery
   replaced by a static target (Debian's Prometheus is built without Kubernetes discovery), and
   its keep rules match the DaemonSet's annotation and label.

Usage: k8s_manifests_test.py VALIDATE_MJS ENVIRONMENT_MD PROMETHEUS_SCRAPE_YML MANIFEST.yaml...
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

FAILURES = []


def check(ok, msg):
    if not ok:
        FAILURES.append(msg)


def load(paths):
    """{kind: [(file, object)]} of every document of the manifests."""
    objects = {}
    for path in paths:
        with open(path) as f:
            for obj in yaml.safe_load_all(f):
                if obj is not None:
                    objects.setdefault(obj["kind"], []).append((os.path.basename(path), obj))
    return objects


def one(objects, kind):
    found = objects.get(kind, [])
    check(len(found) == 1, "expected one %s in deploy/k8s/, found %d" % (kind, len(found)))
    return found[0][1] if found else {}


def validate_schema(validate_mjs, objects):
    models = os.environ.get("XTIMER_K8S_MODELS") or "/var/cache/xtimer/k8s-models-5.1.0"
    if not os.path.isdir(os.path.join(models, "node_modules", "kubernetes-models")):
        FAILURES.append("the Kubernetes schema is not installed in %s: run "
                        "tools/install-k8s-models.sh (or tools/install-deps.sh)" % models)
        return
    if shutil.which("node") is None:
        FAILURES.append("node is missing: install Node.js 20 (tools/install-deps.sh)")
        return
    items = [{"file": f, "object": o} for objs in objects.values() for f, o in objs]
    r = subprocess.run(["node", validate_mjs, models], input=json.dumps(items).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = r.stdout.decode(errors="replace")
    print(out, end="")
    check(r.returncode == 0, "the Kubernetes schema rejects a manifest (above)")
    check(out.count("\nvalid ") + out.startswith("valid ") == len(items),
          "validate.mjs checked %d objects, not the %d of deploy/k8s/" % (out.count("valid "),
                                                                        len(items)))


def containers(obj):
    return obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])


def flag(args, name):
    """The value of --name=V or --name V in an argument list, else None."""
    for i, a in enumerate(args):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(args):
            return args[i + 1]
    return None


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def run_dir_mount(pod_spec, container, what):
    """The mount path of the hostPath volume /run/xtimer in the container, and its host path."""
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    for m in container.get("volumeMounts", []):
        check(m["name"] in volumes, "%s mounts volume %s, which the pod does not define" %
              (what, m["name"]))
        host = volumes.get(m["name"], {}).get("hostPath", {}).get("path")
        if host == "/run/xtimer":
            return m["mountPath"], host
    FAILURES.append("%s mounts no hostPath /run/xtimer (the node's run directory)" % what)
    return None, None


def check_daemonset(ds):
    labels = ds["spec"]["template"]["metadata"].get("labels", {})
    selector = ds["spec"]["selector"]["matchLabels"]
    check(selector.items() <= labels.items(), "the DaemonSet's selector %s does not match its pod "
          "labels %s" % (selector, labels))
    check(ds["spec"]["template"]["spec"].get("hostPID") is True,
          "the DaemonSet must set hostPID: the daemon reads its ranks' /proc by pid")
    c = containers(ds)[0]
    args = c.get("args", [])
    env = env_of(c)
    port = int(flag(args, "--metrics-port") or env.get("XTIMER_METRICS_PORT", {}).get("value")
               or 18889)
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    check(ports.get("metrics") == port, "the DaemonSet's metrics port %s is not the daemon's "
          "--metrics-port %d" % (ports.get("metrics"), port))
    ann = ds["spec"]["template"]["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(port),
          "the DaemonSet's prometheus.io annotations %s do not name port %d" % (ann, port))
    check(flag(args, "--metrics-address") == "0.0.0.0",
          "xtimerd binds /metrics to 127.0.0.1 unless --metrics-address=0.0.0.0: Prometheus "
          "could not scrape the pod")
    mount, _ = run_dir_mount(ds["spec"]["template"]["spec"], c, "the DaemonSet")
    check(flag(args, "--run-dir") == mount, "xtimerd's --run-dir %s is not where the run "
          "directory is mounted (%s)" % (flag(args, "--run-dir"), mount))
    check(c.get("command", [""])[0] == "/opt/xtimer/bin/xtimerd",
          "the DaemonSet does not run the runtime layer's /opt/xtimer/bin/xtimerd")
    return labels, port


def check_monitoring(service, monitor, pod_labels):
    sel = service["spec"]["selector"]
    check(sel.items() <= pod_labels.items(), "the Service selects %s, not the DaemonSet's pods %s"
          % (sel, pod_labels))
    sports = {p["name"]: p for p in service["spec"]["ports"]}
    check(sports.get("metrics", {}).get("targetPort") == "metrics",
          "the Service's port 'metrics' does not target the DaemonSet's port 'metrics'")
    msel = monitor["spec"]["selector"]["matchLabels"]
    check(msel.items() <= service["metadata"].get("labels", {}).items(),
          "the ServiceMonitor selects %s, not the Service's labels" % msel)
    check(service["metadata"].get("namespace") in monitor["spec"].get(
        "namespaceSelector", {}).get("matchNames", []), "the ServiceMonitor does not look in "
          "the Service's namespace")
    for ep in monitor["spec"]["endpoints"]:
        check(ep.get("port") in sports, "the ServiceMonitor scrapes port %r, which the Service "
              "does not have" % ep.get("port"))
        check(ep.get("honorLabels") is True, "the ServiceMonitor must set honorLabels: true "
              "(the training job's `job` label, docs/metrics.md)")


def check_job(job):
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    argv = c.get("command", []) + c.get("args", [])
    check(argv[:1] == ["/opt/xtimer/bin/xtimer-launch"] and "--no-daemon" in argv,
          "the training container must run /opt/xtimer/bin/xtimer-launch --no-daemon "
          "(the DaemonSet runs the daemon): %s" % argv)
    env = env_of(c)
    path = env.get("JOB_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    check(path == "metadata.labels['job-name']", "JOB_NAME must come from the Job's job-name "
          "label (docs/launcher.md), not %r" % path)
    mount, _ = run_dir_mount(pod, c, "the training Job")
    check(env.get("XTIMER_RUN_DIR", {}).get("value") == mount,
          "the training pods' XTIMER_RUN_DIR %r is not where the run directory is mounted (%s)" %
          (env.get("XTIMER_RUN_DIR", {}).get("value"), mount))


def check_env_documented(objects, environment_md):
    with open(environment_md) as f:
        documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", f.read()))
    for objs in objects.values():
        for file, obj in objs:
            for c in containers(obj):
                for name in env_of(c):
                    check(name in documented, "%s sets %s, which docs/environment.md does not "
                          "document" % (file, name))


def check_k8s_scrape(path, pod_labels, port):
    with open(path) as f:
        config = yaml.safe_load(f)
    job = config["scrape_configs"][0]
    check(job.get("honor_labels") is True, "%s: honor_labels must be true" % path)
    keep = {tuple(r["source_labels"]): r["regex"] for r in job["relabel_configs"]
            if r.get("action") == "keep"}
    check(keep.get(("__meta_kubernetes_pod_annotation_prometheus_io_scrape",)) == "true",
          "%s: no keep rule on the prometheus.io/scrape annotation" % path)
    value = keep.get(("__meta_kubernetes_pod_label_app_kubernetes_io_name",))
    check(value == pod_labels.get("app.kubernetes.io/name"), "%s keeps pods labelled %r, the "
          "DaemonSet's are %r" % (path, value, pod_labels.get("app.kubernetes.io/name")))
    # promtool on the same file with the discovery Debian's Prometheus lacks replaced.
    del job["kubernetes_sd_configs"]
    job["static_configs"] = [{"targets": ["127.0.0.1:%d" % port]}]
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    static = os.path.join(tmp, "prometheus-scrape-static.yml")
    with open(static, "w") as f:
        yaml.safe_dump(config, f)
    r = subprocess.run(["promtool", "check", "config", static], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    print(r.stdout.decode(errors="replace"), end="")
    check(r.returncode == 0, "promtool check config rejects %s (above)" % path)


def main(argv):
    if len(argv) < 5:
        print(__doc__)
        return 2
    validate_mjs, environment_md, k8s_scrape = argv[1:4]
    objects = load(argv[4:])
    validate_schema(validate_mjs, objects)
    pod_labels, port = check_daemonset(one(objects, "DaemonSet"))
    check_monitoring(one(objects, "Service"), one(objects, "ServiceMonitor"), pod_labels)
    check_job(one(objects, "Job"))
    check_env_documented(objects, environment_md)
    if shutil.which("promtool") is None:
        FAILURES.append("promtool is missing: tools/install-deps.sh installs Debian's prometheus")
    else:
        check_k8s_scrape(k8s_scrape, pod_labels, port)
    for f in FAILURES:
        print("FAIL: " + f)
    if not FAILURES:
        print("PASS: %d objects" % sum(len(v) for v in objects.values()))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
