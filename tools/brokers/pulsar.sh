#!/usr/bin/env bash
# Apache Pulsar standalone on 127.0.0.1 for tests (no functions worker, no
# stream storage, delayed delivery on with a 100 ms tick, a TLS port, token
# authentication with anonymous clients allowed).
#
#   pulsar.sh up      start (or find running) and print the BQ_PULSAR_* lines
#   pulsar.sh down    stop and remove the data
#   pulsar.sh kill    kill -9 the JVM, keeping its data, certificates and env
#   pulsar.sh start   start the JVM again on the data a kill kept; print the lines
#   pulsar.sh restart kill, then start (fault injection: the data survives)
#   pulsar.sh status  exit 0 when running and serving
#   pulsar.sh env     print the BQ_PULSAR_* lines of the running broker
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PULSAR_PORT="${BQ_PULSAR_PORT:-16650}"
PULSAR_WEB_PORT="${BQ_PULSAR_WEB_PORT:-18080}"
PULSAR_BOOKIE_PORT="${BQ_PULSAR_BOOKIE_PORT:-13181}"
PULSAR_TLS_PORT="${BQ_PULSAR_TLS_PORT:-16651}"
PULSAR_HEAP="${BQ_PULSAR_HEAP:--Xms128m -Xmx512m -XX:MaxDirectMemorySize=512m}"
PULSAR_START_TIMEOUT="${BQ_PULSAR_START_TIMEOUT:-240}"

DIR="$BQ_BROKERS_STATE/pulsar"
PIDFILE="$DIR/pid"
ENVFILE="$DIR/env"
TLSDIR="$DIR/tls"
AUTHDIR="$DIR/auth"

env_lines() {
  printf 'BQ_PULSAR_URL=pulsar://%s:%s\n' "$BQ_HOST" "$PULSAR_PORT"
  printf 'BQ_PULSAR_ADMIN_URL=http://%s:%s\n' "$BQ_HOST" "$PULSAR_WEB_PORT"
  printf 'BQ_PULSAR_TLS_URL=pulsar+ssl://%s:%s\n' "$BQ_HOST" "$PULSAR_TLS_PORT"
  printf 'BQ_PULSAR_TLS_CA=%s\n' "$TLSDIR/ca.pem"
  printf 'BQ_PULSAR_TOKEN=%s\n' "$(cat "$AUTHDIR/token.jwt")"
}

# probe BIN TIMEOUT: waits until the broker serves. The TLS port (with the
# token) is checked when this start made certificates; a broker started by
# an older version of this script, without them, is probed as it was
# started.
probe() {
  local tls_args=()
  if [ -s "$TLSDIR/ca.pem" ] && [ -s "$AUTHDIR/token.jwt" ]; then
    tls_args=(-tls-url "pulsar+ssl://$BQ_HOST:$PULSAR_TLS_PORT" -ca "$TLSDIR/ca.pem" -token-file "$AUTHDIR/token.jwt")
  fi
  "$1" pulsar -url "pulsar://$BQ_HOST:$PULSAR_PORT" -admin "http://$BQ_HOST:$PULSAR_WEB_PORT" "${tls_args[@]}" \
    -timeout "$2" -pid "$(cat "$PIDFILE" 2>/dev/null || echo 0)"
}

do_up() {
  local probe_bin cp_file
  cp_file="$(resolve_classpath pulsar "$BQ_BROKERS_DIR/pulsar")"
  probe_bin="$(probe_bin)"

  if reuse_running pulsar "$probe_bin" 30s BQ_PULSAR_TLS_URL \
    "it was started without TLS and tokens; restart it (down.sh pulsar, then up.sh pulsar) to get BQ_PULSAR_TLS_* and BQ_PULSAR_TOKEN"; then
    return 0
  fi
  ports_free pulsar "stop it or set BQ_PULSAR_PORT / BQ_PULSAR_WEB_PORT / BQ_PULSAR_BOOKIE_PORT / BQ_PULSAR_TLS_PORT" \
    "$PULSAR_PORT" "$PULSAR_WEB_PORT" "$PULSAR_BOOKIE_PORT" "$PULSAR_TLS_PORT"

  rm -rf "$DIR"
  mkdir -p "$DIR/data" "$DIR/logs"
  # A throwaway CA and server certificate for 127.0.0.1 and localhost, and a
  # token secret with a token signed by it, new at every start.
  "$probe_bin" certs -dir "$TLSDIR" -hosts "$BQ_HOST,localhost" || die "pulsar: could not write the TLS certificates into $TLSDIR"
  "$probe_bin" token -dir "$AUTHDIR" -subject bq-client || die "pulsar: could not write the token into $AUTHDIR"
  sed -e "s#@BROKER_PORT@#$PULSAR_PORT#g" \
    -e "s#@WEB_PORT@#$PULSAR_WEB_PORT#g" \
    -e "s#@BROKER_TLS_PORT@#$PULSAR_TLS_PORT#g" \
    -e "s#@TLS_CERT@#$TLSDIR/server.pem#g" \
    -e "s#@TLS_KEY@#$TLSDIR/server.key#g" \
    -e "s#@TLS_CA@#$TLSDIR/ca.pem#g" \
    -e "s#@TOKEN_SECRET_URL@#file://$AUTHDIR/token-secret.key#g" \
    -e "s#@TOKEN_FILE@#$AUTHDIR/token.jwt#g" \
    "$BQ_BROKERS_DIR/pulsar/standalone.conf.in" >"$DIR/standalone.conf"

  launch --wipe-data
}

# launch [--wipe-data]: starts the JVM on the prepared $DIR, waits until it
# serves, writes and prints the BQ_* lines. Without --wipe-data the
# metadata and bookie data a previous run left are used as they are.
launch() {
  local probe_bin cp_file started wipe=()
  [ "${1:-}" != --wipe-data ] || wipe=(--wipe-data)
  cp_file="$(resolve_classpath pulsar "$BQ_BROKERS_DIR/pulsar")"
  probe_bin="$(probe_bin)"
  # JVM flags follow Pulsar's own launch script: BookKeeper finds its
  # metadata through Pulsar's metadata store, Netty and BookKeeper need a few
  # JDK internals opened.
  local java_args=(-cp "$(cat "$cp_file")"
    "-Dlog4j2.configurationFile=$BQ_BROKERS_DIR/pulsar/log4j2.xml"
    "-Dbq.log.dir=$DIR/logs" -Djava.awt.headless=true
    -Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver
    -Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver
    -Dio.netty.tryReflectionSetAccessible=true -Djava.net.preferIPv4Stack=true
    -Dpulsar.allocator.exit_on_oom=true
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.util.zip=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED
    --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
    --add-opens java.base/sun.net=ALL-UNNAMED
    --add-opens java.management/sun.management=ALL-UNNAMED
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError)
  # shellcheck disable=SC2206
  java_args+=($PULSAR_HEAP)
  java_args+=(org.apache.pulsar.PulsarStandaloneStarter
    --config "$DIR/standalone.conf" --no-functions-worker --no-stream-storage "${wipe[@]}"
    --bookkeeper-dir "$DIR/data/bookkeeper" --metadata-dir "$DIR/data/metadata"
    --bookkeeper-port "$PULSAR_BOOKIE_PORT")

  log "pulsar: starting on $BQ_HOST:$PULSAR_PORT (binary), $BQ_HOST:$PULSAR_TLS_PORT (binary, TLS), $BQ_HOST:$PULSAR_WEB_PORT (admin), bookie $BQ_HOST:$PULSAR_BOOKIE_PORT; token authentication, anonymous clients allowed"
  started=$(date +%s)
  spawn_jvm pulsar "$DIR" pulsar.out "${java_args[@]}"
  await_serving pulsar "$probe_bin" "$PULSAR_START_TIMEOUT" "$started" pulsar.log pulsar.out
}

# do_kill: kill -9 the JVM (no shutdown hook runs) and keep everything on
# disk, as a crash would.
do_kill() {
  kill9_pid "$PIDFILE" pulsar
}

# do_start: starts the JVM again on the data a kill kept (same metadata,
# ledgers, certificates and token).
do_start() {
  if pid_alive "$PIDFILE"; then
    die "pulsar: already running (pid $(cat "$PIDFILE")); kill it first"
  fi
  if [ ! -s "$DIR/standalone.conf" ] || [ ! -d "$DIR/data" ]; then
    die "pulsar: no kept data in $DIR (start it with up first)"
  fi
  ports_free pulsar "cannot start again" "$PULSAR_PORT" "$PULSAR_WEB_PORT" "$PULSAR_BOOKIE_PORT" "$PULSAR_TLS_PORT"
  local try
  for try in 1 2 3; do
    log "pulsar: starting again on the kept data in $DIR/data"
    local from
    from=$(($(wc -l <"$DIR/logs/pulsar.log" 2>/dev/null || echo 0) + 1))
    launch
    bookie_settled "$from" && return 0
    log "pulsar: the bookie's registration lock keeps flapping (start $try of 3); kill -9 and start again"
    kill9_pid "$PIDFILE" pulsar
  done
  die "pulsar: the bookie's registration lock still flapped after three starts (see $DIR/logs/pulsar.log)"
}

# bookie_settled FROM: whether the bookie's registration lock is still,
# judged on the log lines from FROM on. Started on kept metadata, Pulsar
# 4.0 standalone may loop invalidating and re-taking the lock of
# /ledgers/available/<bookie> (thousands of times a second, the bookie
# missing for the brokers in between: ledgers cannot be created); a
# healthy start logs it a few times and stops.
bookie_settled() {
  local from="$1" a b
  sleep 3
  a=$(tail -n +"$from" "$DIR/logs/pulsar.log" | grep -c 'Lock on resource /ledgers/available/.* was invalidated' || true)
  sleep 2
  b=$(tail -n +"$from" "$DIR/logs/pulsar.log" | grep -c 'Lock on resource /ledgers/available/.* was invalidated' || true)
  [ "$b" -le "$a" ]
}

do_down() {
  stop_pid "$PIDFILE" pulsar
  rm -rf "$DIR/data" "$ENVFILE" "$DIR/standalone.conf" "$TLSDIR" "$AUTHDIR"
}

do_status() {
  pid_alive "$PIDFILE" || return 1
  probe "$(probe_bin)" 5s >/dev/null 2>&1
}

do_env() {
  if ! pid_alive "$PIDFILE" || [ ! -s "$ENVFILE" ]; then
    die "pulsar: not running (start it with tools/brokers/up.sh pulsar)"
  fi
  cat "$ENVFILE"
}

case "${1:-}" in
up) with_lock pulsar do_up ;;
down) with_lock pulsar do_down ;;
kill) with_lock pulsar do_kill ;;
start) with_lock pulsar do_start ;;
restart) with_lock pulsar do_kill && with_lock pulsar do_start ;;
status) do_status ;;
env) do_env ;;
*)
  echo "usage: $0 up|down|kill|start|restart|status|env" >&2
  exit 2
  ;;
esac
