package server

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// ReloadResult is what Reload changed.
type ReloadResult struct {
	// ConfigChanged is whether the tree config changed.
	ConfigChanged bool
	// Added, Changed and Removed name the pools created, reconfigured (or
	// moved) and removed, in the order applied.
	Added, Changed, Removed []string
	// Kept names the pools the file left out that were kept because they
	// (or their subtrees) still have operations.
	Kept []string
}

// Reload makes the server's tree config and pools those of sc, as
// fairsched serve does on SIGHUP: pools the file has and the server lacks are
// created, pools whose parent or attributes differ are changed, and pools the
// file leaves out are removed when they and their subtrees hold no
// operations (and kept otherwise, in Kept). A start-up only key (node_shards)
// must keep its value. Either all of it applies or, on an error, nothing
// does; the error names the file's JSON path.
func (s *Server) Reload(sc *wire.ServeConfig) (ReloadResult, error) {
	var res ReloadResult
	s.mu.Lock()
	defer s.mu.Unlock()
	next := sc.Scheduler
	if next.Shards != s.cfg.Shards {
		return res, &wire.Error{Code: wire.CodeInvalidValue, Path: "$.config.node_shards",
			Message: "cannot change node_shards without a restart: the server runs with " + strconv.Itoa(s.cfg.Shards)}
	}
	if err := schedule.ValidateConfig(&next); err != nil {
		return res, pathError(err, "$.config")
	}

	current := map[string]schedule.PoolInfo{}
	for _, p := range s.sched.Pools(nil) {
		current[p.Name] = p
	}
	// Pools to create or change, parents first (the file's order).
	var ms []tree.Mutation
	var paths []string
	inFile := map[string]bool{tree.RootName: true}
	for i := range sc.Pools {
		b := &sc.Pools[i]
		if b.Name == tree.RootName {
			continue
		}
		inFile[b.Name] = true
		parent := tree.RootName
		if b.HasParent {
			parent = b.Parent
		}
		cur, exists := current[b.Name]
		switch {
		case !exists:
			m := tree.Mutation{Kind: tree.AddPool, Name: b.Name, Pool: b.Config}
			if parent != tree.RootName {
				m.Parent = parent
			}
			ms, paths = append(ms, m), append(paths, sc.PoolPaths[i])
			res.Added = append(res.Added, b.Name)
		case cur.Parent != parent || !samePoolConfig(&cur.Config, &b.Config):
			ms = append(ms, tree.Mutation{Kind: tree.SetPool, Name: b.Name, Parent: parent, Pool: b.Config})
			paths = append(paths, sc.PoolPaths[i])
			res.Changed = append(res.Changed, b.Name)
		}
	}
	// The root's entry sets its acl only.
	if cur := current[tree.RootName]; !sameACL(&cur.Config, &sc.Root) {
		rc := cur.Config
		rc.ACL = sc.Root.ACL
		ms = append(ms, tree.Mutation{Kind: tree.SetPool, Name: tree.RootName, Pool: rc})
		paths = append(paths, "$.pools")
		res.Changed = append(res.Changed, tree.RootName)
	}
	if len(ms) > 0 {
		if i, err := s.sched.ApplyPools(ms...); err != nil {
			return ReloadResult{}, pathError(err, paths[i])
		}
	}
	if next != s.cfg {
		if err := s.applyConfig(next); err != nil {
			// Validated above: only a bug gets here; undo the pools.
			panic("BUG: a validated config was refused: " + err.Error())
		}
		res.ConfigChanged = true
	}
	res.Removed, res.Kept = s.removeLeftOut(inFile)
	s.poolsChanged()
	if s.d != nil {
		var ws []store.Write
		if res.ConfigChanged {
			ws = append(ws, configWrite(&s.cfg))
		}
		for _, name := range slices.Concat(res.Added, res.Changed) {
			ws = append(ws, s.poolWrite(name))
		}
		for _, name := range res.Removed {
			ws = append(ws, store.Delete(store.Pools, name))
		}
		if err := s.submit(ws...).Wait(); err != nil {
			s.storeFailed(err)
			return res, fmt.Errorf("the reload applied but cannot be made durable: %w", err)
		}
	}
	return res, nil
}

// removeLeftOut removes the pools not in keep whose subtrees hold no
// operations and no pool of keep, deepest first, and returns them and the
// ones it kept. The caller holds s.mu.
func (s *Server) removeLeftOut(keep map[string]bool) (removed, kept []string) {
	pools := s.sched.Pools(nil)
	byName := map[string]*schedule.PoolInfo{}
	children := map[string][]string{}
	for i := range pools {
		p := &pools[i]
		byName[p.Name] = p
		if p.Name != tree.RootName {
			children[p.Parent] = append(children[p.Parent], p.Name)
		}
	}
	// removable reports whether name's whole subtree can go.
	memo := map[string]bool{}
	var removable func(name string) bool
	removable = func(name string) bool {
		if r, ok := memo[name]; ok {
			return r
		}
		r := !keep[name] && byName[name].OperationCount == 0
		for _, c := range children[name] {
			r = removable(c) && r
		}
		memo[name] = r
		return r
	}
	// Children before parents: post-order from the root.
	var walk func(name string)
	walk = func(name string) {
		kids := slices.Clone(children[name])
		slices.Sort(kids)
		for _, c := range kids {
			walk(c)
		}
		if keep[name] {
			return
		}
		if removable(name) {
			removed = append(removed, name)
		} else {
			kept = append(kept, name)
		}
	}
	walk(tree.RootName)
	for _, name := range removed {
		if _, err := s.sched.ApplyPools(tree.Mutation{Kind: tree.RemovePool, Name: name}); err != nil {
			panic("BUG: an empty pool could not be removed: " + err.Error())
		}
	}
	return removed, kept
}

// sameACL reports whether two pool configurations have the same ACL.
func sameACL(a, b *tree.PoolConfig) bool {
	return bytes.Equal(wire.AppendPool(nil, "", "", &tree.PoolConfig{ACL: a.ACL}),
		wire.AppendPool(nil, "", "", &tree.PoolConfig{ACL: b.ACL}))
}

// samePoolConfig reports whether two pool configurations are alike, by their
// wire form (every attribute that is set, as GET writes it).
func samePoolConfig(a, b *tree.PoolConfig) bool {
	return bytes.Equal(wire.AppendPool(nil, "", "", a), wire.AppendPool(nil, "", "", b))
}
