#!/usr/bin/env bash
# Side-by-side, in one run: ms/op of one task-lease cycle through the CLI
# (`loopx task-lease acquire`, `renew`, `release`: three processes per op, each
# deciding on the head, scanning every lease for scope conflicts, writing one
# state commit; acquire and release also commit the re-rendered board) against
# the git CLI plumbing loop that makes the same three state changes without
# deciding anything: per change, hash-object the lease YAML and the receipt
# YAML, ls-tree + mktree up both paths (goals/g/leases/<b>/ and
# goals/g/receipts/<r0r1>/<r2r3>/; goals/g and above once), commit-tree,
# update-ref with the old value: 21 git processes per change.
# Each op works on a fresh todo (scope work/<i>/**) in a goal that also holds
# N effective leases (seed-agent, scopes seed/<i>/**).
#
#   bash bench/lease_cycle_vs_plumbing.sh [ops=20] [leases="10 1000"]
set -euo pipefail
ops=${1:-20}
sizes=${2:-"10 1000"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/loopx" "$root/cmd/loopx"
loopx="$work/loopx"
# The seeded leases run from 2026-01-01 for 24 hours: fix the clock there so
# they are effective (and every commit, seed included, carries that date).
now=2026-01-01T00:00:00Z
export LOOPX_NOW=$now LOOPX_FORMAT=json GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
  GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com GIT_AUTHOR_DATE=$now GIT_COMMITTER_DATE=$now

now_ms() { date +%s%3N; }
sha() { local h; h=$(printf '%s' "$1" | sha256sum); echo "${h:0:64}"; }

# tree_with REPO SPEC NAME MODE TYPE OBJ [NAME MODE TYPE OBJ]...: prints the
# tree SPEC (a tree-ish, "" for an empty tree) with each entry NAME set to OBJ
# (ls-tree, then mktree of the listing with those entries replaced).
tree_with() {
  local repo=$1 spec=$2; shift 2
  local listing="" entries="" line name skip i
  [ -n "$spec" ] && listing=$(git -C "$repo" ls-tree "$spec" 2>/dev/null || true)
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    name=${line#*$'\t'} skip=
    for ((i = 1; i <= $#; i += 4)); do [ "$name" = "${!i}" ] && skip=1; done
    [ -z "$skip" ] && entries+=$line$'\n'
  done <<<"$listing"
  while [ $# -gt 0 ]; do entries+="$2 $3 $4"$'\t'"$1"$'\n'; shift 4; done
  printf '%s' "$entries" | git -C "$repo" mktree
}

# lease_yaml TODO KEY VERSION STATUS SCOPE [renewed] [released]
lease_yaml() {
  local indent=${8:-}
  printf '%stodo_id: %s\n%sowner: bench-agent\n%sidempotency_key: %s\n%sversion: %s\n%sepoch: 1\n%sstatus: %s\n%swrite_scopes:\n%s  - %s\n%sacquired_at: %s\n' \
    "$indent" "$1" "$indent" "$indent" "$2" "$indent" "$3" "$indent" "$indent" "$4" "$indent" "$indent" "$5" "$indent" "$now"
  [ -n "${6:-}" ] && printf '%srenewed_at: %s\n' "$indent" "$now"
  printf '%sexpires_at: 2026-01-01T00:10:00Z\n' "$indent"
  [ -n "${7:-}" ] && printf '%sreleased_at: %s\n' "$indent" "$now"
  printf '%sholders:\n%s  - epoch: 1\n%s    owner: bench-agent\n%s    idempotency_key: %s\n%s    started_at: %s\n' \
    "$indent" "$indent" "$indent" "$indent" "$2" "$indent" "$now"
  [ -n "${7:-}" ] && printf '%s    ended_at: %s\n%s    end_reason: released\n' "$indent" "$now" "$indent"
  return 0
}

# plumbing_change REPO OP TODO KEY VERSION STATUS SCOPE EXPECTED [renewed] [released]:
# one state change (lease + receipt) as one commit, installed with a CAS.
plumbing_change() {
  local repo=$1 op=$2 todo=$3 key=$4 version=$5 status=$6 scope=$7 expected=$8 renewed=${9:-} released=${10:-}
  local head; head=$(git -C "$repo" rev-parse refs/loopx/state)
  local lease receipt id
  lease=$(lease_yaml "$todo" "$key" "$version" "$status" "$scope" "$renewed" "$released" | git -C "$repo" hash-object -w --stdin)
  id=$(sha "$op/g/$todo/bench-agent/$key/$expected")
  receipt=$( { printf 'receipt_id: %s\noperation: task-lease.%s\ngoal_id: g\ntodo_id: %s\nowner: bench-agent\nidempotency_key: %s\nexpected_version: %s\nrequest_digest: %s\nstatus: applied\ndecided_at: %s\ndecided_on: %s\nlease:\n' \
      "$id" "$op" "$todo" "$key" "$expected" "$(sha "digest/$id")" "$now" "$head"
    lease_yaml "$todo" "$key" "$version" "$status" "$scope" "$renewed" "$released" "  "; } | git -C "$repo" hash-object -w --stdin)
  # Rebuild the trees on both paths bottom up; goals/g and above once.
  local b r0=${id:0:2} r1=${id:2:2} leases_b leases rec_1 rec_0 receipts g goals tree
  b=$(sha "$todo"); b=${b:0:2}
  leases_b=$(tree_with "$repo" "$head:goals/g/leases/$b" "$todo.yaml" 100644 blob "$lease")
  leases=$(tree_with "$repo" "$head:goals/g/leases" "$b" 040000 tree "$leases_b")
  rec_1=$(tree_with "$repo" "$head:goals/g/receipts/$r0/$r1" "$id.yaml" 100644 blob "$receipt")
  rec_0=$(tree_with "$repo" "$head:goals/g/receipts/$r0" "$r1" 040000 tree "$rec_1")
  receipts=$(tree_with "$repo" "$head:goals/g/receipts" "$r0" 040000 tree "$rec_0")
  g=$(tree_with "$repo" "$head:goals/g" leases 040000 tree "$leases" receipts 040000 tree "$receipts")
  goals=$(tree_with "$repo" "$head:goals" g 040000 tree "$g")
  tree=$(tree_with "$repo" "$head^{tree}" goals 040000 tree "$goals")
  local commit
  commit=$(printf 'task-lease %s g/%s by bench-agent: v%s e1\n\nLoopx-Operation: task-lease.%s\n' "$op" "$todo" "$version" "$op" |
    git -C "$repo" commit-tree "$tree" -p "$head")
  git -C "$repo" update-ref refs/loopx/state "$commit" "$head"
}

seed() { # seed DIR TODOS LEASES: a store with TODOS todos, the first LEASES of them leased
  (cd "$1" && "$loopx" init >/dev/null && "$loopx" goal create --goal-id g >/dev/null &&
    "$loopx" agent register --goal-id g --agent-id seed-agent >/dev/null &&
    "$loopx" agent register --goal-id g --agent-id bench-agent >/dev/null)
  (cd "$root" && SEED_DIR="$1" SEED_TODOS="$2" SEED_LEASES="$3" go test -count=1 -run TestSeedDir . >/dev/null)
  (cd "$1" && "$loopx" todo project-markdown --goal-id g >/dev/null && "$loopx" gc >/dev/null)
}

printf '%-8s %-6s %14s %12s %8s\n' leases ops loopx_ms/op git_ms/op ratio
for n in $sizes; do
  a="$work/cli-$n"; p="$work/git-$n"; mkdir -p "$a" "$p"
  seed "$a" $((n + ops)) "$n"; seed "$p" $((n + ops)) "$n"
  # The seeded leases must be effective, or the CLI would not scan them.
  probe=$(cd "$a" && "$loopx" task-lease acquire --goal-id g --todo-id "$(printf 'todo_seed_%06d' "$n")" --owner bench-agent \
    --idempotency-key probe --ttl-seconds 600 --write-scope "seed/$((n - 1))/x.go" || true)
  case $probe in *write_scope_conflict*) ;; *) echo "seeded leases are not effective: $probe" >&2; exit 1 ;; esac

  t0=$(now_ms)
  for i in $(seq 0 $((ops - 1))); do
    todo=$(printf 'todo_seed_%06d' $((n + i)))
    (cd "$a" &&
      "$loopx" task-lease acquire --goal-id g --todo-id "$todo" --owner bench-agent --idempotency-key "bench-$i" \
        --expected-version 0 --ttl-seconds 600 --write-scope "work/$i/**" >/dev/null &&
      "$loopx" task-lease renew --goal-id g --todo-id "$todo" --owner bench-agent --idempotency-key "bench-$i" \
        --expected-version 1 --ttl-seconds 600 >/dev/null &&
      "$loopx" task-lease release --goal-id g --todo-id "$todo" --owner bench-agent --idempotency-key "bench-$i" \
        --expected-version 2 >/dev/null)
  done
  t1=$(now_ms)
  for i in $(seq 0 $((ops - 1))); do
    todo=$(printf 'todo_seed_%06d' $((n + i)))
    plumbing_change "$p" acquire "$todo" "bench-$i" 1 active "work/$i/**" 0
    plumbing_change "$p" renew "$todo" "bench-$i" 2 active "work/$i/**" 1 renewed
    plumbing_change "$p" release "$todo" "bench-$i" 2 released "work/$i/**" 2 renewed released
  done
  t2=$(now_ms)
  # The plumbing wrote records loopx accepts.
  (cd "$p" && "$loopx" verify | grep -q '"valid":true') || { echo "plumbing store does not verify" >&2; (cd "$p" && "$loopx" verify) >&2; exit 1; }
  cli=$(( (t1 - t0) * 1000 / ops )); plumb=$(( (t2 - t1) * 1000 / ops ))
  printf '%-8s %-6s %14.1f %12.1f %8.2f\n' "$n" "$ops" "$(echo "$cli/1000" | bc -l)" "$(echo "$plumb/1000" | bc -l)" "$(echo "$cli/$plumb" | bc -l)"
done
