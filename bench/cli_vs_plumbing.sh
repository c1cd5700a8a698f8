#!/usr/bin/env bash
# Side-by-side, in one run: ms/op of `loopx todo add` (one process per op, board
# projection included) against the git CLI plumbing sequence that makes the same
# state change (hash-object, ls-tree + mktree up the fan-out path, commit-tree,
# update-ref with the old value), on stores of N todos.
#
#   bash bench/cli_vs_plumbing.sh [ops=50] [sizes="100 10000"]
set -euo pipefail
ops=${1:-50}
sizes=${2:-"100 10000"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/loopx" "$root/cmd/loopx"
loopx="$work/loopx"
export LOOPX_FORMAT=json GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

now_ms() { date +%s%3N; }

# bucket TODO prints the fan-out folder of a todo id (sha256 prefix, as lease.TodoPath).
bucket() { printf '%s' "$1" | sha256sum | cut -c1-2; }

# plumbing_add REPO ID: the same change as `loopx todo add`, with the git CLI.
plumbing_add() {
  local repo=$1 id=$2 b; b=$(bucket "$id")
  local head; head=$(git -C "$repo" rev-parse refs/loopx/state)
  local blob; blob=$(printf 'todo_id: %s\ntext: bench\nstatus: open\npriority: P2\ncreated_by: ""\ncreated_at: 2026-01-01T00:00:00Z\nupdated_by: ""\nupdated_at: 2026-01-01T00:00:00Z\n' "$id" | git -C "$repo" hash-object -w --stdin)
  # Rebuild each tree on the path goals/g/todos/<b>/<id>.yaml, bottom up.
  local paths=("goals/g/todos/$b" "goals/g/todos" "goals/g" "goals" "")
  local names=("$id.yaml" "$b" "todos" "g" "goals")
  local modes=("100644 blob" "040000 tree" "040000 tree" "040000 tree" "040000 tree")
  local child=$blob i
  for i in 0 1 2 3 4; do
    local p=${paths[$i]} spec="$head^{tree}"
    [ -n "$p" ] && spec="$head:$p"
    child=$( { git -C "$repo" ls-tree "$spec" 2>/dev/null | grep -v -P "\t${names[$i]}\$" || true; printf '%s %s\t%s\n' "${modes[$i]%% *}" "${modes[$i]#* } $child" "${names[$i]}"; } | git -C "$repo" mktree)
  done
  local commit; commit=$(printf 'todo add g/%s by bench\n\nLoopx-Operation: todo.add\n' "$id" | git -C "$repo" commit-tree "$child" -p "$head")
  git -C "$repo" update-ref refs/loopx/state "$commit" "$head"
}

seed() { # seed DIR N: a store with N todos (via the Go seeding test helper)
  (cd "$1" && "$loopx" init >/dev/null && "$loopx" goal create --goal-id g >/dev/null)
  (cd "$root" && SEED_DIR="$1" SEED_TODOS="$2" go test -count=1 -run TestSeedDir . >/dev/null)
  (cd "$1" && "$loopx" todo project-markdown --goal-id g >/dev/null && "$loopx" gc >/dev/null)
}

printf '%-8s %-10s %12s %12s %8s\n' todos ops loopx_ms/op git_ms/op ratio
for n in $sizes; do
  a="$work/cli-$n"; p="$work/git-$n"; mkdir -p "$a" "$p"
  seed "$a" "$n"; seed "$p" "$n"
  t0=$(now_ms)
  for i in $(seq 1 "$ops"); do (cd "$a" && "$loopx" todo add --goal-id g --todo-id "todo_bench_$i" --text bench >/dev/null); done
  t1=$(now_ms)
  for i in $(seq 1 "$ops"); do plumbing_add "$p" "todo_bench_$i"; done
  t2=$(now_ms)
  cli=$(( (t1 - t0) * 1000 / ops )); plumb=$(( (t2 - t1) * 1000 / ops ))
  printf '%-8s %-10s %12.1f %12.1f %8.2f\n' "$n" "$ops" "$(echo "$cli/1000" | bc -l)" "$(echo "$plumb/1000" | bc -l)" "$(echo "$cli/$plumb" | bc -l)"
done
