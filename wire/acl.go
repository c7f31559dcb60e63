package wire

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/tree"
	"github.com/fairsched/fairsched/internal/jsonpath"
)

// Pool ACLs (docs/operations.md, "Access control"): a pool's "acl" is a list
// of entries
//
//	{"action": "allow" | "deny", "subjects": ["alice", "group:ml"], "permissions": ["use", "administer"]}
//
// and "inherit_acl" (default true) says whether its ancestors' entries apply
// too. The decoder checks the form and the bounds below; what the entries
// allow is the facade's.

// Bounds of a pool's ACL.
const (
	MaxACLEntries  = 64 // entries of one pool's acl
	MaxACLSubjects = 64 // subjects of one entry
)

// GroupPrefix marks a group among an ACL entry's subjects.
const GroupPrefix = "group:"

var aclEntryKeys = []string{"action", "subjects", "permissions"}

// ValidPrincipal reports whether s is a valid user or group name: 1–128
// characters of [A-Za-z0-9._@-] (no ':', which "group:" uses).
func ValidPrincipal(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// decodeACL decodes a pool's "acl" at path p.
func decodeACL(p string, x any) ([]tree.ACLEntry, *Error) {
	a, e := jsonpath.Array(p, x)
	if e != nil {
		return nil, e
	}
	if len(a) > MaxACLEntries {
		return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot use an acl of "+strconv.Itoa(len(a))+" entries: want at most "+strconv.Itoa(MaxACLEntries))
	}
	if len(a) == 0 {
		return nil, nil
	}
	out := make([]tree.ACLEntry, 0, len(a))
	for i, v := range a {
		ep := jsonpath.Index(p, i)
		m, e := jsonpath.Object(ep, v)
		if e != nil {
			return nil, e
		}
		var ent tree.ACLEntry
		for _, k := range jsonpath.SortedKeys(m) {
			kp, kv := jsonpath.Key(ep, k), m[k]
			switch k {
			case "action":
				var deny bool
				deny, e = jsonpath.Lookup(kp, kv, map[string]bool{"allow": false, "deny": true}, `"allow" or "deny"`)
				ent.Deny = deny
			case "subjects":
				ent.Subjects, e = aclSubjects(kp, kv)
			case "permissions":
				ent.Permissions, e = aclPermissions(kp, kv)
			default:
				e = jsonpath.UnknownKey(ep, k, aclEntryKeys, "an acl entry")
			}
			if e != nil {
				return nil, e
			}
		}
		for _, k := range aclEntryKeys {
			if _, ok := m[k]; !ok {
				return nil, jsonpath.NewError(CodeMissingAttribute, jsonpath.Key(ep, k),
					"cannot use an acl entry without "+k+`: want {"action", "subjects", "permissions"}`)
			}
		}
		out = append(out, ent)
	}
	return out, nil
}

func aclSubjects(p string, x any) ([]string, *Error) {
	a, e := jsonpath.Array(p, x)
	if e != nil {
		return nil, e
	}
	switch {
	case len(a) == 0:
		return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot use an acl entry without subjects: want user names or \"group:<name>\"")
	case len(a) > MaxACLSubjects:
		return nil, jsonpath.NewError(CodeInvalidValue, p, "cannot use an acl entry of "+strconv.Itoa(len(a))+" subjects: want at most "+strconv.Itoa(MaxACLSubjects))
	}
	out := make([]string, 0, len(a))
	for i, v := range a {
		sp := jsonpath.Index(p, i)
		s, e := jsonpath.String(sp, v)
		if e != nil {
			return nil, e
		}
		if !ValidPrincipal(strings.TrimPrefix(s, GroupPrefix)) {
			return nil, jsonpath.Invalid(sp, v, `a user name or "group:<name>", names of 1-128 characters of [A-Za-z0-9._@-]`)
		}
		if slices.Contains(out, s) {
			return nil, jsonpath.NewError(CodeInvalidValue, sp, "cannot name subject "+jsonpath.Describe(s)+" twice in one acl entry")
		}
		out = append(out, s)
	}
	return out, nil
}

var permissionNames = map[string]tree.Permission{"use": tree.PermUse, "administer": tree.PermAdminister}

func aclPermissions(p string, x any) (tree.Permission, *Error) {
	a, e := jsonpath.Array(p, x)
	if e != nil {
		return 0, e
	}
	if len(a) == 0 {
		return 0, jsonpath.NewError(CodeInvalidValue, p, `cannot use an acl entry without permissions: want "use", "administer" or both`)
	}
	var out tree.Permission
	for i, v := range a {
		pp := jsonpath.Index(p, i)
		perm, e := jsonpath.Lookup(pp, v, permissionNames, `"use" or "administer"`)
		if e != nil {
			return 0, e
		}
		if out&perm != 0 {
			return 0, jsonpath.NewError(CodeInvalidValue, pp, "cannot name permission "+jsonpath.Describe(v)+" twice in one acl entry")
		}
		out |= perm
	}
	return out, nil
}

// PermissionName is the wire name of a single permission.
func PermissionName(p tree.Permission) string {
	if p == tree.PermAdminister {
		return "administer"
	}
	return "use"
}

// appendACL appends ,"acl":[…] when the ACL has entries, and
// ,"inherit_acl":… when it is set.
func appendACL(dst []byte, c *tree.PoolConfig) []byte {
	if len(c.ACL) > 0 {
		dst = append(dst, `,"acl":[`...)
		for i := range c.ACL {
			ent := &c.ACL[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"action":"`...)
			if ent.Deny {
				dst = append(dst, "deny"...)
			} else {
				dst = append(dst, "allow"...)
			}
			dst = append(dst, `","subjects":[`...)
			for j, s := range ent.Subjects {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = jsonpath.AppendString(dst, s)
			}
			dst = append(dst, `],"permissions":[`...)
			first := true
			for _, perm := range []tree.Permission{tree.PermUse, tree.PermAdminister} {
				if ent.Permissions&perm != 0 {
					if !first {
						dst = append(dst, ',')
					}
					dst = append(dst, '"')
					dst = append(dst, PermissionName(perm)...)
					dst = append(dst, '"')
					first = false
				}
			}
			dst = append(dst, "]}"...)
		}
		dst = append(dst, ']')
	}
	return appendOptBool(dst, "inherit_acl", c.InheritACL)
}
