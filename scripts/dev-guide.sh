#!/usr/bin/env bash
# Printed at the end of `make dev`: where things are and what to try.
# Usage: scripts/dev-guide.sh DEV_DIR WORKER_ADDR ADMIN_ADDR
# (DEV_DIR holds the binaries' NAME.pid and NAME.log; each ADDR is its http.listen.)
set -u
cd "$(dirname "$0")/.."
dev=$1 worker_addr=$2 admin_addr=$3
eval "$(scripts/stack.sh env)"
# Wait for each binary to report ready; say so plainly when one is not. Ready counts only
# while the process of its pid file lives: another process answering on the same port is
# not the binary `make dev` started.
state() {
  local name=$1 addr=$2 pid _
  pid=$(cat "$dev/$name.pid" 2>/dev/null)
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || { echo "NOT RUNNING (see its log)"; return; }
    curl -fsS "http://$addr/readyz" >/dev/null 2>&1 && { echo ready; return; }
    sleep 0.5
  done
  echo "NOT READY (curl http://$addr/readyz, and see its log)"
}
worker=$(state dlq-worker "$worker_addr")
admin=$(state dlq-admin "$admin_addr")
cat <<MSG

The local stack is up.
  Kafka       $KAFKA_BOOTSTRAP_SERVERS   (topics: orders, orders.dlq)
  PostgreSQL  $(echo "$DATABASE_URL" | sed 's/:[^:@]*@/:***@/')
  dlq-worker  http://$worker_addr   $worker   log: $dev/dlq-worker.log
  dlq-admin   http://$admin_addr   $admin   log: $dev/dlq-admin.log
  console     http://$admin_addr/ui/   sign in with the token dev-operator-token
              (dev-viewer-token reads only; dev-admin-token also runs bulk jobs)

Make something fail and watch it:
  make fail        # dead letters on orders.dlq: some redriven after backoff, some parked; prints what to run next

Try:
  curl -s $worker_addr/readyz; echo                        # worker readiness (PostgreSQL, Kafka, routes)
  curl -s -H "Authorization: Bearer dev-viewer-token" $admin_addr/v1/routes; echo
  curl -s -X POST -H "Authorization: Bearer dev-operator-token" $admin_addr/v1/routes/orders/run; echo
  export DLQ_ADMIN_URL=http://$admin_addr DLQ_ADMIN_TOKEN=dev-admin-token
  bin/dlq-admin stats; bin/dlq-admin list --status parked
  bin/dlq-worker audit --config config/worker.example.yaml --topic orders.dlq --group dlq-worker.orders
  make demo        # the whole loop with a failing downstream, ~4 minutes
  make down        # stops both binaries and the stack
MSG
