#!/usr/bin/env bash
# Runs a command with real Kafka and Pulsar brokers: starts them (up.sh),
# exports the BQ_* variables, runs the command, then stops the brokers it
# started, even when the command fails or is interrupted, and exits with the
# command's status.
#
# A broker that was already running before this script is left running (it
# belongs to whoever started it). Set BQ_BROKERS_KEEP=1 to keep the brokers
# this script started as well, e.g. to inspect them after a failure.
#
# Usage: with-brokers.sh CMD [ARGS...]
# Set BQ_BROKERS (e.g. "kafka") to start only some brokers; the default
# also starts PostgreSQL and Redis (postgres.sh, redis.sh) for the
# idempotency and outbox tests.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

read -r -a brokers <<<"${BQ_BROKERS:-kafka pulsar postgres redis}"
started=()
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$rc" != 0 ]; then
    for b in "${started[@]}"; do warn_digest "$b"; done
  fi
  if [ "${BQ_BROKERS_KEEP:-}" = 1 ]; then
    [ ${#started[@]} -eq 0 ] || echo "with-brokers: BQ_BROKERS_KEEP=1, leaving ${started[*]} running (stop: $here/down.sh)" >&2
  elif [ ${#started[@]} -gt 0 ]; then
    "$here/down.sh" "${started[@]}" || echo "with-brokers: stopping ${started[*]} failed" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for b in "${brokers[@]}"; do
  if ! "$here/$b.sh" status; then
    # Registered before starting, so a start that fails half-way is
    # cleaned up too.
    started+=("$b")
  fi
  env_out="$("$here/$b.sh" up)"
  while IFS= read -r line; do
    case "$line" in
    BQ_*=*) export "${line?}" ;;
    esac
  done <<<"$env_out"
done

env | grep '^BQ_' | sort >&2 || true
status=0
"$@" || status=$?
exit "$status"
