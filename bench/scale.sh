#!/usr/bin/env bash
# Issue 15, "Flat at scale", side by side in one run: the base build (default:
# the merge base with main) and this tree, each on stores its own code made
# (bench/scaleseed: 100 / 1,000 / 10,000 todos; 10 / 100 / 1,000 active
# leases with scopes among 1,200 todos; 600 and 20,000 mutations of history
# on 100 todos), every command timed in interleaved rounds next to the two
# floors measured in the same rounds (`loopx version`, and bench/gogitfloor:
# one go-git commit per process on a copy of the same store). Prints the
# issue's table with both builds' medians (wall, CPU, peak RSS) and ratios,
# and the growth figures (disk per mutation after gc, receipts kept, the
# largest record). The stores are kept in SCALE_WORK (default
# /dev/shm/loopx-scale, else $TMPDIR) and built once per build (the
# 20,000-mutation store takes minutes); SCALE_REBUILD=1 rebuilds the new
# build's stores.
#
#   bash bench/scale.sh [rounds=9] [base=$(git merge-base HEAD main)] [groups=leases,todos,history,growth]
#   SCALE_WORK=DIR SCALE_HISTORY=20000 bash bench/scale.sh
# It ends by listing the targets the new build misses; SCALE_STRICT=1 makes
# it exit 1 when there is any (a check, not only a report).
set -euo pipefail
rounds=${1:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
base=${2:-$(git -C "$root" merge-base HEAD main)}
groups=${3:-}
parent=${TMPDIR:-/tmp}
[ -d /dev/shm ] && parent=/dev/shm
work=${SCALE_WORK:-$parent/loopx-scale}
mkdir -p "$work"
bin="$work/bin-$(git -C "$root" rev-parse --short "$base")"
mkdir -p "$bin"
# The base build, from its own source, with this tree's seeder (it uses
# only the Go API both have).
if [ ! -x "$bin/base-loopx" ] || [ ! -x "$bin/base-seed" ]; then
  src="$bin/src"; rm -rf "$src"; mkdir -p "$src"
  git -C "$root" archive "$base" | tar -x -C "$src"
  mkdir -p "$src/bench/scaleseed" && cp "$root/bench/scaleseed/main.go" "$src/bench/scaleseed/"
  (cd "$src" && go build -o "$bin/base-loopx" ./cmd/loopx && go build -o "$bin/base-seed" ./bench/scaleseed)
fi
new="$work/new"; mkdir -p "$new"
(cd "$root" && go build -o "$new/loopx" ./cmd/loopx && go build -o "$new/seed" ./bench/scaleseed &&
  go build -o "$new/floor" ./bench/gogitfloor && go build -o "$new/scalebench" ./bench/scalebench)
# The new build's stores are kept too; SCALE_REBUILD=1 makes them again
# (after a change to what the new code writes).
[ "${SCALE_REBUILD:-}" = 1 ] && rm -rf "$work/new-stores"
mkdir -p "$work/new-stores" "$bin/stores"
echo "# base $(git -C "$root" rev-parse --short "$base"), new $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+dirty'), $(nproc) cores"
exec "$new/scalebench" -old "$bin/base-loopx" -old-seed "$bin/base-seed" -new "$new/loopx" -new-seed "$new/seed" \
  -floor "$new/floor" -work "$work" -base-stores "$bin/stores" -new-stores "$work/new-stores" -rounds "$rounds" \
  -history "${SCALE_HISTORY:-20000}" ${groups:+-only "$groups"} ${SCALE_STRICT:+-strict}
