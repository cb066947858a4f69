#!/usr/bin/env python3
"""launch: a small local launcher in the spirit of torchrun, for demo/train_step.

    launch.py --nnodes 2 --nproc-per-node 4 [options] -- PROGRAM [ARGS...]
    launch.py --nproc 8 --nodes 2 [options] -- PROGRAM [ARGS...]

Starts one process per rank with the torchrun environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT), the emulated node id
(XTIMER_SIM_NODE) and a fresh rendezvous directory (XTIMER_DEMO_RENDEZVOUS, removed at the end).
Ranks are split evenly over the nodes in order: node k holds ranks k*P .. k*P+P-1.
Every output line of rank r is prefixed with "[rank r] ". When one rank fails, the others are
terminated after a grace period; the launcher names the failed rank and how it failed (exit status
or signal) and exits with the first failure's status (128+N for signal N), or 0.

The fault options only set XTIMER_SIM_* variables for every rank; the GPU simulator (test/gpusim)
applies them to the rank they name, and a real GPU stack ignores them. The launcher works the same
with or without the simulator. See docs/demo.md.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

PROG = "launch"

# train_step's defaults for the flags that decide how many collectives a rank issues per step.
DEMO_DEFAULTS = {"--pp": 1, "--layers": 4, "--micro-batches": 2}
# train_step creates the world communicator first, then splits TP, PP and DP from it: the TP
# communicator is the second one of the process (index 1 in XTIMER_SIM_HANG=R:N:C).
DEMO_TP_COMM_INDEX = 1


class UsageError(Exception):
    pass


def demo_collectives_per_step(program_args):
    """(all, on the TP communicator): NCCL collectives that every rank of train_step issues per
    step, sends and receives not counted; the same numbers as CollectivesPerStep() in
    train_step.cu."""
    values = dict(DEMO_DEFAULTS)
    i = 0
    while i < len(program_args):
        name, sep, value = program_args[i].partition("=")
        if name in values:
            if not sep:
                if i + 1 >= len(program_args):
                    break
                value = program_args[i + 1]
                i += 1
            try:
                values[name] = int(value)
            except ValueError:
                raise UsageError("cannot read %s %r from the program's arguments" % (name, value))
        i += 1
    pp, layers, micro_batches = values["--pp"], values["--layers"], values["--micro-batches"]
    if pp < 1 or layers % pp != 0:
        raise UsageError("the program's --layers %d is not divisible by --pp %d" % (layers, pp))
    per_step = micro_batches * 8 * (layers // pp) + 2
    return per_step, per_step - 1


def parse_rank_value(text, option, value_type, extra=None):
    """RANK:VALUE, or RANK:VALUE:EXTRA when `extra` names the optional third field."""
    fields = text.split(":")
    try:
        if len(fields) not in ((2, 3) if extra else (2,)):
            raise ValueError
        r = int(fields[0])
        v = value_type(fields[1])
        x = int(fields[2]) if len(fields) == 3 else None
    except ValueError:
        r, v, x = -1, None, None
    if r < 0 or v is None or (x is not None and x < 0):
        raise UsageError("%s expects RANK:%s%s, got %r" %
                         (option, "FACTOR" if value_type is float else "N",
                          "[:%s]" % extra if extra else "", text))
    if value_type is float and not v > 0:
        raise UsageError("%s: factor must be positive in %r" % (option, text))
    if value_type is int and v < 1:
        raise UsageError("%s: count must be >= 1 in %r" % (option, text))
    return r, v, x


def read_version():
    """The one version string, //:VERSION beside demo/ (symlinks resolved, as bazel runs us)."""
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "VERSION")
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError as e:
        return "unknown (cannot read %s: %s)" % (path, e.strerror)


def build_parser():
    p = argparse.ArgumentParser(
        prog="launch.py",
        usage="%(prog)s [OPTIONS] -- PROGRAM [ARGS...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n", 1)[1],
        epilog="""fault knobs (the GPU simulator's variables, docs/gpusim.md):
  --slow-rank R:F          XTIMER_SIM_SLOW_RANKS
  --slow-link R:F          XTIMER_SIM_SLOW_LINK
  --hang R:N[:C]           XTIMER_SIM_HANG
  --nccl-error R:N[:CODE]  XTIMER_SIM_NCCL_ERROR
  --crash R:N              XTIMER_SIM_CRASH
N counts the rank's NCCL collectives, 1-based; sends and receives are not counted. --crash and
--nccl-error count over all of the rank's communicators; --hang counts on each communicator
separately (only on communicator C with :C, C = its creation index in the process, from 0).
The -step forms name a step S (1-based) of demo/train_step instead of N:
  --crash-step R:S, --nccl-error-step R:S
      N = (S-1)*K + 1, the rank's first collective of step S
  --hang-step R:S
      XTIMER_SIM_HANG=R:N:%d with N = (S-1)*(K-1) + 1: the first collective of step S on the
      TP communicator (the second one train_step creates; every collective but the DP
      all-reduce runs there)
K = micro_batches * 8 * layers/pp + 2 is what every train_step rank issues per step (it prints K
at start), read from the program's --pp, --layers and --micro-batches. For another program pass
--collectives-per-step K: then N = (S-1)*K + 1 for all three, counted on any communicator.
Each fault option may be repeated; the entries are joined with ','.

examples:
  launch.py --nnodes 2 --nproc-per-node 4 -- bazel-bin/demo/train_step --tp 2 --pp 2 --steps 5
  launch.py --nproc 8 --nodes 2 --crash-step 3:2 --timeout 60 -- gpusim-run train_step --tp 2 --pp 2
""" % DEMO_TP_COMM_INDEX)
    g = p.add_argument_group("ranks and nodes")
    g.add_argument("--nproc", type=int, metavar="N",
                   help="total number of ranks (default: nnodes * nproc-per-node)")
    g.add_argument("--nproc-per-node", "--ranks-per-node", dest="per_node", type=int, metavar="P",
                   help="ranks per node (default: nproc / nnodes, or 1)")
    g.add_argument("--nnodes", "--nodes", dest="nodes", type=int, metavar="K",
                   help="emulated nodes; XTIMER_SIM_NODE is the node index (default: "
                        "nproc / nproc-per-node, or 1)")
    g.add_argument("--node-rank", type=int, metavar="I",
                   help="start only node I's ranks (as torchrun --node-rank does: run one launcher "
                        "per node, e.g. each under its own xtimer-launch; they must share "
                        "--rdzv-dir). Default: all nodes")
    g.add_argument("--rdzv-dir", metavar="DIR",
                   help="rendezvous directory shared by the ranks (default: a fresh temporary "
                        "directory, removed at the end; required with --node-rank)")
    g.add_argument("--master-addr", default="127.0.0.1", help="MASTER_ADDR (default 127.0.0.1)")
    g.add_argument("--master-port", type=int, default=29500, help="MASTER_PORT (default 29500)")
    g = p.add_argument_group("supervision")
    g.add_argument("--timeout", type=float, default=0, metavar="S",
                   help="kill the whole job after S seconds and exit 124 (default 0: no limit)")
    g.add_argument("--grace", type=float, default=5, metavar="S",
                   help="after a rank fails, seconds the others get to finish before they are "
                        "terminated (SIGTERM, then SIGKILL 3 s later) (default 5)")
    g.add_argument("--no-prefix", action="store_true",
                   help="do not prefix output lines with [rank r]")
    g = p.add_argument_group("fault injection (GPU simulator)")
    for opt, kind, text in [
            ("--slow-rank", "R:F", "rank R's kernels and GEMMs take F times longer"),
            ("--slow-link", "R:F", "communicators that contain rank R have F times less "
                                   "bandwidth"),
            ("--hang", "R:N[:C]", "rank R blocks forever at its N-th collective on a "
                                  "communicator (a true hang for its peers)"),
            ("--nccl-error", "R:N[:CODE]", "rank R's N-th collective returns an NCCL error "
                                           "(ncclSystemError, or CODE)"),
            ("--crash", "R:N", "rank R dies of SIGSEGV at its N-th collective"),
            ("--hang-step", "R:S", "rank R hangs at its first TP collective of step S"),
            ("--nccl-error-step", "R:S", "--nccl-error at rank R's first collective of step S"),
            ("--crash-step", "R:S", "--crash at rank R's first collective of step S")]:
        g.add_argument(opt, action="append", default=[], metavar=kind, help=text)
    g.add_argument("--collectives-per-step", type=int, metavar="K",
                   help="collectives per step for the -step options, for programs other than "
                        "train_step")
    p.add_argument("--version", action="version", version=read_version(),
                   help="print the version and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def parse_args(argv):
    parser = build_parser()
    if "--" in argv:
        cut = argv.index("--")
        args = parser.parse_args(argv[:cut])
        if args.command:
            parser.error("unexpected arguments before '--': %s" % " ".join(args.command))
        args.command = argv[cut + 1:]
    else:
        args = parser.parse_args(argv)
    if not args.command:
        parser.error("no PROGRAM given (put it after '--')")
    try:
        finish_args(args)
    except UsageError as e:
        parser.error(str(e))
    return args


def finish_args(args):
    if args.nodes is None:
        both = args.nproc is not None and args.per_node is not None
        if both and args.per_node > 0 and args.nproc % args.per_node != 0:
            raise UsageError("--nproc %d is not a multiple of --nproc-per-node %d" %
                             (args.nproc, args.per_node))
        args.nodes = args.nproc // args.per_node if both and args.per_node > 0 else 1
    if args.nodes < 1:
        raise UsageError("--nnodes must be >= 1")
    if args.nproc is None and args.per_node is None:
        args.per_node = 1
    if args.nproc is None:
        args.nproc = args.nodes * args.per_node
    if args.per_node is None:
        if args.nproc % args.nodes != 0:
            raise UsageError("--nproc %d is not divisible by --nnodes %d" % (args.nproc, args.nodes))
        args.per_node = args.nproc // args.nodes
    if args.nproc < 1 or args.per_node < 1:
        raise UsageError("--nproc and --nproc-per-node must be >= 1")
    if args.nproc != args.nodes * args.per_node:
        raise UsageError("--nproc %d != --nnodes %d * --nproc-per-node %d" %
                         (args.nproc, args.nodes, args.per_node))
    if args.timeout < 0 or args.grace < 0:
        raise UsageError("--timeout and --grace must not be negative")
    if args.node_rank is not None:
        if not 0 <= args.node_rank < args.nodes:
            raise UsageError("--node-rank %d is not in [0, %d)" % (args.node_rank, args.nodes))
        if not args.rdzv_dir:
            raise UsageError("--node-rank needs --rdzv-dir (a directory shared by every node's "
                             "launcher)")

    knobs = {}

    def add(var, rank, value):
        if rank >= args.nproc:
            raise UsageError("rank %d in a fault option is not below --nproc %d" % (rank, args.nproc))
        knobs.setdefault(var, []).append("%d:%s" % (rank, value))

    for opt, var, vtype, extra in [("slow_rank", "XTIMER_SIM_SLOW_RANKS", float, None),
                                   ("slow_link", "XTIMER_SIM_SLOW_LINK", float, None),
                                   ("hang", "XTIMER_SIM_HANG", int, "C"),
                                   ("nccl_error", "XTIMER_SIM_NCCL_ERROR", int, "CODE"),
                                   ("crash", "XTIMER_SIM_CRASH", int, None)]:
        for text in getattr(args, opt):
            r, v, x = parse_rank_value(text, "--" + opt.replace("_", "-"), vtype, extra)
            value = ("%g" % v) if vtype is float else str(v)
            add(var, r, value if x is None else "%s:%d" % (value, x))
    if args.collectives_per_step is not None and args.collectives_per_step < 1:
        raise UsageError("--collectives-per-step must be >= 1")
    for opt, var in [("hang_step", "XTIMER_SIM_HANG"), ("nccl_error_step", "XTIMER_SIM_NCCL_ERROR"),
                     ("crash_step", "XTIMER_SIM_CRASH")]:
        for text in getattr(args, opt):
            r, step, _ = parse_rank_value(text, "--" + opt.replace("_", "-"), int)
            if args.collectives_per_step:
                add(var, r, (step - 1) * args.collectives_per_step + 1)
                continue
            per_step, tp_per_step = demo_collectives_per_step(args.command[1:])
            if opt == "hang_step":
                add(var, r, "%d:%d" % ((step - 1) * tp_per_step + 1, DEMO_TP_COMM_INDEX))
            else:
                add(var, r, (step - 1) * per_step + 1)
    args.knobs = {var: ",".join(v) for var, v in knobs.items()}


class Output:
    """Copies a child's stream to ours line by line with a prefix; one lock keeps lines whole."""

    lock = threading.Lock()

    def __init__(self, pipe, out, prefix):
        self.thread = threading.Thread(target=self._run, args=(pipe, out, prefix), daemon=True)
        self.thread.start()

    @classmethod
    def _run(cls, pipe, out, prefix):
        with pipe:
            for line in iter(pipe.readline, b""):
                if not line.endswith(b"\n"):
                    line += b"\n"
                with cls.lock:
                    out.write(prefix + line)
                    out.flush()


def say(msg):
    with Output.lock:
        sys.stderr.write("%s: %s\n" % (PROG, msg))
        sys.stderr.flush()


def describe(code):
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        return "was killed by %s (signal %d)" % (name, -code)
    return "exited with status %d" % code


def exit_status(code):
    return 128 - code if code < 0 else code


def signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Job:
    def __init__(self, args):
        self.args = args
        self.procs = []  # (rank, node, Popen)
        self.outputs = []
        self.rdzv = None
        self.own_rdzv = False

    def start(self):
        a = self.args
        if a.rdzv_dir:
            os.makedirs(a.rdzv_dir, exist_ok=True)
            self.rdzv = a.rdzv_dir
        else:
            self.rdzv = tempfile.mkdtemp(prefix="xtimer-demo-rdzv-")
            self.own_rdzv = True
        faults = "".join("; %s=%s" % kv for kv in sorted(a.knobs.items()))
        which = "" if a.node_rank is None else " (node %d here)" % a.node_rank
        say("starting %d ranks on %d node(s), %d per node%s; rendezvous %s%s" %
            (a.nproc, a.nodes, a.per_node, which, self.rdzv, faults))
        for rank in range(a.nproc):
            node, local = divmod(rank, a.per_node)
            if a.node_rank is not None and node != a.node_rank:
                continue
            env = dict(os.environ)
            env.update({
                "RANK": str(rank),
                "LOCAL_RANK": str(local),
                "WORLD_SIZE": str(a.nproc),
                "LOCAL_WORLD_SIZE": str(a.per_node),
                "GROUP_RANK": str(node),
                "NODE_RANK": str(node),
                "MASTER_ADDR": a.master_addr,
                "MASTER_PORT": str(a.master_port),
                "XTIMER_SIM_NODE": str(node),
                "XTIMER_DEMO_RENDEZVOUS": self.rdzv,
            })
            env.update(a.knobs)
            try:
                proc = subprocess.Popen(a.command, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)
            except OSError as e:
                say("cannot start rank %d: %s: %s" % (rank, a.command[0], e.strerror))
                self.kill_all(signal.SIGKILL)
                return False
            self.procs.append((rank, node, proc))
            prefix = b"" if a.no_prefix else ("[rank %d] " % rank).encode()
            self.outputs.append(Output(proc.stdout, sys.stdout.buffer, prefix))
            self.outputs.append(Output(proc.stderr, sys.stderr.buffer, prefix))
        return True

    def running(self):
        return [(r, n, p) for r, n, p in self.procs if p.poll() is None]

    def kill_all(self, sig):
        for _, _, p in self.running():
            signal_group(p, sig)

    def stop_all(self):
        """SIGTERM every running rank, SIGKILL what is left 3 s later."""
        self.kill_all(signal.SIGTERM)
        deadline = time.monotonic() + 3
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.kill_all(signal.SIGKILL)
        for _, _, p in self.procs:
            p.wait()

    def supervise(self):
        a = self.args
        start = time.monotonic()
        first_failure = None  # (rank, code)
        reported = set()
        stop_at = None
        while True:
            for rank, node, p in self.procs:
                code = p.poll()
                if code is None or rank in reported:
                    continue
                reported.add(rank)
                if code != 0 and first_failure is None:
                    first_failure = (rank, code)
                    say("rank %d (node %d, pid %d) %s" % (rank, node, p.pid, describe(code)))
                    if self.running():
                        say("terminating the other ranks in %g s" % a.grace)
                    stop_at = time.monotonic() + a.grace
                elif code != 0:
                    say("rank %d (node %d, pid %d) %s" % (rank, node, p.pid, describe(code)))
            alive = self.running()
            if not alive:
                break
            now = time.monotonic()
            if a.timeout and now - start > a.timeout:
                say("timeout: the job ran longer than %g s; ranks still running: %s; killing them" %
                    (a.timeout, " ".join(str(r) for r, _, _ in alive)))
                self.stop_all()
                self.finish_output()
                return 124
            if stop_at is not None and now >= stop_at:
                say("terminating ranks %s after rank %d failed" %
                    (" ".join(str(r) for r, _, _ in alive), first_failure[0]))
                self.stop_all()
                break
            time.sleep(0.05)
        self.finish_output()
        if first_failure is not None:
            rank, code = first_failure
            say("job failed: rank %d %s (first failure); exit status %d" %
                (rank, describe(code), exit_status(code)))
            return exit_status(code)
        say("all %d ranks exited 0 in %.1f s" % (len(self.procs), time.monotonic() - start))
        return 0

    def finish_output(self):
        for o in self.outputs:
            o.thread.join(timeout=5)

    def cleanup(self):
        if self.rdzv and self.own_rdzv:
            shutil.rmtree(self.rdzv, ignore_errors=True)


def main(argv):
    args = parse_args(argv)
    job = Job(args)

    def on_signal(signum, _frame):
        say("received %s; stopping all ranks" % signal.Signals(signum).name)
        job.stop_all()
        job.finish_output()
        job.cleanup()
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        if not job.start():
            return 127
        return job.supervise()
    finally:
        job.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
