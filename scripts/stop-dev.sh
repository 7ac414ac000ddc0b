#!/usr/bin/env bash
# Stops the binaries `make dev` started (one DIR/NAME.pid each) and waits until they have
# exited: a worker finishes its in-flight work, commits and leaves its consumer group
# within its shutdown_grace (30 s in config/worker.example.yaml), which needs Kafka and
# PostgreSQL still up. A binary still running after WAIT seconds (default 45) is killed.
# A pid file whose process is gone or is not that binary (a reused pid) is just removed.
# Usage: scripts/stop-dev.sh DIR [WAIT]
set -u
dir=$1
wait_s=${2:-45}
pids=()
for p in "$dir"/*.pid; do
  [ -f "$p" ] || continue
  pid=$(cat "$p") name=$(basename "$p" .pid)
  rm -f "$p"
  if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$name" && kill -TERM "$pid" 2>/dev/null; then
    pids+=("$pid:$name")
  fi
done
for entry in ${pids[@]+"${pids[@]}"}; do
  pid=${entry%%:*} name=${entry#*:}
  for _ in $(seq 1 $((wait_s * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$name (pid $pid) still running after ${wait_s}s: killing it" >&2
    kill -KILL "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  else
    echo "$name stopped"
  fi
done
