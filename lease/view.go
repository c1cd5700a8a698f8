package lease

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Files is the read side of one revision of the state ref: paths → bytes.
// The root package adapts a gitstore snapshot to it; tests use MemFiles.
type Files interface {
	// Read returns the file at path; ok is false when it does not exist.
	Read(path string) (data []byte, ok bool, err error)
	// List returns the names of the direct children of dir, sorted.
	List(dir string) ([]string, error)
	// Walk calls fn for every file under dir, in path order.
	Walk(dir string, fn func(path string, data []byte) error) error
}

// Change is one file written (or deleted, when Data is nil) by a decision.
type Change struct {
	Path string
	Data []byte
}

// View is a records snapshot for one decision: typed, validated reads over
// Files, with the decision's own writes overlaid so later reads see them.
// Every read returns a record of its own, so callers may modify what they
// get (the view keeps the records it decoded, memo.go, and hands out
// copies).
type View struct {
	files    Files
	Revision string    // the revision the view was read from ("" when empty)
	HeadTime time.Time // decision time recorded in that revision
	writes   map[string][]byte
	cache    *RecordCache
	// dependents, when set, answers Dependents from a derived index.
	dependents DependentsIndex
	// tracked memoizes tracksGenerations (0: not known yet, 1: no, 2:
	// yes); writing the meta record forgets it.
	tracked int8
	// gen counts the decision's writes (memos made before are stale).
	gen int
	// activeIndex, when set, gives the goals' active leases (active.go).
	activeIndex ActiveLeaseIndex
	activeMemo  map[string]activeMemo
	// archive, when set, finds receipts that left lease records (retention.go).
	archive ReceiptArchive
	// listings, when set, gives the goals' listings (listing.go).
	listings ListingSource
	// decoded keeps the single records get decoded (memo.go).
	decoded map[string]decodedRecord
}

// DependentsIndex answers, from an index derived from the view's records
// (its writes included), which todos of goal name id in depends_on: their
// ids, sorted. ok is false when it cannot answer; the records are scanned.
type DependentsIndex func(goal, id string) (ids []string, ok bool)

// UseDependents makes Dependents consult ix before scanning every todo.
func (v *View) UseDependents(ix DependentsIndex) { v.dependents = ix }

// Dependents returns the ids of the goal's todos whose depends_on names id,
// sorted (never nil).
func Dependents(v *View, goal, id string) ([]string, error) {
	if v.dependents != nil {
		if ids, ok := v.dependents(goal, id); ok {
			return ids, nil
		}
	}
	all, err := v.Todos(goal)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, o := range all {
		if slices.Contains(o.DependsOn, id) {
			out = append(out, o.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}

// UseCache makes full scans of todos and leases reuse records decoded by
// earlier views (when the Files can enumerate content hashes).
func (v *View) UseCache(c *RecordCache) { v.cache = c }

// scanRecords calls decode for every record file under dir (the decision's
// writes included), reusing the cache by content hash when it can.
func scanRecords[T any](v *View, dir string, m func(*RecordCache) map[string]*T, decode func(p string, data []byte) (*T, error), fn func(p string, rec *T) error) error {
	hf, ok := v.files.(HashedFiles)
	if !ok || v.cache == nil {
		return v.walk(dir, func(p string, data []byte) error {
			rec, err := decode(p, data)
			if err != nil {
				return err
			}
			return fn(p, rec)
		})
	}
	v.cache.init()
	cache := m(v.cache)
	type item struct {
		p, hash string
		data    []byte
	}
	prefix := dir + "/"
	var written []string // the decision's writes under dir
	for p := range v.writes {
		if strings.HasPrefix(p, prefix) {
			written = append(written, p)
		}
	}
	load := func(it item) error {
		var rec *T
		if it.hash != "" {
			if r, ok := cacheGet(v.cache, cache, it.hash); ok {
				rec = r
			} else {
				data, err := hf.ReadHash(it.hash)
				if err != nil {
					return atPath(it.p, err)
				}
				if rec, err = decode(it.p, data); err != nil {
					return err
				}
				cachePut(v.cache, cache, it.hash, rec)
			}
		} else {
			var err error
			if rec, err = decode(it.p, it.data); err != nil {
				return err
			}
		}
		return fn(it.p, rec)
	}
	if len(written) == 0 {
		// Nothing of the decision's own: the walk's order is the order.
		return hf.WalkHashes(dir, func(p, hash string) error { return load(item{p: p, hash: hash}) })
	}
	var items []item
	err := hf.WalkHashes(dir, func(p, hash string) error {
		if len(written) > 0 {
			if w, ok := v.writes[p]; ok {
				if w != nil {
					items = append(items, item{p: p, data: w})
				}
				return nil
			}
		}
		items = append(items, item{p: p, hash: hash})
		return nil
	})
	if err != nil {
		return err
	}
	if len(written) > 0 {
		seen := make(map[string]bool, len(items))
		for _, it := range items {
			seen[it.p] = true
		}
		for _, p := range written {
			if data := v.writes[p]; !seen[p] && data != nil {
				items = append(items, item{p: p, data: data})
			}
		}
	}
	// A walk gives path order already: sort only what it does not.
	if !sort.SliceIsSorted(items, func(i, j int) bool { return items[i].p < items[j].p }) {
		sort.Slice(items, func(i, j int) bool { return items[i].p < items[j].p })
	}
	for _, it := range items {
		if err := load(it); err != nil {
			return err
		}
	}
	return nil
}

// walkRecords calls fn for every file under dir of the view's revision (not
// its writes), in path order, with its blob hash when the files can give it
// ("" otherwise) and a reader of its bytes.
func (v *View) walkRecords(dir string, fn func(p, hash string, read func() ([]byte, error)) error) error {
	if hf, ok := v.files.(HashedFiles); ok {
		return hf.WalkHashes(dir, func(p, hash string) error {
			return fn(p, hash, func() ([]byte, error) {
				data, err := hf.ReadHash(hash)
				return data, atPath(p, err)
			})
		})
	}
	return v.files.Walk(dir, func(p string, data []byte) error {
		return fn(p, "", func() ([]byte, error) { return data, nil })
	})
}

// NewView returns a view of files at revision.
func NewView(files Files, revision string, headTime time.Time) *View {
	return &View{files: files, Revision: revision, HeadTime: headTime, writes: map[string][]byte{}}
}

func (v *View) read(p string) ([]byte, bool, error) {
	if data, ok := v.writes[p]; ok {
		return data, data != nil, nil
	}
	return v.files.Read(p)
}

// get decodes the record at p into r; found is false when absent. A
// record decoded before from the same bytes is copied instead (memo.go).
func (v *View) get(p string, r record) (bool, error) {
	_, written := v.writes[p]
	m, seen := v.decoded[p]
	if seen && m.base && !written {
		m.copyTo(r) // the snapshot's record: it cannot have changed
		return true, nil
	}
	data, ok, err := v.read(p)
	if err != nil || !ok {
		return false, err
	}
	if seen && !m.base && written && bytes.Equal(m.data, data) {
		m.copyTo(r)
		return true, nil
	}
	if err := DecodeAt(p, data, r); err != nil {
		return true, err
	}
	v.remember(p, data, !written, r)
	return true, nil
}

// walk decodes every record under dir that newRec accepts, overlay included.
func (v *View) walk(dir string, fn func(p string, data []byte) error) error {
	seen := map[string]bool{}
	var paths []string
	files := map[string][]byte{}
	err := v.files.Walk(dir, func(p string, data []byte) error {
		seen[p] = true
		if w, ok := v.writes[p]; ok {
			data = w
		}
		if data != nil {
			paths = append(paths, p)
			files[p] = data
		}
		return nil
	})
	if err != nil {
		return err
	}
	for p, data := range v.writes {
		if !seen[p] && data != nil && strings.HasPrefix(p, dir+"/") {
			paths = append(paths, p)
			files[p] = data
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := fn(p, files[p]); err != nil {
			return err
		}
	}
	return nil
}

func (v *View) put(p string, r record) {
	if err := r.Validate(); err != nil {
		panic(fmt.Sprintf("lease: writing invalid record %s: %v", p, err)) // a bug in a decision
	}
	v.PutFile(p, Encode(r))
}

// PutFile writes raw bytes (e.g. the board); nil deletes.
func (v *View) PutFile(p string, data []byte) {
	if p == MetaPath {
		v.tracked = 0
	}
	v.gen++
	v.writes[p] = data
}

// ReadFile reads raw bytes, overlay included.
func (v *View) ReadFile(p string) ([]byte, bool, error) { return v.read(p) }

// Changes returns the decision's writes, sorted by path.
func (v *View) Changes() []Change {
	out := make([]Change, 0, len(v.writes))
	for p, d := range v.writes {
		out = append(out, Change{Path: p, Data: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Meta returns the store meta record, nil when the store is not initialized.
func (v *View) Meta() (*StoreMeta, error) {
	var m StoreMeta
	ok, err := v.get(MetaPath, &m)
	if !ok || err != nil {
		return nil, err
	}
	return &m, nil
}

// PutMeta writes the store meta record.
func (v *View) PutMeta(m *StoreMeta) { v.put(MetaPath, m) }

func checkID(p, got, want string) error {
	if got != want {
		return Corrupt(p, fmt.Errorf("record id %q does not match its path", got))
	}
	return nil
}

// Goal returns a goal, nil when absent.
func (v *View) Goal(id string) (*Goal, error) {
	var g Goal
	p := GoalPath(id)
	ok, err := v.get(p, &g)
	if !ok || err != nil {
		return nil, err
	}
	return &g, checkID(p, g.ID, id)
}

// Goals returns every goal, sorted by id.
func (v *View) Goals() ([]*Goal, error) {
	names, err := v.files.List(GoalsDir)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	for p, d := range v.writes {
		if d != nil && strings.HasPrefix(p, GoalsDir+"/") && strings.HasSuffix(p, "/goal.yaml") {
			set[strings.Split(p, "/")[1]] = true
		}
	}
	var out []*Goal
	for n := range set {
		g, err := v.Goal(n)
		if err != nil {
			return nil, err
		}
		if g == nil {
			return nil, Corrupt(GoalDir(n), fmt.Errorf("goal folder without goal.yaml"))
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// PutGoal writes a goal.
func (v *View) PutGoal(g *Goal) { v.put(GoalPath(g.ID), g) }

// Agent returns an agent registration, nil when absent.
func (v *View) Agent(goal, id string) (*Agent, error) {
	var a Agent
	p := AgentPath(goal, id)
	ok, err := v.get(p, &a)
	if !ok || err != nil {
		return nil, err
	}
	return &a, checkID(p, a.ID, id)
}

// Agents returns the goal's agent registrations (registered or not), by id.
func (v *View) Agents(goal string) ([]*Agent, error) {
	var out []*Agent
	err := v.walk(AgentsDir(goal), func(p string, data []byte) error {
		var a Agent
		if err := DecodeAt(p, data, &a); err != nil {
			return err
		}
		if err := checkID(p, a.ID+".yaml", p[strings.LastIndex(p, "/")+1:]); err != nil {
			return err
		}
		out = append(out, &a)
		return nil
	})
	return out, err
}

// PutAgent writes an agent registration.
func (v *View) PutAgent(goal string, a *Agent) { v.put(AgentPath(goal, a.ID), a) }

// Todo returns a todo, nil when absent.
func (v *View) Todo(goal, id string) (*Todo, error) {
	var t Todo
	p := TodoPath(goal, id)
	ok, err := v.get(p, &t)
	if !ok || err != nil {
		return nil, err
	}
	return &t, checkID(p, t.ID, id)
}

// Todos returns every todo of the goal, sorted by path (not by id).
func (v *View) Todos(goal string) ([]*Todo, error) {
	out, err := v.todosShared(goal)
	for i, t := range out {
		out[i] = t.Clone()
	}
	return out, err
}

// todosShared is Todos without copying the records out of the record
// cache: for reads that never modify what they get (list, ready).
func (v *View) todosShared(goal string) ([]*Todo, error) {
	var out []*Todo
	dir := TodosDir(goal)
	err := scanRecords(v, dir, func(c *RecordCache) map[string]*Todo { return c.todos },
		func(p string, data []byte) (*Todo, error) {
			var t Todo
			return &t, DecodeAt(p, data, &t)
		},
		func(p string, t *Todo) error {
			if !isRecordPath(p, dir, t.ID) {
				return Corrupt(p, fmt.Errorf("todo %q stored at the wrong path", t.ID))
			}
			out = append(out, t)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutTodo writes a todo.
func (v *View) PutTodo(goal string, t *Todo) { v.put(TodoPath(goal, t.ID), t) }

// Lease returns the lease of a todo, nil when it never had one. On a store
// of format 2 it also reads the todo, whose lease epoch must match (see
// generation.go): a lease record that was moved, deleted or replaced by
// hand fails closed with corrupt_record, never reads as "no lease".
func (v *View) Lease(goal, todo string) (*Lease, error) {
	l, err := v.leaseRecord(goal, todo)
	if err != nil {
		return nil, err
	}
	if tracked, err := v.tracksGenerations(); err != nil || !tracked {
		return l, err
	}
	t, err := v.Todo(goal, todo)
	if err != nil {
		return nil, err
	}
	if err := checkGeneration(goal, todo, t, l); err != nil {
		return nil, err
	}
	return l, nil
}

// leaseOfRecord is Lease for a todo record t just read from v (and not
// modified since), which it does not read again: scans that have every
// todo at hand (list, ready) look up each one's lease this way.
func (v *View) leaseOfRecord(goal string, t *Todo) (*Lease, error) {
	l, err := v.leaseRecord(goal, t.ID)
	if err != nil {
		return nil, err
	}
	if tracked, err := v.tracksGenerations(); err != nil || !tracked {
		return l, err
	}
	if err := checkGeneration(goal, t.ID, t, l); err != nil {
		return nil, err
	}
	return l, nil
}

func (v *View) leaseRecord(goal, todo string) (*Lease, error) {
	p := LeasePath(goal, todo)
	if l, ok, err := v.cachedLeaseAt(p); ok || err != nil {
		if err != nil || l == nil {
			return nil, err
		}
		return l.Clone(), checkID(p, l.TodoID, todo)
	}
	data, ok, err := v.read(p)
	if !ok || err != nil {
		return nil, err
	}
	var l Lease
	if err := DecodeAt(p, data, &l); err != nil {
		return nil, err
	}
	return &l, checkID(p, l.TodoID, todo)
}

// cachedLeaseAt reads the lease record at p through the record cache
// (shared: read only) when the files can name its blob: a lease record
// holds its recent holders and receipts, and decoding its YAML again on
// every read is most of a read of the goal's active leases. answered is
// false when the cache cannot answer (a decision's own write at p, no
// cache, files without hashes): then read it as usual.
func (v *View) cachedLeaseAt(p string) (l *Lease, answered bool, err error) {
	ph, ok := v.files.(PathHasher)
	hf, ok2 := v.files.(HashedFiles)
	// Only a cache already loaded (by a scan): loading the whole cache
	// to read one record costs more than decoding that record (a todo
	// show or a lease inspect at 10,000 todos).
	if !ok || !ok2 || v.cache == nil || v.cache.todos == nil {
		return nil, false, nil
	}
	if _, written := v.writes[p]; written {
		return nil, false, nil
	}
	hash, found, err := ph.HashOf(p)
	if err != nil {
		return nil, true, err
	}
	if !found {
		return nil, true, nil
	}
	if l, ok := v.cachedLease(hash); ok {
		return l, true, nil
	}
	data, err := hf.ReadHash(hash)
	if err != nil {
		return nil, true, atPath(p, err)
	}
	l = &Lease{}
	if err := DecodeAt(p, data, l); err != nil {
		return nil, true, err
	}
	v.cacheLease(hash, l)
	return l, true, nil
}

// leaseScan returns, for scans that look up the lease of every todo they
// hold (list, ready), a lookup answering as leaseOfRecord does: one walk of
// the leases folder by content hash instead of one read per todo, and a
// lease decoded (through the record cache) only when it is looked up. The
// leases it returns are shared with the cache: read only.
func (v *View) leaseScan(goal string) (func(t *Todo) (*Lease, error), error) {
	perRecord := func(t *Todo) (*Lease, error) { return v.leaseOfRecord(goal, t) }
	hf, ok := v.files.(HashedFiles)
	if !ok || v.cache == nil {
		return perRecord, nil
	}
	dir := LeasesDir(goal)
	for p := range v.writes {
		if strings.HasPrefix(p, dir+"/") {
			return perRecord, nil // a decision's view: read each one
		}
	}
	tracked, err := v.tracksGenerations()
	if err != nil {
		return nil, err
	}
	v.cache.init()
	hashes := map[string]string{} // todo id → the hash of its lease record
	err = hf.WalkHashes(dir, func(p, hash string) error {
		// A record elsewhere than its todo's path is not that todo's
		// lease (as a read of the path finds nothing there).
		if id := RecordID(p); isRecordPath(p, dir, id) {
			hashes[id] = hash
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(t *Todo) (*Lease, error) {
		var l *Lease
		if hash, ok := hashes[t.ID]; ok {
			if rec, ok := cacheGet(v.cache, v.cache.leases, hash); ok {
				l = rec
			} else {
				p := LeasePath(goal, t.ID)
				data, err := hf.ReadHash(hash)
				if err != nil {
					return nil, atPath(p, err)
				}
				l = &Lease{}
				if err := DecodeAt(p, data, l); err != nil {
					return nil, err
				}
				cachePut(v.cache, v.cache.leases, hash, l)
			}
			if l.TodoID != t.ID {
				return nil, checkID(LeasePath(goal, t.ID), l.TodoID, t.ID)
			}
		}
		if tracked {
			if err := checkGeneration(goal, t.ID, t, l); err != nil {
				return nil, err
			}
		}
		return l, nil
	}, nil
}

// isRecordPath reports whether p is the path of record id in dir (dir +
// "/" + bucket(id) + "/" + id + ".yaml", as TodoPath and LeasePath make
// it), without building that path: scans check it for every record.
func isRecordPath(p, dir, id string) bool {
	n := len(dir) + len("/00/") + len(id) + len(".yaml")
	if len(p) != n || p[:len(dir)] != dir || p[len(dir)] != '/' || p[len(dir)+3] != '/' ||
		p[len(dir)+4:n-len(".yaml")] != id || p[n-len(".yaml"):] != ".yaml" {
		return false
	}
	sum := sha256.Sum256([]byte(id))
	const digits = "0123456789abcdef"
	return p[len(dir)+1] == digits[sum[0]>>4] && p[len(dir)+2] == digits[sum[0]&0xF]
}

// tracksGenerations reports whether the store's todos carry their lease's
// epoch (format 2 on; the upgrade backfills it).
func (v *View) tracksGenerations() (bool, error) {
	if v.tracked != 0 {
		return v.tracked == 2, nil
	}
	m, err := v.Meta()
	if err != nil {
		return false, err
	}
	v.tracked = 1
	if m != nil && m.FormatVersion >= 2 {
		v.tracked = 2
	}
	return v.tracked == 2, nil
}

// Leases returns every lease record of the goal (all of them, never a page).
func (v *View) Leases(goal string) ([]*Lease, error) {
	var out []*Lease
	err := scanRecords(v, LeasesDir(goal), func(c *RecordCache) map[string]*Lease { return c.leases },
		func(p string, data []byte) (*Lease, error) {
			var l Lease
			return &l, DecodeAt(p, data, &l)
		},
		func(p string, rec *Lease) error {
			l := rec.Clone()
			if p != LeasePath(goal, l.TodoID) {
				return Corrupt(p, fmt.Errorf("lease of %q stored at the wrong path", l.TodoID))
			}
			out = append(out, l)
			return nil
		})
	return out, err
}

// PutLease writes a lease, and its epoch into the todo (the high-water
// mark of generation.go) when that changes.
func (v *View) PutLease(goal string, l *Lease) {
	v.put(LeasePath(goal, l.TodoID), l)
	var t Todo
	if ok, err := v.get(TodoPath(goal, l.TodoID), &t); ok && err == nil && t.LeaseEpoch != l.Epoch {
		t.LeaseEpoch = l.Epoch
		v.put(TodoPath(goal, t.ID), &t)
	}
}

// Receipt returns a receipt by id, nil when absent.
func (v *View) Receipt(goal, id string) (*Receipt, error) {
	var r Receipt
	p := ReceiptPath(goal, id)
	ok, err := v.get(p, &r)
	if !ok || err != nil {
		return nil, err
	}
	return &r, checkID(p, r.ID, id)
}

// PutReceipt writes a receipt.
func (v *View) PutReceipt(goal string, r *Receipt) { v.put(ReceiptPath(goal, r.ID), r) }

// MemFiles is an in-memory Files, for tests and for programs that embed the
// domain without Git.
type MemFiles map[string][]byte

// Read implements Files.
func (m MemFiles) Read(p string) ([]byte, bool, error) {
	d, ok := m[p]
	return d, ok, nil
}

// List implements Files.
func (m MemFiles) List(dir string) ([]string, error) {
	set := map[string]bool{}
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	for p := range m {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			set[strings.SplitN(rest, "/", 2)[0]] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Walk implements Files.
func (m MemFiles) Walk(dir string, fn func(string, []byte) error) error {
	var paths []string
	for p := range m {
		if strings.HasPrefix(p, dir+"/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := fn(p, m[p]); err != nil {
			return err
		}
	}
	return nil
}

// Apply writes the view's changes into m (a test helper for chaining decisions).
func (m MemFiles) Apply(changes []Change) {
	for _, c := range changes {
		if c.Data == nil {
			delete(m, c.Path)
		} else {
			m[c.Path] = c.Data
		}
	}
}
