#!/usr/bin/env bash
# rungroup.sh BQCHAOS BQ BROKER 'LINE[+LINE...]': runs bqchaos command lines
# one after the other against the brokers described by BQ_* variables (one
# broker start for the group: `make chaos-run` wraps it in with-brokers.sh),
# printing each line and how long it took. Stops at the first failure.
set -euo pipefail
bqchaos=$1 bq=$2 broker=$3
IFS="+" read -r -a lines <<<"$4"
for line in "${lines[@]}"; do
  read -r -a a <<<"$line"
  extra=()
  [ "${a[0]}" = run ] && extra=(-bq "$bq")
  echo "== bqchaos ${a[*]} -broker $broker"
  start=$(date +%s)
  "$bqchaos" "${a[@]}" -broker "$broker" "${extra[@]}"
  echo "== took $(( $(date +%s) - start ))s"
done
