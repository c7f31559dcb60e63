package jsonpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/fairsched/fairsched/core/resource"
)

func TestDecode(t *testing.T) {
	f := func(data, wantErr string) {
		t.Helper()
		_, e := Decode([]byte(data), "body")
		got := ""
		if e != nil {
			if e.Code != CodeMalformedJSON || e.Path != "$" {
				t.Errorf("Decode(%q): error %s at %s, want malformed_json at $", data, e.Code, e.Path)
			}
			got = e.Message
		}
		if got != wantErr {
			t.Errorf("Decode(%q): error %q, want %q", data, got, wantErr)
		}
	}
	f(`{"a": [1, true, null, "x"]}`, "")
	f(" \n\t", "cannot parse an empty body: want a JSON object")
	f(`{"a": 1`, "cannot parse JSON: unexpected end of input")
	f(`{} {}`, "cannot parse JSON: want one value, found more after it")
	f("{\n  \"a\": }", "cannot parse JSON: line 2, column 8: invalid character '}' looking for beginning of value")

	v, e := Decode([]byte(`{"n": 12345678901234567890}`), "file")
	if e != nil {
		t.Fatal(e)
	}
	// Numbers stay as written until an accessor reads them.
	if n := v.(map[string]any)["n"]; Describe(n) != "12345678901234567890" {
		t.Errorf("number decoded as %#v", n)
	}
	if _, e := Decode(nil, "file"); e == nil || e.Message != "cannot parse an empty file: want a JSON object" {
		t.Errorf("empty file: %v", e)
	}
}

// normalize turns the json.Number of Decode's values into encoding/json's,
// for comparison.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = normalize(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normalize(x)
		}
		return out
	case gojson.Number:
		return json.Number(v)
	}
	return v
}

// TestDecodeDuplicateKeys: a key twice in one object is refused at the path
// of its second occurrence, however deep; the same key in two objects is
// not a duplicate.
func TestDecodeDuplicateKeys(t *testing.T) {
	f := func(data, wantPath string) {
		t.Helper()
		_, e := Decode([]byte(data), "body")
		switch {
		case wantPath == "" && e != nil:
			t.Errorf("Decode(%s): %v", data, e)
		case wantPath != "" && (e == nil || e.Code != CodeDuplicateKey || e.Path != wantPath):
			t.Errorf("Decode(%s): %v, want duplicate_key at %s", data, e, wantPath)
		}
	}
	f(`{"a": 1, "a": 2}`, "$.a")
	f(`{"a": 1, "b": {"c": [1, {"d": 1, "d": 1}]}}`, "$.b.c[1].d")
	f(`{"x y": 1, "x y": 1}`, `$["x y"]`)
	f(`{"a": 1, "\u0061": 2}`, "$.a") // the same key, escaped
	f(`{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}`, "")
}

// TestDecodeBounds: numbers above 2^53 in magnitude are refused by the
// accessors, however written; 2^53 itself is taken. Nesting is bounded.
func TestDecodeBounds(t *testing.T) {
	f := func(lit string, ok bool) {
		t.Helper()
		v, e := Decode([]byte(`{"n": `+lit+`}`), "body")
		if e != nil {
			t.Fatalf("%s: %v", lit, e)
		}
		_, e = Number("$.n", v.(map[string]any)["n"])
		if ok != (e == nil) {
			t.Errorf("Number(%s): %v, want ok %v", lit, e, ok)
		}
	}
	f("9007199254740992", true)
	f("-9007199254740992", true)
	f("9007199254740992.000", true)
	f("9.007199254740992e15", true)
	f("0.9007199254740992E+16", true)
	f("900719925474099200e-2", true)
	f("9007199254740991.5", true)
	f("9007199254740993", false) // rounds to 2^53
	f("-9007199254740993", false)
	f("9007199254740992.5", false)
	f("9007199254740992.0000000001", false)
	f("9.007199254740993e15", false)
	f("9007199254740994", false)
	f("18014398509481984", false)
	f("1e300", false)
	f("1e99999999999999999999", false)
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	if _, e := Decode([]byte(deep), "body"); e == nil || e.Code != CodeMalformedJSON {
		t.Errorf("65 nested arrays: %v", e)
	}
	if _, e := Decode([]byte(strings.Repeat("[", 64)+strings.Repeat("]", 64)), "body"); e != nil {
		t.Errorf("64 nested arrays: %v", e)
	}
}

func TestPaths(t *testing.T) {
	f := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	f(Key("$", "cpu"), "$.cpu")
	f(Key("$.a", "_x9"), "$.a._x9")
	f(Key("$", "9x"), `$["9x"]`)
	f(Key("$", ""), `$[""]`)
	f(Key("$", "a.b"), `$["a.b"]`)
	f(Key("$", "q\"\n"), `$["q\"\n"]`)
	f(Index("$.tasks", 3), "$.tasks[3]")
	f(Describe(nil), "null")
	f(Describe(false), "false")
	f(Describe(json.Number("1e3")), "1e3")
	f(Describe("a\tb"), `"a\tb"`)
	f(Describe(strings.Repeat("x", 70)), `"`+strings.Repeat("x", 64)+`…"`)
	f(Describe(map[string]any{}), "an object")
	f(Describe([]any{}), "an array")
	f(Describe(1), "a value")
	f((&Error{Code: CodeWrongType, Message: "cannot use 1: want a string", Path: "$.a"}).Error(), "$.a: cannot use 1: want a string")
	f((&Error{Message: "m"}).Error(), "m")
}

func TestAccessors(t *testing.T) {
	n := func(s string) any { return json.Number(s) }
	// f checks the error of an accessor call: "" for none, else code and message.
	f := func(what string, e *Error, want string) {
		t.Helper()
		got := ""
		if e != nil {
			got = e.Code + " at " + e.Path + ": " + e.Message
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", what, got, want)
		}
	}
	_, e := Object("$", []any{})
	f("object", e, "wrong_type at $: cannot use an array: want an object")
	_, e = Array("$.a", map[string]any{})
	f("array", e, "wrong_type at $.a: cannot use an object: want an array")
	_, e = String("$.s", n("1"))
	f("string", e, "wrong_type at $.s: cannot use 1: want a string")
	_, e = Bool("$.b", nil)
	f("bool", e, "wrong_type at $.b: cannot use null: want true or false")
	_, e = Number("$.x", "1")
	f("number type", e, `wrong_type at $.x: cannot use "1": want a number`)
	_, e = Number("$.x", n("1e999"))
	f("number inf", e, "invalid_value at $.x: cannot use 1e999: want a finite number")
	_, e = Range("$.x", n("11"), 1, 10, "a number in [1, 10]")
	f("range", e, "invalid_value at $.x: cannot use 11: want a number in [1, 10]")
	_, e = Positive("$.x", n("0"))
	f("positive", e, "invalid_value at $.x: cannot use 0: want a positive number")
	_, e = Whole("$.x", n("1.5"), 0, 10, "a whole number in [0, 10]")
	f("whole", e, "invalid_value at $.x: cannot use 1.5: want a whole number in [0, 10]")
	_, e = Count("$.x", n("-1"))
	f("count", e, "invalid_value at $.x: cannot use -1: want a whole number in [0, 2^53]")
	modes := map[string]int{"a": 1, "b": 2}
	_, e = Lookup("$.m", "c", modes, `"a" or "b"`)
	f("lookup", e, `invalid_value at $.m: cannot use "c": want "a" or "b"`)
	_, e = Lookup("$.m", false, modes, `"a" or "b"`)
	f("lookup type", e, "wrong_type at $.m: cannot use false: want a string")

	if x, e := Count("$", n("9007199254740992")); e != nil || x != 1<<53 {
		t.Errorf("Count(2^53) = %d, %v", x, e)
	}
	if x, e := Lookup("$", "b", modes, ""); e != nil || x != 2 {
		t.Errorf("Lookup(b) = %d, %v", x, e)
	}
}

func TestUnknownKey(t *testing.T) {
	known := []string{"weight", "mode", "pool"}
	f := func(k, wantPath, wantMsg string) {
		t.Helper()
		e := UnknownKey("$", k, known, "a pool")
		if e.Code != CodeUnknownAttribute || e.Path != wantPath || e.Message != wantMsg {
			t.Errorf("UnknownKey(%q) = %s at %s: %q, want %s: %q", k, e.Code, e.Path, e.Message, wantPath, wantMsg)
		}
	}
	f("wieght", "$.wieght", `cannot use unknown attribute "wieght" of a pool: did you mean "weight"?`)
	f("pole", "$.pole", `cannot use unknown attribute "pole" of a pool: did you mean "mode"?`) // a tie with "pool": the first known key wins
	f("colour", "$.colour", `cannot use unknown attribute "colour" of a pool`)
	f("a b", `$["a b"]`, `cannot use unknown attribute "a b" of a pool`)

	m := map[string]any{"mode": nil, "zz": nil, "aa": nil}
	if e := CheckKeys("$", m, known, "a pool"); e == nil || e.Path != "$.aa" {
		t.Errorf("CheckKeys: %v, want the first unknown key in order, $.aa", e)
	}
	if e := CheckKeys("$", map[string]any{"mode": nil}, known, "a pool"); e != nil {
		t.Errorf("CheckKeys: %v", e)
	}
	f2 := func(a, b string, limit, want int) {
		t.Helper()
		if got := editDistance(a, b, limit); got != want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", a, b, limit, got, want)
		}
	}
	f2("", "", 3, 0)
	f2("kitten", "sitting", 5, 3)
	f2("kitten", "sitting", 3, 3)
	f2("a", "abcd", 3, 3)
	f2(strings.Repeat("a", 65), strings.Repeat("a", 65), 3, 3)
}

func TestResources(t *testing.T) {
	decode := func(data string) (resource.Vec, [resource.Count]bool, *Error) {
		t.Helper()
		v, e := Decode([]byte(data), "body")
		if e != nil {
			t.Fatalf("%s: %v", data, e)
		}
		return Resources("$.r", v)
	}
	vec, given, e := decode(`{"cpu": 1.505, "memory": 1024, "user_slots": 0}`)
	if e != nil || vec != (resource.Vec{resource.CPU: 151, resource.Memory: 1024}) ||
		given != [resource.Count]bool{resource.UserSlots: true, resource.CPU: true, resource.Memory: true} {
		t.Errorf("got %v %v %v", vec, given, e)
	}
	f := func(data, wantPath, wantMsg string) {
		t.Helper()
		_, _, e := decode(data)
		if e == nil || e.Path != wantPath || e.Message != wantMsg {
			t.Errorf("%s: got %v, want %s: %s", data, e, wantPath, wantMsg)
		}
	}
	f(`[]`, "$.r", "cannot use an array: want an object")
	f(`{"tpu": 1}`, "$.r.tpu", `cannot use unknown resource "tpu": want one of user_slots, cpu, gpu, memory, network`)
	f(`{"gpu": -1}`, "$.r.gpu", "cannot use -1: want a non-negative number")
	f(`{"gpu": 0.5}`, "$.r.gpu", "cannot use 0.5: want a whole number")
	f(`{"memory": 9007199254740994}`, "$.r.memory", "cannot use 9007199254740994: want at most 2^53 (9007199254740992)")
	f(`{"cpu": 1e14}`, "$.r.cpu", "cannot use 1e14: want at most 2^53 centi-cores (90071992547409.92 cpu)")
	f(`{"cpu": "1"}`, "$.r.cpu", `cannot use "1": want a number`)
}

func TestAppendString(t *testing.T) {
	f := func(s, want string) {
		t.Helper()
		got := string(AppendString([]byte("x"), s))
		if got != "x"+want {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
	f("", `""`)
	f("plain é", `"plain é"`)
	f("q\"b\\", `"q\"b\\"`)
	f("\n\r\t\b\f\x01\x1f", `"\n\r\t\b\f\u0001\u001f"`)
	f("a\u2028b\u2029", `"a\u2028b\u2029"`)
	f("bad\xffutf8", `"bad\ufffdutf8"`)
}

func TestAppendStringAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], "a \"quoted\"\n string") }); n != 0 {
		t.Errorf("AppendString allocates %v times into a large enough buffer", n)
	}
}

// FuzzDecode checks that Decode and the accessors never panic, that every
// error is located, and that AppendString always writes valid JSON.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"cpu": 1.5, "memory": 1024}`))
	f.Add([]byte(`{"a": [1, "x", null, true, {"b": 1e400}]}`))
	f.Add([]byte("{\"\\u2028\": \"\xff\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(AppendString(nil, string(data))) {
			t.Fatalf("AppendString(%q) is not valid JSON", data)
		}
		v, e := Decode(data, "body")
		if e != nil {
			switch {
			case e.Code == CodeDuplicateKey && strings.HasPrefix(e.Path, "$") && strings.HasPrefix(e.Message, "cannot "):
				// A valid document with a key twice (encoding/json
				// takes the last).
				if !json.Valid(data) {
					t.Fatalf("Decode(%q): duplicate_key for invalid JSON", data)
				}
			case e.Code != CodeMalformedJSON || e.Path != "$" || !strings.HasPrefix(e.Message, "cannot "):
				t.Fatalf("Decode error %#v", e)
			case json.Valid(data) && bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= 64:
				t.Fatalf("Decode(%q) refuses valid JSON: %v", data, e)
			}
			return
		}
		// What Decode accepts, encoding/json accepts, with the same values
		// (numbers as written).
		if !json.Valid(data) {
			t.Fatalf("Decode(%q) accepts invalid JSON", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got, w := fmt.Sprint(normalize(v)), fmt.Sprint(want); got != w {
			t.Fatalf("Decode(%q) = %s, encoding/json: %s", data, got, w)
		}
		_, _, e = Resources("$", v)
		if e != nil && (!strings.HasPrefix(e.Path, "$") || e.Code == "" || !strings.HasPrefix(e.Message, "cannot ")) {
			t.Fatalf("Resources error %#v", e)
		}
		if m, ok := v.(map[string]any); ok {
			for _, k := range SortedKeys(m) {
				if p := Key("$", k); !utf8.ValidString(p) {
					t.Fatalf("Key(%q) = %q is not UTF-8", k, p)
				}
			}
		}
	})
}
