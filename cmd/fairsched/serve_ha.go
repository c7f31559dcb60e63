package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/replica"
)

// haOptions are the replica flags of fairsched serve (docs/operations.md,
// "Replicas on etcd").
type haOptions struct {
	etcd, prefix, advertise string
	leaseTTL                time.Duration
}

// checkHA validates the replica flags; it returns the etcd endpoints, or
// a message naming the flag.
func checkHA(f *serveOptions) ([]string, error) {
	h := &f.ha
	if h.etcd == "" {
		for _, o := range []struct{ name, v string }{{"etcd-prefix", h.prefix}, {"advertise-url", h.advertise}} {
			if o.v != "" {
				return nil, fmt.Errorf("cannot use --%s without --etcd: it configures a replica", o.name)
			}
		}
		if h.leaseTTL != defaultLeaseTTL {
			return nil, fmt.Errorf("cannot use --etcd-lease-ttl without --etcd: it configures a replica")
		}
		return nil, nil
	}
	if f.dataDir != "" {
		return nil, fmt.Errorf("cannot use --data-dir with --etcd: a replica keeps its state in etcd")
	}
	var eps []string
	for _, ep := range strings.Split(h.etcd, ",") {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			return nil, fmt.Errorf("cannot use --etcd %q: an endpoint is empty; want host:port[,host:port…]", h.etcd)
		}
		if strings.Contains(ep, "://") {
			u, err := url.Parse(ep)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("cannot use --etcd endpoint %q: want host:port or http(s)://host:port", ep)
			}
		} else if _, _, err := net.SplitHostPort(ep); err != nil {
			return nil, fmt.Errorf("cannot use --etcd endpoint %q: want host:port or http(s)://host:port", ep)
		}
		eps = append(eps, ep)
	}
	switch p := h.prefix; {
	case p == "":
		return nil, fmt.Errorf("cannot use --etcd without --etcd-prefix: want the cluster's key prefix, /fairsched/NAME")
	case !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		return nil, fmt.Errorf("cannot use --etcd-prefix %q: want /name[/name…] without a trailing slash, e.g. /fairsched/prod", p)
	}
	if h.advertise == "" {
		return nil, fmt.Errorf("cannot use --etcd without --advertise-url: want the URL clients reach this replica at, http(s)://host:port")
	}
	u, err := url.Parse(h.advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("cannot use --advertise-url %q: want http(s)://host:port", h.advertise)
	}
	if tlsOn := f.tlsCert != ""; tlsOn != (u.Scheme == "https") {
		return nil, fmt.Errorf("cannot use --advertise-url %q: its scheme must be https exactly when --tls-cert is set", h.advertise)
	}
	if h.leaseTTL < time.Second || h.leaseTTL%time.Second != 0 {
		return nil, fmt.Errorf("cannot use --etcd-lease-ttl %v: want whole seconds, at least 1s (etcd raises it to its minimum, 2s by default)", h.leaseTTL)
	}
	return eps, nil
}

// defaultLeaseTTL is --etcd-lease-ttl's default.
const defaultLeaseTTL = 5 * time.Second

// serveReplica serves as one replica until ctx ends, then hands over.
func serveReplica(ctx context.Context, f *serveOptions, eps []string, opts facade.Options, sec *security,
	log *slog.Logger, source string, stdout, stderr io.Writer, hooks serveHooks) int {
	cfg := clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if strings.HasPrefix(eps[0], "https://") {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: --etcd %s: %v\n", f.ha.etcd, err)
		return 1
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = c.Status(pctx, eps[0])
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: --etcd %s: cannot reach etcd: %v\n", f.ha.etcd, err)
		return 1
	}
	r, err := replica.New(replica.Config{Client: c, Prefix: f.ha.prefix, AdvertiseURL: strings.TrimSuffix(f.ha.advertise, "/"),
		LeaseTTL: f.ha.leaseTTL, Server: opts, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: cannot listen on %s: %v\n", f.listen, err)
		return 1
	}
	addr := ln.Addr().String()
	log.Info("fairsched serve: a replica", "listen", addr, "advertise_url", f.ha.advertise, "etcd", f.ha.etcd,
		"etcd_prefix", f.ha.prefix, "lease_ttl", f.ha.leaseTTL, "config", source, "auth", authMode(sec.tokens), "tls", sec.tls != nil)
	scheme := "http"
	if sec.tls != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "fairsched serve: a replica of %s on etcd %s, listening on %s://%s (advertised as %s); "+
		"the leader serves the API, the others answer 503 not_leader. GET /healthz names the role and the leader.\n",
		f.ha.prefix, f.ha.etcd, scheme, addr, f.ha.advertise)

	errc := make(chan error, 1)
	go func() { errc <- r.Serve(ln) }()
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		r.Run(runCtx)
	}()
	if hooks.ready != nil {
		hooks.ready(addr)
	}
	for done := false; !done; {
		select {
		case err := <-errc:
			stopRun()
			<-ran
			if err != nil {
				fmt.Fprintf(stderr, "fairsched serve: %v\n", err)
				return 1
			}
			return 0
		case <-ctx.Done():
			done = true
		case <-hooks.reload:
			err := reloadReplica(r, f, sec, log)
			if hooks.reloaded != nil {
				hooks.reloaded(err)
			}
		}
	}
	// The hand-over: the leader flushes its writes and resigns (another
	// replica leads within milliseconds) while this one still answers
	// not_leader, then the listener stops.
	log.Info("shutting down: handing over the leadership, if held")
	stopRun()
	<-ran
	return stopServing(r.Shutdown, errc, stderr, log)
}

// reloadReplica is SIGHUP for a replica: the --config file is applied by
// the leader (followers load the state from etcd when they lead), the
// tokens and the certificate by every replica.
func reloadReplica(r *replica.Replica, f *serveOptions, sec *security, log *slog.Logger) error {
	var errs []error
	if srv := r.Leading(); srv != nil {
		if f.configFile != "" || f.authTokens == "" && f.tlsCert == "" {
			errs = append(errs, reloadConfig(srv, f.configFile, log))
		}
	} else if f.configFile != "" {
		log.Info("reload: not leading, so the --config file is not applied here: the leader's SIGHUP applies it to the state in etcd")
	}
	if err := reloadSecurity(r.SetTokens, f, sec, log); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
