package cli

// The text output of every command, as people read it, is kept in golden
// files: TestGoldenText runs a scripted story (every command, its
// refusals, a fixed clock) in text mode and compares what each command
// printed with testdata/golden/<command>.txt. After a deliberate change of
// the text, regenerate them and review every changed line:
//
//	go test -run TestGoldenText ./cmd/loopx/cli -update
//
// The story runs the command line in this process (a fixed LOOPX_NOW gives
// fixed revisions), except where git runs loopx itself (the hooks): this
// test binary is then `loopx` on PATH (TestMain).

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGoldenText")

// TestMain makes this test binary a loopx on PATH for the hooks git runs,
// with the same fixed real clock as the in-process commands.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "loopx" {
		os.Exit(RunWith(Config{SystemClock: goldenSystemClock}, os.Args[1:], os.Stdout, os.Stderr))
	}
	bin, err := os.MkdirTemp("", "loopx-cli-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exe, err := os.Executable()
	if err == nil {
		err = os.Symlink(exe, filepath.Join(bin, "loopx"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := m.Run()
	os.RemoveAll(bin)
	os.Exit(code)
}

// goldenSystemClock is the real clock of the story's loopx: fixed, as the
// testscripts' is (LOOPX_TEST_SYSTEM_CLOCK, else LOOPX_NOW).
func goldenSystemClock() time.Time {
	for _, v := range []string{"LOOPX_TEST_SYSTEM_CLOCK", "LOOPX_NOW"} {
		if t, err := time.Parse(time.RFC3339, os.Getenv(v)); err == nil {
			return t
		}
	}
	return time.Now()
}

// step is one line of the story: a loopx command line (recorded in the
// golden file of its command) or a shell command (sh, not recorded).
type step struct {
	at    string   // LOOPX_NOW from this step on ("" keeps it)
	dir   string   // the folder it runs in, under the work folder ("" keeps it)
	args  []string // loopx's arguments
	sh    string   // instead: a shell command
	stdin string
	env   []string // KEY=VALUE for this step only
}

func lx(args ...string) step { return step{args: args} }
func sh(cmd string) step     { return step{sh: cmd} }
func at(t string) step       { return step{at: t} }
func in(dir string) step     { return step{dir: dir} }

func (s step) with(kv ...string) step { s.env = append(s.env, kv...); return s }
func (s step) input(in string) step   { s.stdin = in; return s }

// Public keys of the story's admins and agents (nothing is signed with them).
const (
	rootKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB8LHQaNSaDFncnmHjGSzU6fperfXLWaMuQp3MV/62W0 root@example\n"
	opsKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJtPdP/7yNW/EUL9BR6ZBYD93NmzqFxcsK0TuJSzVzYq ops@example\n"
	aKey    = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICcVk28nZWlEbSre4ASe+Wv1WdnvuCV/+DdOM1EESGxU agent-a@example\n"
)

// story is the scripted story: a goal worked on by two agents and an
// orchestrator from its creation to its audit, with the refusals people
// meet on the way, then a shared server and an agent offline.
func story() []step {
	return []step{
		sh("git init -q work && cd work && echo base >README && git add README && git commit -q -m base"),
		in("work"), at("2026-01-01T00:00:00Z"),
		lx("version"),
		lx("init"),
		lx("init"),
		lx("goal", "create", "--goal-id", "g", "--title", "Ship the parser"),
		lx("goal", "create", "--goal-id", "h", "--title", "Hand over with the lease", "--handoff-mode", "hard_lease"),
		lx("goal", "create", "--goal-id", "g"),
		lx("goal", "list"),
		lx("agent", "register", "--goal-id", "g", "--agent-id", "agent-a"),
		lx("agent", "register", "--goal-id", "g", "--agent-id", "agent-a"),
		lx("agent", "register", "--goal-id", "g", "--agent-id", "agent-b"),
		lx("agent", "register", "--goal-id", "g", "--agent-id", "lead", "--role", "orchestrator",
			"--lifecycle-authority", "complete,reassign", "--requires-reason"),
		lx("agent", "register", "--goal-id", "h", "--agent-id", "agent-a"),
		lx("agent", "register", "--goal-id", "h", "--agent-id", "agent-b"),
		lx("agent", "list", "--goal-id", "g"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_lexer", "--text", "Write the lexer", "--priority", "P1",
			"--required-write-scope", "src/lexer/**", "--agent-id", "lead"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_docs", "--text", "Document the lexer",
			"--depends-on", "todo_lexer", "--required-write-scope", "docs/**"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_tests", "--text", "Test the lexer",
			"--required-write-scope", "tests/**", "--excluded-agent", "agent-b"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_bench", "--text", "Benchmark the lexer",
			"--bound-agent", "agent-b", "--priority", "P3"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_lexer", "--text", "Another lexer"),
		lx("todo", "add", "--goal-id", "h", "--todo-id", "todo_schema", "--text", "Migrate the schema"),
		lx("todo", "list", "--goal-id", "g"),
		lx("todo", "ready", "--goal-id", "g", "--agent-id", "agent-a"),
		lx("todo", "claim", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a", "--claim-ttl-minutes", "30"),
		lx("todo", "claim", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-b"),
		lx("todo", "ready", "--goal-id", "g", "--agent-id", "agent-b", "--claim", "--claim-ttl-minutes", "60"),
		lx("task-lease", "inspect", "--goal-id", "g", "--todo-id", "todo_lexer"),
		lx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "0", "--ttl-seconds", "600", "--write-scope", "src/lexer/**"),
		lx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "0", "--ttl-seconds", "600", "--write-scope", "src/lexer/**"),
		lx("task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-b",
			"--idempotency-key", "exec-b", "--ttl-seconds", "600"),
		lx("status", "--goal-id", "g"),

		at("2026-01-01T00:06:00Z"),
		lx("task-lease", "renew", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "1", "--ttl-seconds", "600"),
		lx("task-lease", "renew", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "1", "--ttl-seconds", "600"),
		lx("todo", "update", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a",
			"--note", "Tokens done; comments next", "--task-lease-idempotency-key", "exec-1", "--task-lease-expected-version", "2"),
		lx("todo", "update", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a", "--priority", "P0"),
		lx("todo", "show", "--goal-id", "g", "--todo-id", "todo_lexer"),
		lx("todo", "show", "--goal-id", "g", "--todo-id", "todo_docs"),
		lx("task-lease", "inspect", "--goal-id", "g", "--todo-id", "todo_lexer"),
		lx("status", "--goal-id", "g", "--agent-id", "agent-b"),
		lx("guard", "install"),
		lx("guard", "install", "--pre-push"),
		lx("guard", "install"),
		sh("mkdir -p src/lexer && echo 'package lexer' >src/lexer/lexer.go && git add src/lexer/lexer.go"),
		lx("guard", "check", "--agent-id", "agent-b", "--staged"),
		lx("guard", "check", "--agent-id", "agent-a", "--staged"),
		lx("guard", "check", "--agent-id", "agent-b", "src/lexer/lexer.go", "docs/lexer.md"),
		sh("echo 'lexer: tokens' >msg.txt"),
		lx("guard", "commit-msg", "msg.txt").with("LOOPX_AGENT_ID=agent-a"),
		lx("guard", "commit-msg", "msg.txt"),
		sh("LOOPX_AGENT_ID=agent-a git commit -q -m 'lexer: tokens' && git tag lexer"),
		sh("echo '// drive-by' >>src/lexer/lexer.go && git commit -q --no-verify -a -m 'lexer: a drive-by fix' -m 'Loopx-Agent: agent-b'"),
		lx("guard", "check", "--range", "lexer..HEAD"),
		lx("guard", "check", "--range", "HEAD~2..lexer"),
		lx("guard", "check", "--agent-id", "agent-a", "--range", "HEAD~2..lexer"),

		at("2026-01-01T00:12:00Z"),
		lx("task-lease", "transfer", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "2", "--new-owner", "agent-b",
			"--new-idempotency-key", "exec-2", "--ttl-seconds", "600"),
		lx("task-lease", "release", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "3"),
		lx("task-lease", "release", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "2"),
		lx("task-lease", "release", "--goal-id", "g", "--todo-id", "todo_lexer", "--owner", "agent-a",
			"--idempotency-key", "exec-1", "--expected-version", "2"),
		lx("task-lease", "inspect", "--goal-id", "g", "--todo-id", "todo_lexer"),

		at("2026-01-01T00:20:00Z"),
		lx("todo", "show", "--goal-id", "g", "--todo-id", "todo_lexer"),
		lx("todo", "complete", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a",
			"--evidence", "go test ./lexer passes", "--evidence", "reviewed by lead", "--note", "Comments are tokens too"),
		lx("todo", "complete", "--goal-id", "g", "--todo-id", "todo_lexer", "--agent-id", "agent-a",
			"--evidence", "go test ./lexer passes", "--evidence", "reviewed by lead", "--note", "Comments are tokens too"),
		lx("todo", "show", "--goal-id", "g", "--todo-id", "todo_lexer"),
		lx("todo", "supersede", "--goal-id", "g", "--todo-id", "todo_tests", "--agent-id", "agent-a",
			"--reason", "covered by the lexer's own tests", "--by", "todo_lexer"),
		lx("todo", "list", "--goal-id", "g"),
		lx("todo", "list", "--goal-id", "g", "--status", "done"),
		lx("todo", "list", "--goal-id", "g", "--agent-id", "agent-b"),
		lx("todo", "ready", "--goal-id", "h", "--agent-id", "agent-a", "--claim",
			"--task-lease-idempotency-key", "schema-1", "--ttl-seconds", "600"),
		lx("task-lease", "transfer", "--goal-id", "h", "--todo-id", "todo_schema", "--owner", "agent-a",
			"--idempotency-key", "schema-1", "--expected-version", "1", "--new-owner", "agent-b",
			"--new-idempotency-key", "schema-2", "--ttl-seconds", "600", "--transfer-claim"),
		lx("todo", "ready", "--goal-id", "h", "--agent-id", "agent-a", "--claim"),
		lx("run", "--goal-id", "g", "--todo-id", "todo_docs", "--owner", "agent-a", "--idempotency-key", "run-1",
			"--ttl-seconds", "60", "--claim", "--complete-on-success", "--evidence", "docs build", "--", "true"),
		lx("run", "--goal-id", "g", "--todo-id", "todo_bench", "--owner", "agent-b", "--idempotency-key", "run-2",
			"--ttl-seconds", "60", "--", "false"),
		lx("run", "--goal-id", "h", "--todo-id", "todo_schema", "--owner", "agent-a", "--idempotency-key", "run-3",
			"--ttl-seconds", "60", "--", "true"),

		at("2026-01-01T00:30:00Z"),
		lx("status", "--goal-id", "g"),
		lx("todo", "project-markdown", "--goal-id", "g"),
		lx("todo", "project-markdown", "--goal-id", "g", "--output", "TODO.md"),
		lx("log", "--goal-id", "g", "--limit", "6"),
		lx("log", "--goal-id", "g", "--todo-id", "todo_lexer"),
		lx("verify"),
		lx("verify", "--history"),
		lx("gc"),
		lx("apply").input(`{"schema":"loopx.todo.add/v1","goal_id":"g","todo_id":"todo_release","text":"Cut the release","priority":"P1"}`),
		lx("apply").input(`{"schema":"loopx.todo.add/v1","goal_id":"g","todo_id":"todo_release","text":"Cut the release","priority":"P1"}`),
		lx("apply").input(`{"schema":"loopx.todo.add/v1","goal_id":"g","todo_id":"todo_release","txt":"typo"}`),
		lx("agent", "unregister", "--goal-id", "g", "--agent-id", "agent-b", "--by", "lead"),
		sh("printf '%s' '" + rootKey + "' >root.pub && printf '%s' '" + opsKey + "' >ops.pub && printf '%s' '" + aKey + "' >agent-a.pub"),
		lx("admin", "list"),
		lx("admin", "add", "--admin-id", "root", "--signing-key", "root.pub"),
		lx("admin", "add", "--admin-id", "ops", "--signing-key", "ops.pub", "--by", "root"),
		lx("admin", "list"),
		lx("admin", "remove", "--admin-id", "ops", "--by", "root"),
		lx("agent", "rotate-key", "--goal-id", "g", "--agent-id", "agent-a", "--signing-key", "agent-a.pub"),
		lx("agent", "list", "--goal-id", "g"),
		lx("goal", "archive", "--goal-id", "h"),
		lx("goal", "archive", "--goal-id", "h", "--by", "root"),
		lx("goal", "show", "--goal-id", "h"),
		lx("goal", "unarchive", "--goal-id", "h", "--by", "root"),
		lx("goal", "show", "--goal-id", "g"),

		// A machine two hours ahead commits; back on the real clock,
		// mutations are refused until an admin resets the clock.
		at("2026-01-01T02:30:00Z"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_ahead", "--text", "Added two hours ahead").
			with("LOOPX_TEST_SYSTEM_CLOCK=2026-01-01T00:30:00Z"),
		at("2026-01-01T00:31:00Z"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_after", "--text", "Added on time"),
		lx("verify"),
		lx("clock-reset", "--by", "root", "--reason", "a machine ran two hours ahead"),
		lx("todo", "add", "--goal-id", "g", "--todo-id", "todo_after", "--text", "Added on time"),

		// A shared server: its hook checks every push at the server's own
		// clock, fixed here by a wrapper.
		in(""),
		sh("git init -q --bare server.git && printf '#!/bin/sh\\nLOOPX_NOW=2026-01-01T01:00:00Z exec loopx \"$@\"\\n' >server-loopx && chmod +x server-loopx"),
		at("2026-01-01T01:00:00Z"),
		lx("server-hook", "install", "--repo", "server.git", "--loopx", "$WORK/server-loopx"),
		lx("server-hook", "install", "--repo", "server.git", "--loopx", "$WORK/server-loopx"),
		sh("git init -q a && git -C a remote add origin ../server.git && git init -q b && git -C b remote add origin ../server.git"),
		in("a"),
		lx("init", "--remote", "origin"),
		lx("goal", "create", "--goal-id", "g"),
		lx("agent", "register", "--agent-id", "agent-a"),
		lx("agent", "register", "--agent-id", "agent-b"),
		lx("todo", "add", "--todo-id", "todo_api", "--text", "Design the API"),
		in("b"),
		lx("init", "--remote", "origin"),
		in("a"),
		lx("--offline", "todo", "claim", "--todo-id", "todo_api", "--agent-id", "agent-a"),
		lx("--offline", "todo", "add", "--todo-id", "todo_offline", "--text", "Found on the train"),
		lx("todo", "list"),
		in("b"),
		lx("todo", "claim", "--todo-id", "todo_api", "--agent-id", "agent-b"),
		in("a"),
		lx("sync"),
		lx("sync"),
		at("2026-01-01T02:00:00Z"),
		lx("todo", "add", "--todo-id", "todo_late", "--text", "Dated an hour ahead of the server"),
		at("2026-01-01T01:00:00Z"),
		sh("git rev-parse refs/loopx/state >../head && git commit-tree \"$(git rev-parse 'refs/loopx/state^{tree}')\" -p refs/loopx/state -m 'todo add g/todo_forged by agent-a' >../forged"),
		lx("server-hook", "pre-receive").input("@../head ../forged refs/loopx/state"),
		lx("doctor"),
		sh("git config loopx.agent agent-a && loopx guard install >/dev/null && loopx guard install --pre-push >/dev/null"),
		lx("doctor"),
		in("work"),
		sh("git config loopx.agent agent-a"),
		lx("doctor", "--offline"),

		in(""),
		lx("demo", "--dir", "$WORK/demo"),
	}
}

// TestGoldenText runs the story in text mode and compares each command's
// output with its golden file.
func TestGoldenText(t *testing.T) {
	if testing.Short() {
		t.Skip("the story runs every command")
	}
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "LOOPX_FORMAT": "text",
		"GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "dev",
		"GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:10:00Z",
		"GIT_COMMITTER_DATE": "2026-01-01T00:10:00Z", "SSH_AUTH_SOCK": "", "LOOPX_SIGNING_KEY": "",
		"LOOPX_AGENT_ID": "", "LOOPX_GOAL": "", "LOOPX_REGISTRY": "", "LOOPX_REMOTE": "", "LOOPX_OFFLINE": "",
		"LOOPX_TEST_SYSTEM_CLOCK": "", "LOOPX_TX_STATS": "", "LOOPX_WAIT_STATS": "", "GIT_DIR": "", "GIT_WORK_TREE": "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
	t.Chdir(work)
	stdin := os.Stdin
	defer func() { os.Stdin = stdin }()

	got := map[string]*bytes.Buffer{}
	var order []string
	dir := work
	for i, s := range story() {
		if s.at != "" {
			os.Setenv("LOOPX_NOW", s.at)
		}
		if s.dir != "" || (s.args == nil && s.sh == "" && s.at == "") {
			dir = filepath.Join(work, s.dir)
		}
		if s.args == nil && s.sh == "" {
			continue
		}
		var restore []func()
		for _, kv := range s.env {
			k, v, _ := strings.Cut(kv, "=")
			old, had := os.LookupEnv(k)
			os.Setenv(k, v)
			restore = append(restore, func() {
				if had {
					os.Setenv(k, old)
				} else {
					os.Unsetenv(k)
				}
			})
		}
		if s.sh != "" {
			c := exec.Command("sh", "-c", s.sh)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("step %d: %s: %v\n%s", i, s.sh, err, out)
			}
		} else {
			name, code, out, errOut := runStep(t, work, dir, s)
			if got[name] == nil {
				got[name] = &bytes.Buffer{}
				order = append(order, name)
			}
			b := got[name]
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(b, "$ %sloopx %s\n", strings.Join(append(s.env, ""), " "), quoteArgs(s.args))
			b.WriteString(normalize(out, work))
			if errOut != "" {
				b.WriteString("--- stderr\n")
				b.WriteString(normalize(errOut, work))
			}
			if code != 0 {
				fmt.Fprintf(b, "--- exit %d\n", code)
			}
		}
		for _, r := range restore {
			r()
		}
	}

	golden := filepath.Join(pwd, "testdata", "golden")
	if *update {
		os.RemoveAll(golden)
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range order {
		file := filepath.Join(golden, name+".txt")
		if *update {
			if err := os.WriteFile(file, got[name].Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (run with -update to write it)", file, err)
			continue
		}
		if g := got[name].String(); g != string(want) {
			t.Errorf("%s differs (review, then -update):\n%s", file, lineDiff(string(want), g))
		}
	}
	if !*update {
		files, _ := filepath.Glob(filepath.Join(golden, "*.txt"))
		for _, f := range files {
			if got[strings.TrimSuffix(filepath.Base(f), ".txt")] == nil {
				t.Errorf("%s: no command of the story prints it (run with -update to remove it)", f)
			}
		}
	}

	// Every command people run has its text in the story.
	for _, c := range leafCommands(newRoot(&env{}, nil)) {
		if got[goldenName(c)] == nil && !notInStory[goldenName(c)] {
			t.Errorf("loopx %s is not in the story: add it, so its text output is reviewed", strings.TrimPrefix(c.CommandPath(), "loopx "))
		}
	}
}

// normalize replaces what depends on the machine in a command's output:
// the work folder, the folder of the test's loopx, git's version.
func normalize(out, work string) string {
	out = strings.ReplaceAll(out, work, "$WORK")
	if exe, err := exec.LookPath("loopx"); err == nil {
		out = strings.ReplaceAll(out, filepath.Dir(exe), "$BIN")
	}
	if v, err := exec.Command("git", "version").Output(); err == nil {
		if v := strings.TrimPrefix(strings.TrimSpace(string(v)), "git version "); v != "" {
			out = strings.ReplaceAll(out, v, "$GIT_VERSION")
		}
	}
	return out
}

// notInStory are the commands whose output is not text for people: the
// servers (mcp, web) and the generated shell scripts.
var notInStory = map[string]bool{
	"mcp": true, "web": true, "completion-bash": true, "completion-zsh": true, "completion-fish": true,
	"completion-powershell": true, "help": true,
}

// pwd is where the test started (the package folder), for the golden files.
var pwd, _ = os.Getwd()

// runStep runs one loopx command line of the story in dir.
func runStep(t *testing.T, work, dir string, s step) (name string, code int, stdout, stderr string) {
	t.Helper()
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = strings.ReplaceAll(a, "$WORK", work)
	}
	c, _, err := newRoot(&env{}, nil).Find(args)
	if err != nil {
		t.Fatalf("loopx %s: %v", quoteArgs(s.args), err)
	}
	name = goldenName(c)
	in := s.stdin
	if rest, ok := strings.CutPrefix(in, "@"); ok {
		// "@FILE FILE refs..." reads the files' contents in (pre-receive lines).
		var parts []string
		for _, f := range strings.Fields(rest) {
			if data, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				parts = append(parts, strings.TrimSpace(string(data)))
			} else {
				parts = append(parts, f)
			}
		}
		in = strings.Join(parts, " ") + "\n"
	}
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(in)
	f.Seek(0, 0)
	os.Stdin = f
	defer f.Close()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(work)
	var out, errOut bytes.Buffer
	code = RunWith(Config{SystemClock: goldenSystemClock}, args, &out, &errOut)
	return name, code, out.String(), errOut.String()
}

// goldenName is a command's golden file name: its path without "loopx",
// words joined by "-" ("todo-show").
func goldenName(c *cobra.Command) string {
	return strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "loopx"), " "), " ", "-")
}

// leafCommands are the commands of the tree that do something (no group,
// nothing hidden).
func leafCommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.Hidden {
			continue
		}
		if sub.HasSubCommands() {
			out = append(out, leafCommands(sub)...)
		} else {
			out = append(out, sub)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CommandPath() < out[j].CommandPath() })
	return out
}

// lineDiff shows the lines of want and got that differ, in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}
