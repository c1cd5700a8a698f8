package gitstore

import (
	"strings"
	"testing"
)

// The wire's rules, one table each: what is a remote name and what a URL,
// the parts of a URL, git's failures by what it printed, the push status
// lines, and what a message may show.

func TestRemoteNameOrURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in        string
		name, url bool
	}{
		{"origin", true, false},
		{"my-remote_2.x", true, false},
		{"forge:team/repo.git", false, true}, // ssh config alias, scp-like
		{"team:repo.git", false, true},       // an insteadOf prefix
		{"git@example.com:team/repo.git", false, true},
		{"https://example.com/team/repo.git", false, true},
		{"ssh://forge/srv/repo.git", false, true},
		{"/srv/git/repo.git", false, true},
		{"./repo.git", false, true},
		{"../repo.git", false, true},
		{".hidden", false, false},
		{"x.lock", false, false},
		{"", false, false},
	} {
		if got := isRemoteName(c.in); got != c.name {
			t.Errorf("isRemoteName(%q) = %v", c.in, got)
		}
		if got := looksLikeURL(c.in); got != c.url {
			t.Errorf("looksLikeURL(%q) = %v", c.in, got)
		}
	}
}

func TestParseRemoteURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want remoteURL
	}{
		{"https://example.com/team/repo.git", remoteURL{scheme: "https", host: "example.com"}},
		{"http://bob:pw@127.0.0.1:8080/x.git", remoteURL{scheme: "http", user: "bob", password: true, host: "127.0.0.1", port: "8080"}},
		{"ssh://git@forge:2222/srv/x.git", remoteURL{scheme: "ssh", user: "git", host: "forge", port: "2222"}},
		{"git+ssh://forge/srv/x.git", remoteURL{scheme: "ssh", host: "forge"}},
		{"ssh://[::1]:2222/x.git", remoteURL{scheme: "ssh", host: "::1", port: "2222"}},
		{"git@github.com:team/repo.git", remoteURL{scheme: "ssh", user: "git", host: "github.com"}},
		{"forge:team/repo.git", remoteURL{scheme: "ssh", host: "forge"}},
		{"git://127.0.0.1:9418/x.git", remoteURL{scheme: "git", host: "127.0.0.1", port: "9418"}},
		{"/srv/git/x.git", remoteURL{scheme: "file"}},
		{"../x.git", remoteURL{scheme: "file"}},
	} {
		if got := parseRemoteURL(c.in); got != c.want {
			t.Errorf("parseRemoteURL(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// What git 2.39 prints (LC_ALL=C) for each failure.
func TestWireFailureOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stderr string
		local  bool
		want   wireFailure
	}{
		{"fatal: Authentication failed for 'https://example.com/x.git/'\n", false, wireAuth},
		{"fatal: could not read Username for 'https://example.com': terminal prompts disabled\n", false, wireAuth},
		{"git@example.com: Permission denied (publickey).\r\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n", false, wireAuth},
		{"No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\r\nHost key verification failed.\r\nfatal: Could not read from remote repository.\n", false, wireHostKey},
		{"fatal: unable to access 'https://example.com/x.git/': SSL certificate problem: self-signed certificate\n", false, wireTLS},
		{"fatal: unable to access 'https://example.com/x.git/': The requested URL returned error: 403\n", false, wireForbidden},
		{"remote: Repository not found.\nfatal: repository 'https://github.com/a/b.git/' not found\n", false, wireNotFound},
		{"fatal: '/srv/missing.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n", false, wireNotFound},
		{"fatal: remote error: access denied or repository not exported: /x.git\n", false, wireNotFound},
		{"fatal: remote error: upload-pack: not our ref 0123\n", false, wireRefused},
		{"fatal: unable to find remote helper for 'foo'\n", false, wireBadURL},
		{"fatal: transport 'ext' not allowed\n", false, wireBadURL},
		{"fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n", false, wireUnreachable},
		{"ssh: Could not resolve hostname forge: Name or service not known\r\nfatal: Could not read from remote repository.\n", false, wireUnreachable},
		{"fatal: unable to access 'http://127.0.0.1:1/x.git/': Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server\n", false, wireUnreachable},
		{"fatal: unable to access 'https://example.com/x.git/': The requested URL returned error: 502\n", false, wireBroken},
		{"fatal: the remote end hung up unexpectedly\nfatal: early EOF\nfatal: index-pack failed\n", false, wireBroken},
		{"error: unable to open .git/objects/a3: Not a directory\nerror: unable to create temporary file: Not a directory\nfatal: failed to write object\nfatal: unpack-objects failed\n", true, wireLocalIO},
		{"error: unable to write file .git/objects/pack/tmp_pack_x: No space left on device\n", true, wireLocalIO},
		// The server's own disk trouble is not this repository's.
		{"remote: fatal: unable to create temporary file: No space left on device\nfatal: the remote end hung up unexpectedly\n", true, wireBroken},
		// Nothing local is written by a listing.
		{"error: unable to create temporary file: Not a directory\n", false, wireBroken},
	} {
		if got := wireFailureOf(c.stderr, c.local); got != c.want {
			t.Errorf("wireFailureOf(%q, %v) = %d, want %d", c.stderr, c.local, got, c.want)
		}
	}
}

func TestPushStatus(t *testing.T) {
	t.Parallel()
	const ref = "refs/loopx/state"
	out := func(line string) string { return "To ../srv.git\n" + line + "\nDone\n" }
	for _, c := range []struct {
		stdout  string
		flag    byte
		summary string
		ok      bool
	}{
		{out("*\tabc:refs/loopx/state\t[new reference]"), '*', "[new reference]", true},
		{out(" \tabc:refs/loopx/state\te4785f5..a34d9c2"), ' ', "e4785f5..a34d9c2", true},
		{out("=\tabc:refs/loopx/state\t[up to date]"), '=', "[up to date]", true},
		{out("!\tabc:refs/loopx/state\t[rejected] (stale info)"), '!', "[rejected] (stale info)", true},
		{out("!\tabc:refs/loopx/state\t[remote rejected] (pre-receive hook declined)"), '!', "[remote rejected] (pre-receive hook declined)", true},
		{out("!\tabc:refs/loopx/other\t[rejected] (stale info)"), 0, "", false},
		{"", 0, "", false},
	} {
		flag, summary, ok := pushStatus(c.stdout, ref)
		if flag != c.flag || summary != c.summary || ok != c.ok {
			t.Errorf("pushStatus(%q) = %q %q %v", c.stdout, flag, summary, ok)
		}
	}
}

func TestGitSaid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"remote: loopx state is frozen by policy        \nerror: failed to push some refs to 'x'\n", "loopx state is frozen by policy"},
		{"fatal: '/x' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n",
			"'/x' does not appear to be a git repository; Could not read from remote repository"},
		{"hint: Updates were rejected\nfatal: unable to access 'https://bob:hunter2@example.com/x.git/': oops\n", "unable to access 'https://bob:***@example.com/x.git/': oops"},
		{"warning: ignoring --negotiation-tip=refs/loopx/none-* because it does not match any refs\n", ""},
	} {
		if got := gitSaid(c.in); got != c.want {
			t.Errorf("gitSaid(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCredentialNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"store":                              "store",
		"store --file=/home/a/.secret-creds": "store",
		"/usr/lib/git-core/git-credential-libsecret": "libsecret",
		"cache --timeout=3600":                       "cache",
		"!f() { echo password=hunter2; }; f":         "a shell command",
		"manager":                                    "manager",
	} {
		if got := helperName(in); got != want || strings.Contains(got, "hunter2") {
			t.Errorf("helperName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		pattern, url string
		want         bool
	}{
		{"https://example.com", "https://example.com/team/x.git", true},
		{"https://example.com/", "https://example.com/team/x.git", true},
		{"https://example.com/team", "https://example.com/team/x.git", true},
		{"https://example.com/other", "https://example.com/team/x.git", false},
		{"https://example.com/te", "https://example.com/team/x.git", false},
		{"https://other.com", "https://example.com/x.git", false},
		{"example.com", "https://example.com/x.git", true},
	} {
		if got := urlMatches(c.pattern, c.url); got != c.want {
			t.Errorf("urlMatches(%q, %q) = %v", c.pattern, c.url, got)
		}
	}
}
