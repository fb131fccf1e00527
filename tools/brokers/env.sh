#!/usr/bin/env bash
# Prints the BQ_* lines of the running brokers, for a shell to pick up:
#   eval "$(tools/brokers/env.sh --export)"
# Fails when a requested broker is not running.
#
# Usage: env.sh [--export] [kafka] [pulsar]    (no broker argument: both)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

prefix=""
brokers=()
for a in "$@"; do
  case "$a" in
  --export) prefix="export " ;;
  kafka | pulsar) brokers+=("$a") ;;
  *)
    echo "usage: $0 [--export] [kafka] [pulsar]" >&2
    exit 2
    ;;
  esac
done
[ ${#brokers[@]} -gt 0 ] || brokers=(kafka pulsar)
for b in "${brokers[@]}"; do
  "$here/$b.sh" env | sed "s/^/$prefix/"
done
