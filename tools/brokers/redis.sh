#!/usr/bin/env bash
# Redis on 127.0.0.1 for the idempotency integration tests.
#
#   redis.sh up      start a throwaway redis-server unless one runs; print
#                    BQ_REDIS_URL
#   redis.sh down    stop it and remove its data
#   redis.sh status  exit 0 when it runs
#   redis.sh env     print BQ_REDIS_URL of the running server
#
# State lives under $BQ_BROKERS_STATE/redis (see lib.sh); the port is
# BQ_REDIS_PORT (default 26379). No persistence: the data directory only
# holds the pid file and the log. Needs the Debian package redis-server.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

R_PORT="${BQ_REDIS_PORT:-26379}"
R_DIR="$BQ_BROKERS_STATE/redis"
R_DATA="$R_DIR/data"

running() {
  [ -s "$R_DATA/redis.pid" ] && kill -0 "$(cat "$R_DATA/redis.pid")" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$(cat "$R_DATA/redis.pid")/cmdline" 2>/dev/null | grep -q redis-server
}

up() {
  if running; then
    cat "$R_DIR/env"
    return 0
  fi
  need redis-server "install the Debian package redis-server"
  port_busy "$R_PORT" && die "redis: port $R_PORT is taken by another process (set BQ_REDIS_PORT)"
  rm -rf "$R_DATA"
  mkdir -p "$R_DATA" "$R_DIR/logs"
  log "redis: starting on $BQ_HOST:$R_PORT"
  redis-server --bind "$BQ_HOST" --port "$R_PORT" --daemonize yes --pidfile "$R_DATA/redis.pid" \
    --dir "$R_DATA" --save '' --appendonly no --logfile "$R_DIR/logs/redis.log" 9>&- ||
    die "redis: redis-server failed"
  local i
  for i in $(seq 1 100); do
    port_busy "$R_PORT" && running && break
    [ "$i" = 100 ] && { tail_logs "$R_DIR/logs" redis.log; die "redis: did not start"; }
    sleep 0.1
  done
  printf 'BQ_REDIS_URL=redis://%s:%s/0\n' "$BQ_HOST" "$R_PORT" >"$R_DIR/env"
  cat "$R_DIR/env"
}

down() {
  if running; then
    log "redis: stopping"
    local pid
    pid="$(cat "$R_DATA/redis.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$R_DATA" "$R_DIR/env"
}

service_main redis "$R_DIR/env" "${1:-}"
