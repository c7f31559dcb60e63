package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairsched/fairsched/client"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/wire"
)

func httpClient(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} }

// noFlags is a command without flags of its own.
func noFlags(run func(e *cliEnv, args []string) error) func(*flag.FlagSet) func(*cliEnv, []string) error {
	return func(*flag.FlagSet) func(*cliEnv, []string) error { return run }
}

// bodyFlag is a command that reads a JSON body from -f FILE.
func bodyFlag(run func(e *cliEnv, args []string, file string) error) func(*flag.FlagSet) func(*cliEnv, []string) error {
	return func(fs *flag.FlagSet) func(*cliEnv, []string) error {
		file := fs.String("f", "", "the JSON body's file (- for stdin)")
		return func(e *cliEnv, args []string) error { return run(e, args, *file) }
	}
}

// dryRunBodyFlags is a pool change that reads a JSON body from -f FILE
// (when it takes one) and may be previewed with --dry-run.
func dryRunBodyFlags(run func(e *cliEnv, args []string, file string, dry bool) error) func(*flag.FlagSet) func(*cliEnv, []string) error {
	return func(fs *flag.FlagSet) func(*cliEnv, []string) error {
		file := fs.String("f", "", "the JSON body's file (- for stdin)")
		dry := dryRunFlag(fs)
		return func(e *cliEnv, args []string) error { return run(e, args, *file, *dry) }
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(args []string, n int, names string) error {
	if len(args) != n {
		return usagef("want %s, got %d argument(s)", names, len(args))
	}
	return nil
}

var cliCommands []cliCommand

func init() {
	cliCommands = []cliCommand{
		{group: "pools", verb: "list", summary: "every pool's configuration, the root first",
			flags: noFlags(poolsList)},
		{group: "pools", verb: "get", args: "NAME", summary: "one pool's configuration",
			flags: noFlags(poolsGet)},
		{group: "pools", verb: "put", args: "NAME -f FILE [--dry-run]", summary: "create a pool or replace its configuration (--dry-run: preview it)",
			flags: dryRunBodyFlags(poolsPut)},
		{group: "pools", verb: "patch", args: "NAME -f FILE [--dry-run]", summary: "change the attributes the body lists (null resets one; --dry-run: preview it)",
			flags: dryRunBodyFlags(poolsPatch)},
		{group: "pools", verb: "delete", args: "NAME [--dry-run]", summary: "remove an empty pool (--dry-run: preview it)",
			flags: dryRunFlags(poolsDelete)},
		{group: "operations", verb: "list", args: "[--pool P] [--state S]", summary: "operations in start order",
			flags: operationsListFlags},
		{group: "operations", verb: "get", args: "ID", summary: "one operation: state, demand, usage, shares",
			flags: noFlags(operationsGet)},
		{group: "operations", verb: "start", args: "-f FILE", summary: "start an operation",
			flags: bodyFlag(operationsStart)},
		{group: "operations", verb: "patch", args: "ID -f FILE", summary: "change an operation's weight, pool or limits",
			flags: bodyFlag(operationsPatch)},
		{group: "operations", verb: "complete", args: "ID", summary: "finish an operation as completed",
			flags: noFlags(operationsFinish(true))},
		{group: "operations", verb: "abort", args: "ID", summary: "finish an operation as aborted",
			flags: noFlags(operationsFinish(false))},
		{group: "nodes", verb: "list", summary: "the registered nodes: resources, usage, allocations, last heartbeat",
			flags: noFlags(nodesList)},
		{group: "nodes", verb: "get", args: "ID", summary: "a node's resources, tags and allocations",
			flags: noFlags(nodesGet)},
		{group: "config", verb: "get", summary: "the tree config and the pools, as a file --config takes back",
			flags: noFlags(configGet)},
		{group: "config", verb: "patch", args: "-f FILE", summary: "change tree config keys",
			flags: bodyFlag(configPatch)},
		{group: "config", verb: "validate", args: "FILE", summary: "check a serve configuration (--config) without a server",
			flags: noFlags(configValidate), offline: true},
		{group: "backup", args: "-f FILE", summary: "save a consistent copy of a durable server's store (start a server from it as DIR/fairsched.db)",
			flags: bodyFlag(backup)},
		{group: "explain", args: "OPERATION | --pool NAME", summary: "why an operation (or a pool) is in its state, the binding condition first",
			flags: explainFlags},
		{group: "status", summary: "the server's health: its state, role and leader, store, epoch, the recovery after a restart, and whether it is ready",
			flags: noFlags(status)},
	}
}

// serverStatus is what fairsched status prints.
type serverStatus struct {
	*client.Health
	Ready bool `json:"ready"`
	// NotReady is why it is not ready (the /readyz error's code).
	NotReady string `json:"not_ready,omitempty"`
}

func status(e *cliEnv, args []string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	h, err := e.c.Health(e.ctx)
	if err != nil {
		return err
	}
	st := serverStatus{Health: h, Ready: true}
	if err := e.c.Ready(e.ctx); err != nil {
		var ae *client.Error
		if !errors.As(err, &ae) {
			return err
		}
		st.Ready, st.NotReady = false, ae.Code
	}
	return e.emit(st, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "status\t%s\n", h.Status)
		ready := "yes"
		if !st.Ready {
			ready = "no (" + st.NotReady + ")"
		}
		fmt.Fprintf(tw, "ready\t%s\n", ready)
		fmt.Fprintf(tw, "role\t%s\n", h.Role)
		if h.Leader != nil {
			fmt.Fprintf(tw, "leader\t%s\n", *h.Leader)
		}
		fmt.Fprintf(tw, "store\t%s\n", h.Store)
		if h.Epoch > 0 {
			fmt.Fprintf(tw, "epoch\t%d\n", h.Epoch)
		}
		if r := h.Recovery; r != nil {
			state := "ended"
			if r.Active {
				state = fmt.Sprintf("active, %.1f s left at most", r.RemainingS)
			}
			fmt.Fprintf(tw, "recovery\t%s: %d of %d nodes reported, %d allocations adopted, %d aborted\n",
				state, r.ReportedNodes, r.ExpectedNodes, r.AdoptedAllocations, r.AbortedAllocations)
		}
		if len(h.Quarantined) > 0 {
			fmt.Fprintf(tw, "quarantined\t%s\n", strings.Join(h.Quarantined, ", "))
		}
	})
}

func poolsList(e *cliEnv, args []string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	pools, err := e.c.Pools(e.ctx)
	if err != nil {
		return err
	}
	return e.emit(pools, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "NAME\tPARENT\tMODE\tWEIGHT\tGUARANTEE\tLIMITS\tMAX OPS\tMAX RUNNING")
		for _, p := range pools {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, dash(p.Parent), p.Mode,
				weight(p.Weight), resources(p.StrongGuaranteeResources), limits(p.ResourceLimits),
				count(p.MaxOperationCount), count(p.MaxRunningOperationCount))
		}
	})
}

func poolsGet(e *cliEnv, args []string) error {
	if err := wantArgs(args, 1, "NAME"); err != nil {
		return err
	}
	p, err := e.c.Pool(e.ctx, args[0])
	if err != nil {
		return err
	}
	return e.emitPool(p)
}

func (e *cliEnv) emitPool(p *client.Pool) error {
	return e.emit(p, func(tw *tabwriter.Writer) {
		// Every attribute that is set, as the server wrote it.
		var m map[string]any
		b, _ := json.Marshal(p)
		json.Unmarshal(b, &m)
		for _, k := range sortedKeys(m) {
			v, _ := json.Marshal(m[k])
			if s, ok := m[k].(string); ok {
				v = []byte(s)
			}
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	})
}

func poolsPut(e *cliEnv, args []string, file string, dry bool) error {
	if err := wantArgs(args, 1, "NAME"); err != nil {
		return err
	}
	var p client.Pool
	if err := e.readBody(file, &p); err != nil {
		return err
	}
	if dry {
		p.Name = ""
		return e.dryRun(poolChange(http.MethodPut, args[0], p))
	}
	got, created, err := e.c.PutPool(e.ctx, args[0], p)
	if err != nil {
		return err
	}
	if e.output == "table" {
		fmt.Fprintf(e.stdout, "pool %s %s\n", got.Name, map[bool]string{true: "created", false: "replaced"}[created])
		return nil
	}
	return e.emitPool(got)
}

func poolsPatch(e *cliEnv, args []string, file string, dry bool) error {
	if err := wantArgs(args, 1, "NAME"); err != nil {
		return err
	}
	var patch client.PoolPatch
	if err := e.readBody(file, &patch); err != nil {
		return err
	}
	if dry {
		return e.dryRun(poolChange(http.MethodPatch, args[0], patch))
	}
	p, err := e.c.PatchPool(e.ctx, args[0], patch)
	if err != nil {
		return err
	}
	return e.emitPool(p)
}

func poolsDelete(e *cliEnv, args []string, dry bool) error {
	if err := wantArgs(args, 1, "NAME"); err != nil {
		return err
	}
	if dry {
		return e.dryRun(poolChange(http.MethodDelete, args[0], nil))
	}
	if err := e.c.DeletePool(e.ctx, args[0]); err != nil {
		return err
	}
	if e.output == "table" {
		fmt.Fprintf(e.stdout, "pool %s deleted\n", args[0])
		return nil
	}
	return e.emit(map[string]string{"deleted": args[0]}, nil)
}

func operationsListFlags(fs *flag.FlagSet) func(*cliEnv, []string) error {
	var f client.OperationFilter
	fs.StringVar(&f.Pool, "pool", "", "only this pool's operations")
	fs.StringVar(&f.State, "state", "", "only operations in this state: pending, running, completed or aborted")
	limit := fs.Int("limit", 0, "at most this many operations (0: all)")
	return func(e *cliEnv, args []string) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		if *limit < 0 {
			return usagef("--limit %d: want 0 or more", *limit)
		}
		ops := []client.Operation{}
		for op, err := range e.c.Operations(e.ctx, f) {
			if err != nil {
				return err
			}
			ops = append(ops, op)
			if *limit > 0 && len(ops) == *limit {
				break
			}
		}
		return e.emit(ops, func(tw *tabwriter.Writer) {
			fmt.Fprintln(tw, "ID\tSTATE\tPOOL\tDEMAND\tUSAGE\tFAIR SHARE\tSATISFACTION\tSTARVATION\tRUNNING\tPENDING JOBS")
			for _, op := range ops {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", op.ID, op.State, op.Pool,
					resources(&op.Demand), resources(&op.Usage), share(op.FairShare),
					ratio(op.SatisfactionRatio), op.StarvationStatus, op.AllocationCounts.Running, op.PendingJobCount)
			}
		})
	}
}

func operationsGet(e *cliEnv, args []string) error {
	if err := wantArgs(args, 1, "ID"); err != nil {
		return err
	}
	op, err := e.c.Operation(e.ctx, args[0])
	if err != nil {
		return err
	}
	return e.emitOperation(op)
}

func (e *cliEnv) emitOperation(op *client.Operation) error {
	return e.emit(op, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "id:\t%s\nstate:\t%s\npool:\t%s\n", op.ID, op.State, op.Pool)
		if op.WaitingFor != nil {
			fmt.Fprintf(tw, "waiting for:\tpool %s (max_running_operation_count %d)\n",
				op.WaitingFor.Pool, op.WaitingFor.MaxRunningOperationCount)
		}
		fmt.Fprintf(tw, "demand:\t%s\nusage:\t%s\n", resources(&op.Demand), resources(&op.Usage))
		fmt.Fprintf(tw, "fair share:\t%s\nusage share:\t%s\ndemand share:\t%s\n",
			share(op.FairShare), share(op.UsageShare), share(op.DemandShare))
		fmt.Fprintf(tw, "satisfaction:\t%s\nstatus:\t%s\nstarvation:\t%s\n",
			ratio(op.SatisfactionRatio), op.Status, op.StarvationStatus)
		c := op.AllocationCounts
		fmt.Fprintf(tw, "allocations:\t%d running (%d non-preemptible, %d aggressively preemptible, %d preemptible, %d preempted)\n",
			c.Running, c.NonPreemptible, c.AggressivelyPreemptible, c.Preemptible, c.Preempted)
		fmt.Fprintf(tw, "jobs:\t%d pending, %d completed\nstarted:\t%.3f s\n",
			op.PendingJobCount, op.CompletedJobCount, op.StartTimeS)
	})
}

func operationsStart(e *cliEnv, args []string, file string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	var spec client.OperationSpec
	if err := e.readBody(file, &spec); err != nil {
		return err
	}
	st, err := e.c.StartOperation(e.ctx, spec)
	if err != nil {
		return err
	}
	return e.emit(st, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "operation %s %s\n", st.ID, st.State) })
}

func operationsPatch(e *cliEnv, args []string, file string) error {
	if err := wantArgs(args, 1, "ID"); err != nil {
		return err
	}
	var patch client.OperationPatch
	if err := e.readBody(file, &patch); err != nil {
		return err
	}
	op, err := e.c.PatchOperation(e.ctx, args[0], patch)
	if err != nil {
		return err
	}
	return e.emitOperation(op)
}

func operationsFinish(complete bool) func(e *cliEnv, args []string) error {
	return func(e *cliEnv, args []string) error {
		if err := wantArgs(args, 1, "ID"); err != nil {
			return err
		}
		finish := e.c.AbortOperation
		if complete {
			finish = e.c.CompleteOperation
		}
		op, err := finish(e.ctx, args[0])
		if err != nil {
			return err
		}
		return e.emit(op, func(tw *tabwriter.Writer) { fmt.Fprintf(tw, "operation %s %s\n", op.ID, op.State) })
	}
}

func nodesList(e *cliEnv, args []string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	nodes := []client.NodeSummary{}
	for n, err := range e.c.Nodes(e.ctx) {
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	return e.emit(nodes, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "ID\tRESOURCES\tUSAGE\tALLOCATIONS\tLAST HEARTBEAT\tTAGS")
		for _, n := range nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f s ago\t%s\n", n.ID, resources(&n.ResourceLimits),
				resources(&n.ResourceUsage), n.AllocationCount, n.LastHeartbeatAgeS, dash(strings.Join(n.Tags, " ")))
		}
	})
}

func nodesGet(e *cliEnv, args []string) error {
	if err := wantArgs(args, 1, "ID"); err != nil {
		return err
	}
	n, err := e.c.NodeOrchid(e.ctx, args[0])
	if err != nil {
		return err
	}
	return e.emit(n, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "id:\t%s\nresources:\t%s\nusage:\t%s\ntags:\t%s\nlast heartbeat:\t%.3f s\nallocations:\t%d\n",
			n.ID, resources(&n.ResourceLimits), resources(&n.ResourceUsage), dash(strings.Join(n.Tags, " ")),
			n.LastHeartbeatS, len(n.Allocations))
		if len(n.Allocations) == 0 {
			return
		}
		fmt.Fprintln(tw, "\nALLOCATION\tOPERATION\tTASK\tRESOURCES\tSTARTED\tPREEMPTION STATUS\tPREEMPTED")
		for _, a := range n.Allocations {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.3f\t%s\t%v\n", a.ID, a.OperationID, a.TaskIndex,
				resources(&a.Resources), a.StartTimeS, a.PreemptionStatus, a.Preempted)
		}
	})
}

func backup(e *cliEnv, args []string, file string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	if file == "" {
		return usagef("want the file to write: -f FILE (- for stdout)")
	}
	b, err := e.c.Backup(e.ctx)
	if err != nil {
		return err
	}
	if file == "-" {
		_, err = e.stdout.Write(b)
		return err
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return err
	}
	if e.output == "json" {
		return e.emit(map[string]any{"file": file, "bytes": len(b)}, nil)
	}
	fmt.Fprintf(e.stdout, "%s: %d bytes\n", file, len(b))
	return nil
}

// serveConfig is a serve configuration: what config get writes and
// --config reads.
type serveConfig struct {
	Config client.Config `json:"config"`
	Pools  []client.Pool `json:"pools"`
}

func configGet(e *cliEnv, args []string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	cfg, err := e.c.Config(e.ctx)
	if err != nil {
		return err
	}
	pools, err := e.c.Pools(e.ctx)
	if err != nil {
		return err
	}
	// Always JSON: the output is a file for --config.
	e.output = "json"
	return e.emit(serveConfig{Config: cfg, Pools: pools}, nil)
}

func configPatch(e *cliEnv, args []string, file string) error {
	if err := wantArgs(args, 0, "no arguments"); err != nil {
		return err
	}
	var patch client.Config
	if err := e.readBody(file, &patch); err != nil {
		return err
	}
	cfg, err := e.c.PatchConfig(e.ctx, patch)
	if err != nil {
		return err
	}
	return e.emit(cfg, func(tw *tabwriter.Writer) {
		for _, k := range sortedKeys(cfg) {
			v, _ := json.Marshal(cfg[k])
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	})
}

// configValidate checks a serve configuration as fairsched serve would,
// pools and all, without serving it.
func configValidate(e *cliEnv, args []string) error {
	if err := wantArgs(args, 1, "FILE"); err != nil {
		return err
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	sc, err := wire.DecodeServeConfig(data)
	if err == nil {
		_, err = facade.New(facade.Options{Config: sc, ManualUpdates: true})
	}
	if err != nil {
		return invalidConfig{file: args[0], err: err}
	}
	return e.emit(map[string]any{"file": args[0], "valid": true, "pools": len(sc.Pools)}, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "%s: valid (%d pools)\n", args[0], len(sc.Pools))
	})
}

// invalidConfig is a configuration file that would not serve: bad input,
// exit status 2.
type invalidConfig struct {
	file string
	err  error
}

func (e invalidConfig) Error() string { return e.file + ": " + e.err.Error() }

// Table cells.

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func weight(w float64) string {
	if w == 0 {
		return "1"
	}
	return strconv.FormatFloat(w, 'g', -1, 64)
}

func count(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// resources writes the non-zero amounts: "cpu=4 mem=16Gi gpu=1 slots=1".
func resources(r *client.Resources) string {
	if r == nil {
		return "-"
	}
	var parts []string
	if r.CPU != 0 {
		parts = append(parts, "cpu="+strconv.FormatFloat(r.CPU, 'f', -1, 64))
	}
	if r.Memory != 0 {
		parts = append(parts, "mem="+bytesIEC(r.Memory))
	}
	if r.GPU != 0 {
		parts = append(parts, "gpu="+strconv.FormatInt(r.GPU, 10))
	}
	if r.UserSlots != 0 {
		parts = append(parts, "slots="+strconv.FormatInt(r.UserSlots, 10))
	}
	if r.Network != 0 {
		parts = append(parts, "net="+strconv.FormatInt(r.Network, 10))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

func limits(l client.Limits) string {
	if len(l) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(l) {
		v := strconv.FormatFloat(l[k], 'f', -1, 64)
		if k == client.ResourceMemory {
			v = bytesIEC(int64(l[k]))
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// bytesIEC writes n bytes in binary units: "512", "1.5Ki", "16Gi".
func bytesIEC(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + string(units[i]) + "i"
}

// share writes a share by its largest resource: "12.5% cpu".
func share(s client.Share) string {
	name, v := "cpu", s.CPU
	for _, r := range []struct {
		name string
		v    float64
	}{{"memory", s.Memory}, {"gpu", s.GPU}, {"user_slots", s.UserSlots}, {"network", s.Network}} {
		if r.v > v {
			name, v = r.name, r.v
		}
	}
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "% " + name
}

func ratio(r float64) string {
	if r >= 1e9 {
		return "-"
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
