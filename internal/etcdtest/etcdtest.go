// Package etcdtest runs an etcd for tests and demos: the embedded server
// (go.etcd.io/etcd/server/v3/embed) on a loopback port, or, when
// FAIRSCHED_ETCD=host:port is set, an external one. Only _test.go files and
// the ha-demo helper (etcddev) import it, so the fairsched binary carries no
// etcd server (the imports test checks it).
package etcdtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EnvEndpoint names the variable with an external etcd's host:port.
const EnvEndpoint = "FAIRSCHED_ETCD"

// Server is a running embedded etcd.
type Server struct {
	e *embed.Etcd
	// Endpoint is its client URL (http://127.0.0.1:PORT).
	Endpoint string
}

// Options tune an embedded etcd.
type Options struct {
	// Fast makes its raft tick every 10 ms (election after 100 ms), so that
	// etcd takes lease TTLs down to 1 s as they are; the default (100 ms,
	// 1 s) raises any TTL below 2 s to 2 s, like a production etcd.
	Fast bool
	// NoFsync skips fsync (faster tests; never for measurements).
	NoFsync bool
	// ClientAddr is the client listener's host:port (default
	// 127.0.0.1:0, a free port).
	ClientAddr string
	// Logger receives etcd's logs (nil: none). Without one a fatal error
	// ends the process with status 1 and no word of why.
	Logger *zap.Logger
}

// Start runs an embedded etcd with its data in dir until Close.
func Start(dir string, o Options) (*Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "fairsched-test"
	if o.ClientAddr == "" {
		o.ClientAddr = "127.0.0.1:0"
	}
	cu, err := url.Parse("http://" + o.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: cannot use the client address %q: %w", o.ClientAddr, err)
	}
	// The peer listener serves no peer (one member), but embed wants one;
	// a unix socket in dir needs no port.
	sock := dir + "/peer.sock"
	if len(sock) > 100 { // a unix socket's path is limited (108 bytes on Linux)
		d, err := os.MkdirTemp("", "etcd")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		sock = d + "/peer.sock"
	}
	pu, _ := url.Parse("unix://" + sock)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	logger := o.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	cfg.UnsafeNoFsync = o.NoFsync
	if o.Fast {
		cfg.TickMs, cfg.ElectionMs = 10, 100
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: cannot start the embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcdtest: the embedded etcd was not ready within 30 s")
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdtest: the embedded etcd failed: %w", err)
	}
	return &Server{e: e, Endpoint: "http://" + e.Clients[0].Addr().String()}, nil
}

// Close stops the server.
func (s *Server) Close() { s.e.Close() }

// Endpoint returns an etcd for t: FAIRSCHED_ETCD's when set, else an
// embedded one (fast ticks, no fsync) stopped when t ends.
func Endpoint(t testing.TB) string {
	t.Helper()
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		if !strings.Contains(ep, "://") {
			ep = "http://" + ep
		}
		return ep
	}
	s, err := Start(t.TempDir(), Options{Fast: true, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Endpoint
}

// Prefix returns a key prefix no other test uses, so that tests can share
// an external etcd: /fairsched-test/NAME-RANDOM.
func Prefix(t testing.TB) string {
	var b [6]byte
	rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return "/fairsched-test/" + name + "-" + hex.EncodeToString(b[:])
}
