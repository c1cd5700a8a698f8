package lease

import (
	"encoding/json"
	"reflect"
	"strings"
)

// JSON Schema (draft 2020-12) of the request schemas, generated from the Go
// request types: docs/request-schema.json is this document (a test keeps
// it current), and the MCP tools take their input schemas from it.

// InputSchema is the JSON Schema of one operation's request object.
func (op *Operation) InputSchema() map[string]any {
	s := objectSchema(op.typ)
	props := s["properties"].(map[string]any)
	props[SchemaField] = map[string]any{"const": op.Schema, "description": "the request schema and its version"}
	s["required"] = append([]string{SchemaField}, s["required"].([]string)...)
	s["title"] = op.Schema
	s["description"] = op.Summary + " (operation " + op.Name + ")"
	return s
}

func objectSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		name := wireName(f)
		if name == "" {
			continue
		}
		p := typeSchema(f.Type)
		if d := f.Tag.Get("desc"); d != "" {
			p["description"] = d
		}
		props[name] = p
		if f.Tag.Get("required") == "true" {
			required = append(required, name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func typeSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	case reflect.Struct:
		return objectSchema(t)
	}
	return map[string]any{}
}

// SchemaDocument is the JSON Schema document of every request schema: a
// request is exactly one of them, told apart by "schema".
func SchemaDocument() []byte {
	defs := map[string]any{}
	var refs []any
	for _, op := range operations {
		key := strings.NewReplacer("/", "-", ".", "-").Replace(strings.TrimPrefix(op.Schema, "loopx."))
		defs[key] = op.InputSchema()
		refs = append(refs, map[string]any{"$ref": "#/$defs/" + key})
	}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://loopx.dev/schemas/request.json",
		"title":       "loopx request",
		"description": "One loopx request: the JSON of `loopx apply`, of the MCP tools and of the Loopx-Request trailer of every state commit (contract section 7). Generated from the Go request types (lease/jsonschema.go); do not edit.",
		"oneOf":       refs,
		"$defs":       defs,
	}
	out, _ := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n')
}
