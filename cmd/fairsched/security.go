package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"

	"github.com/fairsched/fairsched/facade"
)

// security is what serve's security flags make of the server: the token
// file, TLS, the origins and hosts it takes, and whether it listens on
// loopback only.
type security struct {
	tokens     *facade.Tokens
	tls        *tls.Config
	cert       *atomic.Pointer[tls.Certificate] // reloaded on SIGHUP
	origins    []string
	hosts      []string
	listenHost string
	loopback   bool
}

// securityOptions checks the security flags and reads their files: a
// listen address that is not loopback needs --auth-tokens or --insecure;
// --tls-cert and --tls-key go together. It returns an exit status (2: bad
// usage, 1: a file cannot be read) when they cannot be used.
func securityOptions(f *serveOptions, stderr io.Writer) (*security, int) {
	sec := &security{}
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		fmt.Fprintf(stderr, "fairsched serve: cannot use --listen %q: %v\n", f.listen, err)
		return nil, 2
	}
	sec.listenHost, sec.loopback = host, loopbackHost(host)
	if f.authTokens != "" {
		if sec.tokens, err = readTokens(f.authTokens); err != nil {
			fmt.Fprintf(stderr, "fairsched serve: --auth-tokens %s: %v\n", f.authTokens, err)
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
				return nil, 1
			}
			return nil, 2
		}
	} else if !sec.loopback && !f.insecure {
		fmt.Fprintf(stderr, "fairsched serve: cannot serve %s without --auth-tokens: anyone who reaches it could do everything; "+
			"give a token file (docs/operations.md, \"Access control\"), listen on 127.0.0.1, or pass --insecure\n", f.listen)
		return nil, 2
	}
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		fmt.Fprintf(stderr, "fairsched serve: cannot serve TLS with only one of --tls-cert and --tls-key: want both\n")
		return nil, 2
	case f.tlsCert != "":
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "fairsched serve: cannot load --tls-cert %s and --tls-key %s: %v\n", f.tlsCert, f.tlsKey, err)
			return nil, 1
		}
		sec.cert = &atomic.Pointer[tls.Certificate]{}
		sec.cert.Store(&cert)
		sec.tls = &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				return sec.cert.Load(), nil
			},
		}
	}
	for _, l := range []struct {
		flag, v string
		dst     *[]string
		valid   func(string) bool
		want    string
	}{
		{"allowed-origins", f.allowedOrigins, &sec.origins, validOrigin, "scheme://host[:port], as a browser's Origin header writes it"},
		{"allowed-hosts", f.allowedHosts, &sec.hosts, validHostName, `a host name, or "*.domain"`},
	} {
		for _, x := range strings.Split(l.v, ",") {
			if x = strings.TrimSpace(x); x == "" {
				continue
			}
			if !l.valid(x) {
				fmt.Fprintf(stderr, "fairsched serve: cannot use %q in --%s: want %s\n", x, l.flag, l.want)
				return nil, 2
			}
			*l.dst = append(*l.dst, x)
		}
	}
	return sec, 0
}

// readTokens reads and parses a token file. Its errors name the file's
// JSON path, never a token.
func readTokens(file string) (*facade.Tokens, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return facade.ParseTokens(data)
}

// reloadSecurity rereads the token file (handed to setTokens) and the TLS
// certificate (SIGHUP).
// A file that cannot be read or is not valid keeps the running one; the
// log says why (never with a token).
func reloadSecurity(setTokens func(*facade.Tokens), f *serveOptions, sec *security, log *slog.Logger) error {
	var errs []error
	if f.authTokens != "" {
		t, err := readTokens(f.authTokens)
		if err != nil {
			log.Error("token reload refused: the running tokens are kept", "file", f.authTokens, "error", err)
			errs = append(errs, err)
		} else {
			setTokens(t)
			log.Info("tokens reloaded", "file", f.authTokens, "users", t.Users(), "caller", "SIGHUP", "result", "ok")
		}
	}
	if sec.cert != nil {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			log.Error("certificate reload refused: the running one is kept", "cert", f.tlsCert, "key", f.tlsKey, "error", err)
			errs = append(errs, err)
		} else {
			sec.cert.Store(&cert)
			log.Info("certificate reloaded", "cert", f.tlsCert)
		}
	}
	return errors.Join(errs...)
}

// loopbackHost reports whether a --listen host is loopback: localhost or a
// loopback IP address. Other names are not resolved: they count as
// public.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func authMode(t *facade.Tokens) string {
	if t == nil {
		return "off"
	}
	return "tokens"
}

// validOrigin reports whether o is an origin: http or https, a host, an
// optional port, nothing else.
func validOrigin(o string) bool {
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || scheme != "http" && scheme != "https" || rest == "" || strings.ContainsAny(rest, "/?#@ ") {
		return false
	}
	return true
}

// validHostName reports whether h is a host name (or "*." and one).
func validHostName(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}
