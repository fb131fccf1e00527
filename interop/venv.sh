#!/usr/bin/env bash
# Prepares the Python peer's virtual environment and prints its directory.
#
# The venv holds the pinned requirements of peer/requirements.txt and lives
# under the user's cache, named by the requirements' hash:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/babelqueue/interop-venv-<sha256 prefix>
# so a second run reuses it and a changed pin builds a new one. When
# `python3 -m venv` is unavailable (Debian and Ubuntu ship it apart), the
# python3-venv package is installed with apt-get (as root, or through
# sudo). A venv is used only once its marker file exists, written after a
# complete install, so an interrupted install is redone.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="$here/peer/requirements.txt"
hash="$(sha256sum "$req" | cut -c1-16)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/babelqueue/interop-venv-$hash"
log() { echo "interop venv: $*" >&2; }

if [ -f "$dir/.complete" ] && "$dir/bin/python" -c 'import babelqueue, confluent_kafka, pulsar, cryptography' 2>/dev/null; then
  echo "$dir"
  exit 0
fi

command -v python3 >/dev/null || { log "python3 is required"; exit 1; }
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
if ! python3 -m venv "$probe/v" >/dev/null 2>&1 || [ ! -x "$probe/v/bin/pip" ]; then
  command -v apt-get >/dev/null || { log "python3 -m venv does not work and apt-get is unavailable: install python3-venv"; exit 1; }
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  ver="$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  log "python3 -m venv does not work; installing python3-venv with apt-get"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null ||
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$ver-venv" >/dev/null
fi

rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
log "creating $dir"
python3 -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
"$dir/bin/python" -c 'import babelqueue, confluent_kafka, pulsar, cryptography; print("interop venv: babelqueue", babelqueue.__version__)' >&2
touch "$dir/.complete"
echo "$dir"
