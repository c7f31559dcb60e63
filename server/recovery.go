package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
)

// The work-preserving restart of a durable server
// (docs/operations.md#state-and-restarts), with the records of records.go:
//
//	nodes/<name>             {"index", "seq_end"}: the index its allocation ids
//	                         embed and the end of the id range reserved for it
//	checkpoints/op/<id>      [completed jobs per task], while it runs
//	checkpoints/pool/<name>  {"accumulated_resource_volume": {…}}, integral pools
//	checkpoints/nodes        ["n-1", …]: the nodes alive at the last checkpoint
//	checkpoints/gone_nodes   {"n-2": {"index", "seq_end"}, …}: the registered nodes
//	                         known to have gone at the last checkpoint, with
//	                         their registration then
//	checkpoints/history/…    the pools' history (history.go)
//	meta/epoch               how many times the store was opened
//
// A node's first heartbeat of the process waits for its registration
// (reserving an id range of NodeSeqBlock ids, then another one in the
// background whenever half of it is used), so that no allocation id is
// handed out twice across restarts. Checkpoints are written every
// checkpoint_period_s without being awaited. After a restart the scheduler
// is in recovery (schedule.BeginRecovery) until every node of the registry
// not known to have gone reported or recovery_timeout_s passed (a node that
// registered after the last checkpoint is expected too: its registration
// was durable before its first heartbeat was answered): /healthz says
// "recovering" and /readyz answers 503 recovering.

// NodeSeqBlock is how many allocation ids a node's registration reserves.
const NodeSeqBlock = 1 << 16

// nodeRegistry is the durable node registry of a durable server.
type nodeRegistry struct {
	mu    sync.Mutex
	next  uint32 // the next free index
	nodes map[string]*registeredNode
	// inflight holds the registrations being written, so that concurrent
	// first heartbeats of a node wait for one registration.
	inflight map[string]chan struct{}
}

type registeredNode struct {
	NodeRecord
	// adopted: the node registered in this process already (its first
	// registration adopted what it reported; later ones adopt nothing).
	adopted bool
}

func newNodeRegistry() *nodeRegistry {
	return &nodeRegistry{nodes: map[string]*registeredNode{}, inflight: map[string]chan struct{}{}}
}

// registerNodes registers names (unregistered nodes about to heartbeat) in
// the store and then in the scheduler: their registrations are written in
// one group and awaited together. It returns the refusal
// (CodeStoreUnavailable) when the store failed.
func (s *Server) registerNodes(names []string) error {
	reg := s.d.nodes
	type todo struct {
		r    schedule.NodeRegistration
		p    store.Pending
		done chan struct{}
	}
	var mine []todo
	var waits []chan struct{}
	reg.mu.Lock()
	for _, name := range names {
		if ch, ok := reg.inflight[name]; ok {
			waits = append(waits, ch)
			continue
		}
		rn := reg.nodes[name]
		if rn == nil {
			rn = &registeredNode{NodeRecord: NodeRecord{Index: reg.next}}
			reg.next++
			reg.nodes[name] = rn
		}
		if rn.SeqEnd > math.MaxUint32-NodeSeqBlock {
			// The index's ids are used up: the node takes a new one.
			rn.NodeRecord = NodeRecord{Index: reg.next}
			reg.next++
		}
		r := schedule.NodeRegistration{Name: name, Index: rn.Index, Seq: rn.SeqEnd,
			SeqEnd: rn.SeqEnd + NodeSeqBlock, SeqLow: rn.SeqEnd + NodeSeqBlock/2, Adopt: !rn.adopted}
		rn.SeqEnd, rn.adopted = r.SeqEnd, true
		done := make(chan struct{})
		reg.inflight[name] = done
		mine = append(mine, todo{r: r, p: s.d.c.Submit(nodeWrite(name, rn.NodeRecord)), done: done})
	}
	reg.mu.Unlock()
	var failed error
	now := s.Now()
	for _, t := range mine {
		if err := t.p.Wait(); err != nil {
			if failed == nil {
				failed = s.await(t.p) // fail-stop
			}
		} else {
			s.sched.RegisterNode(now, t.r)
		}
		reg.mu.Lock()
		delete(reg.inflight, t.r.Name)
		reg.mu.Unlock()
		close(t.done)
	}
	for _, ch := range waits {
		<-ch
	}
	if failed == nil {
		failed = s.storeOK()
	}
	return failed
}

// extendNode reserves another id range for a node that used half of its
// own (schedule.Durable.OnNodeSeqLow), in the background.
func (s *Server) extendNode(name string, index, end uint32) {
	reg := s.d.nodes
	reg.mu.Lock()
	rn := reg.nodes[name]
	if rn == nil || rn.Index != index || rn.SeqEnd != end || end > math.MaxUint32-NodeSeqBlock {
		// Registered again since with a longer range, or out of ids (the
		// node registers with a new index when it comes back).
		reg.mu.Unlock()
		return
	}
	rn.SeqEnd = end + NodeSeqBlock
	rec := rn.NodeRecord
	p := s.d.c.Submit(nodeWrite(name, rec))
	reg.mu.Unlock()
	if err := p.Wait(); err != nil {
		s.storeFailed(err)
		return
	}
	s.sched.ExtendNode(name, index, rec.SeqEnd, rec.SeqEnd-NodeSeqBlock/2)
}

// ---- operations that finish by themselves ----

// completions queues the operations whose last job completed in a
// heartbeat, for their terminal state to be written at once.
type completions struct {
	ch chan string
}

// completed is schedule.Durable.OnOperationCompleted: it must not block (a
// shard mutex is held). When the queue is full the janitor pass writes the
// state instead (within maxJanitorPeriod).
func (s *Server) completed(id string) {
	select {
	case s.d.done.ch <- id:
	default:
	}
}

// writeCompletions writes the terminal state of the operations that
// finished by themselves, as they come, until the server stops.
func (s *Server) writeCompletions() {
	defer s.done.Done()
	for {
		select {
		case <-s.stop:
			return
		case id := <-s.d.done.ch:
			s.recordCompleted(id)
		}
	}
}

// drainCompletions records the queued completions now (the fair-share
// loop's call, for a server that does not serve).
func (s *Server) drainCompletions() {
	for {
		select {
		case id := <-s.d.done.ch:
			s.recordCompleted(id)
		default:
			return
		}
	}
}

// recordCompleted submits the terminal state of operation id, which
// completed by itself, unless it is recorded already.
func (s *Server) recordCompleted(id string) {
	info, err := s.sched.Operation(id)
	if err != nil || !info.State.Final() {
		return
	}
	now := s.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.ops[id]
	if r == nil || r.state.State != StateLive {
		return
	}
	r.state.State, r.state.FinishUnixUS = info.State.String(), s.unixUS(now)
	r.durable = s.submit(operationStateWrite(id, &r.state), store.Delete(store.Checkpoints, "op/"+id))
}

// ---- checkpoints ----

// checkpointState is what the last checkpoint wrote, to write only changes.
type checkpointState struct {
	last      clock.Time
	completed map[string][]int64
	nodes     []string
	gone      map[string]NodeRecord
}

// checkpoint writes, without waiting, the completed job counts of the
// running operations and the integral pools' volumes that changed since
// the last checkpoint, and the nodes alive now when they changed. A failed
// write makes the server fail-stop.
func (s *Server) checkpoint(now clock.Time) {
	cp := &s.d.cp
	cp.last = now
	var ws []store.Write
	seen := make(map[string]bool, len(cp.completed))
	s.sched.CompletedJobs(func(id string, completed []int64) {
		seen[id] = true
		if slices.Equal(cp.completed[id], completed) {
			return
		}
		if slices.Max(completed) == 0 && cp.completed[id] == nil {
			return // nothing completed yet: nothing to keep
		}
		cp.completed[id] = slices.Clone(completed)
		b, _ := json.Marshal(completed)
		ws = append(ws, store.Put(store.Checkpoints, "op/"+id, b))
	})
	for id := range cp.completed {
		if !seen[id] {
			delete(cp.completed, id) // finished: its state record is the truth
			ws = append(ws, store.Delete(store.Checkpoints, "op/"+id))
		}
	}
	for _, p := range s.sched.Pools(nil) {
		if p.Config.Integral.Type == tree.GuaranteeNone {
			continue
		}
		b, _ := json.Marshal(PoolCheckpoint{Volume: volumeJSON(p.Attrs.Integral.AccumulatedVolume)})
		ws = append(ws, store.Put(store.Checkpoints, "pool/"+p.Name, b))
	}
	// The registry is read before the scheduler's nodes: a node that
	// registers in between is alive, never gone.
	registered := s.d.nodes.snapshot()
	var nodes []string
	all, _ := s.sched.Nodes(nil, "", 0)
	for _, n := range all {
		nodes = append(nodes, n.Name)
	}
	if !slices.Equal(nodes, cp.nodes) {
		cp.nodes = nodes
		b, _ := json.Marshal(nodes)
		ws = append(ws, store.Put(store.Checkpoints, "nodes", b))
	}
	if gone := s.goneNodes(registered, nodes); !maps.Equal(gone, cp.gone) {
		cp.gone = gone
		b, _ := json.Marshal(gone)
		ws = append(ws, store.Put(store.Checkpoints, "gone_nodes", b))
	}
	ws = s.historyWrites(ws)
	if len(ws) == 0 {
		return
	}
	p := s.d.c.SubmitChunked(ws...) // a replica's etcd takes at most 128 writes per transaction
	go func() {
		if err := p.Wait(); err != nil {
			s.storeFailed(err)
		}
	}()
}

// snapshot copies the registry's settled registrations (not those being
// written) and whether each registered in this process.
func (reg *nodeRegistry) snapshot() map[string]registeredNode {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	m := make(map[string]registeredNode, len(reg.nodes))
	for name, rn := range reg.nodes {
		if _, busy := reg.inflight[name]; !busy {
			m[name] = *rn
		}
	}
	return m
}

// goneNodes are the registered nodes known to have gone: those that
// registered in this process and are not alive now, and those of earlier
// processes that have not registered in this one and were known to have
// gone when it started (with the same registration).
func (s *Server) goneNodes(registered map[string]registeredNode, alive []string) map[string]NodeRecord {
	gone := map[string]NodeRecord{}
	for name, rn := range registered {
		if rn.adopted {
			if _, ok := slices.BinarySearch(alive, name); !ok {
				gone[name] = rn.NodeRecord
			}
		} else if r, ok := s.d.goneAtStart[name]; ok && r == rn.NodeRecord {
			gone[name] = r
		}
	}
	return gone
}

// expectedNodes are the nodes a restart's recovery window waits for: every
// registered node but those known to have gone at the last checkpoint
// (with the registration they have still; one that registered again since
// came back). Without a gone_nodes checkpoint none is known to have gone.
func (l *loaded) expectedNodes() []string {
	var names []string
	for name, r := range l.nodes {
		if g, ok := l.goneNodes[name]; !ok || g != r {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// ---- loading ----

// loadRecovery reads the node registry, the checkpoints and the epoch.
func (l *loaded) loadRecovery(b store.Backend) error {
	l.nodes = map[string]NodeRecord{}
	if err := b.Scan(store.Nodes, func(k string, v []byte) error {
		var r NodeRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("nodes/%s: %w", k, err)
		}
		l.nodes[k] = r
		return nil
	}); err != nil {
		return err
	}
	l.completed = map[string][]int64{}
	l.volumes = map[string]PoolCheckpoint{}
	if err := b.Scan(store.Checkpoints, func(k string, v []byte) error {
		var err error
		switch {
		case k == "nodes":
			// The nodes alive at the last checkpoint (for older binaries):
			// the registry and gone_nodes say more.
		case k == "gone_nodes":
			err = json.Unmarshal(v, &l.goneNodes)
		case strings.HasPrefix(k, "op/"):
			var c []int64
			err = json.Unmarshal(v, &c)
			l.completed[k[len("op/"):]] = c
		case strings.HasPrefix(k, historyPrefix):
			l.history = append(l.history, loadedHistorySeg{key: k, value: slices.Clone(v)})
		case strings.HasPrefix(k, "pool/"):
			var p PoolCheckpoint
			err = json.Unmarshal(v, &p)
			l.volumes[k[len("pool/"):]] = p
		}
		if err != nil {
			// A checkpoint only saves re-running work: one that cannot be
			// read is left out, not fatal.
			l.badCheckpoints = append(l.badCheckpoints, k)
		}
		return nil
	}); err != nil {
		return err
	}
	v, ok, err := b.Get(store.Meta, "epoch")
	if err != nil {
		return err
	}
	if ok {
		if l.epoch, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return fmt.Errorf("meta/epoch: %w", err)
		}
	}
	return nil
}

// beginDurable makes the scheduler register nodes through the store and
// report completions; with a store that held state (l), it restores the
// checkpoints and the node registry and opens the recovery window. It
// writes the next epoch.
func (s *Server) beginDurable(l *loaded) error {
	s.d.nodes = newNodeRegistry()
	s.d.done.ch = make(chan string, 4096)
	s.d.cp.completed = map[string][]int64{}
	s.sched.SetDurable(schedule.Durable{ExternalNodeRegistry: true,
		OnNodeSeqLow:         func(node string, index, end uint32) { go s.extendNode(node, index, end) },
		OnOperationCompleted: s.completed})
	var epoch uint64
	now := s.Now()
	if l != nil {
		epoch = l.epoch
		reg := s.d.nodes
		for name, r := range l.nodes {
			reg.nodes[name] = &registeredNode{NodeRecord: r}
			reg.next = max(reg.next, r.Index+1)
			s.sched.KnowNode(r.Index, name)
		}
		var ws []store.Write
		for _, id := range slices.Sorted(maps.Keys(l.completed)) {
			r := s.ops[id]
			if r == nil || r.state.State != StateLive {
				ws = append(ws, store.Delete(store.Checkpoints, "op/"+id))
				continue
			}
			finished, err := s.sched.RestoreCompletedJobs(id, l.completed[id])
			if err != nil {
				s.log.Warn("a checkpoint cannot be restored: the operation's completed jobs run again", "operation", id, "error", err)
				continue
			}
			s.d.cp.completed[id] = slices.Clone(l.completed[id])
			if finished {
				// Its last jobs completed before the stop.
				r.state.State, r.state.FinishUnixUS = schedule.StateCompleted.String(), s.unixUS(now)
				ws = append(ws, operationStateWrite(id, &r.state), store.Delete(store.Checkpoints, "op/"+id))
				delete(s.d.cp.completed, id)
			}
		}
		for name, p := range l.volumes {
			var v [resource.Count]float64
			for k, x := range p.Volume {
				if kind, ok := resource.KindByName(k); ok {
					v[kind] = x
				}
			}
			if err := s.sched.SetAccumulatedVolume(name, v); err != nil {
				ws = append(ws, store.Delete(store.Checkpoints, "pool/"+name))
			}
		}
		ws = append(ws, s.restoreHistory(l.history)...)
		if len(l.badCheckpoints) > 0 {
			s.log.Warn("checkpoints that cannot be read are left out: their work runs again", "keys", l.badCheckpoints)
		}
		if len(ws) > 0 {
			if err := s.d.c.SubmitChunked(ws...).Wait(); err != nil {
				return fmt.Errorf("writing the store: %w", err)
			}
		}
		s.d.goneAtStart = l.goneNodes
		s.sched.BeginRecovery(now, l.expectedNodes())
		st := s.sched.Recovery(now)
		s.d.recovering = st.Active // watchRecovery logs its end
		s.log.Info("recovery: adopting the running allocations that nodes report", "epoch", epoch+1,
			"expected_nodes", st.ExpectedNodes, "timeout", s.sched.Config().RecoveryTimeout.Seconds(), "active", st.Active)
	}
	s.d.epoch = epoch + 1
	if err := s.d.c.Commit(store.Put(store.Meta, "epoch", strconv.AppendUint(nil, s.d.epoch, 10))); err != nil {
		return fmt.Errorf("writing the store: %w", err)
	}
	return nil
}

// watchRecovery logs the end of the recovery window once (from the
// fair-share update loop).
func (s *Server) watchRecovery(now clock.Time) {
	if s.d == nil || !s.d.recovering {
		return
	}
	st := s.sched.Recovery(now)
	if st.Active {
		return
	}
	s.d.recovering = false
	s.log.Info("recovery ended", "reported_nodes", st.ReportedNodes, "expected_nodes", st.ExpectedNodes,
		"adopted_allocations", st.Adopted, "aborted_allocations", st.Refused,
		"took_s", st.Ended.Sub(st.Deadline.Add(-s.sched.Config().RecoveryTimeout)).Seconds())
}

// Recovery is the scheduler's recovery state now (zero for a server
// without a store).
func (s *Server) Recovery() schedule.RecoveryStatus {
	if s.d == nil {
		return schedule.RecoveryStatus{}
	}
	return s.sched.Recovery(s.Now())
}
