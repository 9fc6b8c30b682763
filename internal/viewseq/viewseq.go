package viewseq

import "reflect"

// Same reports whether a and b are the same sequence identifier: both non-nil, both
// comparable values (reflect.Value.Comparable: no slice, map or function, nor one inside a
// struct, array or interface), and equal. It never panics.
func Same(a, b any) bool {
	if a == nil || b == nil || !reflect.ValueOf(a).Comparable() || !reflect.ValueOf(b).Comparable() {
		return false
	}
	return a == b
}
