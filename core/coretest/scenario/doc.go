// Package scenario runs scheduler scenarios written as golden scripts, in the
// style of etcd-io/raft's interaction tests: a Cluster (a schedule.Scheduler,
// simulated nodes and the log of every decision on virtual time) executes
// the commands of a coretest.Script, and each command's output is compared
// with the one recorded under it. core/schedule's TestScenarios runs the
// scripts under core/schedule/testdata/scenarios; rewrite their outputs with
//
//	go test ./core/schedule/ -run TestScenarios -rewrite
//
// and review the diff. The package imports core/schedule, so tests of
// core/schedule that use it are in package schedule_test.
//
// # Scripts
//
// A script is a sequence of commands, each a line "name key=value ... flag",
// followed by "----" and its expected output (see coretest.Script for the
// format). Lines starting with # are comments. A command that prints nothing
// prints "ok". Times are seconds of virtual time from 0; the clock moves
// only forward, by t= arguments and by run. Resources are written
// slots=, cpu= (cores, may be fractional), gpu=, memory= and network= (bytes,
// with an optional binary suffix K, M, G or T); resource lists, as in
// strong_guarantee=cpu:4,memory:10G, use the same names. Rejections by the
// scheduler print "error: MESSAGE (CODE at PATH)" (the path when the message
// does not hold it) and the script goes on; a malformed command, an unknown
// argument or a failed check stops the script and fails the test, with
// -rewrite too.
//
// # Commands
//
//	config key=value...
//
// Changes the scheduler's configuration (Scheduler.SetConfig). The keys are
// those of the scheduler's and the fair-share settings tables
// (schedule.Settings, fairshare.Settings; docs/configuration.md), durations
// without their _s and in seconds (fair_share_starvation_timeout=30), the
// integral_guarantees members dotted (integral_guarantees.smooth_period=30),
// resource lists as LIST, null for a nullable setting's null. The scheduler
// starts with schedule.DefaultConfig.
//
//	pool name=... [parent=...] [mode=fifo|fair_share] [weight=...]
//	     [strong_guarantee=LIST] [resource_limits=LIST]
//	     [max_operation_count=N] [max_running_operation_count=N]
//	     [enable_lightweight_operations=BOOL]
//	     [integral_type=none|burst|relaxed] [resource_flow=LIST]
//	     [burst_guarantee=LIST] [relaxed_share_multiplier_limit=...]
//	     [fair_share_starvation_timeout=...] [fair_share_starvation_tolerance=...]
//	     [enable_aggressive_starvation=BOOL] [allow_aggressive_preemption=BOOL]
//	     [allow_normal_preemption=BOOL]
//	     [non_preemptible_resource_usage_threshold=LIST]
//	     [compute_promised_guarantee_fair_share=BOOL]
//	     [scheduling_tag_filter=FORMULA]
//
// Adds a pool under parent (the root by default), or changes the given
// attributes of an existing one (and moves it under parent, if given). A
// FORMULA is a scheduling tag filter (core/tagfilter) written without
// spaces, such as gpu&!spot or tag_2|(tag_1&tag_4); an empty one
// (scheduling_tag_filter=) takes the filter away.
//
//	op [id=...] [pool=...] [type=...] jobs=N[,N...] [slots=... cpu=... ...]
//	   [duration=S] [weight=...] [preemption_mode=normal|graceful] [gang=BOOL]
//	   [resource_limits=LIST] [allocation_preemption_timeout=S]
//	   [allocation_graceful_preemption_timeout=S]
//	   [fair_share_starvation_tolerance=...] [fair_share_starvation_timeout=S]
//	   [non_preemptible_resource_usage_threshold=LIST]
//	   [scheduling_tag_filter=FORMULA] [t=...]
//
// Starts an operation of one task of N jobs, each of the given resources
// (components not given: slots=1 cpu=1 memory=1G). Jobs with a duration
// complete that many seconds after they start; others (duration=0 too) run
// until stopped. A list of job counts starts one task per count (named t,
// t1, t2, …); each resource and duration= is then one value for every task
// or a list of one per task (jobs=1,1 memory=190,10 duration=0,5). Prints
// "ID: STATE", with the pool and limit a pending operation waits behind.
//
//	patch op=ID [pool=...] [weight=...] [resource_limits=LIST]
//	      [jobs=N|-,...] [slots=... cpu=... ...] [duration=S]
//
// Changes an operation (Scheduler.PatchOperation): pool= moves it (an empty
// value: to the root), resource_limits= replaces its limits (empty: none),
// jobs= sets each task's job count in order ("-" leaves a task's as it is);
// counts past the operation's tasks add tasks, whose resources and
// durations are given as op's, per added task. Prints "ID: STATE", the
// state the patch left the operation in.
//
//	node name=...|count=N [slots=... cpu=... ...] [tags=TAG,...]
//	     [stop_delay=S|never] [unschedulable=BOOL] [t=...]
//
// Adds a simulated node (count=N adds N nodes named n000, n001, … after
// those already there) with the given resources (by default slots=10 cpu=10
// memory=100G) and tags (by default none), each registering with a
// heartbeat at once; prints the heartbeats' decisions. A node stops a
// preempted allocation stop_delay seconds after being told (default 0: at
// its next heartbeat; never: not before the scheduler aborts it). A node
// with unschedulable=true reports itself unschedulable: it is cordoned
// (docs/api.md#node-heartbeats). On an existing node, name= changes its
// limits, tags (tags= with no value: none) and unschedulable, reported from
// its next heartbeat, and its stop delay.
//
//	heartbeat [node=NAME,...] [t=...]
//
// Sends the heartbeat of the named nodes (all nodes, in the order they were
// added, by default) and prints the events (below). A heartbeat the
// scheduler rejects prints "error: heartbeat of NODE: …" and changes
// nothing: the node reports its finished allocations again next time.
//
//	usage node=NAME alloc=LIST|op=ID [slots=... cpu=... ...] [clear]
//
// From its next heartbeat on, the node reports a resource_usage (docs/api.md#node-heartbeats)
// for the named running allocations: LIST is allocations as events write
// them, and ranges of them, separated by commas (0:1,0:4..0:6); op= names
// every allocation of that operation the node runs. The usage has the
// components given and 0 elsewhere (so cpu=0 reports an idle allocation);
// clear stops reporting it, which keeps the usage last reported. An
// allocation that finishes reports its usage a last time, with its final
// state; one started later reports none.
//
//	finish node=NAME alloc=LIST|op=ID state=completed|failed|aborted|refused
//
// The node ends the named running allocations now (op=: every running
// allocation of that operation it holds): its next heartbeat reports them
// in that state, once, as a job that ended early, failed, was stopped, or
// that the node refused to start (docs/api.md#node-heartbeats); prints ok.
//
//	report node=NAME alloc=LIST state=running|completed|failed|aborted|refused
//	       [slots=... cpu=... ...]
//
// The node's next heartbeat also lists these reports, after its own, with
// the given resource_usage if any: allocations it already reported, of
// another node, or that nobody started (such as 0:999). They are sent
// once, whether the heartbeat is accepted or not; prints ok.
//
//	forget node=NAME [alloc=LIST]
//
// The node forgets the named allocations (every allocation it holds by
// default, as an agent that restarts), running or finished but not yet
// reported: it neither runs nor lists them, and reports nothing about
// them. The scheduler finishes them at the node's next heartbeat
// (docs/api.md#node-heartbeats); prints ok.
//
//	update [t=...] [resource=...]
//
// Runs a fair-share update and prints the tree: every pool and every
// operation that is not finished, indented under its pool, with its fair
// share, usage and demand shares, status (normal or below_fair_share),
// starvation state and, for operations, preemption priority. Shares are the
// largest component unless resource= names one.
//
//	run until=T dt=S [heartbeats=BOOL] [quiet]
//
// The harness loop: while the time plus dt does not pass until, advances the
// time by dt and runs a fair-share update and (unless heartbeats=false) a
// heartbeat of every node. Prints the events, or nothing when quiet.
//
//	complete op=ID [t=...]
//	abort op=ID [t=...]
//
// Completes or aborts an operation by the API.
//
//	info op=ID... pool=NAME... node=NAME...|node=* [resource=...]
//
// Prints the views (Scheduler.Operation, Pool and Node) in argument order:
// an operation's state, allocations (running ones, and those preempted but
// still running), jobs, shares, satisfaction, status, starvation, preemption
// priority (and scheduling_priority=high when it is in the high scheduling
// class), its scheduling tag filter with the resources of the nodes it
// matches and its limits share (when it has a filter), its best allocation
// share in memory with its limits share in memory
// (when below 1: docs/semantics.md#best-allocation-share) and its running, not preempted allocations per preemption status; a
// pool's operation counts and limits, shares, satisfaction (the minimum over
// its schedulable children) and local satisfaction, status, starvation, the
// fair share's decomposition, its scheduling tag filter as for an
// operation and an integral pool's volume; a node's limits, usage,
// preempted usage, tags, unschedulable when it is cordoned, and
// allocations with their start, status, once
// preempted, deadline and, when it is not what the allocation was started
// with, usage.
//
//	explain op=ID|pool=NAME [t=...]
//
// Prints the explanation of an operation (Scheduler.ExplainOperation, with
// the preemptions of its allocations in the log) or of a pool
// (ExplainPool) at the current time: "NAME: STATE", then one finding per
// line, the binding one first, as its code and its fields key=value (the
// JSON keys of schedule.Finding; shares as resource:usage/fair_share/demand,
// protected victims as rule:count@pool), with its message indented below.
//
//	stats
//
// Prints, per operation, how many events of each kind the log holds since
// the start, with the preemption reasons, and then, when nonzero, the
// scheduler's count of refused allocations (refused_allocations=N).
//
//	check gates [backoff=S]
//
// Fails unless every node preempted for a starving operation (a preemption
// that made room for an allocation) at most once per backoff (default: the
// configured preemptive_scheduling_backoff), docs/semantics.md#preemptive-stages.
//
// # Events
//
// Heartbeats log what the simulated nodes report (completed: a job finished;
// stopped: a preempted allocation stopped, or one finish ended aborted;
// failed and refused: one finish ended so) and the scheduler's decisions
// (start, preempt, abort), one line each:
//
//	TIME NODE KIND ALLOCATION op=OP [task=N]
//	    [status=S timeout=S reason="..." [for=ALLOCATION/OP]] [reason="..." [state=S]]
//
// Allocations are written node-index:sequence (0:1 is the first allocation
// of the first node registered); events that differ only in consecutive
// allocations are merged into one line with a range such as 0:1..0:10 (or
// 0:10..0:8 when descending).
//
// # Example
//
//	node count=1 slots=10 cpu=10 memory=100G
//	----
//	ok
//
//	op id=a jobs=1000
//	----
//	a: running
//
//	update
//	----
//	<Root>: fair_share=1 usage=0 demand=100
//	  a: fair_share=1 usage=0 demand=100 status=below_fair_share starvation=non_starving priority=none
//
//	heartbeat
//	----
//	0 n000 start 0:1..0:10 op=a task=0
//
// Command outputs are deterministic: the scheduler is, and the Cluster runs
// heartbeats in one goroutine in a fixed order.
package scenario
