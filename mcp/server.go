// Package mcp is loopx's Model Context Protocol server: the operations of
// the agent's loop as MCP tools, served on stdio by `loopx mcp`.
//
// A tool is one operation, and its arguments are that operation's request:
// the mutation tools (ready with claim, claim, acquire, renew, transfer,
// release, complete, update) take the fields of a request schema of the
// operation table (docs/request-schema.json) without "schema" — the tool
// names it — and go through the very path of `loopx apply`
// (lease.DecodeRequest, then Store.Apply), so their results, refusals and
// commits are those of the command line, byte for byte. The read tools
// (ready, show, inspect, status, log) call the Store methods the commands
// call. A few arguments are the tool's own, not the request's:
// ready's claim, transfer's transfer_claim (it selects the
// loopx.task-lease.transfer-claim/v2 schema) and wait_seconds on ready and
// acquire (the commands' --wait).
//
// A result is the command's JSON envelope, as text content and as
// structured content. A refusal is a tool error (isError) whose content is
// the command's error object, {"ok":false,"error":{"code":...}}, never a
// protocol error: agents branch on the code as they do on the CLI's.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopx-dev/loopx"
	"github.com/loopx-dev/loopx/lease"
)

// Options configure a server.
type Options struct {
	// Open opens the store for one tool call; the server closes it when
	// the call is answered. A store that cannot be opened (none yet, a bad
	// registry) is that call's refusal, so the server starts anywhere and
	// says why a tool cannot work.
	Open func() (*loopx.Store, error)
	// Goal is the goal of calls that give no goal_id (`loopx mcp
	// --goal-id`), as the commands' --goal-id; empty leaves it to the
	// store's default goal.
	Goal string
	// Version is the server's version in the MCP handshake.
	Version string
}

// Instructions tell a client what the tools are for and how they answer.
const Instructions = `loopx divides work between agents with todos, claims and fenced task leases kept in Git.
The loop: ready (claim: true takes the first todo you may take, optionally with its task lease) or claim;
acquire the task lease (owner, a new idempotency_key per execution, ttl_seconds); renew it at about a third
of its TTL with expected_version = the lease's current version; finish with complete (pass task_lease
{idempotency_key, expected_version} while the lease is in force), or hand over with transfer, or give it up
with release. status says who holds what; show, inspect and log read a todo, its lease and the audit trail.
A result is loopx's JSON envelope ({"ok":true,...}); a refusal is a tool error whose text is
{"ok":false,"error":{"code":...,"message":...}}. The codes store_busy, store_conflict, remote_unavailable,
store_io and clock_skew are transient: retry with the same arguments. A mutation repeated with the same
arguments is a replay (status "replayed"), never a second change.`

// NewServer returns an MCP server with loopx's tools.
func NewServer(o Options) *sdk.Server {
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "loopx", Title: "loopx", Version: version},
		&sdk.ServerOptions{Instructions: Instructions})
	for _, t := range tools() {
		s.AddTool(t.sdkTool(), handler(o, t))
	}
	return s
}

// Serve runs the server on t until the client's input ends and every call
// read is answered, or until ctx is done (which is not an error).
func Serve(ctx context.Context, o Options, t sdk.Transport) error {
	err := NewServer(o).Run(ctx, answering{t})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// call is one tool call's arguments, with the server's defaults.
type call struct {
	args map[string]json.RawMessage
	goal string // Options.Goal
}

// tool is one MCP tool.
type tool struct {
	name, title, desc string
	schema            map[string]any
	readOnly          bool
	idempotent        bool
	run               func(ctx context.Context, s *loopx.Store, c *call) (loopx.Reply, error)
}

func (t tool) sdkTool() *sdk.Tool {
	no := false
	a := &sdk.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, OpenWorldHint: &no}
	if !t.readOnly {
		a.IdempotentHint = t.idempotent
		a.DestructiveHint = &no // every change is a new commit; history keeps the old state
	}
	return &sdk.Tool{Name: t.name, Title: t.title, Description: t.desc, InputSchema: t.schema, Annotations: a}
}

// handler answers calls of t: decode the arguments, open the store, run,
// close, and render the result or the refusal.
func handler(o Options, t tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("loopx: internal error in tool %s: %v", t.name, p)
			}
		}()
		args, err := decodeObject(req.Params.Arguments)
		if err != nil {
			return errorResult(err), nil
		}
		if o.Open == nil {
			return errorResult(lease.Errorf(lease.CodeStoreNotInitialized, "the server has no store")), nil
		}
		s, err := o.Open()
		if err != nil {
			return errorResult(err), nil
		}
		defer s.Close()
		r, err := t.run(ctx, s, &call{args: args, goal: o.Goal})
		if err != nil {
			return errorResult(err), nil
		}
		return okResult(r), nil
	}
}

// decodeObject reads a call's arguments: one JSON object (absent or null
// is {}), read as strictly as `loopx apply` reads a request: at most 1 MiB,
// valid UTF-8, no key twice (lease.CheckStrictJSON), else invalid_request.
func decodeObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if err := lease.CheckRequestSize(len(raw)); err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		return map[string]json.RawMessage{}, nil
	}
	if err := lease.CheckStrictJSON(raw); err != nil {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "the tool's arguments are not one JSON object: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "the tool's arguments are not one JSON object")
	}
	return m, nil
}

// okResult carries the command's JSON envelope as text and as structured
// content.
func okResult(r loopx.Reply) *sdk.CallToolResult {
	data, err := json.Marshal(r)
	if err != nil {
		return errorResult(err)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(data)}}, StructuredContent: json.RawMessage(data)}
}

// errorResult is a refusal as a tool error carrying the command's error
// object. An error that is not a contract refusal is invalid_request, as
// the command line reports it.
func errorResult(err error) *sdk.CallToolResult {
	data := ErrorJSON(err)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(data)}}, StructuredContent: json.RawMessage(data)}
}

// ErrorJSON is the JSON the command line prints for err:
// {"ok":false,"error":{"code":...,"message":...,<details>}}.
func ErrorJSON(err error) []byte {
	le, ok := lease.AsError(err)
	if !ok {
		le = lease.Errorf(lease.CodeInvalidRequest, "%s", err.Error())
	}
	obj := map[string]any{}
	maps.Copy(obj, le.Details)
	obj["code"] = le.Code
	obj["message"] = le.Message
	data, _ := json.Marshal(map[string]any{"ok": false, "error": obj})
	return data
}

// The tools' own arguments (not fields of a request).
const (
	argClaim         = "claim"
	argTransferClaim = "transfer_claim"
	argWait          = "wait_seconds"
)

const goalDesc = "goal id (default: the server's --goal-id, else the store's default goal)"

// requestSchema is the input schema of a tool that takes the request of
// schema id: the request's JSON Schema without "schema" (the tool names
// it), with extra arguments of the tool's own.
func requestSchema(id string, extra map[string]any) map[string]any {
	op := lease.DefaultRegistry.Lookup(id)
	if op == nil {
		panic("mcp: unknown request schema " + id)
	}
	s := op.InputSchema()
	props := s["properties"].(map[string]any)
	delete(props, lease.SchemaField)
	if g, ok := props["goal_id"].(map[string]any); ok {
		g["description"] = goalDesc
	}
	maps.Copy(props, extra)
	s["required"] = slices.DeleteFunc(s["required"].([]string), func(f string) bool { return f == lease.SchemaField })
	delete(s, "title")
	s["description"] = "The fields of a " + id + " request (docs/request-schema.json)."
	return s
}

// request builds the request JSON of schema id from the call's
// arguments: the server's goal when none is given, and the schema. A
// "schema" argument is refused: the tool names it.
func (c *call) request(id string) ([]byte, error) {
	if _, ok := c.args[lease.SchemaField]; ok {
		return nil, lease.Errorf(lease.CodeInvalidRequest, "unknown field %q in the request: the tool sets the schema (%s); leave it out", lease.SchemaField, id).With("field", lease.SchemaField)
	}
	m := maps.Clone(c.args)
	if c.goal != "" && isEmpty(m["goal_id"]) {
		m["goal_id"], _ = json.Marshal(c.goal)
	}
	m[lease.SchemaField], _ = json.Marshal(id)
	return json.Marshal(m)
}

// apply decodes the call's request of schema id strictly and applies it
// (`loopx apply`'s path).
func (c *call) apply(s *loopx.Store, id string) (loopx.Reply, error) {
	data, err := c.request(id)
	if err != nil {
		return nil, err
	}
	return s.ApplyJSON(data)
}

func isEmpty(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", `""`:
		return true
	}
	return false
}

// popBool removes a boolean argument of the tool's own.
func (c *call) popBool(name string) (bool, error) {
	raw, ok := c.args[name]
	delete(c.args, name)
	if !ok || string(raw) == "null" {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fieldError(name, "field %q must be true or false", name)
	}
	return b, nil
}

// popWait removes wait_seconds: how long a request may wait (0: decide
// once).
func (c *call) popWait() (time.Duration, bool, error) {
	raw, ok := c.args[argWait]
	delete(c.args, argWait)
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, false, fieldError(argWait, "field %q must be an integer", argWait)
	}
	if n < 0 {
		return 0, false, fieldError(argWait, "%s %d: want 0 or more seconds", argWait, n)
	}
	return time.Duration(n) * time.Second, true, nil
}

func fieldError(field, format string, args ...any) *lease.Error {
	return lease.Errorf(lease.CodeInvalidRequest, format, args...).With("field", field)
}

// readArgs decodes a read tool's arguments strictly into the struct that
// ptr points at: every key must be one of its JSON names, of the right
// type (null is absent), as lease.DecodeRequest does for requests.
func readArgs(c *call, ptr any) error {
	v := reflect.ValueOf(ptr).Elem()
	fields := map[string]int{}
	for i := range v.NumField() {
		fields[jsonName(v.Type().Field(i))] = i
	}
	for _, k := range slices.Sorted(maps.Keys(c.args)) {
		i, ok := fields[k]
		if !ok {
			return fieldError(k, "unknown field %q in the request", k)
		}
		raw := c.args[k]
		if string(raw) == "null" {
			continue
		}
		f := v.Field(i)
		if err := json.Unmarshal(raw, f.Addr().Interface()); err != nil {
			// A wrong type in an identifier is that identifier's code, as
			// in a request (lease.FieldCode).
			return lease.Errorf(lease.FieldCode(nil, k), "field %q must be %s", k, typeWord(f.Kind())).With("field", k)
		}
	}
	if g := v.FieldByName("Goal"); g.IsValid() && g.String() == "" {
		g.SetString(c.goal)
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func typeWord(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "an integer"
	}
	return "a string"
}

// argsSchema is the closed JSON Schema of a read tool's argument struct
// (json, desc and required tags, as the request types').
func argsSchema(v any, desc string) map[string]any {
	t := reflect.TypeOf(v)
	props := map[string]any{}
	required := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		p := map[string]any{"type": jsonType(f.Type.Kind()), "description": f.Tag.Get("desc")}
		props[jsonName(f)] = p
		if f.Tag.Get("required") == "true" {
			required = append(required, jsonName(f))
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required,
		"additionalProperties": false, "description": desc}
}

func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	}
	return "string"
}
