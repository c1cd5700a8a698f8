#!/usr/bin/env bash
# Capacity of one Git server: N agents, each holding a task lease with
# `loopx run --ttl-seconds TTL` (renewed about every TTL/3) on a new todo
# every PERIOD seconds (acquire, hold, release), all through one
# `git daemon` behind a Toxiproxy adding LATENCY_MS each way, for DURATION
# seconds per N (DURATION/PERIOD cycles per agent). Each agent has its own
# clone; agents start spread over one period, as agents that do not start in
# step, so one N takes DURATION plus up to one PERIOD.
#
# Per N it reports: mutations per second (all agents, over the whole span,
# staggered start and end included), p50/p99 of each
# operation of the loop (acquire, renew, release: the store call as
# `loopx run` times it under LOOPX_TX_STATS=1), lost compare-and-swaps per
# update, renewals answered with an error (transient ones are retried; a
# refusal or a late one loses the lease), leases lost (a run
# that exited 4: a renewal refused, or none succeeded in time; the number
# that must stay 0), and the CPU seconds of the clients (every loopx and
# git process of the agents), of the server (git daemon and what it
# forked) and of the proxy, with each as a share of the machine's cores, and
# the machine's 5-minute load average at the end (other work shares it).
# It writes OUT/capacity.tsv and draws OUT/capacity.png (bench/capplot,
# the standard library's image/png).
#
#   NS="8 16 32 64 128" DURATION=600 PERIOD=60 TTL=60 LATENCY_MS=25 \
#     OUT=bench/capacity bash bench/capacity.sh [loopx binary]
#
# KEEP=DIR keeps each N's transaction lines there (stderr-nN.txt, each
# prefixed by the second it ended, agent and cycle), and a timeline
# sampled every second (timeline-nN.txt: time, load, the git pack-objects
# processes running on the server and in the clones, the server's packs),
# and every 5 s the processes that used most CPU in one second (top-nN.txt).
# POLL=D: each run polls the server's head every D (`loopx run --poll`;
# default: run's own, a sixth of the TTL within 2s..30s): one connection
# per agent per D, and a fetch when it moved.
# DECIDE=1: the server's pre-receive hook is loopx's, installed with
# --decide: requests are decided by the server in order (each clone's
# first mutation is a compare-and-swap push, on which it learns that).
#
# A short run: NS="4 8" DURATION=60 bash bench/capacity.sh
#
# AGENTS_PER_PROXY (default 8): agents per Toxiproxy listener (each with
# the same latency toxics, in one Toxiproxy process).
#
# MUST_HOLD (default 64, the target: 64 agents with a 60 s TTL): the
# script exits 1, after writing its table and plot, when any N up to
# MUST_HOLD lost a lease (larger N are measured, not judged).
#
# Toxiproxy (v2.5.0) is built with `go install` into a temporary GOBIN: it is
# no dependency of loopx's module. Needs git, go, jq.
set -euo pipefail
NS=${NS:-"8 16 32 64 128"}
DURATION=${DURATION:-600}
PERIOD=${PERIOD:-60}
TTL=${TTL:-60}
LATENCY_MS=${LATENCY_MS:-25}
TOXIPROXY_VERSION=${TOXIPROXY_VERSION:-v2.5.0}
MUST_HOLD=${MUST_HOLD:-64}
failed_ns=""
root=${SRC:-$(cd "$(dirname "$0")/.." && pwd)} # SRC: the source tree, when this script runs from a copy
OUT=${OUT:-$root/bench/capacity}
work=$(mktemp -d)
pids_to_stop=()
cleanup() {
  for p in "${pids_to_stop[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for tool in git go jq; do
  command -v "$tool" >/dev/null || { echo "capacity.sh needs $tool" >&2; exit 2; }
done
mkdir -p "$OUT" "$work/bin"

echo "# building loopx, the plot and Toxiproxy $TOXIPROXY_VERSION" >&2
if [ -n "${1:-}" ]; then
  loopx=$1
else
  (cd "$root" && go build -o "$work/bin/loopx" ./cmd/loopx)
  loopx="$work/bin/loopx"
fi
(cd "$root" && go build -o "$work/bin/capplot" ./bench/capplot)
GOBIN="$work/bin" GOFLAGS= go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
  "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"

export LOOPX_FORMAT=json LOOPX_LOCK_TIMEOUT=120s GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 \
  GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

# free_port: a TCP port nobody listens on (a guess, checked).
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
# wait_port P: until something listens on P (10 s at most).
wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "capacity.sh: nothing listens on port $1" >&2
  return 1
}

# The server, and the proxy in front of it.
daemon_port=$(free_port)
mkdir -p "$work/srv"
# git-daemon itself (not the `git` that would run it as a child), so that
# its /proc CPU counts the connections it forked and reaped. Its default
# limit of 32 connections at once (beyond it, it closes some) is an
# operator's setting: raised, so that the server's capacity is measured.
"$(git --exec-path)/git-daemon" --max-connections=512 --reuseaddr --export-all --enable=receive-pack --base-path="$work/srv" \
  --listen=127.0.0.1 --port="$daemon_port" "$work/srv" 2>"$work/daemon.log" &
daemon_pid=$!
pids_to_stop+=("$daemon_pid")
wait_port "$daemon_port"
# start_proxy: a fresh Toxiproxy in front of the daemon (one per N). One
# that had carried a run of 32 agents (some 16,000 connections, logging at
# its default trace level) took 2.7 to 5 s to answer a new connection even
# when idle, against 54 ms for a fresh one: it measured itself, not the
# server. So each N gets its own, logging warnings only.
proxy_pid=
start_proxy() {
  if [ -n "$proxy_pid" ]; then
    kill "$proxy_pid" 2>/dev/null || true
    wait "$proxy_pid" 2>/dev/null || true
  fi
  api_port=$(free_port)
  LOG_LEVEL=warn "$work/bin/server" -host 127.0.0.1 -port "$api_port" >>"$work/toxiproxy.log" 2>&1 &
  proxy_pid=$!
  pids_to_stop+=("$proxy_pid")
  wait_port "$api_port"
  # One proxy (a listener with its own toxics) per AGENTS_PER_PROXY agents,
  # all in that one Toxiproxy: a single proxy serializes the setup and
  # teardown of its connections (at 64 agents, some 40 new connections a
  # second, a fresh one took 5 to 6 s to answer a new connection while the
  # machine was 45% idle), which would measure the proxy, not the server.
  proxy_ports=()
  local k
  for ((k = 0; k < (${1:-1} + AGENTS_PER_PROXY - 1) / AGENTS_PER_PROXY; k++)); do
    proxy_ports+=("$(free_port)")
    toxi create --listen "127.0.0.1:${proxy_ports[$k]}" --upstream "127.0.0.1:$daemon_port" "gitd$k"
    toxi toxic add --type latency --attribute "latency=$LATENCY_MS" --upstream --toxicName lat_up "gitd$k"
    toxi toxic add --type latency --attribute "latency=$LATENCY_MS" --downstream --toxicName lat_down "gitd$k"
    wait_port "${proxy_ports[$k]}"
  done
}
AGENTS_PER_PROXY=${AGENTS_PER_PROXY:-8}
toxi() { "$work/bin/cli" --host "http://127.0.0.1:$api_port" "$@" >/dev/null; }

# cpu_ticks PID [children]: user+system clock ticks of a process (and, with
# "children", of its waited-for descendants) from /proc/PID/stat.
cpu_ticks() {
  local f
  read -ra f <<<"$(sed 's/^.*) //' "/proc/$1/stat")"
  # fields after "(comm) ": state is f[0], utime f[11], stime f[12], cutime f[13], cstime f[14]
  if [ "${2:-}" = children ]; then
    echo $((f[11] + f[12] + f[13] + f[14]))
  else
    echo $((f[11] + f[12]))
  fi
}
hz=$(getconf CLK_TCK)
cores=$(nproc)

# setup N: the store with goal g, agents a0..a(N-1) and `cycles` todos each,
# made in one local repository and pushed to the server; then a clone per
# agent through the proxy.
setup() {
  local n=$1 cycles=$2 d="$work/n$1" i c url
  mkdir -p "$d"
  mkdir -p "$d/seed"
  "$loopx" --repo "$d/seed" init >/dev/null
  "$loopx" --repo "$d/seed" goal create --goal-id g >/dev/null
  for ((i = 0; i < n; i++)); do
    "$loopx" --repo "$d/seed" agent register --goal-id g --agent-id "a$i" >/dev/null
    for ((c = 0; c < cycles; c++)); do
      "$loopx" --repo "$d/seed" todo add --goal-id g --todo-id "todo_a${i}_c$c" --text "agent $i, cycle $c" >/dev/null
    done
  done
  git init -q --bare "$work/srv/n$n.git"
  git -C "$d/seed" push -q "$work/srv/n$n.git" 'refs/loopx/*:refs/loopx/*'
  if [ "${DECIDE:-}" = 1 ]; then
    "$loopx" server-hook install --repo "$work/srv/n$n.git" --loopx "$loopx" --decide >/dev/null
  fi
  # Cloned by path (quicker), then pointed at the server through its
  # agent's proxy.
  for ((i = 0; i < n; i++)); do
    url="git://127.0.0.1:${proxy_ports[$((i / AGENTS_PER_PROXY))]}/n$n.git"
    git clone -q "$work/srv/n$n.git" "$d/c$i" 2>/dev/null
    git -C "$d/c$i" remote set-url origin "$url"
    "$loopx" --repo "$d/c$i" init --remote origin >/dev/null
  done
}

# agent N I CYCLES: agent I's cycles, after its share of one period (agents
# start spread over a period): each a run holding a new todo's lease for
# PERIOD seconds, then releasing it.
agent() {
  local n=$1 i=$2 cycles=$3 d="$work/n$1" c rc
  sleep "$(echo "$i * $PERIOD / $n" | bc -l)"
  for ((c = 0; c < cycles; c++)); do
    rc=0
    LOOPX_TX_STATS=1 "$loopx" --repo "$d/c$i" --goal-id g run --todo-id "todo_a${i}_c$c" --owner "a$i" \
      --idempotency-key "k$c" --ttl-seconds "$TTL" --write-scope "w$i/**" ${POLL:+--poll "$POLL"} -- sleep "$PERIOD" \
      >>"$d/stdout.$i" 2> >(stamp "a$i c$c" >>"$d/stderr.$i") || rc=$?
    echo "$rc" >>"$d/rc.$i"
  done
}

# stamp TAG: each line read, prefixed by the second it was read and TAG
# when KEEP is set (the summary below reads the lines wherever they start).
stamp() {
  local l
  if [ -z "${KEEP:-}" ]; then cat; return; fi
  while IFS= read -r l; do printf '%s %s %s\n' "$EPOCHSECONDS" "$1" "$l"; done
}

# timeline N: every second, the time, the load, the pack-objects
# processes of the server and of the clones, and the server's packs.
timeline() {
  local srv="$work/srv/n$1.git"
  while :; do
    printf '%s load %s server_packing %s clients_packing %s server_packs %s\n' "$EPOCHSECONDS" "$(cut -d' ' -f1 /proc/loadavg)" \
      "$(pgrep -fc "pack-objects.*$srv" || true)" "$(pgrep -fc "pack-objects.*$work/n$1/" || true)" \
      "$(find "$srv/objects/pack" -name '*.pack' 2>/dev/null | wc -l)"
    if ((EPOCHSECONDS % 5 == 0)); then
      { echo "@ $EPOCHSECONDS"; top -b -n2 -d1 -w 300 -c | awk '/^top -/ {n++} n == 2' | sed -n '7,20p'; } >>"$KEEP/top-n$1.txt"
    else
      sleep 1
    fi
  done
}

# pct P FILE: the P-quantile (0..1) of the numbers in FILE ("-" when empty).
pct() {
  sort -n "$2" | awk -v p="$1" '{a[NR]=$1} END {if (NR == 0) {print "-"; exit} i=int(NR*p+0.5); if (i<1) i=1; if (i>NR) i=NR; printf "%.0f", a[i]}'
}

tsv="$OUT/capacity.tsv"
{
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), $cores cores, $(git --version), Toxiproxy $TOXIPROXY_VERSION adding ${LATENCY_MS} ms each way;"
  echo "# per agent: loopx run --ttl-seconds $TTL on a new todo every ${PERIOD}s; ${DURATION}s per N; latencies in ms; cpu in seconds (share of $cores cores)"
  [ "${DECIDE:-}" = 1 ] && echo "# the server decides requests (server-hook install --decide)"
  [ -n "${POLL:-}" ] && echo "# each run polls the server's head every $POLL (loopx run --poll)"
  printf 'agents\tseconds\tmutations\tops_s\tacquire_p50\tacquire_p99\trenew_p50\trenew_p99\trelease_p50\trelease_p99\tlost_per_update\trenew_errors\tleases_lost\tclient_cpu_s\tclient_cpu_pct\tserver_cpu_s\tserver_cpu_pct\tproxy_cpu_s\tloadavg_5m\n'
} >"$tsv"
cat "$tsv" >&2
for n in $NS; do
  cycles=$(((DURATION + PERIOD - 1) / PERIOD))
  echo "# N=$n: setting up ($cycles todos per agent; load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  start_proxy "$n"
  setup "$n" "$cycles"
  d="$work/n$n"
  client0=$(cpu_ticks $$ children)
  server0=$(cpu_ticks "$daemon_pid" children)
  proxy0=$(cpu_ticks "$proxy_pid")
  start=$EPOCHREALTIME
  pids=()
  tl_pid=
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    timeline "$n" >"$KEEP/timeline-n$n.txt" &
    tl_pid=$!
    pids_to_stop+=("$tl_pid")
  fi
  for ((i = 0; i < n; i++)); do
    agent "$n" "$i" "$cycles" &
    pids+=($!)
  done
  wait "${pids[@]}"
  end=$EPOCHREALTIME
  if [ -n "$tl_pid" ]; then
    kill "$tl_pid" 2>/dev/null
    sleep 1 # the last stamped lines
  fi
  client1=$(cpu_ticks $$ children)
  server1=$(cpu_ticks "$daemon_pid" children)
  proxy1=$(cpu_ticks "$proxy_pid")
  secs=$(echo "(${end/./} - ${start/./}) / 1000000" | bc -l)
  cat "$d"/stderr.* >"$d/stderr"
  for op in acquire renew release; do
    sed -n "s/^.*loopx: tx: {.*\"operation\":\"task-lease.$op\",\"status\".*\"ms\":\([0-9.]*\)[,}].*/\1/p" "$d/stderr" >"$d/ms.$op"
  done
  muts=$(grep -c 'loopx: tx: {.*"status":' "$d/stderr" || true)
  lost=$(sed -n 's/^.*loopx: tx: {.*"lost_races":\([0-9]*\).*/\1/p' "$d/stderr" | awk '{s+=$1} END {print s+0}')
  retries=$(grep -c 'loopx: tx: {.*"operation":"task-lease.renew","code"' "$d/stderr" || true)
  leases_lost=$(cat "$d"/rc.* | grep -c '^4$' || true)
  decided=$(grep -c 'loopx: tx: {.*"decided_by":"server"' "$d/stderr" || true)
  echo "  N=$n: $decided of $muts mutations decided by the server" >&2
  client=$(((client1 - client0)))
  server=$(((server1 - server0)))
  proxy=$(((proxy1 - proxy0)))
  printf '%s\t%.0f\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\n' \
    "$n" "$secs" "$muts" "$(echo "$muts / $secs" | bc -l)" \
    "$(pct 0.5 "$d/ms.acquire")" "$(pct 0.99 "$d/ms.acquire")" \
    "$(pct 0.5 "$d/ms.renew")" "$(pct 0.99 "$d/ms.renew")" \
    "$(pct 0.5 "$d/ms.release")" "$(pct 0.99 "$d/ms.release")" \
    "$(echo "$lost / ($muts + 0.000001)" | bc -l)" "$retries" "$leases_lost" \
    "$(echo "$client / $hz" | bc -l)" "$(echo "100 * $client / $hz / $secs / $cores" | bc -l)" \
    "$(echo "$server / $hz" | bc -l)" "$(echo "100 * $server / $hz / $secs / $cores" | bc -l)" \
    "$(echo "$proxy / $hz" | bc -l)" "$(cut -d' ' -f2 /proc/loadavg)" | tee -a "$tsv" >&2
  if [ "$leases_lost" != 0 ] && [ "$n" -le "$MUST_HOLD" ]; then failed_ns="$failed_ns $n"; fi
  if [ "$leases_lost" != 0 ] || grep -q 'loopx: tx: {.*"code"' "$d/stderr"; then
    echo "  errors: $(grep -ho '"operation":"[a-z.-]*","code":"[a-z_]*"' "$d/stderr" | sort | uniq -c | tr '\n' ';')" >&2
    echo "  lost: $(cat "$d"/stdout.* | jq -r 'select(.error) | .error.code' 2>/dev/null | sort | uniq -c | tr '\n' ';')" >&2
  fi
  # KEEP=DIR keeps each N's transaction lines (stderr-nN.txt).
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$d/stderr" "$KEEP/stderr-n$n.txt"; fi
  # This N's clones and server repository are no longer needed.
  rm -rf "$d" "$work/srv/n$n.git"
done
"$work/bin/capplot" -in "$tsv" -out "$OUT/capacity.png"
echo "# wrote $tsv and $OUT/capacity.png" >&2
if [ -n "$failed_ns" ]; then
  echo "FAIL: leases lost at N =$failed_ns (MUST_HOLD=$MUST_HOLD: none may be lost up to it)" >&2
  exit 1
fi
