#!/usr/bin/env bash
# proxytest.sh: proves that the modules install and resolve as a user gets
# them from a tagged release, before any tag exists.
#
# It writes a file-based module proxy holding every module of versions.txt
# at its listed version, built from the working tree (tools/cmd/modcheck
# proxy), then, with GOWORK=off, a fresh module cache and our modules taken
# from that proxy only (other modules from the module cache already on this
# machine, then from the proxy list `go env GOPROXY` names):
#
#   1. go install github.com/babelqueue/babelqueue-go/tools/cmd/bq@<version>
#      and runs the installed bq;
#   2. for each of core, kafka, pulsar and otel, a scratch service that
#      requires only that module runs go get and go mod tidy; its go.mod must
#      keep its go line and list no fake broker (franz-go, kfake), no other
#      broker's client, and no store's client (pgx, go-redis, sqlite: the
#      idempotency stores and the outbox are opt-in modules).
#
# Usage, from anywhere in the repository: tools/release/proxytest.sh
# Exit status 0 when every check holds; 1 otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PREFIX=github.com/babelqueue/babelqueue-go

# Known gaps, reported but not failing: otel imports the kafka binding in
# non-test code until otel is rebuilt on the App's hooks. Set
# PROXYTEST_STRICT=1 to fail on them too.
STRICT="${PROXYTEST_STRICT:-0}"

work="$(mktemp -d "${TMPDIR:-/tmp}/bq-proxytest.XXXXXX")"
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

version_of() { awk -v m="$1" '$1 == m {print $2}' "$ROOT/versions.txt"; }

upstream="$(cd "$ROOT" && go env GOPROXY)"
shared="$(cd "$ROOT" && go env GOMODCACHE)"
(cd "$ROOT" && go run ./tools/cmd/modcheck proxy -dir "$work/proxy")

list="file://$work/proxy"
[ -d "$shared/cache/download" ] && list="$list,file://$shared/cache/download"
[ -n "$upstream" ] && list="$list,$upstream"

export GOWORK=off GOPROXY="$list" GONOPROXY= GOPRIVATE= GONOSUMDB="$PREFIX" \
  GOFLAGS="-modcacherw -trimpath" GOMODCACHE="$work/modcache" GOTOOLCHAIN=local GOBIN="$work/bin"

fail=0
bad() { echo "proxytest: FAIL: $*" >&2; fail=1; }

# 1. go install bq@<version>
tv="$(version_of tools)"
echo "== go install $PREFIX/tools/cmd/bq@$tv"
mkdir -p "$work/outside" && cd "$work/outside"
if go install "$PREFIX/tools/cmd/bq@$tv" 2>"$work/install.log"; then
  out="$("$work/bin/bq" help 2>&1 || true)"
  if grep -q 'redrive' <<<"$out"; then
    echo "bq installed; bq help lists its commands"
  else
    bad "installed bq did not print its commands: $out"
  fi
  go version -m "$work/bin/bq" | awk -v p="$PREFIX/" '$1 == "mod" || index($2, p) == 1 {print "  " $1, $2, $3}'
else
  cat "$work/install.log" >&2
  bad "go install $PREFIX/tools/cmd/bq@$tv"
fi

# 2. scratch services
# service MODULE GOLINE IMPORT-PATH USE-EXPR FORBIDDEN... [-- KNOWN...]
service() {
  local m="$1" goline="$2" pkg="$3" use="$4"; shift 4
  local forbidden=() known=() seen_sep=0
  for a in "$@"; do
    if [ "$a" = "--" ]; then seen_sep=1; continue; fi
    if [ "$seen_sep" = 1 ]; then known+=("$a"); else forbidden+=("$a"); fi
  done
  local v dir
  v="$(version_of "$m")"
  dir="$work/svc-$m"
  mkdir -p "$dir"
  printf 'module example.com/svc-%s\n\ngo %s\n' "$m" "$goline" >"$dir/go.mod"
  printf 'package main\n\nimport bq "%s"\n\nvar _ = %s\n\nfunc main() {}\n' "$pkg" "$use" >"$dir/main.go"
  echo "== scratch service requiring only $m@$v (go $goline)"
  if ! (cd "$dir" && go get "$PREFIX/$m@$v" && go mod tidy) >"$dir/tidy.log" 2>&1; then
    cat "$dir/tidy.log" >&2
    bad "$m: go get / go mod tidy failed"
    return
  fi
  sed 's/^/  | /' "$dir/go.mod"
  # go.sum also holds what `go test all` needs: the tests of the required
  # module (kafka's use the embedded kfake broker). Reported, not checked.
  zips() { grep -v '/go.mod ' "$dir/go.sum" 2>/dev/null | grep -c "^$1[ /]" || true; }
  echo "  go.sum: $(wc -l <"$dir/go.sum" 2>/dev/null || echo 0) lines; module zips of franz-go: $(zips github.com/twmb/franz-go)," \
    "kafka-go: $(zips "$KAFKA_CLIENT"), pulsar-client-go: $(zips "$PULSAR_CLIENT") (for go test all, not in go.mod)"
  local got
  got="$(awk '$1 == "go" {print $2}' "$dir/go.mod")"
  [ "$got" = "$goline" ] || bad "$m: go mod tidy moved the go line from $goline to $got"
  for f in "${forbidden[@]}"; do
    if grep -q "^[[:space:]]*\(require \)\?$f[ /]" "$dir/go.mod"; then bad "$m: the service's go.mod lists $f"; fi
  done
  for f in "${known[@]}"; do
    if grep -q "^[[:space:]]*\(require \)\?$f[ /]" "$dir/go.mod"; then
      if [ "$STRICT" = 1 ]; then bad "$m: the service's go.mod lists $f"; else echo "  KNOWN GAP: the service's go.mod lists $f"; fi
    fi
  done
  (cd "$dir" && go build ./...) || bad "$m: the scratch service does not build"
}

FAKE=(github.com/twmb/franz-go)
KAFKA_CLIENT=github.com/segmentio/kafka-go
PULSAR_CLIENT=github.com/apache/pulsar-client-go
SIBLINGS_BUT=(brokertest conformance tools idempotency idempotency/sqlstore idempotency/redisstore schema outbox)
STORES=(github.com/jackc/pgx github.com/redis/go-redis modernc.org/sqlite)

sib() { local out=(); for s in "$@"; do out+=("$PREFIX/$s"); done; echo "${out[@]}"; }

# shellcheck disable=SC2046
service core 1.25.0 "$PREFIX/core" 'bq.NewApp' "${FAKE[@]}" "${STORES[@]}" "$KAFKA_CLIENT" "$PULSAR_CLIENT" $(sib kafka pulsar otel "${SIBLINGS_BUT[@]}")
# shellcheck disable=SC2046
service kafka 1.25.0 "$PREFIX/kafka" 'bq.New' "${FAKE[@]}" "${STORES[@]}" "$PULSAR_CLIENT" $(sib pulsar otel "${SIBLINGS_BUT[@]}")
# shellcheck disable=SC2046
service pulsar 1.25.0 "$PREFIX/pulsar" 'bq.New' "${FAKE[@]}" "${STORES[@]}" "$KAFKA_CLIENT" $(sib kafka otel "${SIBLINGS_BUT[@]}")
# shellcheck disable=SC2046
service otel 1.26.0 "$PREFIX/otel" 'bq.New' "${FAKE[@]}" "${STORES[@]}" "$PULSAR_CLIENT" "$KAFKA_CLIENT" $(sib kafka pulsar "${SIBLINGS_BUT[@]}")

if [ "$fail" != 0 ]; then
  echo "proxytest: FAILED" >&2
  exit 1
fi
echo "proxytest: ok (bq@$tv installs from a file proxy of the tree; scratch services stay lean)"
