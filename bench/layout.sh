#!/usr/bin/env bash
# History per mutation after `loopx gc`, by tree layout. Seeds one store with
# N mutations of lease history on 100 todos (bench/scaleseed: acquire,
# renew x3, transfer, release per execution, and the board commits they
# make), then writes the same history again with the records at other paths
# (git fast-export, the paths rewritten, git fast-import: the same blobs and
# commit messages, only the trees differ), and packs each copy with this
# tree's `loopx gc` from loose objects. Prints, per layout, the bytes of
# .git/objects per mutation (what `bench/scale.sh` reports as growth: pack
# and index) and the objects by type.
#
# What it answers: how many bytes a mutation's rewritten trees cost, and so
# which layouts bring history under 1 KiB a mutation. Every tree a commit
# rewrites is ~49 bytes of pack (a delta carrying one new 20-byte hash) and
# 28 of pack index, whatever its size; a lease mutation rewrites the trees
# from the root down to its record, and a board commit those down to the
# board.
#
#   bash bench/layout.sh [mutations=3000]
set -euo pipefail
m=${1:-3000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/loopx-layout.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/loopx" ./cmd/loopx && go build -o "$work/seed" ./bench/scaleseed)
"$work/seed" -dir "$work/seeded" -todos 100 -history "$m" >/dev/null
git -C "$work/seeded" fast-export refs/loopx/state >"$work/export"

# Each layout maps a path of the current one (format 4):
#   goals/<goal>/{goal.yaml,TODO.md,agents/,receipts/}
#   goals/<goal>/todos/<hh>/<todo>.yaml
#   goals/<goal>/leases/<hh>/<todo>.yaml
# to where that layout keeps it. Only the file lines of a commit (M, D) are
# rewritten; blob and message data pass through.
layouts="current lease-beside-todo one-bucket goals-at-root goals-at-root+lease-beside-todo goals-at-root+one-bucket one-bucket+board-at-root records-at-root"
describe() {
  case $1 in
  current) echo "goals/G/todos/HH/T.yaml, goals/G/leases/HH/T.yaml, goals/G/TODO.md" ;;
  lease-beside-todo) echo "goals/G/todos/HH/T.yaml and T.lease.yaml" ;;
  one-bucket) echo "goals/G/HH/T.yaml and T.lease.yaml" ;;
  goals-at-root) echo "G/todos/HH/T.yaml, G/leases/HH/T.yaml, G/TODO.md" ;;
  goals-at-root+lease-beside-todo) echo "G/todos/HH/T.yaml and T.lease.yaml, G/TODO.md" ;;
  goals-at-root+one-bucket) echo "G/HH/T.yaml and T.lease.yaml, G/TODO.md" ;;
  one-bucket+board-at-root) echo "goals/G/HH/T.yaml and T.lease.yaml, G.md" ;;
  records-at-root) echo "HH/G/T.yaml and T.lease.yaml, goals/G/TODO.md" ;;
  esac
}
cat >"$work/map.awk" <<'EOF'
function mp(p,   a, n, g, kind, hh, file, base) {
  n = split(p, a, "/")
  if (a[1] != "goals" || n < 3) return p
  g = a[2]
  if (n == 5 && (a[3] == "todos" || a[3] == "leases")) {
    kind = a[3]; hh = a[4]; file = a[5]
    base = file; sub(/\.yaml$/, "", base)
    if (L == "current") return p
    if (L == "goals-at-root") return g "/" kind "/" hh "/" file
    if (kind == "leases") file = base ".lease.yaml"
    if (L == "lease-beside-todo") return "goals/" g "/todos/" hh "/" file
    if (L == "one-bucket" || L == "one-bucket+board-at-root") return "goals/" g "/" hh "/" file
    if (L == "goals-at-root+lease-beside-todo") return g "/todos/" hh "/" file
    if (L == "goals-at-root+one-bucket") return g "/" hh "/" file
    if (L == "records-at-root") return hh "/" g "/" file
  }
  if (L == "one-bucket+board-at-root" && n == 3 && a[3] == "TODO.md") return g ".md"
  if (L ~ /^goals-at-root/) return substr(p, length("goals/") + 1)
  return p
}
/^M [0-7]+ :[0-9]+ / { split($0, f, " "); printf "M %s %s %s\n", f[2], f[3], mp(f[4]); next }
/^D / { printf "D %s\n", mp(substr($0, 3)); next }
{ print }
EOF

printf '# %d mutations on 100 todos (%s), packed by loopx gc; %s\n' "$m" \
  "$(git -C "$work/seeded" log --format=%s refs/loopx/state | awk '{print (NF > 1 ? $1 " " $2 : $1)}' | sort | uniq -c | sort -rn | awk '{$1 = $1; n = $1; $1 = ""; printf "%s%s%s", (NR>1?", ":""), n, $0}')" "$(date -u +%FT%TZ)"
printf '%-34s %10s %8s %8s %8s %8s  %s\n' layout "B/mutation" objects commits trees blobs paths
for l in $layouts; do
  d="$work/$l"
  git init -q "$d"
  awk -v L="$l" -f "$work/map.awk" "$work/export" | git -C "$d" fast-import --quiet
  # From loose objects, as a store between two gcs, so loopx gc packs all.
  mkdir "$work/packs" && mv "$d"/.git/objects/pack/* "$work/packs/"
  git -C "$d" unpack-objects -q <"$(ls "$work"/packs/*.pack)"
  rm -rf "$work/packs"
  (cd "$d" && "$work/loopx" gc >/dev/null)
  bytes=$(du -sb "$d/.git/objects" | cut -f1)
  counts=$(git -C "$d" verify-pack -v "$d"/.git/objects/pack/*.idx | awk '$2=="commit"{c++} $2=="tree"{t++} $2=="blob"{b++} END{print c+t+b, c, t, b}')
  read -r objs commits trees blobs <<<"$counts"
  printf '%-34s %10.0f %8d %8d %8d %8d  %s\n' "$l" "$(echo "$bytes / $m" | bc -l)" "$objs" "$commits" "$trees" "$blobs" "$(describe "$l")"
  rm -rf "$d"
done
