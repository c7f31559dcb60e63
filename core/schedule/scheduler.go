package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/internal/invariants"
	"github.com/fairsched/fairsched/core/limits"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Error codes beyond those of core/tree and core/limits; the shared ones are
// apierr's.
const (
	CodeUnknownOperation  = apierr.CodeUnknownOperation
	CodeDuplicateID       = "duplicate_id"
	CodeInvalidValue      = apierr.CodeInvalidValue
	CodeForeignAllocation = "foreign_allocation"
	CodeFinished          = "operation_finished"
	CodeMissingAttribute  = "missing_attribute"
)

// errorf returns a rejected request: Path is field, the offending field
// relative to the request's element (a JSON key of docs/api.md), or "" when there
// is none.
func errorf(code, field, format string, args ...any) *apierr.Error {
	return &apierr.Error{Code: code, Path: field, Message: fmt.Sprintf(format, args...), Pkg: "schedule"}
}

// Scheduler is the scheduling core. See the package documentation for its
// concurrency contract.
type Scheduler struct {
	cfg Config

	mu       sync.Mutex // control plane
	tree     *tree.Tree
	limits   *limits.Limits
	fs       *fairshare.Updater
	ops      map[string]*operation
	byTree   []*operation              // tree.ID → operation
	opSeq    uint64                    // start order
	idSeq    uint64                    // server-chosen ids op-<n>
	counters map[tree.ID]*limitCounter // pools with resource limits
	lastNow  clock.Time
	// rootStatus holds the root's satisfaction (the root never starves).
	rootStatus starvationState
	total      resource.Vec

	shards   []shard
	registry registry
	// rec is the recovery state after a restart (recovery.go).
	rec recovery
	// dur is set by SetDurable before the first heartbeat.
	dur Durable

	snap atomic.Pointer[Snapshot]
	// finishEpoch counts operations that reached a final state (completed
	// or aborted) after running, incremented after the state is stored: a
	// node that checked its allocations' operations at epoch e need not
	// check them again while the epoch is e (see Heartbeat).
	finishEpoch atomic.Uint64
	// refusedCount counts the allocations nodes refused (refuse).
	refusedCount atomic.Uint64

	tags tagState // scheduling tag filters and node limits (tags.go)

	finishedMu sync.Mutex // leaf: operations finished by heartbeats
	finished   []*operation

	scratchIDs     []tree.ID
	silent         []*node // sweepNodes' scratch
	poolStarvation map[string]*starvationState
	// fsGen counts fair-share updates; attributes are read only for
	// elements the last update saw.
	fsGen         uint64
	poolsAtUpdate uint64
}

// New returns a scheduler with the pool tree t (which it owns from now on).
func New(t *tree.Tree, cfg Config) *Scheduler {
	if cfg.Shards <= 0 {
		cfg.Shards = 1
	}
	s := &Scheduler{
		cfg:      cfg,
		tree:     t,
		limits:   limits.New(t, cfg.Limits),
		fs:       fairshare.New(t, cfg.FairShare),
		ops:      make(map[string]*operation),
		counters: make(map[tree.ID]*limitCounter),
		shards:   make([]shard, cfg.Shards),
	}
	for i := range s.shards {
		s.shards[i].index = i
	}
	s.snap.Store(&Snapshot{})
	s.countPoolFilters() // t may come with pools
	return s
}

// Config returns the configuration.
func (s *Scheduler) Config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// ---- pools ----

// ApplyPools validates and applies pool mutations as a whole (core/tree);
// operations are managed with StartOperation and friends.
func (s *Scheduler) ApplyPools(ms ...tree.Mutation) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Operations finished by heartbeats leave their pools first, so that an
	// emptied pool can be removed at once.
	s.retireFinished()
	i, scratch, err := applyPoolMutations(s.tree, s.limits, s.scratchIDs[:0], ms)
	s.scratchIDs = scratch
	if err != nil {
		return i, err
	}
	s.syncStates()
	s.refreshLimitCounters()
	s.countPoolFilters()
	return -1, nil
}

// WithTree calls fn with the pool tree under the control lock, for reads.
func (s *Scheduler) WithTree(fn func(t *tree.Tree)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.tree)
}

// refreshLimitCounters keeps one counter per element with specified resource
// limits and gives every operation the list it charges. It holds every
// shard mutex (in index order) so that no heartbeat charges a counter while
// limits change and operations move between counter lists: a counter
// created for limits added to a busy pool starts at the usage below it.
func (s *Scheduler) refreshLimitCounters() {
	s.lockShards()
	defer s.unlockShards()
	t := s.tree
	seen := map[tree.ID]bool{}
	t.Walk(func(id tree.ID) {
		if t.Kind(id) != tree.KindPool {
			return
		}
		l := t.Pool(id).ResourceLimits
		if l.IsEmpty() {
			return
		}
		c := s.counters[id]
		if c == nil {
			c = &limitCounter{}
			s.counters[id] = c
		}
		c.limits = l.OrInfinite()
		seen[id] = true
	})
	for id := range s.counters {
		if !seen[id] {
			delete(s.counters, id)
		}
	}
	for _, o := range s.ops {
		s.setLimited(o)
	}
	s.checkLimitCounters()
}

// checkLimitCounters verifies, under -tags invariants and -race, what
// refreshLimitCounters establishes: every live operation charges its own
// counter (when it has limits) and then the counter of every ancestor pool
// with limits, in that order, and every counter holds the charged usage
// (usage less preempted allocations) of exactly the operations that charge
// it. The caller holds every shard mutex.
func (s *Scheduler) checkLimitCounters() {
	if !invariants.Enabled {
		return
	}
	want := make(map[*limitCounter]resource.Vec)
	for _, o := range s.ops {
		if o.retired {
			continue
		}
		var cs []*limitCounter
		if lp := o.limited.Load(); lp != nil {
			cs = *lp
		}
		k := 0
		if o.own != nil {
			invariants.Check(len(cs) > 0 && cs[0] == o.own, "operation %s does not charge its own counter first", o.id)
			k = 1
		}
		for p := s.tree.Parent(o.treeID); p != tree.None; p = s.tree.Parent(p) {
			if c := s.counters[p]; c != nil {
				invariants.Check(k < len(cs) && cs[k] == c, "operation %s does not charge the counter of pool %s", o.id, s.tree.Name(p))
				k++
			}
		}
		invariants.Check(k == len(cs), "operation %s charges %d counters, want %d", o.id, len(cs), k)
		u := o.Usage().Sub(o.preemptedUsage())
		for _, c := range cs {
			want[c] = want[c].Add(u)
		}
	}
	for id, c := range s.counters {
		var got resource.Vec
		for r := range got {
			got[r] = c.usage[r].Load()
		}
		invariants.Check(got == want[c], "pool %s: limit counter %v, its operations charge %v", s.tree.Name(id), got, want[c])
	}
}

// lockShards takes every shard mutex in index order (control plane only:
// heartbeats take one shard mutex, so this cannot deadlock with them).
func (s *Scheduler) lockShards() {
	for i := range s.shards {
		s.shards[i].mu.Lock()
	}
}

func (s *Scheduler) unlockShards() {
	for i := len(s.shards) - 1; i >= 0; i-- {
		s.shards[i].mu.Unlock()
	}
}

// setLimited gives the operation the list of counters it charges (its own
// limits first, then every ancestor pool with limits) and moves its
// charged usage (usage less preempted allocations) from the old list to
// the new one. With allocations running, the caller holds every shard
// mutex.
func (s *Scheduler) setLimited(o *operation) {
	if o.retired {
		return
	}
	u := o.Usage().Sub(o.preemptedUsage())
	old := o.limited.Load()
	var cs []*limitCounter
	if o.spec.ResourceLimits.IsEmpty() {
		o.own = nil
	} else {
		if o.own == nil || o.own.limits != o.spec.ResourceLimits.OrInfinite() {
			o.own = &limitCounter{limits: o.spec.ResourceLimits.OrInfinite()}
		}
		cs = append(cs, o.own)
	}
	for p := s.tree.Parent(o.treeID); p != tree.None; p = s.tree.Parent(p) {
		if c := s.counters[p]; c != nil {
			cs = append(cs, c)
		}
	}
	if !u.IsZero() {
		if old != nil {
			for _, c := range *old {
				c.add(u, -1)
			}
		}
		for _, c := range cs {
			c.add(u, 1)
		}
	}
	o.limited.Store(&cs)
}

func (c *limitCounter) add(v resource.Vec, sign int64) {
	for r, x := range v {
		if x != 0 {
			c.usage[r].Add(sign * x)
		}
	}
}

// ---- operations ----

// StartOperation validates and admits an operation (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations): it returns
// the operation's ID and whether it runs or waits in a pending queue. A
// rejected operation changes nothing. Starting an operation with the ID of
// an existing one returns that operation when the specs are equal, and a
// duplicate_id error otherwise (docs/api.md#operations idempotency).
func (s *Scheduler) StartOperation(now clock.Time, spec OperationSpec) (string, OperationState, error) {
	if err := ValidateSpec(&spec); err != nil {
		return "", 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retireFinished()
	if spec.ID != "" {
		if o := s.ops[spec.ID]; o != nil {
			if specEqual(&o.spec, &spec) {
				return o.id, o.State(), nil
			}
			return "", 0, errorf(CodeDuplicateID, "id", "cannot start operation %q: an operation with that id and a different spec exists", spec.ID)
		}
	}
	pool := tree.Root
	if spec.Pool != "" {
		id, ok := s.tree.Lookup(spec.Pool)
		if !ok || s.tree.IsOperation(id) {
			return "", 0, errorf(tree.CodeUnknownPool, "pool", "cannot find pool %q", spec.Pool)
		}
		pool = id
	}
	if err := s.limits.CanRegister(pool); err != nil {
		return "", 0, err
	}
	id := spec.ID
	if id == "" {
		for {
			s.idSeq++
			id = "op-" + strconv.FormatUint(s.idSeq, 10)
			if _, taken := s.tree.LookupOperation(id); !taken {
				break
			}
		}
	}
	o := &operation{id: id, spec: spec, startTime: now}
	s.opSeq++
	o.seq = s.opSeq
	o.tasks = make([]task, len(spec.Tasks))
	total := int64(0)
	for i := range spec.Tasks {
		o.tasks[i].spec = spec.Tasks[i]
		o.tasks[i].pending.Store(spec.Tasks[i].JobCount)
		total += spec.Tasks[i].JobCount
	}
	o.unfinished.Store(total)
	if _, err := s.tree.Apply(tree.Mutation{
		Kind: tree.AddOperation, Name: id, Parent: spec.Pool,
		Op: tree.OperationSpec{Weight: spec.Weight, IsGang: spec.IsGang, Vanilla: spec.Type == "vanilla", StartTime: now, ResourceLimits: spec.ResourceLimits},
	}); err != nil {
		return "", 0, err
	}
	o.treeID, _ = s.tree.LookupOperation(id)
	for int(o.treeID) >= len(s.byTree) {
		s.byTree = append(s.byTree, nil)
	}
	s.byTree[o.treeID] = o
	s.ops[id] = o
	if !spec.SchedulingTagFilter.IsEmpty() {
		s.tags.opFilters++
	}
	switch s.limits.Register(o.treeID) {
	case limits.Pending:
		o.state.Store(uint32(StatePending))
	default:
		o.state.Store(uint32(StateRunning))
	}
	s.setLimited(o)
	if total == 0 {
		o.state.Store(uint32(StateCompleted))
		s.retire(o)
	}
	return id, o.State(), nil
}

// MaxTaskNameLen is the longest task name, in bytes.
const MaxTaskNameLen = 128

// ValidateSpec checks an operation's spec as far as it can be checked
// without the scheduler's state: its id and pool names, every range (weight,
// limits, timeouts, tolerance, thresholds), at least one and at most
// MaxTasks tasks, each with a name of at most MaxTaskNameLen bytes, a job
// count in [1, 2^40], resources of at least one positive amount and a
// duration hint in [0, 1e9] s, and each task's total Σ job_count ×
// resources and the operation's total over its tasks within 2^53
// (docs/api.md#operations: aggregates never wrap). The error names the field
// (tasks[2].job_count). StartOperation checks it; decoders call it to
// answer bad input before the operation reaches the scheduler.
func ValidateSpec(spec *OperationSpec) error {
	if spec.ID != "" && !tree.ValidName(spec.ID) {
		return errorf(tree.CodeInvalidName, "id", "cannot use %q as an operation id: want 1-128 characters of [A-Za-z0-9._:-]", spec.ID)
	}
	if spec.Pool != "" && !tree.ValidName(spec.Pool) {
		return errorf(tree.CodeInvalidName, "pool", "cannot use %q as a pool name: want 1-128 characters of [A-Za-z0-9._:-] or \"<Root>\"", spec.Pool)
	}
	if err := tree.ValidateOperation(&tree.OperationSpec{Weight: spec.Weight, ResourceLimits: spec.ResourceLimits}, resource.Vec{}, resource.Vec{}); err != nil {
		return err
	}
	if err := validateThreshold(spec.NonPreemptibleResourceUsageThreshold); err != nil {
		return err
	}
	for _, t := range []struct {
		field string
		v     tree.OptDuration
	}{
		{"allocation_preemption_timeout_s", spec.AllocationPreemptionTimeout},
		{"allocation_graceful_preemption_timeout_s", spec.AllocationGracefulPreemptionTimeout},
		{"fair_share_starvation_timeout_s", spec.FairShareStarvationTimeout},
	} {
		if t.v.Set && !(t.v.V >= 0 && t.v.V <= tree.MaxDuration) {
			return errorf(CodeInvalidValue, t.field, "cannot use %s %v: want a number of seconds in [0, 1e9]", t.field, t.v.V.Seconds())
		}
	}
	if v := spec.FairShareStarvationTolerance; v.Set && !(v.V >= 0 && v.V <= 1) {
		return errorf(CodeInvalidValue, "fair_share_starvation_tolerance", "cannot use fair_share_starvation_tolerance %v: want a number in [0, 1]", v.V)
	}
	if len(spec.Tasks) == 0 {
		return errorf(CodeInvalidValue, "tasks", "cannot start an operation with no tasks: want at least one")
	}
	if len(spec.Tasks) > MaxTasks {
		return errorf(CodeInvalidValue, "tasks", "cannot start an operation with %d tasks: want at most %d", len(spec.Tasks), MaxTasks)
	}
	var total resource.Vec // Σ job_count × resources so far
	for i := range spec.Tasks {
		t := &spec.Tasks[i]
		field := "tasks[" + strconv.Itoa(i) + "]"
		if err := validateTaskRanges(field, t.Name, t.Resources, t.DurationHintS); err != nil {
			return err
		}
		if t.JobCount < 1 || t.JobCount > MaxJobCount {
			return errorf(CodeInvalidValue, field+".job_count", "cannot use job_count %d: want a whole number in [1, 2^40]", t.JobCount)
		}
		if t.Resources.IsZero() {
			return errorf(CodeInvalidValue, field+".resources", "cannot start jobs that use no resources: want at least one positive amount")
		}
		if err := addDemand(&total, field, t.JobCount, t.Resources); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePatch checks what an operation patch can be checked for without
// the operation: the weight's and the limits' ranges, at most MaxTasks
// tasks, and each task's name, job count (in [0, 2^40]), resources and
// duration hint. PatchOperation checks it, then the tasks against the
// operation's (PatchedTasks).
func ValidatePatch(p *OperationPatch) error {
	if err := tree.ValidateOperation(&tree.OperationSpec{Weight: p.Weight, ResourceLimits: p.ResourceLimits}, resource.Vec{}, resource.Vec{}); err != nil {
		return err
	}
	if p.HasPool && p.Pool != "" && !tree.ValidName(p.Pool) {
		return errorf(tree.CodeInvalidName, "pool", "cannot use %q as a pool name: want 1-128 characters of [A-Za-z0-9._:-] or \"<Root>\"", p.Pool)
	}
	if len(p.Tasks) > MaxTasks {
		return errorf(CodeInvalidValue, "tasks", "cannot give an operation %d tasks: want at most %d", len(p.Tasks), MaxTasks)
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		field := "tasks[" + strconv.Itoa(i) + "]"
		if err := validateTaskRanges(field, t.Name, t.Resources, t.DurationHintS); err != nil {
			return err
		}
		if t.HasJobCount && (t.JobCount < 0 || t.JobCount > MaxJobCount) {
			return errorf(CodeInvalidValue, field+".job_count", "cannot use job_count %d: want a whole number in [0, 2^40]", t.JobCount)
		}
	}
	return nil
}

// validateTaskRanges checks a task's name, resources and duration hint.
func validateTaskRanges(field, name string, res resource.Vec, durationS float64) error {
	if len(name) > MaxTaskNameLen {
		return errorf(CodeInvalidValue, field+".name", "cannot use a task name of %d bytes: want at most %d", len(name), MaxTaskNameLen)
	}
	for r, x := range res {
		if x < 0 || x > resource.MaxAmount {
			return errorf(CodeInvalidValue, field+".resources."+resource.Kind(r).String(), "cannot use %s %d: want a non-negative amount of at most 2^53", resource.Kind(r), x)
		}
	}
	if !(durationS >= 0 && durationS <= maxSeconds) {
		return errorf(CodeInvalidValue, field+".duration_hint_s", "cannot use duration_hint_s %v: want a number of seconds in [0, 1e9]", durationS)
	}
	return nil
}

// addDemand adds a task's jobs × resources to an operation's total, or
// names the job count that takes the task's or the operation's total over
// 2^53 in some resource.
func addDemand(total *resource.Vec, field string, jobs int64, res resource.Vec) error {
	for r, x := range res {
		if x > 0 && jobs > resource.MaxAmount/x {
			return errorf(CodeInvalidValue, field+".job_count", "cannot use job_count %d: the task's total %s exceeds 2^53", jobs, resource.Kind(r))
		}
		// Each task's total is at most 2^53, so the sum cannot wrap
		// before it is compared.
		if total[r] += x * jobs; total[r] > resource.MaxAmount {
			return errorf(CodeInvalidValue, field+".job_count", "cannot use job_count %d: the operation's total %s over its tasks exceeds 2^53", jobs, resource.Kind(r))
		}
	}
	return nil
}

// validateThreshold checks an operation's non-preemptible usage threshold.
func validateThreshold(v tree.PartialVec) error {
	for r, set := range v.Set {
		if x := v.V[r]; set && (x < 0 || x > resource.MaxAmount) {
			return errorf(CodeInvalidValue, "non_preemptible_resource_usage_threshold."+resource.Kind(r).String(), "cannot use %s %d: want a non-negative amount of at most 2^53", resource.Kind(r), x)
		}
	}
	return nil
}

func specEqual(a, b *OperationSpec) bool {
	if a.Pool != b.Pool || a.Type != b.Type || a.Weight != b.Weight || a.PreemptionMode != b.PreemptionMode ||
		a.IsGang != b.IsGang || a.ResourceLimits != b.ResourceLimits || len(a.Tasks) != len(b.Tasks) ||
		a.AllocationPreemptionTimeout != b.AllocationPreemptionTimeout ||
		a.AllocationGracefulPreemptionTimeout != b.AllocationGracefulPreemptionTimeout ||
		a.FairShareStarvationTolerance != b.FairShareStarvationTolerance ||
		a.FairShareStarvationTimeout != b.FairShareStarvationTimeout ||
		a.NonPreemptibleResourceUsageThreshold != b.NonPreemptibleResourceUsageThreshold ||
		!a.SchedulingTagFilter.Equal(b.SchedulingTagFilter) {
		return false
	}
	for i := range a.Tasks {
		if a.Tasks[i] != b.Tasks[i] {
			return false
		}
	}
	return true
}

// ErrUnknownOperation is returned for an operation ID the scheduler does not know.
var ErrUnknownOperation = errors.New("schedule: unknown operation")

func (s *Scheduler) lookup(id string) (*operation, error) {
	o := s.ops[id]
	if o == nil {
		return nil, errorf(CodeUnknownOperation, "id", "cannot find operation %q", id)
	}
	return o, nil
}

// AbortOperation aborts an operation: it stops being scheduled, its pending
// jobs are dropped and its running allocations are told to abort on their
// nodes' next heartbeats.
func (s *Scheduler) AbortOperation(id string) error { return s.finish(id, StateAborted) }

// CompleteOperation completes an operation early, as AbortOperation but
// reported as completed.
func (s *Scheduler) CompleteOperation(id string) error { return s.finish(id, StateCompleted) }

func (s *Scheduler) finish(id string, st OperationState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retireFinished()
	o, err := s.lookup(id)
	if err != nil {
		return err
	}
	for {
		cur := o.State()
		if cur.Final() {
			return errorf(CodeFinished, "id", "cannot finish operation %q: it is already %s", id, cur)
		}
		if o.state.CompareAndSwap(uint32(cur), uint32(st)) {
			s.finishEpoch.Add(1) // after the state: see Heartbeat
			break
		}
	}
	for i := range o.tasks {
		o.tasks[i].pending.Store(0)
	}
	s.retire(o)
	return nil
}

// retire removes a finished operation from the limits (releasing pending
// operations) and from the tree. Control plane only.
func (s *Scheduler) retire(o *operation) {
	if o.retired {
		return
	}
	o.retired = true
	if !o.spec.SchedulingTagFilter.IsEmpty() {
		s.tags.opFilters--
	}
	s.scratchIDs = s.limits.Unregister(o.treeID, s.scratchIDs[:0])
	for _, id := range s.scratchIDs {
		if a := s.byTree[id]; a != nil && a.State() == StatePending {
			a.state.CompareAndSwap(uint32(StatePending), uint32(StateRunning))
		}
	}
	s.byTree[o.treeID] = nil
	if _, err := s.tree.Apply(tree.Mutation{Kind: tree.RemoveOperation, Name: o.id}); err != nil {
		panic("BUG: cannot remove a finished operation from the tree: " + err.Error())
	}
}

// retireFinished retires operations whose last job completed in a heartbeat.
func (s *Scheduler) retireFinished() {
	s.finishedMu.Lock()
	fin := s.finished
	s.finished = nil
	s.finishedMu.Unlock()
	for _, o := range fin {
		s.retire(o)
	}
}

// operationFinishedByHeartbeat queues an operation whose last job completed.
func (s *Scheduler) operationFinishedByHeartbeat(o *operation) {
	s.finishedMu.Lock()
	s.finished = append(s.finished, o)
	s.finishedMu.Unlock()
	if f := s.dur.OnOperationCompleted; f != nil {
		f(o.id)
	}
}

// ForgetOperation drops a finished operation from the table (after its
// results were read). Unknown or unfinished operations are an error.
func (s *Scheduler) ForgetOperation(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !o.State().Final() {
		return errorf(CodeInvalidValue, "id", "cannot forget operation %q: it is %s", id, o.State())
	}
	if o.running.Load() > 0 {
		return errorf(CodeInvalidValue, "id", "cannot forget operation %q: %d allocations still run", id, o.running.Load())
	}
	delete(s.ops, id)
	return nil
}

// liveOperation returns an operation that has not finished; verb names the
// refused action in the error.
func (s *Scheduler) liveOperation(id, verb string) (*operation, error) {
	o, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	if o.retired {
		return nil, errorf(CodeFinished, "id", "cannot %s operation %q: it is %s", verb, id, o.State())
	}
	return o, nil
}

// SetOperationWeight changes an operation's runtime weight
// (PatchOperation with the weight alone).
func (s *Scheduler) SetOperationWeight(id string, w float64) error {
	_, err := s.PatchOperation(id, OperationPatch{Weight: tree.Some(w)})
	return err
}

// SetOperationResourceLimits changes an operation's runtime resource limits
// (PatchOperation with the limits alone, docs/api.md#operations).
// Allocations already running are not preempted here; the next
// heartbeats' limit-violation preemption brings usage under the limits.
func (s *Scheduler) SetOperationResourceLimits(id string, l tree.PartialVec) error {
	_, err := s.PatchOperation(id, OperationPatch{ResourceLimits: l, HasResourceLimits: true})
	return err
}

// SetConfig replaces the scheduler's configuration (PATCH /config). The
// shard count cannot change at run time; the new fair-share and limit
// settings apply from the next update, and raised operation limits start
// queued operations at once.
func (s *Scheduler) SetConfig(cfg Config) error {
	if err := checkRuntimeConfig(&cfg, len(s.shards)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg.Shards = len(s.shards)
	s.lockShards()
	s.cfg = cfg
	s.unlockShards()
	s.fs.SetConfig(cfg.FairShare)
	s.limits.SetConfig(cfg.Limits)
	s.scratchIDs = s.limits.RescanAll(s.scratchIDs[:0])
	s.syncStates()
	return nil
}

// MoveOperation moves an operation to another pool, re-validating the
// operation limits of the new ancestors (docs/semantics.md#operation-limits-pending-queues-and-lightweight-operations).
func (s *Scheduler) MoveOperation(id, pool string) error {
	_, err := s.PatchOperation(id, OperationPatch{Pool: pool, HasPool: true})
	return err
}

// syncStates aligns operation states with the limits after a change that
// may have started or queued operations.
func (s *Scheduler) syncStates() {
	for _, o := range s.ops {
		if o.retired {
			continue
		}
		switch s.limits.State(o.treeID) {
		case limits.Pending:
			o.state.CompareAndSwap(uint32(StateRunning), uint32(StatePending))
		case limits.Running, limits.Lightweight:
			o.state.CompareAndSwap(uint32(StatePending), uint32(StateRunning))
		}
	}
}
