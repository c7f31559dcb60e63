// Package facadetest starts a fairsched server for tests of the packages
// that talk to one over HTTP (the client, the command line): a facade.Server
// on a free 127.0.0.1 port, with a manual clock and manual fair-share
// updates, stopped when the test ends.
package facadetest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsched/fairsched/core/clock"
	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/wire"
)

// Server is a running test server.
type Server struct {
	*facade.Server
	// URL is the server's base URL, "http://127.0.0.1:<port>" ("https://"
	// with Options.TLS).
	URL string
	us  atomic.Int64
}

// Now is the server's clock.
func (s *Server) Now() clock.Time { return clock.Time(s.us.Load()) }

// Advance moves the server's clock on by d.
func (s *Server) Advance(d clock.Duration) { s.us.Add(int64(d)) }

// Update moves the clock on by 0.2 s and runs a fair-share update.
func (s *Server) Update() {
	s.Advance(200 * clock.Millisecond)
	s.UpdateFairShare()
}

// WallClock is an option of Start: the server runs on the wall clock with
// its own fair-share updater, as fairsched serve does (for a load).
func WallClock(o *facade.Options) { o.Clock, o.ManualUpdates = nil, false }

// Start starts a server with the serve config (the JSON of
// `fairsched serve --config`; empty: no pools) and opts applied to its
// options; its clock starts at 1 s.
func Start(t testing.TB, config string, opts ...func(*facade.Options)) *Server {
	t.Helper()
	var sc *wire.ServeConfig
	if config != "" {
		var err error
		if sc, err = wire.DecodeServeConfig([]byte(config)); err != nil {
			t.Fatalf("facadetest: config: %v", err)
		}
	}
	s := &Server{}
	s.us.Store(int64(clock.Second))
	o := facade.Options{Config: sc, Clock: s, ManualUpdates: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	srv, err := facade.New(o)
	if err != nil {
		t.Fatalf("facadetest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http://"
	if o.TLS != nil {
		scheme = "https://"
	}
	s.Server, s.URL = srv, scheme+ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("facadetest: shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("facadetest: Serve returned %v after Shutdown", err)
		}
	})
	return s
}
