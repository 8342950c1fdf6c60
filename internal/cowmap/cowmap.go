// Package cowmap is a map read on hot paths by many goroutines and
// written rarely: lookups take no lock and write nothing shared (an
// RWMutex's reader count is itself a cache line every reader writes), and
// a write replaces the whole map with a copy. For registries and caches
// of bounded key sets, written once per key.
package cowmap

import (
	"iter"
	"maps"
	"sync"
	"sync/atomic"
)

// Map is a copy-on-write map. The zero value is empty and ready to use.
type Map[K comparable, V any] struct {
	mu sync.Mutex // serialises the writers
	m  atomic.Pointer[map[K]V]
}

// Load returns k's value, and whether there is one.
func (c *Map[K, V]) Load(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// LoadOrMake returns k's value, adding newValue()'s when there is none;
// newValue runs at most once per key that is missing.
func (c *Map[K, V]) LoadOrMake(k K, newValue func() V) V {
	if v, ok := c.Load(k); ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.Load(k); ok {
		return v
	}
	v := newValue()
	c.write(func(m map[K]V) { m[k] = v })
	return v
}

// Store sets k's value, replacing any.
func (c *Map[K, V]) Store(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.write(func(m map[K]V) { m[k] = v })
}

// Delete removes k.
func (c *Map[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.write(func(m map[K]V) { delete(m, k) })
}

// All is the pairs of the map as it was when called, in no order.
func (c *Map[K, V]) All() iter.Seq2[K, V] {
	m := c.m.Load()
	return func(yield func(K, V) bool) {
		if m == nil {
			return
		}
		for k, v := range *m {
			if !yield(k, v) {
				return
			}
		}
	}
}

// write stores a changed copy of the map; mu is held.
func (c *Map[K, V]) write(change func(map[K]V)) {
	next := map[K]V{}
	if old := c.m.Load(); old != nil {
		next = maps.Clone(*old)
	}
	change(next)
	c.m.Store(&next)
}
