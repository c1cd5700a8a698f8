#!/usr/bin/env bash
# Side-by-side, in one run: ms/op of one task-lease cycle through the CLI
# (`loopx task-lease acquire`, `renew`, `release`: three processes per op, each
# deciding on the head, checking every effective lease's scopes, writing one
# state commit; acquire and release also commit the re-rendered board) against
# git's plumbing making the same three state changes without deciding
# anything: the exact blobs, paths and messages of loopx's three state commits,
# replayed on a copy of the seeded store with 5 git processes per change
# (hash-object -w, update-index --index-info on an index kept in step with the
# ref, write-tree, commit-tree, update-ref with the old value). The plumbing
# writes no board commit and decides nothing: it is the floor of one CAS
# commit per state change with git's own tools.
# Each op works on a fresh todo (scope work/<i>/**) in a goal that also holds
# N effective leases (seed-agent, scopes seed/<i>/**). CLI op i and its replay
# alternate, so both see the same machine.
#
#   bash bench/lease_cycle_vs_plumbing.sh [ops=20] [leases="10 1000"]
#   LOOPX_BIN=/path/to/loopx bash bench/lease_cycle_vs_plumbing.sh
set -euo pipefail
ops=${1:-20}
sizes=${2:-"10 1000"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# LOOPX_BIN=PATH times that build instead of this tree's (another commit's,
# for a before/after on the same machine state).
if [ -n "${LOOPX_BIN:-}" ]; then loopx=$LOOPX_BIN; else go build -o "$work/loopx" "$root/cmd/loopx"; loopx="$work/loopx"; fi
# The seeded leases run from 2026-01-01 for 24 hours: fix the clock there so
# they are effective (and every commit, seed included, carries that date).
now=2026-01-01T00:00:00Z
export LOOPX_NOW=$now LOOPX_FORMAT=json GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
  GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com GIT_AUTHOR_DATE=$now GIT_COMMITTER_DATE=$now

# now_us prints the wall clock in microseconds without starting a process.
now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }

seed() { # seed DIR TODOS LEASES: a store with TODOS todos, the first LEASES of them leased
  (cd "$1" && "$loopx" init >/dev/null && "$loopx" goal create --goal-id g >/dev/null &&
    "$loopx" agent register --goal-id g --agent-id seed-agent >/dev/null &&
    "$loopx" agent register --goal-id g --agent-id bench-agent >/dev/null)
  (cd "$root" && SEED_DIR="$1" SEED_TODOS="$2" SEED_LEASES="$3" go test -count=1 -run TestSeedDir . >/dev/null)
  (cd "$1" && "$loopx" todo project-markdown --goal-id g >/dev/null && "$loopx" gc >/dev/null)
}

# extract A FROM DIR: writes, for each state commit on A's ref after FROM (board
# commits left out), DIR/<k>.info (update-index --index-info lines naming the
# blob files DIR/<k>.<j>), its blobs and DIR/<k>.msg; prints the count.
extract() {
  local a=$1 from=$2 dir=$3 k=0 c line meta path mode sha status j
  rm -rf "$dir"; mkdir -p "$dir"
  for c in $(git -C "$a" rev-list --reverse "$from..refs/loopx/state"); do
    case $(git -C "$a" log -1 --format=%s "$c") in board\ *) continue ;; esac
    j=0; : >"$dir/$k.info"; : >"$dir/$k.files"
    while IFS= read -r line; do
      meta=${line%%$'\t'*} path=${line#*$'\t'}
      read -r _ mode _ sha status <<<"$meta"
      if [ "$status" = D ]; then
        printf '0 %s\t%s\n' 0000000000000000000000000000000000000000 "$path" >>"$dir/$k.info"
      else
        git -C "$a" cat-file blob "$sha" >"$dir/$k.$j"
        printf '%s %s\n' "$mode" "$path" >>"$dir/$k.files"
        j=$((j + 1))
      fi
    done < <(git -C "$a" diff-tree -r --no-commit-id "$c^" "$c")
    git -C "$a" cat-file commit "$c" | sed '1,/^$/d' >"$dir/$k.msg"
    k=$((k + 1))
  done
  echo "$k"
}

# replay P DIR N: the N extracted changes as N commits on P's ref, each with
# 5 git processes; the index P/.git/bench-index is kept at the ref's tree.
replay() {
  local p=$1 dir=$2 n=$3 k head blobs tree commit i mode path
  head=$(cat "$dir/head")
  for ((k = 0; k < n; k++)); do
    local files=() modes=() paths=()
    i=0
    while read -r mode path; do files+=("$dir/$k.$i"); modes+=("$mode"); paths+=("$path"); i=$((i + 1)); done <"$dir/$k.files"
    mapfile -t blobs < <(git -C "$p" hash-object -w "${files[@]}")
    { cat "$dir/$k.info"; for i in "${!blobs[@]}"; do printf '%s %s\t%s\n' "${modes[$i]}" "${blobs[$i]}" "${paths[$i]}"; done; } |
      GIT_INDEX_FILE="$p/.git/bench-index" git -C "$p" update-index --index-info
    tree=$(GIT_INDEX_FILE="$p/.git/bench-index" git -C "$p" write-tree)
    commit=$(git -C "$p" commit-tree "$tree" -p "$head" -F "$dir/$k.msg")
    git -C "$p" update-ref refs/loopx/state "$commit" "$head"
    head=$commit
  done
  echo "$head" >"$dir/head"
}

printf '%-8s %-6s %14s %12s %8s\n' leases ops loopx_ms/op git_ms/op ratio
for n in $sizes; do
  a="$work/cli-$n"; p="$work/git-$n"; mkdir -p "$a"
  seed "$a" $((n + ops)) "$n"
  cp -a "$a" "$p"
  GIT_INDEX_FILE="$p/.git/bench-index" git -C "$p" read-tree refs/loopx/state
  git -C "$p" rev-parse refs/loopx/state >"$work/head-$n"
  # The seeded leases must be effective, or the CLI would not check them.
  probe=$(cd "$a" && "$loopx" task-lease acquire --goal-id g --todo-id "$(printf 'todo_seed_%06d' "$n")" --owner bench-agent \
    --idempotency-key probe --ttl-seconds 600 --write-scope "seed/$((n - 1))/x.go" || true)
  case $probe in *write_scope_conflict*) ;; *) echo "seeded leases are not effective: $probe" >&2; exit 1 ;; esac

  cli=0 plumb=0 changes=0
  for i in $(seq 0 $((ops - 1))); do
    todo=$(printf 'todo_seed_%06d' $((n + i)))
    from=$(git -C "$a" rev-parse refs/loopx/state)
    t0=$(now_us)
    (cd "$a" &&
      "$loopx" task-lease acquire --goal-id g --todo-id "$todo" --owner bench-agent --idempotency-key "bench-$i" \
        --expected-version 0 --ttl-seconds 600 --write-scope "work/$i/**" >/dev/null &&
      "$loopx" task-lease renew --goal-id g --todo-id "$todo" --owner bench-agent --idempotency-key "bench-$i" \
        --expected-version 1 --ttl-seconds 600 >/dev/null &&
      "$loopx" task-lease release --goal-id g --todo-id "$todo" --owner bench-agent --idempotency-key "bench-$i" \
        --expected-version 2 >/dev/null)
    t1=$(now_us)
    k=$(extract "$a" "$from" "$work/x")
    [ "$k" = 3 ] || { echo "op $i made $k state commits, not 3" >&2; exit 1; }
    cp "$work/head-$n" "$work/x/head"
    t2=$(now_us)
    replay "$p" "$work/x" "$k"
    t3=$(now_us)
    cp "$work/x/head" "$work/head-$n"
    cli=$((cli + t1 - t0)) plumb=$((plumb + t3 - t2)) changes=$((changes + k))
  done
  # The plumbing wrote the same state: loopx accepts it, and the heads' trees
  # differ only by the board (the plumbing commits none).
  (cd "$p" && "$loopx" verify | grep -q '"valid":true') || { echo "plumbing store does not verify" >&2; (cd "$p" && "$loopx" verify) >&2; exit 1; }
  diff <(git -C "$a" ls-tree -r refs/loopx/state | grep -v TODO.md) <(git -C "$p" ls-tree -r refs/loopx/state | grep -v TODO.md) >/dev/null ||
    { echo "the replayed state differs from loopx's" >&2; exit 1; }
  printf '%-8s %-6s %14.1f %12.1f %8.2f\n' "$n" "$ops" "$(echo "$cli/1000/$ops" | bc -l)" "$(echo "$plumb/1000/$ops" | bc -l)" "$(echo "$cli/$plumb" | bc -l)"
done
