package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The wire: how Fetch, Push and LsRemote reach a server.
//
// Every remote is reached through the git binary, as `git fetch` and
// `git push` would reach it from this repository: a configured remote is
// given to git by its name, so git applies its url and pushurl, and the
// rest of git's configuration and environment applies as for any fetch or
// push: url.<base>.insteadOf and pushInsteadOf, credential helpers
// (`git credential fill/approve/reject`), http.extraHeader, http.proxy and
// the proxy variables, http.sslCAInfo and friends, GIT_SSH_COMMAND,
// core.sshCommand and GIT_SSH, and through ssh itself ~/.ssh/config (host
// aliases, IdentityFile, ProxyJump…), known_hosts and the ssh agent. Only
// git gives all of that exactly; a transport of loopx's own would copy a
// part of it and differ in the rest.
//
// Three commands, each one connection:
//
//   - `git ls-remote <remote> <ref>`: the server's value F of the ref, for
//     a probe that fetches nothing;
//   - `git fetch <remote> <ref>`: F and, when F's objects are missing, them:
//     no refspec destination (git moves no ref; loopx keeps F in its
//     tracking ref itself), F read from a FETCH_HEAD of the fetch's own
//     (gitFetch), no tags, no submodules, no auto-maintenance,
//     and the haves limited to the tracking and local heads
//     (--negotiation-tip), so the server sends only what the store lacks.
//     git writes the objects into a quarantine folder; loopx fsyncs them
//     and moves them in (gitFetch);
//   - `git push --porcelain --force-with-lease=<ref>:<F> <remote> <N>:<ref>`:
//     git sends the one command "F N <ref>" (F as the server advertised
//     it, after checking it is the lease's), and receive-pack checks F
//     under its ref lock: a true compare-and-swap. N is a fast-forward of
//     F, so nothing is ever forced. --no-verify: the repository's pre-push
//     hook is about its code, not about loopx's state ref.
//
// git runs without a terminal (its own session: ssh cannot prompt for a
// passphrase or a host key, GIT_TERMINAL_PROMPT=0: git cannot prompt for a
// password) and in the C locale (its messages are read here). A prompt
// would hang an agent; a failure says what to configure instead.

// gitBinary is the git command remote operations run ("git": found on
// PATH, like every other git loopx runs).
var gitBinary = "git"

// wireOut is what one git command said.
type wireOut struct {
	stdout, stderr string
	code           int // exit status; -1 when git could not run or was killed
}

// wireGit runs `git args…` in the store's repository for a remote
// operation. The error is only for a git that could not be run at all.
func (s *Store) wireGit(ctx context.Context, args ...string) (wireOut, error) {
	return s.wireGitEnv(ctx, nil, args...)
}

// wireGitEnv is wireGit with more environment variables.
func (s *Store) wireGitEnv(ctx context.Context, env []string, args ...string) (wireOut, error) {
	return s.wireGitDirEnv(ctx, s.gitDir, env, args...)
}

// wireGitDirEnv is wireGitEnv in another git folder (fetchGitDir).
func (s *Store) wireGitDirEnv(ctx context.Context, gitDir string, env []string, args ...string) (wireOut, error) {
	dir := s.workDir
	if dir == "" {
		dir = s.gitDir
	}
	full := append([]string{"--git-dir=" + gitDir}, args...)
	cmd := exec.CommandContext(ctx, gitBinary, full...)
	cmd.Dir = dir // relative remote paths resolve from the top of the working tree, as git does
	cmd.Env = append(append(gitEnv(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "LANGUAGE=C"), env...)
	detach(cmd) // no controlling terminal; ctx kills the whole process group
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := wireOut{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil:
		// git exited; something it started (an ssh ControlPersist
		// master, a credential cache daemon) still held its output.
		out.code = cmd.ProcessState.ExitCode()
	case errors.As(err, &ee) && ctx.Err() == nil:
		out.code = ee.ExitCode()
		if out.code < 0 {
			out.code = 128 // killed by a signal: a broken conversation
		}
	case ctx.Err() != nil:
		return out, fmt.Errorf("git %s: %w", args[0], ctx.Err())
	default:
		return out, err
	}
	return out, nil
}

// wireTarget returns what git is given for remote: the name of a
// configured remote, else the URL or path (a relative path resolved from
// the top of the working tree).
func (s *Store) wireTarget(remote string) (string, error) {
	url, err := s.RemoteURL(remote)
	if err != nil {
		return "", err
	}
	if isRemoteName(remote) && !looksLikeURL(remote) {
		return remote, nil
	}
	return url, nil
}

// noGit is the error for a git binary that cannot be run: a setup problem
// (the same request fails again), not a passing one.
func noGit(remote string, err error) error {
	remote = redactURL(remote)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("gitstore: remote %s: %v: %w", remote, err, ErrRemoteUnavailable)
	}
	return fmt.Errorf("gitstore: remote %s: remote mode runs the git command, which cannot be run (%v): install git: %w", remote, err, ErrRemoteRejected)
}

// gitLsRemote returns the server's value of the store's ref (ZeroHash:
// absent).
func (s *Store) gitLsRemote(ctx context.Context, remote, target string) (Hash, error) {
	// Protocol v0 for the listing: git 2.39's ls-remote sends no ref
	// prefix in v2 (its patterns match ref names from the end), so v2
	// lists every ref too, after one more round trip (a second HTTP
	// request, a stall of TCP's delayed acknowledgement on git://).
	// The server's decider ref is listed too: whether it decides requests
	// (request.go) is learned from every listing.
	out, err := s.wireGit(ctx, "-c", "protocol.version=0", "ls-remote", target, s.ref, s.DeciderRef())
	if err != nil {
		return ZeroHash, noGit(remote, err)
	}
	if out.code != 0 {
		return ZeroHash, s.wireError(ctx, remote, target, "list refs", out, false)
	}
	head, decides := ZeroHash, false
	for _, line := range strings.Split(out.stdout, "\n") {
		hash, name, ok := strings.Cut(strings.TrimSpace(line), "\t")
		switch {
		case ok && name == s.ref:
			h, ok := parseHash(hash)
			if !ok {
				return ZeroHash, fmt.Errorf("gitstore: remote %s: ls-remote answered %q: %w", remote, line, ErrRemoteUnavailable)
			}
			head = h
		case ok && name == s.DeciderRef():
			decides = true
		}
	}
	if decides {
		s.noteDecider(remote)
	} else {
		s.forgetDecider(remote)
	}
	return head, nil
}

func parseHash(s string) (Hash, bool) {
	var h Hash
	if len(s) != 40 {
		return h, false
	}
	for i := 0; i < 20; i++ {
		b, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return h, false
		}
		h[i] = byte(b)
	}
	return h, true
}

// gitFetch is Fetch through the git binary (see the top of this file):
// one `git fetch` of the store's ref, one connection that both lists the
// ref and brings what the store lacks (a head already here brings
// nothing), rather than an ls-remote and then a fetch: a mutation through
// a busy server fetches on every attempt, and each connection is a git
// process here and one on the server. The head it fetched is read from the
// FETCH_HEAD git writes into a git folder of the fetch's own (fetchGitDir),
// never the repository's, which other fetches may be writing.
//
// git writes what it fetches into a folder of loopx's own
// (objects/pack/tmp_fetch_loopx_<pid>_<n>, named by GIT_OBJECT_DIRECTORY,
// with the repository's objects as an alternate), as git's own quarantine
// does for a push: loopx then fsyncs each object file and moves it into
// the repository, and fsyncs the folders naming them. A fetched object is
// thus never visible before it is durable (git itself does not fsync
// loose objects by default), and a concurrent process that finds one
// can point a ref at it.
func (s *Store) gitFetch(ctx context.Context, remote, target string, haves []Hash) (Hash, error) {
	// Protocol v0, as for ls-remote: the listing comes with the
	// connection, where v2 asks for it in one more round trip (a stall of
	// TCP's delayed acknowledgement on git://: 67 ms against 16 ms for a
	// fetch that brings nothing, on this machine's loopback).
	args := []string{
		"-c", "protocol.version=0", "-c", "fetch.unpackLimit=" + strconv.Itoa(loosePackLimit),
		"fetch", "--quiet", "--no-tags", "--recurse-submodules=no",
		"--no-auto-maintenance", "--no-write-commit-graph", "--no-show-forced-updates", "--refmap=",
	}
	tips := 0
	for _, h := range haves {
		if !h.IsZero() && s.hasCommit(h) {
			tips++
			args = append(args, "--negotiation-tip="+h.String())
		}
	}
	if tips == 0 {
		// No commit of the store's history here: send no haves at
		// all (a tip pattern that matches no ref), rather than
		// offering the commits of every branch of the repository.
		args = append(args, "--negotiation-tip=refs/loopx/none-*")
	}
	args = append(args, target, s.ref)
	q, err := s.newQuarantine()
	if err != nil {
		return ZeroHash, err
	}
	defer q.remove()
	gitDir, err := q.fetchGitDir(s.commonDir)
	if err != nil {
		return ZeroHash, err
	}
	out, err := s.wireGitDirEnv(ctx, gitDir, q.env(s.commonDir), args...)
	if err != nil {
		return ZeroHash, noGit(remote, err)
	}
	if out.code != 0 {
		if strings.Contains(out.stderr, "couldn't find remote ref") {
			return ZeroHash, nil // the server has no such ref
		}
		return ZeroHash, s.wireError(ctx, remote, target, "fetch", out, true)
	}
	head, ok := readFetchHead(filepath.Join(gitDir, "FETCH_HEAD"))
	if !ok {
		return ZeroHash, fmt.Errorf("gitstore: remote %s: git fetch of %s named no commit: %w", redactURL(remote), s.ref, ErrRemoteUnavailable)
	}
	hook("fetch-quarantined")
	if err := s.migrate(q); err != nil {
		return ZeroHash, err
	}
	if !s.hasCommit(head) {
		return ZeroHash, fmt.Errorf("gitstore: remote %s: git fetch named %s for %s but did not bring it: %w", redactURL(remote), shortHash(head), s.ref, ErrRemoteUnavailable)
	}
	return head, nil
}

// fetchGitDir makes, inside q, the git folder a fetch runs in: it shares
// the repository's configuration, refs and objects (a "commondir" file,
// as a linked worktree's folder does), so the remote's name, its url and
// the rest of git's configuration apply as for any fetch, but FETCH_HEAD,
// which git writes into the folder it runs in, is the fetch's own.
func (q *quarantine) fetchGitDir(commonDir string) (string, error) {
	dir := filepath.Join(q.dir, "gitdir") // not an object folder name: migrate skips it
	abs, err := filepath.Abs(commonDir)
	if err == nil {
		err = os.MkdirAll(dir, 0o777)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "commondir"), []byte(abs+"\n"), 0o666)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/loopx-fetch\n"), 0o666)
	}
	if err != nil {
		return "", fmt.Errorf("gitstore: fetch: %w", ioError(err))
	}
	return dir, nil
}

// readFetchHead returns the commit of the one line of a FETCH_HEAD file.
func readFetchHead(name string) (Hash, bool) {
	data, err := os.ReadFile(name)
	if err != nil {
		return ZeroHash, false
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 1 {
		return ZeroHash, false
	}
	hash, _, _ := strings.Cut(lines[0], "\t")
	return parseHash(hash)
}

// tmpFetchPrefix names the folders fetches write into (leftovers.go).
const tmpFetchPrefix = "tmp_fetch_loopx_"

// quarantine is the object folder of one fetch.
type quarantine struct{ dir string }

func (s *Store) newQuarantine() (*quarantine, error) {
	dir := filepath.Join(s.commonDir, "objects", "pack", fmt.Sprintf("%s%d_%d", tmpFetchPrefix, os.Getpid(), tmpCounter.Add(1)))
	s.markTemp()
	if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o777); err != nil {
		return nil, fmt.Errorf("gitstore: fetch: %w", ioError(err))
	}
	s.markTemp()
	return &quarantine{dir: dir}, nil
}

func (q *quarantine) remove() { os.RemoveAll(q.dir) }

// wireGitIn is wireGit writing objects into q (reading the repository's
// as an alternate).
func (s *Store) wireGitIn(ctx context.Context, q *quarantine, args ...string) (wireOut, error) {
	return s.wireGitEnv(ctx, q.env(s.commonDir), args...)
}

// env is the environment of a git writing its objects into q.
func (q *quarantine) env(commonDir string) []string {
	return []string{
		"GIT_OBJECT_DIRECTORY=" + q.dir,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(commonDir, "objects"),
	}
}

// migrate moves what a fetch wrote into q into the repository's objects,
// durably: every file is fsynced, then renamed into place (a pack before
// its index, which is how readers find a pack), then the folders naming
// them are fsynced. Packs are listed as gitstore's own, so that reads and
// GC find them. OS failures wrap ErrIO.
func (s *Store) migrate(q *quarantine) (err error) {
	defer func() { err = ioError(err) }()
	objDir := filepath.Join(s.commonDir, "objects")
	type move struct{ from, to string }
	var loose, packs []move
	var packNames []Hash
	for _, sub := range readDirNames(q.dir) {
		if len(sub) != 2 {
			continue
		}
		for _, name := range readDirNames(filepath.Join(q.dir, sub)) {
			if len(name) == 38 && !strings.HasPrefix(name, "tmp_") {
				loose = append(loose, move{filepath.Join(q.dir, sub, name), filepath.Join(objDir, sub, name)})
			}
		}
	}
	// A pack first, then its other files (.rev, .promisor…), its index
	// last: readers find packs by their index. (.keep files are git
	// fetch's own, removed when it is done.)
	names := readDirNames(filepath.Join(q.dir, "pack"))
	sort.Strings(names)
	rank := func(name string) int {
		switch filepath.Ext(name) {
		case ".pack":
			return 0
		case ".idx":
			return 2
		}
		return 1
	}
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	for _, name := range names {
		if !strings.HasPrefix(name, "pack-") || strings.HasSuffix(name, ".keep") {
			continue
		}
		packs = append(packs, move{filepath.Join(q.dir, "pack", name), filepath.Join(objDir, "pack", name)})
		if strings.HasSuffix(name, ".idx") {
			if h, ok := parseHash(strings.TrimSuffix(strings.TrimPrefix(name, "pack-"), ".idx")); ok {
				packNames = append(packNames, h)
			}
		}
	}
	all := append(loose, packs...)
	if len(all) == 0 {
		return nil
	}
	if err := injected("fetch-objects", "write", objDir); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	noSync := s.odb.noSync
	syncFile := func(name string) error {
		if noSync {
			return nil
		}
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil && !syncDirUnsupported(err) {
			return err
		}
		return nil
	}
	if err := parallel(len(all), func(i int) error { return syncFile(all[i].from) }); err != nil {
		return err
	}
	dirs := map[string]bool{}
	created := false
	for _, m := range all {
		dir := filepath.Dir(m.to)
		if _, ok := dirs[dir]; !ok {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(dir, 0o777); err != nil {
					return err
				}
				created = true
			}
			dirs[dir] = true
		}
		if err := os.Rename(m.from, m.to); err != nil {
			return err
		}
	}
	if created {
		dirs[objDir] = true
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	if err := parallel(len(list), func(i int) error { return syncFile(list[i]) }); err != nil {
		return err
	}
	s.odb.refresh()
	for _, h := range packNames {
		s.odb.notePack(h)
	}
	return nil
}

// gitPush is the push of Push through the git binary (see the top of this
// file). A failure before anything was sent (no connection, a login or
// host key refused, no such repository) is the error; everything else is
// the reply.
func (s *Store) gitPush(ctx context.Context, remote, target string, old, new Hash) (pushReply, error) {
	expect := ""
	if !old.IsZero() {
		expect = old.String()
	}
	hook("push-sending")
	out, err := s.wireGit(ctx, "push", "--porcelain", "--no-verify", "--no-follow-tags", "--recurse-submodules=no",
		"--force-with-lease="+s.ref+":"+expect, target, new.String()+":"+s.ref)
	if err != nil {
		return pushReply{}, noGit(remote, err)
	}
	server := serverLines(out.stderr)
	if flag, summary, ok := pushStatus(out.stdout, s.ref); ok {
		switch flag {
		case ' ', '+', '*':
			return pushReply{applied: true, server: server}, nil
		case '=':
			return pushReply{upToDate: true}, nil
		}
		// '!': rejected. By git itself (the lease: the server's ref is
		// not at old; or not a fast-forward of it), by the server
		// ("[remote rejected] (reason)"), or no status came back
		// ("[remote failure]").
		msg := summary
		if server != "" {
			msg += " (" + server + ")"
		}
		switch {
		case strings.HasPrefix(summary, "[rejected]"):
			return pushReply{stale: true, msg: msg}, nil
		case strings.HasPrefix(summary, "[remote rejected]"):
			return pushReply{answered: true, msg: msg}, nil
		}
		return pushReply{msg: msg}, nil
	}
	// No status line: git stopped before or while talking to the server.
	kind := wireFailureOf(out.stderr, false)
	if kind.rejected() || kind == wireUnreachable {
		return pushReply{}, s.wireError(ctx, remote, target, "push", out, false)
	}
	msg := gitSaid(out.stderr)
	if msg == "" {
		msg = fmt.Sprintf("git push exited with status %d and no status for %s", out.code, s.ref)
	}
	return pushReply{msg: msg}, nil
}

// pushStatus finds ref's line in the output of `git push --porcelain`
// ("<flag>\t<src>:<dst>\t<summary>"): its flag (' ' fast-forward, '+'
// forced, '*' new, '=' up to date, '!' rejected) and summary.
func pushStatus(stdout, ref string) (flag byte, summary string, ok bool) {
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(f) < 3 || len(f[0]) != 1 || !strings.HasSuffix(f[1], ":"+ref) {
			continue
		}
		return f[0][0], f[2], true
	}
	return 0, "", false
}

// serverLines is what the server printed during a push ("remote:" lines,
// a hook's output), as one line.
func serverLines(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "remote:"); ok {
			if rest = strings.TrimSpace(rest); rest != "" {
				lines = append(lines, rest)
			}
		}
	}
	return strings.Join(lines, "; ")
}
