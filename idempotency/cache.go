package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// cache is the local cache of completed records: least recently used out
// first, bounded by entries and by result bytes. It never holds an
// in-progress or failed record, and an entry past its window is a miss.
type cache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	ll         *list.List
	m          map[string]*list.Element
}

func newCache(entries, bytes int) *cache {
	return &cache{maxEntries: entries, maxBytes: bytes, ll: list.New(), m: map[string]*list.Element{}}
}

func (c *cache) get(key string, now time.Time) (Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return Record{}, false
	}
	r := e.Value.(Record)
	if r.Expired(now) {
		c.drop(e)
		return Record{}, false
	}
	c.ll.MoveToFront(e)
	return r, true
}

func (c *cache) put(r Record) {
	if r.Status != StatusCompleted || len(r.Result) > c.maxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[r.Key]; ok {
		c.drop(e)
	}
	c.m[r.Key] = c.ll.PushFront(r)
	c.bytes += len(r.Result)
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.drop(c.ll.Back())
	}
}

func (c *cache) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.drop(e)
	}
}

func (c *cache) drop(e *list.Element) {
	r := e.Value.(Record)
	c.ll.Remove(e)
	delete(c.m, r.Key)
	c.bytes -= len(r.Result)
}
