package tagfilter

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCanonical(t *testing.T) {
	f := func(in, canon string, tags ...string) {
		t.Helper()
		flt, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := flt.String(); got != canon {
			t.Fatalf("Parse(%q).String() = %q, want %q", in, got, canon)
		}
		if strings.Join(flt.Tags(), ",") != strings.Join(tags, ",") {
			t.Fatalf("Parse(%q).Tags() = %q, want %q", in, flt.Tags(), tags)
		}
		again, err := Parse(canon)
		if err != nil || again.String() != canon {
			t.Fatalf("the canonical form %q does not parse back to itself: %q, %v", canon, again.String(), err)
		}
	}
	f("", "")
	f("  \t\n", "")
	f("gpu", "gpu", "gpu")
	f("  gpu  ", "gpu", "gpu")
	f("gpu&!preemptible", "gpu & !preemptible", "gpu", "preemptible")
	f("tag_3 & tag_1", "tag_3 & tag_1", "tag_3", "tag_1")
	f("tag_2 | (tag_1 & tag_4)", "tag_2 | (tag_1 & tag_4)", "tag_2", "tag_1", "tag_4")
	f("tag_2 | tag_1 & tag_4", "tag_2 | (tag_1 & tag_4)", "tag_2", "tag_1", "tag_4")
	f("(a | b) & c", "(a | b) & c", "a", "b", "c")
	f("a & (b & c)", "a & b & c", "a", "b", "c")
	f("((a))", "a", "a")
	f("a|b|c", "a | b | c", "a", "b", "c")
	f("!(a | b)", "!(a | b)", "a", "b")
	f("!!a", "!!a", "a")
	f("! a", "!a", "a")
	f("a & a", "a & a", "a")
	f("rack-12.dc:1/x", "rack-12.dc:1/x", "rack-12.dc:1/x")
	f(`"has space" | "a&b" | "q\"\\"`, `"has space" | "a&b" | "q\"\\"`, "has space", "a&b", `q"\`)
	f(`"plain"`, "plain", "plain")
	f("ünïcode", "ünïcode", "ünïcode")
}

func TestMatch(t *testing.T) {
	f := func(formula string, tags string, want bool) {
		t.Helper()
		flt := MustParse(formula)
		node := strings.Fields(tags)
		if got := flt.Match(node); got != want {
			t.Fatalf("%q on %q: %v, want %v", formula, tags, got, want)
		}
		// The compiled program agrees, with the tags at scattered bits.
		bit := func(tag string) uint32 { return uint32(len(tag)*37%200 + int(tag[0])%7) }
		prog := flt.Compile(bit)
		var bits []uint64
		for _, tg := range node {
			b := bit(tg)
			for int(b/64) >= len(bits) {
				bits = append(bits, 0)
			}
			bits[b/64] |= 1 << (b % 64)
		}
		if got := prog.Match(bits); got != want && !collides(flt.Tags(), node, bit) {
			t.Fatalf("%q on %q compiled: %v, want %v", formula, tags, got, want)
		}
	}
	f("", "", true)
	f("", "x", true)
	f("gpu", "gpu ssd", true)
	f("gpu", "ssd", false)
	f("gpu & !preemptible", "gpu", true)
	f("gpu & !preemptible", "gpu preemptible", false)
	f("gpu & !preemptible", "", false)
	f("tag_2 | (tag_1 & tag_4)", "tag_1 tag_3 tag_4", true)
	f("tag_2 | (tag_1 & tag_4)", "tag_1", false)
	f("tag_2 | (tag_1 & tag_4)", "tag_2", true)
	f("(a | b) & c", "b c", true)
	f("(a | b) & c", "a", false)
	f("!(a | b)", "c", true)
	f("!(a | b)", "b", false)
	f("!!a", "a", true)
	f("a & b & c & d", "a b c d", true)
	f("a & b & c & d", "a b c", false)
	f("a | b | c | d", "d", true)
}

// collides reports whether the test's bit function maps two distinct tags
// of interest to the same bit (then the compiled result may differ).
func collides(tags, node []string, bit func(string) uint32) bool {
	seen := map[uint32]string{}
	for _, t := range append(append([]string{}, tags...), node...) {
		if o, ok := seen[bit(t)]; ok && o != t {
			return true
		}
		seen[bit(t)] = t
	}
	return false
}

func TestParseErrors(t *testing.T) {
	f := func(in string, off int, msg string) {
		t.Helper()
		_, err := Parse(in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%q) = %v, want a *SyntaxError", in, err)
		}
		if se.Offset != off || !strings.Contains(se.Msg, msg) {
			t.Fatalf("Parse(%q): offset %d, %q; want offset %d, a message with %q", in, se.Offset, se.Msg, off, msg)
		}
		if !strings.HasPrefix(err.Error(), "cannot parse scheduling tag filter ") {
			t.Fatalf("Parse(%q): error %q does not start with cannot parse", in, err)
		}
	}
	f("gpu &", 5, "unexpected end of formula: want a tag")
	f("gpu & & ssd", 6, `unexpected '&': want a tag, "!" or "("`)
	f("& gpu", 0, `unexpected '&'`)
	f("| gpu", 0, `unexpected '|'`)
	f("gpu ssd", 4, `unexpected 's': want "&", "|" or the end`)
	f("gpu)", 3, `unexpected ')'`)
	f("(gpu", 4, `want ")" to close the "(" at offset 0`)
	f("(gpu ssd)", 5, `unexpected 's': want "&", "|" or ")"`)
	f("()", 1, `unexpected ')'`)
	f("!", 1, "unexpected end of formula")
	f("gpu && ssd", 5, `unexpected '&'`)
	f(`"gpu`, 0, "unterminated quoted tag")
	f(`""`, 0, "empty tag")
	f(`"a\n"`, 2, "bad escape")
	f(strings.Repeat("x", MaxTagLength+1), 0, "tag longer than 256 bytes")
	f(`"`+strings.Repeat("x", MaxTagLength+1)+`"`, 0, "tag longer than 256 bytes")
	f(strings.Repeat("(", MaxDepth+1)+"a"+strings.Repeat(")", MaxDepth+1), MaxDepth, "nested deeper than 32")
	f(strings.Repeat("!", MaxDepth+1)+"a", MaxDepth, "nested deeper than 32")
	f(strings.Repeat("a|", MaxLength), MaxLength, "longer than 4096 bytes")
	// The deepest formula accepted still evaluates.
	deep := strings.Repeat("(a & ", MaxDepth) + "b" + strings.Repeat(")", MaxDepth)
	if !MustParse(deep).Match([]string{"a", "b"}) || MustParse(deep).Match([]string{"a"}) {
		t.Fatal("the deepest formula evaluates wrongly")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "gpu", "gpu & !preemptible", "tag_2 | (tag_1 & tag_4)", `"a b" | !(c&d)|e`,
		"((a))", "!!a", "a & (b | c) & !d", `"q\"\\"`, "(a", "a b", "&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(s) && len(s) <= MaxLength {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			return
		}
		canon := flt.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("the canonical form %q of %q does not parse: %v", canon, s, err)
		}
		if again.String() != canon {
			t.Fatalf("the canonical form %q of %q parses to %q", canon, s, again.String())
		}
		if strings.Join(again.Tags(), "\x00") != strings.Join(flt.Tags(), "\x00") {
			t.Fatalf("%q and its canonical form %q name different tags", s, canon)
		}
		// Both agree on every subset of (up to 10 of) their tags.
		tags := flt.Tags()
		if len(tags) > 10 {
			tags = tags[:10]
		}
		for mask := 0; mask < 1<<len(tags); mask++ {
			var node []string
			for i, tg := range tags {
				if mask>>i&1 != 0 {
					node = append(node, tg)
				}
			}
			if flt.Match(node) != again.Match(node) {
				t.Fatalf("%q and its canonical form %q disagree on %q", s, canon, node)
			}
		}
	})
}

func BenchmarkProgramMatch(b *testing.B) {
	prog := MustParse("tag_2 | (tag_1 & tag_4) | !gpu").Compile(func(t string) uint32 { return uint32(len(t)) })
	bits := []uint64{0b10100}
	b.ReportAllocs()
	for b.Loop() {
		if prog.Match(bits) {
			bits[0] ^= 1
		}
	}
}
