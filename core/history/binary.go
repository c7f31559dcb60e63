package history

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/fairsched/fairsched/core/apierr"
	"github.com/fairsched/fairsched/core/clock"
)

// The byte form of a Snapshot, for checkpoints:
//
//	"FSH1" step span            (uvarint microseconds)
//	integral lastError          (float64 bits, little endian)
//	last                        (varint microseconds) hasLast (byte 0|1)
//	cluster series, pool count (uvarint), pool series…
//
// where a series is name (uvarint length, bytes; empty for the cluster),
// head (varint), step count n (uvarint), width × n values (uint16 little
// endian) and n flag bytes. Pools are in name order.
const magic = "FSH1"

// AppendBinary appends the snapshot's byte form to dst.
func (s *Snapshot) AppendBinary(dst []byte) []byte {
	dst = append(dst, magic...)
	dst = binary.AppendUvarint(dst, uint64(s.Config.Step))
	dst = binary.AppendUvarint(dst, uint64(s.Config.Span))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.Integral))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.LastError))
	dst = binary.AppendVarint(dst, int64(s.Last))
	if s.HasLast {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = appendSeries(dst, &s.Cluster)
	dst = binary.AppendUvarint(dst, uint64(len(s.Pools)))
	for i := range s.Pools {
		dst = appendSeries(dst, &s.Pools[i])
	}
	return dst
}

func appendSeries(dst []byte, ss *SeriesSnapshot) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss.Name)))
	dst = append(dst, ss.Name...)
	dst = binary.AppendVarint(dst, ss.Head)
	dst = binary.AppendUvarint(dst, uint64(len(ss.Flags)))
	for _, v := range ss.Values {
		dst = binary.LittleEndian.AppendUint16(dst, v)
	}
	return append(dst, ss.Flags...)
}

// DecodeSnapshot decodes AppendBinary's byte form. It checks the form, not
// the meaning (Restore does): an error names the byte offset.
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	d := decoder{b: b}
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, d.fail("cannot decode a history snapshot: want it to start with %q", magic)
	}
	d.off = len(magic)
	s := &Snapshot{}
	s.Config.Step = clock.Duration(d.uvarint("step"))
	s.Config.Span = clock.Duration(d.uvarint("span"))
	s.Integral = math.Float64frombits(d.u64("integral"))
	s.LastError = math.Float64frombits(d.u64("last error"))
	s.Last = clock.Time(d.varint("last"))
	switch d.byte("has last") {
	case 0:
	case 1:
		s.HasLast = true
	default:
		d.setErr("cannot decode has last: want 0 or 1")
	}
	d.series(&s.Cluster, 1)
	n := d.uvarint("pool count")
	if d.err == nil && n > uint64(len(b)-d.off)/3 {
		d.setErr("cannot decode %d pools from %d bytes", n, len(b)-d.off)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		s.Pools = append(s.Pools, SeriesSnapshot{})
		d.series(&s.Pools[len(s.Pools)-1], 3)
	}
	if d.err == nil && d.off != len(b) {
		d.setErr("cannot decode %d bytes after the snapshot", len(b)-d.off)
	}
	if d.err != nil {
		return nil, d.err
	}
	return s, nil
}

type decoder struct {
	b   []byte
	off int
	err error
	tmp [binary.MaxVarintLen64]byte
}

func (d *decoder) fail(format string, args ...any) error {
	e := errorf(apierr.CodeInvalidValue, "", format, args...)
	e.Message += " (at byte " + strconv.Itoa(d.off) + ")"
	return e
}

func (d *decoder) setErr(format string, args ...any) {
	if d.err == nil {
		d.err = d.fail(format, args...)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 || n != len(binary.AppendUvarint(d.tmp[:0], v)) {
		d.setErr("cannot decode %s: want a uvarint of the shortest form", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 || n != len(binary.AppendVarint(d.tmp[:0], v)) {
		d.setErr("cannot decode %s: want a varint of the shortest form", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) u64(what string) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.setErr("cannot decode %s: want 8 bytes", what)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.setErr("cannot decode %s: want a byte", what)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) series(ss *SeriesSnapshot, width int) {
	l := d.uvarint("name length")
	if d.err == nil && l > uint64(len(d.b)-d.off) {
		d.setErr("cannot decode a name of %d bytes from %d", l, len(d.b)-d.off)
	}
	if d.err != nil {
		return
	}
	ss.Name = string(d.b[d.off : d.off+int(l)])
	d.off += int(l)
	ss.Head = d.varint("head")
	n := d.uvarint("step count")
	if d.err == nil && (n > MaxSlots || n*uint64(2*width+1) > uint64(len(d.b)-d.off)) {
		d.setErr("cannot decode %d steps from %d bytes", n, len(d.b)-d.off)
	}
	if d.err != nil {
		return
	}
	if n == 0 {
		return
	}
	ss.Values = make([]uint16, int(n)*width)
	for i := range ss.Values {
		ss.Values[i] = binary.LittleEndian.Uint16(d.b[d.off:])
		d.off += 2
	}
	ss.Flags = append([]uint8(nil), d.b[d.off:d.off+int(n)]...)
	d.off += int(n)
}
