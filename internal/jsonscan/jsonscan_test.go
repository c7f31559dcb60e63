package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// skipAll reads data as one value with Skip and End.
func skipAll(data []byte) (*Scanner, bool) {
	s := &Scanner{}
	s.Reset(data)
	ok := s.Skip() && s.End()
	return s, ok
}

func TestSkip(t *testing.T) {
	f := func(data string, wantOffset int, wantMsg string) {
		t.Helper()
		s, ok := skipAll([]byte(data))
		if wantMsg == "" {
			if !ok || s.Failed() {
				t.Fatalf("%q: %v, want valid", data, s.Err())
			}
			return
		}
		se := s.Err()
		if ok || se == nil {
			t.Fatalf("%q: valid, want %q at %d", data, wantMsg, wantOffset)
		}
		if se.Offset != wantOffset || se.Msg != wantMsg {
			t.Fatalf("%q: %q at %d, want %q at %d", data, se.Msg, se.Offset, wantMsg, wantOffset)
		}
	}
	// Valid documents.
	f(`{}`, 0, "")
	f(` [ ] `, 0, "")
	f(`{"a":[1,-2.5e+3,true,false,null,"s\"\u00e9"],"b":{"c":{}}}`, 0, "")
	f("\t\r\n0\n", 0, "")
	f(`-0.0E-0`, 0, "")
	f("\"\xff\xc3\"", 0, "")
	f(`"\ud800"`, 0, "") // a lone surrogate is valid JSON
	f(strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth), 0, "")

	// The end of the input, wherever it comes.
	f(``, 0, "unexpected end of input")
	f(`  `, 2, "unexpected end of input")
	f(`{`, 1, "unexpected end of input")
	f(`{"a"`, 4, "unexpected end of input")
	f(`{"a":`, 5, "unexpected end of input")
	f(`[1,`, 3, "unexpected end of input")
	f(`"abc`, 4, "unexpected end of input")
	f(`"a\`, 3, "unexpected end of input")
	f(`-`, 1, "unexpected end of input")
	f(`1.`, 2, "unexpected end of input")
	f(`1e+`, 3, "unexpected end of input")
	f(`[tru`, 4, "unexpected end of input")

	// Structure.
	f(`{} {}`, 3, "want one value, found more after it")
	f(`{"a" 1}`, 5, "want ':' after object key")
	f(`{1:2}`, 1, "want a string for an object key")
	f(`{"a":1,}`, 7, "want a string for an object key")
	f(`{"a":1 "b":2}`, 7, "want ',' or '}' after object member")
	f(`[1 2]`, 3, "want ',' or ']' after array element")
	f(`[1,]`, 3, "invalid character ']' looking for beginning of value")
	f(`[,1]`, 1, "invalid character ',' looking for beginning of value")
	f("\x00", 0, `invalid character '\x00' looking for beginning of value`)
	f(`[}`, 1, "invalid character '}' looking for beginning of value")
	f(strings.Repeat("[", MaxDepth+1), MaxDepth, "exceeded max depth")
	f(`[`+strings.Repeat(`{"a":`, MaxDepth), 1+(MaxDepth-2)*len(`{"a":`)+len(`{"a":`), "exceeded max depth")

	// Tokens.
	f(`trux`, 3, "invalid literal")
	f(`nax`, 1, "invalid literal")
	f(`[falsy]`, 5, "invalid literal")
	f(`nul`, 3, "unexpected end of input")
	f(`01`, 1, "want one value, found more after it")
	f(`-a`, 1, "invalid number")
	f(`+1`, 0, "invalid character '+' looking for beginning of value")
	f(`.5`, 0, "invalid character '.' looking for beginning of value")
	f(`1.e3`, 2, "invalid number: want a digit after the decimal point")
	f(`1e`+"x", 2, "invalid number: want a digit in the exponent")
	f("\"a\tb\"", 2, "invalid control character in string")
	f("\"a\\n\x01\"", 4, "invalid control character in string")
	f(`"\x"`, 2, "invalid escape in string")
	f(`"\u12g4"`, 3, "invalid \\u escape in string")
	f(`"\u12"`, 3, "invalid \\u escape in string")
	f(`"\ud800\u12"`, 9, "invalid \\u escape in string")
}

func TestStr(t *testing.T) {
	f := func(data, want string) {
		t.Helper()
		var s Scanner
		s.Reset([]byte(data))
		got, ok := s.Str()
		if !ok || !s.End() {
			t.Fatalf("Str(%s): %v", data, s.Err())
		}
		if string(got) != want {
			t.Fatalf("Str(%s) = %q, want %q", data, got, want)
		}
		var ref string
		if err := json.Unmarshal([]byte(data), &ref); err != nil || ref != want {
			t.Fatalf("encoding/json decodes %s as %q (%v), the table says %q", data, ref, err, want)
		}
	}
	f(`""`, "")
	f(` "plain" `, "plain")
	f(`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t")
	f(`"\u00e9\u00C9"`, "éÉ")
	f(`"\ud83d\ude00"`, "😀")
	f(`"\ud83d"`, "\ufffd")
	f(`"\ude00\ud83d"`, "\ufffd\ufffd")
	f(`"\ud83dx"`, "\ufffdx")
	f(`"\ud83d\u0041"`, "\ufffdA")
	f(`"\ud83d\n"`, "\ufffd\n")
	f("\"\xff\"", "\ufffd")
	f("\"é\xc3\"", "é\ufffd")
	f("\"\xff\\n\"", "\ufffd\n")
	f(`"\u0000"`, "\x00")
}

func TestRawStr(t *testing.T) {
	f := func(data, wantRaw string, wantEscaped bool) {
		t.Helper()
		var s Scanner
		s.Reset([]byte(data))
		raw, escaped, ok := s.RawStr()
		if !ok || !s.End() {
			t.Fatalf("RawStr(%s): %v", data, s.Err())
		}
		if string(raw) != wantRaw || escaped != wantEscaped {
			t.Fatalf("RawStr(%s) = %q, %v, want %q, %v", data, raw, escaped, wantRaw, wantEscaped)
		}
	}
	f(`""`, "", false)
	f(`"1783"`, "1783", false)
	f("\"\xff\"", "\xff", false)
	f(`"a\"b"`, `a\"b`, true)
	f(`"\u0031"`, `\u0031`, true)
	f(`"x\\"`, `x\\`, true)
}

func TestNumber(t *testing.T) {
	f := func(data string) {
		t.Helper()
		var s Scanner
		s.Reset([]byte(data))
		tok, ok := s.Number()
		if !ok || !s.End() || string(tok) != strings.TrimSpace(data) {
			t.Fatalf("Number(%s) = %q, %v: %v", data, tok, ok, s.Err())
		}
		got, exact, isInt := ParseNumber(tok)
		want, _ := strconv.ParseFloat(string(tok), 64)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("ParseNumber(%s) = %v, want %v", tok, got, want)
		}
		u, err := strconv.ParseUint(string(tok), 10, 64)
		if wantInt := err == nil && u < 1<<63; isInt != wantInt || isInt && exact != u {
			t.Fatalf("ParseNumber(%s): exact %d, isInt %v", tok, exact, isInt)
		}
	}
	for _, n := range []string{"0", "-0", " 1 ", "29.5", "0.07", "11.17", "9007199254740992", "9007199254740993",
		"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
		"1e3", "1E-7", "2.5e-1", "123456789012345678901234567890", "0.1000000000000000055511151231257827",
		"-3.25", "1e-400", "-1e400", "1e308", "4.9e-324", "0.0000000000000000000001", "0.00000000000000000000001"} {
		f(n)
	}
}

// TestMismatch: a read of one kind that finds another records nothing and
// stays before the value; Key does not take a non-string.
func TestMismatch(t *testing.T) {
	reads := map[string]func(*Scanner) bool{
		"OpenObject": (*Scanner).OpenObject,
		"OpenArray":  (*Scanner).OpenArray,
		"Str":        func(s *Scanner) bool { _, ok := s.Str(); return ok },
		"RawStr":     func(s *Scanner) bool { _, _, ok := s.RawStr(); return ok },
		"Number":     func(s *Scanner) bool { _, ok := s.Number(); return ok },
	}
	kinds := map[string]Kind{"OpenObject": Object, "OpenArray": Array, "Str": String, "RawStr": String, "Number": Number}
	for _, data := range []string{` {}`, ` []`, ` "s"`, ` -1`, ` true`, ` false`, ` null`, ` x`, ` `} {
		for name, read := range reads {
			var s Scanner
			s.Reset([]byte(data))
			if s.Next() == kinds[name] {
				continue
			}
			if read(&s) || s.Failed() || s.Pos() != 1 {
				t.Errorf("%s on %q: ok or failed (%v) or moved to %d", name, data, s.Err(), s.Pos())
			}
		}
	}
	want := map[string]Kind{"{": Object, "[": Array, `"`: String, "-": Number, "7": Number, "t": True, "f": False, "n": Null, "x": Invalid, "": Invalid, "}": Invalid}
	for data, k := range want {
		var s Scanner
		s.Reset([]byte(data))
		if got := s.Next(); got != k {
			t.Errorf("Next(%q) = %d, want %d", data, got, k)
		}
	}
}

func TestStop(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`{"a": x}`))
	s.OpenObject()
	s.More('}', true)
	s.Key()
	s.Stop() // the decoder's own error comes first
	if s.Skip() || !s.Failed() || s.Err() != nil || s.End() {
		t.Fatalf("after Stop: failed %v, err %v", s.Failed(), s.Err())
	}
	s.Reset([]byte(`x`))
	if s.Failed() || s.Skip() {
		t.Fatal("Reset keeps the stop")
	}
	s.Stop() // after a syntax error: nothing changes
	if se := s.Err(); se == nil || se.Offset != 0 {
		t.Fatalf("Stop replaced the syntax error: %v", se)
	}
	if got := s.Err().Error(); got != `jsonscan: cannot parse JSON at byte 0: invalid character 'x' looking for beginning of value` {
		t.Fatal(got)
	}
}

// TestRestore: a decoder that stopped at an error of its own in a value
// goes back to the value's start and skips it; a syntax error stays.
func TestRestore(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`[{"a": 1, "b": [2]}, {"c": 3}]`))
	if !s.OpenArray() || !s.More(']', true) {
		t.Fatal(s.Err())
	}
	m := s.Mark()
	s.OpenObject()
	s.More('}', true)
	s.Key()
	s.Stop() // say the decoder refuses "a"
	if !s.Restore(m) || s.Failed() {
		t.Fatal("Restore did not undo the Stop")
	}
	if !s.Skip() || !s.More(']', false) || !s.Skip() || s.More(']', false) || !s.End() {
		t.Fatalf("after Restore: %v", s.Err())
	}

	s.Reset([]byte(`[{"a": x}]`))
	s.OpenArray()
	s.More(']', true)
	m = s.Mark()
	if s.Skip() || s.Restore(m) || s.Err() == nil {
		t.Fatalf("Restore undid a syntax error: %v", s.Err())
	}
}

// TestFastPath: a decoder matches bytes itself (Rest) and consumes them
// (Advance); the Scanner goes on after them.
func TestFastPath(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`[{"id":"1"}, {"id":"2"}]`))
	if !s.OpenArray() || !s.More(']', true) {
		t.Fatal(s.Err())
	}
	if !bytes.HasPrefix(s.Rest(), []byte(`{"id":"1"}`)) {
		t.Fatalf("Rest = %q", s.Rest())
	}
	s.Advance(len(`{"id":"1"}`))
	if !s.More(']', false) || !s.Skip() || s.More(']', false) || !s.End() {
		t.Fatal(s.Err())
	}
	if !bytes.Equal(s.Input(), []byte(`[{"id":"1"}, {"id":"2"}]`)) {
		t.Fatal("Input")
	}
}

// ---- differential: the Scanner against encoding/json ----

// decodeAny decodes the next value into what encoding/json's Unmarshal
// with UseNumber makes of it, with Str and Key (or RawStr and RawKey,
// unescaped by encoding/json, when raw), checking on the way that reads
// of other kinds leave the value alone.
func decodeAny(t *testing.T, s *Scanner, raw bool) (any, bool) {
	k := s.Next()
	pos := s.Pos()
	for _, other := range []Kind{Object, Array, String, Number} {
		if other == k {
			continue
		}
		var ok bool
		switch other {
		case Object:
			ok = s.OpenObject()
		case Array:
			ok = s.OpenArray()
		case String:
			_, ok = s.Str()
		case Number:
			_, ok = s.Number()
		}
		if ok || s.Failed() || s.Pos() != pos {
			t.Fatalf("a read of kind %d on a value of kind %d at %d: ok %v, failed %v, moved to %d", other, k, pos, ok, s.Failed(), s.Pos())
		}
	}
	str := func(key bool) (string, bool) {
		if !raw {
			var b []byte
			var ok bool
			if key {
				b, ok = s.Key()
			} else {
				b, ok = s.Str()
			}
			return string(b), ok
		}
		var b []byte
		var esc, ok bool
		if key {
			b, esc, ok = s.RawKey()
		} else {
			b, esc, ok = s.RawStr()
		}
		if !ok {
			return "", false
		}
		if esc != bytes.Contains(b, []byte{'\\'}) {
			t.Fatalf("RawStr %q: escaped %v", b, esc)
		}
		var v string
		if err := json.Unmarshal(append(append([]byte{'"'}, b...), '"'), &v); err != nil {
			t.Fatalf("RawStr %q: not a string's inside: %v", b, err)
		}
		return v, true
	}
	switch k {
	case Object:
		if !s.OpenObject() {
			return nil, false
		}
		m := map[string]any{}
		for first := true; s.More('}', first); first = false {
			name, ok := str(true)
			if !ok {
				return nil, false
			}
			v, ok := decodeAny(t, s, raw)
			if !ok {
				return nil, false
			}
			m[name] = v
		}
		return m, !s.Failed()
	case Array:
		if !s.OpenArray() {
			return nil, false
		}
		a := []any{}
		for first := true; s.More(']', first); first = false {
			v, ok := decodeAny(t, s, raw)
			if !ok {
				return nil, false
			}
			a = append(a, v)
		}
		return a, !s.Failed()
	case String:
		return str(false)
	case Number:
		tok, ok := s.Number()
		if !ok {
			return nil, false
		}
		f, exact, isInt := ParseNumber(tok)
		want, _ := strconv.ParseFloat(string(tok), 64)
		if math.Float64bits(f) != math.Float64bits(want) {
			t.Fatalf("ParseNumber(%s) = %v, strconv %v", tok, f, want)
		}
		u, err := strconv.ParseUint(string(tok), 10, 64)
		if wantInt := err == nil && u < 1<<63; isInt != wantInt || isInt && exact != u {
			t.Fatalf("ParseNumber(%s): exact %d, isInt %v", tok, exact, isInt)
		}
		return json.Number(tok), true
	}
	// Literals and what is not a value.
	if !s.Skip() {
		return nil, false
	}
	switch k {
	case True:
		return true, true
	case False:
		return false, true
	}
	return nil, true
}

// depthAt returns the nesting depth after prefix, which the Scanner read
// as valid JSON so far.
func depthAt(prefix []byte) int {
	depth, inStr := 0, false
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return depth
}

// checkScanner checks the Scanner's contract on data against encoding/json.
func checkScanner(t *testing.T, data []byte) {
	s, ok := skipAll(data)
	se := s.Err()
	if ok != (se == nil) || ok == s.Failed() {
		t.Fatalf("%q: ok %v with error %v", data, ok, se)
	}
	if se != nil && se.Msg == "exceeded max depth" {
		// Valid JSON may be refused for its depth, and only for it.
		if c := data[se.Offset]; c != '{' && c != '[' || depthAt(data[:se.Offset]) != MaxDepth {
			t.Fatalf("%q: exceeded max depth at %d, at depth %d", data, se.Offset, depthAt(data[:se.Offset]))
		}
		return
	}
	var ref any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	refErr := dec.Decode(&ref)
	if refErr == nil && dec.More() {
		refErr = errors.New("more after the value")
	}
	if valid := json.Valid(data); ok != valid {
		t.Fatalf("%q: Skip+End %v (%v), encoding/json.Valid %v", data, ok, se, valid)
	}
	if !ok {
		if se.Offset < 0 || se.Offset > len(data) || se.Msg == "" {
			t.Fatalf("%q: error %+v", data, se)
		}
		// Never after encoding/json's offending byte.
		var jse *json.SyntaxError
		if err := json.Unmarshal(data, new(any)); errors.As(err, &jse) {
			// Offset counts the offending byte; at the end, encoding/json
			// reports the end itself or a ' ' that it feeds in for it.
			at := int(jse.Offset) - 1
			if msg := jse.Error(); msg == "unexpected end of JSON input" ||
				at == len(data)-1 && data[at] != ' ' && strings.HasPrefix(msg, "invalid character ' '") {
				at = len(data)
			}
			if se.Offset > at {
				t.Fatalf("%q: error at %d (%s), encoding/json's at %d (%v)", data, se.Offset, se.Msg, at, err)
			}
		}
	}
	// The unescaping and raw reads agree with Skip (the same first error)
	// and, on valid input, with encoding/json's values.
	for _, raw := range []bool{false, true} {
		var s2 Scanner
		s2.Reset(data)
		v, ok2 := decodeAny(t, &s2, raw)
		ok2 = ok2 && s2.End()
		if ok2 != ok || !ok && !reflect.DeepEqual(s2.Err(), se) {
			t.Fatalf("%q (raw %v): decoding says %v (%v), Skip %v (%v)", data, raw, ok2, s2.Err(), ok, se)
		}
		if ok && (refErr != nil || !reflect.DeepEqual(v, ref)) {
			t.Fatalf("%q (raw %v):\nScanner       %#v\nencoding/json %#v (%v)", data, raw, v, ref, refErr)
		}
	}
}

var scannerSeeds = []string{
	`{"resource_limits":{"user_slots":32,"cpu":29.5,"memory":137438953472},"tags":["ssd","rack-12"],"allocations":[{"id":"1783","state":"running"}]}`,
	`{"allocations_to_start":[],"allocations_to_preempt":[{"id":"5","timeout_s":2.5e-1}],"allocations_to_abort":null}`,
	` [1, -0, 0.5, 1e3, 1E+3, -1.5e-300, 123456789012345678901234567890, true, false, null, "", {}] `,
	`{"a":{"a":{"a":[[[]]]}},"a":"dup"}`,
	"\"\\ud83d\\ude00 \\u00e9 \\ud800 \\/\\b\\f\\n\\r\\t \xff\xc3\"",
	`{"k\u0065y": "\"quoted\""}`,
	strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	`{"a":1,}`, `[1 2]`, `01`, `1.`, `-`, `"\x"`, `"\u12"`, "\"\x01\"", `tru`, `{"a" 1}`, `{} x`, ``,
}

func TestScannerDifferential(t *testing.T) {
	for _, s := range scannerSeeds {
		checkScanner(t, []byte(s))
		for i := range s {
			checkScanner(t, []byte(s[:i]))
		}
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScanner(t, data)
	})
}

// walk reads the next value with the unescaping reads, as a decoder does,
// and returns the sum of its numbers and string lengths (so that nothing
// is optimised away). It allocates nothing once s's scratch has grown.
func walk(s *Scanner) (sum float64, ok bool) {
	switch s.Next() {
	case Object:
		if !s.OpenObject() {
			return 0, false
		}
		for first := true; s.More('}', first); first = false {
			k, ok := s.Key()
			if !ok {
				return 0, false
			}
			x, ok := walk(s)
			if !ok {
				return 0, false
			}
			sum += float64(len(k)) + x
		}
		return sum, !s.Failed()
	case Array:
		if !s.OpenArray() {
			return 0, false
		}
		for first := true; s.More(']', first); first = false {
			x, ok := walk(s)
			if !ok {
				return 0, false
			}
			sum += x
		}
		return sum, !s.Failed()
	case String:
		b, ok := s.Str()
		return float64(len(b)), ok
	case Number:
		tok, ok := s.Number()
		if !ok {
			return 0, false
		}
		f, _, _ := ParseNumber(tok)
		return f, true
	}
	return 0, s.Skip()
}

// heartbeat is a node's heartbeat as loadgen writes it, with a few
// escapes, spaces and numbers of every shape added.
func heartbeat() []byte {
	b := []byte(`{"resource_limits": {"user_slots": 32, "cpu": 29.5, "memory": 137438953472, "gpu": 1e1},` +
		` "tags": ["ssd", "r\u00e4ck-12", "\ud83d\ude00"], "ok": [true, false, null], "allocations":[`)
	for i := range 20 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = strconv.AppendUint(b, 17179869184+uint64(1000+i), 10)
		b = append(b, `","state":"running"}`...)
	}
	return append(b, "]}"...)
}

func BenchmarkScanner(b *testing.B) {
	data := heartbeat()
	var s Scanner
	for _, bc := range []struct {
		name string
		read func() bool
	}{
		{"read=skip", func() bool { return s.Skip() }},
		{"read=walk", func() bool { _, ok := walk(&s); return ok }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				s.Reset(data)
				if !bc.read() || !s.End() {
					b.Fatal(s.Err())
				}
			}
		})
	}
}
