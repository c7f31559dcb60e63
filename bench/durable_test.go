package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/store"
	"github.com/fairsched/fairsched/wire"
)

// BenchmarkOperationStartDurable is POST /api/v1/operations through a
// durable server (fairsched serve --data-dir: a bbolt file in a temporary
// directory, each start synced before its 201) from 1, 16 and 64
// concurrent clients over loopback HTTP (bench/README.md). It reports
// starts/s and the p50/p99 of a start's round trip; the group committer lets
// concurrent starts share a sync.
func BenchmarkOperationStartDurable(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			st, err := store.OpenBolt(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			sc, err := wire.DecodeServeConfig([]byte(`{"config": {"max_operation_count": 1000000,
				"max_running_operation_count": 1000000, "max_operation_count_per_pool": 1000000,
				"max_running_operation_count_per_pool": 1000000}}`))
			if err != nil {
				b.Fatal(err)
			}
			srv, err := facade.New(facade.Options{Config: sc, Store: st, ManualUpdates: true,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(ln)
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(ctx)
			}()
			url := "http://" + ln.Addr().String() + "/api/v1/operations"
			tr := &http.Transport{MaxIdleConnsPerHost: clients}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			var next atomic.Int64
			lat := make([][]time.Duration, clients)
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						body := `{"id": "bench-` + fmt.Sprint(i) + `", "tasks": [{"job_count": 1, "resources": {"cpu": 1}}]}`
						t0 := time.Now()
						resp, err := hc.Post(url, "application/json", strings.NewReader(body))
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 201 {
							b.Errorf("start: %d", resp.StatusCode)
							return
						}
						lat[c] = append(lat[c], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
		})
	}
}
