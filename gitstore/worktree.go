package gitstore

// The working tree side of the repository, used by `loopx guard`: the paths
// a commit is about to record, git configuration values, and hooks. These
// run the git command (the guard runs inside a git hook, so git is there),
// in the top of the working tree and with the inherited environment, so the
// GIT_INDEX_FILE a hook receives (`git commit -a`, `git commit PATH`) is
// honoured.
//
// Hook installation never loses an existing hook:
//   - no hook: write "#!/bin/sh\n" + snippet, mode 0755;
//   - a hook containing the marker: nothing changes (idempotent);
//   - any other hook: it is renamed to "<name>.loopx-chained" (or
//     "<name>.loopx-chained-N" when that name is taken) and a new hook runs
//     it first, with the same arguments and stdin, stops with its exit status
//     when it fails, and then runs the snippet. Renaming rather than appending
//     keeps the old hook's interpreter and its own `exit`/`exec` lines
//     working: text appended after `exit 0` or `exec ...`, or to a Python
//     hook, would never run or would break it. A chained hook that is not
//     executable is skipped, as git itself skips it. For a hook that git
//     hands input on stdin (pre-push: the refs being pushed), that input is
//     kept in a temporary file, so the chained hook and the snippet both
//     read all of it.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoWorkTree is returned (wrapped) by the working tree operations of a
// bare repository.
var ErrNoWorkTree = errors.New("no working tree")

// gitOut runs git with args in the top of the working tree (the git dir of
// a bare repository) and returns its stdout.
func (s *Store) gitOut(args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = firstNonEmpty(s.workDir, s.gitDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("gitstore: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// StagedPaths returns the paths (slash-separated, relative to the top of
// the working tree, sorted) whose index entry differs from HEAD: added,
// modified, deleted, type-changed; a rename counts as its deletion and its
// addition. Before the first commit every staged path counts.
func (s *Store) StagedPaths() ([]string, error) {
	if s.workDir == "" {
		return nil, fmt.Errorf("gitstore: staged paths: %w", ErrNoWorkTree)
	}
	out, err := s.gitOut("diff", "--cached", "--name-only", "-z", "--no-renames", "--no-relative", "--no-ext-diff", "--no-textconv")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// ConfigValue returns the value of a git configuration key as git sees it
// (system, global, repository and worktree files, includes), "" when unset.
// `--default ""` makes an unset key a success, so any failure is an error
// (and stderr, where GIT_TRACE may write, is never interpreted).
func (s *Store) ConfigValue(key string) (string, error) {
	out, err := s.gitOut("config", "--default", "", "--get", key)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(out), "\r\n"), nil
}

// HooksDir returns the absolute folder git runs hooks from (core.hooksPath
// respected; the common git dir's hooks for linked worktrees).
func (s *Store) HooksDir() (string, error) {
	out, err := s.gitOut("rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	dir := strings.TrimRight(string(out), "\r\n")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(firstNonEmpty(s.workDir, s.gitDir), dir)
	}
	return filepath.Clean(dir), nil
}

// ChainedSuffix names the renamed copy of a hook that InstallHook chains.
const ChainedSuffix = ".loopx-chained"

// InstallHook installs snippet (shell lines) into the hook name so it runs
// on every invocation, chained after any existing hook (see the file
// comment). marker is a string that only an installed snippet contains; a
// hook holding it is left as it is. changed reports whether a file was
// written; path is the hook's path.
func (s *Store) InstallHook(name, marker, snippet string) (changed bool, path string, err error) {
	if s.workDir == "" {
		return false, "", fmt.Errorf("gitstore: install hook: %w", ErrNoWorkTree)
	}
	return s.InstallRepoHook(name, marker, snippet)
}

// InstallRepoHook is InstallHook for any repository, a bare one included
// (a server's pre-receive hook).
func (s *Store) InstallRepoHook(name, marker, snippet string) (changed bool, path string, err error) {
	if name == "" || strings.ContainsAny(name, `/\`) || marker == "" || !strings.Contains(snippet, marker) {
		return false, "", fmt.Errorf("gitstore: install hook %q: invalid name, marker or snippet", name)
	}
	dir, err := s.HooksDir()
	if err != nil {
		return false, "", err
	}
	path = filepath.Join(dir, name)
	if !strings.HasSuffix(snippet, "\n") {
		snippet += "\n"
	}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, lerr := os.Lstat(path); lerr == nil {
			// A dangling symlink: git cannot run it; keep it chained anyway.
			return s.chainHook(dir, name, path, snippet)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, path, err
		}
		return true, path, writeHook(path, "#!/bin/sh\n"+snippet)
	case err != nil:
		return false, path, err
	case bytes.Contains(old, []byte(snippet)):
		return false, path, nil
	case bytes.Contains(old, []byte(marker)):
		return replaceBlock(path, old, marker, snippet)
	}
	return s.chainHook(dir, name, path, snippet)
}

// replaceBlock replaces loopx's block in the hook at path (from the line
// holding marker to the next "# <<< " line, included) with snippet: an
// install with other options (another loopx, --decide) updates its block
// and leaves the rest of the hook as it is. A block without its end line
// is left alone: nothing is changed.
func replaceBlock(path string, old []byte, marker, snippet string) (bool, string, error) {
	start := bytes.Index(old, []byte(marker))
	if i := bytes.LastIndexByte(old[:start], '\n'); i >= 0 {
		start = i + 1
	} else {
		start = 0
	}
	rel := bytes.Index(old[start:], []byte("\n# <<< "))
	if rel < 0 {
		return false, path, nil
	}
	end := start + rel + 1
	if nl := bytes.IndexByte(old[end:], '\n'); nl >= 0 {
		end += nl + 1
	} else {
		end = len(old)
	}
	updated := append(append(append([]byte{}, old[:start]...), snippet...), old[end:]...)
	tmp := path + ".loopx-tmp"
	if err := writeHook(tmp, string(updated)); err != nil {
		return false, path, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, path, err
	}
	return true, path, nil
}

// chainHook renames the existing hook at path to a free chained name and
// writes a hook that runs it, then snippet.
func (s *Store) chainHook(dir, name, path, snippet string) (bool, string, error) {
	chained := name + ChainedSuffix
	for i := 2; ; i++ {
		if _, err := os.Lstat(filepath.Join(dir, chained)); errors.Is(err, os.ErrNotExist) {
			break
		} else if err != nil {
			return false, path, err
		}
		chained = name + ChainedSuffix + "-" + strconv.Itoa(i)
	}
	// Write the new hook beside the old one first, then swap: at every
	// instant the old hook exists under one of its two names.
	tmp := filepath.Join(dir, "."+name+".loopx-tmp")
	script := "#!/bin/sh\n" +
		"# " + name + " hook chained by loopx: the previous hook, kept as " + chained + ", runs first.\n" +
		"loopx_chained=\"$(dirname \"$0\")/" + chained + "\"\n"
	if stdinHooks[name] {
		// Both hooks read what git writes on stdin: keep a copy for the
		// snippet, which reads it after the chained hook has.
		script += "loopx_stdin=$(mktemp \"${TMPDIR:-/tmp}/loopx-" + name + ".XXXXXX\") || exit 1\n" +
			"trap 'rm -f \"$loopx_stdin\"' EXIT\n" +
			"cat >\"$loopx_stdin\" || exit 1\n" +
			"if [ -x \"$loopx_chained\" ]; then\n" +
			"\t\"$loopx_chained\" \"$@\" <\"$loopx_stdin\" || exit $?\n" +
			"fi\n" +
			"exec <\"$loopx_stdin\"\n" + snippet
	} else {
		script += "if [ -x \"$loopx_chained\" ]; then\n" +
			"\t\"$loopx_chained\" \"$@\" || exit $?\n" +
			"fi\n" + snippet
	}
	if err := writeHook(tmp, script); err != nil {
		return false, path, err
	}
	if err := os.Rename(path, filepath.Join(dir, chained)); err != nil {
		os.Remove(tmp)
		return false, path, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, path, err
	}
	return true, path, nil
}

// stdinHooks are the hooks git hands input on stdin (githooks(5)).
var stdinHooks = map[string]bool{"pre-push": true, "pre-receive": true, "post-receive": true,
	"post-rewrite": true, "reference-transaction": true}

func writeHook(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, 0o755) // the umask may have dropped the x bits
}

// CheckedOutIn lists the working trees (the main one and every linked
// worktree) whose HEAD is the symbolic ref ref: a branch a `git commit`
// there would move.
func (s *Store) CheckedOutIn(ref string) ([]string, error) {
	type head struct{ file, tree string }
	var heads []head
	if s.workDir != "" {
		heads = append(heads, head{filepath.Join(s.commonDir, "HEAD"), filepath.Dir(s.commonDir)})
	}
	entries, err := os.ReadDir(filepath.Join(s.commonDir, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("gitstore: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(s.commonDir, "worktrees", e.Name())
		tree := dir
		if b, err := os.ReadFile(filepath.Join(dir, "gitdir")); err == nil {
			tree = filepath.Dir(strings.TrimSpace(string(b)))
		}
		heads = append(heads, head{filepath.Join(dir, "HEAD"), tree})
	}
	var out []string
	for _, h := range heads {
		b, err := os.ReadFile(h.file)
		if err != nil {
			continue
		}
		if target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: "); ok && target == ref {
			out = append(out, h.tree)
		}
	}
	return out, nil
}

// HeadCommit returns the commit ref names and its metadata (ok false when
// the ref is absent).
func (s *Store) HeadCommit(ref string) (CommitMeta, bool, error) {
	h, err := s.ReadRef(ref)
	if err != nil || h.IsZero() {
		return CommitMeta{}, false, err
	}
	var out CommitMeta
	err = s.Log(h, func(c CommitMeta) (bool, error) { out = c; return false, nil })
	return out, err == nil, err
}

// AddTrailers adds trailers ("Key: value") to the commit message in file,
// as `git interpret-trailers --in-place` does (git's own rules for where a
// trailer block starts, comment lines, and existing trailers): a trailer
// whose key replace names takes the place of any of that key, every other
// one is added unless the same key and value are there already.
func (s *Store) AddTrailers(file string, replace map[string]bool, trailers []string) error {
	if len(trailers) == 0 {
		return nil
	}
	args := []string{"interpret-trailers", "--in-place"}
	for _, t := range trailers {
		key, _, _ := strings.Cut(t, ":")
		mode := "addIfDifferent"
		if replace[key] {
			mode = "replace"
		}
		args = append(args, "--if-exists", mode, "--if-missing", "add", "--trailer", t)
	}
	_, err := s.gitOut(append(args, file)...)
	return err
}
