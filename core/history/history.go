// Package history keeps each pool's fair-share history at a fixed
// resolution — usage, fair share and demand (dominant shares) and its
// starvation, per step of Config.Step over the last Config.Span — and the
// cluster's fairness error with its time integral (docs/why-waiting.md,
// "Fairness over time").
//
// # Memory
//
// A pool's series is a ring of Span/Step slots of 7 bytes each: three
// IEEE half-precision floats (the shares, 11 significant bits, so a share
// is kept to about 0.05% of itself) and a flag byte (a sample is present,
// below fair share, starvation state). With the default 10 s for 24 h
// that is 8,640 slots, 60,480 bytes per pool, which the Go allocator
// rounds up to whole 8 KiB pages (rings over 32 KiB): TestMemoryPerPool
// measures 66,919 bytes per pool at 10,000 pools, 638 MiB in all. A
// coarser step scales it down (60 s for 24 h: about 11 KiB per pool). A
// pool's ring is allocated at its first sample and dropped when a Record
// no longer lists the pool. Tiers keeps several resolutions at once: the
// server's DefaultTiers, 10 s for the last hour and 5 minutes for the last
// 24 hours, take 5,024 bytes a pool (TestTiersMemory), 48 MiB at 10,000
// pools.
//
// # Use
//
// The caller records after every fair-share update (Record, with the
// samples Scheduler.PoolSamples hands out), off the heartbeat path, and
// answers queries (Query, QueryFairness). Snapshot and Restore carry the
// history across a restart at the checkpoint's granularity (AppendBinary
// and DecodeSnapshot are its byte form); Segment and Apply carry it in
// pieces, the steps since the last checkpoint each. A History is not safe for
// concurrent use: its owner serialises Record, Query and Snapshot.
package history

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/core/resource"
	"github.com/fairsched/fairsched/core/starvation"
)

// Config is the resolution and the span of the history.
type Config struct {
	// Step is the resolution: the samples recorded within one step are
	// averaged (the shares) and the worst starvation kept.
	Step clock.Duration
	// Span is how far back the history reaches; it holds Span/Step steps.
	Span clock.Duration
}

// DefaultConfig is 10 s for the last 24 h.
func DefaultConfig() Config { return Config{Step: 10 * clock.Second, Span: 24 * clock.Hour} }

// MaxSlots bounds Span/Step.
const MaxSlots = 1 << 20

// Validate checks the config: a positive step, a span of 1 to MaxSlots
// steps.
func (c Config) Validate() error {
	if c.Step <= 0 {
		return errorf(apierr.CodeInvalidValue, "step", "cannot use a history step of %v: want a positive duration", c.Step)
	}
	if n := c.Span / c.Step; c.Span <= 0 || c.Span%c.Step != 0 || n > MaxSlots {
		return errorf(apierr.CodeInvalidValue, "span", "cannot use a history span of %v with step %v: want a whole number of steps, 1 to %d", c.Span, c.Step, MaxSlots)
	}
	return nil
}

func (c Config) slots() int64 { return int64(c.Span / c.Step) }

func errorf(code, path, format string, args ...any) *apierr.Error {
	return &apierr.Error{Code: code, Path: path, Message: fmt.Sprintf(format, args...), Pkg: "history"}
}

// PoolSample is one pool's state at a fair-share update: its dominant
// usage, fair share and demand shares (resource.Share.MaxComponent of the
// orchid's shares) and its status.
type PoolSample struct {
	Name                     string
	Usage, FairShare, Demand float64
	Starvation               starvation.State
	BelowFairShare           bool
	// Inner: the pool has child pools; the fairness error counts the leaf
	// pools only (a parent's shares are its children's again).
	Inner bool
}

// Point is one step of a series as Query answers it: the mean of the
// samples recorded in the step (or in the steps a coarser query step
// covers), the worst starvation state among them and whether any was below
// its fair share. Samples is how many steps held a sample: 0 when the
// history has none for the point (before the pool existed, while the
// scheduler was down, …), and then the values are zero.
type Point struct {
	Time                     clock.Time
	Usage, FairShare, Demand float64
	Starvation               starvation.State
	BelowFairShare           bool
	Samples                  int
}

// Flag bits of a slot.
const (
	flagPresent    = 0x80
	flagBelow      = 0x40
	flagStarvation = 0x03
)

// series is one ring: width half-floats and a flag byte per slot, and the
// accumulation of the newest step.
type series struct {
	head  int64    // step index of the newest slot; math.MinInt64 when empty
	vals  []uint16 // width per slot
	flags []uint8
	width int
	// The newest step's samples: their sums and count, worst state and
	// whether any was below its fair share.
	sum   [3]float64
	n     float64
	worst uint8
	gen   uint64 // the Record that last listed the pool
}

func newSeries(slots int64, width int) *series {
	return &series{head: math.MinInt64, vals: make([]uint16, slots*int64(width)), flags: make([]uint8, slots), width: width}
}

func (s *series) slots() int64 { return int64(len(s.flags)) }

// advance makes step the newest, clearing the slots of the steps skipped.
// It reports false for a step older than the newest.
func (s *series) advance(step int64) bool {
	if s.head != math.MinInt64 && step < s.head {
		return false
	}
	if step == s.head {
		return true
	}
	n := s.slots()
	from := s.head + 1
	if s.head == math.MinInt64 || step-s.head > n {
		from = step - n + 1
	}
	for i := from; i <= step; i++ {
		j := mod(i, n)
		s.flags[j] = 0
		clear(s.vals[j*int64(s.width) : (j+1)*int64(s.width)])
	}
	s.head = step
	s.sum, s.n, s.worst = [3]float64{}, 0, 0
	return true
}

// add accumulates a sample into the newest step and writes its mean.
func (s *series) add(v [3]float64, flags uint8) {
	s.n++
	j := mod(s.head, s.slots())
	for k := range s.width {
		s.sum[k] += v[k]
		s.vals[j*int64(s.width)+int64(k)] = toHalf(s.sum[k] / s.n)
	}
	if st := flags & flagStarvation; st > s.worst&flagStarvation {
		s.worst = s.worst&^flagStarvation | st
	}
	s.worst |= flags & flagBelow
	s.flags[j] = flagPresent | s.worst
}

func mod(i, n int64) int64 {
	r := i % n
	if r < 0 {
		r += n
	}
	return r
}

// floorDiv is the step index of t.
func floorDiv(t clock.Time, step clock.Duration) int64 {
	q := int64(t) / int64(step)
	if int64(t)%int64(step) < 0 {
		q--
	}
	return q
}

// History is the pools' series and the cluster's fairness error. See the
// package documentation.
type History struct {
	cfg     Config
	pools   map[string]*series
	cluster *series // width 1: the fairness error
	gen     uint64
	// The fairness error's integral (share·seconds) up to last, and the
	// error at last, which holds until the next Record.
	integral  float64
	last      clock.Time
	lastError float64
	hasLast   bool
}

// New returns an empty history; cfg must be valid (Config.Validate).
func New(cfg Config) (*History, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &History{cfg: cfg, pools: map[string]*series{}, cluster: newSeries(cfg.slots(), 1)}, nil
}

// Config returns the history's configuration.
func (h *History) Config() Config { return h.cfg }

// Len returns the number of pools with a series.
func (h *History) Len() int { return len(h.pools) }

// Record adds the samples of a fair-share update at now: every pool's, so
// that a pool no longer listed (removed) loses its series. A record older
// than the newest step is ignored (the clock moves forward). It computes
// the fairness error at now — the mean, over the leaf pools with demand
// (not Inner), of |usage − fair share| (dominant shares) — and adds the previous error
// times the time since the previous record to the integral.
func (h *History) Record(now clock.Time, samples []PoolSample) {
	step := floorDiv(now, h.cfg.Step)
	if h.cluster.head != math.MinInt64 && step < h.cluster.head {
		return
	}
	h.gen++
	sum, n := 0.0, 0
	for i := range samples {
		p := &samples[i]
		s := h.pools[p.Name]
		if s == nil {
			s = newSeries(h.cfg.slots(), 3)
			h.pools[p.Name] = s
		}
		s.gen = h.gen
		if !s.advance(step) {
			continue
		}
		flags := uint8(p.Starvation) & flagStarvation
		if p.BelowFairShare {
			flags |= flagBelow
		}
		s.add([3]float64{p.Usage, p.FairShare, p.Demand}, flags)
		if p.Demand > resource.Epsilon && !p.Inner {
			sum += math.Abs(p.Usage - p.FairShare)
			n++
		}
	}
	for name, s := range h.pools {
		if s.gen != h.gen {
			delete(h.pools, name)
		}
	}
	e := 0.0
	if n > 0 {
		e = sum / float64(n)
	}
	if h.hasLast && now > h.last {
		h.integral += h.lastError * now.Sub(h.last).Seconds()
	}
	h.last, h.lastError, h.hasLast = now, e, true
	h.cluster.advance(step)
	h.cluster.add([3]float64{e}, 0)
}

// FairnessError returns the fairness error of the last Record and its
// integral over time up to then, in share·seconds.
func (h *History) FairnessError() (current, integral float64) { return h.lastError, h.integral }

// Query appends pool name's points from since to the newest step, one per
// step (rounded up to a multiple of Config.Step; 0 means Config.Step),
// aligned to multiples of step; since before the span starts at the
// oldest step kept.
func (h *History) Query(name string, since clock.Time, step clock.Duration, dst []Point) ([]Point, error) {
	s := h.pools[name]
	if s == nil {
		return dst, errorf("unknown_pool", "name", "cannot find the history of pool %q", name)
	}
	return h.query(s, since, step, dst)
}

// QueryFairness appends the cluster's fairness error as Query does for a
// pool: in each point, Usage holds the mean error (FairShare and Demand
// are zero).
func (h *History) QueryFairness(since clock.Time, step clock.Duration, dst []Point) ([]Point, error) {
	return h.query(h.cluster, since, step, dst)
}

func (h *History) query(s *series, since clock.Time, step clock.Duration, dst []Point) ([]Point, error) {
	if step < 0 {
		return dst, errorf(apierr.CodeInvalidValue, "step", "cannot use step %v: want a positive number of seconds", step)
	}
	k := int64(1)
	if step > 0 {
		k = int64((step + h.cfg.Step - 1) / h.cfg.Step)
		if k > s.slots() {
			k = s.slots()
		}
	}
	if s.head == math.MinInt64 {
		return dst, nil
	}
	n := s.slots()
	oldest := s.head - n + 1
	from := max(floorDiv(since, h.cfg.Step), oldest)
	from -= mod(from, k) // align
	for b := from; b <= s.head; b += k {
		p := Point{Time: clock.Time(b * int64(h.cfg.Step))}
		var sum [3]float64
		for i := max(b, oldest); i < b+k && i <= s.head; i++ {
			j := mod(i, n)
			f := s.flags[j]
			if f&flagPresent == 0 {
				continue
			}
			p.Samples++
			for c := range s.width {
				sum[c] += fromHalf(s.vals[j*int64(s.width)+int64(c)])
			}
			if st := starvation.State(f & flagStarvation); st > p.Starvation {
				p.Starvation = st
			}
			p.BelowFairShare = p.BelowFairShare || f&flagBelow != 0
		}
		if p.Samples > 0 {
			d := float64(p.Samples)
			p.Usage, p.FairShare, p.Demand = sum[0]/d, sum[1]/d, sum[2]/d
		}
		dst = append(dst, p)
	}
	return dst, nil
}

// MemoryBytes returns the bytes the series hold (their slices), for the
// stated bound: 7 × Span/Step per pool, 2 × Span/Step for the cluster's.
func (h *History) MemoryBytes() int64 {
	b := int64(len(h.cluster.vals)*2 + len(h.cluster.flags))
	for _, s := range h.pools {
		b += int64(len(s.vals)*2 + len(s.flags))
	}
	return b
}

// ---- snapshot ----

// Snapshot is a history's state as a checkpoint keeps it: the config and
// every series oldest step first.
type Snapshot struct {
	Config    Config
	Pools     []SeriesSnapshot // by name
	Cluster   SeriesSnapshot
	Integral  float64
	Last      clock.Time
	LastError float64
	HasLast   bool
}

// SeriesSnapshot is one series: Head is its newest step index (step
// boundaries are multiples of Config.Step from the epoch), Values width
// half-floats per step (3 for a pool, 1 for the cluster) and Flags one
// byte per step, oldest first, ending at Head.
type SeriesSnapshot struct {
	Name   string
	Head   int64
	Values []uint16
	Flags  []uint8
}

// Snapshot returns a copy of the history's state.
func (h *History) Snapshot() Snapshot {
	snap := Snapshot{Config: h.cfg, Cluster: h.cluster.snapshot(""), Integral: h.integral, Last: h.last, LastError: h.lastError, HasLast: h.hasLast}
	for name, s := range h.pools {
		snap.Pools = append(snap.Pools, s.snapshot(name))
	}
	sortSeries(snap.Pools)
	return snap
}

func sortSeries(ss []SeriesSnapshot) {
	slices.SortFunc(ss, func(a, b SeriesSnapshot) int { return strings.Compare(a.Name, b.Name) })
}

// snapshot copies the steps that hold a sample, from the oldest to head.
func (s *series) snapshot(name string) SeriesSnapshot {
	ss := SeriesSnapshot{Name: name, Head: s.head}
	if s.head == math.MinInt64 {
		return ss
	}
	n := s.slots()
	first := s.head - n + 1
	for first < s.head && s.flags[mod(first, n)]&flagPresent == 0 {
		first++
	}
	for i := first; i <= s.head; i++ {
		j := mod(i, n)
		ss.Values = append(ss.Values, s.vals[j*int64(s.width):(j+1)*int64(s.width)]...)
		ss.Flags = append(ss.Flags, s.flags[j])
	}
	return ss
}

// Restore returns a history with cfg holding what snap holds: the steps a
// restart keeps are those of the checkpoint (the time between the
// checkpoint and the restart has no samples). A snapshot of another step
// cannot be restored (its steps do not line up); one of another span keeps
// the newest steps that fit. An inconsistent snapshot is an error.
func Restore(cfg Config, snap *Snapshot) (*History, error) {
	h, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if snap.Config.Step != cfg.Step {
		return nil, errorf(apierr.CodeInvalidValue, "step", "cannot restore a history of step %v with step %v", snap.Config.Step, cfg.Step)
	}
	if err := h.cluster.restore(&snap.Cluster, 1, "cluster"); err != nil {
		return nil, err
	}
	for i := range snap.Pools {
		p := &snap.Pools[i]
		if _, dup := h.pools[p.Name]; dup || p.Name == "" {
			return nil, errorf(apierr.CodeInvalidValue, "pools["+strconv.Itoa(i)+"].name", "cannot restore pool %q twice or without a name", p.Name)
		}
		s := newSeries(cfg.slots(), 3)
		if err := s.restore(p, 3, "pools["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
		h.pools[p.Name] = s
	}
	if !(snap.Integral >= 0) || math.IsInf(snap.Integral, 0) || !(snap.LastError >= 0) || math.IsInf(snap.LastError, 0) {
		return nil, errorf(apierr.CodeInvalidValue, "integral", "cannot restore a fairness error of %v and an integral of %v", snap.LastError, snap.Integral)
	}
	h.integral, h.last, h.lastError, h.hasLast = snap.Integral, snap.Last, snap.LastError, snap.HasLast
	return h, nil
}

func (s *series) restore(ss *SeriesSnapshot, width int, path string) error {
	if len(ss.Values) != width*len(ss.Flags) {
		return errorf(apierr.CodeInvalidValue, path+".values", "cannot restore %d values for %d steps of width %d", len(ss.Values), len(ss.Flags), width)
	}
	if len(ss.Flags) == 0 {
		return nil
	}
	if ss.Head == math.MinInt64 || ss.Head < math.MinInt64/2 || ss.Head > math.MaxInt64/2 {
		return errorf(apierr.CodeInvalidValue, path+".head", "cannot restore a series ending at step %d", ss.Head)
	}
	n := s.slots()
	keep := min(int64(len(ss.Flags)), n)
	off := int64(len(ss.Flags)) - keep
	s.advance(ss.Head)
	for i := range keep {
		step := ss.Head - keep + 1 + i
		j := mod(step, n)
		s.flags[j] = ss.Flags[off+i]
		copy(s.vals[j*int64(width):(j+1)*int64(width)], ss.Values[(off+i)*int64(width):(off+i+1)*int64(width)])
	}
	// The newest step is complete: later samples of it average with it
	// as one sample.
	if f := s.flags[mod(ss.Head, n)]; f&flagPresent != 0 {
		s.n = 1
		for k := range width {
			s.sum[k] = fromHalf(s.vals[mod(ss.Head, n)*int64(width)+int64(k)])
		}
		s.worst = f &^ flagPresent
	}
	return nil
}

// ---- half-precision floats ----

// toHalf converts a non-negative share to an IEEE 754 half-precision
// float, rounding to nearest even; negative values and NaN become 0 and
// values beyond the largest half (65504) become it.
func toHalf(v float64) uint16 {
	if !(v > 0) {
		return 0
	}
	if v >= 65504 {
		return 0x7bff
	}
	b := math.Float64bits(v)
	exp := int((b>>52)&0x7ff) - 1023
	mant := b & (1<<52 - 1)
	if exp < -24 {
		// Below half the smallest subnormal (2^-24) rounds to 0, except
		// above it, which rounds up.
		if exp == -25 && mant != 0 {
			return 1
		}
		return 0
	}
	var h uint64
	var shift uint
	if exp < -14 {
		// Subnormal: the value in units of 2^-24.
		mant |= 1 << 52
		shift = uint(52 - 24 - exp) // 52 - (exp + 24)
		h = mant >> shift
	} else {
		shift = 42
		h = uint64(exp+15)<<10 | mant>>shift
	}
	rem := mant & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || rem == half && h&1 == 1 {
		h++
	}
	if h >= 0x7c00 {
		return 0x7bff
	}
	return uint16(h)
}

// fromHalf converts a half-precision float (finite, non-negative) back.
func fromHalf(h uint16) float64 {
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	if exp == 0 {
		return math.Ldexp(mant, -24)
	}
	return math.Ldexp(1+mant/1024, exp-15)
}
