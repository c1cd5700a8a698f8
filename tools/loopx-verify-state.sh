#!/usr/bin/env bash
# loopx-verify-state.sh: the server-side check of the state ref, for Git hosts
# that run no hooks (GitHub). It fetches the state ref and runs
# `loopx verify --history --since <the last revision it verified>`, so each run
# checks only the commits pushed since, and fails when one does not verify or
# when the ref was rewritten (force-pushed or deleted) since the last run.
#
# Environment (all optional):
#   LOOPX            the loopx executable (default: loopx on PATH)
#   LOOPX_REMOTE     the remote to fetch from (default: origin)
#   LOOPX_STATE_REF  the state ref (default: refs/loopx/state)
#   LOOPX_VERIFIED   the file that keeps the last verified revision
#                    (default: .loopx-verified; keep it between runs, e.g. in
#                    the CI cache)
# Exit: 0 verified (or no state ref yet), 1 a commit does not verify or the
# ref was rewritten, 2 usage or setup problem (no git repository, fetch
# failed).
set -euo pipefail

loopx=${LOOPX:-loopx}
remote=${LOOPX_REMOTE:-origin}
# loopx itself reads $LOOPX_REMOTE as --remote: left in the environment (the
# action sets it), loopx would look for the fetched copy's ref on the server
# instead of judging the copy. The remote is this script's business only.
unset LOOPX_REMOTE
ref=${LOOPX_STATE_REF:-refs/loopx/state}
verified_file=${LOOPX_VERIFIED:-.loopx-verified}

case "$ref" in
refs/*) ;;
*) echo "loopx-verify-state: LOOPX_STATE_REF must be a full ref name (refs/...), not '$ref'" >&2; exit 2 ;;
esac
git rev-parse --git-dir >/dev/null 2>&1 || { echo "loopx-verify-state: not inside a git repository" >&2; exit 2; }

# The server's ref, into a ref of its own (never a working branch).
tracking="refs/loopx-verify/${ref#refs/}"
status=0
out=$(git ls-remote --exit-code "$remote" "$ref" 2>&1) || status=$?
if [ "$status" -ne 0 ]; then
	# --exit-code: 2 when the remote has no such ref, other codes on failure.
	if [ "$status" -eq 2 ]; then
		if [ -s "$verified_file" ]; then
			echo "loopx-verify-state: $remote has no $ref, but $(cat "$verified_file") was verified before: the state ref was deleted" >&2
			exit 1
		fi
		echo "loopx-verify-state: $remote has no $ref yet: nothing to verify"
		exit 0
	fi
	echo "loopx-verify-state: cannot reach $remote: $out" >&2
	exit 2
fi
git fetch --quiet --no-tags "$remote" "+$ref:$tracking" || { echo "loopx-verify-state: fetching $ref from $remote failed" >&2; exit 2; }
head=$(git rev-parse "$tracking")

since=""
if [ -s "$verified_file" ]; then
	since=$(tr -d ' \n\r' <"$verified_file")
	if ! git cat-file -e "$since^{commit}" 2>/dev/null || ! git merge-base --is-ancestor "$since" "$head"; then
		echo "loopx-verify-state: $ref was rewritten: the last verified revision $since is not in the history of $head (a force push)" >&2
		exit 1
	fi
	if [ "$since" = "$head" ]; then
		echo "loopx-verify-state: $ref is at $head, verified before"
		exit 0
	fi
fi

# A registry that points loopx at the fetched copy (the repository's own
# registry may name a remote, or the local store's ref).
registry=$(mktemp "${TMPDIR:-/tmp}/loopx-verify-state.XXXXXX")
trap 'rm -f "$registry"' EXIT
json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
printf '{"repo": %s, "ref": %s}\n' "$(json_string "$(git rev-parse --absolute-git-dir)")" "$(json_string "$tracking")" >"$registry"
args=(verify --history --published --registry "$registry" --format text)
if [ -n "$since" ]; then
	args+=(--since "$since")
fi
if ! "$loopx" "${args[@]}"; then
	echo "loopx-verify-state: $ref at $head does not verify${since:+ (commits after $since)}" >&2
	exit 1
fi
echo "$head" >"$verified_file"
echo "loopx-verify-state: $ref verified up to $head${since:+ (commits after $since)}"
