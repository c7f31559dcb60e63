package server

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// The durable records, as schema store.SchemaVersion has them
// (docs/operations.md#state-and-restarts). Every value is JSON but the
// history's:
//
//	meta/epoch                   how many times the store was opened
//	config/tree                  the tree config as GET /api/v1/config writes it
//	pools/<name>                 the pool as GET /api/v1/pools/{name} writes it
//	operations/<id>              OperationRecord: the start, written once
//	operation_states/<id>        OperationState: what changed since
//	counters/operation_id        the operation id counter's reserved end
//	counters/start_seq           the listing cursor's counter
//	nodes/<name>                 NodeRecord: the node registry
//	checkpoints/op/<id>          [completed jobs per task], while it runs
//	checkpoints/pool/<name>      PoolCheckpoint, integral pools
//	checkpoints/nodes            ["n-1", …]: the nodes alive at the last checkpoint
//	checkpoints/gone_nodes       {"n-2": NodeRecord, …}: the registered nodes known
//	                             to have gone at the last checkpoint, with their
//	                             registration then
//	checkpoints/history/<step µs>/<last step>/<part>
//	                             the pools' history: the steps of a tier up to
//	                             <last step>, in history.Snapshot's byte form
//	                             (binary, not JSON; history.go)
//
// A new member or key is added so that an older binary of the same schema
// can ignore it; anything else takes a new store.SchemaVersion.

// OperationRecord is an operation's start.
type OperationRecord struct {
	Seq         uint64          `json:"seq"`
	StartUnixUS int64           `json:"start_unix_us"`
	Body        json.RawMessage `json:"body"`
	// Owner is the user who started it (absent without tokens).
	Owner string `json:"owner,omitempty"`
}

// The values of OperationState.State.
const (
	StateLive      = "live"
	StateCompleted = "completed"
	StateAborted   = "aborted"
)

// OperationState is what changed of an operation since its start.
type OperationState struct {
	// Pool, Weight and ResourceLimits are set when a PATCH changed them
	// (ResourceLimits "null": removed).
	Pool           *string         `json:"pool,omitempty"`
	Weight         *float64        `json:"weight,omitempty"`
	ResourceLimits json.RawMessage `json:"resource_limits,omitempty"`
	// Tasks are the operation's tasks when a PATCH changed them: every
	// task with its job count, as the orchid writes them.
	Tasks json.RawMessage `json:"tasks,omitempty"`
	// State is StateCompleted or StateAborted once it finished, else
	// StateLive.
	State        string `json:"state"`
	FinishUnixUS int64  `json:"finish_unix_us,omitempty"`
}

// NodeRecord is the stored registration of a node: the index its
// allocation ids embed and the end of the id range reserved for it.
type NodeRecord struct {
	Index  uint32 `json:"index"`
	SeqEnd uint32 `json:"seq_end"`
}

// PoolCheckpoint is an integral pool's checkpoint.
type PoolCheckpoint struct {
	Volume map[string]float64 `json:"accumulated_resource_volume"`
}

// mustJSON encodes a record, which cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return b
}

func configWrite(c *schedule.Config) store.Write {
	return store.Put(store.Config, "tree", wire.AppendConfig(nil, c))
}

// poolWrite is the record of pool name as the scheduler has it now.
func (s *Server) poolWrite(name string) store.Write {
	p, err := s.sched.Pool(name)
	if err != nil {
		panic("BUG: no pool " + name + " to store: " + err.Error())
	}
	return store.Put(store.Pools, name, wire.AppendPool(nil, p.Name, p.Parent, &p.Config))
}

func operationStateWrite(id string, st *OperationState) store.Write {
	return store.Put(store.OperationStates, id, mustJSON(st))
}

func counterWrite(name string, v uint64) store.Write {
	return store.Put(store.Counters, name, strconv.AppendUint(nil, v, 10))
}

func nodeWrite(name string, r NodeRecord) store.Write {
	return store.Put(store.Nodes, name, mustJSON(r))
}

// operationStartWrites are the records of a new operation.
func (s *Server) operationStartWrites(id string, r *opRecord, body []byte, start clock.Time) []store.Write {
	rec := mustJSON(OperationRecord{Seq: r.seq, StartUnixUS: s.unixUS(start), Body: compactJSON(body), Owner: r.owner})
	return []store.Write{
		store.Put(store.Operations, id, rec),
		operationStateWrite(id, &r.state),
		counterWrite("operation_id", s.sched.OperationIDSeq()),
		counterWrite("start_seq", s.opSeq),
	}
}

func compactJSON(b []byte) json.RawMessage {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return append(json.RawMessage(nil), b...) // validated already: cannot happen
	}
	return out.Bytes()
}

func volumeJSON(v [resource.Count]float64) map[string]float64 {
	m := map[string]float64{}
	for k, x := range v {
		if x != 0 {
			m[resource.Kind(k).String()] = x
		}
	}
	return m
}
