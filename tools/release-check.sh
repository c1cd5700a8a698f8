#!/usr/bin/env bash
# Checks the release set-up without publishing anything:
#   1. installs GoReleaser (the version the release workflow uses) into a
#      temporary GOBIN, from the Go module proxy;
#   2. `goreleaser check` on .goreleaser.yaml;
#   3. a snapshot release of this working tree, committed or not (a clone with
#      the uncommitted changes copied over), into a temporary folder;
#   4. checks that every archive (linux, darwin, windows x amd64, arm64) exists,
#      matches checksums.txt and holds the binary, the README, the docs, the man
#      pages and the completions, and that the linux/amd64 binary's
#      `loopx version` reports the snapshot's version.
# Six cross builds: about 15 minutes on two cores with a cold build cache, so
# not part of CI. Run it before tagging:
#
#   bash tools/release-check.sh          # KEEP=1 keeps the temporary folder
set -euo pipefail

GORELEASER_VERSION=v2.15.1
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/loopx-release-check.XXXXXX")
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
export GOTOOLCHAIN=local

fail() { echo "release-check: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "install goreleaser $GORELEASER_VERSION into $work/bin"
GOBIN="$work/bin" go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
goreleaser="$work/bin/goreleaser"
"$goreleaser" --version | sed -n 's/^GitVersion: */goreleaser /p'

step "copy the working tree"
src="$work/src"
head=$(git -C "$repo" rev-parse HEAD)
git clone -q --no-local "$repo" "$src"
git -C "$src" checkout -q --detach "$head"
# Uncommitted changes too: tracked and new files as they are now, deleted
# files removed (GoReleaser builds a snapshot of a dirty tree).
git -C "$repo" ls-files -z --cached --others --exclude-standard |
  (cd "$repo" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$src" -xf -
git -C "$repo" ls-files -z --deleted | (cd "$src" && xargs -0 -r rm -f --)

cd "$src"
step "goreleaser check"
"$goreleaser" check

step "goreleaser release --snapshot --skip=publish"
start=$(date +%s)
"$goreleaser" release --snapshot --clean --skip=publish >"$work/goreleaser.log" 2>&1 ||
  { tail -40 "$work/goreleaser.log"; fail "goreleaser release --snapshot failed"; }
echo "built in $(($(date +%s) - start))s"

dist="$src/dist"
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
[ -n "$version" ] || fail "no version in dist/metadata.json"
echo "snapshot version: $version"

step "archives and checksums"
[ -s "$dist/checksums.txt" ] || fail "no checksums.txt"
for os in linux darwin windows; do
  for arch in amd64 arm64; do
    ext=tar.gz
    [ "$os" = windows ] && ext=zip
    name="loopx_${version}_${os}_${arch}.${ext}"
    [ -s "$dist/$name" ] || fail "missing archive $name"
    grep -q "  $name\$" "$dist/checksums.txt" || fail "$name is not in checksums.txt"
    echo "ok $name ($(wc -c <"$dist/$name") bytes)"
  done
done
(cd "$dist" && sha256sum --quiet -c checksums.txt) || fail "checksums.txt does not match the archives"
echo "ok checksums.txt ($(wc -l <"$dist/checksums.txt") archives)"

step "contents of the linux/amd64 archive"
x="$work/x"
mkdir -p "$x"
tar -C "$x" -xzf "$dist/loopx_${version}_linux_amd64.tar.gz"
for f in loopx README.md docs/REFERENCE.md docs/CLI.md man/man1/loopx.1 man/man1/loopx-todo-add.1 \
  man/man1/loopx-task-lease-acquire.1 completions/loopx.bash completions/_loopx completions/loopx.fish \
  completions/loopx.ps1; do
  [ -s "$x/$f" ] || fail "the archive lacks $f"
done
echo "ok $(find "$x/man" -name '*.1' | wc -l) man pages, $(ls "$x/completions" | wc -l) completion scripts"
grep -q "\"loopx v$version\"" "$x/man/man1/loopx.1" || fail "the man pages do not name loopx v$version"
if command -v unzip >/dev/null; then
  unzip -l "$dist/loopx_${version}_windows_amd64.zip" | grep -q ' loopx.exe$' || fail "the windows archive lacks loopx.exe"
  echo "ok loopx.exe in the windows/amd64 archive"
else
  echo "skipped the windows archive's contents: no unzip"
fi

step "the linux/amd64 binary"
go version -m "$x/loopx" | grep -q 'CGO_ENABLED=0' || fail "the binary was built with cgo"
if [ "$(uname -s)/$(uname -m)" = Linux/x86_64 ]; then
  out=$("$x/loopx" version --format text)
  echo "$out"
  case "$out" in
    "loopx v$version (store format "*) ;;
    *) fail "loopx version says '$out', want loopx v$version" ;;
  esac
else
  echo "skipped: not a linux/amd64 machine"
fi
echo "release-check: OK ($version)"
