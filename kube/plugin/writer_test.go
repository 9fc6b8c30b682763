package plugin

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The status writer makes only the latest write of each object, urgent writes before the
// others, each once.
func TestStatusWriter(t *testing.T) {
	w := newStatusWriter()
	var (
		mu   sync.Mutex
		made []string
	)
	rec := func(s string) func(context.Context) {
		return func(context.Context) { mu.Lock(); made = append(made, s); mu.Unlock() }
	}
	for i := range 100 {
		w.push(fmt.Sprintf("pod/%d", i), false, rec(fmt.Sprintf("old %d", i)))
	}
	for i := range 100 {
		w.push(fmt.Sprintf("pod/%d", i), false, rec(fmt.Sprintf("new %d", i)))
	}
	w.push("podgroup/g", false, rec("g pending"))
	w.push("podgroup/g", true, rec("g running"))
	w.push("podgroup/h", true, rec("h scheduling"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.run(ctx, 1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(made)
		mu.Unlock()
		if n >= 102 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(made) != 102 {
		t.Fatalf("%d writes made, want 102 (one per object): %v", len(made), made)
	}
	if made[0] != "g running" || made[1] != "h scheduling" {
		t.Fatalf("urgent writes not first: %v", made[:3])
	}
	for i, s := range made[2:] {
		if want := fmt.Sprintf("new %d", i); s != want {
			t.Fatalf("write %d is %q, want %q (the latest, in order)", i+2, s, want)
		}
	}
}
