package fairshare_test

import (
	"fmt"
	"math"
	"reflect"

	"github.com/fairsched/fairsched/core/resource"
)

// attrDiff returns the first field in which a and b differ ("" if none): the
// field's path and both values. Floats compare bit for bit (a -0 is a
// different output from a 0). Every field kind of Attributes is handled; a
// new kind fails the test rather than going unchecked.
func attrDiff(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if d := attrDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Array:
		for i := range a.Len() {
			name := fmt.Sprint(i)
			if a.Len() == resource.Count {
				name = resource.Kind(i).String()
			}
			if d := attrDiff(a.Index(i), b.Index(i), path+"["+name+"]"); d != "" {
				return d
			}
		}
	case reflect.Float64:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Sprintf("%s: incremental %v, full %v", path, a.Float(), b.Float())
		}
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.String:
		if !a.Equal(b) {
			return fmt.Sprintf("%s: incremental %v, full %v", path, a, b)
		}
	default:
		return fmt.Sprintf("%s: cannot compare a %v (extend attrDiff)", path, a.Kind())
	}
	return ""
}
