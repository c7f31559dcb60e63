package snapshot

import (
	"fmt"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/fairshare"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tree"
)

// Build creates the pool tree and an Updater for the snapshot, with integral
// volumes restored. It validates the whole tree first.
func Build(s *Snapshot) (*tree.Tree, *fairshare.Updater, error) {
	t := tree.New(s.Root.Pool)
	var ms []tree.Mutation
	var paths []string
	var walk func(parent string, e *Element)
	walk = func(parent string, e *Element) {
		for i := range e.Children {
			c := &e.Children[i]
			if c.IsOperation {
				ms = append(ms, tree.Mutation{Kind: tree.AddOperation, Name: c.Name, Parent: parent, Op: c.Op, Demand: c.Demand, Usage: c.Usage})
			} else {
				ms = append(ms, tree.Mutation{Kind: tree.AddPool, Name: c.Name, Parent: parent, Pool: c.Pool})
			}
			paths = append(paths, c.Path)
			if !c.IsOperation {
				walk(c.Name, c)
			}
		}
	}
	walk("", &s.Root)
	if i, err := t.Apply(ms...); err != nil {
		return nil, nil, treeError(paths[i], err)
	}
	u := fairshare.New(t, s.Config)
	var restore func(e *Element)
	restore = func(e *Element) {
		for i := range e.Children {
			c := &e.Children[i]
			if !c.IsOperation {
				if c.AccumulatedVolume != [resource.Count]float64{} {
					id, _ := t.Lookup(c.Name)
					u.SetAccumulatedVolume(id, c.AccumulatedVolume)
				}
				restore(c)
			}
		}
	}
	restore(&s.Root)
	return t, u, nil
}

// treeError turns a core/tree error about the element at path into an
// *apierr.Error at the absolute path of the offending field.
func treeError(path string, err error) error {
	if te, ok := err.(*apierr.Error); ok {
		p := path
		if te.Path != "name" {
			p = apierr.Join(path, te.Path)
		}
		return &apierr.Error{Code: te.Code, Path: p, Message: te.Message}
	}
	return &apierr.Error{Code: apierr.CodeInvalidValue, Path: path, Message: err.Error()}
}

// Solve runs the snapshot's updates and returns every element's attributes
// after each update. The tree is validated before anything runs; an invalid
// snapshot returns an *apierr.Error at the JSON path of the offending value.
func Solve(s *Snapshot) (*Result, error) {
	t, u, err := Build(s)
	if err != nil {
		return nil, err
	}
	// Validate every assignment before running anything.
	for _, up := range s.Updates {
		for _, a := range up.Set {
			if err := checkAssignment(t, &a); err != nil {
				return nil, err
			}
		}
	}
	res := &Result{Updates: make([]UpdateResult, 0, len(s.Updates))}
	var now clock.Time
	for _, up := range s.Updates {
		// An update's config and total resources apply to that update only.
		cfg, total := s.Config, s.Total
		if up.Config != nil {
			cfg = *up.Config
		}
		if up.Total != nil {
			total = *up.Total
		}
		u.SetConfig(cfg)
		for _, a := range up.Set {
			if err := apply(t, &a); err != nil {
				return nil, err
			}
		}
		if up.HasElapsed {
			u.SetPreviousUpdate(now)
			now = now.Add(up.Elapsed)
		} else {
			u.ForgetPreviousUpdate()
		}
		u.Update(total, now)
		res.Updates = append(res.Updates, collect(t, u, up.Label, s, total))
	}
	return res, nil
}

func checkAssignment(t *tree.Tree, a *Assignment) error {
	id, ok := t.Lookup(a.Element)
	if !ok {
		return &apierr.Error{Code: apierr.CodeUnknownElement, Path: a.Path, Message: fmt.Sprintf("cannot find element %q", a.Element)}
	}
	isOp := t.IsOperation(id)
	switch a.Attr {
	case AttrDemand, AttrUsage:
		if !isOp {
			return &apierr.Error{Code: apierr.CodeInvalidValue, Path: a.Path, Message: fmt.Sprintf("cannot set demand or usage of pool %q: only operations have them", a.Element)}
		}
	case AttrStrongGuarantee:
		if isOp {
			return &apierr.Error{Code: apierr.CodeInvalidValue, Path: a.Path, Message: fmt.Sprintf("cannot set strong_guarantee_resources of operation %q: only pools have them", a.Element)}
		}
	}
	return nil
}

func apply(t *tree.Tree, a *Assignment) error {
	id, _ := t.Lookup(a.Element)
	var err error
	switch a.Attr {
	case AttrDemand:
		t.SetDemandUsage(id, a.Vec.OrZero(), t.Usage(id))
	case AttrUsage:
		t.SetDemandUsage(id, t.Demand(id), a.Vec.OrZero())
	case AttrWeight:
		if t.IsOperation(id) {
			err = t.SetOperationWeight(id, tree.Some(a.Num))
		} else {
			c := *t.Pool(id)
			c.Weight = tree.Some(a.Num)
			_, err = t.Apply(tree.Mutation{Kind: tree.SetPool, Name: a.Element, Pool: c})
		}
	case AttrResourceLimits:
		if t.IsOperation(id) {
			err = t.SetOperationLimits(id, a.Vec)
		} else {
			c := *t.Pool(id)
			c.ResourceLimits = a.Vec
			_, err = t.Apply(tree.Mutation{Kind: tree.SetPool, Name: a.Element, Pool: c})
		}
	case AttrStrongGuarantee:
		c := *t.Pool(id)
		c.StrongGuarantee = a.Vec
		_, err = t.Apply(tree.Mutation{Kind: tree.SetPool, Name: a.Element, Pool: c})
	}
	if err != nil {
		return treeError(a.Path, err)
	}
	return nil
}

func collect(t *tree.Tree, u *fairshare.Updater, label string, s *Snapshot, total resource.Vec) UpdateResult {
	ur := UpdateResult{Label: label}
	jobs := map[string]resource.Vec{}
	var walk func(e *Element)
	walk = func(e *Element) {
		for i := range e.Children {
			c := &e.Children[i]
			if c.IsOperation && !c.JobResources.IsZero() {
				jobs[c.Name] = c.JobResources
			}
			walk(c)
		}
	}
	walk(&s.Root)
	t.Walk(func(id tree.ID) {
		r := ElementResult{Name: t.Name(id), IsOperation: t.IsOperation(id), Attrs: *u.Attributes(id)}
		if job, ok := jobs[r.Name]; ok {
			r.FittingJobs = fittingJobs(r.Attrs.FairShare.Total, total, job)
		}
		ur.Elements = append(ur.Elements, r)
	})
	return ur
}

// fittingJobs is how many whole jobs of size job fit into share of total.
func fittingJobs(share resource.Share, total, job resource.Vec) int64 {
	n := int64(-1)
	for r := range job {
		if job[r] == 0 {
			continue
		}
		// A relative slack absorbs the rounding of shares that should be exact.
		avail := share[r] * float64(total[r]) * (1 + 1e-9)
		k := int64(avail / float64(job[r]))
		if n < 0 || k < n {
			n = k
		}
	}
	return max(n, 0)
}
