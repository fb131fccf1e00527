#!/usr/bin/env bash
# Stops the brokers started by up.sh and removes their data (logs stay in
# the state directory until the next start).
#
# Usage: down.sh [kafka] [pulsar]    (no argument: both)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

brokers=("$@")
[ ${#brokers[@]} -gt 0 ] || brokers=(kafka pulsar)
status=0
for b in "${brokers[@]}"; do
  case "$b" in
  kafka | pulsar | postgres | redis) "$here/$b.sh" down || status=1 ;;
  *)
    echo "usage: $0 [kafka] [pulsar] [postgres] [redis]" >&2
    exit 2
    ;;
  esac
done
exit "$status"
