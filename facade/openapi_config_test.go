package facade

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/wire"
)

// The tree config's schemas of docs/openapi.json are the settings tables of
// core/fairshare and core/schedule written as JSON Schema: configSchemas
// derives them from the tables and TestOpenAPIConfigSchemas compares them
// with the document, so that a setting added to a table fails the test
// until the document describes it (the failure prints the schema to paste).

// configSchemaNames are the generated schemas: the snapshot's config (the
// fair-share table), the body of PATCH /api/v1/config (both tables, every
// key optional) and the answer of GET /api/v1/config (every key the encoder
// writes, all required).
var configSchemaNames = []string{"FairShareConfig", "TreeConfigPatch", "TreeConfig"}

// configSchemas returns the generated schemas by name.
func configSchemas() map[string]any {
	fs := rowsOf(fairshare.Settings())
	all := append(fs, rowsOf(schedule.Settings())...)
	return map[string]any{
		"FairShareConfig": settingsObject(fs, false,
			"The fair-share settings of a snapshot (the fair-share table of docs/configuration.md); keys left out take their defaults."),
		"TreeConfigPatch": settingsObject(all, false,
			"A change of the tree config: any of its keys (docs/configuration.md); the others keep their values."),
		"TreeConfig": settingsObject(all, true,
			"The tree config as the server runs it: every key of docs/configuration.md but the ignored ones."),
	}
}

// rowsOf returns the Specs of a settings table.
func rowsOf[C any](rows []settings.Setting[C]) []settings.Spec {
	specs := make([]settings.Spec, len(rows))
	for i := range rows {
		specs[i] = rows[i].Spec
	}
	return specs
}

// settingsObject is the object schema of the rows, a dotted key's row a
// property of its nested object. answer: the schema of what GET answers
// (ignored keys left out, every other key required).
func settingsObject(rows []settings.Spec, answer bool, doc string) map[string]any {
	top := map[string]any{"type": "object", "additionalProperties": false, "description": doc}
	props := map[string]any{}
	var required []any
	nested := map[string]map[string]any{}
	for i := range rows {
		st := &rows[i]
		if answer && st.Ignored {
			continue
		}
		obj := st.Object()
		if obj == "" {
			props[st.Key] = settingSchema(st)
			if answer {
				required = append(required, st.Key)
			}
			continue
		}
		n := nested[obj]
		if n == nil {
			n = map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
			nested[obj] = n
			props[obj] = n
			if answer {
				required = append(required, obj)
			}
		}
		n["properties"].(map[string]any)[st.Member()] = settingSchema(st)
		if answer {
			r, _ := n["required"].([]any)
			n["required"] = append(r, st.Member())
		}
	}
	top["properties"] = props
	if answer {
		top["required"] = required
	}
	return top
}

// settingSchema is one setting's schema: its type, range, choices, default
// and what it does.
func settingSchema(st *settings.Spec) map[string]any {
	s := map[string]any{}
	var typ string
	switch st.Kind {
	case settings.KindDuration, settings.KindNumber:
		typ = "number"
	case settings.KindCount:
		typ = "integer"
	case settings.KindBool:
		typ = "boolean"
	case settings.KindChoice:
		typ = "string"
		enum := []any{}
		for _, c := range st.Choices {
			enum = append(enum, c)
		}
		if st.Nullable {
			enum = append(enum, nil)
		}
		s["enum"] = enum
	case settings.KindResources, settings.KindPartialResources:
		ref := map[string]any{"$ref": "#/components/schemas/Resources"}
		if st.Nullable {
			s["anyOf"] = []any{ref, map[string]any{"type": "null"}}
		} else {
			s = ref
		}
	}
	if typ != "" {
		if st.Nullable {
			s["type"] = []any{typ, "null"}
		} else {
			s["type"] = typ
		}
	}
	if typ == "number" || typ == "integer" {
		if st.MinOpen {
			s["exclusiveMinimum"] = st.Min
		} else if !math.IsInf(st.Min, -1) {
			s["minimum"] = st.Min
		}
		if !math.IsInf(st.Max, 1) {
			s["maximum"] = st.Max
		}
	}
	s["default"] = settingDefault(st)
	doc := st.Doc
	if st.Nullable && st.NullMeans != "" {
		doc += " null: " + st.NullMeans + "."
	}
	if st.Startup {
		doc += " Start-up only: a PATCH may repeat the current value, never change it."
	}
	if st.Ignored {
		doc += " Ignored: accepted and left out of GET /api/v1/config."
	}
	s["description"] = doc
	return s
}

// settingDefault is a setting's default as GET /api/v1/config writes it.
func settingDefault(st *settings.Spec) any {
	v := st.Default
	if v.Null {
		return nil
	}
	switch st.Kind {
	case settings.KindDuration, settings.KindNumber, settings.KindCount:
		return v.Number
	case settings.KindBool:
		return v.Bool
	case settings.KindChoice:
		return v.Choice
	case settings.KindResources:
		return jsonValue(wire.AppendResources(nil, &v.Resources))
	case settings.KindPartialResources:
		return jsonValue(wire.AppendPartialResources(nil, &v.Partial))
	}
	panic("BUG: a setting of unknown kind")
}

func jsonValue(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic("BUG: an encoder wrote invalid JSON: " + string(b))
	}
	return v
}

// TestOpenAPIConfigSchemas: the tree config's schemas in docs/openapi.json
// are the settings tables'.
func TestOpenAPIConfigSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	schemas := doc.schemas()
	want := configSchemas()
	for _, name := range configSchemaNames {
		got := schemas[name]
		w := jsonValue(mustJSON(want[name])) // numbers as float64, as the document's
		if !reflect.DeepEqual(got, w) {
			out, _ := json.MarshalIndent(want[name], "      ", "  ")
			t.Errorf("docs/openapi.json: components.schemas.%s is not the settings tables' (core/fairshare, core/schedule); want\n      %q: %s",
				name, name, strings.TrimSpace(string(out)))
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
