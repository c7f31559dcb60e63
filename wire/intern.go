package wire

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// Interner returns one string per distinct byte sequence, so that decoding
// strings that repeat from request to request (node names, tags) allocates
// only the first time. It holds at most its limit of strings; past that it
// returns new strings. Safe for concurrent use; the zero value is not
// usable, use NewInterner. A nil *Interner allocates every string.
//
// NB: a lookup takes no lock: every heartbeat looks up its node's name and
// tags, and a map behind a sync.RWMutex cost ≈ 110 ns a lookup under the
// batched load (the lock's shared counter and the map's three cache lines),
// 10% of the server's CPU (profiles/load-batched-cpu.pprof). The table here
// is open-addressed, grows and is never otherwise changed, so a reader needs
// one atomic load per probe (see internSlot) and usually touches two cache
// lines: its slot and the string's bytes.
type Interner struct {
	tab   atomic.Pointer[internTable]
	seed  maphash.Seed
	limit int

	mu sync.Mutex // serialises insertions and growth
	n  int        // strings held; under mu
}

// internTable is the table of an Interner: a power-of-two number of slots,
// at most half full, with linear probing. Slots are written once, under
// Interner.mu; a grown table replaces the old one whole.
type internTable struct {
	slots []internSlot
	mask  uint64
}

// internSlot holds one string and its hash. The writer stores s, then the
// hash with an atomic store; a reader that loads the hash (atomically) and
// finds it set reads s after it, so it sees the s written before (the Go
// memory model's synchronisation of atomics). hash is never 0 in a used
// slot (see hashOf).
type internSlot struct {
	hash atomic.Uint64
	s    string
}

// NewInterner returns an Interner that keeps at most limit strings.
func NewInterner(limit int) *Interner {
	in := &Interner{seed: maphash.MakeSeed(), limit: limit}
	in.tab.Store(newInternTable(64))
	return in
}

func newInternTable(slots int) *internTable {
	return &internTable{slots: make([]internSlot, slots), mask: uint64(slots - 1)}
}

// hashOf is b's hash with the low bit set: 0 marks an empty slot.
func (in *Interner) hashOf(b []byte) uint64 { return maphash.Bytes(in.seed, b) | 1 }

// Intern returns a string equal to b; it allocates nothing when the string
// is known.
func (in *Interner) Intern(b []byte) string {
	if in == nil {
		return string(b)
	}
	h := in.hashOf(b)
	t := in.tab.Load()
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		switch sh := sl.hash.Load(); {
		case sh == 0:
			return in.insert(b, h)
		case sh == h && sl.s == string(b):
			return sl.s
		}
	}
}

// insert adds b, which a reader did not find, unless a concurrent insert
// added it first or the Interner is full.
func (in *Interner) insert(b []byte, h uint64) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	t := in.tab.Load()
	i, ok := t.find(b, h)
	if ok {
		return t.slots[i].s
	}
	s := string(b)
	if in.n >= in.limit {
		return s
	}
	if 2*(in.n+1) > len(t.slots) {
		t = in.grow(t)
		i, _ = t.find(b, h)
	}
	t.slots[i].s = s
	t.slots[i].hash.Store(h)
	in.n++
	return s
}

// find returns the slot of b, or the empty slot where it goes, and whether
// b is there.
func (t *internTable) find(b []byte, h uint64) (uint64, bool) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		switch sh := sl.hash.Load(); {
		case sh == 0:
			return i, false
		case sh == h && sl.s == string(b):
			return i, true
		}
	}
}

// grow replaces t by a table twice as large with the same strings, and
// returns it; in.mu is held.
func (in *Interner) grow(t *internTable) *internTable {
	nt := newInternTable(2 * len(t.slots))
	for i := range t.slots {
		sl := &t.slots[i]
		h := sl.hash.Load()
		if h == 0 {
			continue
		}
		j := h & nt.mask
		for nt.slots[j].hash.Load() != 0 {
			j = (j + 1) & nt.mask
		}
		nt.slots[j].s = sl.s
		nt.slots[j].hash.Store(h)
	}
	in.tab.Store(nt)
	return nt
}

// Len returns the number of strings held.
func (in *Interner) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.n
}
