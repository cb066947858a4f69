# Sourced by the demo scripts: stop_xtimerd PIDFILE stops the xtimerd whose pid the file holds and
# waits (up to 10 s) until it has exited, so its ports are free for whatever runs next.
stop_xtimerd() {
  local pid
  pid=$(cat "$1" 2>/dev/null || true)
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "xtimerd (pid $pid) did not exit within 10 s of SIGTERM" >&2
}
