package loopx_test

// One judgement, three places (contract section 9): on random histories —
// leases acquired, renewed, transferred, released and expired by moving the
// clock; commits by random agents with random Loopx-Agent and Loopx-Lease
// trailers (right, wrong and malformed epochs), paths in and out of the
// scopes in any letter case, symlinks into the scopes and out of the
// repository, branches merged back cleanly, with -s ours, taking their
// side, or edited — the server hook (audit.ServerHookPreReceive on a bare
// server holding the pushed objects, as in its quarantine), the pre-push
// check (GuardRange with the hook's update lines) and `loopx guard check
// --range` (the command) refuse the same commits with the same codes and
// messages, judged on the same state at the same time. And the verdict is
// the one a model of the rules gives, computed here from the generated trees
// and the lease history (not from the code under test).

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	lx "github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/audit"
	"github.com/loopx-dev/loopx/gitstore"
	"github.com/loopx-dev/loopx/internal/soak"
	"github.com/loopx-dev/loopx/lease"
)

// fenceEntry is one file of a generated tree: a blob (100644) or a
// symlink (120000) and its content.
type fenceEntry struct{ mode, data string }

type fenceTree map[string]fenceEntry

// fenceCommit is one generated commit.
type fenceCommit struct {
	mark    int
	parents []int // marks; 0 is the base commit
	base    int   // a merge's merge base (a mark)
	tree    fenceTree
	agent   string
	leases  []string // Loopx-Lease values
	hash    string
}

func (c *fenceCommit) message(n int) string {
	msg := fmt.Sprintf("change %d\n", n)
	var tr []string
	if c.agent != "" {
		tr = append(tr, "Loopx-Agent: "+c.agent)
	}
	for _, l := range c.leases {
		tr = append(tr, "Loopx-Lease: "+l)
	}
	if len(tr) > 0 {
		msg += "\n" + strings.Join(tr, "\n") + "\n"
	}
	return msg
}

var (
	fenceTodos  = map[string]string{"todo_src": "src/**", "todo_lib": "lib/**", "todo_api": "docs/api/**"}
	fenceAgents = []string{"agent-a", "agent-b", "agent-c"}
	fencePaths  = []string{"src/a.go", "Src/A.go", "src/deep/b.go", "SRC/deep/c.go", "lib/x.go", "LIB/y.go",
		"docs/api/ref.md", "Docs/API/ref.md", "docs/guide.md", "README.md", "tools/x.sh"}
	fenceLinks = map[string]string{"links/to-src": "../src/a.go", "links/to-docs": "../docs/guide.md",
		"links/out": "../../etc/passwd", "tools/to-lib": "../LIB/y.go", "links/abs": "/src/a.go"}
)

// fenceHolder is one execution of a todo's lease: its epoch and owner.
type fenceHolder struct {
	epoch int64
	owner string
}

func TestCodeFenceAgrees(t *testing.T) {
	needGit(t)
	t.Parallel()
	// Each history costs about a third of a second of git processes: the
	// default tier judges 25 of them, the soak tier rapid's 100 (or what
	// -rapid.checks asks for).
	rapidChecks(t, soak.Pick(25, 100))
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	todos := make([]string, 0, len(fenceTodos))
	for todo := range fenceTodos {
		todos = append(todos, todo)
	}
	sort.Strings(todos)
	// Every history starts from the same repository, made once and
	// copied: a base commit on main, and a store with goal g, three
	// agents and three todos, each with its write scope.
	template := t.TempDir()
	git(t, template, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(template, "README.md"), []byte("the project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, template, "add", "README.md")
	git(t, template, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", "base")
	baseHash := git(t, template, "rev-parse", "HEAD")
	func() {
		opts := lx.Options{Dir: template, Now: func() time.Time { return t0 }}
		if _, err := lx.Init(opts, lx.InitOptions{}); err != nil {
			t.Fatal(err)
		}
		s, err := lx.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		reqs := []any{lease.GoalCreateRequest{Goal: "g"}}
		for _, a := range fenceAgents {
			reqs = append(reqs, lease.RegisterRequest{Goal: "g", Agent: a})
		}
		for _, todo := range todos {
			reqs = append(reqs, lease.AddRequest{Goal: "g", Todo: todo, Text: todo, RequiredWriteScopes: []string{fenceTodos[todo]}})
		}
		for _, req := range reqs {
			if _, err := s.Apply(lease.CallOf(req)); err != nil {
				t.Fatal(err)
			}
		}
	}()
	seen := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		root, err := os.MkdirTemp(t.TempDir(), "fence")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(root)
		run := func(dir, stdin string, args ...string) string {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
				"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com")
			cmd.Stdin = strings.NewReader(stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				rt.Fatalf("%v: %v\n%s", args, err, errb.String())
			}
			return strings.TrimSpace(out.String())
		}
		client := filepath.Join(root, "client")
		run(root, "", "cp", "-a", template, client)

		// The leases: random operations, the clock moving on.
		clock := t0
		s, err := lx.Open(lx.Options{Dir: client, Now: func() time.Time { return clock }})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		apply := func(req any) error {
			_, err := s.Apply(lease.CallOf(req))
			return err
		}
		holders := map[string][]fenceHolder{}
		current := func(todo string) *lease.LeaseView {
			l, err := s.Lease("g", todo)
			if err != nil {
				rt.Fatal(err)
			}
			if l == nil || l.Lease == nil {
				return nil
			}
			return l
		}
		nOps := rapid.IntRange(0, 14).Draw(rt, "ops")
		for i := 0; i < nOps; i++ {
			todo := rapid.SampledFrom(todos).Draw(rt, "todo")
			l := current(todo)
			ttl := rapid.SampledFrom([]int64{60, 300, 900}).Draw(rt, "ttl")
			var err error
			switch op := rapid.SampledFrom([]string{"acquire", "acquire", "renew", "transfer", "release", "wait", "wait"}).Draw(rt, "op"); {
			case op == "acquire":
				owner := rapid.SampledFrom(fenceAgents).Draw(rt, "owner")
				err = apply(lease.AcquireRequest{Goal: "g", Todo: todo, Owner: owner, IdempotencyKey: fmt.Sprintf("k%d", i), TTLSeconds: ttl})
			case op == "wait":
				clock = clock.Add(time.Duration(rapid.IntRange(1, 600).Draw(rt, "seconds")) * time.Second)
			case l == nil:
			case op == "renew":
				v := l.Version
				err = apply(lease.RenewRequest{Goal: "g", Todo: todo, Owner: l.Owner, IdempotencyKey: l.IdempotencyKey, ExpectedVersion: &v, TTLSeconds: ttl})
			case op == "transfer":
				v := l.Version
				to := rapid.SampledFrom(fenceAgents).Draw(rt, "to")
				err = apply(lease.TransferRequest{Goal: "g", Todo: todo, Owner: l.Owner, IdempotencyKey: l.IdempotencyKey, ExpectedVersion: &v,
					NewOwner: to, NewIdempotencyKey: fmt.Sprintf("t%d", i), TTLSeconds: ttl})
			case op == "release":
				v := l.Version
				err = apply(lease.ReleaseRequest{Goal: "g", Todo: todo, Owner: l.Owner, IdempotencyKey: l.IdempotencyKey, ExpectedVersion: &v})
			}
			if err != nil {
				if _, ok := lease.AsError(err); !ok {
					rt.Fatal(err) // a refusal is fine; a failure of the store is not
				}
			}
			// A new epoch is a new holder.
			if n := current(todo); n != nil && (len(holders[todo]) == 0 || n.Epoch > holders[todo][len(holders[todo])-1].epoch) {
				holders[todo] = append(holders[todo], fenceHolder{n.Epoch, n.Owner})
			}
		}

		// The commits: a main line from the base, and branches forked from
		// it and merged back.
		commits := map[int]*fenceCommit{0: {tree: fenceTree{"README.md": {"100644", "the project\n"}}, hash: baseHash}}
		mainLine := []int{0}
		var order []*fenceCommit
		next, content := 1, 0
		edit := func(t fenceTree) fenceTree {
			out := fenceTree{}
			for p, e := range t {
				out[p] = e
			}
			for n := rapid.IntRange(1, 3).Draw(rt, "edits"); n > 0; n-- {
				switch rapid.IntRange(0, 5).Draw(rt, "edit") {
				case 0:
					links := make([]string, 0, len(fenceLinks))
					for l := range fenceLinks {
						links = append(links, l)
					}
					sort.Strings(links)
					link := rapid.SampledFrom(links).Draw(rt, "link")
					out[link] = fenceEntry{"120000", fenceLinks[link]}
				case 1:
					existing := make([]string, 0, len(out))
					for p := range out {
						existing = append(existing, p)
					}
					sort.Strings(existing)
					if len(existing) > 0 {
						delete(out, rapid.SampledFrom(existing).Draw(rt, "delete"))
					}
				default:
					content++
					out[rapid.SampledFrom(fencePaths).Draw(rt, "path")] = fenceEntry{"100644", fmt.Sprintf("content %d\n", content)}
				}
			}
			return out
		}
		trailers := func(c *fenceCommit) {
			c.agent = rapid.SampledFrom([]string{"agent-a", "agent-b", "agent-c", "agent-a", "agent-b", "", "Agent A"}).Draw(rt, "agent")
			for n := rapid.IntRange(0, 2).Draw(rt, "leases"); n > 0; n-- {
				todo := rapid.SampledFrom(append(slices.Clone(todos), "todo_none")).Draw(rt, "lease todo")
				max := int64(1)
				if hs := holders[todo]; len(hs) > 0 {
					max = hs[len(hs)-1].epoch + 1
				}
				if rapid.IntRange(0, 9).Draw(rt, "malformed") == 0 {
					c.leases = append(c.leases, "g/"+todo)
				} else {
					c.leases = append(c.leases, fmt.Sprintf("g/%s@%d", todo, rapid.Int64Range(1, max).Draw(rt, "epoch")))
				}
			}
		}
		add := func(c *fenceCommit) int {
			c.mark = next
			next++
			trailers(c)
			commits[c.mark] = c
			order = append(order, c)
			return c.mark
		}
		for n := rapid.IntRange(1, 6).Draw(rt, "steps"); n > 0; n-- {
			tip := mainLine[len(mainLine)-1]
			if rapid.Bool().Draw(rt, "branch") {
				fork := rapid.SampledFrom(mainLine).Draw(rt, "fork")
				b := fork
				for k := rapid.IntRange(1, 2).Draw(rt, "branch commits"); k > 0; k-- {
					b = add(&fenceCommit{parents: []int{b}, tree: edit(commits[b].tree)})
				}
				ours, theirs, base := commits[tip].tree, commits[b].tree, commits[fork].tree
				var tree fenceTree
				switch rapid.SampledFrom([]string{"clean", "clean", "ours", "theirs", "edit"}).Draw(rt, "merge") {
				case "ours":
					tree = ours
				case "theirs":
					tree = theirs
				default:
					tree = fenceTree{}
					for _, t := range []fenceTree{ours, theirs, base} {
						for p := range t {
							o, th, ba := ours[p], theirs[p], base[p]
							e := o // a conflict resolved by taking our side
							if o == ba {
								e = th
							}
							if e != (fenceEntry{}) {
								tree[p] = e
							}
						}
					}
				}
				if rapid.SampledFrom([]bool{false, false, true}).Draw(rt, "edit merge") {
					tree = edit(tree)
				}
				mainLine = append(mainLine, add(&fenceCommit{parents: []int{tip, b}, base: fork, tree: tree}))
				continue
			}
			mainLine = append(mainLine, add(&fenceCommit{parents: []int{tip}, tree: edit(commits[tip].tree)}))
		}

		// git fast-import writes them (each tree in full).
		var stream strings.Builder
		ref := func(mark int) string {
			if mark == 0 {
				return baseHash
			}
			return fmt.Sprintf(":%d", mark)
		}
		for i, c := range order {
			msg := c.message(i)
			fmt.Fprintf(&stream, "commit refs/heads/work\nmark :%d\ncommitter dev <dev@example.com> %d +0000\ndata %d\n%s\nfrom %s\n",
				c.mark, t0.Unix()+int64(i), len(msg), msg, ref(c.parents[0]))
			for _, p := range c.parents[1:] {
				fmt.Fprintf(&stream, "merge %s\n", ref(p))
			}
			stream.WriteString("deleteall\n")
			paths := make([]string, 0, len(c.tree))
			for p := range c.tree {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				e := c.tree[p]
				fmt.Fprintf(&stream, "M %s inline %s\ndata %d\n%s\n", e.mode, p, len(e.data), e.data)
			}
			stream.WriteString("\n")
		}
		marks := filepath.Join(root, "marks")
		run(client, stream.String(), "git", "fast-import", "--quiet", "--export-marks="+marks)
		data, _ := os.ReadFile(marks)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m int
			var h string
			fmt.Sscanf(line, ":%d %s", &m, &h)
			commits[m].hash = h
		}
		tip := commits[mainLine[len(mainLine)-1]].hash

		// The model's verdict: "revision code detail" per refusal.
		want := map[string]bool{}
		for _, c := range order {
			for _, r := range fenceModel(c, commits, holders, current, todos, clock) {
				want[r] = true
			}
		}

		// The server: a bare repository with main at the base and the
		// store's state; the pushed objects are there, under no ref.
		server := filepath.Join(root, "server.git")
		run(root, "", "git", "init", "-q", "--bare", server)
		run(client, "", "git", "push", "-q", server, "main", "refs/loopx/state", "refs/heads/work:refs/incoming/push")
		run(server, "", "git", "update-ref", "-d", "refs/incoming/push")
		srv, err := lx.Open(lx.Options{Dir: server, Now: func() time.Time { return clock }})
		if err != nil {
			rt.Fatal(err)
		}
		defer srv.Close()
		hookRes, hookErr := audit.New(srv).ServerHookPreReceive(audit.ServerHookRequest{Now: clock,
			Updates: []audit.ReceiveUpdate{{Old: gitstore.ParseHash(baseHash), New: gitstore.ParseHash(tip), Ref: "refs/heads/main"}}})
		if hookErr != nil {
			if _, ok := lease.AsError(hookErr); !ok || hookRes == nil {
				rt.Fatalf("the server hook failed: %v", hookErr)
			}
		}
		server1 := map[string]bool{}
		for _, r := range hookRes.Data.Refused {
			server1[r.Revision+" "+r.Code+" "+r.Message] = true
		}
		if hookRes.Data.CodeChecked != len(order) {
			rt.Fatalf("the server hook judged %d commits, the push brings %d", hookRes.Data.CodeChecked, len(order))
		}

		// The pre-push check, in process, on the client's store.
		pushRes, pushErr := audit.New(s).GuardRange(audit.GuardRangeRequest{PrePush: true, Updates: []audit.PushUpdate{{
			LocalRef: "refs/heads/work", LocalSHA: tip, RemoteRef: "refs/heads/main", RemoteSHA: baseHash}}})
		prePush, model := map[string]bool{}, map[string]bool{}
		var refused []lease.CodeRefusal
		switch e, ok := lease.AsError(pushErr); {
		case pushErr == nil:
			if len(pushRes.Data.Commits) != len(order) {
				rt.Fatalf("the pre-push check judged %d commits, the push brings %d", len(pushRes.Data.Commits), len(order))
			}
		case ok && e.Details["refused"] != nil:
			refused = e.Details["refused"].([]lease.CodeRefusal)
			if n := e.Details["commits_checked"]; n != len(order) {
				rt.Fatalf("the pre-push check judged %v commits, the push brings %d", n, len(order))
			}
		default:
			rt.Fatalf("the pre-push check failed: %v", pushErr)
		}
		for _, r := range refused {
			prePush[r.Revision+" "+string(r.Code)+" "+r.Message] = true
			model[fenceModelLine(r)] = true
		}

		// guard check --range, the command.
		cli := map[string]bool{}
		r := loopx(t, client, []string{"LOOPX_NOW=" + clock.Format(time.RFC3339)}, "guard", "check", "--range", baseHash+".."+tip)
		switch {
		case r.code == 0:
		case r.code == 1 && r.out["error"] != nil:
			list, _ := r.out["error"].(map[string]any)["refused"].([]any)
			for _, x := range list {
				m := x.(map[string]any)
				cli[fmt.Sprint(m["revision"], " ", m["code"], " ", m["message"])] = true
			}
		default:
			rt.Fatalf("guard check --range: exit %d %s", r.code, r.raw)
		}

		if !sameSet(server1, prePush) || !sameSet(server1, cli) {
			rt.Fatalf("the verdicts differ:\nserver hook: %v\npre-push:    %v\n--range:     %v", setKeys(server1), setKeys(prePush), setKeys(cli))
		}
		if !sameSet(model, want) {
			rt.Fatalf("the fence and the model differ:\nfence: %v\nmodel: %v\n%s", setKeys(model), setKeys(want), fenceStory(order, holders, current, todos, clock))
		}
		for k := range want {
			seen[strings.Fields(k)[1]]++
		}
		seen["commits"] += len(order)
	})
	t.Logf("over every history: %v", seen)
	for _, code := range []string{"write_scope_conflict", "stale_epoch", "invalid_request"} {
		if seen[code] == 0 {
			t.Errorf("no history had a %s refusal: the generator does not reach it", code)
		}
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fenceModelLine is a refusal as the model writes it.
func fenceModelLine(r lease.CodeRefusal) string {
	detail := r.Path
	if r.Code == lease.CodeStaleEpoch {
		detail = fmt.Sprintf("%s/%s@%d", r.Goal, r.Todo, r.Epoch)
	}
	return fmt.Sprintf("%s %s %s", r.Revision, r.Code, detail)
}

// fenceModel is the model's verdict on commit c at now (contract section
// 9, and the decisions of lease/codefence.go): "revision code detail"
// lines.
func fenceModel(c *fenceCommit, commits map[int]*fenceCommit, holders map[string][]fenceHolder,
	current func(string) *lease.LeaseView, todos []string, now time.Time) []string {
	line := func(code, detail string) string { return c.hash + " " + code + " " + detail }
	if c.agent != "" && strings.Contains(c.agent, " ") {
		return []string{line("invalid_agent_id", "")}
	}
	for _, l := range c.leases {
		if !strings.Contains(l, "@") {
			return []string{line("invalid_request", "")}
		}
	}
	var out []string
	var named []string
	for _, l := range c.leases {
		if slices.Contains(named, l) {
			continue
		}
		named = append(named, l)
		var todo string
		var epoch int64
		fmt.Sscanf(strings.ReplaceAll(strings.TrimPrefix(l, "g/"), "@", " "), "%s %d", &todo, &epoch)
		// The agent held that epoch, and nobody else has held the todo since.
		held, since := false, false
		for _, h := range holders[todo] {
			held = held || h.epoch == epoch && h.owner == c.agent
			since = since || h.epoch > epoch && h.owner != c.agent
		}
		if c.agent == "" || !held || since {
			out = append(out, line("stale_epoch", l))
		}
	}
	// The paths the commit wrote, and where its symlinks point.
	parent := commits[c.parents[0]].tree
	var written []string
	all := map[string]bool{}
	for _, p := range c.parents {
		for k := range commits[p].tree {
			all[k] = true
		}
	}
	for k := range c.tree {
		all[k] = true
	}
	for p := range all {
		if len(c.parents) == 1 {
			if c.tree[p] != parent[p] {
				written = append(written, p)
			}
			continue
		}
		base := commits[c.base].tree
		differsAll, dropped := true, false
		for _, q := range c.parents {
			side := commits[q].tree
			if c.tree[p] == side[p] {
				differsAll = false
			} else if side[p] != base[p] {
				dropped = true
			}
		}
		if differsAll || dropped {
			written = append(written, p)
		}
	}
	sort.Strings(written)
	var folded []string
	orig := map[string]string{}
	addPath := func(p, as string) {
		if _, ok := orig[strings.ToLower(p)]; !ok {
			folded = append(folded, strings.ToLower(p))
			orig[strings.ToLower(p)] = as
		}
	}
	for _, p := range written {
		addPath(p, p)
		if e := c.tree[p]; e.mode == "120000" && !strings.HasPrefix(e.data, "/") {
			if t := path.Clean(path.Join(path.Dir(p), e.data)); !strings.HasPrefix(t, "../") && t != ".." {
				addPath(t, p+" -> "+t)
			}
		}
	}
	effective := func(l *lease.LeaseView) bool {
		return l != nil && l.Status == lease.LeaseActive && now.Before(l.ExpiresAt)
	}
	covers := func(todo, p string) bool {
		return strings.HasPrefix(p, strings.TrimSuffix(fenceTodos[todo], "**"))
	}
	for _, p := range folded {
		own := false
		var others []string
		for _, todo := range todos {
			l := current(todo)
			if !effective(l) || !covers(todo, p) {
				continue
			}
			if c.agent != "" && l.Owner == c.agent {
				own = true
			} else {
				others = append(others, todo)
			}
		}
		if !own {
			for range others {
				out = append(out, line("write_scope_conflict", orig[p]))
			}
		}
	}
	return out
}

// fenceStory describes a failing history.
func fenceStory(order []*fenceCommit, holders map[string][]fenceHolder, current func(string) *lease.LeaseView, todos []string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "at %s:\n", now.Format(time.RFC3339))
	for _, todo := range todos {
		if l := current(todo); l != nil {
			fmt.Fprintf(&b, "  %s: %s epoch %d %s until %s; holders %v\n", todo, l.Owner, l.Epoch, l.Status, l.ExpiresAt.Format(time.RFC3339), holders[todo])
		}
	}
	for _, c := range order {
		fmt.Fprintf(&b, "  %s parents %v agent %q leases %v tree %v\n", c.hash[:12], c.parents, c.agent, c.leases, c.tree)
	}
	return b.String()
}

// rapidChecks sets rapid's number of checks for the tests of this package
// unless -rapid.checks was given on the command line. No other test of the
// root package uses rapid, so the flag is this test's alone.
func rapidChecks(t *testing.T, n int) {
	f := flag.Lookup("rapid.checks")
	if f == nil {
		return
	}
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v.Name == "rapid.checks" })
	if given {
		return
	}
	old := f.Value.String()
	if err := f.Value.Set(fmt.Sprint(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}
