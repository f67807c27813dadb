package remote

import "sync"

// cache is a sync.Map whose keys and values have one type each, so that
// no caller asserts what it loads.
type cache[K comparable, V any] struct{ m sync.Map }

func (c *cache[K, V]) Load(key K) (V, bool) {
	v, ok := c.m.Load(key)
	typed, _ := v.(V)
	return typed, ok
}

func (c *cache[K, V]) Store(key K, value V) { c.m.Store(key, value) }

// LoadOrStore returns the value stored for key, storing value first if
// there is none.
func (c *cache[K, V]) LoadOrStore(key K, value V) V {
	v, _ := c.m.LoadOrStore(key, value)
	typed, _ := v.(V)
	return typed
}

// Clear forgets every entry.
func (c *cache[K, V]) Clear() { c.m.Clear() }
