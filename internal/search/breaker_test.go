package search_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// clock is a time the test moves, for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// heldEmbedder is an embedtest embedder that counts the calls begun (each
// also sent on entered, when it is set) and, while hold is set, keeps
// each call until hold closes or its context ends. Set the fields only
// while no search runs.
type heldEmbedder struct {
	*embedtest.Embedder
	calls   atomic.Int32
	entered chan struct{}
	hold    chan struct{}
	mu      sync.Mutex
	ctxs    []context.Context // the contexts of its calls
}

func (h *heldEmbedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	h.calls.Add(1)
	h.mu.Lock()
	h.ctxs = append(h.ctxs, ctx)
	h.mu.Unlock()
	if h.entered != nil {
		h.entered <- struct{}{}
	}
	if h.hold != nil {
		select {
		case <-h.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Embedder.Embed(ctx, kind, texts)
}

// breakerEngine returns an engine over two documents whose queries emb
// embeds, on the clock clk, and emb's inner embedder, which fails when
// told to.
func breakerEngine(t testing.TB, clk *clock, opt search.Options, emb recall.Embedder) *search.Engine {
	t.Helper()
	st, good := newSpaceStore(t, 16)
	writeDocs(t, st, good, doc("a.md", "the kettle whistles"), doc("b.md", "the lighthouse keeper's log"))
	opt.Embedder, opt.Now = emb, clk.now
	eng := search.New(st, opt)
	if err := eng.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng
}

// hybrid runs a hybrid search for q and returns its answer and how many
// calls it made to h.
func hybrid(t *testing.T, eng *search.Engine, h *heldEmbedder, q string) (recall.SearchResponse, int) {
	t.Helper()
	before := h.calls.Load()
	r, err := eng.Search(context.Background(), recall.SearchRequest{Query: q})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	if len(r.Results) == 0 {
		t.Errorf("search %q found nothing; want the text holding it", q)
	}
	return r, int(h.calls.Load() - before)
}

// TestBreakerTripsAndProbes: after a query could not be embedded, hybrid
// searches go to full text without calling the embedder, saying when it
// failed and when it is tried again, and semantic ones fail at once; the
// reason stays with the operator. After the wait one search tries it; a
// failure doubles the wait up to a minute, a success ends the outage, and
// the next outage starts again from 5 s.
func TestBreakerTripsAndProbes(t *testing.T) {
	clk := newClock()
	h := &heldEmbedder{Embedder: embedtest.New(16)}
	h.FailOn(0, embedtest.FaultError)
	eng := breakerEngine(t, clk, search.Options{}, h)

	first, calls := hybrid(t, eng, h, "kettle")
	if calls != 1 || first.Mode != recall.ModeLexical || first.Note != "the query could not be embedded; searched full text only" || first.EmbedError == nil {
		t.Fatalf("first failure: %d calls, mode %s, note %q, embed error %v", calls, first.Mode, first.Note, first.EmbedError)
	}
	clk.add(3 * time.Second)
	r, calls := hybrid(t, eng, h, "lighthouse")
	if want := "the query embedder failed 3s ago and is tried again in 2s; searched full text only"; calls != 0 || r.Mode != recall.ModeLexical || r.Note != want {
		t.Errorf("in the wait: %d calls, mode %s, note %q; want none, lexical, %q", calls, r.Mode, r.Note, want)
	}
	// The same reason as the failure's: the server logs it and the
	// command says it once, not once a search.
	if r.EmbedError == nil || r.EmbedError.Error() != first.EmbedError.Error() {
		t.Errorf("in the wait: embed error %v; want the failure's, %v", r.EmbedError, first.EmbedError)
	}
	_, err := eng.Search(context.Background(), recall.SearchRequest{Query: "kettle", Mode: recall.ModeSemantic})
	if want := "the query embedder failed 3s ago and is tried again in 2s"; recall.ErrorCode(err) != recall.EUNAVAILABLE || recall.ErrorMessage(err) != want ||
		!strings.Contains(err.Error(), "injected failure") || h.calls.Load() != 1 {
		t.Errorf("semantic in the wait: %v (%d calls in all); want %q, unavailable, with the reason for the operator, and no call", err, h.calls.Load(), want)
	}

	clk.add(2 * time.Second)
	if _, calls := hybrid(t, eng, h, "kettle"); calls != 1 {
		t.Fatalf("after the wait: %d calls; want one probe", calls)
	}
	for _, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
		clk.add(wait - time.Second)
		r, calls := hybrid(t, eng, h, "kettle")
		if calls != 0 || !strings.HasSuffix(r.Note, "tried again in 1s; searched full text only") {
			t.Errorf("%s into a wait of %s: %d calls, note %q; want none, and that it is tried again in 1s", wait-time.Second, wait, calls, r.Note)
		}
		clk.add(time.Second)
		if _, calls := hybrid(t, eng, h, "kettle"); calls != 1 {
			t.Errorf("after a wait of %s: %d calls; want one probe", wait, calls)
		}
	}

	h.FailOn(0, 0) // the embedder is back
	clk.add(time.Minute)
	for i := range 2 {
		r, calls := hybrid(t, eng, h, "kettle")
		if calls != 1 || r.Mode != recall.ModeHybrid || r.Note != "" || r.EmbedError != nil {
			t.Errorf("search %d once the embedder is back: %d calls, mode %s, note %q, embed error %v; want it embedded", i+1, calls, r.Mode, r.Note, r.EmbedError)
		}
	}
	h.FailOn(0, embedtest.FaultError)
	hybrid(t, eng, h, "kettle")
	clk.add(4 * time.Second)
	if r, _ := hybrid(t, eng, h, "kettle"); !strings.HasSuffix(r.Note, "failed 4s ago and is tried again in 1s; searched full text only") {
		t.Errorf("a new outage: note %q; want a wait of 5s again", r.Note)
	}
}

// TestBreakerTripsOnUnusableVectors: a vector no search can use (NaN, or
// of another dimension than the space's) would come for every query:
// searches leave the embedder alone as when it errs.
func TestBreakerTripsOnUnusableVectors(t *testing.T) {
	for _, f := range []embedtest.Fault{embedtest.FaultError, embedtest.FaultNaN, embedtest.FaultWrongDim} {
		h := &heldEmbedder{Embedder: embedtest.New(16)}
		h.FailOn(0, f)
		eng := breakerEngine(t, newClock(), search.Options{}, h)
		hybrid(t, eng, h, "kettle")
		if r, calls := hybrid(t, eng, h, "kettle"); calls != 0 || r.Mode != recall.ModeLexical || r.EmbedError == nil {
			t.Errorf("fault %d: the next search made %d calls, mode %s, embed error %v; want none, lexical, and the reason", f, calls, r.Mode, r.EmbedError)
		}
	}
}

// TestBreakerOneProbe: while one search tries the embedder again, the
// others go on without it rather than pile up on an embedder that may
// still hang; the probe's vector ends the outage.
func TestBreakerOneProbe(t *testing.T) {
	clk := newClock()
	h := &heldEmbedder{Embedder: embedtest.New(16)}
	h.FailOn(1, embedtest.FaultError)
	eng := breakerEngine(t, clk, search.Options{EmbedBudget: time.Minute}, h)
	hybrid(t, eng, h, "kettle")

	clk.add(5 * time.Second)
	h.entered, h.hold = make(chan struct{}, 1), make(chan struct{})
	probe := make(chan recall.SearchResponse)
	go func() {
		r, _ := eng.Search(context.Background(), recall.SearchRequest{Query: "kettle"})
		probe <- r
	}()
	<-h.entered
	clk.add(2 * time.Second)
	r, err := eng.Search(context.Background(), recall.SearchRequest{Query: "lighthouse"})
	if want := "the query embedder failed 7s ago and is being tried again; searched full text only"; err != nil || h.calls.Load() != 2 || r.Note != want {
		t.Errorf("during the probe: %d calls in all, note %q, %v; want 2 and %q", h.calls.Load(), r.Note, err, want)
	}
	close(h.hold)
	if r := <-probe; r.Mode != recall.ModeHybrid {
		t.Errorf("the probe answered as %s (%q); want hybrid", r.Mode, r.Note)
	}
	h.entered, h.hold = nil, nil
	if r, calls := hybrid(t, eng, h, "lighthouse"); calls != 1 || r.Mode != recall.ModeHybrid {
		t.Errorf("after the probe's success: %d calls, mode %s; want the embedder asked", calls, r.Mode)
	}
}

// TestBreakerTripsForCallersThatLeaveFirst: a client whose own deadline
// is shorter than the embed budget leaves before a hanging embedder is
// given up on; the embedding goes on to its budget and opens the breaker
// all the same, so the next search answers from full text at once. (The
// caller leaving told nothing of the embedder, so such clients never
// found it out and every search of theirs waited out its deadline.)
func TestBreakerTripsForCallersThatLeaveFirst(t *testing.T) {
	h := &heldEmbedder{Embedder: embedtest.New(16), hold: make(chan struct{})} // answers nothing until its context ends
	eng := breakerEngine(t, newClock(), search.Options{EmbedBudget: 300 * time.Millisecond}, h)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	eng.Search(ctx, recall.SearchRequest{Query: "kettle"})
	cancel()
	eng.WaitQueryEmbeddings()
	r, err := eng.Search(context.Background(), recall.SearchRequest{Query: "kettle"})
	if want := "the query embedder failed less than a second ago and is tried again in 5s; searched full text only"; err != nil || r.Mode != recall.ModeLexical || r.Note != want || len(r.Results) == 0 || h.calls.Load() != 1 {
		t.Fatalf("after the embed budget: %d calls in all, mode %s, note %q, %d results, %v; want 1, lexical, %q, and the text", h.calls.Load(), r.Mode, r.Note, len(r.Results), err, want)
	}
	if r.EmbedError == nil || r.EmbedError.Error() != "the embedder did not answer within 300ms" {
		t.Errorf("embed error %v; want the budget's", r.EmbedError)
	}
}

// expiring is a context whose deadline passes when expire is called: its
// Err is context.DeadlineExceeded, as a caller's deadline ends it.
type expiring struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiring() *expiring {
	return &expiring{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiring) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *expiring) Done() <-chan struct{} { return c.done }
func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestBreakerHearsEmbeddingsCallersLeft: searches of one query share one
// embedding, which goes on when its callers' deadlines pass, and what it
// brings serves later searches: its vector lands in the query cache, and
// a probe's vector ends the outage although the probe's caller left. A
// search whose own budget runs out tells of the embedder too.
func TestBreakerHearsEmbeddingsCallersLeft(t *testing.T) {
	clk := newClock()
	h := &heldEmbedder{Embedder: embedtest.New(16)}
	eng := breakerEngine(t, clk, search.Options{EmbedBudget: time.Minute}, embed.WithQueryCache(h, 8, time.Hour))
	leave := func(q string) {
		t.Helper()
		h.entered, h.hold = make(chan struct{}, 1), make(chan struct{})
		ctx := newExpiring()
		cancel := ctx.expire
		done := make(chan struct{})
		go func() {
			defer close(done)
			eng.Search(ctx, recall.SearchRequest{Query: q})
		}()
		<-h.entered
		cancel()
		<-done
		// A caller of the same query who has already left joins the
		// embedding in flight rather than ask again.
		eng.Search(ctx, recall.SearchRequest{Query: q})
		close(h.hold)
		eng.WaitQueryEmbeddings()
		h.entered, h.hold = nil, nil
	}
	leave("kettle")
	if h.calls.Load() != 1 {
		t.Errorf("two callers of one query made %d calls; want 1", h.calls.Load())
	}
	h.FailOn(0, embedtest.FaultError)
	if r, calls := hybrid(t, eng, h, "kettle"); calls != 0 || r.Mode != recall.ModeHybrid {
		t.Errorf("after the callers left: %d calls, mode %s; want the vector they left in the cache", calls, r.Mode)
	}
	hybrid(t, eng, h, "lighthouse") // the outage
	h.FailOn(0, 0)
	clk.add(5 * time.Second)
	leave("lighthouse") // the probe's caller
	if r, calls := hybrid(t, eng, h, "the lighthouse"); calls != 1 || r.Mode != recall.ModeHybrid {
		t.Errorf("after a probe whose caller left found the embedder back: %d calls, mode %s (%q); want the embedder asked", calls, r.Mode, r.Note)
	}

	// The search's own budget, shorter here than the embedding's; long
	// enough for full text on a busy machine under -race (the search after
	// it answers within it too: at 200 ms it could not).
	h2 := &heldEmbedder{Embedder: embedtest.New(16), hold: make(chan struct{})}
	eng2 := breakerEngine(t, newClock(), search.Options{Budget: 2 * time.Second, EmbedBudget: time.Minute}, h2)
	eng2.Search(context.Background(), recall.SearchRequest{Query: "kettle"})
	eng2.WaitQueryEmbeddings()
	r, err := eng2.Search(context.Background(), recall.SearchRequest{Query: "kettle"})
	if err != nil || h2.calls.Load() != 1 || r.EmbedError == nil || r.EmbedError.Error() != "the embedder did not answer within the search's time (2s)" {
		t.Errorf("after a search's budget ran out: %d calls in all, embed error %v, %v; want 1, and that the embedder did not answer in the search's time", h2.calls.Load(), r.EmbedError, err)
	}
}

// TestEmbeddingStopsWhenCallersGoAway: a query's embedding whose every
// caller went away (their contexts cancelled: a client that closed its
// connection or cancelled its call) is cancelled at once, and tells the
// breaker nothing; one caller still waiting keeps it going.
func TestEmbeddingStopsWhenCallersGoAway(t *testing.T) {
	clk := newClock()
	h := &heldEmbedder{Embedder: embedtest.New(16)}
	eng := breakerEngine(t, clk, search.Options{EmbedBudget: time.Hour, Budget: time.Hour}, h)
	h.entered, h.hold = make(chan struct{}, 1), make(chan struct{})
	start := func(ctx context.Context) chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle", Mode: recall.ModeSemantic})
			errc <- err
		}()
		return errc
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := start(ctx1)
	<-h.entered
	joined := make(chan struct{}, 1)
	eng.OnFlightJoined(func() { joined <- struct{}{} })
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := start(ctx2)
	<-joined
	cancel1()
	if err := <-first; err == nil {
		t.Error("a search whose caller went away answered; want an error")
	}
	// The second caller still waits: the embedding goes on for it.
	h.mu.Lock()
	call := h.ctxs[0]
	h.mu.Unlock()
	if err := call.Err(); err != nil {
		t.Fatalf("the embedding ended (%v) while a caller still waited for it", err)
	}
	cancel2()
	<-second
	// Cancelled before the last caller's Search returned.
	if err := call.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the embedder's call's context: %v once every caller went away; want it cancelled", err)
	}
	close(h.hold)
	eng.WaitQueryEmbeddings()
	if h.calls.Load() != 1 {
		t.Errorf("%d embedder calls; want the one both callers shared", h.calls.Load())
	}
	// No news of the embedder: the next search asks it at once.
	h.entered, h.hold = nil, nil
	if r, calls := hybrid(t, eng, h, "kettle"); calls != 1 || r.Mode != recall.ModeHybrid {
		t.Errorf("after the callers went away: %d calls, mode %s (%q); want the embedder asked", calls, r.Mode, r.Note)
	}
}

// TestBreakerUsesCachedVectors: a query the cache holds a vector for is
// searched with it while the embedder is left alone.
func TestBreakerUsesCachedVectors(t *testing.T) {
	h := &heldEmbedder{Embedder: embedtest.New(16)}
	eng := breakerEngine(t, newClock(), search.Options{}, embed.WithQueryCache(h, 8, time.Hour))
	hybrid(t, eng, h, "kettle")
	h.FailOn(0, embedtest.FaultError)
	hybrid(t, eng, h, "lighthouse")
	for q, mode := range map[string]string{"kettle": recall.ModeHybrid, "lighthouse": recall.ModeLexical} {
		if r, calls := hybrid(t, eng, h, q); calls != 0 || r.Mode != mode {
			t.Errorf("%q in the wait: %d calls, mode %s; want none, and %s", q, calls, r.Mode, mode)
		}
	}
}

// TestBreakerResetsOnSwitch: a switch of the read space brings another
// query embedder, which searches ask at once whatever the last one did.
func TestBreakerResetsOnSwitch(t *testing.T) {
	ctx := context.Background()
	st, other := openTwice(t, sqlite.Options{})
	fillSpace(t, st, "t", 16)
	a := doc("a.md", "the kettle whistles")
	writeDocs(t, st, embedtest.New(16), a)
	down := &heldEmbedder{Embedder: embedtest.New(16)}
	down.FailOn(0, embedtest.FaultError)
	next := &heldEmbedder{Embedder: embedtest.New(24)}
	eng := search.New(st, search.Options{Embedder: down, MemoryLexical: true, Now: newClock().now,
		SpaceEmbedder: func(context.Context, recall.VectorSpace) (recall.Embedder, error) { return next, nil }})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	hybrid(t, eng, down, "kettle")
	if _, calls := hybrid(t, eng, down, "kettle"); calls != 0 {
		t.Fatalf("in the wait: %d calls; want none", calls)
	}
	fillSpace(t, other, "u", 24, a)
	if err := other.UseSpace(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if f := follow(t, eng); f.Switched != "u" {
		t.Fatalf("Follow = %+v; want a switch to u", f)
	}
	if r, calls := hybrid(t, eng, next, "kettle"); calls != 1 || r.Mode != recall.ModeHybrid {
		t.Errorf("after the switch: %d calls to the new space's embedder, mode %s (%q); want it asked", calls, r.Mode, r.Note)
	}
}

// TestBreakerClosedByVectorsMade: vectors of the read space written
// through the engine (a save, a sweep, a repair in this process) were made
// by its embedder, so it answers again: the next search embeds its query
// rather than wait out the breaker. Vectors of another space say nothing
// of it. (A memory repaired by the server was searched by text only for up
// to a minute after.)
func TestBreakerClosedByVectorsMade(t *testing.T) {
	clk := newClock()
	h := &heldEmbedder{Embedder: embedtest.New(16)}
	h.FailOn(0, embedtest.FaultError)
	eng := breakerEngine(t, clk, search.Options{}, h)
	hybrid(t, eng, h, "kettle")
	h.FailOn(0, 0)

	info := h.Info()
	if _, err := eng.Store().CreateSpace(context.Background(), recall.VectorSpace{Name: "elsewhere", Provider: info.Provider, Model: info.Model, Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	other := doc("c.md", "the ferry timetable")
	if _, err := eng.Write(context.Background(), []recall.Document{other},
		[]recall.Vector{{Space: "elsewhere", Key: other.Chunks[0].Hash, Vec: embedtest.Vector("the ferry timetable", 16)}}); err != nil {
		t.Fatal(err)
	}
	if r, calls := hybrid(t, eng, h, "kettle"); calls != 0 || r.Mode != recall.ModeLexical {
		t.Errorf("after another space's vectors: %d calls, mode %s; want the breaker still open", calls, r.Mode)
	}
	writeDocs(t, eng, h.Embedder, doc("d.md", "the lighthouse lamp"))
	if r, calls := hybrid(t, eng, h, "lighthouse"); calls != 1 || r.Mode != recall.ModeHybrid {
		t.Errorf("after the read space's vectors were made: %d calls, mode %s (%q); want the query embedded", calls, r.Mode, r.Note)
	}
}

// TestSearchAnswersBeforeTheCallersDeadline: a caller whose deadline is
// shorter than the embed budget gets full text, with the fallback's mode
// and a note saying the embedder did not answer in time, while the
// embedder hangs; waiting for the embedding to its deadline left the
// search nothing but the context's error. A semantic search, which has no
// fallback, fails saying so. The embedding goes on without them and its
// vector, when it comes, serves the next search from the query cache.
//
// The deadline is generous: only the held embedder is meant to miss it,
// and full text, which runs beside the embedding, has all of it (at
// 400 ms a busy machine's full text under -race could miss it too). The
// four searches run at once, so that the test waits for it once.
func TestSearchAnswersBeforeTheCallersDeadline(t *testing.T) {
	const deadline = 4 * time.Second
	type run struct {
		h   *heldEmbedder
		eng *search.Engine
	}
	var runs []run
	var wg sync.WaitGroup
	for _, memory := range []bool{false, true} {
		h := &heldEmbedder{Embedder: embedtest.New(16), hold: make(chan struct{})} // answers nothing until hold closes
		eng := breakerEngine(t, newClock(), search.Options{EmbedBudget: time.Minute, MemoryLexical: memory}, embed.WithQueryCache(h, 8, time.Hour))
		runs = append(runs, run{h, eng})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			r, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle"})
			if want := "the query embedder did not answer in time; searched full text only"; err != nil || r.Mode != recall.ModeLexical || r.Note != want || len(r.Results) != 1 || r.Results[0].Source != "a.md" {
				t.Errorf("in-memory full text %v: hybrid with a deadline: mode %s, note %q, %d results, %v; want lexical, %q, and a.md", memory, r.Mode, r.Note, len(r.Results), err, want)
			} else if r.EmbedError == nil || !strings.Contains(r.EmbedError.Error(), "before the caller's deadline") {
				t.Errorf("in-memory full text %v: embed error %v; want that the caller's deadline came near", memory, r.EmbedError)
			}
		})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			_, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle", Mode: recall.ModeSemantic})
			if want := "semantic search is unavailable: the query embedder did not answer in time"; recall.ErrorCode(err) != recall.EUNAVAILABLE || recall.ErrorMessage(err) != want {
				t.Errorf("in-memory full text %v: semantic with a deadline: %v (%s); want %s, %q", memory, err, recall.ErrorCode(err), recall.EUNAVAILABLE, want)
			}
		})
	}
	wg.Wait()
	for _, r := range runs {
		close(r.h.hold)
		r.eng.WaitQueryEmbeddings()
		if got, calls := hybrid(t, r.eng, r.h, "kettle"); calls != 0 || got.Mode != recall.ModeHybrid || r.h.calls.Load() != 1 {
			t.Errorf("after the embedding came: %d calls in all, %d now, mode %s (%q); want one embedding for the three searches, its vector cached", r.h.calls.Load(), calls, got.Mode, got.Note)
		}
	}
}

// BenchmarkSearchPastAHangingEmbedder: hybrid searches with a 500 ms
// deadline while the embedder hangs (a fresh query each, and budgets that
// outlast the run, so that neither the query cache nor the breaker
// answers), from the store's full text and the in-memory index; failed/op
// counts the searches that ended in an error rather than full text.
//
//	go test -run '^$' -bench SearchPastAHangingEmbedder -benchtime 20x ./internal/search/
func BenchmarkSearchPastAHangingEmbedder(b *testing.B) {
	for _, memory := range []bool{false, true} {
		b.Run(map[bool]string{false: "store", true: "memory"}[memory], func(b *testing.B) {
			h := &heldEmbedder{Embedder: embedtest.New(16), hold: make(chan struct{})}
			eng := breakerEngine(b, newClock(), search.Options{Budget: time.Hour, EmbedBudget: time.Hour, MemoryLexical: memory}, h)
			failed := 0
			b.ResetTimer()
			for i := range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				r, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle " + strconv.Itoa(i)})
				cancel()
				if err != nil || len(r.Results) == 0 {
					failed++
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(failed)/float64(b.N), "failed/op")
			close(h.hold)
			eng.WaitQueryEmbeddings()
		})
	}
}

// deeperBlocks is a store whose full text, asked for more than limit
// candidates (a deeper pass), answers only when its context ends.
type deeperBlocks struct {
	*sqlite.DB
	limit int
}

func (d deeperBlocks) Lexical(ctx context.Context, q recall.LexicalQuery) ([]recall.Candidate, error) {
	if q.Limit > d.limit {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.DB.Lexical(ctx, q)
}

// TestLateSearchGoesNoDeeper: a search that stopped waiting for the
// embedder to answer before its deadline answers with the page it has
// rather than read deeper for a page the per-source cap left short: a
// deeper pass took the time kept for answering, and its running out made
// the whole search fail.
func TestLateSearchGoesNoDeeper(t *testing.T) {
	st, good := newSpaceStore(t, 16)
	big := doc("big.md", "kayak")
	big.Chunks = nil
	for i := range 60 {
		text := fmt.Sprintf("day %d: kayak kayak paddle kayak", i)
		big.Chunks = append(big.Chunks, recall.Chunk{Index: i, Text: text, Hash: recall.TextHash(text)})
	}
	big.Source.ChunkCount = len(big.Chunks)
	writeDocs(t, st, good, big, doc("small.md", "we once saw a kayak on the lake, among many other boats and birds and trees"))
	h := &heldEmbedder{Embedder: embedtest.New(16), hold: make(chan struct{})}
	defer close(h.hold)
	// Hybrid's first pass asks full text for 40 candidates at a page of 5,
	// one a source; the deeper one for 160.
	eng := search.New(deeperBlocks{st, 40}, search.Options{Embedder: h, EmbedBudget: time.Minute})
	if err := eng.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A generous deadline: the held embedder is to miss it, and the first
	// pass, which runs beside the embedding, is not (at 400 ms a busy
	// machine's full text under -race could miss it too).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	r, err := eng.Search(ctx, recall.SearchRequest{Query: "kayak", Limit: 5, PerSource: 1})
	if err != nil || r.Mode != recall.ModeLexical || len(r.Results) != 1 || r.Results[0].Source != "big.md" {
		t.Fatalf("mode %s, %d results, %v; want lexical, the first pass's page (big.md)", r.Mode, len(r.Results), err)
	}
}

// TestSemanticSearchWhoseCallerLeaves: a semantic search whose caller
// leaves while its query is embedded (an MCP client's
// notifications/cancelled) ends as canceled, not as an embedder that
// could not embed the query: metrics and the audit log counted each such
// call as "unavailable". The embedder is not held at fault for it.
func TestSemanticSearchWhoseCallerLeaves(t *testing.T) {
	h := &heldEmbedder{Embedder: embedtest.New(16), entered: make(chan struct{}, 1), hold: make(chan struct{})}
	eng := breakerEngine(t, newClock(), search.Options{EmbedBudget: time.Minute}, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := eng.Search(ctx, recall.SearchRequest{Query: "kettle", Mode: recall.ModeSemantic})
		done <- err
	}()
	<-h.entered
	cancel()
	err := <-done
	if code := recall.ErrorCode(err); code != recall.ECANCELED {
		t.Errorf("semantic search whose caller left: code %s (%v), want %s", code, err, recall.ECANCELED)
	}
	close(h.hold)
	eng.WaitQueryEmbeddings()
	h.entered, h.hold = nil, nil
	r, err := eng.Search(context.Background(), recall.SearchRequest{Query: "kettle", Mode: recall.ModeSemantic})
	if err != nil || len(r.Results) == 0 {
		t.Errorf("the next semantic search: %v, %d results; want the text", err, len(r.Results))
	}
}
