#!/usr/bin/env bash
# loopx-guard-range.sh BASE HEAD: the push-time write-scope guard for pull
# requests. It fetches the state ref and runs
# `loopx guard check --range BASE..HEAD`: every commit of the pull request is
# judged against the leases in force when it was made, as the agent that made
# it, and the check fails when one changed a path inside another agent's
# leased write scope.
#
# Environment (all optional):
#   LOOPX            the loopx executable (default: loopx on PATH)
#   LOOPX_REMOTE     the remote holding the state ref (default: origin)
#   LOOPX_STATE_REF  the state ref (default: refs/loopx/state)
#   LOOPX_AGENT_ID   the agent of commits that name none (no Loopx-Agent trailer)
# Exit: 0 no conflict (or no state ref: nothing is leased), 1 a commit
# conflicts with a lease, 2 usage or setup problem.
set -euo pipefail

if [ $# -ne 2 ] || [ -z "$1" ] || [ -z "$2" ]; then
	echo "usage: loopx-guard-range.sh BASE HEAD (commit hashes or revisions)" >&2
	exit 2
fi
base=$1 head=$2
loopx=${LOOPX:-loopx}
remote=${LOOPX_REMOTE:-origin}
ref=${LOOPX_STATE_REF:-refs/loopx/state}
case "$ref" in
refs/*) ;;
*) echo "loopx-guard-range: LOOPX_STATE_REF must be a full ref name (refs/...), not '$ref'" >&2; exit 2 ;;
esac
git rev-parse --git-dir >/dev/null 2>&1 || { echo "loopx-guard-range: not inside a git repository" >&2; exit 2; }
for rev in "$base" "$head"; do
	git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || {
		echo "loopx-guard-range: $rev is not a commit here (fetch it: actions/checkout with fetch-depth: 0)" >&2
		exit 2
	}
done

tracking="refs/loopx-verify/${ref#refs/}"
if ! git ls-remote --exit-code "$remote" "$ref" >/dev/null 2>&1; then
	echo "loopx-guard-range: $remote has no $ref: no leases, nothing to check"
	exit 0
fi
git fetch --quiet --no-tags "$remote" "+$ref:$tracking" || { echo "loopx-guard-range: fetching $ref from $remote failed" >&2; exit 2; }

registry=$(mktemp "${TMPDIR:-/tmp}/loopx-guard-range.XXXXXX")
trap 'rm -f "$registry"' EXIT
json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
printf '{"repo": %s, "ref": %s}\n' "$(json_string "$(git rev-parse --show-toplevel)")" "$(json_string "$tracking")" >"$registry"
exec "$loopx" guard check --range "$base..$head" --registry "$registry" --format text
