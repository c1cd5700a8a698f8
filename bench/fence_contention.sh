#!/usr/bin/env bash
# Local contention on the writer fence: N agent processes on one repository,
# each running task-lease acquire → renew → release cycles on its own todo
# (own scope, so no decision ever refuses) for a fixed time. Prints, per N:
# mutations per second (all agents together), p50, p99 and max latency of
# one mutation (one loopx process, measured around it with $EPOCHREALTIME),
# and the slowest agent's cycle count against the fastest's (starvation).
#
#   bash bench/fence_contention.sh [agents="8 16"] [seconds=20] [loopx binary]
#
# Give a loopx binary built from another commit as the third argument to
# compare two builds in one run (run the script once per binary).
set -euo pipefail
agents=${1:-"8 16"}
secs=${2:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${3:-}" ]; then
  loopx=$3
else
  go build -o "$work/loopx" "$root/cmd/loopx"
  loopx="$work/loopx"
fi
export LOOPX_FORMAT=json LOOPX_LOCK_TIMEOUT=60s GIT_CONFIG_NOSYSTEM=1 \
  GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

# agent REPO I DEADLINE: cycles until DEADLINE (epoch seconds), one latency
# line (microseconds) per mutation in $work/lat.I, failures in $work/err.I.
agent() {
  local repo=$1 i=$2 deadline=$3 j=0 v t0 t1 out
  : >"$work/lat.$i"
  while ((${EPOCHREALTIME%.*} < deadline)); do
    t0=$EPOCHREALTIME
    out=$("$loopx" --repo "$repo" task-lease acquire --goal-id g --todo-id "todo_agent$i" --owner "a$i" \
      --idempotency-key "k$j" --ttl-seconds 600 --write-scope "w$i/**") || { echo "$out" >>"$work/err.$i"; j=$((j + 1)); continue; }
    t1=$EPOCHREALTIME
    echo $(((${t1/./} - ${t0/./}))) >>"$work/lat.$i"
    v=$(jq -r .lease.version <<<"$out")
    t0=$EPOCHREALTIME
    out=$("$loopx" --repo "$repo" task-lease renew --goal-id g --todo-id "todo_agent$i" --owner "a$i" \
      --idempotency-key "k$j" --expected-version "$v" --ttl-seconds 600) || echo "$out" >>"$work/err.$i"
    t1=$EPOCHREALTIME
    echo $(((${t1/./} - ${t0/./}))) >>"$work/lat.$i"
    v=$((v + 1))
    t0=$EPOCHREALTIME
    out=$("$loopx" --repo "$repo" task-lease release --goal-id g --todo-id "todo_agent$i" --owner "a$i" \
      --idempotency-key "k$j" --expected-version "$v") || echo "$out" >>"$work/err.$i"
    t1=$EPOCHREALTIME
    echo $(((${t1/./} - ${t0/./}))) >>"$work/lat.$i"
    j=$((j + 1))
  done
}

printf '%-7s %9s %9s %9s %9s %12s %7s\n' agents ops/s p50_ms p99_ms max_ms min/max_ops errors
for n in $agents; do
  repo="$work/repo$n"
  mkdir -p "$repo"
  "$loopx" --repo "$repo" init >/dev/null
  "$loopx" --repo "$repo" goal create --goal-id g >/dev/null
  for ((i = 0; i < n; i++)); do
    "$loopx" --repo "$repo" agent register --goal-id g --agent-id "a$i" >/dev/null
    "$loopx" --repo "$repo" todo add --goal-id g --todo-id "todo_agent$i" --text "agent $i" >/dev/null
  done
  rm -f "$work"/lat.* "$work"/err.*
  start=$EPOCHREALTIME
  deadline=$((${start%.*} + secs))
  for ((i = 0; i < n; i++)); do agent "$repo" "$i" "$deadline" & done
  wait
  end=$EPOCHREALTIME
  elapsed_us=$((${end/./} - ${start/./}))
  total=$(cat "$work"/lat.* | wc -l)
  errs=$( (cat "$work"/err.* 2>/dev/null || true) | wc -l)
  per=$(for f in "$work"/lat.*; do wc -l <"$f"; done | sort -n)
  sort -n "$work"/lat.* >"$work/all"
  pct() { awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p); if (i<1) i=1; if (i>NR) i=NR; printf "%.1f", a[i]/1000}' "$work/all"; }
  printf '%-7s %9.1f %9s %9s %9s %12s %7s\n' "$n" "$(echo "$total * 1000000 / $elapsed_us" | bc -l)" \
    "$(pct 0.50)" "$(pct 0.99)" "$(pct 1.0)" "$(head -1 <<<"$per")/$(tail -1 <<<"$per")" "$errs"
done
