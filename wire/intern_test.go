package wire

import (
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

// TestInternerConcurrent interns overlapping names from several goroutines
// while the table grows (run it with -race): every goroutine gets the same
// string (the same bytes) for the same name, and the Interner holds each
// name once, up to its limit.
func TestInternerConcurrent(t *testing.T) {
	const names, workers = 5000, 8
	for _, limit := range []int{1 << 20, 3000} {
		in := NewInterner(limit)
		got := make([][]string, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[w] = make([]string, names)
				for k := range names {
					i := (k*7919 + w*131) % names // every worker in its own order
					got[w][i] = in.Intern([]byte("node-" + strconv.Itoa(i)))
				}
			}()
		}
		wg.Wait()
		if want := min(names, limit); in.Len() != want {
			t.Fatalf("limit %d: holds %d strings, want %d", limit, in.Len(), want)
		}
		shared := 0
		for i := range names {
			want := "node-" + strconv.Itoa(i)
			same := true
			for w := range workers {
				if got[w][i] != want {
					t.Fatalf("limit %d: worker %d interned %q as %q", limit, w, want, got[w][i])
				}
				same = same && unsafe.StringData(got[w][i]) == unsafe.StringData(got[0][i])
			}
			if again := in.Intern([]byte(want)); same && unsafe.StringData(again) == unsafe.StringData(got[0][i]) {
				shared++
			}
		}
		if shared != min(names, limit) {
			t.Fatalf("limit %d: %d names interned once for all, want %d", limit, shared, min(names, limit))
		}
	}
}
