package lease

// The operation table: one descriptor per mutation. Everything that names,
// records, decodes or replays a mutation derives from it: the Store methods
// of the root package, the command line's requests, the request recorded on
// every state commit (Loopx-Request), `loopx sync`'s replay of offline work,
// `loopx apply`, the MCP tools, `loopx verify --history` and the audit
// names. Adding an operation is one entry here plus its decision and tests.
//
// A request travels as one JSON object: its fields (the request type's JSON
// tags) and "schema", the schema id with its version
// ("loopx.task-lease.acquire/v1"). Decoding is strict (DecodeRequest):
// invalid UTF-8, a key given twice, data after the object, unknown or
// misspelt fields (exact case), unknown schema ids or versions and wrong
// types are invalid_request naming the field, never dropped (a wrong type
// in an identifier, TTL or scope field is that field's code, FieldCode).
// The wire (`loopx apply`, the MCP tools) takes at most MaxRequestSize. The canonical form (Call.Encode) has sorted keys, omits empty
// fields and leaves no default implicit: it is recorded after the
// operation's resolver has filled in the goal, the acting agent, the
// generated todo id and the lease's write scopes from the head it was
// decided on, so re-deciding it needs nothing but the parent commit and
// the commit's time.
//
// A change to what a decision writes for a request is a new schema version;
// the old version keeps its decision, so history made by an older loopx
// still re-verifies (docs/DECISIONS.md).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Operation names (the Loopx-Operation trailer and the JSON "operation").
const (
	OpStoreInit       = "init"
	OpStoreUpgrade    = "store.upgrade"
	OpClockReset      = "store.clock-reset"
	OpGoalCreate      = "goal.create"
	OpGoalArchive     = "goal.archive"
	OpGoalUnarchive   = "goal.unarchive"
	OpAgentRegister   = "agent.register"
	OpAgentUnregister = "agent.unregister"
	OpAgentRotateKey  = "agent.rotate-key"
	OpTodoAdd         = "todo.add"
	OpTodoReady       = "todo.ready"
	OpTodoClaim       = "todo.claim"
	OpTodoUpdate      = "todo.update"
	OpTodoComplete    = "todo.complete"
	OpTodoSupersede   = "todo.supersede"
	OpLeaseAcquire    = "task-lease.acquire"
	OpLeaseRenew      = "task-lease.renew"
	OpLeaseTransfer   = "task-lease.transfer"
	OpLeaseRelease    = "task-lease.release"
	OpLeaseInspect    = "task-lease.inspect"
	// OpProjection names board commits (Loopx-Projection-Of).
	OpProjection = "todo.project-markdown"
)

// Audit names: what the audit trail (commit subject, Loopx-Operation,
// `loopx log`) calls a decision whose command is broader. The command's
// JSON "operation" stays the command's.
const (
	AuditClaimTakeover = "todo.claim-takeover" // a claim of a todo whose earlier claim expired
	AuditClearClaim    = "todo.clear-claim"    // todo update --clear-claim of a claim
	AuditReassign      = "todo.reassign"       // an orchestrator moves a claim to another agent
)

// SchemaField is the JSON key of a request's schema id.
const SchemaField = "schema"

// Defaults are what resolvers need beyond the records: the configured
// default goal (the registry's default_goal, LOOPX_GOAL). Verification
// resolves with none (recorded requests name their goal).
type Defaults struct {
	Goal string
}

// Operation describes one mutation.
type Operation struct {
	// Name is the command's operation name (e.g. "task-lease.transfer").
	Name string
	// Schema is the id of its request schema, with its version.
	Schema string
	// Summary says what it does, for people and tool descriptions.
	Summary string
	// Rewinds marks the one operation decided at the machine's clock even
	// when the head is dated later (clock-reset): it is exempt from the
	// clock-skew refusal and from "never before its parent".
	Rewinds bool

	typ     reflect.Type // the request struct type
	resolve func(v *View, d Defaults, now time.Time, req any) error
	decide  func(v *View, req any, now time.Time) (*Outcome, error)
	// fixed sets what the schema itself implies (transfer-claim) after
	// decoding; matches selects this operation for a request value.
	fixed   func(req any)
	matches func(req any) bool
	// rules is the version of the decision rules of this schema version (0:
	// this build's current rules; see decidedBy).
	rules int
}

// def builds an Operation from a typed decision and resolver.
func def[T any](name, schema, summary string, decide func(*View, T, time.Time) (*Outcome, error), resolve func(*View, Defaults, time.Time, *T) error) *Operation {
	op := &Operation{Name: name, Schema: schema, Summary: summary, typ: reflect.TypeFor[T]()}
	op.decide = func(v *View, req any, now time.Time) (*Outcome, error) { return decide(v, *req.(*T), now) }
	op.resolve = func(v *View, d Defaults, now time.Time, req any) error {
		if resolve == nil {
			return nil
		}
		return resolve(v, d, now, req.(*T))
	}
	return op
}

func (op *Operation) rewinding() *Operation {
	op.Rewinds = true
	return op
}

func (op *Operation) with(fixed func(req any), matches func(req any) bool) *Operation {
	op.fixed, op.matches = fixed, matches
	return op
}

// rules is embedded in the request types whose decision changed after their
// first schema version: the version of the rules that decide the request (0:
// the current ones). It is not on the wire: the schema version selects it.
type rules struct{ version int }

func (r *rules) rulesOf() *rules { return r }

type ruled interface{ rulesOf() *rules }

// rulesVersion is the rules version a request value asks for (0 for the
// request types that never changed).
func rulesVersion(req any) int {
	if r, ok := req.(ruled); ok {
		return r.rulesOf().version
	}
	return 0
}

// decidedBy marks an entry of an older schema version of an operation whose
// decision has changed since: a request of this version is decided by the
// rules it had (version), so a commit that recorded it re-verifies
// (Redecide), and CallOf never picks it for a request of the current rules.
// A live request of this version is decided by the current rules: the
// service moves it to the current version first (Call.Current).
func (op *Operation) decidedBy(version int) *Operation {
	fixed := op.fixed
	op.rules = version
	op.fixed = func(req any) {
		if fixed != nil {
			fixed(req)
		}
		req.(ruled).rulesOf().version = version
	}
	return op
}

// operations is the table. Order: the order of the docs and tools.
var operations = []*Operation{
	def(OpStoreInit, "loopx.store.init/v1", "Create the store's root record, or change the store's settings (an admin's to do once the store has admins).", Init, resolveInit),
	def(OpStoreUpgrade, "loopx.store.upgrade/v1", "Upgrade the store to a newer format (recorded requests on every commit; format 3: the store's id).", Upgrade, resolveUpgrade),
	def(OpAdminAdd, "loopx.admin.add/v1", "Add an admin to the store (or replace an admin's key); the first admin closes an open store.", AddAdmin, resolveAdminAdd),
	def(OpAdminRemove, "loopx.admin.remove/v1", "Remove an admin from the store (by an admin; never the last).", RemoveAdmin, nil),
	def(OpClockReset, "loopx.store.clock-reset/v1", "Recover a store whose head is dated in the future: decided at this machine's clock, it brings future expiries back to one TTL from now.", ClockReset, nil).rewinding(),
	def(OpGoalCreate, "loopx.goal.create/v1", "Create a goal.", CreateGoal, resolveGoalCreate),
	def(OpGoalArchive, "loopx.goal.archive/v1", "Archive a goal (named explicitly): its records stay, mutations are refused.", ArchiveGoal, nil),
	def(OpGoalUnarchive, "loopx.goal.unarchive/v1", "Unarchive an archived goal (named explicitly).", UnarchiveGoal, nil),
	def(OpAgentRegister, "loopx.agent.register/v1", "Register an agent in a goal.", RegisterAgent, resolveRegister),
	def(OpAgentUnregister, "loopx.agent.unregister/v1", "Unregister an agent; its leases stop being effective.", UnregisterAgent, resolveUnregister),
	def(OpAgentRotateKey, "loopx.agent.rotate-key/v1", "Replace (or give) an agent's signing key: by the agent itself (signed with its old key) or by an orchestrator with reassign authority.", RotateKey, resolveRotateKey),
	def(OpTodoAdd, "loopx.todo.add/v1", "Add a todo to a goal.", AddTodo, resolveAdd),
	// ready-claim/v1 and claim/v1 re-claimed without a TTL by dropping the
	// claim's TTL; update/v1 let a scope agent take a delegated claim as a
	// plain update (v2: a reassignment). See docs/DECISIONS.md.
	def(OpTodoReady, "loopx.todo.ready-claim/v1", "Claim the first todo the agent may take now (optionally acquiring its lease), atomically (superseded by v2: a re-claim without a TTL dropped the claim's TTL).", ReadyClaim, resolveReadyClaim).decidedBy(1),
	def(OpTodoReady, "loopx.todo.ready-claim/v2", "Claim the first todo the agent may take now (optionally acquiring its lease), atomically.", ReadyClaim, resolveReadyClaim),
	def(OpTodoClaim, "loopx.todo.claim/v1", "Claim a todo (optionally acquiring its task lease in the same commit) (superseded by v2: a re-claim without a TTL dropped the claim's TTL).", Claim, resolveClaim).decidedBy(1),
	def(OpTodoClaim, "loopx.todo.claim/v2", "Claim a todo (optionally acquiring its task lease in the same commit).", Claim, resolveClaim),
	def(OpTodoUpdate, "loopx.todo.update/v1", "Update a todo: text, note, priority, exclusions, claim (superseded by v2: a scope agent could take a delegated claim).", Update, resolveUpdate).decidedBy(1),
	def(OpTodoUpdate, "loopx.todo.update/v2", "Update a todo: text, note, priority, exclusions, claim.", Update, resolveUpdate),
	def(OpTodoComplete, "loopx.todo.complete/v1", "Complete a todo; a verified lease is released in the same commit.", Complete, resolveComplete),
	def(OpTodoSupersede, "loopx.todo.supersede/v1", "Close a todo as superseded.", Supersede, resolveSupersede),
	def(OpLeaseAcquire, "loopx.task-lease.acquire/v1", "Start a new execution on a todo (or take over after expiry or release).", Acquire, resolveAcquire),
	def(OpLeaseRenew, "loopx.task-lease.renew/v1", "Extend the current execution's lease.", Renew, resolveRenew),
	def(OpLeaseTransfer, "loopx.task-lease.transfer/v1", "Hand the execution to another agent.", Transfer, resolveTransfer).
		with(nil, func(req any) bool { return !req.(*TransferRequest).TransferClaim }),
	// transfer-claim/v1 recorded Loopx-Claim-Moved: true when the claim did
	// not move (the receiver held it already).
	def(OpLeaseTransfer, "loopx.task-lease.transfer-claim/v1", "Hand the execution and the todo's claim to another agent in one commit (hard_lease goals) (superseded by v2: the audit trail said the claim moved when the receiver held it already).", Transfer, resolveTransfer).
		with(func(req any) { req.(*TransferRequest).TransferClaim = true },
			func(req any) bool { return req.(*TransferRequest).TransferClaim }).decidedBy(1),
	def(OpLeaseTransfer, "loopx.task-lease.transfer-claim/v2", "Hand the execution and the todo's claim to another agent in one commit (hard_lease goals).", Transfer, resolveTransfer).
		with(func(req any) { req.(*TransferRequest).TransferClaim = true },
			func(req any) bool { return req.(*TransferRequest).TransferClaim }),
	def(OpLeaseRelease, "loopx.task-lease.release/v1", "End the current execution.", Release, resolveRelease),
}

// Operations returns the table, in order.
func Operations() []*Operation { return slices.Clone(operations) }

// Registry is a set of schemas a runtime understands. The default is the
// whole table; a narrower one models an older runtime (tests).
type Registry struct{ ops []*Operation }

// DefaultRegistry knows every schema of this build.
var DefaultRegistry = &Registry{ops: operations}

// NewRegistry keeps the operations whose schema keep accepts.
func NewRegistry(keep func(*Operation) bool) *Registry {
	r := &Registry{}
	for _, op := range operations {
		if keep(op) {
			r.ops = append(r.ops, op)
		}
	}
	return r
}

// Lookup returns the operation of a schema id.
func (r *Registry) Lookup(schema string) *Operation {
	for _, op := range r.ops {
		if op.Schema == schema {
			return op
		}
	}
	return nil
}

// Call is a request bound to its operation: Req points at a request struct.
type Call struct {
	Op  *Operation
	Req any
}

// CallOf binds a request value (a request struct or a pointer to one) to its
// operation. It panics on a type no operation takes: that is a programming
// error, not input.
func CallOf(req any) Call {
	rv := reflect.ValueOf(req)
	if rv.Kind() != reflect.Pointer {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		rv = p
	}
	for _, op := range operations {
		if op.typ == rv.Type().Elem() && (op.matches == nil || op.matches(rv.Interface())) && op.rules == rulesVersion(rv.Interface()) {
			return Call{Op: op, Req: rv.Interface()}
		}
	}
	panic(fmt.Sprintf("lease: no operation takes %s", rv.Type()))
}

// Current returns the call as this build decides a new request: a copy
// (as Clone), moved from an older schema version whose decision has changed
// since to the current version of its operation. A request of an older
// client, of `loopx apply` or recorded on an offline commit is decided by
// the current rules and recorded in the current version; only the
// re-verification of a recorded commit (Redecide) keeps its version's rules.
func (c Call) Current() Call {
	n := c.Clone()
	if c.Op.rules == 0 {
		return n
	}
	n.Req.(ruled).rulesOf().version = 0
	return CallOf(n.Req)
}

// Clone returns a call on a shallow copy of the request, for one attempt of
// a decision (resolvers assign fields; they never modify shared slices).
func (c Call) Clone() Call {
	p := reflect.New(c.Op.typ)
	p.Elem().Set(reflect.ValueOf(c.Req).Elem())
	return Call{Op: c.Op, Req: p.Interface()}
}

// Resolve fills the request's omitted fields from the head it will be
// decided on.
func (c Call) Resolve(v *View, d Defaults, now time.Time) error {
	return c.Op.resolve(v, d, now, c.Req)
}

// Decide runs the operation's decision.
func (c Call) Decide(v *View, now time.Time) (*Outcome, error) { return c.Op.decide(v, c.Req, now) }

// Encode returns the canonical JSON of the request: one line, sorted keys,
// empty fields omitted, "schema" included, no HTML escaping.
func (c Call) Encode() ([]byte, error) {
	raw, err := marshalPlain(c.Req)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	schema, _ := marshalPlain(c.Op.Schema)
	m[SchemaField] = schema
	return canonicalObject(m)
}

func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// canonicalObject writes m with sorted keys, nested objects canonical too.
func canonicalObject(m map[string]json.RawMessage) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshalPlain(k)
		b.Write(kb)
		b.WriteByte(':')
		v := m[k]
		if len(v) > 0 && v[0] == '{' {
			var sub map[string]json.RawMessage
			if err := json.Unmarshal(v, &sub); err != nil {
				return nil, err
			}
			if v, _ = canonicalObject(sub); v == nil {
				return nil, errors.New("lease: bad nested object")
			}
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MaxRequestSize is the largest request `loopx apply` and the MCP tools
// read: 1 MiB (contract section 8). It is a limit of the wire: requests
// recorded on state commits are decoded whatever their size (a todo text
// that fits a record may take more bytes once escaped in JSON).
const MaxRequestSize = 1 << 20

// DecodeWireRequest decodes a request received on the wire (`loopx apply`,
// the MCP tools): at most MaxRequestSize bytes, then as DecodeRequest.
func DecodeWireRequest(data []byte) (Call, error) {
	if err := CheckRequestSize(len(data)); err != nil {
		return Call{}, err
	}
	return DecodeRequest(data)
}

// CheckRequestSize refuses a request of n bytes over MaxRequestSize
// (invalid_request).
func CheckRequestSize(n int) error {
	if n > MaxRequestSize {
		return Errorf(CodeInvalidRequest, "the request is over the %d-byte (1 MiB) limit of a request", MaxRequestSize).With("limit", MaxRequestSize)
	}
	return nil
}

// DecodeRequest decodes one request in the wire schema, strictly, with the
// schemas of this build.
func DecodeRequest(data []byte) (Call, error) { return DefaultRegistry.Decode(data) }

// Decode decodes one request strictly: valid UTF-8, one JSON object and
// nothing after it, no key twice in any object (CheckStrictJSON); the
// schema must be one r knows, every field must be one of its schema (exact
// spelling) and of the right type (a wrong type of an identifier, TTL or
// scope field is that field's own code, FieldCode).
func (r *Registry) Decode(data []byte) (Call, error) {
	if err := CheckStrictJSON(data); err != nil {
		return Call{}, requestError("", "the request is not one JSON object: %v", err)
	}
	var top map[string]json.RawMessage
	if err := decodeOne(data, &top); err != nil {
		return Call{}, requestError("", "the request is not one JSON object: %v", err)
	}
	if top == nil {
		return Call{}, requestError("", "the request is not one JSON object")
	}
	rawSchema, ok := top[SchemaField]
	if !ok {
		return Call{}, requestError(SchemaField, "the request names no schema (a %q field such as %q)", SchemaField, operations[len(operations)-1].Schema)
	}
	var schema string
	if err := json.Unmarshal(rawSchema, &schema); err != nil {
		return Call{}, requestError(SchemaField, "schema must be a string")
	}
	op := r.Lookup(schema)
	if op == nil {
		return Call{}, requestError(SchemaField, "unknown request schema %q (this loopx knows: %s)", schema, strings.Join(r.schemas(), ", ")).With("schema", schema)
	}
	delete(top, SchemaField)
	req := reflect.New(op.typ)
	if err := decodeStrict(top, req, ""); err != nil {
		return Call{}, err
	}
	if op.fixed != nil {
		op.fixed(req.Interface())
	}
	return Call{Op: op, Req: req.Interface()}, nil
}

// CheckStrictJSON checks what encoding/json lets through: data must be
// valid UTF-8, exactly one JSON value with nothing but white space after
// it, and no object in it may hold a key twice (after unescaping: "a" and
// "\u0061" are the same key). encoding/json would keep the last of two
// keys, read only the first value of a stream, and replace invalid bytes;
// a request is refused instead, so that what is decided is exactly what
// was sent.
func CheckStrictJSON(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("it is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys    map[string]bool // nil for an array
		wantKey bool
	}
	var stack []frame
	done := false // the top-level value is complete
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if !done {
				return errors.New("it ends before its value does")
			}
			return nil
		}
		if done {
			return errors.New("data after the JSON object")
		}
		if err != nil {
			return err
		}
		// A value ends when it is a scalar, or a container's closing
		// delimiter; then the enclosing object wants a key again.
		valueEnds := true
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{keys: map[string]bool{}, wantKey: true})
				valueEnds = false
			case '[':
				stack = append(stack, frame{})
				valueEnds = false
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].wantKey {
				if stack[n-1].keys[t] {
					return fmt.Errorf("the key %q appears twice in one object", t)
				}
				stack[n-1].keys[t] = true
				stack[n-1].wantKey = false
				valueEnds = false
			}
		case json.Number:
			// encoding/json refuses a number beyond float64's range when it
			// decodes into an interface (and beyond an int's in a field).
			if _, err := strconv.ParseFloat(string(t), 64); err != nil {
				return fmt.Errorf("the number %.40s is out of range", string(t))
			}
		}
		if valueEnds {
			if n := len(stack); n > 0 {
				if stack[n-1].keys != nil {
					stack[n-1].wantKey = true
				}
			} else {
				done = true
			}
		}
	}
}

// FieldCode is the code of a request field given a value of the wrong
// type: the identifier's own code for identifier fields (goal ids, todo
// ids, agent ids, execution keys), TTLs and write scopes, as a value of
// the right type but malformed gets; invalid_request for the others. name
// is the field's wire name (the last element of a nested one); t the
// request type it belongs to (nil: judge by the name alone).
func FieldCode(t reflect.Type, name string) Code {
	if c, ok := fieldCodeOverrides[fieldKey{t, name}]; ok {
		return c
	}
	if c, ok := fieldCodes[name]; ok {
		return c
	}
	return CodeInvalidRequest
}

type fieldKey struct {
	t    reflect.Type
	name string
}

// fieldCodes maps the wire names of identifier, TTL and scope fields to
// their codes.
var fieldCodes = map[string]Code{
	"goal_id":                    CodeInvalidGoalID,
	"todo_id":                    CodeInvalidTodoID,
	"depends_on":                 CodeInvalidTodoID,
	"agent_id":                   CodeInvalidAgentID,
	"owner":                      CodeInvalidAgentID,
	"new_owner":                  CodeInvalidAgentID,
	"claimed_by":                 CodeInvalidAgentID,
	"scope_agent_id":             CodeInvalidAgentID,
	"by_agent_id":                CodeInvalidAgentID,
	"bound_agent":                CodeInvalidAgentID,
	"excluded_agents":            CodeInvalidAgentID,
	"exclude_agents":             CodeInvalidAgentID,
	"admin_id":                   CodeInvalidAgentID,
	"by":                         CodeInvalidAgentID,
	"idempotency_key":            CodeInvalidIdempotencyKey,
	"new_idempotency_key":        CodeInvalidIdempotencyKey,
	"task_lease_idempotency_key": CodeInvalidIdempotencyKey,
	"ttl_seconds":                CodeInvalidTTL,
	"claim_ttl_minutes":          CodeInvalidTTL,
	"write_scopes":               CodeInvalidWriteScope,
	"required_write_scopes":      CodeInvalidWriteScope,
}

// fieldCodeOverrides are fields whose name means something else in one
// request: supersede's "by" names the replacing todo.
var fieldCodeOverrides = map[fieldKey]Code{
	{reflect.TypeFor[SupersedeRequest](), "by"}: CodeInvalidTodoID,
}

func (r *Registry) schemas() []string {
	var out []string
	for _, op := range r.ops {
		out = append(out, op.Schema)
	}
	return out
}

// decodeOne decodes exactly one JSON value from data.
func decodeOne(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON object")
	}
	return nil
}

func requestError(field, format string, args ...any) *Error {
	e := Errorf(CodeInvalidRequest, format, args...)
	if field != "" {
		e.With("field", field)
	}
	return e
}

// decodeStrict sets the fields of the struct that ptr points at from obj,
// refusing keys that are not exactly one of its JSON names and values of
// the wrong type. prefix names the enclosing field in errors.
func decodeStrict(obj map[string]json.RawMessage, ptr reflect.Value, prefix string) error {
	st := ptr.Elem()
	fields := jsonFields(st.Type())
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i, ok := fields[k]
		if !ok {
			return requestError(prefix+k, "unknown field %q in the request", prefix+k)
		}
		raw := obj[k]
		f := st.Field(i)
		if string(raw) == "null" {
			continue
		}
		sub := f.Type()
		if sub.Kind() == reflect.Pointer && sub.Elem().Kind() == reflect.Struct {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil || m == nil {
				return requestError(prefix+k, "field %q must be an object", prefix+k)
			}
			p := reflect.New(sub.Elem())
			if err := decodeStrict(m, p, prefix+k+"."); err != nil {
				return err
			}
			f.Set(p)
			continue
		}
		if err := json.Unmarshal(raw, f.Addr().Interface()); err != nil {
			return Errorf(FieldCode(st.Type(), k), "field %q must be %s", prefix+k, typeWord(sub)).With("field", prefix+k)
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's wire fields to their index.
func jsonFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := range t.NumField() {
		name := wireName(t.Field(i))
		if name != "" {
			out[name] = i
		}
	}
	return out
}

// wireName is a field's JSON name ("" when it is not on the wire).
func wireName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func typeWord(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeWord(t.Elem()), "a ") + "s"
	}
	return "a " + t.Kind().String()
}

// DecodeLegacyRequest decodes the offline request that loopx wrote before
// requests were versioned: {"op": NAME, "request": {Go field names...}}
// (base64 in the Loopx-Request trailer of offline commits). It maps the Go
// field names onto the wire names and decodes strictly, so stores in the
// field still sync.
func DecodeLegacyRequest(data []byte) (Call, error) {
	var rec struct {
		Op  string                     `json:"op"`
		Req map[string]json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return Call{}, requestError("", "the recorded request is not valid: %v", err)
	}
	name := rec.Op
	if name == "todo.ready-claim" {
		name = OpTodoReady
	}
	var op *Operation
	for _, o := range operations {
		if o.Name == name {
			op = o
			break
		}
	}
	if op == nil || name == OpStoreInit || name == OpStoreUpgrade {
		return Call{}, requestError("op", "operation %q cannot be replayed", rec.Op)
	}
	if op.Name == OpLeaseTransfer {
		if raw, ok := rec.Req["TransferClaim"]; ok {
			if string(raw) == "true" {
				op = DefaultRegistry.Lookup("loopx.task-lease.transfer-claim/v1")
			}
			delete(rec.Req, "TransferClaim")
		}
	}
	wire, err := legacyToWire(rec.Req, op.typ)
	if err != nil {
		return Call{}, err
	}
	req := reflect.New(op.typ)
	if err := decodeStrict(wire, req, ""); err != nil {
		return Call{}, err
	}
	if op.fixed != nil {
		op.fixed(req.Interface())
	}
	return Call{Op: op, Req: req.Interface()}, nil
}

// legacyToWire renames Go field names to wire names (nested structs too);
// a name that is neither is left for the strict decoder to refuse.
func legacyToWire(m map[string]json.RawMessage, t reflect.Type) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for k, raw := range m {
		f, ok := t.FieldByName(k)
		if !ok || wireName(f) == "" {
			out[k] = raw
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && string(raw) != "null" {
			var sub map[string]json.RawMessage
			if err := json.Unmarshal(raw, &sub); err != nil {
				return nil, requestError(k, "field %q must be an object", k)
			}
			conv, err := legacyToWire(sub, ft.Elem())
			if err != nil {
				return nil, err
			}
			raw, _ = json.Marshal(conv)
		}
		if ft.Kind() != reflect.Pointer && isZeroJSON(raw) {
			continue
		}
		out[wireName(f)] = raw
	}
	return out, nil
}

func isZeroJSON(raw json.RawMessage) bool {
	switch string(raw) {
	case `""`, "0", "false", "null", "[]":
		return true
	}
	return false
}
