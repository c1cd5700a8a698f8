package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Failures of the git binary, told apart by what it printed (in the C
// locale), and said in loopx's terms: which error class, and for a login
// the server refused, which credential git offered (the helper's name, the
// header's name, the key file or agent; never a secret) and how to fix it.

// wireFailure is the kind of a failed git command.
type wireFailure int

const (
	wireBroken      wireFailure = iota // the conversation broke, or the server failed: may pass
	wireUnreachable                    // no connection at all (nothing was sent): may pass
	wireAuth                           // the server wants a login it did not get, or refused the one offered
	wireForbidden                      // the login was accepted and is not allowed in
	wireNotFound                       // no such repository (or not visible to that login)
	wireHostKey                        // ssh: the server's host key is unknown or changed
	wireTLS                            // https: the server's certificate is not trusted
	wireRefused                        // the server said no otherwise (an ERR line)
	wireBadURL                         // git cannot use the URL
	wireLocalIO                        // this repository could not be written
)

// rejected reports whether the failure is a decision (the same request
// meets it again until someone changes a setting).
func (f wireFailure) rejected() bool { return f >= wireAuth && f <= wireBadURL }

var (
	wireAuthSigns = []string{"authentication failed for", "could not read username for", "could not read password for",
		"returned error: 401", "permission denied (publickey", "permission denied (password", "permission denied (keyboard",
		"permission denied (gssapi", "permission denied, please try again", "too many authentication failures",
		"no more authentication methods", "no supported authentication methods"}
	wireHostKeySigns = []string{"host key verification failed", "remote host identification has changed",
		"no matching host key type", "host key for", "no host key is known"}
	wireTLSSigns = []string{"ssl certificate problem", "server certificate verification failed", "certificate verify failed",
		"self signed certificate", "self-signed certificate", "unable to get local issuer certificate"}
	wireNotFoundSigns = []string{"does not appear to be a git repository", "returned error: 404", "repository not found",
		"not a git repository", "no such repository", "repository not exported", "' not found", "does not exist"}
	wireBadURLSigns = []string{"unable to find remote helper", "not allowed", "is not supported", "unsupported protocol",
		"invalid url", "bad url", "strange hostname", "strange pathname", "ssrf"}
	wireUnreachableSigns = []string{"connection refused", "could not resolve host", "name or service not known",
		"temporary failure in name resolution", "no address associated with hostname", "no route to host",
		"network is unreachable", "failed to connect to", "couldn't connect to server", "unable to connect to",
		"unable to look up"}
	wireLocalIOSigns = []string{"unable to create temporary file", "insufficient permission for adding an object",
		"no space left on device", "read-only file system", "disk quota exceeded", "unable to write", "failed to write object",
		"input/output error", "unable to create directory", "unable to create", "cannot create", "not a directory"}
)

func containsAny(s string, signs []string) bool {
	for _, x := range signs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// wireFailureOf classifies what git printed. local: the command wrote into
// this repository (a fetch), whose own failures are then told apart.
func wireFailureOf(stderr string, local bool) wireFailure {
	var mine, all strings.Builder
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.ToLower(strings.TrimSpace(l))
		all.WriteString(l + "\n")
		if !strings.HasPrefix(l, "remote:") {
			mine.WriteString(l + "\n")
		}
	}
	m, a := mine.String(), all.String()
	switch {
	case local && containsAny(m, wireLocalIOSigns):
		return wireLocalIO
	case containsAny(a, wireHostKeySigns):
		return wireHostKey
	case containsAny(a, wireTLSSigns):
		return wireTLS
	case containsAny(a, wireAuthSigns):
		return wireAuth
	case strings.Contains(a, "returned error: 403"):
		return wireForbidden
	case containsAny(a, wireNotFoundSigns):
		return wireNotFound
	case containsAny(m, wireBadURLSigns):
		return wireBadURL
	case strings.Contains(m, "remote error:"):
		return wireRefused
	case containsAny(a, wireUnreachableSigns):
		return wireUnreachable
	}
	return wireBroken
}

// gitSaid is what git printed as one line: the server's "remote:" lines
// without their prefix, git's own lines without "fatal:"/"error:", hints
// and boilerplate dropped, credentials in URLs masked.
func gitSaid(stderr string) string {
	var out []string
	for _, l := range strings.FieldsFunc(stderr, func(r rune) bool { return r == '\n' || r == '\r' }) {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "remote:"); ok {
			l = strings.TrimSpace(rest)
		} else {
			for _, p := range []string{"fatal: ", "error: ", "warning: "} {
				l = strings.TrimPrefix(l, p)
			}
		}
		low := strings.ToLower(l)
		switch {
		case l == "", strings.HasPrefix(low, "hint:"),
			strings.HasPrefix(low, "please make sure you have the correct access rights"),
			low == "and the repository exists.",
			strings.HasPrefix(low, "failed to push some refs"),
			strings.HasPrefix(low, "ignoring --negotiation-tip"):
			continue
		}
		out = append(out, strings.TrimRight(l, "."))
	}
	s := strings.Join(out, "; ")
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return redactURL(s)
}

var urlPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(://[^/@\s:'"]*):[^/@\s'"]*@`) })

// redactURL masks a password written into a URL.
func redactURL(s string) string { return urlPassword().ReplaceAllString(s, "$1:***@") }

// wireError turns a failed git command into a gitstore error: the class
// (ErrIO, ErrRemoteRejected, ErrRemoteUnavailable), what git said, and
// for a refused login or an unknown host key which credential was offered
// and how to fix it.
func (s *Store) wireError(ctx context.Context, remote, target, what string, out wireOut, local bool) error {
	kind := wireFailureOf(out.stderr, local)
	said := gitSaid(out.stderr)
	if said == "" {
		said = fmt.Sprintf("git %s exited with status %d", what, out.code)
	}
	name := redactURL(remote)
	switch {
	case kind == wireLocalIO:
		return fmt.Errorf("gitstore: remote %s: %s: this repository could not store what the server sent: %s: %w", name, what, said, ErrIO)
	case kind.rejected():
		if note := s.credentialNote(ctx, target, kind, what == "push", said); note != "" {
			said = strings.TrimRight(said, ".") + ". " + note
		}
		return fmt.Errorf("gitstore: remote %s: %s: %s: %w", name, what, said, ErrRemoteRejected)
	}
	return fmt.Errorf("gitstore: remote %s: %s: %s: %w", name, what, said, ErrRemoteUnavailable)
}

// credentialNote says, for a failure about the login, which credential
// git offered the server and what to do ("" when there is nothing to
// add).
func (s *Store) credentialNote(ctx context.Context, target string, kind wireFailure, push bool, said string) string {
	switch kind {
	case wireAuth, wireForbidden, wireNotFound, wireHostKey, wireTLS:
	default:
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := s.effectiveURL(ctx, target, push)
	check := fmt.Sprintf("then check with `git ls-remote %s`", redactURL(target))
	switch u := parseRemoteURL(url); u.scheme {
	case "http", "https":
		helpers, headers, inURL := s.httpCredentials(ctx, url, u)
		offered := append(append(inURL, helpers...), headers...)
		switch kind {
		case wireAuth:
			low := strings.ToLower(said)
			if !strings.Contains(low, "could not read username") && !strings.Contains(low, "could not read password") && len(offered) > 0 {
				return fmt.Sprintf("The server at %s refused the login git offered: %s (a password a helper supplied and the server refused is erased from it: git credential reject). "+
					"Fix: give the helper a valid login or token (`git credential approve`) or correct http.extraHeader, %s",
					redactURL(url), strings.Join(offered, "; "), check)
			}
			// git got no user name or password to answer the server's
			// request for one.
			var had []string
			if len(headers) > 0 {
				had = append(had, "it did not accept "+strings.Join(headers, ", "))
			}
			if len(helpers) > 0 {
				had = append(had, strings.Join(helpers, ", ")+" had no login for it")
			} else {
				had = append(had, "no credential helper is configured")
			}
			if len(inURL) == 0 && len(headers) == 0 {
				had = append(had, "no http.extraHeader, no user in the URL")
			}
			return fmt.Sprintf("The server at %s asks for a login and git has none for it: %s; "+
				"loopx runs git without a terminal, so git cannot ask for one. Fix: configure a credential helper "+
				"(`git config credential.helper store` and `git credential approve`, or your platform's helper) or http.extraHeader, %s",
				redactURL(url), strings.Join(had, "; "), check)
		case wireForbidden, wireNotFound:
			if len(offered) == 0 {
				if kind == wireForbidden {
					return fmt.Sprintf("git offered the server at %s no login (no credential helper, no http.extraHeader, no user in the URL). Fix: configure one, %s", redactURL(url), check)
				}
				return ""
			}
			return fmt.Sprintf("The login git offered the server at %s: %s. Fix: a login with access to this repository, %s", redactURL(url), strings.Join(offered, "; "), check)
		case wireTLS:
			return fmt.Sprintf("git does not trust the certificate of %s. Fix: name its CA with http.sslCAInfo (or fix the server's certificate), %s", redactURL(url), check)
		}
	case "ssh":
		d := s.sshCredentials(ctx, u)
		switch kind {
		case wireHostKey:
			return fmt.Sprintf("ssh (%s) does not know the host key of %s, or it changed; loopx runs ssh without a terminal, so ssh cannot ask to accept it. "+
				"Fix: add the key to known_hosts%s after checking its fingerprint (e.g. `ssh-keyscan -p %s %s`), or connect once with ssh from a terminal, %s",
				d.command, d.where(), d.knownHosts(), d.port, d.hostname, check)
		case wireAuth, wireForbidden, wireNotFound:
			lead := "The server refused the ssh login"
			if kind == wireNotFound {
				lead = "No such repository, or not visible to the ssh login"
			}
			return fmt.Sprintf("%s of %s: ssh (%s) offered %s. loopx runs ssh without a terminal: a key with a passphrase must be in the ssh agent. "+
				"Fix: add the public key to the account on the server, or name the right key (IdentityFile for Host %s in the ssh config, or core.sshCommand / GIT_SSH_COMMAND), %s",
				lead, d.where(), d.command, d.offered(), u.host, check)
		}
	}
	return ""
}

// effectiveURL is the URL git reaches for target after url.<base>.insteadOf
// (pushInsteadOf and pushurl for a push to a named remote).
func (s *Store) effectiveURL(ctx context.Context, target string, push bool) string {
	if push && isRemoteName(target) && !looksLikeURL(target) {
		if out, err := s.wireGit(ctx, "remote", "get-url", "--push", target); err == nil && out.code == 0 {
			return strings.TrimSpace(out.stdout)
		}
	}
	if out, err := s.wireGit(ctx, "ls-remote", "--get-url", target); err == nil && out.code == 0 {
		return strings.TrimSpace(out.stdout)
	}
	return target
}

// remoteURL is a URL's parts (scheme "ssh" for scp-like addresses, "file"
// for paths).
type remoteURL struct {
	scheme, user, host, port string
	password                 bool
}

func parseRemoteURL(url string) remoteURL {
	var u remoteURL
	var authority string
	switch i := strings.Index(url, "://"); {
	case i > 0:
		u.scheme = strings.ToLower(url[:i])
		switch u.scheme {
		case "git+ssh", "ssh+git":
			u.scheme = "ssh"
		}
		authority, _, _ = strings.Cut(url[i+3:], "/")
	case isLocalPath(url):
		u.scheme = "file"
		return u
	default: // scp-like [user@]host:path
		u.scheme = "ssh"
		authority, _, _ = strings.Cut(url, ":")
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		u.user, authority = authority[:i], authority[i+1:]
		if j := strings.IndexByte(u.user, ':'); j >= 0 {
			u.user, u.password = u.user[:j], true
		}
	}
	u.host = authority
	if strings.HasPrefix(authority, "[") {
		if j := strings.IndexByte(authority, ']'); j > 0 {
			u.host, u.port = authority[1:j], strings.TrimPrefix(authority[j+1:], ":")
		}
	} else if h, p, ok := strings.Cut(authority, ":"); ok {
		u.host, u.port = h, p
	}
	return u
}

// configEntries returns the configuration entries whose names match
// pattern (a regexp for `git config --get-regexp`), in order.
func (s *Store) configEntries(ctx context.Context, pattern string) [][2]string {
	out, err := s.wireGit(ctx, "config", "-z", "--get-regexp", pattern)
	if err != nil || out.code != 0 {
		return nil
	}
	var entries [][2]string
	for _, e := range strings.Split(out.stdout, "\x00") {
		if e == "" {
			continue
		}
		k, v, _ := strings.Cut(e, "\n")
		entries = append(entries, [2]string{k, v})
	}
	return entries
}

// urlMatches reports whether a config subsection URL (credential.<url>.*,
// http.<url>.*) applies to url: the same scheme and host, and a path
// prefix.
func urlMatches(pattern, url string) bool {
	if !strings.Contains(pattern, "://") {
		u := parseRemoteURL(url)
		return pattern == u.host
	}
	return strings.HasPrefix(strings.TrimSuffix(url, "/")+"/", strings.TrimSuffix(pattern, "/")+"/")
}

// httpCredentials lists what git offers an HTTP server for url: the
// credential helpers that apply, the extra headers (by name), a user in
// the URL.
func (s *Store) httpCredentials(ctx context.Context, url string, u remoteURL) (helpers, headers, inURL []string) {
	if u.user != "" {
		what := fmt.Sprintf("the user name %q in the URL", u.user)
		if u.password {
			what += " with a password"
		}
		inURL = append(inURL, what)
	}
	for _, e := range s.configEntries(ctx, `^(credential|http)\..*`) {
		key, val := e[0], e[1]
		section, rest, _ := strings.Cut(key, ".")
		sub, name := "", rest
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			sub, name = rest[:i], rest[i+1:]
		}
		if sub != "" && !urlMatches(sub, url) {
			continue
		}
		switch {
		case section == "credential" && name == "helper":
			if val == "" {
				helpers = nil // an empty helper resets the list, as in git
				continue
			}
			helpers = append(helpers, fmt.Sprintf("the credential helper %q (%s)", helperName(val), key))
		case section == "http" && name == "extraheader":
			if val == "" {
				headers = nil
				continue
			}
			h, _, _ := strings.Cut(val, ":")
			headers = append(headers, fmt.Sprintf("the header %q from %s", strings.TrimSpace(h), key))
		}
	}
	return helpers, headers, inURL
}

// helperName is a credential helper's name without its arguments (which
// may hold a secret).
func helperName(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "!") {
		return "a shell command"
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return v
	}
	return strings.TrimPrefix(filepath.Base(f[0]), "git-credential-")
}

// sshSetup is what ssh would do for a host, as far as `ssh -G` tells.
type sshSetup struct {
	command                     string // which ssh, and where it comes from
	alias                       string
	user, hostname, port        string
	keys                        []string // identity files that exist
	agent                       string   // the agent's socket ("" none)
	knownHostsFiles             []string
	configKnown, identitiesOnly bool
}

func (d sshSetup) where() string {
	w := d.alias
	if d.hostname != "" && d.hostname != d.alias {
		w += " (" + d.hostname
		if d.port != "" && d.port != "22" {
			w += " port " + d.port
		}
		w += ")"
	} else if d.port != "" && d.port != "22" {
		w += " port " + d.port
	}
	if d.user != "" {
		w = d.user + "@" + w
	}
	return w
}

func (d sshSetup) offered() string {
	var parts []string
	switch {
	case len(d.keys) > 0 && d.identitiesOnly:
		parts = append(parts, "the key files "+strings.Join(d.keys, ", ")+" and no other (IdentitiesOnly)")
	case len(d.keys) > 0:
		parts = append(parts, "the key files "+strings.Join(d.keys, ", "))
	case d.configKnown:
		parts = append(parts, "no key file (none of its IdentityFile names exists)")
	}
	switch {
	case d.agent == "":
		parts = append(parts, "no ssh agent (SSH_AUTH_SOCK is not set)")
	case d.identitiesOnly && len(d.keys) > 0:
		parts = append(parts, "the ssh agent at "+d.agent+" only for those keys")
	default:
		parts = append(parts, "the keys of the ssh agent at "+d.agent)
	}
	return strings.Join(parts, "; ")
}

func (d sshSetup) knownHosts() string {
	if len(d.knownHostsFiles) == 0 {
		return ""
	}
	return " (" + strings.Join(d.knownHostsFiles, ", ") + ")"
}

// sshCredentials asks the ssh git would run (`ssh -G`) what it does for
// u's host.
func (s *Store) sshCredentials(ctx context.Context, u remoteURL) sshSetup {
	d := sshSetup{alias: u.host, user: u.user, port: u.port, hostname: u.host}
	cmd, source := os.Getenv("GIT_SSH_COMMAND"), "GIT_SSH_COMMAND"
	if cmd == "" {
		if out, err := s.wireGit(ctx, "config", "core.sshCommand"); err == nil && out.code == 0 {
			cmd, source = strings.TrimSpace(out.stdout), "core.sshCommand"
		}
	}
	shell := true
	if cmd == "" {
		if p := os.Getenv("GIT_SSH"); p != "" {
			cmd, source, shell = p, "GIT_SSH", false
		}
	}
	if cmd == "" {
		cmd, source = "ssh", ""
	}
	d.command = cmd
	if source != "" {
		d.command = fmt.Sprintf("%s = `%s`", source, cmd)
	}
	args := []string{"-G"}
	if u.port != "" {
		args = append(args, "-p", u.port)
	}
	if u.user != "" {
		args = append(args, "-l", u.user)
	}
	args = append(args, u.host)
	var c *exec.Cmd
	if shell {
		c = exec.CommandContext(ctx, "sh", append([]string{"-c", cmd + ` "$@"`, "sh"}, args...)...)
	} else {
		c = exec.CommandContext(ctx, cmd, args...)
	}
	c.Env = append(gitEnv(), "LC_ALL=C")
	detach(c)
	out, err := c.Output()
	if err != nil {
		if os.Getenv("SSH_AUTH_SOCK") != "" {
			d.agent = os.Getenv("SSH_AUTH_SOCK")
		}
		return d
	}
	d.configKnown = true
	home := ""
	if me, err := user.Current(); err == nil {
		home = me.HomeDir
	}
	expand := func(p string) string {
		if strings.HasPrefix(p, "~/") && home != "" {
			return filepath.Join(home, p[2:])
		}
		return p
	}
	agent := "SSH_AUTH_SOCK"
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch k {
		case "hostname":
			d.hostname = v
		case "port":
			d.port = v
		case "user":
			d.user = v
		case "identityfile":
			if p := expand(v); regularFile(p) {
				d.keys = append(d.keys, p)
			}
		case "identityagent":
			agent = v
		case "identitiesonly":
			d.identitiesOnly = v == "yes"
		case "userknownhostsfile":
			for _, f := range strings.Fields(v) {
				d.knownHostsFiles = append(d.knownHostsFiles, expand(f))
			}
		}
	}
	switch agent {
	case "none":
	case "SSH_AUTH_SOCK":
		d.agent = os.Getenv("SSH_AUTH_SOCK")
	default:
		d.agent = expand(agent)
	}
	return d
}

func regularFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
