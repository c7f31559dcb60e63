package fairshare

import (
	"cmp"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Parallel phases: the function building and the top-down pass of disjoint
// subtrees run on up to GOMAXPROCS goroutines, each with its own scratch (a
// worker). The tree is cut once per layout (split): the pools whose subtree
// holds more than 1/splitParts of the elements are split, handled by the
// calling goroutine (bottom-up after, top-down before the subtrees below
// them), and the subtrees hanging from split pools are tasks, taken by the
// workers largest first.
//
// NB: the results do not depend on GOMAXPROCS nor on which worker takes
// which task, bit for bit: a task reads and writes only its own subtree's
// state (and reads the tree and the state the serial phases left), every
// number is computed by the same code from the same inputs whichever
// goroutine computes it, and the scratch a worker carries from task to task
// is overwritten before it is read. What does differ is the generations
// (each worker draws its own, see worker.nextGen), which are only ever
// compared for equality.

// splitParts is the number of parts the split aims at: a pool whose subtree
// holds more than 1/splitParts of the tree's elements is split. The tasks
// are then small enough for any GOMAXPROCS up to a few times fewer than
// that to balance, and on the realistic trees only the root is split.
const splitParts = 32

// maxWorkers bounds the goroutines of a parallel phase.
const maxWorkers = 64

// genShift puts a worker's index in the top bits of the generations it
// draws, so that workers never draw the same one.
const genShift = 56

// worker is the scratch of one goroutine of a parallel phase; workers[0] is
// the calling goroutine's, which the serial phases use too.
type worker struct {
	gen uint64 // the last generation drawn: index<<genShift | count

	opFF       plf.Vec
	scratchVec plf.Vec
	sweep      []sweepChild
	heap       []sweepKey
	vals       []plf.Value // sweepExact
	mov        []int32     // sweepExact
	stack      [][]resource.Share
	stackSpare [][]resource.Share
	shares     []resource.Share
	piece      []pieceVals // fitFactorFor's piece, for pieceSum and pieceShares
	order      []int32     // distributeFreeVolumePool
	opDirty    []uint64    // setOpShare: the operations whose fair share is in Updater.opShare, by ID
	// piped: sweep large pools on two goroutines (sweepSlopePiped), set by
	// prepareAll for the split pools; pipe and pipeSlopes are its state.
	piped      bool
	pipe       sweepPipe
	pipeSlopes []resource.Share
}

// nextGen returns a generation no worker has drawn before.
func (w *worker) nextGen() uint64 {
	w.gen++
	return w.gen
}

// task kinds of a parallel phase: a task's subtree (a task index), an
// integral pool (a pool slot), or a chunk of the operations (opChunk of
// u.opIDs) or of the pools (poolChunk of u.poolsByID).
const (
	taskPrepare       = iota // prepare the task's subtree
	taskPrepareInt           // prepare an integral pool's children and fair share by fit factor
	taskDistVec              // the improved top-down pass of the task's subtree
	taskDist                 // the classic top-down pass of the task's subtree
	taskInfer                // strong guarantee inference in the task's subtree
	taskCumulative           // subtree attributes and strong guarantee tiers in the task's subtree
	taskOverflow             // integral overflow and room in the task's subtree
	taskFreeVolume           // free integral volume down the task's subtree
	taskAdjust               // strong guarantee adjustment and weights in the task's subtree
	taskOps                  // updateOps on a chunk of the operations
	taskOpSums               // opSums on a chunk of the pools
	taskDetail               // detailPoolsOf on a chunk of the pools
	taskIntegralAttrs        // integralAttributesOf on a chunk of the pools
	taskOpAttrs              // opAttrs on a chunk of the IDs (idChunk)
)

// The chunks of the flat passes.
const (
	opChunk   = 4096
	poolChunk = 512
	idChunk   = 4096 // a multiple of 64
)

// parallel is the state of the running parallel phase.
type parallel struct {
	wg    sync.WaitGroup
	next  atomic.Int32
	kind  int
	items []int32 // pool slots (taskPrepareInt) or task indexes
	// A panic on a started goroutine, raised again on the calling one when
	// the phase ends, as it would have been without goroutines.
	mu       sync.Mutex
	panicked bool
	panicVal any
}

// worker0 returns the calling goroutine's worker.
func (u *Updater) worker0() *worker {
	if len(u.workers) == 0 {
		u.workers = append(u.workers, &worker{})
	}
	return u.workers[0]
}

// ensureWorkers makes sure there is a worker for every goroutine a phase
// may run on now.
func (u *Updater) ensureWorkers() {
	u.worker0()
	for len(u.workers) < min(runtime.GOMAXPROCS(0), maxWorkers) {
		u.workers = append(u.workers, &worker{gen: uint64(len(u.workers)) << genShift})
	}
}

// run runs the phase's tasks on min(GOMAXPROCS, len(items)) goroutines, the
// calling one included, and returns when all are done.
func (u *Updater) run(kind int, items []int32) {
	u.ensureWorkers()
	n := min(runtime.GOMAXPROCS(0), len(items), maxWorkers)
	ph := u.startPhase(kind, items, n)
	func() {
		defer ph.wg.Wait() // even when the calling goroutine panics
		u.work(u.workers[0], false)
	}()
	ph.end()
}

// startPhase starts a phase's n-1 other goroutines.
func (u *Updater) startPhase(kind int, items []int32, n int) *parallel {
	ph := &u.par
	ph.kind, ph.items = kind, items
	ph.panicked, ph.panicVal = false, nil
	ph.next.Store(0)
	for i := 1; i < n; i++ {
		ph.wg.Add(1)
		go u.work(u.workers[i], true)
	}
	return ph
}

// end ends a phase whose goroutines are done, raising again a panic of one
// of them on the calling goroutine, as it would have been raised without
// goroutines (the phase's other tasks have run).
func (ph *parallel) end() {
	ph.items = nil
	if ph.panicked {
		v := ph.panicVal
		ph.panicked, ph.panicVal = false, nil
		panic(v)
	}
}

// runWhile is run, but the calling goroutine first does serial's work while
// the others take tasks; then it takes tasks too.
func (u *Updater) runWhile(kind int, items []int32, serial func()) {
	u.ensureWorkers()
	n := min(runtime.GOMAXPROCS(0), len(items)+1, maxWorkers)
	ph := u.startPhase(kind, items, n)
	func() {
		defer ph.wg.Wait() // even when the calling goroutine panics
		serial()
		u.work(u.workers[0], false)
	}()
	ph.end()
}

// work takes the phase's tasks until none is left. A started goroutine
// (done) keeps a panic for the calling one (parallel.end).
func (u *Updater) work(w *worker, done bool) {
	ph := &u.par
	if done {
		defer func() {
			if v := recover(); v != nil {
				ph.mu.Lock()
				if !ph.panicked {
					ph.panicked, ph.panicVal = true, v
				}
				ph.mu.Unlock()
			}
			ph.wg.Done()
		}()
	}
	for {
		i := int(ph.next.Add(1)) - 1
		if i >= len(ph.items) {
			break
		}
		it := ph.items[i]
		switch ph.kind {
		case taskPrepare:
			u.prepare(w, u.taskPool[it])
		case taskPrepareInt:
			u.prepareKids(w, it)
			u.prepareOperations(w, it)
			u.prepareFSBFF(w, it)
		case taskDistVec:
			u.distributeVec(w, u.pools[u.taskPool[it]].id, u.taskTarget[it], regular, false)
		case taskDist:
			u.distribute(w, u.pools[u.taskPool[it]].id, u.taskSug[it], regular, false)
		case taskInfer:
			for _, p := range u.prePools[u.taskPre[2*it]:u.taskPre[2*it+1]] {
				u.inferKids(p)
			}
		case taskCumulative:
			u.cumulativeTree(u.taskPool[it])
		case taskOverflow:
			u.overflowAndAcceptable(u.taskPool[it])
		case taskFreeVolume:
			u.distributeFreeVolume(w, u.taskPool[it])
		case taskAdjust:
			u.adjustStrong(u.taskPool[it])
		case taskOps:
			lo := int(it) * opChunk
			u.updateOps(lo, min(lo+opChunk, len(u.opIDs)))
		case taskOpAttrs:
			lo := int(it) * idChunk
			u.opAttrs(lo, min(lo+idChunk, len(u.attrs)))
		default:
			lo := int(it) * poolChunk
			hi := min(lo+poolChunk, len(u.poolsByID))
			switch ph.kind {
			case taskOpSums:
				u.opSums(lo, hi)
			case taskDetail:
				u.detailPoolsOf(lo, hi)
			case taskIntegralAttrs:
				u.integralAttributesOf(lo, hi)
			}
		}
	}
}

// split cuts the tree for the parallel phases (see above): it marks the
// split pools and lists the tasks' root pools, largest subtree first.
// Called by layout.
func (u *Updater) split() {
	// Per pool slot: the elements and the pools in its subtree.
	size := slices.Grow(u.splitSize[:0], 2*len(u.pools))[:2*len(u.pools)]
	u.splitSize = size
	size, npools := size[:len(u.pools)], size[len(u.pools):]
	for i := len(u.prePools) - 1; i >= 0; i-- {
		p := u.prePools[i]
		ps := &u.pools[p]
		n := int32(1) + (u.childEnd[ps.id] - u.childStart[ps.id]) - (ps.kidEnd - ps.kidStart)
		np := int32(1)
		for _, c := range u.kids(p) {
			n += size[c]
			np += npools[c]
		}
		size[p], npools[p] = n, np
		ps.split, ps.task = false, -1
	}
	root := u.elems[tree.Root].pool
	limit := size[root] / splitParts
	u.taskPool, u.splitPre = u.taskPool[:0], u.splitPre[:0]
	// In pre-order: a task's subtree is a range of u.prePools, from its
	// root to the next pool that is not below it.
	var preIdx []int32 // the task roots' indexes in u.prePools
	for i, p := range u.prePools {
		ps := &u.pools[p]
		ps.underIntegral = p != root && u.hasIntegralAncestor(ps.id)
		ps.integral, ps.acceptFree = u.isIntegral(ps.id), u.canAcceptFreeVolume(ps.id)
		if p != root {
			parent := &u.pools[u.elems[u.tree.Parent(ps.id)].pool]
			if !parent.split {
				continue // inside a task
			}
		}
		if p != root && (size[p] <= limit || ps.kidEnd == ps.kidStart) {
			u.taskPool = append(u.taskPool, p)
			preIdx = append(preIdx, int32(i))
			continue
		}
		ps.split = true
		u.splitPre = append(u.splitPre, p)
	}
	tp := u.taskPool
	order := make([]int32, len(tp))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(size[tp[b]], size[tp[a]]); c != 0 {
			return c
		}
		return cmp.Compare(tp[a], tp[b])
	})
	n := len(tp)
	sorted := make([]int32, n)
	u.taskPre = u.taskPre[:0]
	for i, o := range order {
		sorted[i] = tp[o]
		u.pools[tp[o]].task = int32(i)
		u.taskPre = append(u.taskPre, preIdx[o], preIdx[o]+npools[tp[o]])
	}
	u.taskPool = sorted
	u.taskTarget = resizeShares(u.taskTarget, n)
	u.taskSug = resizeFloats(u.taskSug, n)
	// The tasks with an integral pool in or above their subtree: their
	// functions wait for the integral passes (prepareAll).
	affected := make([]bool, n)
	for _, ids := range [2][]tree.ID{u.burst, u.relaxed} {
		for _, id := range ids {
			for a := id; a != tree.None; a = u.tree.Parent(a) {
				if t := u.pools[u.elems[a].pool].task; t >= 0 {
					affected[t] = true
					break
				}
			}
		}
	}
	u.allTasks, u.freeTasks = u.allTasks[:0], u.freeTasks[:0]
	u.plainTasks, u.intAffected = u.plainTasks[:0], u.intAffected[:0]
	for i := range n {
		u.allTasks = append(u.allTasks, int32(i))
		if !u.pools[sorted[i]].underIntegral {
			u.freeTasks = append(u.freeTasks, int32(i))
		}
		if affected[i] || u.pools[sorted[i]].underIntegral {
			u.intAffected = append(u.intAffected, int32(i))
		} else {
			u.plainTasks = append(u.plainTasks, int32(i))
		}
	}
	u.poolChunks = chunks(u.poolChunks, len(u.poolsByID), poolChunk)
	u.opChunks = chunks(u.opChunks, len(u.opIDs), opChunk)
	u.idChunks = chunks(u.idChunks, len(u.attrs), idChunk)
	// The integral pools without an integral ancestor, largest first: their
	// subtrees are disjoint.
	u.intTasks = u.intTasks[:0]
	for _, p := range u.prePools {
		if id := u.pools[p].id; u.isIntegral(id) && !u.hasIntegralAncestor(id) {
			u.intTasks = append(u.intTasks, p)
		}
	}
	slices.SortFunc(u.intTasks, func(a, b int32) int {
		if c := cmp.Compare(size[b], size[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// hasIntegralAncestor reports whether a pool above id is integral.
func (u *Updater) hasIntegralAncestor(id tree.ID) bool {
	for a := u.tree.Parent(id); a != tree.Root && a != tree.None; a = u.tree.Parent(a) {
		if u.isIntegral(a) {
			return true
		}
	}
	return false
}

// chunks returns the indexes of the chunks of size k of n items.
func chunks(dst []int32, n, k int) []int32 {
	dst = dst[:0]
	for i := 0; i*k < n; i++ {
		dst = append(dst, int32(i))
	}
	return dst
}

func resizeShares(s []resource.Share, n int) []resource.Share {
	if cap(s) < n {
		return make([]resource.Share, n)
	}
	return s[:n]
}

func resizeFloats(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// bitIndex returns the index of the one bit set in b.
func bitIndex(b uint64) int { return bits.TrailingZeros64(b) }
