//go:build !race

package jsonscan

import "testing"

// TestScannerAllocs: reading a document allocates nothing, with the raw
// reads at once and with the unescaping ones once the scratch buffer has
// grown.
func TestScannerAllocs(t *testing.T) {
	data := heartbeat()
	data = append(data[:len(data)-1], ",\"x\":\"\xff \\\"esc\\\" \\u00e9\"}"...)
	var s Scanner
	f := func(name string, read func() bool) {
		t.Helper()
		if n := testing.AllocsPerRun(100, func() {
			s.Reset(data)
			if !read() || !s.End() {
				t.Fatal(s.Err())
			}
		}); n != 0 {
			t.Fatalf("%s allocates %v times per document", name, n)
		}
	}
	f("Skip", s.Skip)
	f("Str, Key, Number and ParseNumber", func() bool { _, ok := walk(&s); return ok })
	var raw Scanner // a fresh one: the raw reads need no scratch
	raw.Reset(data)
	if n := testing.AllocsPerRun(1, func() {
		raw.Reset(data)
		if !raw.Skip() || !raw.End() {
			t.Fatal(raw.Err())
		}
	}); n != 0 {
		t.Fatalf("Skip allocates %v times on a fresh Scanner", n)
	}
}
