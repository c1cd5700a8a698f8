#!/usr/bin/env bash
# Mutation testing of the pure domain (lease/) with gremlins: each mutant is a
# small change to one operator of lease/*.go (a < made <=, a == made !=, a + made
# -, ...); lease's own tests run against it and either fail (KILLED) or pass
# (LIVED). Prints the efficacy, killed / (killed + lived), and every mutant that
# lived. Mutants that bench/mutation-equivalent.md lists as equivalent are
# reported apart, and the efficacy is given both ways.
#
#   bash bench/mutation.sh [gremlins unleash flags...]
#
# Environment:
#   WORKERS=2        mutants tested at once (the machine has 2 cores, shared)
#   TIMEOUT_COEFF=5  a mutant's test run may take this many times the coverage
#                    run before it counts as TIMED OUT (gremlins' default is 3;
#                    5 leaves room for a shared, loaded machine)
#   OUT=DIR          where the log and gremlins' JSON go (default: a temp dir)
#   FILES=REGEXP     mutate only the lease/*.go files whose base name matches
#                    (e.g. FILES='^(claim|guard)\.go$'): a shard of the full run,
#                    or a re-run of the files whose mutants lived
#
# Not in .ci/run: a full run tests ~1100 mutants with the whole lease suite each
# (see bench/mutation-equivalent.md for the figures and how long it takes).
#
# gremlins is installed with `go install ...@v0.6.0` into ./.bin (ignored by
# Git), not declared in go.mod: a `tool` directive would add gremlins' own
# dependency tree (viper, cobra's friends, x/tools, ...) to the project's
# go.mod and go.sum, which the project's dependency rules keep to a short list;
# `go install pkg@version` resolves it in its own module, apart from ours.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=v0.6.0
bin="$root/.bin"
gremlins="$bin/gremlins"
if ! go version -m "$gremlins" 2>/dev/null | grep -q "mod[[:space:]]*github.com/go-gremlins/gremlins[[:space:]]*$version"; then
  echo "installing gremlins $version into $bin" >&2
  GOBIN="$bin" go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
fi

out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/loopx-mutation.XXXXXX")}
mkdir -p "$out"
log="$out/gremlins.log"
json="$out/gremlins.json"

# -count=1: the coverage run's duration sets every mutant's timeout, and a
# cached `go test -coverprofile` would make it near zero (every mutant TIMED OUT).
export GOFLAGS="${GOFLAGS:-} -count=1"
# Compiling lease's test binary is most of a mutant's cost (~5 s of CPU, the
# tests ~1 s); a lazier GC makes the compiler ~15% faster for ~100 MB more.
export GOGC="${GOGC:-400}"

start=$(date +%s)
# Test helpers are excluded by construction: gremlins never mutates *_test.go,
# and lease/ has no non-test helper files (its fixtures, tcFix and tlFix, live
# in _test files). The coverage that decides which mutants are RUNNABLE is that
# of lease's own tests (./lease/...), so code only the root package exercises
# counts as NOT COVERED, not as killed.
# gremlins only excludes (by a regexp on the path relative to lease/), so a
# FILES selection becomes one exclusion of every other file.
excl=()
if [ -n "${FILES:-}" ]; then
  others=$(cd lease && ls *.go | grep -v '_test\.go$' | grep -Ev -- "$FILES" | sed 's/\./\\./' | paste -sd'|' -)
  if [ -n "$others" ]; then excl=(--exclude-files "^($others)\$"); fi
fi

set +e
"$gremlins" unleash \
  --workers "${WORKERS:-2}" \
  --timeout-coefficient "${TIMEOUT_COEFF:-5}" \
  --output "$json" \
  "${excl[@]}" "$@" ./lease >"$log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))

if [ ! -s "$json" ]; then
  cat "$log" >&2
  echo "gremlins exited $rc without a report" >&2
  exit 1
fi

# One line per mutant in the log: "  KILLED CONDITIONALS_NEGATION at claim.go:42:9".
strip() { sed -e 's/\x1b\[[0-9;]*m//g' "$log"; }
count() { strip | grep -cE "^[[:space:]]*$1 " || true; }
killed=$(count KILLED)
lived=$(count LIVED)
timedout=$(count 'TIMED OUT')
notviable=$(count 'NOT VIABLE')
notcovered=$(count 'NOT COVERED')

# Equivalent mutants: lines "| file.go:L:C | MUTATOR | reason |" in the table of
# bench/mutation-equivalent.md.
eqfile="$root/bench/mutation-equivalent.md"
equiv=$(mktemp)
trap 'rm -f "$equiv"' EXIT
if [ -f "$eqfile" ]; then
  sed -nE 's/^\|[[:space:]]*`?([a-z_0-9]+\.go:[0-9]+:[0-9]+)`?[[:space:]]*\|[[:space:]]*`?([A-Z_]+)`?[[:space:]]*\|.*/\2 \1/p' "$eqfile" | sort -u >"$equiv"
fi

echo "== mutants that lived"
livedeq=0
while read -r _ mutator _ pos; do
  if grep -qxF "$mutator $pos" "$equiv"; then
    livedeq=$((livedeq + 1))
    echo "  $mutator $pos (equivalent, see bench/mutation-equivalent.md)"
  else
    echo "  $mutator $pos"
  fi
done < <(strip | sed -nE 's/^[[:space:]]*(LIVED) ([A-Z_]+) at (.*)$/\1 \2 at \3/p' | sort -t' ' -k4,4 -V)

if rev=$(git rev-parse --short HEAD 2>/dev/null); then
  git diff --quiet HEAD -- lease || rev="$rev, lease/ modified"
else
  rev="${COMMIT:-not a git checkout}"
fi
echo "== result ($rev, ${elapsed}s, workers ${WORKERS:-2}${FILES:+, files $FILES})"
echo "killed $killed, lived $lived ($livedeq of them equivalent), timed out $timedout, not viable $notviable, not covered $notcovered"
awk -v k="$killed" -v l="$lived" -v e="$livedeq" 'BEGIN {
  if (k + l == 0) { print "efficacy: no mutant ran"; exit }
  printf "efficacy: killed / (killed + lived) = %d / %d = %.2f%%\n", k, k + l, 100 * k / (k + l)
  if (k + l - e > 0)
    printf "efficacy without the equivalent mutants: %d / %d = %.2f%%\n", k, k + l - e, 100 * k / (k + l - e)
}'
echo "log: $log"
echo "json: $json"
