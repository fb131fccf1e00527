#!/usr/bin/env bash
# `make setup`, the first step of `make ci`: installs what the tests need
# besides Go and make, when it is missing, on Debian or Ubuntu (apt-get, as
# root or through sudo): Java 17 and Maven (the real Kafka and Pulsar brokers
# run from Maven Central jars), PostgreSQL and Redis (the outbox and the
# idempotency stores' integration tests), Python 3 (the Python SDK peer of
# make interop). On a machine that has them it only
# prints the versions found; on another system with something missing it
# names what to install and fails.
set -euo pipefail

command -v go >/dev/null || { echo "setup: Go is required (https://go.dev/dl; go.work names the version)" >&2; exit 1; }

need=()
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v redis-server >/dev/null || need+=(redis-server)
{ command -v initdb || ls /usr/lib/postgresql/*/bin/initdb; } >/dev/null 2>&1 || need+=(postgresql)
# make interop builds the Python peer's venv itself (interop/venv.sh, which
# also installs python3-venv where python3 -m venv does not work).
command -v python3 >/dev/null || need+=(python3 python3-venv)

if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "setup: missing ${need[*]}; this is not a Debian or Ubuntu machine: install them, then run make ci again" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "setup: installing ${need[*]} needs root or sudo" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "setup: installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

# What the tests will use; `head` may close a pipe early, which is fine.
go version
{ java -version 2>&1 | head -n 1; } || true
{ mvn -v 2>&1 | head -n 1; } || true
{ redis-server --version | head -n 1; } || true
{ python3 --version; } || true
{ pg=$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -n 1); "$pg" --version; } || true
