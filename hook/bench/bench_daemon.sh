# hook/bench/bench_daemon.sh, sourced by the hook's benchmarks (overhead.sh, timed_rate.sh) from
# the repository root after `bin` is set to the -c opt bazel-bin: starts a real xtimerd in a fresh
# run directory with its metrics on a free port, stops it and removes the directory on exit, and
# waits (10 s at most) for its socket.
#   start_bench_daemon NAME   sets run_dir, metrics_port and daemon
start_bench_daemon() {
  run_dir=$(mktemp -d "/tmp/xtimer-$1-XXXXXX")
  metrics_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$bin/daemon/xtimerd" --run-dir="$run_dir" --metrics-port="$metrics_port" --control-port=0 \
    >"$run_dir/xtimerd.log" 2>&1 &
  daemon=$!
  trap 'kill $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true; rm -rf "$run_dir"' EXIT
  for _ in $(seq 100); do [[ -S "$run_dir/xtimerd.sock" ]] && break; sleep 0.1; done
}
