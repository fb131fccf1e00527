# shellcheck shell=bash
# Shared helpers for the broker scripts. Sourced, never run.
#
# Layout:
#   BQ_BROKERS_STATE  (default ${TMPDIR:-/tmp}/babelqueue-brokers)
#       <broker>/pid         pid of the running JVM
#       <broker>/data/       broker data, removed by down (kept by kill/restart)
#       <broker>/logs/       broker log files (kept by down for post-mortems
#                            until the next up)
#       <broker>/env         the BQ_* lines of the running broker
#   BQ_BROKERS_CACHE  (default ${XDG_CACHE_HOME:-$HOME/.cache}/babelqueue/brokers)
#       <broker>-<pom sha>.classpath   resolved jar list (jars live in ~/.m2)
#       bin/bqprobe-<source sha>       readiness probe (built from ../probe)

BQ_BROKERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BQ_TOOLS_DIR="$(cd "$BQ_BROKERS_DIR/.." && pwd)"
BQ_BROKERS_STATE="${BQ_BROKERS_STATE:-${TMPDIR:-/tmp}/babelqueue-brokers}"
BQ_BROKERS_CACHE="${BQ_BROKERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/babelqueue/brokers}"
BQ_HOST=127.0.0.1

# log prints a progress line on stderr; stdout carries only the BQ_* lines.
log() { printf '[brokers %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

die() {
  printf '[brokers] ERROR: %s\n' "$*" >&2
  exit 1
}

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is required but not on PATH ($2)"
}

# port_busy PORT: true when something accepts connections on 127.0.0.1:PORT.
port_busy() {
  (exec 3<>"/dev/tcp/$BQ_HOST/$1") 2>/dev/null
}

# pid_alive PIDFILE: true when the file names a live process (a zombie,
# exited but not yet reaped, counts as gone).
pid_alive() {
  local pid state
  [ -s "$1" ] || return 1
  pid="$(cat "$1")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [ "$state" != Z ] || return 1
  # A pid file left by a machine restart may name an unrelated process that
  # reuses the number: only a JVM (or the shell about to become one) counts.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -Eq '(^|/| )(java|bash|sh) ' || return 1
}

# tail_logs DIR FILE...: prints the end of the named files in DIR (those
# that exist and are not empty), for diagnosis.
tail_logs() {
  local dir="$1" f
  shift
  for f in "$@"; do
    [ -s "$dir/$f" ] || continue
    printf '\n----- last 60 lines of %s -----\n' "$dir/$f" >&2
    tail -n 60 "$dir/$f" >&2
  done
  printf -- '-----\n' >&2
}

# warn_digest BROKER: prints the last warnings and errors of the broker's
# logs (kept after down), so a failed run's output says what the broker saw.
warn_digest() {
  local f
  for f in "$BQ_BROKERS_STATE/$1"/logs/*.log; do
    [ -s "$f" ] || continue
    printf '\n----- last warnings and errors in %s -----\n' "$f" >&2
    grep -E 'WARN|ERROR|FATAL|PANIC|Exception' "$f" | tail -n 40 | cut -c1-400 >&2 || true
  done
}

# with_lock NAME CMD...: runs CMD while holding an exclusive lock, so two
# concurrent up/down calls never race on the same broker.
with_lock() {
  local name="$1"
  shift
  mkdir -p "$BQ_BROKERS_STATE"
  (
    if command -v flock >/dev/null 2>&1; then
      if ! flock -n 9; then
        log "$name: another start or stop is running; waiting for it (lock $BQ_BROKERS_STATE/$name.lock)"
        flock -w "${BQ_LOCK_TIMEOUT:-1800}" 9 || die "$name: timed out waiting for the lock $BQ_BROKERS_STATE/$name.lock"
      fi
    fi
    "$@"
  ) 9>"$BQ_BROKERS_STATE/$name.lock"
}

# resolve_classpath NAME POMDIR: prints the path of a file holding the
# broker's classpath, resolving it with Maven on first use. The result is
# cached per pom content; a cache entry whose jars went missing is redone.
resolve_classpath() {
  local name="$1" pomdir="$2" sum cp_file tmp mvn_log jar ok attempt
  need java "install a Java 17+ JDK"
  need mvn "install Apache Maven 3.8+"
  sum="$(cat "$pomdir/pom.xml" "${BQ_MAVEN_SETTINGS:-$BQ_BROKERS_DIR/maven-settings.xml}" | sha256sum | cut -c1-16)"
  mkdir -p "$BQ_BROKERS_CACHE"
  cp_file="$BQ_BROKERS_CACHE/$name-$sum.classpath"
  if [ -s "$cp_file" ]; then
    ok=1
    while IFS= read -r jar; do
      [ -f "$jar" ] || { ok=0; break; }
    done < <(tr ':' '\n' <"$cp_file")
    if [ "$ok" = 1 ]; then
      printf '%s\n' "$cp_file"
      return 0
    fi
    log "$name: cached classpath refers to missing jars; resolving again"
  fi
  mvn_log="$BQ_BROKERS_CACHE/$name-mvn.log"
  tmp="$cp_file.tmp.$$"
  for attempt in 1 2; do
    log "$name: resolving jars with Maven (attempt $attempt; first run downloads them into ~/.m2)"
    if timeout "${BQ_MVN_TIMEOUT:-1500}" mvn -B -q -f "$pomdir/pom.xml" \
      -s "${BQ_MAVEN_SETTINGS:-$BQ_BROKERS_DIR/maven-settings.xml}" \
      dependency:build-classpath -Dmdep.outputFile="$tmp" -Dmdep.includeScope=runtime \
      >"$mvn_log" 2>&1 && [ -s "$tmp" ]; then
      mv "$tmp" "$cp_file"
      printf '%s\n' "$cp_file"
      return 0
    fi
    rm -f "$tmp"
  done
  printf '\n----- last 40 lines of %s -----\n' "$mvn_log" >&2
  tail -n 40 "$mvn_log" >&2
  die "$name: Maven could not resolve $pomdir/pom.xml (timeout ${BQ_MVN_TIMEOUT:-1500}s; log above)"
}

# probe_bin: prints the path of the readiness probe, building it on first
# use. The binary is named after a hash of its sources and of the tools
# module's requirements, so checkouts of different versions sharing the cache
# never run each other's probe (linking it takes seconds on a busy machine,
# so a matching binary is reused). Binaries of other versions unused for a
# day are removed.
probe_bin() {
  need go "install Go 1.25+"
  local sum bin
  sum="$(cat "$BQ_BROKERS_DIR"/probe/*.go "$BQ_TOOLS_DIR/go.mod" "$BQ_TOOLS_DIR/go.sum" | sha256sum | cut -c1-16)"
  bin="$BQ_BROKERS_CACHE/bin/bqprobe-$sum"
  mkdir -p "$BQ_BROKERS_CACHE/bin"
  if [ -x "$bin" ]; then
    touch "$bin"
    printf '%s\n' "$bin"
    return 0
  fi
  if ! (cd "$BQ_TOOLS_DIR" && go build -o "$bin.tmp.$$" ./brokers/probe) >"$BQ_BROKERS_CACHE/probe-build.log" 2>&1; then
    cat "$BQ_BROKERS_CACHE/probe-build.log" >&2
    rm -f "$bin.tmp.$$"
    die "could not build the readiness probe (tools/brokers/probe)"
  fi
  mv "$bin.tmp.$$" "$bin"
  find "$BQ_BROKERS_CACHE/bin" -maxdepth 1 -name 'bqprobe-*' ! -name "bqprobe-$sum" -mtime +0 -delete 2>/dev/null || true
  printf '%s\n' "$bin"
}

# stop_pid PIDFILE NAME: stops the process (TERM, then KILL after a grace
# period) and removes the pid file.
stop_pid() {
  local pidfile="$1" name="$2" pid
  if pid_alive "$pidfile"; then
    pid="$(cat "$pidfile")"
    log "$name: stopping pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 "${BQ_STOP_GRACE:-30}"); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name: pid $pid still alive after ${BQ_STOP_GRACE:-30}s; killing"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
    fi
  fi
  rm -f "$pidfile"
}

# kill9_pid PIDFILE NAME: kill -9 the process, as a crash would (no
# shutdown hook runs), waits until it is gone and removes the pid file. The
# data, certificates and env file stay, for the broker's start verb.
kill9_pid() {
  local pidfile="$1" name="$2" pid
  if ! pid_alive "$pidfile"; then
    die "$name: not running (nothing to kill)"
  fi
  pid="$(cat "$pidfile")"
  log "$name: kill -9 pid $pid (data kept)"
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    die "$name: pid $pid survived kill -9"
  fi
  rm -f "$pidfile"
}

# rss_kib PIDFILE: resident memory of the process in KiB (0 when gone).
rss_kib() {
  local pid
  pid_alive "$1" || { echo 0; return; }
  pid="$(cat "$1")"
  awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0
}

# new_cluster_id prints a Kafka cluster id: 16 random bytes in URL-safe
# base64 without padding. One that starts with '-' is drawn again, since the
# storage tool would read it as an option (about one id in 32).
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    [[ $id == -* ]] || break
  done
  printf '%s\n' "$id"
}

# spawn_jvm WHAT DIR OUT JAVA_ARG...: starts java from DIR in its own
# session (setsid), so the caller's Ctrl-C or exit does not kill it, with its
# output appended to DIR/logs/OUT. The wrapper records its own pid in
# DIR/pid, then becomes java; dies when no pid shows within 5 s.
spawn_jvm() {
  local what="$1" dir="$2" out="$3"
  shift 3
  (
    exec 9>&- </dev/null >>"$dir/logs/$out" 2>&1
    cd "$dir"
    # shellcheck disable=SC2016 # $$ and $@ belong to the inner shell.
    exec setsid bash -c 'echo $$ >"$0"; exec java "$@"' "$dir/pid" "$@"
  ) &
  for _ in $(seq 1 50); do
    [ -s "$dir/pid" ] && break
    sleep 0.1
  done
  [ -s "$dir/pid" ] || die "$what: the JVM did not start (see $dir/logs/$out)"
}

# await_serving NAME PROBE_BIN LIMIT STARTED LOG...: for a single-broker
# script (DIR, PIDFILE, ENVFILE, probe and env_lines of its own): runs probe
# until the broker serves, within LIMIT seconds, then writes and prints the
# BQ_* lines. When it does not serve, it prints the ends of the LOG files
# and probe.out, stops the JVM and dies. STARTED is the start's epoch second.
await_serving() {
  local name="$1" probe_bin="$2" limit="$3" started="$4" rc=0
  shift 4
  probe "$probe_bin" "${limit}s" >"$DIR/logs/probe.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    tail_logs "$DIR/logs" "$@" probe.out
    stop_pid "$PIDFILE" "$name"
    die "$name: did not come up (limit ${limit}s; probe output and log tails above, full logs in $DIR/logs)"
  fi
  env_lines >"$ENVFILE"
  log "$name: serving after $(($(date +%s) - started))s (pid $(cat "$PIDFILE"), rss $(($(rss_kib "$PIDFILE") / 1024)) MiB, logs in $DIR/logs)"
  cat "$ENVFILE"
}

# service_main NAME ENVFILE VERB: runs the verb of a script whose functions
# up, down and running manage a service without a JVM (postgres.sh,
# redis.sh): up and down hold the service's lock, status exits 0 when it
# runs, env prints the BQ_* lines of the running service from ENVFILE.
service_main() {
  local name="$1" envfile="$2"
  case "${3:-}" in
  up) with_lock "$name" up ;;
  down) with_lock "$name" down ;;
  status) running ;;
  env) running && cat "$envfile" ;;
  *)
    echo "usage: $0 up|down|status|env" >&2
    exit 2
    ;;
  esac
}

# ports_free WHAT HINT PORT...: dies naming the first of the ports that
# something on BQ_HOST accepts connections on, with HINT saying what to do.
ports_free() {
  local what="$1" hint="$2" p
  shift 2
  for p in "$@"; do
    if port_busy "$p"; then
      die "$what: port $BQ_HOST:$p is taken (see: ss -ltnp | grep :$p); $hint"
    fi
  done
}

# reuse_running NAME PROBE_BIN LIMIT TLS_VAR HINT: for a single-broker
# script (DIR, PIDFILE, ENVFILE, probe of its own). When its JVM runs and
# the probe sees it serve within LIMIT, prints its BQ_* lines (logging HINT
# when they lack TLS_VAR, a broker started before TLS) and returns 0. A JVM
# that runs without serving is stopped; then, or when none runs, returns 1.
reuse_running() {
  local name="$1" probe_bin="$2" limit="$3" tls_var="$4" hint="$5"
  pid_alive "$PIDFILE" || return 1
  if probe "$probe_bin" "$limit" >/dev/null 2>"$DIR/logs/probe.err"; then
    log "$name: already running (pid $(cat "$PIDFILE"))"
    grep -q "^$tls_var=" "$ENVFILE" || log "$name: $hint"
    cat "$ENVFILE"
    return 0
  fi
  log "$name: pid $(cat "$PIDFILE") is alive but does not serve; restarting it"
  cat "$DIR/logs/probe.err" >&2 || true
  stop_pid "$PIDFILE" "$name"
  return 1
}
