package lease

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestOperationTableIsComplete(t *testing.T) {
	seenSchema := map[string]bool{}
	for _, op := range Operations() {
		if op.Name == "" || op.Summary == "" || !strings.HasPrefix(op.Schema, "loopx.") || !strings.Contains(op.Schema, "/v") {
			t.Errorf("operation %+v: name, summary and a versioned loopx.* schema are required", op)
		}
		if seenSchema[op.Schema] {
			t.Errorf("schema %s twice", op.Schema)
		}
		seenSchema[op.Schema] = true
		// Every wire field has an explicit JSON name and a description.
		for i := range op.typ.NumField() {
			f := op.typ.Field(i)
			if wireName(f) == "" {
				continue
			}
			if tag := f.Tag.Get("json"); tag == "" || strings.HasPrefix(tag, ",") {
				t.Errorf("%s.%s has no explicit JSON name", op.typ.Name(), f.Name)
			}
			if f.Tag.Get("desc") == "" {
				t.Errorf("%s.%s has no description", op.typ.Name(), f.Name)
			}
		}
	}
}

func TestCallOf(t *testing.T) {
	for _, tc := range []struct {
		req    any
		schema string
	}{
		{AcquireRequest{}, "loopx.task-lease.acquire/v1"},
		{&AcquireRequest{}, "loopx.task-lease.acquire/v1"},
		{TransferRequest{}, "loopx.task-lease.transfer/v1"},
		{TransferRequest{TransferClaim: true}, "loopx.task-lease.transfer-claim/v2"},
		{TransferRequest{TransferClaim: true, rules: rules{1}}, "loopx.task-lease.transfer-claim/v1"},
		{GoalArchiveRequest{}, "loopx.goal.archive/v1"},
		{GoalUnarchiveRequest{}, "loopx.goal.unarchive/v1"},
		{ReadyClaimRequest{}, "loopx.todo.ready-claim/v2"},
		{ReadyClaimRequest{rules: rules{1}}, "loopx.todo.ready-claim/v1"},
		{ClaimRequest{}, "loopx.todo.claim/v2"},
		{&ClaimRequest{rules: rules{1}}, "loopx.todo.claim/v1"},
		{UpdateRequest{}, "loopx.todo.update/v2"},
		{UpdateRequest{rules: rules{1}}, "loopx.todo.update/v1"},
	} {
		if got := CallOf(tc.req).Op.Schema; got != tc.schema {
			t.Errorf("CallOf(%T %+v) = %s, want %s", tc.req, tc.req, got, tc.schema)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("CallOf of a type no operation takes did not panic")
		}
	}()
	CallOf(struct{}{})
}

func TestDecodeRequestStrict(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		field, msg string // "" msg: decodes
		code       Code   // default invalid_request
	}{
		{name: "ok", in: `{"schema":"loopx.task-lease.acquire/v1","todo_id":"todo_abc","owner":"a","idempotency_key":"k","ttl_seconds":60}`},
		{name: "nested proof", in: `{"schema":"loopx.todo.complete/v1","todo_id":"todo_abc","task_lease":{"idempotency_key":"k","expected_version":3}}`},
		{name: "trailing white space", in: "{\"schema\":\"loopx.todo.add/v1\",\"text\":\"x\"} \n\t"},
		{name: "escaped text", in: `{"schema":"loopx.todo.add/v1","text":"caf\u00e9 \"x\""}`},
		{name: "unknown field", in: `{"schema":"loopx.task-lease.acquire/v1","todo_id":"todo_abc","bogus":1}`, field: "bogus", msg: "unknown field"},
		{name: "wrong case", in: `{"schema":"loopx.task-lease.acquire/v1","TODO_ID":"todo_abc"}`, field: "TODO_ID", msg: "unknown field"},
		{name: "go name", in: `{"schema":"loopx.task-lease.acquire/v1","Todo":"todo_abc"}`, field: "Todo", msg: "unknown field"},
		{name: "unknown nested", in: `{"schema":"loopx.todo.complete/v1","task_lease":{"idempotency_key":"k","epoch":1}}`, field: "task_lease.epoch", msg: "unknown field"},
		{name: "wrong type", in: `{"schema":"loopx.task-lease.acquire/v1","ttl_seconds":"60"}`, field: "ttl_seconds", msg: "must be an integer", code: CodeInvalidTTL},
		{name: "wrong list", in: `{"schema":"loopx.task-lease.acquire/v1","write_scopes":"src/**"}`, field: "write_scopes", msg: "must be a list", code: CodeInvalidWriteScope},
		{name: "fraction", in: `{"schema":"loopx.task-lease.acquire/v1","ttl_seconds":1.5}`, field: "ttl_seconds", msg: "integer", code: CodeInvalidTTL},
		{name: "not object", in: `[1]`, msg: "not one JSON object"},
		{name: "trailing object", in: `{"schema":"loopx.todo.add/v1","text":"x"} {}`, msg: "data after the JSON object"},
		{name: "trailing garbage", in: `{"schema":"loopx.todo.add/v1","text":"x"}garbage`, msg: "data after the JSON object"},
		{name: "trailing bracket", in: `{"schema":"loopx.todo.add/v1","text":"x"}}`, msg: "data after the JSON object"},
		{name: "truncated", in: `{"schema":"loopx.todo.add/v1","text":"x"`, msg: "not one JSON object"},
		{name: "duplicate key", in: `{"schema":"loopx.todo.add/v1","text":"x","text":"y"}`, msg: `the key "text" appears twice`},
		{name: "duplicate key escaped", in: `{"schema":"loopx.todo.add/v1","text":"x","t\u0065xt":"y"}`, msg: `the key "text" appears twice`},
		{name: "duplicate schema", in: `{"schema":"loopx.todo.add/v1","schema":"loopx.todo.add/v1","text":"x"}`, msg: `the key "schema" appears twice`},
		{name: "duplicate nested key", in: `{"schema":"loopx.todo.complete/v1","todo_id":"todo_abc","task_lease":{"idempotency_key":"k","idempotency_key":"j","expected_version":3}}`, msg: `the key "idempotency_key" appears twice`},
		{name: "same key in two objects", in: `{"schema":"loopx.todo.complete/v1","todo_id":"todo_abc","task_lease":{"idempotency_key":"k","expected_version":3},"note":"todo_id"}`},
		{name: "number out of range", in: `{"schema":"loopx.todo.add/v1","text":"x","priority":1e999}`, msg: "the number 1e999 is out of range"},
		{name: "invalid utf-8", in: "{\"schema\":\"loopx.todo.add/v1\",\"text\":\"caf\xe9\"}", msg: "not valid UTF-8"},
		{name: "no schema", in: `{"text":"x"}`, field: "schema", msg: "names no schema"},
		{name: "schema type", in: `{"schema":1}`, field: "schema", msg: "must be a string"},
		{name: "unknown version", in: `{"schema":"loopx.todo.add/v2","text":"x"}`, field: "schema", msg: "unknown request schema"},
		{name: "unknown schema", in: `{"schema":"loopx.todo.frobnicate/v1"}`, field: "schema", msg: "unknown request schema"},
		{name: "claim flag not on the wire", in: `{"schema":"loopx.task-lease.transfer/v1","transfer_claim":true}`, field: "transfer_claim", msg: "unknown field"},
		// A value of the wrong type in an identifier, TTL or scope field
		// gets that field's code, as a malformed value of the right type.
		{name: "goal id type", in: `{"schema":"loopx.todo.add/v1","goal_id":7,"text":"x"}`, field: "goal_id", msg: "must be a string", code: CodeInvalidGoalID},
		{name: "todo id type", in: `{"schema":"loopx.todo.add/v1","todo_id":["todo_abc"],"text":"x"}`, field: "todo_id", msg: "must be a string", code: CodeInvalidTodoID},
		{name: "dependency type", in: `{"schema":"loopx.todo.add/v1","depends_on":["todo_abc",1],"text":"x"}`, field: "depends_on", code: CodeInvalidTodoID, msg: "list of strings"},
		{name: "owner type", in: `{"schema":"loopx.task-lease.acquire/v1","owner":true}`, field: "owner", msg: "must be a string", code: CodeInvalidAgentID},
		{name: "new owner type", in: `{"schema":"loopx.task-lease.transfer/v1","new_owner":{}}`, field: "new_owner", msg: "must be a string", code: CodeInvalidAgentID},
		{name: "agent id type", in: `{"schema":"loopx.todo.claim/v1","agent_id":1}`, field: "agent_id", msg: "must be a string", code: CodeInvalidAgentID},
		{name: "claimed by type", in: `{"schema":"loopx.todo.claim/v1","claimed_by":1}`, field: "claimed_by", msg: "must be a string", code: CodeInvalidAgentID},
		{name: "excluded agents type", in: `{"schema":"loopx.todo.add/v1","excluded_agents":"a","text":"x"}`, field: "excluded_agents", msg: "list", code: CodeInvalidAgentID},
		{name: "supersede by is a todo", in: `{"schema":"loopx.todo.supersede/v1","by":1}`, field: "by", msg: "must be a string", code: CodeInvalidTodoID},
		{name: "key type", in: `{"schema":"loopx.task-lease.acquire/v1","idempotency_key":1}`, field: "idempotency_key", msg: "must be a string", code: CodeInvalidIdempotencyKey},
		{name: "new key type", in: `{"schema":"loopx.task-lease.transfer/v1","new_idempotency_key":1}`, field: "new_idempotency_key", msg: "must be a string", code: CodeInvalidIdempotencyKey},
		{name: "claim lease key type", in: `{"schema":"loopx.todo.claim/v1","task_lease_idempotency_key":1}`, field: "task_lease_idempotency_key", msg: "must be a string", code: CodeInvalidIdempotencyKey},
		{name: "nested key type", in: `{"schema":"loopx.todo.complete/v1","task_lease":{"idempotency_key":1,"expected_version":3}}`, field: "task_lease.idempotency_key", msg: "must be a string", code: CodeInvalidIdempotencyKey},
		{name: "nested version type", in: `{"schema":"loopx.todo.complete/v1","task_lease":{"idempotency_key":"k","expected_version":"3"}}`, field: "task_lease.expected_version", msg: "must be an integer"},
		{name: "claim ttl type", in: `{"schema":"loopx.todo.claim/v1","claim_ttl_minutes":"5"}`, field: "claim_ttl_minutes", msg: "must be an integer", code: CodeInvalidTTL},
		{name: "ttl overflow", in: `{"schema":"loopx.task-lease.renew/v1","ttl_seconds":1e30}`, field: "ttl_seconds", msg: "must be an integer", code: CodeInvalidTTL},
		{name: "required scope type", in: `{"schema":"loopx.todo.add/v1","required_write_scopes":[1],"text":"x"}`, field: "required_write_scopes", msg: "list of strings", code: CodeInvalidWriteScope},
		{name: "text type", in: `{"schema":"loopx.todo.add/v1","text":1}`, field: "text", msg: "must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeRequest([]byte(tc.in))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				return
			}
			code := tc.code
			if code == "" {
				code = CodeInvalidRequest
			}
			e, ok := AsError(err)
			if !ok || e.Code != code || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("decode = %+v (%v), want %s %q", c, err, code, tc.msg)
			}
			if got, _ := e.Details["field"].(string); got != tc.field {
				t.Errorf("field = %q, want %q", got, tc.field)
			}
		})
	}
}

// TestDecodeWireRequestSize: the wire takes requests of up to 1 MiB.
func TestDecodeWireRequestSize(t *testing.T) {
	req := func(n int) []byte {
		head := `{"schema":"loopx.todo.add/v1","text":"`
		return []byte(head + strings.Repeat("x", n-len(head)-2) + `"}`)
	}
	if _, err := DecodeWireRequest(req(MaxRequestSize)); err != nil {
		t.Fatalf("a request of exactly 1 MiB: %v", err)
	}
	_, err := DecodeWireRequest(req(MaxRequestSize + 1))
	if e, ok := AsError(err); !ok || e.Code != CodeInvalidRequest || !strings.Contains(e.Message, "1 MiB") {
		t.Fatalf("a request over 1 MiB: %v", err)
	}
	// Recorded requests (DecodeRequest) have no size limit.
	if _, err := DecodeRequest(req(MaxRequestSize + 1)); err != nil {
		t.Fatalf("DecodeRequest of a big request: %v", err)
	}
}

// FuzzCheckStrictJSON: what CheckStrictJSON accepts is one JSON value that
// encoding/json reads whole, and re-encoding it keeps every key.
func FuzzCheckStrictJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `{} x`, "{\"a\":\"\xff\"}", `{"a":[1,{"a":2}],"b":"a"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckStrictJSON(data) != nil {
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", data, err)
		}
		if !utf8.Valid(data) {
			t.Fatalf("accepted invalid UTF-8 %q", data)
		}
		if n, m := countKeys(data), countKeysOf(v); n != m {
			t.Fatalf("accepted %q: %d keys in the text, %d once decoded (a duplicate)", data, n, m)
		}
	})
}

// countKeys counts the object keys of a JSON text by its tokens.
func countKeys(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	type frame struct{ obj, wantKey bool }
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		ends := true
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, frame{obj: t == '{', wantKey: t == '{'})
				ends = false
			} else {
				stack = stack[:len(stack)-1]
			}
		case string:
			if k := len(stack); k > 0 && stack[k-1].obj && stack[k-1].wantKey {
				n++
				stack[k-1].wantKey = false
				ends = false
			}
		}
		if k := len(stack); ends && k > 0 && stack[k-1].obj {
			stack[k-1].wantKey = true
		}
	}
}

func countKeysOf(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := len(x)
		for _, e := range x {
			n += countKeysOf(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += countKeysOf(e)
		}
		return n
	}
	return 0
}

// A runtime that knows only the lease half of a transfer refuses a joint
// transfer whole instead of moving the lease and dropping the claim.
func TestLeaseOnlyRuntimeRefusesTransferClaim(t *testing.T) {
	leaseOnly := NewRegistry(func(op *Operation) bool { return !strings.HasPrefix(op.Schema, "loopx.task-lease.transfer-claim/") })
	joint, err := CallOf(TransferRequest{Goal: "g", Todo: "todo_abc", Owner: "a", IdempotencyKey: "k", ExpectedVersion: ptr(1),
		NewOwner: "b", NewIdempotencyKey: "k2", TTLSeconds: 60, TransferClaim: true}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaseOnly.Decode(joint); err == nil || !strings.Contains(err.Error(), "unknown request schema") {
		t.Fatalf("lease-only runtime decoded a joint transfer: %v", err)
	}
	c, err := DefaultRegistry.Decode(joint)
	if err != nil || !c.Req.(*TransferRequest).TransferClaim {
		t.Fatalf("this runtime: %+v, %v", c, err)
	}
}

func ptr(v int64) *int64 { return &v }

func TestEncodeCanonical(t *testing.T) {
	text := "fix <a> & \"b\"\nnext line"
	c := CallOf(UpdateRequest{Todo: "todo_abc", Goal: "g", Actor: "a", Text: &text, Proof: &Proof{IdempotencyKey: "k", ExpectedVersion: 0}})
	got, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agent_id":"a","goal_id":"g","schema":"loopx.todo.update/v2","task_lease":{"expected_version":0,"idempotency_key":"k"},"text":"fix <a> & \"b\"\nnext line","todo_id":"todo_abc"}`
	if string(got) != want {
		t.Errorf("Encode =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(string(got), "\n") {
		t.Error("the canonical form spans lines")
	}
	// Decoding the canonical form and encoding again gives the same bytes.
	back, err := DecodeRequest(got)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Encode()
	if string(again) != want {
		t.Errorf("round trip = %s", again)
	}
	// Expected version 0 is kept, distinct from none.
	zero, _ := CallOf(AcquireRequest{Todo: "todo_abc", ExpectedVersion: ptr(0)}).Encode()
	none, _ := CallOf(AcquireRequest{Todo: "todo_abc"}).Encode()
	if !strings.Contains(string(zero), `"expected_version":0`) || strings.Contains(string(none), "expected_version") {
		t.Errorf("expected version: %s / %s", zero, none)
	}
}

func TestDecodeLegacyRequest(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"acquire", `{"op":"task-lease.acquire","request":{"Goal":"g","Todo":"todo_abc","Owner":"a","IdempotencyKey":"k","ExpectedVersion":0,"TTLSeconds":60,"WriteScopes":null}}`,
			`{"expected_version":0,"goal_id":"g","idempotency_key":"k","owner":"a","schema":"loopx.task-lease.acquire/v1","todo_id":"todo_abc","ttl_seconds":60}`},
		{"joint transfer", `{"op":"task-lease.transfer","request":{"Goal":"g","Todo":"todo_abc","Owner":"a","IdempotencyKey":"k","ExpectedVersion":2,"NewOwner":"b","NewIdempotencyKey":"k2","TTLSeconds":60,"TransferClaim":true}}`,
			`{"expected_version":2,"goal_id":"g","idempotency_key":"k","new_idempotency_key":"k2","new_owner":"b","owner":"a","schema":"loopx.task-lease.transfer-claim/v1","todo_id":"todo_abc","ttl_seconds":60}`},
		{"archive", `{"op":"goal.archive","request":{"Goal":"g","Actor":""}}`, `{"goal_id":"g","schema":"loopx.goal.archive/v1"}`},
		{"unregister", `{"op":"agent.unregister","request":{"Goal":"g","Agent":"a"}}`, `{"agent_id":"a","goal_id":"g","schema":"loopx.agent.unregister/v1"}`},
		{"ready claim", `{"op":"todo.ready-claim","request":{"Goal":"g","Actor":"a","ClaimTTLMinutes":0,"LeaseKey":"","LeaseTTLSeconds":0}}`, `{"agent_id":"a","goal_id":"g","schema":"loopx.todo.ready-claim/v1"}`},
		{"update with proof", `{"op":"todo.update","request":{"Goal":"g","Todo":"todo_abc","Actor":"a","Text":null,"Note":"n","ClearClaim":false,"ClaimedBy":"","Priority":"","ExcludeAgents":null,"AuthorityReason":"","Proof":{"IdempotencyKey":"k","ExpectedVersion":4}}}`,
			`{"agent_id":"a","goal_id":"g","note":"n","schema":"loopx.todo.update/v1","task_lease":{"expected_version":4,"idempotency_key":"k"},"todo_id":"todo_abc"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeLegacyRequest([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := c.Encode()
			if string(got) != tc.want {
				t.Errorf("legacy %s =\n%s\nwant\n%s", tc.name, got, tc.want)
			}
		})
	}
	for _, bad := range []string{`{"op":"store.init","request":{}}`, `{"op":"todo.frob","request":{}}`, `{"op":"todo.add","request":{"Nickname":"x"}}`, `not json`} {
		if _, err := DecodeLegacyRequest([]byte(bad)); err == nil {
			t.Errorf("legacy %s decoded", bad)
		}
	}
}

func TestResolversFillDefaults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := NewView(MemFiles{}, "rev1", now)
	v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: now})
	v.PutGoal(&Goal{ID: "g", Title: "g", Status: GoalActive, HandoffMode: HandoffSoftClaim, CreatedAt: now, UpdatedAt: now})
	v.PutAgent("g", &Agent{ID: "solo", Role: RoleAgent, Status: AgentRegistered, Registration: 1, RegisteredAt: now, UpdatedAt: now})
	v.PutTodo("g", &Todo{ID: "todo_abc", Text: "x", Status: TodoOpen, Priority: "P2", RequiredWriteScopes: []string{"src/**"}, CreatedAt: now, UpdatedAt: now})
	for _, tc := range []struct {
		req  any
		want string
	}{
		{AcquireRequest{Todo: "todo_abc", IdempotencyKey: "k", TTLSeconds: 60},
			`{"goal_id":"g","idempotency_key":"k","owner":"solo","schema":"loopx.task-lease.acquire/v1","todo_id":"todo_abc","ttl_seconds":60,"write_scopes":["src/**"]}`},
		{AcquireRequest{Todo: "todo_abc", IdempotencyKey: "k", TTLSeconds: 60, WriteScopes: []string{"src/a/**"}},
			`{"goal_id":"g","idempotency_key":"k","owner":"solo","schema":"loopx.task-lease.acquire/v1","todo_id":"todo_abc","ttl_seconds":60,"write_scopes":["src/a/**"]}`},
		{AddRequest{Text: "hello"},
			`{"goal_id":"g","priority":"P2","schema":"loopx.todo.add/v1","text":"hello","todo_id":"` + GenerateTodoID("rev1", now, "hello") + `"}`},
		{ClaimRequest{Todo: "todo_abc"}, `{"agent_id":"solo","claimed_by":"solo","goal_id":"g","schema":"loopx.todo.claim/v2","todo_id":"todo_abc"}`},
		{RegisterRequest{Agent: "b"}, `{"agent_id":"b","goal_id":"g","role":"agent","schema":"loopx.agent.register/v1"}`},
		{GoalCreateRequest{Goal: "h"}, `{"goal_id":"h","handoff_mode":"soft_claim","schema":"loopx.goal.create/v1"}`},
	} {
		c := CallOf(tc.req)
		if err := c.Resolve(v, Defaults{}, now); err != nil {
			t.Fatalf("resolve %T: %v", tc.req, err)
		}
		got, _ := c.Encode()
		if string(got) != tc.want {
			t.Errorf("resolved %T =\n%s\nwant\n%s", tc.req, got, tc.want)
		}
	}
	// The todo id is checked before the goal is resolved.
	if err := CallOf(RenewRequest{}).Resolve(v, Defaults{}, now); err == nil || !strings.Contains(err.Error(), "invalid_todo_id") {
		t.Errorf("resolve without todo id = %v", err)
	}
	// The configured default goal wins over the only active goal.
	c := CallOf(AddRequest{Text: "x"})
	if err := c.Resolve(v, Defaults{Goal: "other"}, now); err != nil || c.Req.(*AddRequest).Goal != "other" {
		t.Errorf("default goal: %+v %v", c.Req, err)
	}
}

func TestParseCommit(t *testing.T) {
	req := `{"goal_id":"g","idempotency_key":"k","owner":"a","schema":"loopx.task-lease.acquire/v1","todo_id":"todo_abc","ttl_seconds":60}`
	o := &Outcome{Operation: OpLeaseAcquire, Status: StatusApplied, Goal: "g", Todo: "todo_abc", Actor: "a", Version: 1, Epoch: 1, Request: req}
	good := o.Message()
	for _, tc := range []struct {
		name, msg, kind string
	}{
		{"good", good, ""},
		{"board", ProjectionMessage("g", strings.Repeat("a", 40)), ""},
		{"no request", strings.Replace(good, "Loopx-Request: "+req+"\n", "", 1), ProblemMissingRequest},
		{"lying actor", strings.Replace(good, "Loopx-Actor: a\n", "Loopx-Actor: b\n", 1), ProblemTrailerMismatch},
		{"lying todo", strings.Replace(good, "Loopx-Todo: todo_abc\n", "Loopx-Todo: todo_xyz\n", 1), ProblemTrailerMismatch},
		{"unknown field", strings.Replace(good, `{"goal_id"`, `{"extra":1,"goal_id"`, 1), ProblemInvalidRequest},
		{"unknown version", strings.Replace(good, "acquire/v1", "acquire/v7", 1), ProblemUnknownSchema},
		{"not canonical", strings.Replace(good, `"goal_id":"g","idempotency_key":"k"`, `"idempotency_key":"k","goal_id":"g"`, 1), ProblemInvalidRequest},
	} {
		_, err := ParseCommit(tc.msg)
		he, _ := err.(*HistoryError)
		switch {
		case tc.kind == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.kind != "" && (he == nil || he.Kind != tc.kind):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.kind)
		}
	}
}

func TestMessageMatches(t *testing.T) {
	want := "x\n\nLoopx-Operation: todo.add\n"
	for _, tc := range []struct {
		got string
		ok  bool
	}{
		{want, true},
		{want + "Loopx-Offline: origin\n", true},
		{want + "Loopx-Offline: origin\nLoopx-Actor: b\n", false},
		{want + "Loopx-Actor: b\n", false},
		{"y" + want, false},
		{want + "Loopx-Offline: origin", false},
	} {
		if got := MessageMatches(tc.got, want); got != tc.ok {
			t.Errorf("MessageMatches(%q) = %v", tc.got, got)
		}
	}
}

func TestRedecideRefusesWhatDoesNotHold(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := func(status string) MemFiles {
		v := NewView(MemFiles{}, "rev1", now)
		v.PutMeta(&StoreMeta{FormatVersion: FormatVersion, CreatedAt: now})
		v.PutGoal(&Goal{ID: "g", Title: "g", Status: status, HandoffMode: HandoffSoftClaim, CreatedAt: now, UpdatedAt: now})
		files := MemFiles{}
		for _, ch := range v.Changes() {
			files[ch.Path] = ch.Data
		}
		return files
	}
	parent := func() *View { return NewView(base(GoalActive), "rev1", now) }
	enc := func(req any) RecordedCommit {
		raw, _ := CallOf(req).Encode()
		call, _ := DecodeRequest(raw)
		return RecordedCommit{Request: string(raw), Call: call}
	}
	rd, err := Redecide(parent(), enc(GoalCreateRequest{Goal: "h", HandoffMode: HandoffSoftClaim}), now)
	if err != nil || len(rd.Changes) != 1 || !strings.Contains(rd.Message, "Loopx-Request: ") {
		t.Fatalf("Redecide = %+v, %v", rd, err)
	}
	for _, tc := range []struct {
		name string
		rc   RecordedCommit
		when time.Time
		kind string
	}{
		{"refused", enc(GoalCreateRequest{Goal: "g", Title: "another", HandoffMode: HandoffSoftClaim}), now, ProblemRefused},
		{"a replay writes nothing", enc(GoalCreateRequest{Goal: "g", HandoffMode: HandoffSoftClaim}), now, ProblemNoEffect},
		{"implicit default", enc(GoalCreateRequest{Goal: "h"}), now, ProblemInvalidRequest},
		{"before its parent", enc(GoalCreateRequest{Goal: "h", HandoffMode: HandoffSoftClaim}), now.Add(-time.Second), ProblemTimeRegression},
		{"no effect", enc(GoalArchiveRequest{Goal: "g"}), now, ""},
		{"no request", RecordedCommit{}, now, ProblemMissingRequest},
	} {
		_, err := Redecide(parent(), tc.rc, tc.when)
		he, _ := err.(*HistoryError)
		if tc.kind == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if he == nil || he.Kind != tc.kind {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.kind)
		}
	}
	// Archiving an archived goal changes nothing: no commit can record it.
	pv := NewView(base(GoalArchived), "rev1", now)
	if _, err := Redecide(pv, enc(GoalArchiveRequest{Goal: "g"}), now); err == nil || err.(*HistoryError).Kind != ProblemNoEffect {
		t.Errorf("archived again: %v", err)
	}
}

// BenchmarkRecordRequest is the part of a mutation that recording the
// request adds: encoding the resolved request canonically (the commit
// message grows by that line). Compare with a mutation's few milliseconds
// (BenchmarkRecordRequest in the root package measures both side by side).
func BenchmarkEncodeRequest(b *testing.B) {
	c := CallOf(AcquireRequest{Goal: "g", Todo: "todo_bench", Owner: "agent-a", IdempotencyKey: "exec-1",
		ExpectedVersion: ptr(3), TTLSeconds: 600, WriteScopes: []string{"src/**", "docs/**"}})
	for b.Loop() {
		if _, err := c.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
