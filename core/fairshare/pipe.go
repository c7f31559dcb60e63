package fairshare

import (
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
)

// The pipelined sweep: sweepSlope on two goroutines, for a split pool
// (parallel.go; on the realistic trees the root, whose sweep over 200
// children's 65,000 critical points is the longest serial step of an
// update) while the other workers have nothing to do. A producer runs the
// heap and the children's cursors (sweepChild.event) and hands the critical
// points over in chunks; the caller, the consumer, carries the running sum
// and the summed slope and appends the output.
//
// NB: the result is sweepSlope's bit for bit: every number is computed by
// the same expression from the same operands in the same order, only on
// the other goroutine. The producer knows where the groups of equal
// arguments end and where sweepSlope resynchronises (after syncEvery·C
// points, counted the same way), and computes the exact sum there from the
// cursors, which are where sweepSlope has them at that moment; the
// consumer keeps every child's last slope, which is what sweepSlope swaps
// out. The chunks go back and forth over channels, so a side that waits
// blocks instead of spinning (the machine may be busy with other work).

// pipeChunks chunks of pipeChunk critical points circulate between the
// producer and the consumer.
const (
	pipeChunk  = 1024
	pipeChunks = 8
)

// sweepEvent is one critical point handed over: child's point at s, the
// limits there when they jump (l, r; nil otherwise) and the child's slope
// after it; last ends the group of points at s, after which the sum is
// resynchronised to ex if resync; end ends the sweep.
type sweepEvent struct {
	s      float64
	l, r   *plf.Value
	slope  resource.Share
	ex     resource.Share
	child  int32
	last   bool
	resync bool
	end    bool
}

// sweepPipe is the pipelined sweep's state, kept by the worker: the
// chunks, the indexes of the filled ones (full; the last one as ^index) and
// of those to fill (free), the producer's end (done), and a panic on the
// producer, raised again on the consumer.
type sweepPipe struct {
	buf      []sweepEvent
	full     chan int32
	free     chan int32
	done     chan struct{}
	panicked bool
	panicVal any
}

// sweepSlopePiped is sweepSlope with the heap and the cursors on another
// goroutine (see above).
func (w *worker) sweepSlopePiped(f *plf.Vec, sum resource.Share, improved bool, critSuggestion []float64, critOwner []int32) ([]float64, []int32) {
	p := &w.pipe
	if p.buf == nil {
		p.buf = make([]sweepEvent, pipeChunk*pipeChunks)
		p.full = make(chan int32, pipeChunks)
		p.free = make(chan int32, pipeChunks)
		p.done = make(chan struct{})
		for i := range int32(pipeChunks) {
			p.free <- i
		}
	}
	p.panicked, p.panicVal = false, nil
	go w.sweepProduce(p, improved)
	ended := false
	defer func() {
		if ended {
			return
		}
		// A panic here: take the producer's chunks until its last, so that
		// it neither blocks nor outlives the update, and start afresh next
		// time (the chunk being read is not given back).
		for c := <-p.full; c >= 0; c = <-p.full {
			p.free <- c
		}
		<-p.done
		*p = sweepPipe{}
	}()
	critSuggestion, critOwner = w.sweepConsume(p, f, sum, improved, critSuggestion, critOwner)
	<-p.done
	ended = true
	if p.panicked {
		v := p.panicVal
		p.panicked, p.panicVal = false, nil
		panic(v)
	}
	return critSuggestion, critOwner
}

// sweepProduce is the producer: sweepSlope's heap and cursors.
func (w *worker) sweepProduce(p *sweepPipe, improved bool) {
	chunk := <-p.free
	n := 0 // events in chunk
	ev := func() *sweepEvent {
		if n == pipeChunk {
			p.full <- chunk
			chunk, n = <-p.free, 0
		}
		n++
		return &p.buf[int(chunk)*pipeChunk+n-1]
	}
	defer func() {
		if v := recover(); v != nil {
			p.panicked, p.panicVal = true, v
		}
		// The end event, in the last chunk.
		*ev() = sweepEvent{end: true}
		p.full <- ^chunk
		p.done <- struct{}{}
	}()
	sinceSync := 0
	for len(w.heap) > 0 {
		j := w.heap[0].child
		c := &w.sweep[j]
		s := c.nextS
		if !improved && s > 1 {
			break
		}
		for {
			l, r, jump := c.event()
			e := ev()
			e.s, e.child, e.slope = s, j, c.slope
			e.l, e.r = nil, nil
			if jump {
				e.l, e.r = l, r
			}
			e.last, e.resync, e.end = false, false, false
			w.advanceSweep(c)
			sinceSync++
			last := improved || len(w.heap) == 0
			if !last {
				j = w.heap[0].child
				c = &w.sweep[j]
				last = c.nextS != s
			}
			if last {
				e.last = true
				if sinceSync >= syncEvery*len(w.sweep) {
					sinceSync = 0
					e.resync = true
					e.ex = w.exactSum(s)
				}
				break
			}
		}
	}
}

// sweepConsume is the consumer: sweepSlope's sums and output, from the
// events the producer hands over, up to the end event.
func (w *worker) sweepConsume(p *sweepPipe, f *plf.Vec, sum resource.Share, improved bool, critSuggestion []float64, critOwner []int32) ([]float64, []int32) {
	slopes := w.pipeSlopes[:0]
	for range w.sweep {
		slopes = append(slopes, resource.Share{})
	}
	w.pipeSlopes = slopes
	var slope slopeSum
	out := sweepOut{f: f, improved: improved}
	prevS := 0.0
	first := true
	moved := false
	var left resource.Share
	for {
		c := <-p.full
		if c < 0 {
			c = ^c // the last chunk: it holds the end event
		}
		evs := p.buf[int(c)*pipeChunk : int(c+1)*pipeChunk]
		for i := range evs {
			ev := &evs[i]
			if ev.end {
				p.free <- c
				return critSuggestion, critOwner
			}
			s := ev.s
			if first {
				if s != prevS {
					for r := range resource.Count {
						if slope.nonFlat[r] != 0 {
							sum[r] += slope.at(r) * (s - prevS)
						}
					}
					prevS = s
				}
				left = sum.Max(out.last)
				moved = false // the sum changed at s
				first = false
			}
			if ev.l != nil {
				sum = sum.Add((*ev.r).Sub(*ev.l))
				moved = true
			}
			old := &slopes[ev.child]
			slope.swap(old, &ev.slope)
			*old = ev.slope
			if improved {
				critSuggestion, critOwner = append(critSuggestion, s), append(critOwner, ev.child)
			}
			if ev.last {
				if ev.resync {
					// Resynchronise the moving components (sweepSlope).
					for k := range resource.Count {
						if slope.nonFlat[k] != 0 {
							sum[k] = ev.ex[k]
						}
					}
					moved = true
				}
				out.add(s, left, sum, moved)
				first = true
			}
		}
		p.free <- c
	}
}
