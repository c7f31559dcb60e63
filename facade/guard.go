package facade

import (
	"bytes"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/wire"
)

// The checks every request passes before it is routed (docs/operations.md,
// "Access control" and "Requests from browsers"), in this order:
//
//  1. /healthz and /readyz are answered at once: they change nothing and
//     say nothing a probe should not know.
//  2. With tokens on, the request must carry a known bearer token, else
//     401 unauthenticated (and nothing else: an unknown path or method is
//     401 too). The dashboard's static files (/ui/) need none: they hold
//     no data, and the page asks for a token when the API answers 401.
//  3. The Host header must name the server (421 misdirected_request), so
//     that a DNS-rebinding page reaches nothing.
//  4. A request a browser marks cross-site or same-site (Sec-Fetch-Site),
//     or whose Origin is neither the server's own nor an allowed one, is
//     403 cross_origin.
//  5. A body must be declared application/json (415): the form and text
//     types are what a page can send without a preflight.
//  6. The caller's roles must allow the kind of request (403 forbidden);
//     pool ACLs are checked by the handlers, which know the pool.

// Error codes of the checks.
const (
	CodeUnauthenticated      = "unauthenticated"
	CodeCrossOrigin          = "cross_origin"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeMisdirected          = "misdirected_request"
)

// identityKey is the request's user value that holds its *Identity.
type identityKey struct{}

// who returns the identity of the request: nil when the server runs
// without tokens (the caller may do everything).
func who(ctx *fasthttp.RequestCtx) *Identity {
	id, _ := ctx.UserValue(identityKey{}).(*Identity)
	return id
}

// callerName names the caller in the audit log and in messages.
func callerName(ctx *fasthttp.RequestCtx) string {
	if id := who(ctx); id != nil {
		return id.Name
	}
	return "anonymous"
}

// SetTokens replaces the token file the server checks requests against
// (fairsched serve's SIGHUP); nil turns tokens off, which only a server
// that started without them may do.
func (s *Server) SetTokens(t *Tokens) {
	s.tokens.Store(t)
}

// guard runs checks 1-6 and reports whether the request goes on to the
// router; when not, the answer is written.
func (s *Server) guard(ctx *fasthttp.RequestCtx) bool {
	path := ctx.Path()
	if string(path) == "/healthz" || string(path) == "/readyz" {
		return true
	}
	if s.allowedOrigin(ctx) && s.cors(ctx) {
		return false // a preflight, answered
	}
	dashboard := string(path) == "/ui" || bytes.HasPrefix(path, []byte("/ui/"))
	var id *Identity
	if t := s.tokens.Load(); t != nil && !dashboard {
		if id = t.Lookup(bearer(ctx)); id == nil {
			s.unauthenticated(ctx)
			return false
		}
		ctx.SetUserValue(identityKey{}, id)
	}
	if !s.hostAllowed(ctx) {
		s.writeError(ctx, fasthttp.StatusMisdirectedRequest, &wire.Error{Code: CodeMisdirected, Path: "$",
			Message: "cannot serve host " + strconv.Quote(truncate(string(ctx.Host()), 64)) +
				": want the server's address, localhost or one of --allowed-hosts"})
		return false
	}
	if why := s.crossOrigin(ctx); why != "" && !(dashboard && navigation(ctx)) {
		s.writeError(ctx, fasthttp.StatusForbidden, &wire.Error{Code: CodeCrossOrigin, Path: "$",
			Message: "cannot take a request from " + why + ": a web page may not drive the scheduler (--allowed-origins lists the pages that may)"})
		return false
	}
	if !jsonBody(ctx) {
		ct := ctx.Request.Header.ContentType()
		s.writeError(ctx, fasthttp.StatusUnsupportedMediaType, &wire.Error{Code: CodeUnsupportedMediaType, Path: "$",
			Message: "cannot read a body of Content-Type " + strconv.Quote(truncate(string(ct), 64)) +
				": want application/json (curl --json, or -H 'Content-Type: application/json')"})
		return false
	}
	if id != nil {
		if why := roleRefusal(ctx, id); why != "" {
			s.forbidden(ctx, "$", why)
			return false
		}
	}
	return true
}

// allowedOrigin reports whether the request's Origin is one of
// --allowed-origins.
func (s *Server) allowedOrigin(ctx *fasthttp.RequestCtx) bool {
	origin := ctx.Request.Header.Peek("Origin")
	if len(origin) == 0 {
		return false
	}
	for _, o := range s.opts.AllowedOrigins {
		if strings.EqualFold(string(origin), o) {
			return true
		}
	}
	return false
}

// cors lets a page of an allowed origin call the API from a browser: the
// answer names the origin (Access-Control-Allow-Origin), and a preflight
// (OPTIONS with Access-Control-Request-Method) is answered 204 with the
// methods and headers the API takes, before any other check: it carries no
// credentials and reaches no handler. It reports whether it answered.
func (s *Server) cors(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Response.Header
	h.Set("Access-Control-Allow-Origin", string(ctx.Request.Header.Peek("Origin")))
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Retry-After")
	if !ctx.IsOptions() || len(ctx.Request.Header.Peek("Access-Control-Request-Method")) == 0 {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return true
}

// navigation reports whether the request is a browser's GET of a page
// (a link followed, an address typed): the dashboard's files may be
// reached so from anywhere, as they hold no data and its scripts then
// call the API from the server's own origin.
func navigation(ctx *fasthttp.RequestCtx) bool {
	return (ctx.IsGet() || ctx.IsHead()) && string(ctx.Request.Header.Peek("Sec-Fetch-Mode")) == "navigate"
}

// bearer returns the token of the Authorization header ("Bearer <token>",
// the scheme in any case), or nil.
// Bearer returns the token of a request's "Authorization: Bearer" header
// (nil without one), for a front that checks tokens itself (a replica's).
func Bearer(ctx *fasthttp.RequestCtx) []byte { return bearer(ctx) }

func bearer(ctx *fasthttp.RequestCtx) []byte {
	h := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)
	if len(h) <= len(bearerScheme) || !bytes.EqualFold(h[:len(bearerScheme)], bearerScheme) {
		return nil
	}
	return bytes.TrimSpace(h[len(bearerScheme):])
}

var bearerScheme = []byte("bearer ")

func (s *Server) unauthenticated(ctx *fasthttp.RequestCtx) {
	msg := "cannot serve a request without a bearer token: send Authorization: Bearer <token> (fairsched --token, $FAIRSCHED_TOKEN)"
	challenge := `Bearer realm="fairsched"`
	if len(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)) > 0 {
		msg = "cannot serve a request with this Authorization header: the token is unknown, or it is not \"Bearer <token>\""
		challenge = `Bearer realm="fairsched", error="invalid_token"`
	}
	ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, challenge)
	s.writeError(ctx, fasthttp.StatusUnauthorized, &wire.Error{Code: CodeUnauthenticated, Path: "$", Message: msg})
}

// forbidden answers 403 forbidden: msg names the permission and the pool.
func (s *Server) forbidden(ctx *fasthttp.RequestCtx, path, msg string) {
	s.writeError(ctx, fasthttp.StatusForbidden, &wire.Error{Code: CodeForbidden, Path: path, Message: msg})
}

// hostAllowed reports whether the Host header names this server: an IP
// address the connection was made to (or a loopback one on a loopback
// connection), localhost, the --listen host, or one of --allowed-hosts
// ("name", or "*.domain" for its subdomains). A connection that does not
// come over TCP (an in-memory pipe, a unix socket) is not a browser's and
// is not checked.
//
// NB: an IP literal cannot be rebound: the address the client connected
// to passes, and on a server that listens on every interface (behind NAT,
// a load balancer, a container's port mapping) any address does. A name
// must be localhost, the --listen host or one the operator listed. It
// allocates nothing for names and IPv4 addresses (every request passes
// here).
func (s *Server) hostAllowed(ctx *fasthttp.RequestCtx) bool {
	local, ok := ctx.LocalAddr().(*net.TCPAddr)
	if !ok || local.IP.IsUnspecified() {
		return true // not a TCP connection (or none: a request handled in process)
	}
	host := hostOnly(ctx.Host())
	if len(host) == 0 {
		return false
	}
	if bytes.EqualFold(host, localhostName) {
		return true
	}
	if ip, ok := parseIP(host); ok {
		l := local.AddrPort().Addr().Unmap()
		return ip == l || ip.IsLoopback() && l.IsLoopback() || s.wildcardListen()
	}
	for _, h := range s.hosts {
		if suffix, ok := bytes.CutPrefix(h, []byte("*")); ok {
			if len(host) > len(suffix) && bytes.EqualFold(host[len(host)-len(suffix):], suffix) {
				return true
			}
		} else if bytes.EqualFold(host, h) {
			return true
		}
	}
	return false
}

var localhostName = []byte("localhost")

// parseIP reads an IP address: IPv4 without allocating, IPv6 with
// netip.ParseAddr.
func parseIP(b []byte) (netip.Addr, bool) {
	var v4 [4]byte
	part, n, digits := 0, 0, 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9' && digits < 3:
			n, digits = n*10+int(c-'0'), digits+1
		case c == '.' && digits > 0 && part < 3 && n <= 255:
			v4[part] = byte(n)
			part, n, digits = part+1, 0, 0
		default:
			if bytes.IndexByte(b, ':') >= 0 {
				a, err := netip.ParseAddr(string(b))
				return a.Unmap(), err == nil
			}
			return netip.Addr{}, false
		}
	}
	if part != 3 || digits == 0 || n > 255 {
		return netip.Addr{}, false
	}
	v4[3] = byte(n)
	return netip.AddrFrom4(v4), true
}

// wildcardListen reports whether the server listens on every interface.
func (s *Server) wildcardListen() bool {
	if s.opts.ListenHost == "" {
		return true
	}
	ip := net.ParseIP(s.opts.ListenHost)
	return ip != nil && ip.IsUnspecified()
}

// hostOnly returns the host of a Host header without its port and, for an
// IPv6 literal, its brackets.
func hostOnly(h []byte) []byte {
	if len(h) > 0 && h[0] == '[' {
		if i := bytes.IndexByte(h, ']'); i > 0 {
			return h[1:i]
		}
		return nil
	}
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h, ':') == i {
		return h[:i]
	}
	return h
}

// crossOrigin says why a request comes from another site ("" when it does
// not): Sec-Fetch-Site cross-site or same-site, or an Origin other than
// the server's own (scheme://Host), unless that Origin is one of
// --allowed-origins. Browsers send Sec-Fetch-Site and, on state-changing
// requests, Origin; other clients send neither and are not concerned.
func (s *Server) crossOrigin(ctx *fasthttp.RequestCtx) string {
	origin := string(ctx.Request.Header.Peek("Origin"))
	for _, o := range s.opts.AllowedOrigins {
		if origin != "" && strings.EqualFold(origin, o) {
			return ""
		}
	}
	switch site := string(ctx.Request.Header.Peek("Sec-Fetch-Site")); site {
	case "", "same-origin", "none":
	default:
		return "a page of another site (Sec-Fetch-Site: " + truncate(site, 32) + ")"
	}
	if origin == "" {
		return ""
	}
	scheme := "http://"
	if s.opts.TLS != nil || ctx.IsTLS() {
		scheme = "https://"
	}
	if !strings.EqualFold(origin, scheme+string(ctx.Host())) {
		return "origin " + strconv.Quote(truncate(origin, 64))
	}
	return ""
}

// jsonBody reports whether the request is not one that must declare its
// body JSON, or declares it: a POST, PUT, PATCH or DELETE with a body
// needs Content-Type application/json (parameters allowed).
func jsonBody(ctx *fasthttp.RequestCtx) bool {
	switch string(ctx.Method()) {
	case "POST", "PUT", "PATCH", "DELETE":
	default:
		return true
	}
	if len(ctx.Request.Body()) == 0 {
		return true
	}
	ct := ctx.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), jsonType)
}

var jsonType = []byte("application/json")

// roleRefusal says why the identity's roles do not allow the request ("":
// they do, as far as roles go; the handlers check pool ACLs). An admin may
// do everything; a node token sends heartbeats (of its nodes: checked with
// the node's name) and nothing else; a user reads everything and changes
// what the pool ACLs allow, but neither sends heartbeats nor changes the
// tree config, profiles or backs up the server.
func roleRefusal(ctx *fasthttp.RequestCtx, id *Identity) string {
	if id.Has(RoleAdmin) {
		return ""
	}
	return roleRefusalOf(id, string(ctx.Method()), ctx.Path())
}

// roleRefusalOf is roleRefusal for a request of method and path (a
// what-if's change is checked as the request it previews).
func roleRefusalOf(id *Identity, method string, path []byte) string {
	if id.Has(RoleAdmin) {
		return ""
	}
	heartbeat := method == "POST" && (string(path) == apiPrefix+"heartbeats" ||
		bytes.HasPrefix(path, []byte(apiPrefix+"nodes/")) && bytes.HasSuffix(path, []byte("/heartbeat")))
	who := "user " + strconv.Quote(id.Name)
	switch {
	case heartbeat && id.Has(RoleNode):
		return ""
	case heartbeat:
		return "cannot take a heartbeat from " + who + ": heartbeats need a node token (role node)"
	case !id.Has(RoleUser):
		return "cannot serve " + method + " " + truncate(string(path), 64) + " to node token " + strconv.Quote(id.Name) + ": a node token may only send heartbeats"
	case bytes.HasPrefix(path, []byte("/debug/pprof")):
		return "cannot serve the profiles to " + who + ": they need the admin role"
	case string(path) == apiPrefix+"backup":
		return "cannot serve a backup to " + who + ": it needs the admin role"
	case string(path) == apiPrefix+"config" && method != "GET" && method != "HEAD":
		return "cannot change the tree config for " + who + ": it needs the admin role"
	}
	return ""
}

// mayHeartbeat checks that the caller may send the heartbeat of node (a
// node token bound to it, or an admin); it answers 403 when not.
func (s *Server) mayHeartbeat(ctx *fasthttp.RequestCtx, node []byte) bool {
	id := who(ctx)
	if id == nil || id.mayHeartbeat(string(node)) {
		return true
	}
	s.forbidden(ctx, "$.url.id", "cannot take the heartbeat of node "+strconv.Quote(truncate(string(node), 64))+
		" from node token "+strconv.Quote(id.Name)+": its nodes are "+strings.Join(id.Nodes, ", "))
	return false
}

// mayHeartbeatBatch checks that the caller may send the heartbeat of every
// node of a batch; it answers 403 naming the first entry it may not, and
// nothing of the batch applies.
func (s *Server) mayHeartbeatBatch(ctx *fasthttp.RequestCtx, b *wire.HeartbeatBatch) bool {
	id := who(ctx)
	if id == nil || id.Has(RoleAdmin) {
		return true
	}
	for i := range b.Entries {
		if node := b.Entries[i].Node; !id.mayHeartbeat(node) {
			s.forbidden(ctx, "$.heartbeats["+strconv.Itoa(i)+"].node_id", "cannot take the heartbeat of node "+strconv.Quote(truncate(node, 64))+
				" from node token "+strconv.Quote(id.Name)+": its nodes are "+strings.Join(id.Nodes, ", "))
			return false
		}
	}
	return true
}

// mayPool checks that the caller has permission perm on pool (a name or
// tree.RootName); it answers 403 naming the permission and the pool when
// not. path is the JSON path of the pool's name in the request.
func (s *Server) mayPool(ctx *fasthttp.RequestCtx, perm tree.Permission, pool, path, doing string) bool {
	if e := poolForbidden(*s.acl.Load(), who(ctx), perm, pool, path, doing); e != nil {
		s.writeError(ctx, fasthttp.StatusForbidden, e)
		return false
	}
	return true
}

// poolForbidden is mayPool's check against the ACL index idx: nil when
// the identity has permission perm on pool, else the 403's body.
func poolForbidden(idx aclIndex, id *Identity, perm tree.Permission, pool, path, doing string) *wire.Error {
	if pool == "" {
		pool = tree.RootName
	}
	if permittedIn(idx, id, perm, pool) {
		return nil
	}
	return &wire.Error{Code: CodeForbidden, Path: path, Message: "cannot " + doing + ": user " + strconv.Quote(id.Name) + " lacks the " +
		wire.PermissionName(perm) + " permission on pool " + strconv.Quote(pool)}
}

// mayOperation checks that the caller may change operation op, in pool:
// its owner may, and so may whoever may administer the pool.
func (s *Server) mayOperation(ctx *fasthttp.RequestCtx, owner, pool, doing string) bool {
	id := who(ctx)
	if id == nil || owner != "" && id.Has(RoleUser) && owner == id.Name {
		return true
	}
	return s.mayPool(ctx, tree.PermAdminister, pool, "$.url.id", doing+" (it is not user "+strconv.Quote(id.Name)+"'s)")
}
