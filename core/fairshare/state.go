package fairshare

import (
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The Updater's state besides its output (see the package documentation,
// "Layout"): per element, per position, per operation and per pool, and the
// accessors that index it.

// elem is what every element has, indexed by tree.ID.
type elem struct {
	pool int32 // slot in Updater.pools; -1 for operations
	kind tree.Kind
}

// nodeState is the per-element state of the function building and the
// top-down pass, indexed by position (see Updater.pos).
type nodeState struct {
	// fnGen changes whenever the fair share by suggestion (Updater.fsbsByPos) is
	// rebuilt, so that parents notice.
	fnGen uint64
	// The last top-down visit: skipped when the pass's mode, the target and
	// the functions are unchanged.
	distGen    uint64
	distTarget resource.Share
	built      bool
	distMode   distMode
	isOp       bool // an operation
}

// distMode is the pass of an element's last top-down visit, if any. The
// modes' targets are not comparable (the classic pass's is a suggestion,
// the improved pass's a share), so a visit of the other mode never counts.
type distMode uint8

const (
	distNone distMode = iota // not visited, or invalidated
	distClassic
	distImproved
)

// opRaw is an operation's input from the tree as of the last update,
// indexed by tree.ID (read in ID order, as the tree stores it).
type opRaw struct {
	demand, usage resource.Vec
	limits        tree.PartialVec
	nodesGen      uint64 // tree.NodeLimitsGen
	weight        tree.OptFloat
	gang          bool
	valid         bool
}

// opInput is what an operation's function and its parent's sums are built
// from, indexed by position (read in position order).
type opInput struct {
	demand resource.Vec // max(demand, usage)
	usage  resource.Vec
	// Shares as in the attributes.
	usageShare, demandShare, limitsShare resource.Share
	gang                                 bool
	changed                              bool // input changed since the last update
	weightChanged                        bool // weight changed since the last update
	pending                              bool // the function is to be rebuilt (by prepare)
}

// poolState is the state only pools (and the root) have, in a dense table.
type poolState struct {
	// NB: the fields are ordered by the passes that read them, those every
	// pass reads first (kids, the cut), then the per-pool passes' sums and
	// shares, so that a pass over the pools touches few cache lines of each
	// (the struct is over a kilobyte).
	id tree.ID
	// Pool children, a range of Updater.poolKids.
	kidStart, kidEnd int32
	// The cut for the parallel phases (parallel.go): split pools are
	// handled by the calling goroutine; task is the index of the task whose
	// root the pool is, or -1.
	task  int32
	split bool
	// underIntegral: an integral pool is above this one (the volume
	// passes skip its subtree).
	underIntegral bool
	// From the pool's configuration (set by layout, which a configuration
	// change runs): the pool is integral (isIntegral), and it can accept
	// free volume (canAcceptFreeVolume).
	integral, acceptFree bool
	// kidsDirty: an operation child's function or weight, or the list of
	// children, changed since fsbff was built.
	kidsDirty bool
	// opsChanged: updateOperations found an operation child changed (opSums).
	// fifoCheck: a FIFO pool whose order sortFifo checks next.
	// pathDirty: an operation below changed (cumulativePath); the pool's
	// ancestors are marked too.
	opsChanged, fifoCheck, pathDirty bool

	opUsage, opDemand resource.Vec // sums over the operation children
	usage, demand     resource.Vec // absolute, whole subtree

	burstRatio, flowRatio           float64
	totalBurstRatio, totalFlowRatio float64

	inferred resource.Vec

	tierPriority, tierRegular resource.Share

	// Integral state, persisted across updates.
	overflow       [resource.Count]float64
	acceptable     [resource.Count]float64
	childOverflow  [resource.Count]float64
	acceptedFree   [resource.Count]float64
	volume         [resource.Count]float64
	lastShareRatio float64

	// Fair share by fit factor and (classic mode) max fit factor by
	// suggestion. fsbffKey records what fsbff was built from and fsbffGen
	// counts its rebuilds; fsbsKey records what fsbs and mffbs were built
	// from.
	fsbff      plf.Vec
	mffbs      plf.Scalar
	fsbffKey   fsbffKey
	fsbffGen   uint64
	fsbffValid bool
	fsbsKey    fsbsKey
	kidsSig    uint64 // signature of the children list
	// Improved-mode critical points of a fair-share-mode pool: suggestion and
	// the child whose jump it is, one per unit of the fit factor.
	critSuggestion []float64
	critOwner      []int32
	// What the top-down pass keeps of fsbff (distribute.go).
	fit fitCache

	// The fair share by suggestion under the integral passes' temporary
	// guarantee or limits (docs/semantics.md#integral-guarantees), rebuilt each update in
	// Updater.tmpArena from the pool's (kept) fair share by fit factor; the
	// pool's own fsbs is left alone, so an unchanged pool is not rebuilt.
	tmpFsbs plf.Vec
}

// fsbs returns element id's fair share by suggestion.
func (u *Updater) fsbs(id tree.ID) *plf.Vec { return &u.fsbsByPos[u.pos[id]] }

// nodeOf returns element id's node state.
func (u *Updater) nodeOf(id tree.ID) *nodeState { return &u.node[u.pos[id]] }

// kidFsbs returns the fair shares by suggestion of id's children, in tree order.
func (u *Updater) kidFsbs(id tree.ID) []plf.Vec { return u.fsbsByPos[u.childStart[id]:u.childEnd[id]] }

// kidWeights returns the weights of id's children, in tree order.
func (u *Updater) kidWeights(id tree.ID) []float64 {
	return u.weightByPos[u.childStart[id]:u.childEnd[id]]
}

// setWeight sets element id's weight.
func (u *Updater) setWeight(id tree.ID, w float64) {
	u.attrs[id].Weight = w
	u.weightByPos[u.pos[id]] = w
}

// children returns id's children in tree order.
func (u *Updater) children(id tree.ID) []tree.ID {
	return u.childBuf[u.childStart[id]:u.childEnd[id]]
}

// fifoOrder returns a FIFO pool's children in FIFO order.
func (u *Updater) fifoOrder(id tree.ID) []tree.ID {
	return u.fifoBuf[u.childStart[id]:u.childEnd[id]]
}

// kids returns the slots of pool slot p's pool children, in tree order.
func (u *Updater) kids(p int32) []int32 {
	ps := &u.pools[p]
	return u.poolKids[ps.kidStart:ps.kidEnd]
}

// pool returns id's pool state; id must be a pool or the root.
func (u *Updater) pool(id tree.ID) *poolState { return &u.pools[u.elems[id].pool] }
