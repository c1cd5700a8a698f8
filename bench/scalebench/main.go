// Command scalebench is the driver of bench/scale.sh: it builds the stores
// of issue 15 ("Flat at scale") for two loopx builds (the base and the new
// one, each store made by that build's own code through bench/scaleseed),
// then times every command of both builds side by side in one run,
// interleaved (the order alternates each round), next to the two floors
// measured in the same rounds: `loopx version` (a process that starts and
// exits) and bench/gogitfloor (a process that makes one commit with
// go-git on a copy of the same store). It prints medians of wall time, CPU
// time (user+sys) and peak RSS, the ratios the targets are stated
// in, and the growth figures (disk per mutation after gc, receipts kept,
// the largest record).
//
//	scalebench -old BIN -new BIN -old-seed BIN -new-seed BIN -floor BIN -work DIR \
//	    -base-stores DIR -new-stores DIR [-rounds 9] [-history 20000] [-only groups]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	oldBin   = flag.String("old", "", "base loopx binary")
	newBin   = flag.String("new", "", "new loopx binary")
	oldSeed  = flag.String("old-seed", "", "scaleseed built against the base")
	newSeed  = flag.String("new-seed", "", "scaleseed built against the new tree")
	floorBin = flag.String("floor", "", "gogitfloor binary")
	work     = flag.String("work", "", "scratch folder (copies of the stores for this run)")
	baseDir  = flag.String("base-stores", "", "where the base build's stores are kept")
	newDir   = flag.String("new-stores", "", "where the new build's stores are kept")
	rounds   = flag.Int("rounds", 9, "interleaved rounds per figure")
	history  = flag.Int("history", 20000, "mutations of the long history")
	strict   = flag.Bool("strict", false, "exit 1 if the new build misses a target")
	only     = flag.String("only", "", "comma-separated groups to run (default all): leases,todos,history,growth,memory")
)

// start is the seeder's clock: stores made from one commit are dated there.
const start = "2026-01-01T00:00:00Z"

type variant struct {
	name, bin, seed, stores string
}

// sample is one process run.
type sample struct {
	wall, cpu time.Duration
	rssKB     int64
}

func run(dir string, env []string, bin string, args ...string) (sample, []byte) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LOOPX_FORMAT=json"), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		log.Fatalf("%s %v: %v", bin, args, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if !cmd.ProcessState.Success() {
		log.Fatalf("%s %v in %s: exit %d\n%s", bin, args, dir, cmd.ProcessState.ExitCode(), out.Bytes())
	}
	return sample{wall, cpu, ru.Maxrss}, out.Bytes()
}

func median(xs []time.Duration) time.Duration {
	s := append([]time.Duration{}, xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// fig is the median figures of one (command, build).
type fig struct {
	wall, cpu time.Duration
	rssKB     int64 // the largest seen
}

func summarize(ss []sample) fig {
	var w, c []time.Duration
	var f fig
	for _, s := range ss {
		w, c = append(w, s.wall), append(c, s.cpu)
		f.rssKB = max(f.rssKB, s.rssKB)
	}
	f.wall, f.cpu = median(w), median(c)
	return f
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
func mib(kb int64) string       { return fmt.Sprintf("%.0f", float64(kb)/1024) }

// store builds (once) a store with the seeder of v (args are scaleseed's)
// and returns a fresh copy of it for this run.
func store(v variant, name string, args ...string) string {
	dir := filepath.Join(v.stores, name)
	cp := filepath.Join(*work, "run-"+v.name, name)
	os.MkdirAll(filepath.Dir(cp), 0o755)
	if _, err := os.Stat(filepath.Join(dir, ".done")); err == nil {
		copyStore(dir, cp)
		return cp
	}
	os.RemoveAll(dir)
	t0 := time.Now()
	cmd := exec.Command(v.seed, append([]string{"-dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@loopx.invalid", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@loopx.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("seed %s %s: %v\n%s", v.name, name, err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, ".done"), nil, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "built %s/%s in %s\n", v.name, name, time.Since(t0).Round(time.Second))
	copyStore(dir, cp)
	return cp
}

// headTime is the committer time of the store's head, as LOOPX_NOW.
func headTime(dir string) string {
	out, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%cI", "refs/loopx/state").Output()
	if err != nil {
		log.Fatal(err)
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	if err != nil {
		log.Fatal(err)
	}
	return t.UTC().Format(time.RFC3339)
}

// copyStore copies a store (for the go-git floor, which writes a file no
// loopx would).
func copyStore(from, to string) {
	os.RemoveAll(to)
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		log.Fatalf("cp: %v %s", err, out)
	}
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

var variants []variant

// row is one line of the table: a figure for both builds.
type row struct {
	what       string
	old, new   fig
	note       string
	target     string
	ratioOld   string
	ratioNew   string
	hasFigures bool
	// miss: the new build misses the target.
	miss bool
}

var rows []row

// missed lists the figures whose target the new build misses.
var missed []string

func addRow(r row) {
	r.hasFigures = true
	rows = append(rows, r)
	printRow(r)
	if r.target != "" && r.miss {
		missed = append(missed, r.what)
	}
}

// over reports whether a's wall time is more than k times b's.
func over(a, b fig, k float64) bool { return float64(a.wall) > k*float64(b.wall) }

func header() {
	fmt.Printf("%-58s %9s %9s %9s %9s %6s %6s  %-18s %-18s %s\n", "figure (medians; ms wall, ms cpu, MiB peak)", "base_ms", "new_ms", "base_cpu", "new_cpu", "b_MiB", "n_MiB", "base_ratio", "new_ratio", "target")
}

func printRow(r row) {
	if !r.hasFigures {
		fmt.Printf("%-58s %s\n", r.what, r.note)
		return
	}
	fmt.Printf("%-58s %9s %9s %9s %9s %6s %6s  %-18s %-18s %s\n", r.what, ms(r.old.wall), ms(r.new.wall), ms(r.old.cpu), ms(r.new.cpu),
		mib(r.old.rssKB), mib(r.new.rssKB), r.ratioOld, r.ratioNew, r.target)
}

func note(what, text string) {
	r := row{what: what, note: text}
	rows = append(rows, r)
	printRow(r)
}

// cmdSpec is one command to time: args for round i.
type cmdSpec func(i int) []string

// measure runs, for rounds rounds, each build's command in its own store
// (and the extra commands given, once per round), alternating the order.
// after, when set, runs untimed after each build's command (cleanup).
func measure(dirs map[string]string, env map[string][]string, spec cmdSpec, after cmdSpec) map[string]fig {
	samples := map[string][]sample{}
	for i := 0; i < *rounds; i++ {
		order := []variant{variants[0], variants[1]}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, v := range order {
			s, _ := run(dirs[v.name], env[v.name], v.bin, spec(i)...)
			samples[v.name] = append(samples[v.name], s)
			if after != nil {
				run(dirs[v.name], env[v.name], v.bin, after(i)...)
			}
		}
	}
	out := map[string]fig{}
	for k, ss := range samples {
		out[k] = summarize(ss)
	}
	return out
}

// floors times `loopx version` and the go-git one-commit process on a copy
// of each build's store at dir, interleaved the same way.
func floors(dirs map[string]string, path string) (version, gogit fig) {
	var vs, gs []sample
	copies := map[string]string{}
	for _, v := range variants {
		copies[v.name] = dirs[v.name] + ".floor"
		copyStore(dirs[v.name], copies[v.name])
	}
	for i := 0; i < *rounds; i++ {
		for _, v := range variants {
			s, _ := run(copies[v.name], nil, v.bin, "version")
			vs = append(vs, s)
			s, _ = run(copies[v.name], nil, *floorBin, "-repo", ".", "-path", path)
			gs = append(gs, s)
		}
	}
	for _, c := range copies {
		os.RemoveAll(c)
	}
	return summarize(vs), summarize(gs)
}

func ratio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func ratios(a, b fig) string {
	return ratio(a.wall, b.wall) + " (" + ratio(a.cpu, b.cpu) + ")"
}

func both(f func(v variant) string) (map[string]string, map[string][]string) {
	dirs, env := map[string]string{}, map[string][]string{}
	for _, v := range variants {
		dirs[v.name] = f(v)
		env[v.name] = []string{"LOOPX_NOW=" + headTime(dirs[v.name])}
	}
	return dirs, env
}

var memPeak = map[string]int64{}

func notePeak(figs map[string]fig) {
	for k, f := range figs {
		memPeak[k] = max(memPeak[k], f.rssKB)
	}
}

// leaseCycle times acquire and transfer on fresh todos of a store with
// nLeases effective leases (the first todo after them onwards), releasing
// after each round.
func leaseCycle(dirs map[string]string, env map[string][]string, nLeases int) (acq, xfer map[string]fig) {
	todo := func(i int) string { return fmt.Sprintf("todo_seed_%06d", nLeases+i) }
	acqSpec := func(i int) []string {
		return []string{"task-lease", "acquire", "--goal-id", "g", "--todo-id", todo(i), "--owner", "bench-agent",
			"--idempotency-key", fmt.Sprintf("bench-%d", i), "--ttl-seconds", "600", "--write-scope", fmt.Sprintf("work/%d/**", i)}
	}
	xferSpec := func(i int) []string {
		return []string{"task-lease", "transfer", "--goal-id", "g", "--todo-id", todo(i), "--owner", "bench-agent",
			"--idempotency-key", fmt.Sprintf("bench-%d", i), "--expected-version", "1", "--new-owner", "seed-agent",
			"--new-idempotency-key", fmt.Sprintf("bench-%d-t", i), "--ttl-seconds", "600"}
	}
	release := func(i int) []string {
		return []string{"task-lease", "release", "--goal-id", "g", "--todo-id", todo(i), "--owner", "seed-agent",
			"--idempotency-key", fmt.Sprintf("bench-%d-t", i), "--expected-version", "2"}
	}
	// acquire, then transfer (timed), then release (untimed), per build
	// and round; the builds alternate.
	acqS, xferS := map[string][]sample{}, map[string][]sample{}
	for i := 0; i < *rounds; i++ {
		order := []variant{variants[0], variants[1]}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, v := range order {
			s, _ := run(dirs[v.name], env[v.name], v.bin, acqSpec(i)...)
			acqS[v.name] = append(acqS[v.name], s)
			s, _ = run(dirs[v.name], env[v.name], v.bin, xferSpec(i)...)
			xferS[v.name] = append(xferS[v.name], s)
			run(dirs[v.name], env[v.name], v.bin, release(i)...)
		}
	}
	acq, xfer = map[string]fig{}, map[string]fig{}
	for k := range acqS {
		acq[k], xfer[k] = summarize(acqS[k]), summarize(xferS[k])
	}
	notePeak(acq)
	notePeak(xfer)
	return acq, xfer
}

func want(group string) bool {
	return *only == "" || strings.Contains(","+*only+",", ","+group+",")
}

func main() {
	flag.Parse()
	if *oldBin == "" || *newBin == "" || *oldSeed == "" || *newSeed == "" || *floorBin == "" || *work == "" || *baseDir == "" || *newDir == "" {
		log.Fatal("-old, -new, -old-seed, -new-seed, -floor, -work, -base-stores and -new-stores are required")
	}
	variants = []variant{{"base", *oldBin, *oldSeed, *baseDir}, {"new", *newBin, *newSeed, *newDir}}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("# %s, %d rounds per figure, interleaved; load average at start: %s", time.Now().UTC().Format(time.RFC3339), *rounds, load)
	header()

	// 1. acquire / transfer against 10 / 100 / 1,000 effective leases
	// (1,200 todos).
	if want("leases") {
		var base map[string]fig
		var baseX map[string]fig
		for _, n := range []int{10, 100, 1000} {
			dirs, env := both(func(v variant) string {
				return store(v, fmt.Sprintf("todos1200-leases%d", n), "-todos", strconv.Itoa(1200+*rounds), "-leases", strconv.Itoa(n))
			})
			acq, xfer := leaseCycle(dirs, env, n)
			if n == 10 {
				base, baseX = acq, xfer
			}
			addRow(row{what: fmt.Sprintf("task-lease acquire, %d active leases (1,200 todos)", n), old: acq["base"], new: acq["new"],
				ratioOld: ratios(acq["base"], base["base"]), ratioNew: ratios(acq["new"], base["new"]), target: "≤ 1.3× the 10-lease figure", miss: over(acq["new"], base["new"], 1.3)})
			addRow(row{what: fmt.Sprintf("task-lease transfer, %d active leases (1,200 todos)", n), old: xfer["base"], new: xfer["new"],
				ratioOld: ratios(xfer["base"], baseX["base"]), ratioNew: ratios(xfer["new"], baseX["new"]), target: "≤ 1.3× the 10-lease figure", miss: over(xfer["new"], baseX["new"], 1.3)})
			if n == 1000 {
				// Issue 23's first row: the same acquire against one
				// go-git commit on a copy of this store.
				version, gogit := floors(dirs, "goals/g/leases/00/todo_floor.yaml")
				note("floors at 1000 active leases", fmt.Sprintf("loopx version %s ms (cpu %s), go-git one-commit process %s ms (cpu %s)",
					ms(version.wall), ms(version.cpu), ms(gogit.wall), ms(gogit.cpu)))
				addRow(row{what: "task-lease acquire, 1000 active leases vs the floor", old: acq["base"], new: acq["new"],
					ratioOld: ratios(acq["base"], gogit), ratioNew: ratios(acq["new"], gogit), target: "≤ 1.3× go-git floor", miss: over(acq["new"], gogit, 1.3)})
			}
		}
	}

	// 2. todo counts: acquire / transfer against the go-git floor, list and
	// ready, show, verify.
	if want("todos") {
		for _, n := range []int{100, 1000, 10000} {
			dirs, env := both(func(v variant) string {
				return store(v, fmt.Sprintf("todos%d", n), "-todos", strconv.Itoa(n+*rounds), "-leases", "10")
			})
			version, gogit := floors(dirs, "goals/g/leases/00/todo_floor.yaml")
			note(fmt.Sprintf("floors at %d todos", n), fmt.Sprintf("loopx version %s ms (cpu %s), go-git one-commit process %s ms (cpu %s)",
				ms(version.wall), ms(version.cpu), ms(gogit.wall), ms(gogit.cpu)))
			acq, xfer := leaseCycle(dirs, env, 10)
			addRow(row{what: fmt.Sprintf("task-lease acquire, %d todos", n), old: acq["base"], new: acq["new"],
				ratioOld: ratios(acq["base"], gogit), ratioNew: ratios(acq["new"], gogit), target: "≤ 1.3× go-git floor", miss: over(acq["new"], gogit, 1.3)})
			addRow(row{what: fmt.Sprintf("task-lease transfer, %d todos", n), old: xfer["base"], new: xfer["new"],
				ratioOld: ratios(xfer["base"], gogit), ratioNew: ratios(xfer["new"], gogit), target: "≤ 1.3× go-git floor", miss: over(xfer["new"], gogit, 1.3)})
			for _, c := range []struct {
				what string
				args []string
			}{
				{"todo list", []string{"todo", "list", "--goal-id", "g"}},
				{"todo ready", []string{"todo", "ready", "--goal-id", "g", "--agent-id", "bench-agent"}},
				{"todo show", []string{"todo", "show", "--goal-id", "g", "--todo-id", "todo_seed_000003"}},
				{"task-lease inspect", []string{"task-lease", "inspect", "--goal-id", "g", "--todo-id", "todo_seed_000003"}},
				{"status", []string{"status", "--goal-id", "g"}},
				{"verify", []string{"verify"}},
			} {
				f := measure(dirs, env, func(int) []string { return c.args }, nil)
				notePeak(f)
				target, miss := "", false
				if n == 10000 && (c.what == "todo list" || c.what == "todo ready") {
					target, miss = "≤ 30 ms, ≤ 48 MiB", f["new"].wall > 30*time.Millisecond || f["new"].rssKB > 48<<10
				}
				if n == 10000 && c.what == "verify" {
					target, miss = "≤ 64 MiB", f["new"].rssKB > 64<<10
				}
				addRow(row{what: fmt.Sprintf("%s, %d todos", c.what, n), old: f["base"], new: f["new"],
					ratioOld: ratios(f["base"], version), ratioNew: ratios(f["new"], version) + " of version", target: target, miss: miss})
			}
		}
	}

	// 3. history: 600 and 20,000 mutations on 100 todos.
	if want("history") || want("growth") {
		figs := map[int]map[string]map[string]fig{}
		sizes := map[string]map[int]string{}
		for _, m := range []int{600, *history} {
			dirs, env := both(func(v variant) string {
				return store(v, fmt.Sprintf("history%d", m), "-todos", "100", "-history", strconv.Itoa(m))
			})
			for _, v := range variants {
				if sizes[v.name] == nil {
					sizes[v.name] = map[int]string{}
				}
				sizes[v.name][m] = dirs[v.name]
			}
			if !want("history") {
				continue
			}
			figs[m] = map[string]map[string]fig{}
			for _, c := range []struct {
				what string
				args []string
			}{
				{"todo list", []string{"todo", "list", "--goal-id", "g"}},
				{"todo ready", []string{"todo", "ready", "--goal-id", "g", "--agent-id", "bench-agent"}},
				{"log --todo-id T --limit 20", []string{"log", "--todo-id", "todo_hist_0042", "--limit", "20"}},
				{"log --limit 20", []string{"log", "--limit", "20"}},
				{"task-lease inspect", []string{"task-lease", "inspect", "--goal-id", "g", "--todo-id", "todo_hist_0042"}},
			} {
				f := measure(dirs, env, func(int) []string { return c.args }, nil)
				notePeak(f)
				figs[m][c.what] = f
				r := row{what: fmt.Sprintf("%s, %d mutations (100 todos)", c.what, m), old: f["base"], new: f["new"]}
				if m != 600 {
					r.ratioOld = ratios(f["base"], figs[600][c.what]["base"])
					r.ratioNew = ratios(f["new"], figs[600][c.what]["new"]) + " of 600"
					if c.what != "log --limit 20" && c.what != "task-lease inspect" {
						r.target = "≤ 1.2× the 600-mutation figure"
						r.miss = over(f["new"], figs[600][c.what]["new"], 1.2)
					}
				}
				addRow(r)
			}
		}
		if want("growth") {
			for _, v := range variants {
				base := store(v, "todos100-empty", "-todos", "100")
				long := sizes[v.name][*history]
				per := float64(dirSize(filepath.Join(long, ".git", "objects"))-dirSize(filepath.Join(base, ".git", "objects"))) / float64(*history)
				receipts, largest, largestPath := treeStats(long)
				if v.name == "new" && per > 1024 {
					missed = append(missed, fmt.Sprintf("growth, %d mutations after gc", *history))
				}
				note(fmt.Sprintf("growth, %s, %d mutations after gc", v.name, *history),
					fmt.Sprintf("%.0f B per mutation (target ≤ 1024); %d receipt files on the head; largest record %d B (%s)", per, receipts, largest, largestPath))
			}
		}
	}

	if len(memPeak) > 0 {
		note("peak RSS of every command timed above", fmt.Sprintf("base %s MiB, new %s MiB (target ≤ 64 MiB)", mib(memPeak["base"]), mib(memPeak["new"])))
		if memPeak["new"] > 64<<10 {
			missed = append(missed, "peak RSS")
		}
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("# load average at the end: %s", load)
	fmt.Printf("# targets the new build misses: %d\n", len(missed))
	for _, m := range missed {
		fmt.Printf("#   %s\n", m)
	}
	if *strict && len(missed) > 0 {
		os.Exit(1)
	}
}

// treeStats counts the receipt files on the head of a store and finds its
// largest record (YAML file; the board is not a record).
func treeStats(dir string) (receipts int, largest int64, path string) {
	out, err := exec.Command("git", "-C", dir, "ls-tree", "-r", "-l", "refs/loopx/state").Output()
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		meta, p, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		if strings.Contains(p, "/receipts/") {
			receipts++
		}
		if !strings.HasSuffix(p, ".yaml") {
			continue
		}
		f := strings.Fields(meta)
		n, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
		if n > largest {
			largest, path = n, p
		}
	}
	return receipts, largest, path
}
