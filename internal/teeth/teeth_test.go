package teeth

import (
	"testing"

	"pgregory.net/rapid"
)

func TestFails(t *testing.T) {
	if !Fails(func(t *rapid.T) {
		if rapid.IntRange(0, 1000).Draw(t, "x") == 777 {
			t.Fatal("found")
		}
	}) {
		t.Error("a property that fails on one value in a thousand was not caught")
	}
	if Fails(func(t *rapid.T) { _ = rapid.IntRange(0, 10).Draw(t, "x") }) {
		t.Error("a property that always holds was reported as failing")
	}
}
