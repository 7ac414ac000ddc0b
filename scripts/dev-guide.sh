#!/usr/bin/env bash
# Printed at the end of `make dev`: where things are and what to try.
set -u
cd "$(dirname "$0")/.."
eval "$(scripts/stack.sh env)"
for u in http://127.0.0.1:9464/readyz http://127.0.0.1:8080/readyz; do
  for _ in $(seq 1 20); do curl -fsS "$u" >/dev/null 2>&1 && break; sleep 0.5; done
done
cat <<MSG

The local stack is up.
  Kafka       $KAFKA_BOOTSTRAP_SERVERS   (topics: orders, orders.dlq)
  PostgreSQL  $(echo "$DATABASE_URL" | sed 's/:[^:@]*@/:***@/')
  dlq-worker  http://127.0.0.1:9464   log: .cache/dev/dlq-worker.log
  dlq-admin   http://127.0.0.1:8080   log: .cache/dev/dlq-admin.log

Try:
  curl -s 127.0.0.1:9464/readyz; echo
  curl -s 127.0.0.1:8080/metrics | head
  eval "\$(scripts/stack.sh env)"; bin/dlq-worker migrate status
  make status
  make down        # stops both binaries and the stack
MSG
