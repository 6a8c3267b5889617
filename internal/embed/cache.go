package embed

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/recall-mcp/recall"
)

// WithQueryCache wraps e so that query embeddings are remembered for ttl, up
// to size of them, least recently used evicted first: an assistant often
// repeats a search, and a remote embedding costs a round trip. Simultaneous
// requests for the same query share one embedding. Documents are never
// cached: each is embedded once and then stored. Errors are never cached.
// size <= 0 returns e unwrapped; ttl <= 0 keeps entries until evicted.
func WithQueryCache(e recall.Embedder, size int, ttl time.Duration) recall.Embedder {
	if size <= 0 {
		return e
	}
	return &queryCache{
		next:    e,
		size:    size,
		ttl:     ttl,
		now:     time.Now,
		lru:     list.New(),
		items:   make(map[string]*list.Element),
		flights: make(map[string]*flight),
	}
}

type queryCache struct {
	next recall.Embedder
	size int
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	lru     *list.List // of *cached, most recently used at the front
	items   map[string]*list.Element
	flights map[string]*flight
}

type cached struct {
	text    string
	vec     []float32
	expires time.Time // zero: never
}

// flight is one query being embedded; it belongs to the group of queries
// embedded in the same call.
type flight struct {
	text  string
	done  chan struct{}
	vec   []float32
	err   error
	group *group
}

// group is one call to the wrapped embedder. It runs detached from any one
// caller's context and is cancelled only when every caller waiting on it has
// gone, so one impatient caller cannot fail the others.
type group struct {
	waiters  int
	finished bool
	cancel   context.CancelFunc
	flights  []*flight
}

func (c *queryCache) Info() recall.EmbedderInfo { return c.next.Info() }

func (c *queryCache) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	if kind != recall.InputQuery || len(texts) == 0 {
		return c.next.Embed(ctx, kind, texts)
	}
	out := make([][]float32, len(texts))
	waits := make([]*flight, len(texts))
	joined := map[*group]bool{}
	var fresh *group

	c.mu.Lock()
	now := c.now()
	for i, t := range texts {
		if vec, ok := c.lookup(t, now); ok {
			out[i] = vec
			continue
		}
		f, ok := c.flights[t]
		if !ok {
			if fresh == nil {
				fresh = &group{}
			}
			f = &flight{text: t, done: make(chan struct{}), group: fresh}
			fresh.flights = append(fresh.flights, f)
			c.flights[t] = f
		}
		if !joined[f.group] {
			joined[f.group] = true
			f.group.waiters++
		}
		waits[i] = f
	}
	if fresh != nil {
		gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		fresh.cancel = cancel
		go c.run(gctx, fresh)
	}
	c.mu.Unlock()
	defer c.leave(joined)

	for i, f := range waits {
		if f == nil {
			continue
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			return nil, f.err
		}
		out[i] = clone(f.vec)
	}
	return out, nil
}

// Cached returns the vector the query cache e (WithQueryCache) holds for
// query, without calling the embedder; false when e is no such cache or
// holds none. A search that does not call an embedder that is down still
// uses the vectors it remembers.
func Cached(e recall.Embedder, query string) ([]float32, bool) {
	c, ok := e.(*queryCache)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookup(query, c.now())
}

// lookup returns a copy of text's vector when it is cached and not
// expired (called with c.mu held); an expired one is dropped.
func (c *queryCache) lookup(text string, now time.Time) ([]float32, bool) {
	el, ok := c.items[text]
	if !ok {
		return nil, false
	}
	ent := el.Value.(*cached)
	if !ent.expires.IsZero() && !now.Before(ent.expires) {
		c.lru.Remove(el)
		delete(c.items, text)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return clone(ent.vec), true
}

// run embeds a group's queries in one call and publishes the outcome.
func (c *queryCache) run(ctx context.Context, g *group) {
	texts := make([]string, len(g.flights))
	for i, f := range g.flights {
		texts[i] = f.text
	}
	vecs, err := c.next.Embed(ctx, recall.InputQuery, texts)
	if err == nil && len(vecs) != len(texts) {
		err = recall.Errorf(recall.EUNAVAILABLE, "the embedder returned %d vectors for %d queries", len(vecs), len(texts))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	g.finished = true
	g.cancel()
	var expires time.Time
	if c.ttl > 0 {
		expires = c.now().Add(c.ttl)
	}
	for i, f := range g.flights {
		if c.flights[f.text] == f {
			delete(c.flights, f.text)
		}
		if err != nil {
			f.err = err
		} else {
			f.vec = vecs[i]
			c.store(f.text, clone(vecs[i]), expires)
		}
		close(f.done)
	}
}

// leave drops the caller from the groups it waited on. A group nobody waits
// for any more is cancelled and its flights forgotten, so a later caller
// starts afresh rather than joining a call bound to fail.
func (c *queryCache) leave(joined map[*group]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for g := range joined {
		g.waiters--
		if g.waiters > 0 || g.finished {
			continue
		}
		g.cancel()
		for _, f := range g.flights {
			if c.flights[f.text] == f {
				delete(c.flights, f.text)
			}
		}
	}
}

func (c *queryCache) store(text string, vec []float32, expires time.Time) {
	if el, ok := c.items[text]; ok {
		el.Value = &cached{text: text, vec: vec, expires: expires}
		c.lru.MoveToFront(el)
		return
	}
	c.items[text] = c.lru.PushFront(&cached{text: text, vec: vec, expires: expires})
	for c.lru.Len() > c.size {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.items, last.Value.(*cached).text)
	}
}

// clone hands out copies: callers may scale or reuse the slices they get.
func clone(v []float32) []float32 {
	return append([]float32(nil), v...)
}
