#!/usr/bin/env bash
# loopx-guard-range.sh BASE HEAD: the code fence for pull requests, on hosts
# that run no server hooks. It fetches the state ref and runs
# `loopx guard check --range BASE..HEAD`: every commit of the pull request is
# judged as the server hook would judge it if it landed now (on the state ref
# as fetched, never by the commit's dates; its agent is its Loopx-Agent
# trailer): refused when it writes into another agent's effective write scope
# (write_scope_conflict), names a lease whose todo has since been held by
# another agent (stale_epoch), or, in a store that requires signatures, writes
# into a leased scope unsigned or signed by another key than its agent's
# (signature_required, signature_invalid).
#
# Environment (all optional):
#   LOOPX            the loopx executable (default: loopx on PATH)
#   LOOPX_REMOTE     the remote holding the state ref (default: origin)
#   LOOPX_STATE_REF  the state ref (default: refs/loopx/state)
# Exit: 0 every commit passes (or no state ref: nothing is leased), 1 a commit
# is refused (one line per refused commit, with its code), 2 usage or setup
# problem.
set -euo pipefail

if [ $# -ne 2 ] || [ -z "$1" ] || [ -z "$2" ]; then
	echo "usage: loopx-guard-range.sh BASE HEAD (commit hashes or revisions)" >&2
	exit 2
fi
base=$1 head=$2
loopx=${LOOPX:-loopx}
remote=${LOOPX_REMOTE:-origin}
# loopx itself reads $LOOPX_REMOTE as --remote: left in the environment (the
# action sets it), loopx would look for the fetched copy's ref on the server
# instead of judging the copy. The remote is this script's business only.
unset LOOPX_REMOTE
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
