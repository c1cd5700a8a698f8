#!/usr/bin/env bash
# The linearizability test of the root package (TestLinearizability), run
# longer: CLIENTS loopx client processes × OPS random lease and claim requests
# each, on one repository (local) and through a git daemon on 127.0.0.1 with
# one clone per client (daemon), clients killed with SIGKILL at random points
# and the daemon killed and restarted; the history is checked with porcupine.
# Prints the operation counts and the result (or the path of porcupine's
# visualization of a history that does not linearize).
#
#   bash bench/linearize.sh [ops=500] [clients=8] [modes=local,daemon] [test flags...]
#
# Test flags: -linearize.kill=P (kill probability per attempt), -linearize.seed=N,
# -linearize.kill-daemon=false, -linearize.remote-grace=D, -linearize.check-timeout=D,
# -linearize.out=DIR, -linearize.unknown-codes=CODE,... (diagnosis only).
set -euo pipefail
ops=${1:-500}
clients=${2:-8}
modes=${3:-local,daemon}
shift $(( $# < 3 ? $# : 3 ))
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
go test -count=1 -timeout 4h -run '^TestLinearizability$' -v . -args \
  -linearize.ops="$ops" -linearize.clients="$clients" -linearize.modes="$modes" "$@" |
  grep -v -e '^=== RUN'
