#!/usr/bin/env bash
# The local stack: a real single-node Apache Kafka (KRaft), a real PostgreSQL 15 and a
# real Confluent-compatible Schema Registry (Apicurio Registry), all on loopback, all
# living in .cache/ (git-ignored) or DLQ_CACHE_DIR; ports DLQ_PG_PORT, DLQ_KAFKA_PORT,
# DLQ_KAFKA_CONTROLLER_PORT and DLQ_SCHEMA_REGISTRY_PORT.
#
#   scripts/stack.sh up      start what is not running (installs what is missing)
#   scripts/stack.sh install install what is missing (PostgreSQL, Java, the Kafka jars), start nothing
#   scripts/stack.sh down    stop what this script started, nothing else
#   scripts/stack.sh status  say what runs
#   scripts/stack.sh env     print the export lines for the tests and binaries
#   scripts/stack.sh browser install Chromium for the console's browser tests when missing
#   scripts/stack.sh need COMMAND:PACKAGE...   install each Debian package whose command is missing
#   scripts/stack.sh schema-registry-stop / schema-registry-start   stop or start only the registry
#
# When KAFKA_BOOTSTRAP_SERVERS, DATABASE_URL or SCHEMA_REGISTRY_URL is already set, that
# service is taken as given and nothing is started for it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="${DLQ_CACHE_DIR:-$ROOT/.cache}"
PG_PORT="${DLQ_PG_PORT:-55432}"
KAFKA_PORT="${DLQ_KAFKA_PORT:-59092}"
KAFKA_CONTROLLER_PORT="${DLQ_KAFKA_CONTROLLER_PORT:-59093}"
SR_PORT="${DLQ_SCHEMA_REGISTRY_PORT:-59081}"
PG_DIR="$CACHE/pg"
KAFKA_DIR="$CACHE/kafka"
SR_DIR="$CACHE/schema-registry"
PG_DB=dlq
PG_USER=dlq
PG_PASSWORD=dlq

log() { printf 'stack: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

default_kafka() { echo "127.0.0.1:$KAFKA_PORT"; }
default_sr() { echo "http://127.0.0.1:$SR_PORT/apis/ccompat/v7"; }
default_pg() { echo "postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable"; }

# ---------------------------------------------------------------- installs
apt_updated=
apt_install() {
  [ "$(id -u)" = 0 ] || die "missing $*; install it (Debian: apt-get install $*)"
  if [ -z "$apt_updated" ]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -o DPkg::Lock::Timeout=600 -qq >/dev/null
    apt_updated=1
  fi
  log "apt-get install $*"
  # Another install may hold the lock for a while (a browser is large): wait for it.
  DEBIAN_FRONTEND=noninteractive apt-get install -o DPkg::Lock::Timeout=600 -y -qq "$@" >/dev/null
}

pg_bindir() {
  local d
  for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    [ -x "$d/postgres" ] && { echo "$d"; return 0; }
  done
  return 1
}

ensure_pg_binaries() {
  pg_bindir >/dev/null || apt_install postgresql-15 || apt_install postgresql
  pg_bindir >/dev/null || die "PostgreSQL server binaries not found"
  command -v psql >/dev/null || apt_install postgresql-client
}

# need musl-gcc:musl-tools promtool:prometheus ...: the build and test tools beside the stack.
need() {
  local spec
  for spec in "$@"; do
    command -v "${spec%%:*}" >/dev/null || apt_install "${spec##*:}"
  done
}

ensure_java() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
}

# The console's tests drive a real headless Chromium (Debian's package).
ensure_chromium() {
  command -v chromium >/dev/null || apt_install chromium
  command -v chromium >/dev/null || die "chromium not found after installing it"
}

# ---------------------------------------------------------------- PostgreSQL
# PostgreSQL refuses to run as root: as root the cluster belongs to the postgres user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_running() {
  local bin; bin=$(pg_bindir) || return 1
  [ -f "$PG_DIR/data/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1
}

pg_up() {
  if [ -n "${DATABASE_URL:-}" ]; then log "PostgreSQL: using DATABASE_URL"; return; fi
  ensure_pg_binaries
  local bin; bin=$(pg_bindir)
  mkdir -p "$PG_DIR/sock"
  [ "$(id -u)" = 0 ] && chown -R postgres: "$PG_DIR"
  if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
    log "PostgreSQL: initdb in $PG_DIR/data"
    as_pg "$bin/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --no-locale >"$PG_DIR/initdb.log" 2>&1 \
      || { cat "$PG_DIR/initdb.log" >&2; die "initdb failed"; }
  fi
  if pg_running; then
    log "PostgreSQL: already running on 127.0.0.1:$PG_PORT"
  else
    log "PostgreSQL: starting on 127.0.0.1:$PG_PORT"
    # Durability settings stay at their defaults: the tests must see real commits. The
    # default max_wal_size (1 GB) made parking a large backlog checkpoint every ~9 s, as
    # PostgreSQL's own log warned; 4 GB is what it asks of any write-heavy server.
    as_pg "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start \
      -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_DIR/sock -c max_connections=300 -c max_wal_size=4GB" >/dev/null \
      || { tail -20 "$PG_DIR/server.log" >&2; die "PostgreSQL did not start"; }
  fi
  local i
  for i in $(seq 1 60); do
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.5
  done
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || die "PostgreSQL does not accept connections"
  local psql=(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 -qtA)
  if [ "$("${psql[@]}" -c "select 1 from pg_roles where rolname='$PG_USER'")" != 1 ]; then
    "${psql[@]}" -c "create role $PG_USER login superuser password '$PG_PASSWORD'"
  fi
  if [ "$("${psql[@]}" -c "select 1 from pg_database where datname='$PG_DB'")" != 1 ]; then
    "${psql[@]}" -c "create database $PG_DB owner $PG_USER"
  fi
  log "PostgreSQL: ready ($(default_pg | sed 's/:[^:@]*@/:***@/'))"
}

pg_down() {
  local bin; bin=$(pg_bindir) || return 0
  if pg_running; then
    log "PostgreSQL: stopping"
    as_pg "$bin/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
  fi
}

# ---------------------------------------------------------------- Kafka
kafka_cp() { echo "$KAFKA_DIR/libs/*"; }

kafka_java() {
  java -Xms256m -Xmx1g -Dlog4j2.configurationFile="$ROOT/stack/kafka/log4j2.yaml" \
    -Dkafka.logs.dir="$KAFKA_DIR/logs" -cp "$(kafka_cp)" "$@"
}

kafka_pid() { [ -f "$KAFKA_DIR/kafka.pid" ] && cat "$KAFKA_DIR/kafka.pid"; }

kafka_running() {
  local pid; pid=$(kafka_pid) || return 1
  kill -0 "$pid" 2>/dev/null && grep -q 'kafka.Kafka' "/proc/$pid/cmdline" 2>/dev/null
}

kafka_jars() {
  local stamp="$KAFKA_DIR/libs/.pom.sha"
  local want; want=$(sha256sum "$ROOT/stack/kafka/pom.xml" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  log "Kafka: resolving jars from Maven Central"
  rm -rf "$KAFKA_DIR/libs"
  mkdir -p "$KAFKA_DIR/libs"
  mvn -q -B -f "$ROOT/stack/kafka/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$KAFKA_DIR/libs" >"$KAFKA_DIR/mvn.log" 2>&1 \
    || { tail -30 "$KAFKA_DIR/mvn.log" >&2; die "Maven could not resolve the Kafka jars"; }
  echo "$want" >"$stamp"
}

kafka_config() {
  mkdir -p "$KAFKA_DIR/logs"
  sed -e "s#@PORT@#$KAFKA_PORT#g" -e "s#@CONTROLLER_PORT@#$KAFKA_CONTROLLER_PORT#g" \
    -e "s#@DATA@#$KAFKA_DIR/data#g" "$ROOT/stack/kafka/server.properties" >"$KAFKA_DIR/server.properties"
}

# Answers when the broker serves metadata: the admin client lists topics.
kafka_answers() {
  kafka_java org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --list >/dev/null 2>&1
}

kafka_up() {
  if [ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then log "Kafka: using KAFKA_BOOTSTRAP_SERVERS"; return; fi
  ensure_java
  kafka_jars
  kafka_config
  if kafka_running; then
    log "Kafka: already running on $(default_kafka)"
    return
  fi
  if [ ! -f "$KAFKA_DIR/data/meta.properties" ]; then
    log "Kafka: formatting storage"
    kafka_java kafka.tools.StorageTool format --standalone -t "$(kafka_java kafka.tools.StorageTool random-uuid)" \
      -c "$KAFKA_DIR/server.properties" >"$KAFKA_DIR/format.log" 2>&1 \
      || { cat "$KAFKA_DIR/format.log" >&2; die "formatting Kafka storage failed"; }
  fi
  log "Kafka: starting on $(default_kafka)"
  # setsid: the broker outlives the shell that started it, and `down` can signal its group.
  setsid java -Xms512m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$ROOT/stack/kafka/log4j2.yaml" -Dkafka.logs.dir="$KAFKA_DIR/logs" \
    -cp "$(kafka_cp)" kafka.Kafka "$KAFKA_DIR/server.properties" \
    >"$KAFKA_DIR/logs/stdout.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$KAFKA_DIR/kafka.pid"
  # The started process is a shell until it has evaluated the class path and become the
  # JVM (seconds on a loaded machine): while it lives, wait for the port, then for metadata.
  local i
  for i in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || { tail -30 "$KAFKA_DIR/logs/stdout.log" >&2; die "Kafka exited during start-up"; }
    port_open "$KAFKA_PORT" && kafka_answers "$(default_kafka)" && { kafka_features; log "Kafka: ready"; return; }
    sleep 1
  done
  die "Kafka did not answer metadata requests within 120 s (log: $KAFKA_DIR/logs/server.log)"
}

# Whether something accepts connections on the loopback port.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Finalizes every feature at the jars' release (share.version=2: share groups and their
# dead-letter topics), so that storage formatted by an older release gets them too. A
# fresh format already finalizes them; the upgrade is then a no-op.
kafka_features() {
  local release
  release=$(sed -n 's#.*<kafka.version>\([0-9]*\.[0-9]*\)\..*</kafka.version>.*#\1#p' "$ROOT/stack/kafka/pom.xml")
  kafka_java org.apache.kafka.tools.FeatureCommand --bootstrap-server "$(default_kafka)" upgrade \
    --release-version "$release" >"$KAFKA_DIR/logs/features.log" 2>&1 \
    || { cat "$KAFKA_DIR/logs/features.log" >&2; die "Kafka: cannot finalize the features of release $release"; }
}

kafka_down() {
  kafka_running || { rm -f "$KAFKA_DIR/kafka.pid"; return 0; }
  local pid; pid=$(kafka_pid)
  log "Kafka: stopping (pid $pid)"
  kill -TERM "$pid"
  local i
  for i in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$KAFKA_DIR/kafka.pid"; return 0; }
    sleep 0.5
  done
  log "Kafka: did not stop in 30 s, killing"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$KAFKA_DIR/kafka.pid"
}

# Creates topics that do not exist yet: topics.sh NAME:PARTITIONS ...
topics() {
  local bootstrap="${KAFKA_BOOTSTRAP_SERVERS:-$(default_kafka)}" spec
  for spec in "$@"; do
    kafka_java org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --if-not-exists \
      --topic "${spec%%:*}" --partitions "${spec##*:}" --replication-factor 1 >/dev/null
    log "topic ${spec%%:*} ready"
  done
}

# ---------------------------------------------------------------- Schema Registry
# Apicurio Registry, built once from stack/schema-registry (a copy under the cache, so
# that Maven's target/ stays out of git) and run with its schemas in memory: every test
# registers the schemas it uses.
sr_jar() { echo "$SR_DIR/build/target/local-schema-registry-1-runner.jar"; }

sr_build() {
  local stamp="$SR_DIR/build/.src.sha"
  local want; want=$(cd "$ROOT/stack/schema-registry" && find . -type f | sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$(sr_jar)" ]; then return; fi
  log "Schema Registry: building Apicurio Registry from Maven Central"
  rm -rf "$SR_DIR/build"
  mkdir -p "$SR_DIR/build"
  cp -r "$ROOT/stack/schema-registry/." "$SR_DIR/build/"
  mvn -q -B -f "$SR_DIR/build/pom.xml" package -DskipTests >"$SR_DIR/mvn.log" 2>&1 \
    || { tail -30 "$SR_DIR/mvn.log" >&2; die "Maven could not build the Schema Registry"; }
  echo "$want" >"$stamp"
}

sr_pidfile() { echo "$SR_DIR/registry-$SR_PORT.pid"; }

sr_running() {
  local pid; [ -f "$(sr_pidfile)" ] && pid=$(cat "$(sr_pidfile)") || return 1
  kill -0 "$pid" 2>/dev/null && grep -q 'local-schema-registry' "/proc/$pid/cmdline" 2>/dev/null
}

# Answers when its Confluent-compatible API lists subjects.
sr_answers() { curl -sf -o /dev/null "$(default_sr)/subjects"; }

sr_up() {
  if [ -n "${SCHEMA_REGISTRY_URL:-}" ]; then log "Schema Registry: using SCHEMA_REGISTRY_URL"; return; fi
  ensure_java
  need curl:curl
  sr_build
  if sr_running; then
    log "Schema Registry: already running on $(default_sr)"
    return
  fi
  log "Schema Registry: starting on $(default_sr)"
  setsid java -Xms128m -Xmx512m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$SR_PORT" \
    -jar "$(sr_jar)" >"$SR_DIR/registry-$SR_PORT.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$(sr_pidfile)"
  local i
  for i in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || { tail -30 "$SR_DIR/registry-$SR_PORT.log" >&2; die "the Schema Registry exited during start-up"; }
    sr_answers && { log "Schema Registry: ready"; return; }
    sleep 1
  done
  die "the Schema Registry did not answer within 120 s (log: $SR_DIR/registry-$SR_PORT.log)"
}

sr_down() {
  sr_running || { rm -f "$(sr_pidfile)"; return 0; }
  local pid; pid=$(cat "$(sr_pidfile)")
  log "Schema Registry: stopping (pid $pid)"
  kill -TERM "$pid"
  local i
  for i in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$(sr_pidfile)"; return 0; }
    sleep 0.5
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$(sr_pidfile)"
}

status() {
  if [ -n "${DATABASE_URL:-}" ]; then echo "postgres: external (DATABASE_URL)"
  elif pg_running; then echo "postgres: running on 127.0.0.1:$PG_PORT"
  else echo "postgres: stopped"; fi
  if [ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then echo "kafka: external (KAFKA_BOOTSTRAP_SERVERS)"
  elif kafka_running; then echo "kafka: running on $(default_kafka) (pid $(kafka_pid))"
  else echo "kafka: stopped"; fi
  if [ -n "${SCHEMA_REGISTRY_URL:-}" ]; then echo "schema-registry: external (SCHEMA_REGISTRY_URL)"
  elif sr_running; then echo "schema-registry: running on $(default_sr) (pid $(cat "$(sr_pidfile)"))"
  else echo "schema-registry: stopped"; fi
}

case "${1:-}" in
  up) pg_up; kafka_up; sr_up ;;
  install) ensure_pg_binaries; ensure_java; kafka_jars; sr_build ;;
  down) sr_down; kafka_down; pg_down ;;
  # Stop/start one service, for fault tests and by hand.
  kafka-stop) kafka_down ;;
  kafka-start) kafka_up ;;
  pg-stop) pg_down ;;
  pg-start) pg_up ;;
  schema-registry-stop) sr_down ;;
  schema-registry-start) sr_up ;;
  status) status ;;
  env)
    echo "export KAFKA_BOOTSTRAP_SERVERS=${KAFKA_BOOTSTRAP_SERVERS:-$(default_kafka)}"
    echo "export DATABASE_URL='${DATABASE_URL:-$(default_pg)}'"
    echo "export SCHEMA_REGISTRY_URL=${SCHEMA_REGISTRY_URL:-$(default_sr)}"
    ;;
  topics) shift; topics "$@" ;;
  browser) ensure_chromium ;;
  need) shift; need "$@" ;;
  *) echo "usage: $0 up|install|down|status|env|browser|topics NAME:PARTITIONS...|need COMMAND:PACKAGE...|kafka-stop|kafka-start|pg-stop|pg-start|schema-registry-stop|schema-registry-start" >&2; exit 2 ;;
esac
