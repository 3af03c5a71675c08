#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine (as root) or a developer box.
# Installs the system packages the project uses, creates .venv and installs the
# project with its dev extras.  Re-running it does only what is missing.
#
#   scripts/setup.sh            # everything (apt + venv + pip)
#   SAATP_NO_APT=1 scripts/setup.sh   # skip apt (no root, or already installed)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
PY=${PYTHON:-python3}
VENV=${SAATP_VENV:-$here/.venv}
stamp_dir=$VENV/.saatp-setup
APT_PKGS=(iproute2 ethtool mininet bridge-utils iputils-ping tcpdump gcc libc6-dev python3-dev)  # gcc + headers: ptf's netifaces has no wheel

log() { printf '[setup] %s\n' "$*" >&2; }

if [[ -z ${SAATP_NO_APT:-} && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  missing=()
  for p in "${APT_PKGS[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "apt: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || log "apt-get update failed; trying install anyway"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || log "apt: some packages failed to install (${missing[*]}); root-only tests will skip"
  fi
fi

if [[ ! -x $VENV/bin/python ]]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
mkdir -p "$stamp_dir"
pip=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)

# torch first, pinned to the wheel that lies on this disk (a looser pin pulls a CUDA build).
if [[ ! -f $stamp_dir/torch ]]; then
  if "$VENV/bin/python" -c 'import torch' 2>/dev/null; then :; else
    log "pip: torch==2.13.0"
    "${pip[@]}" torch==2.13.0
  fi
  touch "$stamp_dir/torch"
fi

# the project itself; re-install when pyproject.toml changes.
sum=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp_dir/project || $(cat "$stamp_dir/project") != "$sum" ]]; then
  log "pip: -e .[dev]"
  "${pip[@]}" -e ".[dev]"
  echo "$sum" > "$stamp_dir/project"
fi
# p4runtime-shell pins an old protobuf, so it lives in a venv of its own; the interoperability
# tests use it when present and skip (naming it) when it could not be installed.
P4SH=${SAATP_P4SH_VENV:-$here/.venv-p4sh}
if [[ -z ${SAATP_NO_P4SH:-} && ! -f $P4SH/.saatp-ok ]]; then
  log "p4runtime-shell venv: $P4SH"
  if "$PY" -m venv "$P4SH" && "$P4SH/bin/python" -m pip install -q --disable-pip-version-check p4runtime-shell; then
    touch "$P4SH/.saatp-ok"
  else
    log "p4runtime-shell could not be installed; its tests will skip"
  fi
fi
log "ready: $VENV"
