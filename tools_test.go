package loopx_test

// The scripts the GitHub workflow and action run (tools/), tested on a
// local bare repository as the "server".

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// script runs a tools/ script in dir with loopx being this test binary.
func script(t *testing.T, dir string, env []string, name string, args ...string) (int, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	wd, _ := os.Getwd()
	cmd := exec.Command("bash", append([]string{filepath.Join(wd, "tools", name)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LOOPX="+loopxWrapper(t), "LOOPX_FORMAT=text"), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// actionStep runs the step of the composite action .github/actions/NAME
// that runs tools/SCRIPT, as GitHub would: its run line and env with the
// inputs given (else their defaults) and github.action_path filled in, in
// dir, with LOOPX this test binary (as the action's install step sets it).
func actionStep(t *testing.T, dir, name, script string, inputs map[string]string) (int, string) {
	t.Helper()
	var spec struct {
		Inputs map[string]struct{ Default string } `yaml:"inputs"`
		Runs   struct {
			Steps []struct {
				Run string
				Env map[string]string
			}
		}
	}
	wd, _ := os.Getwd()
	path := filepath.Join(wd, ".github", "actions", name)
	data, err := os.ReadFile(filepath.Join(path, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	in := map[string]string{}
	for k, v := range spec.Inputs {
		in[k] = v.Default
	}
	for k, v := range inputs {
		in[k] = v
	}
	expand := func(v string) string {
		v = strings.ReplaceAll(v, "${{ github.action_path }}", path)
		for k, val := range in {
			v = strings.ReplaceAll(v, "${{ inputs."+k+" }}", val)
		}
		if strings.Contains(v, "${{") {
			t.Fatalf("the action's step uses %q, which this test does not provide", v)
		}
		return v
	}
	for _, st := range spec.Runs.Steps {
		if !strings.Contains(st.Run, "tools/"+script) {
			continue
		}
		cmd := exec.Command("bash", "-c", expand(st.Run))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LOOPX="+loopxWrapper(t), "LOOPX_FORMAT=text")
		for k, v := range st.Env {
			cmd.Env = append(cmd.Env, k+"="+expand(v))
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	t.Fatalf("no step of .github/actions/%s runs tools/%s", name, script)
	return 0, ""
}

// TestVerifyStateAction: the loopx-verify-state action's step (its
// environment included: $LOOPX_REMOTE must not put loopx in remote mode
// against the fetched copy) verifies a store that holds.
func TestVerifyStateAction(t *testing.T) {
	srv := fileServer(t)
	bare := bareRepo(t, srv.base, "state")
	client := machine(t, bare)
	must(t, client, "goal", "create", "--goal-id", "g")
	head := git(t, bare, "rev-parse", "refs/loopx/state")
	ci := t.TempDir()
	git(t, ci, "init", "-q")
	git(t, ci, "remote", "add", "origin", bare)
	if code, out := actionStep(t, ci, "loopx-verify-state", "loopx-verify-state.sh", nil); code != 0 || !strings.Contains(out, "verified up to "+head) {
		t.Fatalf("the action: exit %d\n%s", code, out)
	}
}

func TestVerifyStateScript(t *testing.T) {
	t.Parallel()
	srv := fileServer(t)
	bare := bareRepo(t, srv.base, "state")
	ci := t.TempDir() // the CI job's checkout
	git(t, ci, "init", "-q")
	git(t, ci, "remote", "add", "origin", bare)
	verified := []string{"LOOPX_VERIFIED=" + filepath.Join(t.TempDir(), "verified")}

	if code, out := script(t, ci, verified, "loopx-verify-state.sh"); code != 0 || !strings.Contains(out, "nothing to verify") {
		t.Fatalf("no state ref yet: exit %d\n%s", code, out)
	}
	client := machine(t, bare)
	must(t, client, "goal", "create", "--goal-id", "g")
	must(t, client, "agent", "register", "--goal-id", "g", "--agent-id", "a")
	first := git(t, bare, "rev-parse", "refs/loopx/state")
	if code, out := script(t, ci, verified, "loopx-verify-state.sh"); code != 0 || !strings.Contains(out, "verified up to "+first) {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	must(t, client, "todo", "add", "--goal-id", "g", "--todo-id", "todo_ci1", "--text", "x")
	second := git(t, bare, "rev-parse", "refs/loopx/state")
	code, out := script(t, ci, verified, "loopx-verify-state.sh")
	if code != 0 || !strings.Contains(out, "verified up to "+second+" (commits after "+first+")") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if code, out := script(t, ci, verified, "loopx-verify-state.sh"); code != 0 || !strings.Contains(out, "verified before") {
		t.Fatalf("nothing new: exit %d\n%s", code, out)
	}

	// A forged commit pushed straight to a server without hooks.
	forger := t.TempDir()
	git(t, forger, "init", "-q")
	git(t, forger, "fetch", "-q", bare, "refs/loopx/state:refs/loopx/state")
	tree := git(t, forger, "rev-parse", second+"^{tree}")
	forged, out2, err := gitIn(t, forger, []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@loopx.invalid", "GIT_COMMITTER_NAME=loopx", "GIT_COMMITTER_EMAIL=loopx@loopx.invalid"},
		"task-lease acquire g/todo_ci1 by a: v1 e1\n", "commit-tree", tree, "-p", second)
	if err != nil {
		t.Fatal(out2)
	}
	git(t, forger, "push", "-q", bare, forged+":refs/loopx/state")
	code, out = script(t, ci, verified, "loopx-verify-state.sh")
	if code != 1 || !strings.Contains(out, "does not verify") || !strings.Contains(out, forged) {
		t.Fatalf("forged commit: exit %d\n%s", code, out)
	}
	// The failure is not remembered as verified: the next run fails too.
	if code, _ := script(t, ci, verified, "loopx-verify-state.sh"); code != 1 {
		t.Fatalf("a second run after the forgery passed")
	}
	// A force push back to before the last verified revision.
	git(t, bare, "update-ref", "refs/loopx/state", first)
	code, out = script(t, ci, verified, "loopx-verify-state.sh")
	if code != 1 || !strings.Contains(out, "was rewritten") {
		t.Fatalf("rewritten ref: exit %d\n%s", code, out)
	}
	// Deleted.
	git(t, bare, "update-ref", "-d", "refs/loopx/state")
	if code, out := script(t, ci, verified, "loopx-verify-state.sh"); code != 1 || !strings.Contains(out, "was deleted") {
		t.Fatalf("deleted ref: exit %d\n%s", code, out)
	}
}

func TestGuardRangeScript(t *testing.T) {
	t.Parallel()
	srv := fileServer(t)
	bare := bareRepo(t, srv.base, "project")
	dev := machine(t, bare)
	must(t, dev, "goal", "create", "--goal-id", "g")
	must(t, dev, "agent", "register", "--goal-id", "g", "--agent-id", "agent-a")
	must(t, dev, "agent", "register", "--goal-id", "g", "--agent-id", "agent-b")
	must(t, dev, "todo", "add", "--goal-id", "g", "--todo-id", "todo_prx", "--text", "x")
	must(t, dev, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_prx", "--owner", "agent-a",
		"--idempotency-key", "k", "--ttl-seconds", "3600", "--write-scope", "src/**")
	commit := func(path, agent string) string {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dev, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dev, path), []byte(path+"\n"), 0o644)
		git(t, dev, "add", path)
		git(t, dev, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "change "+path, "-m", "Loopx-Agent: "+agent)
		return git(t, dev, "rev-parse", "HEAD")
	}
	base := commit("README", "agent-b")
	okHead := commit("docs/guide.md", "agent-b")
	badHead := commit("src/x.go", "agent-b")
	git(t, dev, "push", "-q", "origin", "HEAD:refs/heads/feature")

	ci := t.TempDir()
	git(t, ci, "clone", "-q", bare, ".")
	git(t, ci, "fetch", "-q", "origin", "refs/heads/feature:refs/remotes/origin/feature")
	if code, out := script(t, ci, nil, "loopx-guard-range.sh", base, okHead); code != 0 {
		t.Fatalf("a range outside every lease: exit %d\n%s", code, out)
	}
	code, out := script(t, ci, nil, "loopx-guard-range.sh", base, badHead)
	if code != 1 || !strings.Contains(out, "write_scope_conflict") || !strings.Contains(out, "src/x.go") {
		t.Fatalf("a range that touches agent-a's lease: exit %d\n%s", code, out)
	}
	if code, out := script(t, ci, nil, "loopx-guard-range.sh", base); code != 2 || !strings.Contains(out, "usage") {
		t.Fatalf("usage: exit %d\n%s", code, out)
	}
	// $LOOPX_AGENT_ID no longer names anybody: a commit is its trailer's.
	if code, out := script(t, ci, []string{"LOOPX_AGENT_ID=agent-a"}, "loopx-guard-range.sh", base, badHead); code != 1 || !strings.Contains(out, "write_scope_conflict") {
		t.Fatalf("LOOPX_AGENT_ID=agent-a: exit %d\n%s", code, out)
	}

	// The paused writer: agent-a's commit under epoch 1 of a todo since
	// transferred to agent-b is refused with stale_epoch (the code fence,
	// as the server hook judges it).
	must(t, dev, "todo", "add", "--goal-id", "g", "--todo-id", "todo_api", "--text", "x")
	must(t, dev, "task-lease", "acquire", "--goal-id", "g", "--todo-id", "todo_api", "--owner", "agent-a",
		"--idempotency-key", "ka", "--ttl-seconds", "3600", "--write-scope", "api/**")
	git(t, dev, "reset", "-q", "--hard", okHead)
	staleHead := commit("api/a.go", "agent-a\nLoopx-Lease: g/todo_api@1")
	must(t, dev, "task-lease", "transfer", "--goal-id", "g", "--todo-id", "todo_api", "--owner", "agent-a",
		"--idempotency-key", "ka", "--expected-version", "1", "--new-owner", "agent-b", "--new-idempotency-key", "kb", "--ttl-seconds", "3600")
	git(t, dev, "push", "-q", "origin", "HEAD:refs/heads/stale")
	git(t, ci, "fetch", "-q", "origin", "refs/heads/stale:refs/remotes/origin/stale")
	code, out = script(t, ci, nil, "loopx-guard-range.sh", okHead, staleHead)
	if code != 1 || !strings.Contains(out, "stale_epoch: Loopx-Lease g/todo_api@1: the todo has since been held by agent-b (epoch 2)") {
		t.Fatalf("the paused writer's range: exit %d\n%s", code, out)
	}

	// The action runs the script as its step says, with its inputs.
	action := func(base, head string) (int, string) {
		t.Helper()
		return actionStep(t, ci, "loopx-guard", "loopx-guard-range.sh", map[string]string{"base": base, "head": head})
	}
	if code, out := action(base, okHead); code != 0 {
		t.Fatalf("the action on a range outside every lease: exit %d\n%s", code, out)
	}
	if code, out := action(okHead, staleHead); code != 1 || !strings.Contains(out, "stale_epoch") || !strings.Contains(out, "write_scope_conflict: api/a.go is inside agent-b's write scope") {
		t.Fatalf("the action on the paused writer's range: exit %d\n%s", code, out)
	}
}
