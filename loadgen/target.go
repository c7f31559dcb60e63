package loadgen

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckTarget parses a target URL and returns the address to dial
// ("127.0.0.1:8080", "[::1]:8080"). It refuses everything that is not
// plainly loopback: the scheme must be http (or https), the host a literal loopback
// IP (127.0.0.0/8 or ::1) or "localhost" (taken as 127.0.0.1 without
// asking a resolver), with no user info, query, fragment or path beyond
// "/". Nothing is ever resolved, so a name cannot lead off the machine.
func CheckTarget(raw string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("loadgen: cannot use target %q: %s; want http://127.0.0.1:PORT, http://localhost:PORT or http://[::1]:PORT", raw, why)
	}
	if raw == "" {
		return bad("it is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("it is not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("the scheme is not http or https")
	case u.Opaque != "" || u.User != nil:
		return bad("it has user info or an opaque part")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return bad("it has a query or a fragment")
	case u.Path != "" && u.Path != "/":
		return bad("it has a path")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return bad("the port is empty")
		}
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return bad("the port is not 1-65535")
	}
	var ip netip.Addr
	if strings.EqualFold(host, "localhost") {
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	} else {
		ip, err = netip.ParseAddr(host)
		if err != nil {
			return bad("the host is not a literal IP address or localhost")
		}
		if ip.Zone() != "" {
			return bad("the address has a zone")
		}
		ip = ip.Unmap()
		if !ip.IsLoopback() {
			return bad("the address is not loopback")
		}
	}
	return net.JoinHostPort(ip.String(), port), nil
}
