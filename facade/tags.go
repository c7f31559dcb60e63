package facade

import (
	"strconv"
	"sync"
	"time"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/wire"
)

// MaxDistinctNodeTags bounds the distinct tags the registered nodes may
// have between them (each node has at most wire.MaxHeartbeatTags of at
// most wire.MaxTagLength bytes): a heartbeat that would add one more is
// 400 too_many_tags, so that the tags the server keeps stay within 16,384
// strings of 256 bytes. Tags no registered node has any more are
// forgotten when the set is full (at most once every 10 seconds).
const MaxDistinctNodeTags = 1 << 14

// CodeTooManyTags: a heartbeat would take the cluster's distinct node tags
// past MaxDistinctNodeTags.
const CodeTooManyTags = "too_many_tags"

// tagSet is the cluster's distinct node tags.
type tagSet struct {
	mu     sync.RWMutex
	m      map[string]struct{}
	lastGC time.Time
	// gcEvery is the least time between two forgetUnusedTags passes.
	gcEvery time.Duration
}

func (t *tagSet) init() { t.m, t.gcEvery = make(map[string]struct{}), 10*time.Second }

// tagError is the error of a heartbeat whose tags would take the cluster
// past MaxDistinctNodeTags (nil when they do not): entry is the heartbeat's
// index in a batch, -1 for a heartbeat of its own. It allocates nothing
// when every tag is known.
func (s *Server) tagError(tags []string, entry int) *wire.Error {
	t := &s.tags
	t.mu.RLock()
	known := true
	for _, tag := range tags {
		if _, ok := t.m[tag]; !ok {
			known = false
			break
		}
	}
	t.mu.RUnlock()
	if known {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, tag := range tags {
		if _, ok := t.m[tag]; ok {
			continue
		}
		if len(t.m) >= MaxDistinctNodeTags && time.Since(t.lastGC) >= t.gcEvery {
			t.lastGC = time.Now()
			s.forgetUnusedTags()
		}
		if len(t.m) >= MaxDistinctNodeTags {
			path := "$.tags[" + strconv.Itoa(i) + "]"
			if entry >= 0 {
				path = "$.heartbeats[" + strconv.Itoa(entry) + "].tags[" + strconv.Itoa(i) + "]"
			}
			return &wire.Error{Code: CodeTooManyTags, Path: path,
				Message: "cannot take tag " + strconv.Quote(truncate(tag, 64)) + ": the nodes have " + strconv.Itoa(MaxDistinctNodeTags) +
					" distinct tags already, the most the server keeps"}
		}
		t.m[tag] = struct{}{}
	}
	return nil
}

// forgetUnusedTags keeps only the tags of the registered nodes. The caller
// holds s.tags.mu.
func (s *Server) forgetUnusedTags() {
	live := make(map[string]struct{}, len(s.tags.m))
	var page []schedule.NodeSummary
	for after, more := "", true; more; {
		page, more = s.sched.Nodes(page[:0], after, 1000)
		for i := range page {
			for _, tag := range page[i].Tags {
				live[tag] = struct{}{}
			}
		}
		if len(page) > 0 {
			after = page[len(page)-1].Name
		}
	}
	s.tags.m = live
}
