#!/usr/bin/env bash
# Apache Kafka (KRaft, single node) on 127.0.0.1 for tests: PLAINTEXT,
# SASL_PLAINTEXT (SCRAM), SSL and SASL_SSL listeners.
#
#   kafka.sh up      start (or find running) and print the BQ_KAFKA_* lines
#   kafka.sh down    stop and remove the data
#   kafka.sh kill    kill -9 the JVM, keeping its data, certificates and env
#   kafka.sh start   start the JVM again on the data a kill kept; print the lines
#   kafka.sh restart kill, then start (fault injection: the data survives)
#   kafka.sh status  exit 0 when running and serving
#   kafka.sh env     print the BQ_KAFKA_* lines of the running broker
#   kafka.sh stops [FROM [TO]]
#                    how long the JVM stood still (GC and other safepoints)
#                    between two wall times of its GC log, e.g. FROM
#                    2026-12-03T22:52:07 (UTC; a prefix of the log's stamps)
#
# Ports and credentials can be overridden with the variables below.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KAFKA_PORT="${BQ_KAFKA_PORT:-19092}"
KAFKA_SASL_PORT="${BQ_KAFKA_SASL_PORT:-19093}"
KAFKA_CONTROLLER_PORT="${BQ_KAFKA_CONTROLLER_PORT:-19094}"
KAFKA_TLS_PORT="${BQ_KAFKA_TLS_PORT:-19095}"
KAFKA_SASL_TLS_PORT="${BQ_KAFKA_SASL_TLS_PORT:-19096}"
KAFKA_USER="${BQ_KAFKA_SASL_USER:-bq}"
KAFKA_PASSWORD="${BQ_KAFKA_SASL_PASSWORD:-bq-secret}"
# ZGC: it moves objects while the broker runs, so its stops are short (0-10
# ms in a whole re-injector bench run on a loaded host, the longest 7 ms;
# `kafka.sh stops`). With G1 every young collection stopped the broker, and so
# every produce acknowledgement and fetch answer, for 5-330 ms about once a
# second on this 2-core host (G1 shrinks the young generation towards its
# pause goal, so it collects more often the slower it runs); those stops
# decided the re-injector bench's p99 (kafka/DESIGN.md, "Retry tiers and
# the Reinjector"). A fixed G1 young generation made them rarer but longer. ZGC keeps more of the
# 512 MiB cap in use between its cycles (PSS about 640 MiB against 460).
# No proactive cycles (-XX:-ZProactive): on 2 cores each one held every
# produce request for 25-250 ms.
KAFKA_HEAP="${BQ_KAFKA_HEAP:--Xms128m -Xmx512m}"
KAFKA_GC="${BQ_KAFKA_GC:--XX:+UseZGC -XX:-ZProactive}"
KAFKA_START_TIMEOUT="${BQ_KAFKA_START_TIMEOUT:-180}"

DIR="$BQ_BROKERS_STATE/kafka"
PIDFILE="$DIR/pid"
ENVFILE="$DIR/env"
TLSDIR="$DIR/tls"

env_lines() {
  printf 'BQ_KAFKA_BROKERS=%s:%s\n' "$BQ_HOST" "$KAFKA_PORT"
  printf 'BQ_KAFKA_SASL_BROKERS=%s:%s\n' "$BQ_HOST" "$KAFKA_SASL_PORT"
  printf 'BQ_KAFKA_SASL_USER=%s\n' "$KAFKA_USER"
  printf 'BQ_KAFKA_SASL_PASSWORD=%s\n' "$KAFKA_PASSWORD"
  printf 'BQ_KAFKA_TLS_BROKERS=%s:%s\n' "$BQ_HOST" "$KAFKA_TLS_PORT"
  printf 'BQ_KAFKA_SASL_TLS_BROKERS=%s:%s\n' "$BQ_HOST" "$KAFKA_SASL_TLS_PORT"
  printf 'BQ_KAFKA_TLS_CA=%s\n' "$TLSDIR/ca.pem"
}

# probe BIN TIMEOUT: waits until the broker serves. The TLS listeners are
# checked when this start made certificates; a broker started by an older
# version of this script, without them, is probed as it was started.
probe() {
  local tls_args=()
  if [ -s "$TLSDIR/ca.pem" ]; then
    tls_args=(-tls-brokers "$BQ_HOST:$KAFKA_TLS_PORT" -sasl-tls-brokers "$BQ_HOST:$KAFKA_SASL_TLS_PORT" -ca "$TLSDIR/ca.pem")
  fi
  "$1" kafka -brokers "$BQ_HOST:$KAFKA_PORT" -sasl-brokers "$BQ_HOST:$KAFKA_SASL_PORT" \
    -user "$KAFKA_USER" -password "$KAFKA_PASSWORD" "${tls_args[@]}" \
    -timeout "$2" -pid "$(cat "$PIDFILE" 2>/dev/null || echo 0)"
}

do_up() {
  local probe_bin cp_file cluster_id
  cp_file="$(resolve_classpath kafka "$BQ_BROKERS_DIR/kafka")"
  probe_bin="$(probe_bin)"

  if reuse_running kafka "$probe_bin" 20s BQ_KAFKA_TLS_BROKERS \
    "it was started without the TLS listeners; restart it (down.sh kafka, then up.sh kafka) to get BQ_KAFKA_TLS_*"; then
    return 0
  fi
  ports_free kafka "stop it or set BQ_KAFKA_PORT / BQ_KAFKA_SASL_PORT / BQ_KAFKA_CONTROLLER_PORT / BQ_KAFKA_TLS_PORT / BQ_KAFKA_SASL_TLS_PORT" \
    "$KAFKA_PORT" "$KAFKA_SASL_PORT" "$KAFKA_CONTROLLER_PORT" "$KAFKA_TLS_PORT" "$KAFKA_SASL_TLS_PORT"

  rm -rf "$DIR"
  mkdir -p "$DIR/data" "$DIR/logs"
  # A throwaway CA and a server certificate for 127.0.0.1 and localhost,
  # new at every start.
  "$probe_bin" certs -dir "$TLSDIR" -hosts "$BQ_HOST,localhost" || die "kafka: could not write the TLS certificates into $TLSDIR"
  sed -e "s#@PLAINTEXT_PORT@#$KAFKA_PORT#g" \
    -e "s#@SASL_PORT@#$KAFKA_SASL_PORT#g" \
    -e "s#@SSL_PORT@#$KAFKA_TLS_PORT#g" \
    -e "s#@SASL_SSL_PORT@#$KAFKA_SASL_TLS_PORT#g" \
    -e "s#@CONTROLLER_PORT@#$KAFKA_CONTROLLER_PORT#g" \
    -e "s#@TLS_KEYSTORE@#$TLSDIR/server-keystore.pem#g" \
    -e "s#@DATA_DIR@#$DIR/data#g" \
    "$BQ_BROKERS_DIR/kafka/server.properties.in" >"$DIR/server.properties"

  # A Kafka cluster id is 16 random bytes in URL-safe base64 without padding.
  cluster_id="$(new_cluster_id)"
  local java_common=(-cp "$(cat "$cp_file")"
    "-Dlog4j2.configurationFile=$BQ_BROKERS_DIR/kafka/log4j2.xml"
    "-Dbq.log.dir=$DIR/logs" -Djava.awt.headless=true)

  log "kafka: formatting $DIR/data (cluster id $cluster_id, SCRAM user $KAFKA_USER)"
  if ! timeout 120 java "${java_common[@]}" -Xmx256m kafka.tools.StorageTool format \
    --config "$DIR/server.properties" --cluster-id "$cluster_id" \
    --add-scram "SCRAM-SHA-256=[name=$KAFKA_USER,password=$KAFKA_PASSWORD]" \
    --add-scram "SCRAM-SHA-512=[name=$KAFKA_USER,password=$KAFKA_PASSWORD]" \
    >"$DIR/logs/format.out" 2>&1; then
    tail_logs "$DIR/logs" format.out
    die "kafka: formatting the storage failed"
  fi

  launch
}

# launch: starts the JVM on the prepared $DIR (server.properties and a
# formatted data directory), waits until it serves, writes and prints the
# BQ_* lines.
launch() {
  local probe_bin cp_file started
  cp_file="$(resolve_classpath kafka "$BQ_BROKERS_DIR/kafka")"
  probe_bin="$(probe_bin)"
  local java_common=(-cp "$(cat "$cp_file")"
    "-Dlog4j2.configurationFile=$BQ_BROKERS_DIR/kafka/log4j2.xml"
    "-Dbq.log.dir=$DIR/logs" -Djava.awt.headless=true)
  log "kafka: starting on $BQ_HOST:$KAFKA_PORT (PLAINTEXT), $BQ_HOST:$KAFKA_SASL_PORT (SASL_PLAINTEXT, SCRAM-SHA-256/512), $BQ_HOST:$KAFKA_TLS_PORT (SSL), $BQ_HOST:$KAFKA_SASL_TLS_PORT (SASL_SSL)"
  started=$(date +%s)
  local java_args=("${java_common[@]}")
  # shellcheck disable=SC2206
  java_args+=($KAFKA_HEAP)
  # shellcheck disable=SC2206
  java_args+=($KAFKA_GC)
  # The GC log (collections with their causes, and every safepoint: how
  # long the broker stood still), stamped with the wall time, is what tells
  # a broker stall from a client one.
  java_args+=("-Xlog:gc,safepoint:file=$DIR/logs/gc.log:time,uptime,level:filecount=2,filesize=10m"
    -XX:+ExitOnOutOfMemoryError kafka.Kafka "$DIR/server.properties")
  spawn_jvm kafka "$DIR" kafka.out "${java_args[@]}"
  await_serving kafka "$probe_bin" "$KAFKA_START_TIMEOUT" "$started" server.log kafka.out
}

# do_kill: kill -9 the JVM (no shutdown hook runs) and keep everything on
# disk, as a crash would.
do_kill() {
  kill9_pid "$PIDFILE" kafka
}

# do_start: starts the JVM again on the data a kill kept (no format, same
# cluster id, same certificates).
do_start() {
  if pid_alive "$PIDFILE"; then
    die "kafka: already running (pid $(cat "$PIDFILE")); kill it first"
  fi
  [ -s "$DIR/server.properties" ] && [ -d "$DIR/data" ] ||
    die "kafka: no kept data in $DIR (start it with up first)"
  ports_free kafka "cannot start again" \
    "$KAFKA_PORT" "$KAFKA_SASL_PORT" "$KAFKA_CONTROLLER_PORT" "$KAFKA_TLS_PORT" "$KAFKA_SASL_TLS_PORT"
  log "kafka: starting again on the kept data in $DIR/data"
  launch
}

do_down() {
  stop_pid "$PIDFILE" kafka
  # Data goes; logs stay for a post-mortem until the next up.
  rm -rf "$DIR/data" "$ENVFILE" "$DIR/server.properties" "$TLSDIR"
}

do_status() {
  pid_alive "$PIDFILE" || return 1
  probe "$(probe_bin)" 5s >/dev/null 2>&1
}

do_env() {
  if ! pid_alive "$PIDFILE" || [ ! -s "$ENVFILE" ]; then
    die "kafka: not running (start it with tools/brokers/up.sh kafka)"
  fi
  cat "$ENVFILE"
}

# do_stops [FROM [TO]]: the safepoints of the GC log stamped in [FROM, TO)
# (the whole log by default), but the periodic "Cleanup" ones: their count,
# total and longest stop, and every stop of 5 ms or more. Both G1 and ZGC
# log each stop as a safepoint.
do_stops() {
  local logs=("$DIR"/logs/gc.log*)
  [ -e "${logs[0]}" ] || die "kafka: no GC log in $DIR/logs"
  awk -v from="${1:-}" -v to="${2:-9999}" '
    /\] Safepoint "/ && !/Safepoint "Cleanup"/ {
      stamp = substr($1, 2, index($1, "]") - 2)
      if (stamp < from || stamp >= to) next
      op = $0; sub(/^.*Safepoint "/, "", op); sub(/".*$/, "", op)
      ns = $0; sub(/^.*Total: /, "", ns); sub(/ ns.*$/, "", ns)
      ms = ns / 1e6; n++; sum += ms; if (ms > max) max = ms
      if (ms >= 5) printf "%s %s %.1f ms\n", stamp, op, ms
    }
    END { printf "kafka-broker-stops n=%d total-ms=%.1f max-ms=%.1f\n", n, sum, max }' "${logs[@]}"
}

case "${1:-}" in
up) with_lock kafka do_up ;;
down) with_lock kafka do_down ;;
kill) with_lock kafka do_kill ;;
start) with_lock kafka do_start ;;
restart) with_lock kafka do_kill && with_lock kafka do_start ;;
status) do_status ;;
env) do_env ;;
stops) do_stops "${2:-}" "${3:-}" ;;
*)
  echo "usage: $0 up|down|kill|start|restart|status|env|stops [FROM [TO]]" >&2
  exit 2
  ;;
esac
