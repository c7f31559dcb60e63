package fairshare

import (
	"fmt"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/plf"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// The Updater and its entry point, Update, which runs the phases of
// docs/semantics.md#fair-share in order; each phase lives in the file Update names.

// Updater runs fair-share updates over a tree. See the package documentation.
type Updater struct {
	tree *tree.Tree
	cfg  Config

	attrs []Attributes
	elems []elem
	opRaw []opRaw   // by ID
	opIn  []opInput // by position
	opIDs []tree.ID // the operations, ascending
	names []string  // per ID: the name the state belongs to (recycled IDs)

	// State by position: an element's position is its index in childBuf
	// (the root's is len(childBuf)), so a pool's children are adjacent, in
	// the order the pool reads them, and operations are visited in order.
	pos         []int32
	fsbsByPos   []plf.Vec   // fair shares by suggestion
	pieceByPos  []pieceVals // the children's shares in their parent's piece (pieceLimits)
	fsbsSpare   []plf.Vec
	weightByPos []float64 // weights
	node        []nodeState
	nodeSpare   []nodeState
	opInSpare   []opInput

	pools     []poolState
	freePools []int32

	layoutVersion uint64
	layoutValid   bool
	prePools      []int32 // pool slots in pre-order
	checkPools    []int32 // the pools validatePoolConfigs checks, in pre-order
	childStart    []int32
	childEnd      []int32
	childBuf      []tree.ID
	fifoBuf       []tree.ID
	poolKids      []int32 // pool children's slots, per pool a range
	burst         []tree.ID
	relaxed       []tree.ID

	total    resource.Vec
	now      clock.Time
	prev     clock.Time
	hasPrev  bool
	promised []tree.ID // elements whose promised fair share is set

	// What the operations' attributes and functions were computed with.
	opTotal    resource.Vec
	opStepGang bool
	opValid    bool
	// updateOperations: the tree's change log read up to opCursor; look at
	// every operation at the next update (opScanAll: the layout changed, or
	// Invalidate); this update looked at every operation (opSumsAll).
	opCursor  uint64
	opScanAll bool
	opSumsAll bool

	alerts []string

	// The guarantees (strong guarantee inference, the pools' integral
	// ratios, limits shares, tiers and adjusted strong guarantee shares,
	// and the weights) depend only on the tree's structure and
	// configuration, the pools' node limits, the total and the Config. When
	// none changed since the last update, which computed them, they are
	// kept (keepGuarantees), with the alerts their adjustment raised
	// (guaranteeAlerts); what they were computed with is in guarantee*.
	keepGuarantees     bool
	guaranteeAlerts    []string
	guaranteeCfg       Config
	guaranteePoolNodes uint64
	guaranteeValid     bool

	// The parallel phases (parallel.go): the workers' scratch, the running
	// phase, and the cut of the tree into split pools and tasks (by layout).
	workers     []*worker
	par         parallel
	taskPool    []int32          // the tasks' root pools, largest first
	allTasks    []int32          // 0, 1, …, len(taskPool)-1
	taskTarget  []resource.Share // per task: its root's target (improved pass)
	taskSug     []float64        // per task: its root's suggestion (classic pass)
	taskRun     []int32          // the tasks the top-down pass visits
	taskPre     []int32          // per task: its pools' range in prePools (start, end)
	freeTasks   []int32          // the tasks not below an integral pool
	splitPre    []int32          // the split pools, in pre-order
	intTasks    []int32          // the integral pools with no integral ancestor
	plainTasks  []int32          // the tasks with no integral pool in or above their subtree
	intAffected []int32          // the other tasks
	poolChunks  []int32          // the chunks of poolsByID (flat passes)
	poolsByID   []int32          // the pool slots in ID order (flat passes: Attributes and the tree's pools stream)
	opChunks    []int32          // the chunks of opIDs (updateOps)
	idChunks    []int32          // the chunks of the IDs (opAttrs)
	opShare     []resource.Share // by ID: an operation's fair share, for opAttrs
	opSameEnv   bool             // updateOps: total and gang option as before
	splitSize   []int32          // per pool slot: elements in its subtree

	// scratch
	relaxedPools []tree.ID
	relaxedW     []float64
	tmpArena     plf.Vec // storage of the temporary functions (tmpFsbs)
	tmpUsed      int     // points of tmpArena used in this update
	tmpNeed      int     // points the temporary functions took in this update
}

// New returns an Updater for t with configuration cfg.
func New(t *tree.Tree, cfg Config) *Updater {
	return &Updater{tree: t, cfg: cfg}
}

// Update runs one fair-share update at virtual time now with the cluster's
// total resources. Under the invariants build tag and -race it then checks
// the fair shares (checkFairShares) and panics on a violation.
func (u *Updater) Update(total resource.Vec, now clock.Time) {
	u.alerts = u.alerts[:0]
	u.layout()
	u.total = total
	u.now = now
	for _, id := range u.promised {
		if int(id) < len(u.attrs) {
			u.attrs[id].PromisedGuaranteeFairShare = Detailed{}
		}
	}
	u.promised = u.promised[:0]
	// The steps of docs/semantics.md#fair-share, each in the file named.
	// 1. Configuration alerts (validate.go).
	u.validatePoolConfigs()
	// The operations' inputs first (bottomup.go): which changed decides
	// whether the guarantees are kept (keepGuarantees). The pools'
	// per-update state starts here too (opSums): the proposed integral
	// shares and the integral overflow are zeroed.
	u.updateOperations()
	u.keepGuarantees = u.guaranteesUnchanged()
	// 2. Strong guarantee inference (guarantees.go).
	if !u.keepGuarantees {
		u.inferStrongGuarantees()
	}
	// 3. The burst and relaxed pool lists: kept by layout (layout.go).
	// 4. Per-element attributes bottom-up (bottomup.go).
	u.cumulative()
	// 5. Integral volumes consumed, refilled and overflowing (integral.go).
	u.consumeAndRefill()
	// 6. Guarantee adjustment (guarantees.go), and the weights inferred
	// from the adjusted guarantees.
	u.adjustGuarantees()
	// 7–8. Burst and relaxed pools' integral shares (integral.go), on
	// temporary functions (functions.go), and 9. the fair-share functions
	// bottom-up (functions.go, sweep.go, envelope.go), distributed top-down
	// from the root (distribute.go). The integral pools' subtrees' functions
	// are built first, in parallel, and while the integral passes run the
	// other workers build the subtrees they do not touch (prepareAll).
	u.prepareAll()
	u.distributeAll()
	// The pools' detailed decomposition, whether the top-down pass visited
	// them or not (detailed.go).
	u.detailPools()
	// 10. Promised-guarantee fair share (promised.go).
	u.promisedFairShare(u.elems[tree.Root].pool)
	// 11. The root's fair share (detailed.go).
	u.rootFairShare()
	// The integral pools' orchid attributes (integral.go).
	u.integralAttributes()
	u.sizeTmpArena()
	u.prev, u.hasPrev = now, true
	if invariants.Enabled {
		u.checkFairShares() // invariants.go
	}
}

// guaranteesUnchanged reports whether the guarantees the last update
// computed hold for this one (see keepGuarantees) and records what this
// update computes them with. updateOperations has run: it took its
// incremental way only when the layout (the tree's structure and the pools'
// configuration), the total and the gang option are as before and nothing
// was invalidated.
func (u *Updater) guaranteesUnchanged() bool {
	nodes := u.tree.PoolNodeLimitsVersion()
	keep := u.guaranteeValid && !u.opSumsAll && u.guaranteeCfg == u.cfg && u.guaranteePoolNodes == nodes
	u.guaranteeCfg, u.guaranteePoolNodes, u.guaranteeValid = u.cfg, nodes, true
	return keep
}

// Config returns the configuration.
func (u *Updater) Config() Config { return u.cfg }

// SetConfig replaces the configuration; it takes effect on the next update.
func (u *Updater) SetConfig(cfg Config) { u.cfg = cfg }

// Tree returns the tree the Updater works on.
func (u *Updater) Tree() *tree.Tree { return u.tree }

// Attributes returns element id's attributes after the last update. The
// pointer stays valid until the next update.
func (u *Updater) Attributes(id tree.ID) *Attributes { return &u.attrs[id] }

// Alerts returns the configuration alerts of the last update (guarantee
// overcommit, nested promised-guarantee pools, priority pools without donor).
func (u *Updater) Alerts() []string { return u.alerts }

// SetPreviousUpdate sets the time of the previous update, from which the
// next update measures the integral refill (docs/semantics.md#integral-guarantees).
func (u *Updater) SetPreviousUpdate(t clock.Time) { u.prev, u.hasPrev = t, true }

// ForgetPreviousUpdate makes the next update the first after start: no
// integral volume is refilled or consumed.
func (u *Updater) ForgetPreviousUpdate() { u.hasPrev = false }

// SetAccumulatedVolume sets an integral pool's accumulated volume in
// resource·seconds (cpu in centi-core·seconds), e.g. restored after a restart.
func (u *Updater) SetAccumulatedVolume(id tree.ID, v [resource.Count]float64) {
	u.layout()
	if p := u.elems[id].pool; p >= 0 {
		u.pools[p].volume = v
	}
}

// Invalidate makes the next update recompute every element's functions, as
// the first update does, and look at every operation's inputs. Updates are
// otherwise incremental: only the operations the tree's change log lists are
// looked at, an element's functions are rebuilt only when their inputs
// changed, and the top-down pass skips subtrees whose target and functions
// are unchanged; the results are the same either way.
func (u *Updater) Invalidate() {
	u.opScanAll = true
	for i := range u.node {
		u.node[i].built = false
		u.node[i].distMode = distNone
	}
	for i := range u.pools {
		u.pools[i].fsbffValid = false
	}
}

// FairShareBySuggestion returns element id's fair-share-by-suggestion
// function of the last update (for introspection and tests).
func (u *Updater) FairShareBySuggestion(id tree.ID) *plf.Vec { return u.fsbs(id) }

func (u *Updater) alertf(format string, args ...any) {
	u.alerts = append(u.alerts, fmt.Sprintf(format, args...))
}
