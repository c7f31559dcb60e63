package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/schedule"
)

// TestPreemptionLogTable drives the log's index with a seeded random mix of
// records and forgets, more operations than it has slots, and checks it
// against a model: the operations it remembers are found with their last
// preemptionsPerOp events, most recent first; forgotten and evicted ones are
// not; a slot is never shared.
func TestPreemptionLogTable(t *testing.T) {
	// Fewer operations than slots: nothing is evicted; then three times as
	// many.
	t.Run("fits", func(t *testing.T) { testPreemptionLog(t, preemptionLogOps/2, false) })
	t.Run("evicts", func(t *testing.T) { testPreemptionLog(t, 3*preemptionLogOps, true) })
}

func testPreemptionLog(t *testing.T, nops int, evictions bool) {
	seed := uint64(17)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	l := newPreemptionLog(nil)
	model := map[string][]uint64{} // op → its allocations, in record order
	var order []string             // ops in the order they took a slot
	var resp schedule.Response
	for step := range 40000 {
		op := fmt.Sprintf("op-%d", r.IntN(nops))
		if r.IntN(10) == 0 {
			l.forget(op)
			delete(model, op)
			continue
		}
		resp.Reset()
		resp.Preempt = append(resp.Preempt, schedule.PreemptDecision{Allocation: uint64(step), Operation: op})
		l.observeAt(clock.Time(step), "n1", &resp)
		if _, ok := model[op]; !ok {
			order = append(order, op)
		}
		model[op] = append(model[op], uint64(step))
	}
	// The model keeps every operation; the log only those it did not evict.
	kept := 0
	for op, allocs := range model {
		got := l.recent(nil, op)
		if len(got) == 0 {
			continue // evicted
		}
		kept++
		// An operation evicted and recorded again has only its events
		// since: got is a prefix of its allocations, most recent first.
		if len(got) > min(len(allocs), preemptionsPerOp) {
			t.Fatalf("%s: %d events of %d recorded", op, len(got), len(allocs))
		}
		if !evictions && len(got) != min(len(allocs), preemptionsPerOp) {
			t.Fatalf("%s: %d events, want %d", op, len(got), min(len(allocs), preemptionsPerOp))
		}
		for i := range got {
			if a, want := got[i].Decision.Allocation, allocs[len(allocs)-1-i]; a != want {
				t.Fatalf("%s: event %d is allocation %d, want %d", op, i, a, want)
			}
		}
	}
	if kept == 0 || kept > preemptionLogOps {
		t.Fatalf("%d operations kept, want 1..%d", kept, preemptionLogOps)
	}
	seen := map[string]bool{}
	used := 0
	for i, s := range l.table {
		if s == 0 {
			continue
		}
		used++
		op := l.slots[s-1].op
		if op == "" || seen[op] || l.find(op) != i {
			t.Fatalf("table position %d: slot %d of %q is wrong", i, s-1, op)
		}
		seen[op] = true
	}
	if used+len(l.free) != preemptionLogOps {
		t.Fatalf("%d slots indexed and %d free, want %d in all", used, len(l.free), preemptionLogOps)
	}
	t.Logf("%d operations remembered of %d recorded", kept, len(order))
}

// TestPreemptionLogAllocs: recording preemptions allocates nothing, for a
// known operation and for a new one that evicts another.
func TestPreemptionLogAllocs(t *testing.T) {
	l := newPreemptionLog(nil)
	ops := make([]string, 2*preemptionLogOps)
	for i := range ops {
		ops[i] = fmt.Sprintf("op-%d", i)
	}
	var resp schedule.Response
	resp.Preempt = make([]schedule.PreemptDecision, 2)
	i := 0
	var c clock.Clock = clock.Func(func() clock.Time { return clock.Time(i) })
	allocs := testing.AllocsPerRun(5000, func() {
		resp.Preempt[0] = schedule.PreemptDecision{Allocation: uint64(i), Operation: ops[i%len(ops)], ForOperation: "x"}
		resp.Preempt[1] = schedule.PreemptDecision{Allocation: uint64(i), Operation: ops[0]}
		if i%2 == 0 {
			l.observe(c, "n1", &resp)
		} else {
			l.observeAt(clock.Time(i), "n1", &resp)
		}
		i++
	})
	if allocs != 0 {
		t.Fatalf("observe allocates %v times per heartbeat, want 0", allocs)
	}
}

// TestPreemptionLogConcurrent records, reads and forgets from several
// goroutines at once (run it with -race: make test-race).
func TestPreemptionLogConcurrent(t *testing.T) {
	l := newPreemptionLog(nil)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp schedule.Response
			var buf [preemptionsPerOp]PreemptionEvent
			for i := range 2000 {
				op := fmt.Sprintf("op-%d", (i*7+w)%300)
				switch i % 5 {
				case 0:
					l.forget(op)
				case 1:
					if got := l.recent(buf[:0], op); len(got) > preemptionsPerOp {
						t.Errorf("%d events", len(got))
					}
				default:
					resp.Reset()
					resp.Preempt = append(resp.Preempt, schedule.PreemptDecision{Allocation: uint64(i), Operation: op})
					l.observeAt(clock.Time(i), "n", &resp)
				}
			}
		}()
	}
	wg.Wait()
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers, whose lines
// are JSON log records.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestPreemptionsAreLogged: each preemption a heartbeat decides is one
// INFO line with the node, the allocation, the operation and the reason.
func TestPreemptionsAreLogged(t *testing.T) {
	var buf lockedBuffer
	l := newPreemptionLog(slog.New(slog.NewJSONHandler(&buf, nil)))
	r := &schedule.Response{Preempt: []schedule.PreemptDecision{
		{Allocation: 5, Operation: "etl-1", Reason: schedule.PreemptForStarving, Timeout: 30 * clock.Second, ForAllocation: 9, ForOperation: "ml-2"},
		{Allocation: 6, Operation: "etl-1", Reason: schedule.PreemptForStarving, Timeout: 30 * clock.Second, ForAllocation: 10, ForOperation: "ml-2"},
	}}
	l.observeAt(clock.Time(1), "n-7", r)
	lines := buf.lines(t)
	if len(lines) != 2 {
		t.Fatalf("%d lines: %v", len(lines), lines)
	}
	m := lines[0]
	if m["msg"] != "allocation preempted" || m["node"] != "n-7" || m["allocation"] != 5.0 || m["operation"] != "etl-1" ||
		!strings.Contains(m["reason"].(string), "ml-2") || m["timeout_s"] != 30.0 {
		t.Fatalf("line %v", m)
	}
}
