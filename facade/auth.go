package facade

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/schedule"
	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/wire"
)

// Who is calling (docs/operations.md, "Access control"): fairsched serve
// --auth-tokens FILE names the users, their bearer tokens and their roles.
//
//	{"users": [
//	  {"name": "alice", "token": "…", "groups": ["ml"], "roles": ["user"]},
//	  {"name": "ops", "token_sha256": "<64 hex digits>", "roles": ["admin"]},
//	  {"name": "agent", "token": "…", "roles": ["node"], "nodes": ["n-*"]}]}
//
// Roles: admin may do everything; user reads everything and changes what
// the pool ACLs allow; node sends heartbeats, for the nodes whose names
// match one of its patterns (path.Match), and nothing else. A token is
// given as itself or as the hex SHA-256 of itself (so that the file need
// not hold secrets); requests carry "Authorization: Bearer <token>".
//
// NB: a presented token is hashed with SHA-256 first and looked up by its
// digest, which is then compared in constant time: the time a lookup takes
// depends on the digest, which says nothing usable about the token, and on
// nothing else of it. Tokens are never logged, put in errors or metrics:
// the decoder's messages name the user and the field, never the value.

// Role is a set of roles.
type Role uint8

// Roles of a token file.
const (
	RoleAdmin Role = 1 << iota
	RoleUser
	RoleNode
)

var roleNames = map[string]Role{"admin": RoleAdmin, "user": RoleUser, "node": RoleNode}

// Bounds of a token file.
const (
	MaxTokenUsers     = 1 << 16
	MaxUserGroups     = 64
	MaxNodePatterns   = 64
	minTokenLength    = 16
	maxTokenLength    = 4096
	maxPatternLength  = 256
	tokenSHA256Length = 2 * sha256.Size
)

// Identity is a user of a token file.
type Identity struct {
	Name   string
	Groups []string
	Roles  Role
	// Nodes are the patterns of the node names a node token speaks for.
	Nodes  []string
	digest [sha256.Size]byte
}

// Has reports whether the identity has role r.
func (id *Identity) Has(r Role) bool { return id.Roles&r != 0 }

// inGroup reports whether the identity is a member of group g.
func (id *Identity) inGroup(g string) bool { return slices.Contains(id.Groups, g) }

// mayHeartbeat reports whether the identity may send the heartbeat of
// node: an admin, or a node token with a pattern that matches it.
func (id *Identity) mayHeartbeat(node string) bool {
	if id.Has(RoleAdmin) {
		return true
	}
	if !id.Has(RoleNode) {
		return false
	}
	for _, p := range id.Nodes {
		if ok, _ := path.Match(p, node); ok {
			return true
		}
	}
	return false
}

// Tokens is a parsed token file. It is immutable: a reload replaces it.
type Tokens struct {
	byDigest map[[sha256.Size]byte]*Identity
	users    []*Identity
}

// Users returns the number of users.
func (t *Tokens) Users() int { return len(t.users) }

// Lookup returns the identity whose token is token, or nil. See the NB
// above on timing.
func (t *Tokens) Lookup(token []byte) *Identity {
	if len(token) == 0 || len(token) > maxTokenLength {
		return nil
	}
	d := sha256.Sum256(token)
	id := t.byDigest[d]
	if id == nil || subtle.ConstantTimeCompare(id.digest[:], d[:]) != 1 {
		return nil
	}
	return id
}

var (
	tokenFileKeys = []string{"users"}
	tokenUserKeys = []string{"name", "token", "token_sha256", "groups", "roles", "nodes"}
)

// ParseTokens decodes and validates a token file. Its errors are
// *wire.Error values naming the JSON path of the problem; they never
// repeat a token.
func ParseTokens(data []byte) (*Tokens, error) {
	t, e := parseTokens(data)
	if e != nil {
		return nil, e
	}
	return t, nil
}

func parseTokens(data []byte) (*Tokens, *wire.Error) {
	m, e := jsonpath.DecodeObject(data, "file")
	if e != nil {
		return nil, e
	}
	if e := jsonpath.CheckKeys("$", m, tokenFileKeys, "a token file"); e != nil {
		return nil, e
	}
	v, ok := m["users"]
	if !ok {
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, "$.users", `cannot use a token file without users: want {"users": [{"name", "token", "roles"}, …]}`)
	}
	a, e := jsonpath.Array("$.users", v)
	if e != nil {
		return nil, e
	}
	switch {
	case len(a) == 0:
		return nil, jsonpath.NewError(wire.CodeInvalidValue, "$.users", "cannot use a token file without users: want at least one")
	case len(a) > MaxTokenUsers:
		return nil, jsonpath.NewError(wire.CodeInvalidValue, "$.users", "cannot use "+strconv.Itoa(len(a))+" users: want at most "+strconv.Itoa(MaxTokenUsers))
	}
	t := &Tokens{byDigest: make(map[[sha256.Size]byte]*Identity, len(a))}
	names := make(map[string]string, len(a))
	for i, uv := range a {
		p := jsonpath.Index("$.users", i)
		id, e := parseUser(p, uv)
		if e != nil {
			return nil, e
		}
		if prev, dup := names[id.Name]; dup {
			return nil, jsonpath.NewError(wire.CodeDuplicateName, jsonpath.Key(p, "name"), "cannot name two users "+strconv.Quote(id.Name)+": "+prev+" has the name")
		}
		names[id.Name] = p
		if other, dup := t.byDigest[id.digest]; dup {
			return nil, jsonpath.NewError(wire.CodeInvalidValue, p, "cannot give user "+strconv.Quote(id.Name)+" the token of user "+strconv.Quote(other.Name)+": a token names one user")
		}
		t.byDigest[id.digest] = id
		t.users = append(t.users, id)
	}
	return t, nil
}

func parseUser(p string, v any) (*Identity, *wire.Error) {
	m, e := jsonpath.Object(p, v)
	if e != nil {
		return nil, e
	}
	if e := jsonpath.CheckKeys(p, m, tokenUserKeys, "a user"); e != nil {
		return nil, e
	}
	id := &Identity{}
	nv, ok := m["name"]
	if !ok {
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(p, "name"), "cannot use a user without a name")
	}
	if id.Name, e = jsonpath.String(jsonpath.Key(p, "name"), nv); e != nil {
		return nil, e
	}
	if !wire.ValidPrincipal(id.Name) {
		return nil, jsonpath.Invalid(jsonpath.Key(p, "name"), nv, "1-128 characters of [A-Za-z0-9._@-]")
	}
	who := "user " + strconv.Quote(id.Name)
	tok, hasTok := m["token"]
	sum, hasSum := m["token_sha256"]
	switch {
	case hasTok && hasSum:
		return nil, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(p, "token_sha256"), "cannot give "+who+" both token and token_sha256: want one")
	case hasTok:
		tp := jsonpath.Key(p, "token")
		s, ok := tok.(string)
		switch {
		case !ok:
			return nil, jsonpath.NewError(wire.CodeWrongType, tp, "cannot use the token of "+who+": want a string")
		case len(s) < minTokenLength || len(s) > maxTokenLength:
			return nil, jsonpath.NewError(wire.CodeInvalidValue, tp, "cannot use the token of "+who+": want "+strconv.Itoa(minTokenLength)+
				" to "+strconv.Itoa(maxTokenLength)+" characters (openssl rand -hex 32 makes one)")
		case !tokenChars(s):
			return nil, jsonpath.NewError(wire.CodeInvalidValue, tp, "cannot use the token of "+who+": want printable ASCII without spaces")
		}
		id.digest = sha256.Sum256([]byte(s))
	case hasSum:
		sp := jsonpath.Key(p, "token_sha256")
		s, ok := sum.(string)
		if !ok {
			return nil, jsonpath.NewError(wire.CodeWrongType, sp, "cannot use the token_sha256 of "+who+": want a string")
		}
		b, err := hex.DecodeString(s)
		if err != nil || len(s) != tokenSHA256Length {
			return nil, jsonpath.NewError(wire.CodeInvalidValue, sp, "cannot use the token_sha256 of "+who+": want 64 hex digits (sha256sum of the token)")
		}
		copy(id.digest[:], b)
	default:
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(p, "token"), "cannot use "+who+" without a token: want token or token_sha256")
	}
	rv, ok := m["roles"]
	if !ok {
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(p, "roles"), "cannot use "+who+" without roles: want some of admin, user, node")
	}
	rp := jsonpath.Key(p, "roles")
	ra, e := jsonpath.Array(rp, rv)
	if e != nil {
		return nil, e
	}
	if len(ra) == 0 {
		return nil, jsonpath.NewError(wire.CodeInvalidValue, rp, "cannot use "+who+" without roles: want some of admin, user, node")
	}
	for j, x := range ra {
		r, e := jsonpath.Lookup(jsonpath.Index(rp, j), x, roleNames, "admin, user or node")
		if e != nil {
			return nil, e
		}
		if id.Roles&r != 0 {
			return nil, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Index(rp, j), "cannot give "+who+" a role twice")
		}
		id.Roles |= r
	}
	if gv, ok := m["groups"]; ok {
		if id.Groups, e = nameList(jsonpath.Key(p, "groups"), gv, MaxUserGroups, "a group name of 1-128 characters of [A-Za-z0-9._@-]", wire.ValidPrincipal); e != nil {
			return nil, e
		}
	}
	nv, hasNodes := m["nodes"]
	switch {
	case hasNodes && !id.Has(RoleNode):
		return nil, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(p, "nodes"), "cannot bind "+who+" to nodes: only a node token speaks for nodes")
	case hasNodes:
		if id.Nodes, e = nameList(jsonpath.Key(p, "nodes"), nv, MaxNodePatterns, `a pattern of node names ("n-*", "*" for every node)`, validNodePattern); e != nil {
			return nil, e
		}
		if len(id.Nodes) == 0 {
			return nil, jsonpath.NewError(wire.CodeInvalidValue, jsonpath.Key(p, "nodes"), "cannot bind "+who+` to no node: want patterns of node names ("*" for every node)`)
		}
	case id.Has(RoleNode):
		return nil, jsonpath.NewError(wire.CodeMissingAttribute, jsonpath.Key(p, "nodes"), "cannot use node token "+who+` without nodes: want the patterns of the node names it speaks for ("*" for every node)`)
	}
	return id, nil
}

// nameList decodes a list of distinct strings that valid accepts.
func nameList(p string, v any, maxLen int, want string, valid func(string) bool) ([]string, *wire.Error) {
	a, e := jsonpath.Array(p, v)
	if e != nil {
		return nil, e
	}
	if len(a) > maxLen {
		return nil, jsonpath.NewError(wire.CodeInvalidValue, p, "cannot use "+strconv.Itoa(len(a))+" entries: want at most "+strconv.Itoa(maxLen))
	}
	out := make([]string, 0, len(a))
	for i, x := range a {
		ip := jsonpath.Index(p, i)
		s, e := jsonpath.String(ip, x)
		if e != nil {
			return nil, e
		}
		if !valid(s) {
			return nil, jsonpath.Invalid(ip, x, want)
		}
		if slices.Contains(out, s) {
			return nil, jsonpath.NewError(wire.CodeInvalidValue, ip, "cannot use "+jsonpath.Describe(s)+" twice")
		}
		out = append(out, s)
	}
	return out, nil
}

// tokenChars reports whether s is printable ASCII without spaces: what an
// Authorization header carries unchanged.
func tokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// validNodePattern reports whether p is a path.Match pattern of node names.
func validNodePattern(p string) bool {
	if p == "" || len(p) > maxPatternLength || strings.ContainsAny(p, "/\\") {
		return false
	}
	_, err := path.Match(p, "")
	return err == nil
}

// subjectMatches reports whether an ACL subject names the identity: its
// name, or "group:<g>" for one of its groups.
func (id *Identity) subjectMatches(subject string) bool {
	if g, ok := strings.CutPrefix(subject, wire.GroupPrefix); ok {
		return id.inGroup(g)
	}
	return subject == id.Name
}

// aclIndex is what permission checks need of the pool tree: each pool's
// parent, ACL and inheritance. It is rebuilt after every change of the
// pools (rebuildACL) and never modified: requests read it without a lock.
type aclIndex map[string]aclPool

type aclPool struct {
	parent  string // "" for the root
	acl     []tree.ACLEntry
	inherit bool
}

// rebuildACL rebuilds the ACL index from the scheduler's pools. The caller
// holds s.mu (or is New).
func (s *Server) rebuildACL() {
	idx := buildACL(s.sched.Pools(nil))
	s.acl.Store(&idx)
}

// buildACL is the ACL index of pools.
func buildACL(pools []schedule.PoolInfo) aclIndex {
	idx := make(aclIndex, len(pools))
	for i := range pools {
		p := &pools[i]
		parent := p.Parent
		if p.Name == tree.RootName {
			parent = ""
		}
		inherit := !p.Config.InheritACL.Set || p.Config.InheritACL.V
		idx[p.Name] = aclPool{parent: parent, acl: p.Config.ACL, inherit: inherit}
	}
	return idx
}

// permitted reports whether the identity has permission perm on pool
// (tree.RootName for the root): an admin always, a user when an entry of
// the pool's effective ACL allows it and none denies it (deny wins), a
// node never. The effective ACL is the pool's own entries followed by its
// ancestors' while inherit_acl holds. A pool that does not exist is left
// to the handler, which refuses it as unknown. A nil identity is the caller of a
// server without tokens, who may do everything.
func (s *Server) permitted(id *Identity, perm tree.Permission, pool string) bool {
	return permittedIn(*s.acl.Load(), id, perm, pool)
}

// permittedIn is permitted against the ACL index idx (a what-if checks
// its changes against the pools as its earlier changes left them).
func permittedIn(idx aclIndex, id *Identity, perm tree.Permission, pool string) bool {
	if id == nil || id.Has(RoleAdmin) {
		return true
	}
	if !id.Has(RoleUser) {
		return false
	}
	allowed := false
	for name, depth := pool, 0; name != "" && depth <= len(idx); depth++ {
		p, ok := idx[name]
		if !ok {
			// A pool that does not exist: the handler answers that
			// (unknown_pool), which tells nothing a reader cannot see.
			return depth == 0
		}
		for i := range p.acl {
			e := &p.acl[i]
			if e.Permissions&perm == 0 || !slices.ContainsFunc(e.Subjects, id.subjectMatches) {
				continue
			}
			if e.Deny {
				return false
			}
			allowed = true
		}
		if !p.inherit {
			break
		}
		name = p.parent
	}
	return allowed
}
