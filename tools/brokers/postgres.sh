#!/usr/bin/env bash
# PostgreSQL on 127.0.0.1 for the idempotency and outbox integration tests.
#
#   postgres.sh up      start a throwaway server (initdb into a temporary
#                       data directory) unless one runs; print BQ_POSTGRES_URL
#   postgres.sh down    stop it and remove its data
#   postgres.sh status  exit 0 when it runs
#   postgres.sh env     print BQ_POSTGRES_URL of the running server
#
# The server is started with the lock's descriptor closed (9>&-), so it
# does not hold the lock of with_lock while it runs.
#
# State lives under $BQ_BROKERS_STATE/postgres (see lib.sh); the port is
# BQ_POSTGRES_PORT (default 25432). Authentication is trust, on loopback
# only. initdb refuses to run as root, so as root the server runs as the
# postgres OS user (created by the Debian package `postgresql`).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PG_PORT="${BQ_POSTGRES_PORT:-25432}"
PG_DIR="$BQ_BROKERS_STATE/postgres"
PG_DATA="$PG_DIR/data"
PG_USER=bq

pg_bin() {
  local b
  for b in "$(command -v "$1" 2>/dev/null || true)" /usr/lib/postgresql/*/bin/"$1" /usr/local/bin/"$1"; do
    [ -n "$b" ] && [ -x "$b" ] && { printf '%s\n' "$b"; return 0; }
  done
  die "postgres: $1 not found (install the Debian package postgresql)"
}

# as_owner CMD...: runs CMD as the OS user that owns the data directory.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "postgres: running as root needs the postgres OS user (install the Debian package postgresql)"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

url() { printf 'BQ_POSTGRES_URL=postgres://%s@%s:%s/postgres?sslmode=disable\n' "$PG_USER" "$BQ_HOST" "$PG_PORT"; }

running() { [ -f "$PG_DATA/PG_VERSION" ] && as_owner "$(pg_bin pg_ctl)" status -D "$PG_DATA" >/dev/null 2>&1; }

up() {
  if running; then
    cat "$PG_DIR/env"
    return 0
  fi
  port_busy "$PG_PORT" && die "postgres: port $PG_PORT is taken by another process (set BQ_POSTGRES_PORT)"
  rm -rf "$PG_DATA"
  mkdir -p "$PG_DATA" "$PG_DIR/logs"
  [ "$(id -u)" != 0 ] || chown -R postgres "$PG_DIR"
  chmod 700 "$PG_DATA"
  log "postgres: initdb in $PG_DATA"
  as_owner "$(pg_bin initdb)" -D "$PG_DATA" -U "$PG_USER" --auth=trust -E UTF8 --no-sync >"$PG_DIR/logs/initdb.log" 2>&1 ||
    { tail_logs "$PG_DIR/logs" initdb.log; die "postgres: initdb failed"; }
  log "postgres: starting on $BQ_HOST:$PG_PORT"
  as_owner "$(pg_bin pg_ctl)" start -D "$PG_DATA" -l "$PG_DIR/logs/postgres.log" -w -t 60 \
    -o "-c listen_addresses=$BQ_HOST -p $PG_PORT -k $PG_DIR -c fsync=off -c max_connections=200" >/dev/null 9>&- ||
    { tail_logs "$PG_DIR/logs" postgres.log; die "postgres: did not start"; }
  url >"$PG_DIR/env"
  cat "$PG_DIR/env"
}

down() {
  if running; then
    log "postgres: stopping"
    as_owner "$(pg_bin pg_ctl)" stop -D "$PG_DATA" -m fast -w -t 60 >/dev/null || true
  fi
  rm -rf "$PG_DATA" "$PG_DIR/env"
}

service_main postgres "$PG_DIR/env" "${1:-}"
