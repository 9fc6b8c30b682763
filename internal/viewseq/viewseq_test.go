package viewseq

import (
	"fmt"
	"testing"
)

func ExampleSame() {
	host := new(int) // hosts use a pointer of their own
	fmt.Println(Same(host, host), Same(host, new(int)), Same([]int{1}, []int{1}), Same(nil, host))
	// Output: true false false false
}

type holder struct{ v any }

// TestSameNeverPanics: every pair of hostile identifiers gives an answer, and == would have
// panicked on some of them (the test fails if none of the pairs is one that == cannot take).
func TestSameNeverPanics(t *testing.T) {
	p := new(int)
	vals := []any{nil, p, 3, "a", []int{1}, map[int]int{}, func() {}, holder{[]int{1}}, holder{2}, [1]any{[]int{}}}
	panics := 0
	for _, a := range vals {
		for _, b := range vals {
			_ = Same(a, b)
			func() {
				defer func() {
					if recover() != nil {
						panics++
					}
				}()
				_ = a == b
			}()
		}
	}
	if panics == 0 {
		t.Fatal("no pair makes == panic: the test checks nothing")
	}
	if !Same(p, p) || !Same(holder{2}, holder{2}) || Same(holder{[]int{1}}, holder{[]int{1}}) {
		t.Fatal("Same: wrong answer on a comparable or non-comparable pair")
	}
}
