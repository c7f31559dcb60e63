package wire

import (
	"strconv"
	"testing"
)

// nodeHeartbeat is a heartbeat as a node of the standard load writes it:
// limits, two tags and 20 running allocations in the compact form.
func nodeHeartbeat(spaced bool) []byte { return nodeHeartbeatOrigins(spaced, false) }

// nodeHeartbeatOrigins is nodeHeartbeat, the allocations with their
// origins (operation_id, task_index, resources) when origins is set, as
// nodes should send them (docs/api.md#node-heartbeats).
func nodeHeartbeatOrigins(spaced, origins bool) []byte {
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
			b = append(b, `", "state": "running"`...)
		} else {
			b = append(b, `","state":"running"`...)
		}
		if origins {
			b = append(b, `,"operation_id":"lg0-`...)
			b = strconv.AppendInt(b, int64(i%7), 10)
			b = append(b, `-3","task_index":0,"resources":{"user_slots":1,"cpu":2,"memory":8589934592}`...)
		}
		b = append(b, '}')
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
		{"origins", nodeHeartbeatOrigins(false, true)},
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

// BenchmarkInterner looks up known names, as the heartbeats of 10,000
// nodes intern their ids: a shuffled order (each lookup misses the caches
// a real server's would), from GOMAXPROCS goroutines.
func BenchmarkInterner(b *testing.B) {
	const n = 10000
	in := NewInterner(1 << 20)
	names := make([][]byte, n)
	for i := range names {
		names[i] = []byte("lg-n" + strconv.Itoa(i))
		in.Intern(names[i])
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i * 7919 % n
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = in.Intern(names[order[i]])
			if i++; i == n {
				i = 0
			}
		}
	})
}
