#!/usr/bin/env bash
# Printed at the end of `make dev`: where things are and what to try.
set -u
cd "$(dirname "$0")/.."
eval "$(scripts/stack.sh env)"
# Wait for both binaries to report ready; say so plainly when one is not.
state() {
  local _
  for _ in $(seq 1 30); do curl -fsS "http://$1/readyz" >/dev/null 2>&1 && { echo ready; return; }; sleep 0.5; done
  echo "NOT READY (curl http://$1/readyz, and see its log)"
}
worker=$(state 127.0.0.1:9464)
admin=$(state 127.0.0.1:8080)
cat <<MSG

The local stack is up.
  Kafka       $KAFKA_BOOTSTRAP_SERVERS   (topics: orders, orders.dlq)
  PostgreSQL  $(echo "$DATABASE_URL" | sed 's/:[^:@]*@/:***@/')
  dlq-worker  http://127.0.0.1:9464   $worker   log: .cache/dev/dlq-worker.log
  dlq-admin   http://127.0.0.1:8080   $admin   log: .cache/dev/dlq-admin.log
  console     http://127.0.0.1:8080/ui/   sign in with the token dev-operator-token
              (dev-viewer-token reads only; dev-admin-token also runs bulk jobs)

Make something fail and watch it:
  make fail        # dead letters on orders.dlq: some redriven after backoff, some parked; prints what to run next

Try:
  curl -s 127.0.0.1:9464/readyz; echo                        # worker readiness (PostgreSQL, Kafka, routes)
  curl -s -H "Authorization: Bearer dev-viewer-token" 127.0.0.1:8080/v1/routes; echo
  curl -s -X POST -H "Authorization: Bearer dev-operator-token" 127.0.0.1:8080/v1/routes/orders/run; echo
  export DLQ_ADMIN_URL=http://127.0.0.1:8080 DLQ_ADMIN_TOKEN=dev-admin-token
  bin/dlq-admin stats; bin/dlq-admin list --status parked
  bin/dlq-worker audit --config config/worker.example.yaml --topic orders.dlq --group dlq-worker.orders
  make demo        # the whole loop with a failing downstream, ~4 minutes
  make down        # stops both binaries and the stack
MSG
