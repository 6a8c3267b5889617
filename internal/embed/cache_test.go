package embed

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

func TestQueryCacheRepeatsCostOneEmbedding(t *testing.T) {
	inner := embedtest.New(16)
	c := WithQueryCache(inner, 8, time.Minute)
	ctx := context.Background()
	first, err := c.Embed(ctx, recall.InputQuery, []string{"where did we park"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Embed(ctx, recall.InputQuery, []string{"where did we park"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.Calls() != 1 {
		t.Errorf("inner embedder called %d times, want 1", inner.Calls())
	}
	if !slices.Equal(first[0], second[0]) || !slices.Equal(first[0], embedtest.Vector("where did we park", 16)) {
		t.Errorf("cached vector differs from the embedded one")
	}
	if _, err := c.Embed(ctx, recall.InputQuery, []string{"something else"}); err != nil {
		t.Fatal(err)
	}
	if inner.Calls() != 2 {
		t.Errorf("a new query made %d calls in all, want 2", inner.Calls())
	}
	if c.Info() != inner.Info() {
		t.Errorf("Info %+v, want the inner embedder's %+v", c.Info(), inner.Info())
	}
}

func TestQueryCacheEmbedsOnlyMisses(t *testing.T) {
	inner := embedtest.New(16)
	c := WithQueryCache(inner, 8, time.Minute)
	ctx := context.Background()
	if _, err := c.Embed(ctx, recall.InputQuery, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Embed(ctx, recall.InputQuery, []string{"a", "b", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"a", "b", "b", "c"} {
		if !slices.Equal(got[i], embedtest.Vector(q, 16)) {
			t.Errorf("vector %d is not %q's", i, q)
		}
	}
	if inner.Calls() != 2 || inner.Texts() != 3 {
		t.Errorf("inner embedder: %d calls for %d texts, want 2 calls for 3 texts (a, then b and c)", inner.Calls(), inner.Texts())
	}
}

func TestQueryCacheNeverCachesDocuments(t *testing.T) {
	inner := embedtest.New(16)
	c := WithQueryCache(inner, 8, time.Minute)
	for range 2 {
		if _, err := c.Embed(context.Background(), recall.InputDocument, []string{"a passage"}); err != nil {
			t.Fatal(err)
		}
	}
	if inner.Calls() != 2 {
		t.Errorf("documents embedded %d times, want 2 (never cached)", inner.Calls())
	}
	if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"a passage"}); err != nil {
		t.Fatal(err)
	}
	if inner.Calls() != 3 {
		t.Errorf("a query equal to an earlier document was served from cache")
	}
}

func TestQueryCacheExpires(t *testing.T) {
	inner := embedtest.New(16)
	c := WithQueryCache(inner, 8, time.Minute).(*queryCache)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	embed := func() {
		t.Helper()
		if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"}); err != nil {
			t.Fatal(err)
		}
	}
	embed()
	now = now.Add(59 * time.Second)
	embed()
	if inner.Calls() != 1 {
		t.Fatalf("re-embedded before the TTL ran out")
	}
	now = now.Add(2 * time.Second)
	embed()
	if inner.Calls() != 2 {
		t.Errorf("served a query %s after it was cached with a TTL of 1m", 61*time.Second)
	}
}

// Cached answers from what the cache holds, unexpired, and never calls
// the embedder: a search does not call one that is down.
func TestCachedNeverEmbeds(t *testing.T) {
	inner := embedtest.New(16)
	c := WithQueryCache(inner, 8, time.Minute)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.(*queryCache).now = func() time.Time { return now }
	if _, ok := Cached(c, "q"); ok || inner.Calls() != 0 {
		t.Fatalf("a query never embedded: cached %v, %d calls", ok, inner.Calls())
	}
	if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := Cached(c, "q"); !ok || !slices.Equal(v, embedtest.Vector("q", 16)) || inner.Calls() != 1 {
		t.Errorf("an embedded query: cached %v, %d calls; want its vector and no call", ok, inner.Calls())
	}
	now = now.Add(61 * time.Second)
	if _, ok := Cached(c, "q"); ok {
		t.Errorf("served a query 61s after it was cached with a TTL of 1m")
	}
	if _, ok := Cached(inner, "q"); ok {
		t.Errorf("an embedder that is no cache holds a vector")
	}
}

func TestQueryCacheEvictsLeastRecentlyUsed(t *testing.T) {
	inner := embedtest.New(16)
	c := WithQueryCache(inner, 2, 0)
	calls := func(q string) int {
		t.Helper()
		before := inner.Calls()
		if _, err := c.Embed(context.Background(), recall.InputQuery, []string{q}); err != nil {
			t.Fatal(err)
		}
		return inner.Calls() - before
	}
	steps := []struct {
		query string
		calls int
	}{
		{"a", 1}, {"b", 1}, {"a", 0}, // a is now more recent than b
		{"c", 1}, // evicts b
		{"a", 0}, {"c", 0},
		{"b", 1}, // evicts a
		{"a", 1},
	}
	for i, s := range steps {
		if got := calls(s.query); got != s.calls {
			t.Fatalf("step %d (%q): %d embeddings, want %d", i, s.query, got, s.calls)
		}
	}
}

func TestQueryCacheDoesNotCacheErrors(t *testing.T) {
	inner := embedtest.New(16)
	inner.FailOn(1, embedtest.FaultError)
	c := WithQueryCache(inner, 8, time.Minute)
	if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"}); recall.ErrorCode(err) != recall.EUNAVAILABLE {
		t.Fatalf("got %v, want the inner embedder's failure", err)
	}
	if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"}); err != nil {
		t.Fatalf("second try: %v (the failure was cached)", err)
	}
}

func TestQueryCacheReturnsCopies(t *testing.T) {
	c := WithQueryCache(embedtest.New(16), 8, time.Minute)
	got, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	got[0][0] = 42
	again, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	if again[0][0] == 42 {
		t.Errorf("a caller's change to its result reached the cache")
	}
}

func TestQueryCacheDisabled(t *testing.T) {
	inner := embedtest.New(16)
	if WithQueryCache(inner, 0, time.Minute) != recall.Embedder(inner) {
		t.Errorf("size 0 should return the embedder unwrapped")
	}
}

// gate is an embedder that blocks every call until released, and reports
// how its calls ended.
type gate struct {
	calls   chan context.Context
	release chan struct{}
	mu      sync.Mutex
	ended   []error
}

func newGate() *gate {
	return &gate{calls: make(chan context.Context, 16), release: make(chan struct{})}
}

func (g *gate) Info() recall.EmbedderInfo { return recall.EmbedderInfo{Provider: "gate", Dim: 4} }

func (g *gate) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	g.calls <- ctx
	var err error
	select {
	case <-g.release:
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.mu.Lock()
	g.ended = append(g.ended, err)
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = embedtest.Vector(t, 4)
	}
	return out, nil
}

// waitWaiters waits until n callers wait on the flight for text.
func waitWaiters(t *testing.T, c *queryCache, text string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		f := c.flights[text]
		got := 0
		if f != nil {
			got = f.group.waiters
		}
		c.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never saw %d callers waiting for %q", n, text)
}

func TestQueryCacheSharesSimultaneousEmbeddings(t *testing.T) {
	g := newGate()
	c := WithQueryCache(g, 8, time.Minute).(*queryCache)
	const callers = 8
	var wg sync.WaitGroup
	results := make([][][]float32, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			results[i], errs[i] = c.Embed(context.Background(), recall.InputQuery, []string{"same question"})
		})
	}
	waitWaiters(t, c, "same question", callers)
	close(g.release)
	wg.Wait()
	if n := len(g.calls); n != 1 {
		t.Errorf("inner embedder called %d times for %d simultaneous identical queries, want 1", n, callers)
	}
	for i := range callers {
		if errs[i] != nil || !slices.Equal(results[i][0], embedtest.Vector("same question", 4)) {
			t.Errorf("caller %d: %v, %v", i, results[i], errs[i])
		}
	}
}

func TestQueryCacheOneCallerLeavingDoesNotFailOthers(t *testing.T) {
	g := newGate()
	c := WithQueryCache(g, 8, time.Minute).(*queryCache)
	impatient, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var leftErr, stayedErr error
	wg.Go(func() { _, leftErr = c.Embed(impatient, recall.InputQuery, []string{"q"}) })
	waitWaiters(t, c, "q", 1)
	wg.Go(func() { _, stayedErr = c.Embed(context.Background(), recall.InputQuery, []string{"q"}) })
	waitWaiters(t, c, "q", 2)
	cancel()
	waitWaiters(t, c, "q", 1)
	close(g.release)
	wg.Wait()
	if !errors.Is(leftErr, context.Canceled) {
		t.Errorf("the caller that left got %v, want its cancellation", leftErr)
	}
	if stayedErr != nil {
		t.Errorf("the caller that stayed got %v, want the embedding", stayedErr)
	}
	if len(g.calls) != 1 {
		t.Errorf("inner embedder called %d times, want 1", len(g.calls))
	}
}

func TestQueryCacheCancelsWhenEveryCallerLeaves(t *testing.T) {
	g := newGate()
	c := WithQueryCache(g, 8, time.Minute).(*queryCache)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Embed(ctx, recall.InputQuery, []string{"q"})
		done <- err
	}()
	inner := <-g.calls
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the cancellation", err)
	}
	select {
	case <-inner.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the inner call went on with nobody waiting for it")
	}
	// A later caller starts afresh instead of joining the cancelled call.
	close(g.release)
	if _, err := c.Embed(context.Background(), recall.InputQuery, []string{"q"}); err != nil {
		t.Fatalf("later caller: %v", err)
	}
}
