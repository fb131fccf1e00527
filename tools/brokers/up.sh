#!/usr/bin/env bash
# Starts real Apache Kafka (KRaft) and Apache Pulsar standalone on 127.0.0.1,
# or finds them running, waits until they serve clients, and prints on stdout,
# one per line:
#   BQ_KAFKA_BROKERS=127.0.0.1:<port>
#   BQ_KAFKA_SASL_BROKERS=127.0.0.1:<port>
#   BQ_KAFKA_SASL_USER=<user>
#   BQ_KAFKA_SASL_PASSWORD=<password>
#   BQ_KAFKA_TLS_BROKERS=127.0.0.1:<port>
#   BQ_KAFKA_SASL_TLS_BROKERS=127.0.0.1:<port>
#   BQ_KAFKA_TLS_CA=<state>/kafka/tls/ca.pem
#   BQ_PULSAR_URL=pulsar://127.0.0.1:<port>
#   BQ_PULSAR_ADMIN_URL=http://127.0.0.1:<port>
#   BQ_PULSAR_TLS_URL=pulsar+ssl://127.0.0.1:<port>
#   BQ_PULSAR_TLS_CA=<state>/pulsar/tls/ca.pem
#   BQ_PULSAR_TOKEN=<a JWT the broker accepts>
# Progress goes to stderr.
#
# Usage: up.sh [kafka] [pulsar]    (no argument: both)
# See tools/brokers/README.md for ports, logs and troubleshooting.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

brokers=("$@")
[ ${#brokers[@]} -gt 0 ] || brokers=(kafka pulsar)
for b in "${brokers[@]}"; do
  case "$b" in
  kafka | pulsar) ;;
  *)
    echo "usage: $0 [kafka] [pulsar]" >&2
    exit 2
    ;;
  esac
done
for b in "${brokers[@]}"; do
  "$here/$b.sh" up
done
