#!/usr/bin/env bash
# Starts or stops the local AWS emulator (MiniStack, from .venv) on port 4566.
#
#   scripts/emulator.sh start     start MiniStack unless something already answers on the port
#   scripts/emulator.sh release   stop it only if the same caller started it (for a script's
#                                 exit trap: an emulator that was already running, e.g. from
#                                 make emulator, is left alone)
#   scripts/emulator.sh stop      stop the MiniStack this script started, whoever asked
#
# HOOKLEDGER_EMULATOR_PORT changes the port (default 4566).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${HOOKLEDGER_EMULATOR_PORT:-4566}"
state="$root/.ministack"
pidfile="$state/pid-$port"
ownerfile="$state/owner-$port" # the process that ran start (the calling script)

answers() { curl -s -o /dev/null --max-time 2 "http://localhost:$port/_ministack/health" || curl -s -o /dev/null --max-time 2 "http://localhost:$port/"; }

case "${1:-}" in
start)
  if answers; then
    echo "emulator: something already answers on :$port; using it" >&2
    exit 0
  fi
  if [[ ! -x "$root/.venv/bin/ministack" ]]; then
    echo "emulator: .venv/bin/ministack missing; run scripts/tools.sh (make tools) first" >&2
    exit 1
  fi
  mkdir -p "$state"
  GATEWAY_PORT="$port" nohup "$root/.venv/bin/ministack" >"$state/log-$port" 2>&1 &
  echo $! >"$pidfile"
  echo "$PPID" >"$ownerfile"
  for _ in $(seq 1 120); do
    if answers; then
      echo "emulator: MiniStack up on :$port (pid $(cat "$pidfile"), log $state/log-$port)" >&2
      exit 0
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "emulator: MiniStack exited at start; its log:" >&2
      tail -20 "$state/log-$port" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "emulator: MiniStack did not answer on :$port within 60s; see $state/log-$port" >&2
  exit 1
  ;;
release)
  if [[ ! -f "$ownerfile" || "$(cat "$ownerfile")" != "$PPID" ]]; then
    exit 0 # not started by this caller: someone else's emulator stays up
  fi
  exec "$0" stop
  ;;
stop)
  if [[ -f "$pidfile" ]]; then
    pid="$(cat "$pidfile")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile" "$ownerfile"
    echo "emulator: stopped MiniStack on :$port" >&2
  fi
  ;;
*)
  echo "usage: scripts/emulator.sh start|release|stop" >&2
  exit 2
  ;;
esac
