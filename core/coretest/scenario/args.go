package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/coretest"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/tagfilter"
	"github.com/fairsched/fairsched/core/tree"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// args reads a command's arguments; every argument must be read exactly once
// (done reports the others), so that a misspelt key fails instead of being
// ignored.
type args struct {
	cmd  *coretest.Cmd
	used []bool
	err  error
}

func newArgs(cmd *coretest.Cmd) *args {
	return &args{cmd: cmd, used: make([]bool, len(cmd.Args))}
}

func (a *args) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// str returns the value of key and whether it was given.
func (a *args) str(key string) (string, bool) {
	for i, arg := range a.cmd.Args {
		if arg.Key == key && !a.used[i] {
			a.used[i] = true
			if !arg.HasValue {
				a.fail(errorf("cannot use %s without a value", key))
			}
			return arg.Value, true
		}
	}
	return "", false
}

// all returns the values of every occurrence of key, in order.
func (a *args) all(key string) []string {
	var vs []string
	for {
		v, ok := a.str(key)
		if !ok {
			return vs
		}
		vs = append(vs, v)
	}
}

// flag reports whether the bare key was given.
func (a *args) flag(key string) bool {
	for i, arg := range a.cmd.Args {
		if arg.Key == key && !a.used[i] {
			a.used[i] = true
			if arg.HasValue {
				a.fail(errorf("cannot give %s a value: it is a flag", key))
			}
			return true
		}
	}
	return false
}

func (a *args) float(key string, dst *float64) bool {
	v, ok := a.str(key)
	if !ok {
		return false
	}
	f, err := parseFloat(key, v)
	if err != nil {
		a.fail(err)
		return false
	}
	*dst = f
	return true
}

func parseFloat(key, v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) {
		return 0, errorf("cannot use %s=%s: want a number", key, v)
	}
	return f, nil
}

// seconds reads a duration in seconds, or "never" for a negative one.
func (a *args) seconds(key string, dst *float64) bool {
	v, ok := a.str(key)
	if !ok {
		return false
	}
	if v == "never" {
		*dst = -1
		return true
	}
	f, err := parseFloat(key, v)
	if err != nil {
		a.fail(err)
		return false
	}
	*dst = f
	return true
}

func (a *args) int(key string, dst *int64) bool {
	v, ok := a.str(key)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.fail(errorf("cannot use %s=%s: want an integer", key, v))
		return false
	}
	*dst = n
	return true
}

func (a *args) bool(key string, dst *bool) bool {
	v, ok := a.str(key)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		a.fail(errorf("cannot use %s=%s: want true or false", key, v))
		return false
	}
	*dst = b
	return true
}

func (a *args) optFloat(key string, dst *tree.OptFloat) {
	var f float64
	if a.float(key, &f) {
		*dst = tree.Some(f)
	}
}

// optDuration reads a number of seconds.
func (a *args) optDuration(key string, dst *tree.OptDuration) {
	var f float64
	if a.float(key, &f) {
		*dst = tree.SomeDuration(clock.DurationFromSeconds(f))
	}
}

// peek returns the value of key without marking it read.
func (a *args) peek(key string) (string, bool) {
	for i, arg := range a.cmd.Args {
		if arg.Key == key && !a.used[i] {
			return arg.Value, true
		}
	}
	return "", false
}

func (a *args) optBool(key string, dst *tree.OptBool) {
	var b bool
	if a.bool(key, &b) {
		*dst = tree.SomeBool(b)
	}
}

func (a *args) optInt(key string, dst *tree.OptInt) {
	var n int64
	if a.int(key, &n) {
		*dst = tree.SomeInt(n)
	}
}

// partialVec reads a resource list such as cpu:4,memory:10G.
func (a *args) partialVec(key string, dst *tree.PartialVec) {
	v, ok := a.str(key)
	if !ok {
		return
	}
	var p tree.PartialVec
	for item := range strings.SplitSeq(v, ",") {
		name, amount, ok := strings.Cut(item, ":")
		k, known := kindByName(name)
		if !ok || !known {
			a.fail(errorf("cannot parse %s=%s: want a list of resource:amount (slots, cpu, gpu, memory, network)", key, v))
			return
		}
		n, err := parseAmount(k, name, amount)
		if err != nil {
			a.fail(err)
			return
		}
		p.V[k], p.Set[k] = n, true
	}
	*dst = p
}

// tagFilter reads a scheduling tag filter formula (written without spaces,
// such as gpu&!preemptible; empty for none).
func (a *args) tagFilter(key string, dst *tagfilter.Filter) {
	v, ok := a.str(key)
	if !ok {
		return
	}
	f, err := tagfilter.Parse(v)
	if err != nil {
		a.fail(err)
		return
	}
	*dst = f
}

// tags reads a comma-separated list of node tags (empty for none).
func (a *args) tags(key string, dst *[]string) bool {
	v, ok := a.str(key)
	if !ok {
		return false
	}
	*dst = []string{}
	for t := range strings.SplitSeq(v, ",") {
		if t != "" {
			*dst = append(*dst, t)
		}
	}
	return true
}

// vec reads the resource arguments slots=, cpu=, gpu=, memory= and network=
// into v, leaving the components not given as they are; it reports whether
// any was given.
func (a *args) vec(v *resource.Vec) bool {
	given := false
	for k := resource.Kind(0); k < resource.Count; k++ {
		name := kindName(k)
		s, ok := a.str(name)
		if !ok {
			continue
		}
		n, err := parseAmount(k, name, s)
		if err != nil {
			a.fail(err)
			continue
		}
		v[k], given = n, true
	}
	return given
}

// list returns the comma-separated values of key and whether it was given.
func (a *args) list(key string) ([]string, bool) {
	v, ok := a.str(key)
	if !ok {
		return nil, false
	}
	return strings.Split(v, ","), true
}

// parseInt parses v, the value (or a list item) of key, as an integer.
func (a *args) parseInt(key, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.fail(errorf("cannot use %s=%s: want an integer", key, v))
	}
	return n
}

// perTask reads key as a list of one value for every one of n tasks, or a
// single value for all of them, and calls set with each task's value.
func (a *args) perTask(key string, n int, set func(i int, v string)) {
	vs, ok := a.list(key)
	switch {
	case !ok:
		return
	case n == 0 || len(vs) != 1 && len(vs) != n:
		a.fail(errorf("cannot use %s=%s for %d tasks: want one value, or one per task", key, strings.Join(vs, ","), n))
		return
	}
	for i := range n {
		set(i, vs[min(i, len(vs)-1)])
	}
}

// floats reads duration-like key per task (see perTask) into dst.
func (a *args) floats(key string, dst []float64) {
	a.perTask(key, len(dst), func(i int, v string) {
		f, err := parseFloat(key, v)
		if err != nil {
			a.fail(err)
		}
		dst[i] = f
	})
}

// taskVecs reads the resource arguments per task (see perTask) into the
// vectors res returns for tasks 0..n-1, leaving the components not given as
// they are.
func (a *args) taskVecs(n int, res func(i int) *resource.Vec) {
	for k := resource.Kind(0); k < resource.Count; k++ {
		name := kindName(k)
		a.perTask(name, n, func(i int, v string) {
			amount, err := parseAmount(k, name, v)
			if err != nil {
				a.fail(err)
			}
			res(i)[k] = amount
		})
	}
}

// done reports an argument error, or the first argument nothing read.
func (a *args) done() error {
	if a.err != nil {
		return a.err
	}
	for i, u := range a.used {
		if !u {
			return errorf("cannot use argument %q here", a.cmd.Args[i].Key)
		}
	}
	return nil
}

// kindName is a resource's name in scripts: the wire name, but "slots" for
// user_slots.
func kindName(k resource.Kind) string {
	if k == resource.UserSlots {
		return "slots"
	}
	return k.String()
}

func kindByName(name string) (resource.Kind, bool) {
	if name == "slots" {
		return resource.UserSlots, true
	}
	return resource.KindByName(name)
}

// parseAmount parses an amount of resource k: cores (fractional) for cpu,
// bytes with an optional binary suffix K, M, G or T for memory and network,
// a count otherwise.
func parseAmount(k resource.Kind, name, s string) (int64, error) {
	bad := func(want string) (int64, error) {
		return 0, errorf("cannot use %s=%s: want %s", name, s, want)
	}
	if k == resource.CPU {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f >= 0 && f <= resource.MaxAmount/resource.CPUScale) {
			return bad("a non-negative number of cores")
		}
		return resource.Cores(f), nil
	}
	mult := 1.0
	if k == resource.Memory || k == resource.Network {
		if i := len(s) - 1; i > 0 {
			if m, ok := byteSuffixes[s[i]]; ok {
				s, mult = s[:i], m
			}
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	n := f * mult
	if err != nil || !(n >= 0 && n <= resource.MaxAmount) || n != math.Trunc(n) {
		return bad("a non-negative whole amount")
	}
	return int64(n), nil
}

var byteSuffixes = map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}

// choice reads key as one of names and stores the matching value.
func choice[T any](a *args, key string, dst *T, names []string, values []T) {
	v, ok := a.str(key)
	if !ok {
		return
	}
	if i := slices.Index(names, v); i >= 0 {
		*dst = values[i]
		return
	}
	a.fail(errorf("cannot use %s=%s: want one of %s", key, v, strings.Join(names, ", ")))
}
