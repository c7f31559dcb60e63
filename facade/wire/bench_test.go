package wire

import (
	"strconv"
	"testing"
)

// nodeHeartbeat is a heartbeat as a node of the standard load writes it:
// limits, two tags and 20 running allocations in the compact form.
func nodeHeartbeat(spaced bool) []byte {
	b := []byte(`{"resource_limits":{"user_slots":32,"cpu":32,"memory":137438953472},"tags":["ssd","rack-12"],"allocations":[`)
	for i := range 20 {
		if i > 0 {
			b = append(b, ',')
		}
		if spaced {
			b = append(b, `{"id": "`...)
		} else {
			b = append(b, `{"id":"`...)
		}
		b = strconv.AppendUint(b, 17179869184+uint64(1000+i), 10)
		if spaced {
			b = append(b, `", "state": "running"}`...)
		} else {
			b = append(b, `","state":"running"}`...)
		}
	}
	return append(b, "]}"...)
}

func BenchmarkDecodeHeartbeat(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"compact", nodeHeartbeat(false)},
		{"spaced", nodeHeartbeat(true)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := NewInterner(1 << 10)
			var h Heartbeat
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := h.Decode(bc.body, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
