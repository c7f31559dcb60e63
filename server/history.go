package server

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/history"
	"github.com/fairsched/fairsched/store"
)

// The pools' fair-share history (docs/api.md#pool-history): every
// fair-share update records each pool's dominant usage, fair share and
// demand shares and its starvation (schedule.Scheduler.PoolSamples) in the
// history's tiers (history.Tiers, Options.HistoryTiers), off the heartbeat
// path. Its times are Unix microseconds (the server clock's 0 is the
// process's start; an injected clock's values are used as they are), so
// that a restart lines up with what was kept before it.
//
// With a store, each checkpoint writes, per tier, the steps completed since
// the last one that wrote it (history.History.Segment) as
//
//	checkpoints/history/<step µs>/<last step>/<part>
//
// (history.Snapshot.AppendBinary; a segment of many pools is cut into parts
// of at most historyPartBytes), and deletes the segments older than the
// tier's span. A restart applies them (history.History.Apply): the history
// comes back as the last checkpoint had it, to the last complete step of
// each tier; segments of a step that no tier has (the tiers changed) are
// deleted.

// historyPartBytes bounds one stored segment (an etcd value is at most
// 1.5 MiB by default).
const historyPartBytes = 256 << 10

// historyPrefix is the checkpoints' key prefix of the history's segments.
const historyPrefix = "history/"

// historyState is a Server's history.
type historyState struct {
	mu  sync.Mutex
	t   *history.Tiers
	buf []history.PoolSample
	// written[i] is the newest step of tier i the store holds; segs the
	// segments stored.
	written []int64
	segs    []historySeg
}

// historySeg is a stored segment.
type historySeg struct {
	tier int
	last int64
	key  string
}

func newHistoryState(tiers []history.Config) (*historyState, error) {
	if tiers == nil {
		tiers = history.DefaultTiers()
	}
	t, err := history.NewTiers(tiers)
	if err != nil {
		return nil, err
	}
	h := &historyState{t: t, written: make([]int64, t.Len())}
	for i := range h.written {
		h.written[i] = math.MinInt64 / 4
	}
	return h, nil
}

// historyTime is now on the history's clock (Unix microseconds).
func (s *Server) historyTime(now clock.Time) clock.Time { return clock.Time(s.epochUS + int64(now)) }

// recordHistory records the last fair-share update's samples (from the
// fair-share update loop). A pool change since the update leaves this one
// out.
func (s *Server) recordHistory(now clock.Time) {
	h := s.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	samples, ok := s.sched.PoolSamples(h.buf[:0])
	h.buf = samples[:0]
	if ok {
		h.t.Record(s.historyTime(now), samples)
	}
}

// HistoryNow is the time now on the history's clock: Unix microseconds
// (an injected clock's reading as it is).
func (s *Server) HistoryNow() clock.Time { return s.historyTime(s.Now()) }

// HistoryTiers are the history's resolutions, finest first.
func (s *Server) HistoryTiers() []history.Config { return s.hist.t.Configs() }

// PoolHistory appends pool name's history from since (on the history's
// clock) at step (0: the resolution; else rounded up to a multiple of it)
// from the finest tier that reaches back to since (history.Tiers.Query),
// and returns that tier's resolution. A pool with no sample yet has no
// points; a pool that does not exist is the core's not-found error.
func (s *Server) PoolHistory(name string, since clock.Time, step clock.Duration, dst []history.Point) ([]history.Point, clock.Duration, error) {
	if _, err := s.sched.Pool(name); err != nil {
		return dst, 0, err
	}
	h := s.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.t.Has(name) {
		return dst, h.t.Tier(h.t.Choose(since)).Config().Step, nil
	}
	return h.t.Query(name, since, step, dst)
}

// FairnessError is the cluster's fairness error at the last fair-share
// update (the mean, over the pools with demand, of |dominant usage share −
// dominant fair share|) and its integral over time in share·seconds, kept
// across restarts with the history.
func (s *Server) FairnessError() (current, integral float64) {
	h := s.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.t.FairnessError()
}

// HistoryMemoryBytes is the memory the history's series hold.
func (s *Server) HistoryMemoryBytes() int64 {
	h := s.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.t.MemoryBytes()
}

// historyWrites appends a checkpoint's writes of the history: the complete
// steps of each tier not stored yet, and the deletions of the segments
// that fell out of its span.
func (s *Server) historyWrites(ws []store.Write) []store.Write {
	h := s.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.written {
		tier := h.t.Tier(i)
		head := tier.Head()
		if head == math.MinInt64 {
			continue
		}
		if last := head - 1; last > h.written[i] { // the newest step is not complete
			seg := tier.Segment(h.written[i]+1, last)
			for p, part := range splitSegment(&seg) {
				key := historyKey(tier.Config().Step, last, p)
				ws = append(ws, store.Put(store.Checkpoints, key, part.AppendBinary(nil)))
				h.segs = append(h.segs, historySeg{tier: i, last: last, key: key})
			}
			h.written[i] = last
		}
		oldest := head - int64(tier.Config().Span/tier.Config().Step) + 1
		h.segs = slices.DeleteFunc(h.segs, func(g historySeg) bool {
			if g.tier == i && g.last < oldest {
				ws = append(ws, store.Delete(store.Checkpoints, g.key))
				return true
			}
			return false
		})
	}
	return ws
}

func historyKey(step clock.Duration, last int64, part int) string {
	return historyPrefix + strconv.FormatInt(int64(step), 10) + "/" + strconv.FormatInt(last, 10) + "/" + strconv.Itoa(part)
}

// splitSegment cuts a segment into parts of about historyPartBytes or
// less, by pools; the first has the cluster's series.
func splitSegment(seg *history.Snapshot) []history.Snapshot {
	var parts []history.Snapshot
	cur := *seg
	cur.Pools = nil
	size := 64 + 2*len(seg.Cluster.Values) + len(seg.Cluster.Flags)
	for _, p := range seg.Pools {
		b := 24 + len(p.Name) + 2*len(p.Values) + len(p.Flags)
		if size+b > historyPartBytes && len(cur.Pools) > 0 {
			parts = append(parts, cur)
			cur = *seg
			cur.Pools, cur.Cluster = nil, history.SeriesSnapshot{Head: math.MinInt64}
			size = 64
		}
		cur.Pools = append(cur.Pools, p)
		size += b
	}
	return append(parts, cur)
}

// loadedHistorySeg is a stored segment as load read it.
type loadedHistorySeg struct {
	key   string
	value []byte
}

// restoreHistory applies the stored segments (beginDurable) and returns
// the deletions of those it cannot use.
func (s *Server) restoreHistory(segs []loadedHistorySeg) []store.Write {
	h := s.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	var ws []store.Write
	var bad []string
	restored := 0
	for _, g := range segs {
		tier, last, err := h.parseKey(g.key)
		if err == nil {
			var snap *history.Snapshot
			if snap, err = history.DecodeSnapshot(g.value); err == nil {
				err = h.t.Tier(tier).Apply(snap)
			}
		}
		if err != nil {
			bad = append(bad, g.key+": "+err.Error())
			ws = append(ws, store.Delete(store.Checkpoints, g.key))
			continue
		}
		restored++
		h.segs = append(h.segs, historySeg{tier: tier, last: last, key: g.key})
		h.written[tier] = max(h.written[tier], last)
	}
	if len(bad) > 0 {
		s.log.Warn("history checkpoints that cannot be restored are deleted: their steps are missing from the history", "segments", bad)
	}
	if restored > 0 {
		s.log.Info("history restored from the store", "segments", restored, "pools", h.t.Tier(0).Len())
	}
	return ws
}

// parseKey reads a segment's key: the tier of its step and its last step.
func (h *historyState) parseKey(key string) (tier int, last int64, err error) {
	f := strings.Split(strings.TrimPrefix(key, historyPrefix), "/")
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("cannot read the key: want %s<step µs>/<last step>/<part>", historyPrefix)
	}
	step, err1 := strconv.ParseInt(f[0], 10, 64)
	last, err2 := strconv.ParseInt(f[1], 10, 64)
	if _, err3 := strconv.Atoi(f[2]); err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, fmt.Errorf("cannot read the key: want %s<step µs>/<last step>/<part>, integers", historyPrefix)
	}
	for i, c := range h.t.Configs() {
		if int64(c.Step) == step {
			return i, last, nil
		}
	}
	return 0, 0, fmt.Errorf("cannot restore a history of step %v: the history's tiers are %v", clock.Duration(step), h.t.Configs())
}
