package jsonpath

import (
	"math"

	"github.com/fairsched/fairsched/core/resource"
)

// Amount decodes one resource amount of kind k (docs/api.md#conventions): a non-negative
// number, cpu in cores with two decimal digits (rounded to the nearest
// centi-core, resource.Cores), the others whole numbers; all at most 2^53
// (cpu: 2^53 centi-cores).
func Amount(path string, k resource.Kind, v any) (int64, *Error) {
	x, e := Number(path, v)
	if e != nil {
		return 0, e
	}
	if x < 0 {
		return 0, Invalid(path, v, "a non-negative number")
	}
	if k == resource.CPU {
		if x*resource.CPUScale > resource.MaxAmount {
			return 0, Invalid(path, v, "at most 2^53 centi-cores (90071992547409.92 cpu)")
		}
		return resource.Cores(x), nil
	}
	if x > resource.MaxAmount {
		return 0, Invalid(path, v, "at most 2^53 (9007199254740992)")
	}
	if x != math.Trunc(x) {
		return 0, Invalid(path, v, "a whole number")
	}
	return int64(x), nil
}

// Resources decodes a resource object such as {"cpu": 1.5, "memory": 1024}
// with Amount. Resources it does not name are 0 in vec and false in given.
// A name other than resource.Names' is an unknown_attribute error. On error
// vec and given hold what was decoded before the problem.
func Resources(path string, v any) (vec resource.Vec, given [resource.Count]bool, e *Error) {
	m, e := Object(path, v)
	if e != nil {
		return vec, given, e
	}
	for _, name := range SortedKeys(m) {
		k, ok := resource.KindByName(name)
		if !ok {
			return vec, given, UnknownResource(path, name)
		}
		if vec[k], e = Amount(Key(path, name), k, m[name]); e != nil {
			return vec, given, e
		}
		given[k] = true
	}
	return vec, given, nil
}

// UnknownResource returns the unknown_attribute error at path.name for a
// member of a resource object that names no resource.
func UnknownResource(path, name string) *Error {
	return NewError(CodeUnknownAttribute, Key(path, name),
		"cannot use unknown resource "+Describe(name)+": want one of user_slots, cpu, gpu, memory, network")
}
