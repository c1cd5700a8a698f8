package lease

// task-lease acquire (fresh execution and takeover), and the write-scope
// conflict scan it shares with transfer and the claims code.
//
// Decisions (where contract section 5 is silent):
//   - Check order: request fields (goal, todo, owner, key, expected version,
//     TTL, scopes) → goal exists → receipt replay → goal active → todo exists,
//     not archived (todo_archived), open (todo_not_open) → owner registered,
//     not excluded, bound agent, claim → effective lease of another execution
//     (todo_lease_conflict) → key reuse → expected version → scope conflicts →
//     generation exhaustion. Nothing is written before the last check passes.
//   - A new execution never reuses a key the todo has seen: any earlier
//     holder's key, and also the current execution's key when no acquire
//     receipt of this identity exists (e.g. a key received by transfer, or an
//     expired execution's key). Both are idempotency_key_reuse.
//   - The same owner with a different key while its own execution is
//     effective is "another execution": todo_lease_conflict.
//   - A takeover ends the previous execution in the holder history with
//     reason "expired" when it was past its expiry, "taken_over" when it was
//     unexpired but no longer effective; a released execution was already
//     ended "released".
//   - The stored scope set is sorted and de-duplicated; an empty set is
//     allowed and never conflicts.
//   - ScopesOverlap decides whether two doublestar globs can name a common
//     path exactly (segment by segment, "**" as zero or more segments, '*',
//     '?', classes, braces), case-sensitively (Git paths are), and then
//     errs towards overlap: a scope also covers everything below what it
//     matches, since any matched path may be a folder (a literal "src"
//     overlaps "src/a.go"; "a/*/c" overlaps "a/c"; "**/*.go" overlaps every
//     scope), and a pattern it cannot analyse (unbalanced, escapes, more
//     than 64 brace alternatives) overlaps everything. The analysis of one
//     question (two scopes, or two leases' scope sets) has a fixed budget
//     of steps (overlapSteps); past it the answer is "overlap" too, so a
//     pair of scopes built to be slow costs milliseconds, not minutes.

import (
	"slices"
	"strings"
	"time"
)

// AcquireRequest starts a new execution on a todo (or takes an ineffective
// lease over).
type AcquireRequest struct {
	Goal           string `json:"goal_id,omitempty" desc:"goal id (default: the store's default goal)"`
	Todo           string `json:"todo_id,omitempty" desc:"todo id" required:"true"`
	Owner          string `json:"owner,omitempty" desc:"lease owner, the acting agent (default: the goal's only agent)"`
	IdempotencyKey string `json:"idempotency_key,omitempty" desc:"execution key of the owner's new execution" required:"true"`
	// ExpectedVersion is optional; 0 when the todo has no lease.
	ExpectedVersion *int64   `json:"expected_version,omitempty" desc:"the lease version read (0 when there is none); optional"`
	TTLSeconds      int64    `json:"ttl_seconds,omitempty" desc:"lease time to live, 1..86400 seconds" required:"true"`
	WriteScopes     []string `json:"write_scopes,omitempty" desc:"path globs the execution writes (default: the todo's required write scopes)"`
}

// Acquire decides a task-lease acquire.
func Acquire(v *View, req AcquireRequest, now time.Time) (*Outcome, error) {
	if err := CheckGoalID(req.Goal); err != nil {
		return nil, err
	}
	if err := CheckTodoID(req.Todo); err != nil {
		return nil, err
	}
	if err := CheckAgentID("owner", req.Owner); err != nil {
		return nil, err
	}
	if err := CheckIdempotencyKey("idempotency key", req.IdempotencyKey); err != nil {
		return nil, err
	}
	if req.ExpectedVersion != nil {
		if err := checkExpectedVersion(*req.ExpectedVersion); err != nil {
			return nil, err
		}
	}
	if err := CheckTTL(req.TTLSeconds); err != nil {
		return nil, err
	}
	if err := CheckScopes(req.WriteScopes); err != nil {
		return nil, err
	}
	scopes := normalizeScopeSet(req.WriteScopes)
	g, err := RequireGoal(v, req.Goal)
	if err != nil {
		return nil, err
	}

	id := AcquireReceiptID(req.Goal, req.Todo, req.Owner, req.IdempotencyKey)
	digest := acquireDigest(id, req.ExpectedVersion, req.TTLSeconds, scopes)
	rec, retired, err := findReceipt(v, req.Goal, req.Todo, id, digest)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		return acquireReplay(v, rec, now)
	}
	if retired {
		// The receipt left the lease record two executions ago: the
		// execution is not current (retention.go).
		cur, err := v.Lease(req.Goal, req.Todo)
		if err != nil {
			return nil, err
		}
		return nil, notCurrent(v.hashForm()(id), req.Owner, req.IdempotencyKey, req.Todo, cur)
	}

	if g.Status != GoalActive {
		return nil, Errorf(CodeGoalArchived, "goal %s is archived", g.ID)
	}
	t, err := RequireTodo(v, req.Goal, req.Todo)
	if err != nil {
		return nil, err
	}
	if err := requireWorkableTodo(t); err != nil {
		return nil, err
	}
	owner, err := RequireAgent(v, req.Goal, "owner", req.Owner)
	if err != nil {
		return nil, err
	}
	if err := executionEligibility(t, req.Owner, true, now); err != nil {
		return nil, err
	}
	cur, err := v.Lease(req.Goal, req.Todo)
	if err != nil {
		return nil, err
	}
	curEffective, err := leaseIsEffective(v, req.Goal, cur, now)
	if err != nil {
		return nil, err
	}
	if curEffective && (cur.Owner != req.Owner || cur.IdempotencyKey != req.IdempotencyKey) {
		return nil, Errorf(CodeTodoLeaseConflict, "todo %s has an effective task lease held by %s (epoch %d, expires %s)",
			req.Todo, cur.Owner, cur.Epoch, cur.ExpiresAt.UTC().Format(time.RFC3339)).With("lease_owner", cur.Owner)
	}
	if keySeen(cur, req.IdempotencyKey) {
		return nil, keyReuse("idempotency key", req.IdempotencyKey)
	}
	current := int64(0)
	if cur != nil {
		current = cur.Version
	}
	if req.ExpectedVersion != nil && *req.ExpectedVersion != current {
		return nil, VersionMismatch(*req.ExpectedVersion, current, v.Revision)
	}
	conflicts, err := ScopeConflicts(v, req.Goal, req.Todo, scopes, now)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		return nil, scopeConflictError(conflicts)
	}
	if cur != nil && (cur.Version >= MaxGeneration || cur.Epoch >= MaxGeneration) {
		return nil, generationExhausted(req.Todo)
	}

	l := startExecution(cur, req.Todo, req.Owner, req.IdempotencyKey, req.TTLSeconds, now)
	l.OwnerRegistration = owner.Registration
	l.WriteScopes = scopes
	v.PutLease(req.Goal, l)
	ev := req.ExpectedVersion
	if ev != nil {
		c := *ev
		ev = &c
	}
	r := writeReceipt(v, &Receipt{ID: v.hashForm()(id), Operation: OpLeaseAcquire, GoalID: req.Goal, TodoID: req.Todo,
		Owner: req.Owner, IdempotencyKey: req.IdempotencyKey, ExpectedVersion: ev,
		RequestDigest: v.hashForm()(digest), Status: StatusApplied}, l, now)
	return appliedOutcome(v, r, l, true, now)
}

// startExecution returns the lease of a new execution after cur (nil when the
// todo never had a lease): version+1, epoch+1, the previous holder ended.
func startExecution(cur *Lease, todo, owner, key string, ttl int64, now time.Time) *Lease {
	l := &Lease{TodoID: todo, Status: LeaseActive}
	if cur != nil {
		l = cloneLeaseRecord(cur)
		if cur.Status == LeaseActive {
			reason := EndTakenOver
			if !now.Before(cur.ExpiresAt) {
				reason = EndExpired
			}
			endCurrentHolder(l, now, reason)
		}
	}
	l.Owner, l.IdempotencyKey = owner, key
	l.Version++
	l.Epoch++
	l.Status = LeaseActive
	l.AcquiredAt = now
	l.RenewedAt = nil
	l.ReleasedAt = nil
	l.ExpiresAt = now.Add(time.Duration(ttl) * time.Second)
	l.Holders = append(l.Holders, Holder{Epoch: l.Epoch, Owner: owner, IdempotencyKey: key, StartedAt: now})
	boundHolders(l)
	return l
}

// endCurrentHolder ends the last holder (if still open) at now with reason.
func endCurrentHolder(l *Lease, now time.Time, reason string) {
	if n := len(l.Holders); n > 0 && l.Holders[n-1].EndedAt == nil {
		t := now
		l.Holders[n-1].EndedAt = &t
		l.Holders[n-1].EndReason = reason
	}
}

// acquireReplay answers an exact acquire retry: it succeeds only while the
// receipt's execution is still the current, effective one.
func acquireReplay(v *View, r *Receipt, now time.Time) (*Outcome, error) {
	cur, err := v.Lease(r.GoalID, r.TodoID)
	if err != nil {
		return nil, err
	}
	eff, err := leaseIsEffective(v, r.GoalID, cur, now)
	if err != nil {
		return nil, err
	}
	if !eff || r.Lease == nil || cur.Owner != r.Owner || cur.IdempotencyKey != r.IdempotencyKey || cur.Epoch != r.Lease.Epoch {
		return nil, notCurrent(r.ID, r.Owner, r.IdempotencyKey, r.TodoID, cur)
	}
	return replayOutcome(v, r, now)
}

// notCurrent is the answer to the retry of an acquire whose execution is no
// longer the current effective lease (cur: the todo's lease now).
func notCurrent(receiptID, owner, key, todo string, cur *Lease) *Error {
	e := Errorf(CodeExecutionNotCurrent, "execution %s of %s on todo %s is no longer the current effective lease (transferred, expired, released or no longer eligible): inspect the lease and start a new execution with a new key",
		key, owner, todo).With("receipt_id", receiptID)
	if cur != nil {
		e.With("current_version", cur.Version).With("current_epoch", cur.Epoch)
	}
	return e
}

// ScopeConflict is one effective lease of another todo whose scope overlaps
// a requested scope.
type ScopeConflict struct {
	TodoID string `json:"todo_id"`
	Owner  string `json:"owner"`
	Scope  string `json:"scope"`
}

func scopeConflictError(conflicts []ScopeConflict) *Error {
	c := conflicts[0]
	msg := "write scope overlaps " + c.Scope + " held by " + c.Owner + " on " + c.TodoID
	if len(conflicts) > 1 {
		msg += " (and more, see conflicts)"
	}
	return Errorf(CodeWriteScopeConflict, "%s", msg).With("conflicts", conflicts)
}

// ScopeConflicts returns every effective lease of another todo of the goal
// (every lease record counts, never a page) holding a scope that overlaps
// one of scopes, sorted by todo id and scope. An empty scope list never
// conflicts.
//
// Only an active, unexpired lease with scopes can conflict, and only if a
// scope overlaps: that is decided from the goal's active leases (the
// view's index of them, see active.go), and only then is the lease record
// itself read, with its todo and owner, to judge whether it is effective.
func ScopeConflicts(v *View, goal, todo string, scopes []string, now time.Time) ([]ScopeConflict, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	active, err := v.activeLeases(goal)
	if err != nil {
		return nil, err
	}
	var out []ScopeConflict
	for _, a := range active {
		if a.TodoID == todo || len(a.Scopes) == 0 || !now.Before(a.ExpiresAt) || !anyOverlap(a.Scopes, scopes) {
			continue
		}
		// The entry holds all the judgement reads (as todo ready's does).
		l := a.Lease()
		eff, err := leaseIsEffective(v, goal, l, now)
		if err != nil {
			return nil, err
		}
		if !eff {
			continue
		}
		for _, held := range normalizeScopeSet(l.WriteScopes) {
			if anyOverlap([]string{held}, scopes) {
				out = append(out, ScopeConflict{TodoID: l.TodoID, Owner: l.Owner, Scope: held})
			}
		}
	}
	slices.SortFunc(out, func(a, b ScopeConflict) int {
		if c := strings.Compare(a.TodoID, b.TodoID); c != 0 {
			return c
		}
		return strings.Compare(a.Scope, b.Scope)
	})
	return out, nil
}

// anyOverlap reports whether a scope of held overlaps a scope of want. The
// question has one budget (overlapSteps) for all its pairs: past it, the
// answer is true.
func anyOverlap(held, want []string) bool {
	budget := &overlapBudget{left: overlapSteps}
	for _, h := range held {
		for _, w := range want {
			if prefixesMeet(h, w) && scopesOverlap(h, w, budget) {
				return true
			}
		}
	}
	return false
}

// prefixesMeet reports whether two scopes' literal prefixes (up to their
// first glob metacharacter) could start one path: one is a prefix of the
// other. Every path a scope matches or covers starts with its literal
// prefix, so scopes whose prefixes do not meet cannot overlap, and the
// scan over a goal's active leases skips parsing them (at 1,000 leases,
// parsing every lease's globs was half of an acquire's scope check). Sound
// for any pattern; used where the scopes were validated.
func prefixesMeet(a, b string) bool {
	la, lb := literalPrefix(a), literalPrefix(b)
	return strings.HasPrefix(la, lb) || strings.HasPrefix(lb, la)
}

// literalPrefix is s up to its first glob metacharacter.
func literalPrefix(s string) string {
	if i := strings.IndexAny(s, "*?[{\\"); i >= 0 {
		return s[:i]
	}
	return s
}

// ScopesOverlap reports whether two write scopes (doublestar globs) may name
// a common path. A scope also covers everything below what it matches, so a
// literal directory overlaps the files in it. When a pattern cannot be
// analysed, or the analysis would take more than its budget, the answer is
// true.
func ScopesOverlap(a, b string) bool {
	return scopesOverlap(a, b, &overlapBudget{left: overlapSteps})
}

// overlapSteps bounds the work of one overlap question (ScopesOverlap, or
// anyOverlap's question about two scope sets): a step is one state of a
// product search or one comparison of two segments. Patterns within the
// request limits (64 alternatives, 256 bytes) stay far below it unless
// they are built to be slow; such a pair (two 256-byte scopes of 64
// alternatives with star-laden segments that never meet) takes a few
// million steps to analyse exactly, and is reported as overlapping after
// this many instead (a few milliseconds). The count is deterministic, so
// re-deciding a request gives the same answer.
const overlapSteps = 1 << 17

// overlapBudget counts the steps left to an overlap question.
type overlapBudget struct {
	left int
	// segs memoises segment intersections by their text: the
	// alternatives of a scope share most of their segments.
	segs map[[2]string]bool
	// parsed holds the segments parsed so far, by their text, and
	// expanded the scopes (nil: cannot be analysed).
	parsed   map[string][]globTok
	expanded map[string][][]globSeg
	// The product searches' visited marks and stacks, reused (one per
	// level: paths, and segments within a step of a path search).
	levels [2]productScratch
}

type productScratch struct {
	gen   uint32
	seen  []uint32
	stack [][2]int
}

// expand returns the brace alternatives of scope, each parsed into
// segments with "/**" appended (a scope covers what is below it); ok is
// false when the scope cannot be analysed (more than 64 alternatives,
// unbalanced braces or classes, escapes). Scopes are expanded once per
// question.
func (b *overlapBudget) expand(scope string) ([][]globSeg, bool) {
	if e, ok := b.expanded[scope]; ok {
		return e, e != nil
	}
	if b.expanded == nil {
		b.expanded = map[string][][]globSeg{}
	}
	const limit = 64
	var alts []string
	var out [][]globSeg
	if expandBraces(scope, &alts, limit) {
		out = make([][]globSeg, 0, len(alts))
		for _, p := range alts {
			b.spend(len(p) / 8)
			segs, ok := parseGlobPath(p+"/**", b)
			if !ok {
				out = nil
				break
			}
			out = append(out, segs)
		}
	}
	b.expanded[scope] = out
	return out, out != nil
}

func (b *overlapBudget) spend(n int) bool {
	b.left -= n
	return b.left >= 0
}

func scopesOverlap(a, b string, budget *overlapBudget) bool {
	if a == "" || b == "" {
		return false
	}
	if budget.left < 0 {
		return true
	}
	pa, ok1 := budget.expand(a)
	pb, ok2 := budget.expand(b)
	if !ok1 || !ok2 {
		return true
	}
	for _, x := range pa {
		for _, y := range pb {
			if globPathsIntersect(x, y, budget) || budget.left < 0 {
				return true
			}
		}
	}
	return false
}

// expandBraces appends the brace alternatives of p ("{a,b}/x" → "a/x",
// "b/x") to out. false when braces are unbalanced or more than limit
// alternatives result.
func expandBraces(p string, out *[]string, limit int) bool {
	start, inClass := -1, false
	for i := 0; i < len(p) && start < 0; i++ {
		switch c := p[i]; {
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '{':
			start = i
		}
	}
	if start < 0 {
		if len(*out) >= limit {
			return false
		}
		*out = append(*out, p)
		return true
	}
	depth, end, cuts := 0, -1, []int{start}
	inClass = false
	for i := start; i < len(p) && end < 0; i++ {
		switch c := p[i]; {
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				end = i
			}
		case c == ',' && depth == 1:
			cuts = append(cuts, i)
		}
	}
	if end < 0 {
		return false
	}
	cuts = append(cuts, end)
	for k := 0; k+1 < len(cuts); k++ {
		alt := p[cuts[k]+1 : cuts[k+1]]
		if !expandBraces(p[:start]+alt+p[end+1:], out, limit) {
			return false
		}
	}
	return true
}

// globTok is one element of a path-segment pattern.
type globTok struct {
	kind   byte // 'c' literal, '?' any one char, '*' any run, '[' class
	ch     rune
	neg    bool
	ranges [][2]rune
}

// globSeg is one path segment of a pattern; star is a whole "**" segment
// (zero or more segments).
type globSeg struct {
	star bool
	text string
	toks []globTok
}

func parseGlobPath(p string, budget *overlapBudget) ([]globSeg, bool) {
	out := make([]globSeg, 0, strings.Count(p, "/")+1)
	for s := range strings.SplitSeq(p, "/") {
		if s == "**" {
			out = append(out, globSeg{star: true})
			continue
		}
		toks, ok := budget.parsed[s]
		if !ok {
			if toks, ok = parseGlobSegment(s); !ok {
				return nil, false
			}
			if budget.parsed == nil {
				budget.parsed = map[string][]globTok{}
			}
			budget.parsed[s] = toks
		}
		out = append(out, globSeg{text: s, toks: toks})
	}
	return out, true
}

func parseGlobSegment(s string) ([]globTok, bool) {
	rs := []rune(s)
	var out []globTok
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			if n := len(out); n == 0 || out[n-1].kind != '*' {
				out = append(out, globTok{kind: '*'})
			}
		case '?':
			out = append(out, globTok{kind: '?'})
		case '\\':
			return nil, false
		case '[':
			j, tok := i+1, globTok{kind: '['}
			if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
				tok.neg = true
				j++
			}
			closed := false
			for j < len(rs) {
				if rs[j] == ']' {
					closed = true
					break
				}
				if rs[j] == '\\' {
					return nil, false
				}
				lo, hi := rs[j], rs[j]
				if j+2 < len(rs) && rs[j+1] == '-' && rs[j+2] != ']' {
					hi = rs[j+2]
					j += 3
				} else {
					j++
				}
				if hi < lo {
					return nil, false
				}
				tok.ranges = append(tok.ranges, [2]rune{lo, hi})
			}
			if !closed || len(tok.ranges) == 0 {
				return nil, false
			}
			out = append(out, tok)
			i = j
		default:
			out = append(out, globTok{kind: 'c', ch: r})
		}
	}
	return out, true
}

func (t globTok) classHas(r rune) bool {
	in := false
	for _, rg := range t.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != t.neg
}

// globCharsIntersect reports whether some single character matches both
// tokens (conservatively true for negated classes against classes).
func globCharsIntersect(a, b globTok) bool {
	switch {
	case a.kind == '*' || a.kind == '?' || b.kind == '*' || b.kind == '?':
		return true
	case a.kind == 'c' && b.kind == 'c':
		return a.ch == b.ch
	case a.kind == 'c':
		return b.classHas(a.ch)
	case b.kind == 'c':
		return a.classHas(b.ch)
	case a.neg || b.neg:
		return true
	}
	for _, x := range a.ranges {
		for _, y := range b.ranges {
			if x[0] <= y[1] && y[0] <= x[1] {
				return true
			}
		}
	}
	return false
}

// productNonEmpty searches the product of two patterns, each a sequence of n
// (resp. m) elements where a star element may match zero or more items, for
// a path from (0,0) to (n,m). step(i,j) says whether one item can be
// consumed by element i of the first and j of the second pattern. Each
// state visited spends one step of budget; with none left the answer is
// true (the caller reports an overlap).
func productNonEmpty(level, n, m int, starA func(int) bool, starB func(int) bool, step func(int, int) bool, budget *overlapBudget) bool {
	sc := &budget.levels[level]
	if size := (n + 1) * (m + 1); len(sc.seen) < size {
		sc.seen = make([]uint32, size)
		sc.gen = 0
	}
	sc.gen++
	seen, gen, stack := sc.seen, sc.gen, sc.stack[:0]
	defer func() { sc.stack = stack[:0] }()
	push := func(i, j int) {
		if k := i*(m+1) + j; seen[k] != gen {
			seen[k] = gen
			stack = append(stack, [2]int{i, j})
		}
	}
	push(0, 0)
	for len(stack) > 0 {
		if !budget.spend(1) {
			return true
		}
		i, j := stack[len(stack)-1][0], stack[len(stack)-1][1]
		stack = stack[:len(stack)-1]
		if i == n && j == m {
			return true
		}
		sa, sb := i < n && starA(i), j < m && starB(j)
		if sa {
			push(i+1, j)
		}
		if sb {
			push(i, j+1)
		}
		if i < n && j < m && step(i, j) {
			ni, nj := i+1, j+1
			if sa {
				ni = i
			}
			if sb {
				nj = j
			}
			push(ni, nj)
		}
	}
	return false
}

func globSegmentsIntersect(a, b globSeg, budget *overlapBudget) bool {
	key := [2]string{a.text, b.text}
	if r, ok := budget.segs[key]; ok {
		budget.spend(1)
		return r
	}
	r := productNonEmpty(1, len(a.toks), len(b.toks),
		func(i int) bool { return a.toks[i].kind == '*' },
		func(j int) bool { return b.toks[j].kind == '*' },
		func(i, j int) bool { return globCharsIntersect(a.toks[i], b.toks[j]) }, budget)
	if budget.left >= 0 {
		if budget.segs == nil {
			budget.segs = map[[2]string]bool{}
		}
		budget.segs[key] = r
	}
	return r
}

func globPathsIntersect(a, b []globSeg, budget *overlapBudget) bool {
	return productNonEmpty(0, len(a), len(b),
		func(i int) bool { return a[i].star },
		func(j int) bool { return b[j].star },
		func(i, j int) bool {
			return a[i].star || b[j].star || globSegmentsIntersect(a[i], b[j], budget)
		}, budget)
}
