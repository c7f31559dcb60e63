package scenario

import (
	"errors"
	"slices"
	"strings"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/settings"
	"github.com/fairsched/fairsched/core/tree"
)

// commands maps a command name to its implementation. Each reads its
// arguments, checks them with args.done before changing anything, and
// returns its output; an error is a broken script, not a scheduler's
// rejection (those are printed as "error: …").
var commands map[string]func(c *Cluster, a *args) (string, error)

func init() {
	commands = map[string]func(c *Cluster, a *args) (string, error){
		"config":    (*Cluster).cmdConfig,
		"pool":      (*Cluster).cmdPool,
		"op":        (*Cluster).cmdOp,
		"node":      (*Cluster).cmdNode,
		"heartbeat": (*Cluster).cmdHeartbeat,
		"usage":     (*Cluster).cmdUsage,
		"forget":    (*Cluster).cmdForget,
		"finish":    (*Cluster).cmdFinish,
		"report":    (*Cluster).cmdReport,
		"patch":     (*Cluster).cmdPatch,
		"update":    (*Cluster).cmdUpdate,
		"run":       (*Cluster).cmdRun,
		"complete":  (*Cluster).cmdComplete,
		"abort":     (*Cluster).cmdAbort,
		"info":      (*Cluster).cmdInfo,
		"stats":     (*Cluster).cmdStats,
		"check":     (*Cluster).cmdCheck,
		"explain":   (*Cluster).cmdExplain,
	}
}

// Exec runs one command and returns its output (the package doc lists the
// commands). It is the function to hand to coretest.Script.Run.
func (c *Cluster) Exec(cmd *coretest.Cmd) (string, error) {
	fn := commands[cmd.Name]
	if fn == nil {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		slices.Sort(names)
		return "", errorf("unknown command %q (want one of %s)", cmd.Name, strings.Join(names, ", "))
	}
	if cmd.Input != "" {
		return "", errorf("cannot use input lines: commands take arguments only")
	}
	return fn(c, newArgs(cmd))
}

// at reads the optional t= argument and moves the clock there.
func (c *Cluster) at(a *args) {
	var t float64
	if a.float("t", &t) {
		if err := c.setTime(t); err != nil {
			a.fail(err)
		}
	}
}

// rejected formats an error of the scheduler as output, with its code and,
// when the message does not hold it, its path.
func rejected(err error) string {
	s := "error: " + err.Error()
	var e *apierr.Error
	if errors.As(err, &e) && e.Code != "" {
		s += " (" + e.Code
		if e.Path != "" && !e.Absolute() {
			s += " at " + e.Path
		}
		s += ")"
	}
	return s + "\n"
}

// setConfig reads the config command's argument key into cfg. The keys are
// those of the scheduler's and the fair-share settings tables
// (schedule.Settings, fairshare.Settings), durations written without their
// _s (the names of docs/configuration.md, in seconds); null resets a nullable setting.
func setConfig(a *args, key string, cfg *schedule.Config) error {
	spec, set, ok := configSetting(key, cfg)
	if !ok {
		return errorf("unknown config key %q", key)
	}
	var v settings.Value
	switch raw, _ := a.peek(key); {
	case raw == "null" && spec.Nullable:
		a.str(key)
		v.Null = true
	case spec.Kind == settings.KindBool:
		a.bool(key, &v.Bool)
	case spec.Kind == settings.KindChoice:
		v.Choice, _ = a.str(key)
	case spec.Kind == settings.KindResources:
		var p tree.PartialVec
		a.partialVec(key, &p)
		v.Resources = p.OrZero()
	case spec.Kind == settings.KindPartialResources:
		a.partialVec(key, &v.Partial)
	default:
		a.float(key, &v.Number)
	}
	if err := set(v); err != nil {
		a.fail(err)
	}
	return nil
}

// configSetting finds the row of key (or of key_s, a duration) in the
// scheduler's or the fair-share settings table and returns its spec and a
// setter of cfg.
func configSetting(key string, cfg *schedule.Config) (*settings.Spec, func(settings.Value) error, bool) {
	for _, k := range []string{key, key + "_s"} {
		if st, ok := schedule.LookupSetting(k); ok && (k == key || st.Kind == settings.KindDuration) {
			return &st.Spec, func(v settings.Value) error { return st.Set(cfg, v) }, true
		}
		if st, ok := fairshare.LookupSetting(k); ok && (k == key || st.Kind == settings.KindDuration) {
			return &st.Spec, func(v settings.Value) error { return st.Set(&cfg.FairShare, v) }, true
		}
	}
	return nil, nil, false
}

// config key=value...: changes the scheduler's configuration (SetConfig).
func (c *Cluster) cmdConfig(a *args) (string, error) {
	if len(a.cmd.Args) == 0 {
		return "", errorf("cannot run config without key=value arguments")
	}
	cfg := c.s.Config()
	for _, arg := range a.cmd.Args {
		if err := setConfig(a, arg.Key, &cfg); err != nil {
			return "", err
		}
	}
	if err := a.done(); err != nil {
		return "", err
	}
	if err := c.s.SetConfig(cfg); err != nil {
		return rejected(err), nil
	}
	return "", nil
}

// readPoolConfig reads the pool attributes given into cfg.
func readPoolConfig(a *args, cfg *tree.PoolConfig) {
	choice(a, "mode", &cfg.Mode, []string{"fair_share", "fifo"}, []tree.Mode{tree.ModeFairShare, tree.ModeFIFO})
	a.optFloat("weight", &cfg.Weight)
	a.partialVec("strong_guarantee", &cfg.StrongGuarantee)
	a.partialVec("resource_limits", &cfg.ResourceLimits)
	a.optInt("max_operation_count", &cfg.MaxOperationCount)
	a.optInt("max_running_operation_count", &cfg.MaxRunningOperationCount)
	a.bool("enable_lightweight_operations", &cfg.EnableLightweightOperations)
	choice(a, "integral_type", &cfg.Integral.Type, []string{"none", "burst", "relaxed"},
		[]tree.GuaranteeType{tree.GuaranteeNone, tree.GuaranteeBurst, tree.GuaranteeRelaxed})
	a.partialVec("resource_flow", &cfg.Integral.ResourceFlow)
	a.partialVec("burst_guarantee", &cfg.Integral.BurstGuarantee)
	a.optFloat("relaxed_share_multiplier_limit", &cfg.Integral.RelaxedShareMultiplierLimit)
	a.optDuration("fair_share_starvation_timeout", &cfg.FairShareStarvationTimeout)
	a.optFloat("fair_share_starvation_tolerance", &cfg.FairShareStarvationTolerance)
	a.optBool("enable_aggressive_starvation", &cfg.EnableAggressiveStarvation)
	a.optBool("allow_aggressive_preemption", &cfg.AllowAggressivePreemption)
	a.optBool("allow_normal_preemption", &cfg.AllowNormalPreemption)
	a.partialVec("non_preemptible_resource_usage_threshold", &cfg.NonPreemptibleResourceUsageThreshold)
	a.bool("compute_promised_guarantee_fair_share", &cfg.ComputePromisedGuaranteeFairShare)
	a.tagFilter("scheduling_tag_filter", &cfg.SchedulingTagFilter)
}

// pool name=... [parent=...] [attributes]: adds the pool, or changes the
// given attributes of an existing one (and moves it under parent if given).
func (c *Cluster) cmdPool(a *args) (string, error) {
	name, ok := a.str("name")
	if !ok {
		return "", errorf("cannot add a pool without name=")
	}
	parent, _ := a.str("parent")
	m := tree.Mutation{Kind: tree.AddPool, Name: name, Parent: parent}
	if cur, err := c.s.Pool(name); err == nil {
		m.Kind, m.Pool = tree.SetPool, cur.Config
	}
	readPoolConfig(a, &m.Pool)
	if err := a.done(); err != nil {
		return "", err
	}
	if _, err := c.s.ApplyPools(m); err != nil {
		return rejected(err), nil
	}
	return "", nil
}

// defaultJob is an operation's job when no resource is given: one slot, one
// core and 1 GiB.
var defaultJob = resource.Vec{resource.UserSlots: 1, resource.CPU: resource.Cores(1), resource.Memory: 1 << 30}

// op [id=...] [pool=...] jobs=N,... [resources] [attributes] [t=...]:
// starts an operation of one task per job count.
func (c *Cluster) cmdOp(a *args) (string, error) {
	var spec schedule.OperationSpec
	spec.ID, _ = a.str("id")
	spec.Pool, _ = a.str("pool")
	spec.Type, _ = a.str("type")
	counts, ok := a.list("jobs")
	if !ok && a.err == nil {
		a.fail(errorf("cannot start an operation without jobs="))
	}
	spec.Tasks = make([]schedule.TaskSpec, len(counts))
	for i, n := range counts {
		tk := &spec.Tasks[i]
		tk.Name, tk.Resources = taskName(i), defaultJob
		tk.JobCount = a.parseInt("jobs", n)
	}
	a.taskVecs(len(spec.Tasks), func(i int) *resource.Vec { return &spec.Tasks[i].Resources })
	durations := make([]float64, len(spec.Tasks))
	a.floats("duration", durations)
	for i := range spec.Tasks {
		spec.Tasks[i].DurationHintS = durations[i]
	}
	a.optFloat("weight", &spec.Weight)
	choice(a, "preemption_mode", &spec.PreemptionMode, []string{"normal", "graceful"},
		[]schedule.PreemptionMode{schedule.PreemptionNormal, schedule.PreemptionGraceful})
	a.bool("gang", &spec.IsGang)
	a.partialVec("resource_limits", &spec.ResourceLimits)
	a.optDuration("allocation_preemption_timeout", &spec.AllocationPreemptionTimeout)
	a.optDuration("allocation_graceful_preemption_timeout", &spec.AllocationGracefulPreemptionTimeout)
	a.optFloat("fair_share_starvation_tolerance", &spec.FairShareStarvationTolerance)
	a.optDuration("fair_share_starvation_timeout", &spec.FairShareStarvationTimeout)
	a.partialVec("non_preemptible_resource_usage_threshold", &spec.NonPreemptibleResourceUsageThreshold)
	a.tagFilter("scheduling_tag_filter", &spec.SchedulingTagFilter)
	c.at(a)
	if err := a.done(); err != nil {
		return "", err
	}
	id, _, err := c.s.StartOperation(coreTime(c.now), spec)
	if err != nil {
		return rejected(err), nil
	}
	c.durations[id] = durations
	info, err := c.s.Operation(id)
	if err != nil {
		return "", err
	}
	out := id + ": " + info.State.String()
	if info.WaitingPool != "" {
		out += " (waiting in " + info.WaitingPool + ", max_running_operation_count=" + fmtInt(info.WaitingLimit) + ")"
	}
	return out + "\n", nil
}

// taskName is the name of an operation's task i in scripts: t, t1, t2, ….
func taskName(i int) string {
	if i == 0 {
		return "t"
	}
	return "t" + fmtInt(int64(i))
}

// patch op=ID [pool=...] [weight=...] [resource_limits=LIST] [jobs=N|-,...]
// [resources] [duration=S]: changes an operation (PatchOperation).
func (c *Cluster) cmdPatch(a *args) (string, error) {
	id, ok := a.str("op")
	if !ok {
		a.fail(errorf("cannot run patch without op="))
	}
	var p schedule.OperationPatch
	p.Pool, p.HasPool = a.str("pool")
	a.optFloat("weight", &p.Weight)
	if v, given := a.peek("resource_limits"); given {
		if v == "" {
			a.str("resource_limits")
		} else {
			a.partialVec("resource_limits", &p.ResourceLimits)
		}
		p.HasResourceLimits = true
	}
	counts, _ := a.list("jobs")
	have := len(c.durations[id])
	p.Tasks = make([]schedule.TaskPatch, len(counts))
	for i, n := range counts {
		tp := &p.Tasks[i]
		if n != "-" {
			tp.JobCount, tp.HasJobCount = a.parseInt("jobs", n), true
		}
		if i >= have {
			tp.Name, tp.HasName, tp.Resources, tp.HasResources = taskName(i), true, defaultJob, true
		}
	}
	added := p.Tasks[min(have, len(p.Tasks)):]
	a.taskVecs(len(added), func(i int) *resource.Vec { return &added[i].Resources })
	durations := make([]float64, len(added))
	a.floats("duration", durations)
	for i := range added {
		added[i].DurationHintS = durations[i]
	}
	if err := a.done(); err != nil {
		return "", err
	}
	st, err := c.s.PatchOperation(id, p)
	if err != nil {
		return rejected(err), nil
	}
	c.durations[id] = append(c.durations[id], durations...)
	return id + ": " + st.String() + "\n", nil
}

// defaultNode is a node's resources when none is given.
var defaultNode = resource.Vec{resource.UserSlots: 10, resource.CPU: resource.Cores(10), resource.Memory: 100 << 30}

// node name=...|count=... [resources] [stop_delay=...] [t=...]: adds
// simulated nodes, each registering with a heartbeat, or changes an existing
// node's limits and tags (reported from its next heartbeat) and stop delay.
func (c *Cluster) cmdNode(a *args) (string, error) {
	name, named := a.str("name")
	var count int64
	counted := a.int("count", &count)
	if named == counted {
		a.fail(errorf("cannot run node without exactly one of name= and count="))
	}
	if counted && count <= 0 {
		a.fail(errorf("cannot add count=%d nodes", count))
	}
	if i, ok := c.byName[name]; named && ok {
		n := &c.nodes[i]
		a.vec(&n.limits)
		a.seconds("stop_delay", &n.stopDelay)
		a.tags("tags", &n.tags)
		a.bool("unschedulable", &n.unschedulable)
		return "", a.done()
	}
	limits := defaultNode
	a.vec(&limits)
	var stopDelay float64
	a.seconds("stop_delay", &stopDelay)
	var tags []string
	a.tags("tags", &tags)
	var unschedulable bool
	a.bool("unschedulable", &unschedulable)
	c.at(a)
	if err := a.done(); err != nil {
		return "", err
	}
	names := []string{name}
	if counted {
		names = names[:0]
		for i := range int(count) {
			names = append(names, "n"+pad3(len(c.nodes)+i))
		}
	}
	for _, name := range names {
		if _, dup := c.byName[name]; dup {
			return "", errorf("cannot add node %s twice", name)
		}
	}
	from := len(c.events)
	for _, name := range names {
		c.byName[name] = len(c.nodes)
		c.nodes = append(c.nodes, simNode{name: name, limits: limits, stopDelay: stopDelay, tags: tags, unschedulable: unschedulable})
		if err := c.heartbeat(len(c.nodes) - 1); err != nil {
			return "", err
		}
	}
	return formatEvents(c.events[from:]), nil
}

func pad3(i int) string {
	s := fmtInt(int64(i))
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// heartbeat [node=a,b,...] [t=...]: heartbeats of the named nodes (all, in
// the order they were added, by default).
func (c *Cluster) cmdHeartbeat(a *args) (string, error) {
	var which []int
	if v, ok := a.str("node"); ok {
		for name := range strings.SplitSeq(v, ",") {
			i, known := c.byName[name]
			if !known {
				a.fail(errorf("cannot find node %q", name))
			}
			which = append(which, i)
		}
	} else {
		for i := range c.nodes {
			which = append(which, i)
		}
	}
	c.at(a)
	if err := a.done(); err != nil {
		return "", err
	}
	var out strings.Builder
	for _, i := range which {
		from := len(c.events)
		err := c.heartbeat(i)
		out.WriteString(formatEvents(c.events[from:]))
		var r *rejectedHeartbeat
		if errors.As(err, &r) {
			out.WriteString(rejected(err))
		} else if err != nil {
			return "", err
		}
	}
	return out.String(), nil
}

// nodeArg reads node= (required) and returns the node's index.
func (c *Cluster) nodeArg(a *args) int {
	name, ok := a.str("node")
	i, known := c.byName[name]
	switch {
	case !ok:
		a.fail(errorf("cannot run %s without node=", a.cmd.Name))
	case !known:
		a.fail(errorf("cannot find node %q", name))
	}
	return i
}

// allocsArg reads alloc= (a list of allocations, see parseAllocs) and
// reports whether it was given; every allocation must be one node i holds.
func (c *Cluster) allocsArg(a *args, i int) ([]uint64, bool) {
	v, ok := a.str("alloc")
	if !ok || a.err != nil {
		return nil, false
	}
	ids, err := parseAllocs(v)
	if err != nil {
		a.fail(err)
		return nil, false
	}
	n := &c.nodes[i]
	for _, id := range ids {
		if n.agent.Find(id) == nil {
			a.fail(errorf("cannot find allocation %s on node %s", allocName(id), n.name))
		}
	}
	return ids, true
}

// usage node=... alloc=...|op=... [resources] [clear]: the resource_usage
// the node reports for those running allocations from its next heartbeat.
func (c *Cluster) cmdUsage(a *args) (string, error) {
	i := c.nodeArg(a)
	ids, byAlloc := c.allocsArg(a, i)
	op, byOp := a.str("op")
	if byAlloc == byOp && a.err == nil {
		a.fail(errorf("cannot run usage without exactly one of alloc= and op="))
	}
	var u resource.Vec
	given := a.vec(&u)
	clear := a.flag("clear")
	if given == clear && a.err == nil {
		a.fail(errorf("cannot run usage without exactly one of resources (slots=, cpu=, …) and clear"))
	}
	if err := a.done(); err != nil {
		return "", err
	}
	n := &c.nodes[i]
	matched := 0
	allocs := n.agent.Allocs()
	for j := range allocs {
		al := &allocs[j]
		if al.State != coretest.AllocRunning || byAlloc && !slices.Contains(ids, al.ID) || byOp && al.Meta.op != op {
			continue
		}
		al.Meta.usage, al.Meta.hasUsage = u, !clear
		matched++
	}
	if matched == 0 {
		return "", errorf("cannot find a running allocation to report the usage of on node %s", n.name)
	}
	return "", nil
}

// forget node=... [alloc=...]: the node forgets those allocations (all by
// default, as an agent that restarts).
func (c *Cluster) cmdForget(a *args) (string, error) {
	i := c.nodeArg(a)
	ids, some := c.allocsArg(a, i)
	if err := a.done(); err != nil {
		return "", err
	}
	c.forget(i, func(id uint64) bool { return !some || slices.Contains(ids, id) })
	return "", nil
}

// allocStates are the states a script may end or report an allocation in.
var allocStates = []string{"running", "completed", "failed", "aborted", "refused"}

// finish node=... alloc=...|op=... state=...: the node ends those running
// allocations now; its next heartbeat reports them.
func (c *Cluster) cmdFinish(a *args) (string, error) {
	i := c.nodeArg(a)
	ids, byAlloc := c.allocsArg(a, i)
	op, byOp := a.str("op")
	if byAlloc == byOp && a.err == nil {
		a.fail(errorf("cannot run finish without exactly one of alloc= and op="))
	}
	st := coretest.AllocRunning
	choice(a, "state", &st, allocStates[1:], []coretest.AllocState{coretest.AllocCompleted, coretest.AllocFailed, coretest.AllocAborted, coretest.AllocRefused})
	if st == coretest.AllocRunning && a.err == nil {
		a.fail(errorf("cannot run finish without state="))
	}
	if err := a.done(); err != nil {
		return "", err
	}
	n := &c.nodes[i]
	if byOp {
		for _, al := range n.agent.Allocs() {
			if al.State == coretest.AllocRunning && al.Meta.op == op {
				ids = append(ids, al.ID)
			}
		}
		if len(ids) == 0 {
			return "", errorf("cannot find a running allocation of %s on node %s", op, n.name)
		}
	}
	for _, id := range ids {
		if !n.agent.Finish(id, st) {
			return "", errorf("cannot finish allocation %s on node %s: it is not running", allocName(id), n.name)
		}
		n.agent.Find(id).Meta.finished = true
	}
	return "", nil
}

// report node=... alloc=... state=... [resources]: the node's next heartbeat
// lists these reports too, after its own.
func (c *Cluster) cmdReport(a *args) (string, error) {
	i := c.nodeArg(a)
	v, ok := a.str("alloc")
	var ids []uint64
	if ok {
		var err error
		if ids, err = parseAllocs(v); err != nil {
			a.fail(err)
		}
	} else if a.err == nil {
		a.fail(errorf("cannot run report without alloc="))
	}
	st := schedule.AllocationState(255)
	choice(a, "state", &st, allocStates, []schedule.AllocationState{schedule.AllocRunning, schedule.AllocCompleted, schedule.AllocFailed, schedule.AllocAborted, schedule.AllocRefused})
	if st == 255 && a.err == nil {
		a.fail(errorf("cannot run report without state="))
	}
	var u resource.Vec
	hasUsage := a.vec(&u)
	if err := a.done(); err != nil {
		return "", err
	}
	n := &c.nodes[i]
	for _, id := range ids {
		n.extra = append(n.extra, extraReport{id: id, state: st, usage: u, hasUsage: hasUsage})
	}
	return "", nil
}

// update [t=...] [resource=...]: a fair-share update; prints the tree.
func (c *Cluster) cmdUpdate(a *args) (string, error) {
	c.at(a)
	k := a.resource()
	if err := a.done(); err != nil {
		return "", err
	}
	c.update()
	return c.formatTree(k), nil
}

// resource reads resource= (which share component to print; -1, the
// default, for the largest).
func (a *args) resource() resource.Kind {
	v, ok := a.str("resource")
	if !ok {
		return -1
	}
	k, known := kindByName(v)
	if !known {
		a.fail(errorf("cannot use resource=%s: want slots, cpu, gpu, memory or network", v))
	}
	return k
}

// run until=... dt=... [heartbeats=false] [quiet]: the harness loop.
func (c *Cluster) cmdRun(a *args) (string, error) {
	var until, dt float64
	if !a.float("until", &until) || !a.float("dt", &dt) {
		a.fail(errorf("cannot run without until= and dt="))
	}
	if dt <= 0 {
		a.fail(errorf("cannot run with dt=%g: want a positive step", dt))
	}
	heartbeats := true
	a.bool("heartbeats", &heartbeats)
	quiet := a.flag("quiet")
	if err := a.done(); err != nil {
		return "", err
	}
	if until < c.now {
		return "", errorf("cannot run until %g: the time is %g", until, c.now)
	}
	from := len(c.events)
	if err := c.run(until, dt, heartbeats); err != nil {
		return "", err
	}
	if quiet {
		return "", nil
	}
	return formatEvents(c.events[from:]), nil
}

// complete op=... [t=...] and abort op=... [t=...]: finish an operation by the API.
func (c *Cluster) cmdComplete(a *args) (string, error) { return c.finish(a, c.s.CompleteOperation) }

func (c *Cluster) cmdAbort(a *args) (string, error) { return c.finish(a, c.s.AbortOperation) }

func (c *Cluster) finish(a *args, fn func(id string) error) (string, error) {
	id, ok := a.str("op")
	if !ok {
		a.fail(errorf("cannot run %s without op=", a.cmd.Name))
	}
	c.at(a)
	if err := a.done(); err != nil {
		return "", err
	}
	if err := fn(id); err != nil {
		return rejected(err), nil
	}
	return "", nil
}

// info op=... pool=... node=...|node=* [resource=...]: the orchid views.
func (c *Cluster) cmdInfo(a *args) (string, error) {
	type item struct{ kind, name string }
	var items []item
	for _, arg := range a.cmd.Args {
		switch arg.Key {
		case "op", "pool", "node":
			items = append(items, item{arg.Key, arg.Value})
		}
	}
	for _, key := range []string{"op", "pool", "node"} {
		a.all(key)
	}
	k := a.resource()
	if err := a.done(); err != nil {
		return "", err
	}
	if len(items) == 0 {
		return "", errorf("cannot run info without op=, pool= or node=")
	}
	var b strings.Builder
	for _, it := range items {
		switch it.kind {
		case "op":
			info, err := c.s.Operation(it.name)
			if err != nil {
				b.WriteString(rejected(err))
				continue
			}
			formatOperation(&b, &info, k)
		case "pool":
			info, err := c.s.Pool(it.name)
			if err != nil {
				b.WriteString(rejected(err))
				continue
			}
			formatPool(&b, &info, k)
		case "node":
			names := []string{it.name}
			if it.name == "*" {
				names = names[:0]
				for _, n := range c.nodes {
					names = append(names, n.name)
				}
			}
			for _, name := range names {
				info, ok := c.s.Node(name)
				if !ok {
					b.WriteString(name + ": not registered\n")
					continue
				}
				formatNode(&b, &info, c.requested)
			}
		}
	}
	return b.String(), nil
}

// stats: decision and report counts per operation since the start.
func (c *Cluster) cmdStats(a *args) (string, error) {
	if err := a.done(); err != nil {
		return "", err
	}
	out := formatStats(c.events)
	if n := c.s.RefusedAllocations(); n > 0 {
		out += "refused_allocations=" + fmtInt(int64(n)) + "\n"
	}
	return out, nil
}

// check gates [backoff=...]: fails the script on a violated property.
func (c *Cluster) cmdCheck(a *args) (string, error) {
	if !a.flag("gates") {
		return "", errorf("cannot run check without a property (gates)")
	}
	backoff := c.s.Config().PreemptiveSchedulingBackoff.Seconds()
	a.float("backoff", &backoff)
	if err := a.done(); err != nil {
		return "", err
	}
	if bad := c.checkGates(backoff); len(bad) > 0 {
		return "", errorf("check gates failed:\n%s", strings.Join(bad, "\n"))
	}
	return "", nil
}
