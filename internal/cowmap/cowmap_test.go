package cowmap

import (
	"maps"
	"sync"
	"testing"
)

func TestMap(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Load("a"); ok {
		t.Fatal("an empty map has a")
	}
	if n := len(maps.Collect(m.All())); n != 0 {
		t.Fatalf("an empty map lists %d pairs", n)
	}
	m.Store("a", 1)
	made := 0
	if v := m.LoadOrMake("a", func() int { made++; return 9 }); v != 1 || made != 0 {
		t.Fatalf("LoadOrMake of a present key: %d, made %d", v, made)
	}
	if v := m.LoadOrMake("b", func() int { made++; return 2 }); v != 2 || made != 1 {
		t.Fatalf("LoadOrMake of a missing key: %d, made %d", v, made)
	}
	m.Store("a", 3)
	before := maps.Collect(m.All()) // a snapshot: later writes do not show in it
	m.Delete("b")
	if got := maps.Collect(m.All()); len(got) != 1 || got["a"] != 3 {
		t.Fatalf("after Store and Delete: %v", got)
	}
	if len(before) != 2 || before["b"] != 2 {
		t.Fatalf("a snapshot changed: %v", before)
	}
}

// TestLoadOrMakeOnce has many goroutines ask for the same missing keys:
// each key is made once, and every goroutine gets the one value.
func TestLoadOrMakeOnce(t *testing.T) {
	var m Map[int, *int]
	var mu sync.Mutex
	made := map[int]int{}
	var wg sync.WaitGroup
	got := make([][]*int, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				got[g] = append(got[g], m.LoadOrMake(k, func() *int {
					mu.Lock()
					made[k]++
					mu.Unlock()
					return new(int)
				}))
			}
		}()
	}
	wg.Wait()
	for k := range 50 {
		if made[k] != 1 {
			t.Fatalf("key %d made %d times", k, made[k])
		}
		for g := range got {
			if got[g][k] != got[0][k] {
				t.Fatalf("key %d: goroutines got different values", k)
			}
		}
	}
}
