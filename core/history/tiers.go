package history

import (
	"math"
	"strconv"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
)

// MaxTiers bounds the number of tiers of a Tiers.
const MaxTiers = 4

// DefaultTiers are the server's default resolutions: 10 s for the last
// hour and 5 minutes for the last 24 hours, 648 steps of 7 bytes a pool
// (TestTiersMemory measures 5,024 bytes a pool, 48 MiB at 10,000 pools).
func DefaultTiers() []Config {
	return []Config{{Step: 10 * clock.Second, Span: clock.Hour}, {Step: 5 * clock.Minute, Span: 24 * clock.Hour}}
}

// ValidateTiers checks tiers: 1 to MaxTiers valid configs, each with a
// longer step and a longer span than the one before.
func ValidateTiers(tiers []Config) error {
	if len(tiers) == 0 || len(tiers) > MaxTiers {
		return errorf(apierr.CodeInvalidValue, "tiers", "cannot keep %d history tiers: want 1 to %d", len(tiers), MaxTiers)
	}
	for i, c := range tiers {
		if err := c.Validate(); err != nil {
			e := err.(*apierr.Error) // Validate's errors are
			return errorf(e.Code, "tiers["+strconv.Itoa(i)+"]."+e.Path, "%s", e.Message)
		}
		if i > 0 && (c.Step <= tiers[i-1].Step || c.Span <= tiers[i-1].Span) {
			return errorf(apierr.CodeInvalidValue, "tiers["+strconv.Itoa(i)+"]",
				"cannot use history tier %v/%v after %v/%v: want a longer step and a longer span than the tier before",
				c.Step, c.Span, tiers[i-1].Step, tiers[i-1].Span)
		}
	}
	return nil
}

// Tiers is a history kept at several resolutions at once (a fine one for
// the recent past, coarser ones further back): every Record goes to each
// tier, and a Query answers from the finest tier that reaches back to its
// since. Like a History, it is not safe for concurrent use.
type Tiers struct {
	tiers []*History
}

// NewTiers returns empty tiers (ValidateTiers).
func NewTiers(cfgs []Config) (*Tiers, error) {
	if err := ValidateTiers(cfgs); err != nil {
		return nil, err
	}
	t := &Tiers{}
	for _, c := range cfgs {
		h, _ := New(c)
		t.tiers = append(t.tiers, h)
	}
	return t, nil
}

// Configs returns the tiers' configs, finest first.
func (t *Tiers) Configs() []Config {
	cs := make([]Config, len(t.tiers))
	for i, h := range t.tiers {
		cs[i] = h.cfg
	}
	return cs
}

// Tier returns tier i's History (0 is the finest).
func (t *Tiers) Tier(i int) *History { return t.tiers[i] }

// Len returns the number of tiers.
func (t *Tiers) Len() int { return len(t.tiers) }

// Record records the samples in every tier (History.Record).
func (t *Tiers) Record(now clock.Time, samples []PoolSample) {
	for _, h := range t.tiers {
		h.Record(now, samples)
	}
}

// FairnessError returns the fairness error of the last Record and its
// integral (History.FairnessError; every tier has the same).
func (t *Tiers) FairnessError() (current, integral float64) { return t.tiers[0].FairnessError() }

// MemoryBytes is the tiers' History.MemoryBytes.
func (t *Tiers) MemoryBytes() int64 {
	var b int64
	for _, h := range t.tiers {
		b += h.MemoryBytes()
	}
	return b
}

// Choose returns the tier a query from since answers from: the finest one
// with a step recorded whose span, back from its newest step, reaches since
// or the step before its oldest (the coarsest when none does).
func (t *Tiers) Choose(since clock.Time) int {
	for i, h := range t.tiers {
		head := h.cluster.head
		if head == math.MinInt64 {
			continue // nothing recorded (or restored)
		}
		// A since within the step before the oldest kept counts: "the
		// last hour" from the middle of a step reaches back one step
		// further than an hour of whole steps.
		if floorDiv(since, h.cfg.Step) >= head-h.cfg.slots() {
			return i
		}
	}
	return len(t.tiers) - 1
}

// Query appends pool name's points from since (History.Query) from the
// tier Choose picks, and returns that tier's step, the resolution the
// query's step was rounded up to a multiple of.
func (t *Tiers) Query(name string, since clock.Time, step clock.Duration, dst []Point) ([]Point, clock.Duration, error) {
	h := t.tiers[t.Choose(since)]
	if h.pools[name] == nil && t.Has(name) {
		return dst, h.cfg.Step, nil // another tier has it: none for this tier's steps
	}
	pts, err := h.Query(name, since, step, dst)
	return pts, h.cfg.Step, err
}

// Has reports whether pool name has a series in a tier.
func (t *Tiers) Has(name string) bool {
	for _, h := range t.tiers {
		if h.pools[name] != nil {
			return true
		}
	}
	return false
}

// QueryFairness is Query for the cluster's fairness error
// (History.QueryFairness).
func (t *Tiers) QueryFairness(since clock.Time, step clock.Duration, dst []Point) ([]Point, clock.Duration, error) {
	h := t.tiers[t.Choose(since)]
	pts, err := h.QueryFairness(since, step, dst)
	return pts, h.cfg.Step, err
}

// ---- segments: the history as checkpoints write it ----

// Head returns the newest step index recorded (math.MinInt64 when none).
func (h *History) Head() int64 { return h.cluster.head }

// Segment returns the steps from through to (step indices, inclusive) of
// every series that has a sample among them, as a Snapshot whose series
// end at to (or earlier, at their last step with a sample) and start at
// their first step with a sample; the fairness error's integral is the
// history's now. Apply puts a segment back.
func (h *History) Segment(from, to int64) Snapshot {
	snap := Snapshot{Config: h.cfg, Integral: h.integral, Last: h.last, LastError: h.lastError, HasLast: h.hasLast}
	snap.Cluster = h.cluster.segment("", from, to)
	for name, s := range h.pools {
		if ss := s.segment(name, from, to); len(ss.Flags) > 0 {
			snap.Pools = append(snap.Pools, ss)
		}
	}
	sortSeries(snap.Pools)
	return snap
}

func (s *series) segment(name string, from, to int64) SeriesSnapshot {
	ss := SeriesSnapshot{Name: name, Head: math.MinInt64}
	if s.head == math.MinInt64 {
		return ss
	}
	n := s.slots()
	from, to = max(from, s.head-n+1), min(to, s.head)
	for from <= to && s.flags[mod(from, n)]&flagPresent == 0 {
		from++
	}
	for to >= from && s.flags[mod(to, n)]&flagPresent == 0 {
		to--
	}
	if from > to {
		return ss
	}
	ss.Head = to
	for i := from; i <= to; i++ {
		j := mod(i, n)
		ss.Values = append(ss.Values, s.vals[j*int64(s.width):(j+1)*int64(s.width)]...)
		ss.Flags = append(ss.Flags, s.flags[j])
	}
	return ss
}

// Apply writes the steps a Segment (or a Snapshot) holds into the history,
// beside those it has: a series whose steps are newer than its newest
// moves forward (History.Record's rule), steps older than the span are
// left out, and the fairness error and its integral are the segment's when
// it is newer. A segment of another step, or an inconsistent one, is an
// error and changes nothing.
func (h *History) Apply(snap *Snapshot) error {
	if snap.Config.Step != h.cfg.Step {
		return errorf(apierr.CodeInvalidValue, "step", "cannot apply a history of step %v to one of step %v", snap.Config.Step, h.cfg.Step)
	}
	if err := checkSeries(&snap.Cluster, 1, "cluster"); err != nil {
		return err
	}
	for i := range snap.Pools {
		p := &snap.Pools[i]
		path := "pools[" + strconv.Itoa(i) + "]"
		if p.Name == "" || i > 0 && snap.Pools[i-1].Name >= p.Name {
			return errorf(apierr.CodeInvalidValue, path+".name", "cannot apply pool %q: want names, in order, each once", p.Name)
		}
		if err := checkSeries(p, 3, path); err != nil {
			return err
		}
	}
	if !(snap.Integral >= 0) || math.IsInf(snap.Integral, 0) || !(snap.LastError >= 0) || math.IsInf(snap.LastError, 0) {
		return errorf(apierr.CodeInvalidValue, "integral", "cannot apply a fairness error of %v and an integral of %v", snap.LastError, snap.Integral)
	}
	h.cluster.apply(&snap.Cluster)
	for i := range snap.Pools {
		p := &snap.Pools[i]
		s := h.pools[p.Name]
		if s == nil {
			s = newSeries(h.cfg.slots(), 3)
			s.gen = h.gen
			h.pools[p.Name] = s
		}
		s.apply(p)
	}
	if snap.HasLast && (!h.hasLast || snap.Last > h.last) {
		h.integral, h.last, h.lastError, h.hasLast = snap.Integral, snap.Last, snap.LastError, true
	}
	return nil
}

func checkSeries(ss *SeriesSnapshot, width int, path string) error {
	if len(ss.Values) != width*len(ss.Flags) {
		return errorf(apierr.CodeInvalidValue, path+".values", "cannot apply %d values for %d steps of width %d", len(ss.Values), len(ss.Flags), width)
	}
	if len(ss.Flags) > 0 && (ss.Head < math.MinInt64/2 || ss.Head > math.MaxInt64/2) {
		return errorf(apierr.CodeInvalidValue, path+".head", "cannot apply a series ending at step %d", ss.Head)
	}
	for i, v := range ss.Values {
		if v >= 0x7c00 {
			return errorf(apierr.CodeInvalidValue, path+".values["+strconv.Itoa(i)+"]", "cannot apply the half float %#04x: want a finite non-negative share", v)
		}
	}
	return nil
}

// apply writes ss's steps (checked by checkSeries).
func (s *series) apply(ss *SeriesSnapshot) {
	if len(ss.Flags) == 0 {
		return
	}
	if s.head == math.MinInt64 || ss.Head > s.head {
		s.advance(ss.Head)
	}
	n, w := s.slots(), int64(s.width)
	first := ss.Head - int64(len(ss.Flags)) + 1
	for i := max(first, s.head-n+1); i <= ss.Head; i++ {
		k, j := i-first, mod(i, n)
		s.flags[j] = ss.Flags[k]
		copy(s.vals[j*w:(j+1)*w], ss.Values[k*w:(k+1)*w])
		if i == s.head {
			// The newest step is complete: later samples of it average
			// with it as one sample.
			s.n, s.worst = 0, 0
			if f := ss.Flags[k]; f&flagPresent != 0 {
				s.n, s.worst = 1, f&^flagPresent
				for c := range s.width {
					s.sum[c] = fromHalf(ss.Values[k*w+int64(c)])
				}
			}
		}
	}
}
