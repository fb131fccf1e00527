#!/usr/bin/env bash
# A three-node Apache Kafka KRaft cluster on 127.0.0.1 for the failover
# tests: three combined controller+broker nodes forming one controller
# quorum, topics replicated three times with min.insync.replicas=2.
#
#   kafka-cluster.sh up                 start the three nodes (or find them serving); print the env lines
#   kafka-cluster.sh down               stop every node and remove the data
#   kafka-cluster.sh status             print each node's state; exit 0 when all three serve
#   kafka-cluster.sh env                print the env lines of the running cluster
#   kafka-cluster.sh kill NODE          kill -9 the JVM of node NODE (1-3); its data is kept
#   kafka-cluster.sh start NODE         start node NODE again on its data; wait until it serves
#   kafka-cluster.sh leader TOPIC PART  print the node id leading TOPIC's partition PART
#   kafka-cluster.sh controller         print the node id of the active controller
#
# It uses the same jars as kafka.sh (one Maven resolution, cached under
# $HOME) and its own state directory, so it runs beside the single broker.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER_STATE="${BQ_CLUSTER_STATE:-${TMPDIR:-/tmp}/babelqueue-kafka-cluster}"
read -r -a CLIENT_PORTS <<<"${BQ_KAFKA_CLUSTER_PORTS:-29092 29093 29094}"
read -r -a CONTROLLER_PORTS <<<"${BQ_KAFKA_CLUSTER_CONTROLLER_PORTS:-29192 29193 29194}"
CLUSTER_HEAP="${BQ_KAFKA_CLUSTER_HEAP:--Xms128m -Xmx384m}"
CLUSTER_START_TIMEOUT="${BQ_KAFKA_CLUSTER_START_TIMEOUT:-240}"
NODES=(1 2 3)
ENVFILE="$CLUSTER_STATE/env"
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

[ "${#CLIENT_PORTS[@]}" = 3 ] && [ "${#CONTROLLER_PORTS[@]}" = 3 ] ||
  die "kafka-cluster: BQ_KAFKA_CLUSTER_PORTS and BQ_KAFKA_CLUSTER_CONTROLLER_PORTS name three ports each (space-separated)"

node_dir() { printf '%s/node%s' "$CLUSTER_STATE" "$1"; }
client_port() { printf '%s' "${CLIENT_PORTS[$(($1 - 1))]}"; }
controller_port() { printf '%s' "${CONTROLLER_PORTS[$(($1 - 1))]}"; }

all_brokers() {
  local n out=()
  for n in "${NODES[@]}"; do out+=("$BQ_HOST:$(client_port "$n")"); done
  (IFS=,; printf '%s' "${out[*]}")
}

voters() {
  local n out=()
  for n in "${NODES[@]}"; do out+=("$n@$BQ_HOST:$(controller_port "$n")"); done
  (IFS=,; printf '%s' "${out[*]}")
}

env_lines() {
  printf 'BQ_KAFKA_CLUSTER_BROKERS=%s\n' "$(all_brokers)"
  printf 'BQ_KAFKA_CLUSTER_CTL=%s\n' "$SELF"
  printf 'BQ_CLUSTER_STATE=%s\n' "$CLUSTER_STATE"
}

check_node() {
  case "${1:-}" in
  1 | 2 | 3) ;;
  *) die "kafka-cluster: NODE must be 1, 2 or 3 (got '${1:-}')" ;;
  esac
}

java_common() {
  local dir
  dir="$(node_dir "$1")"
  JAVA_COMMON=(-cp "$(cat "$CP_FILE")"
    "-Dlog4j2.configurationFile=$BQ_BROKERS_DIR/kafka/log4j2.xml"
    "-Dbq.log.dir=$dir/logs" -Djava.awt.headless=true)
}

# render NODE: writes node NODE's server.properties.
render() {
  local dir
  dir="$(node_dir "$1")"
  sed -e "s#@NODE_ID@#$1#g" \
    -e "s#@VOTERS@#$(voters)#g" \
    -e "s#@PLAINTEXT_PORT@#$(client_port "$1")#g" \
    -e "s#@CONTROLLER_PORT@#$(controller_port "$1")#g" \
    -e "s#@DATA_DIR@#$dir/data#g" \
    "$BQ_BROKERS_DIR/kafka/cluster.properties.in" >"$dir/server.properties"
}

# format NODE CLUSTER_ID: formats node NODE's log directory.
format() {
  local dir
  dir="$(node_dir "$1")"
  java_common "$1"
  if ! timeout 180 java "${JAVA_COMMON[@]}" -Xmx256m kafka.tools.StorageTool format \
    --config "$dir/server.properties" --cluster-id "$2" >"$dir/logs/format.out" 2>&1; then
    tail_logs "$dir/logs" format.out
    return 1
  fi
}

# launch NODE: starts node NODE's JVM detached (its own session) and waits
# for its pid file; it does not wait for the node to serve.
launch() {
  local dir
  dir="$(node_dir "$1")"
  java_common "$1"
  local java_args=("${JAVA_COMMON[@]}")
  # shellcheck disable=SC2206
  java_args+=($CLUSTER_HEAP)
  java_args+=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
    -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError
    kafka.Kafka "$dir/server.properties")
  rm -f "$dir/pid"
  spawn_jvm "kafka-cluster: node $1" "$dir" kafka.out "${java_args[@]}"
}

live_pids() {
  local n out=()
  for n in "${NODES[@]}"; do
    if pid_alive "$(node_dir "$n")/pid"; then out+=("$(cat "$(node_dir "$n")/pid")"); fi
  done
  (IFS=,; printf '%s' "${out[*]}")
}

# probe_cluster TIMEOUT [NODE]: waits until every node (or NODE alone, asked
# through its own listener) is a live broker; for the whole cluster also
# until a topic with three in-sync replicas exists.
probe_cluster() {
  local bin
  bin="$(probe_bin)"
  if [ -n "${2:-}" ]; then
    "$bin" kafka-cluster -brokers "$BQ_HOST:$(client_port "$2")" -nodes "$2" \
      -pids "$(cat "$(node_dir "$2")/pid" 2>/dev/null || echo 0)" -timeout "$1"
  else
    "$bin" kafka-cluster -brokers "$(all_brokers)" -nodes "1,2,3" -replicas 3 -pids "$(live_pids)" -timeout "$1"
  fi
}

rss_line() {
  local n pidfile out=()
  for n in "${NODES[@]}"; do
    pidfile="$(node_dir "$n")/pid"
    out+=("node$n=$(($(rss_kib "$pidfile") / 1024))MiB")
  done
  printf '%s' "${out[*]}"
}

stop_all() {
  local n
  for n in "${NODES[@]}"; do
    BQ_STOP_GRACE="${BQ_STOP_GRACE:-20}" stop_pid "$(node_dir "$n")/pid" "kafka-cluster node $n" &
  done
  wait
}

do_up() {
  local n running=0 started cluster_id rc
  CP_FILE="$(resolve_classpath kafka "$BQ_BROKERS_DIR/kafka")"
  for n in "${NODES[@]}"; do
    pid_alive "$(node_dir "$n")/pid" && running=$((running + 1))
  done
  if [ "$running" = 3 ] && probe_cluster 20s >/dev/null 2>&1; then
    log "kafka-cluster: already running ($(rss_line))"
    cat "$ENVFILE"
    return 0
  fi
  if [ "$running" != 0 ]; then
    log "kafka-cluster: $running of 3 nodes alive but the cluster does not serve; starting it afresh"
    stop_all
  fi
  local p
  for p in "${CLIENT_PORTS[@]}" "${CONTROLLER_PORTS[@]}"; do
    if port_busy "$p"; then
      die "kafka-cluster: port $BQ_HOST:$p is taken by another process (see: ss -ltnp | grep :$p); stop it or set BQ_KAFKA_CLUSTER_PORTS / BQ_KAFKA_CLUSTER_CONTROLLER_PORTS"
    fi
  done

  rm -rf "${CLUSTER_STATE:?}"/node* "$ENVFILE"
  cluster_id="$(new_cluster_id)"
  log "kafka-cluster: formatting three nodes (cluster id $cluster_id, voters $(voters))"
  started=$(date +%s)
  for n in "${NODES[@]}"; do
    mkdir -p "$(node_dir "$n")/data" "$(node_dir "$n")/logs"
    render "$n"
    format "$n" "$cluster_id" &
  done
  for n in "${NODES[@]}"; do
    wait -n || die "kafka-cluster: formatting a node's storage failed (output above)"
  done
  log "kafka-cluster: starting nodes on $(all_brokers) (controllers on ${CONTROLLER_PORTS[*]})"
  for n in "${NODES[@]}"; do launch "$n"; done
  rc=0
  probe_cluster "${CLUSTER_START_TIMEOUT}s" >"$CLUSTER_STATE/probe.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    for n in "${NODES[@]}"; do tail_logs "$(node_dir "$n")/logs" server.log kafka.out; done
    cat "$CLUSTER_STATE/probe.out" >&2
    stop_all
    die "kafka-cluster: did not come up (limit ${CLUSTER_START_TIMEOUT}s; logs in $CLUSTER_STATE/node*/logs)"
  fi
  env_lines >"$ENVFILE"
  log "kafka-cluster: serving after $(($(date +%s) - started))s (format + start; rss $(rss_line); logs in $CLUSTER_STATE/node*/logs)"
  cat "$ENVFILE"
}

do_down() {
  stop_all
  local n
  for n in "${NODES[@]}"; do rm -rf "$(node_dir "$n")/data" "$(node_dir "$n")/server.properties"; done
  rm -f "$ENVFILE"
}

do_status() {
  local n pidfile ok=0
  for n in "${NODES[@]}"; do
    pidfile="$(node_dir "$n")/pid"
    if pid_alive "$pidfile"; then
      printf 'node%s: pid %s, %s:%s, rss %s MiB\n' "$n" "$(cat "$pidfile")" "$BQ_HOST" "$(client_port "$n")" "$(($(rss_kib "$pidfile") / 1024))" >&2
    else
      printf 'node%s: down\n' "$n" >&2
      ok=1
    fi
  done
  [ "$ok" = 0 ] || return 1
  probe_cluster 10s >/dev/null 2>&1
}

do_env() {
  [ -s "$ENVFILE" ] || die "kafka-cluster: not running (start it with tools/brokers/kafka-cluster.sh up)"
  cat "$ENVFILE"
}

do_kill() {
  local pidfile pid
  check_node "$1"
  pidfile="$(node_dir "$1")/pid"
  pid_alive "$pidfile" || die "kafka-cluster: node $1 is not running"
  pid="$(cat "$pidfile")"
  kill -KILL "$pid"
  for _ in $(seq 1 100); do
    pid_alive "$pidfile" || break
    sleep 0.05
  done
  pid_alive "$pidfile" && die "kafka-cluster: node $1 (pid $pid) survived kill -9"
  rm -f "$pidfile"
  log "kafka-cluster: node $1 (pid $pid) killed with SIGKILL; its data is kept"
}

do_start() {
  local dir started rc
  check_node "$1"
  dir="$(node_dir "$1")"
  [ -s "$dir/server.properties" ] || die "kafka-cluster: node $1 was never formatted (run: kafka-cluster.sh up)"
  if pid_alive "$dir/pid"; then
    log "kafka-cluster: node $1 already running (pid $(cat "$dir/pid"))"
    return 0
  fi
  CP_FILE="$(resolve_classpath kafka "$BQ_BROKERS_DIR/kafka")"
  started=$(date +%s)
  launch "$1"
  rc=0
  probe_cluster "${CLUSTER_START_TIMEOUT}s" "$1" >"$dir/logs/probe.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    tail_logs "$dir/logs" server.log kafka.out probe.out
    die "kafka-cluster: node $1 did not come back (limit ${CLUSTER_START_TIMEOUT}s)"
  fi
  log "kafka-cluster: node $1 serving again after $(($(date +%s) - started))s (pid $(cat "$dir/pid"), rss $(($(rss_kib "$dir/pid") / 1024)) MiB)"
}

do_leader() {
  [ -n "${1:-}" ] && [ -n "${2:-}" ] || die "usage: kafka-cluster.sh leader TOPIC PARTITION"
  "$(probe_bin)" kafka-leader -brokers "$(all_brokers)" -topic "$1" -partition "$2"
}

# do_controller prints the active controller: the leader named, with the
# highest epoch, in the quorum-state file of the live nodes (each voter
# writes it when it learns of a new leader).
do_controller() {
  local n f epoch leader best_epoch=-1 best=-1
  for n in "${NODES[@]}"; do
    pid_alive "$(node_dir "$n")/pid" || continue
    f="$(node_dir "$n")/data/__cluster_metadata-0/quorum-state"
    [ -s "$f" ] || continue
    leader="$(grep -o '"leaderId":-\?[0-9]*' "$f" | cut -d: -f2)"
    epoch="$(grep -o '"leaderEpoch":[0-9]*' "$f" | cut -d: -f2)"
    [ -n "$leader" ] && [ -n "$epoch" ] || continue
    if [ "$leader" -ge 0 ] && [ "$epoch" -gt "$best_epoch" ]; then
      best_epoch="$epoch"
      best="$leader"
    fi
  done
  [ "$best" -ge 0 ] || die "kafka-cluster: no live node knows a controller leader"
  # The leader must be alive itself, or the quorum is between leaders.
  pid_alive "$(node_dir "$best")/pid" || die "kafka-cluster: the last known controller (node $best, epoch $best_epoch) is down; no new one elected yet"
  printf '%s\n' "$best"
}

case "${1:-}" in
up) BQ_BROKERS_STATE="$CLUSTER_STATE" with_lock kafka-cluster do_up ;;
down) BQ_BROKERS_STATE="$CLUSTER_STATE" with_lock kafka-cluster do_down ;;
status) do_status ;;
env) do_env ;;
kill) do_kill "${2:-}" ;;
start) BQ_BROKERS_STATE="$CLUSTER_STATE" with_lock kafka-cluster do_start "${2:-}" ;;
leader) do_leader "${2:-}" "${3:-}" ;;
controller) do_controller ;;
*)
  echo "usage: $0 up|down|status|env|kill NODE|start NODE|leader TOPIC PARTITION|controller" >&2
  exit 2
  ;;
esac
