package fairshare

import (
	"cmp"
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
	stack      [][]resource.Share
	stackSpare [][]resource.Share
	shares     []resource.Share
	pieceFrom  []resource.Share
	pieceTo    []resource.Share
	pieceAt    []resource.Share
}

// nextGen returns a generation no worker has drawn before.
func (w *worker) nextGen() uint64 {
	w.gen++
	return w.gen
}

// task kinds of a parallel phase.
const (
	taskPrepare    = iota // prepare the task's subtree
	taskPrepareInt        // prepare an integral pool's children and fair share by fit factor
	taskDistVec           // the improved top-down pass of the task's subtree
	taskDist              // the classic top-down pass of the task's subtree
)

// parallel is the state of the running parallel phase.
type parallel struct {
	wg    sync.WaitGroup
	next  atomic.Int32
	kind  int
	items []int32 // pool slots (taskPrepareInt) or task indexes
}

// worker0 returns the calling goroutine's worker.
func (u *Updater) worker0() *worker {
	if len(u.workers) == 0 {
		u.workers = append(u.workers, &worker{})
	}
	return u.workers[0]
}

// run runs the phase's tasks on min(GOMAXPROCS, len(items)) goroutines, the
// calling one included, and returns when all are done.
func (u *Updater) run(kind int, items []int32) {
	u.worker0()
	n := min(runtime.GOMAXPROCS(0), len(items), maxWorkers)
	for len(u.workers) < n {
		u.workers = append(u.workers, &worker{gen: uint64(len(u.workers)) << genShift})
	}
	ph := &u.par
	ph.kind, ph.items = kind, items
	ph.next.Store(0)
	for i := 1; i < n; i++ {
		ph.wg.Add(1)
		go u.work(u.workers[i], true)
	}
	u.work(u.workers[0], false)
	ph.wg.Wait()
	ph.items = nil
}

// work takes the phase's tasks until none is left.
func (u *Updater) work(w *worker, done bool) {
	ph := &u.par
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
		}
	}
	if done {
		ph.wg.Done()
	}
}

// split cuts the tree for the parallel phases (see above): it marks the
// split pools and lists the tasks' root pools, largest subtree first.
// Called by layout.
func (u *Updater) split() {
	size := u.splitSize[:0]
	for range u.pools {
		size = append(size, 0)
	}
	u.splitSize = size
	for i := len(u.prePools) - 1; i >= 0; i-- {
		p := u.prePools[i]
		ps := &u.pools[p]
		n := int32(1) + (u.childEnd[ps.id] - u.childStart[ps.id]) - (ps.kidEnd - ps.kidStart)
		for _, c := range u.kids(p) {
			n += size[c]
		}
		size[p] = n
		ps.split, ps.task = false, -1
	}
	root := u.elems[tree.Root].pool
	limit := size[root] / splitParts
	u.taskPool = u.taskPool[:0]
	var cut func(p int32)
	cut = func(p int32) {
		ps := &u.pools[p]
		if p != root && (size[p] <= limit || ps.kidEnd == ps.kidStart) {
			u.taskPool = append(u.taskPool, p)
			return
		}
		ps.split = true
		for _, c := range u.kids(p) {
			cut(c)
		}
	}
	cut(root)
	tp := u.taskPool
	slices.SortFunc(tp, func(a, b int32) int {
		if c := cmp.Compare(size[b], size[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for i, p := range tp {
		u.pools[p].task = int32(i)
	}
	n := len(tp)
	u.taskTarget = resizeShares(u.taskTarget, n)
	u.taskSug = resizeFloats(u.taskSug, n)
	u.allTasks = u.allTasks[:0]
	for i := range n {
		u.allTasks = append(u.allTasks, int32(i))
	}
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
