package client

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestTypesMatchTheOpenAPIDocument checks every client type against its
// schema in docs/openapi.json: the same JSON keys at every level, and Go
// types of the schema's JSON types. A key the server adds to the document
// and the client lacks (or the reverse) fails here.
func TestTypesMatchTheOpenAPIDocument(t *testing.T) {
	data, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas
	tests := []struct {
		schema string
		typ    any
	}{
		{"Resources", Resources{}},
		{"Share", Share{}},
		{"Pool", Pool{}},
		{"PoolBody", Pool{}},
		{"PoolOrchid", PoolOrchid{}},
		{"PoolOrchidList", PoolOrchidList{}},
		{"PoolHistory", PoolHistory{}},
		{"OperationStart", OperationSpec{}},
		{"OperationStarted", OperationStarted{}},
		{"OperationPatch", OperationPatch{}},
		{"Operation", Operation{}},
		{"OperationOrchid", OperationOrchid{}},
		{"OperationList", OperationPage{}},
		{"Heartbeat", Heartbeat{}},
		{"HeartbeatResponse", HeartbeatResponse{}},
		{"NodeOrchid", NodeOrchid{}},
		{"SolveElement", SolveElement{}},
		{"SolveResult", SolveResult{}},
		{"Health", Health{}},
		{"Version", Version{}},
		{"Ready", Ready{}},
		{"NodeSummary", NodeSummary{}},
		{"NodeList", NodePage{}},
		{"BatchedHeartbeat", NodeHeartbeat{}},
		{"BatchedHeartbeatResponse", NodeHeartbeatResult{}},
		{"Explanation", Explanation{}},
		{"Finding", Finding{}},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			m := schemaMatcher{t: t, schemas: schemas}
			m.match(tt.schema, schemas[tt.schema], reflect.TypeOf(tt.typ))
		})
	}
	// PoolPatch takes what PUT takes, but the name.
	t.Run("PoolBody/PoolPatch", func(t *testing.T) {
		body := schemas["PoolBody"].(map[string]any)["properties"].(map[string]any)
		want := []string{}
		for k := range body {
			if k != "name" {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		if got := jsonFields(reflect.TypeOf(PoolPatch{})); !slices.Equal(sortedKeys(got), want) {
			t.Fatalf("PoolPatch keys %v, want %v", sortedKeys(got), want)
		}
	})
}

type schemaMatcher struct {
	t       *testing.T
	schemas map[string]any
}

// resolve follows $ref and picks the non-null member of an anyOf. A schema
// with both a $ref and properties is the referenced one with its properties
// added.
func (m schemaMatcher) resolve(s map[string]any) map[string]any {
	for {
		if ref, ok := s["$ref"].(string); ok {
			base := m.resolve(m.schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any))
			own, ok := s["properties"].(map[string]any)
			if !ok {
				s = base
				continue
			}
			merged := map[string]any{}
			for k, v := range base["properties"].(map[string]any) {
				merged[k] = v
			}
			for k, v := range own {
				merged[k] = v
			}
			s = map[string]any{"type": "object", "properties": merged}
			continue
		}
		if alts, ok := s["anyOf"].([]any); ok {
			for _, a := range alts {
				if a.(map[string]any)["type"] != "null" {
					s = a.(map[string]any)
					break
				}
			}
			continue
		}
		return s
	}
}

// schemaType is the JSON type of s, null left out of a type list.
func schemaType(s map[string]any) string {
	switch v := s["type"].(type) {
	case string:
		return v
	case []any:
		for _, x := range v {
			if x != "null" {
				return x.(string)
			}
		}
	}
	return ""
}

// elem strips pointers and Optional[T] off t.
func elem(t reflect.Type) reflect.Type {
	for {
		switch {
		case t.Kind() == reflect.Pointer:
			t = t.Elem()
		case t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "Optional["):
			t = t.Field(0).Type
		default:
			return t
		}
	}
}

func (m schemaMatcher) match(path string, raw any, t reflect.Type) {
	s, ok := raw.(map[string]any)
	if !ok {
		m.t.Fatalf("%s: no schema", path)
	}
	isLimits := s["$ref"] == "#/components/schemas/Resources" || refInAnyOf(s) == "#/components/schemas/Resources"
	s = m.resolve(s)
	t = elem(t)
	if isLimits && t == reflect.TypeOf(Limits{}) {
		return // Limits holds any resource key of Resources
	}
	typ := schemaType(s)
	switch typ {
	case "object":
		if props, ok := s["properties"].(map[string]any); ok {
			if t.Kind() != reflect.Struct {
				m.t.Errorf("%s: an object with properties, Go type %v", path, t)
				return
			}
			fields := jsonFields(t)
			if got, want := sortedKeys(fields), sortedKeys(props); !slices.Equal(got, want) {
				m.t.Errorf("%s: Go keys %v, schema keys %v", path, got, want)
				return
			}
			for k, p := range props {
				m.match(path+"."+k, p, fields[k])
			}
			return
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			if t.Kind() != reflect.Map {
				m.t.Errorf("%s: an object of values, Go type %v", path, t)
				return
			}
			m.match(path+"{}", ap, t.Elem())
		}
	case "array":
		if t.Kind() != reflect.Slice {
			m.t.Errorf("%s: an array, Go type %v", path, t)
			return
		}
		m.match(path+"[]", s["items"], t.Elem())
	case "string":
		m.kind(path, t, reflect.String)
	case "number":
		m.kind(path, t, reflect.Float64)
	case "integer":
		m.kind(path, t, reflect.Int, reflect.Int64, reflect.Uint64)
	case "boolean":
		m.kind(path, t, reflect.Bool)
	default:
		m.t.Errorf("%s: schema type %q", path, typ)
	}
}

func refInAnyOf(s map[string]any) any {
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if r, ok := a.(map[string]any)["$ref"]; ok {
				return r
			}
		}
	}
	return nil
}

func (m schemaMatcher) kind(path string, t reflect.Type, kinds ...reflect.Kind) {
	if !slices.Contains(kinds, t.Kind()) {
		m.t.Errorf("%s: Go type %v, want kind %v", path, t, kinds)
	}
}

// jsonFields maps t's JSON keys to their Go types, embedded structs'
// fields included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		out[name] = f.Type
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
