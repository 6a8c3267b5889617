package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// While the embedder fails, background repair backs off (5 s, then longer),
// and writes that would wake it early (every /ingest) do not cut that short.
func TestBackgroundBackoffHoldsUnderIngest(t *testing.T) {
	f := newFixture(t, nil)
	emb := embedtest.New(64)
	emb.FailOn(0, embedtest.FaultError)
	doc := recall.Document{Source: recall.Source{ID: "b.md", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash("x"), ChunkCount: 1, IndexState: recall.IndexOK},
		Chunks: []recall.Chunk{{Index: 0, Text: "a text without a vector", Header: "t", Hash: recall.TextHash("a text without a vector")}}}
	if _, err := f.eng.Write(context.Background(), []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	b := newBackground(f.eng, f.st, emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, 256, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go b.run(ctx)
	for ctx.Err() == nil { // an /ingest every 20 ms
		b.nudge()
		time.Sleep(20 * time.Millisecond)
	}
	if n := emb.Calls(); n > 3 {
		t.Fatalf("a failing embedder was called %d times in 1 s despite the 5 s backoff", n)
	}
}

// A --vault sweep that finds another process sweeping the vault skips the
// round, writes nothing and records no sweep, logs that once (naming the
// holder) however many rounds it skips, and sweeps once the vault is free.
func TestBackgroundSweepSkipsAVaultBeingSwept(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	vault := t.TempDir()
	if err := os.WriteFile(filepath.Join(vault, "a.md"), []byte("**User:** ferns?\n\n**Assistant:** repot them in spring.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(vault)
	var logs syncBuffer
	b := newBackground(f.eng, f.st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(&logs, nil)), time.Now, 256, 0)
	b.sweepEvery = 10 * time.Minute
	skips := func() int { return strings.Count(logs.String(), "sweep skipped") }

	for round := range 2 {
		unlock, err := f.st.LockVault(ctx, abs, nil) // another sweep of the vault
		if err != nil {
			t.Fatal(err)
		}
		b.sweep(ctx, vault)
		b.sweep(ctx, vault)
		if n := skips(); n != round+1 {
			t.Fatalf("round %d: %d skip lines; want one per stretch of skipped rounds:\n%s", round, n, logs.String())
		}
		if !strings.Contains(logs.String(), fmt.Sprintf("process %d on ", os.Getpid())) || !strings.Contains(logs.String(), "next_try=\"in 10m0s\"") {
			t.Fatalf("the skip does not say who holds the vault and when it is tried again:\n%s", logs.String())
		}
		if round == 0 {
			if m, err := f.st.Manifest(ctx, recall.KindArchive, abs); err != nil || len(m) != 0 {
				t.Fatalf("a skipped sweep wrote %v (%v)", m, err)
			}
			if st, err := f.st.Stats(ctx); err != nil || st.LastSweep != nil {
				t.Fatalf("a skipped sweep was recorded: %+v (%v)", st.LastSweep, err)
			}
		}
		unlock()
		b.sweep(ctx, vault)
		if m, err := f.st.Manifest(ctx, recall.KindArchive, abs); err != nil || len(m) != 1 {
			t.Fatalf("round %d: the sweep after the vault was freed stored %v (%v)", round, m, err)
		}
	}
}

// After an upgrade, a file an older recall swept that fails on its
// re-read keeps its older source, so every round of --vault sweeps reads
// it again: the server says it reads files differently once, not every
// round, and again when a file it had not said so of is read again.
func TestBackgroundSweepSaysARereadOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	vault := t.TempDir()
	abs, err := ingest.VaultPath(vault)
	if err != nil {
		t.Fatal(err)
	}
	sweptBefore := func(rel string) { // by an older recall; it fails to read now
		t.Helper()
		p := filepath.Join(vault, rel)
		if err := os.WriteFile(p, []byte("\x00 not text"), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		text := "what the older reading made of " + rel
		doc := recall.Document{Source: recall.Source{ID: rel, Kind: recall.KindArchive, Vault: abs, Title: rel,
			ContentHash: recall.TextHash(text), Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Reading: ingest.ReadingVersion - 1},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}
		if _, err := f.eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	b := newBackground(f.eng, f.st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(&logs, nil)), time.Now, 256, 0)
	b.sweepEvery = 10 * time.Minute
	said := func() int { return strings.Count(logs.String(), "reads some files differently") }

	sweptBefore("a.md")
	for round := range 3 {
		b.sweep(ctx, vault)
		if n := said(); n != 1 {
			t.Fatalf("round %d: said %d times; want once:\n%s", round+1, n, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "files_failed=1") {
		t.Fatalf("a.md did not fail its re-read, as the test needs:\n%s", logs.String())
	}
	sweptBefore("b.md")
	for round := range 2 {
		b.sweep(ctx, vault)
		if n := said(); n != 2 || !strings.Contains(logs.String(), "files=2") {
			t.Fatalf("round %d after b.md: said %d times; want once more, for both files:\n%s", round+1, n, logs.String())
		}
	}
}

// The wait between looks for other processes' writes stretches with what a
// look that found nothing cost, never with the work of applying what one
// found: after catching up with a large sweep, the next change is found at
// the usual pace.
func TestFollowWaitStretchesWithLooksOnly(t *testing.T) {
	every := 2 * time.Second
	for _, c := range []struct {
		took time.Duration
		f    search.Followed
		want time.Duration
	}{
		{10 * time.Millisecond, search.Followed{}, every},
		{500 * time.Millisecond, search.Followed{}, 10 * time.Second},
		{3 * time.Second, search.Followed{Added: 38381}, every},
		{3 * time.Second, search.Followed{Removed: 1}, every},
		{3 * time.Second, search.Followed{Switched: "next"}, every},
	} {
		if got := followWait(every, c.took, c.f); got != c.want {
			t.Errorf("after a look of %s finding %+v: wait %s, want %s", c.took, c.f, got, c.want)
		}
	}
}

// flakySpaces fails its store's first Spaces call, as a dropped connection
// or an I/O error would.
type flakySpaces struct {
	recall.Store
	calls atomic.Int64
}

func (s *flakySpaces) Spaces(ctx context.Context) ([]recall.VectorSpace, error) {
	if s.calls.Add(1) == 1 {
		return nil, errors.New("disk I/O error")
	}
	return s.Store.Spaces(ctx)
}

// An index load that fails at start-up is tried again: one passing error
// does not leave a server without semantic search until it restarts.
func TestIndexLoadIsRetried(t *testing.T) {
	f := newFixture(t, nil)
	st := &flakySpaces{Store: f.st}
	eng := search.New(st, search.Options{Embedder: f.emb, MemoryLexical: true})
	b := newBackground(eng, st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, 256, 0)
	b.loadRetry = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); b.wg.Wait() }()
	go b.run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for b.index().State != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("index state %q after a failed first load (Spaces called %d times); want it loaded again", b.index().State, st.calls.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// switchFixture is a database opened twice, by a server and by another
// process that switches its read space (`recall space use`), holding one
// chunk text without a vector, and the server's engine. The engine
// follows a switch with a fresh embedtest model of the space's size, sent
// on made.
type switchFixture struct {
	st, other *sqlite.DB
	eng       *search.Engine
	made      chan *embedtest.Embedder
}

// newSwitchFixture makes the fixture. With old, the database starts with
// its space (testSpace) as the read space and the engine embeds queries
// with it; without, the database has no space and the engine runs on
// full text.
func newSwitchFixture(t *testing.T, old *embedtest.Embedder) *switchFixture {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	f := &switchFixture{made: make(chan *embedtest.Embedder, 4)}
	for _, h := range []**sqlite.DB{&f.st, &f.other} {
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		*h = db
	}
	opt := search.Options{MemoryLexical: true,
		SpaceEmbedder: func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error) {
			e := embedtest.New(sp.Dim)
			f.made <- e
			return e, nil
		}}
	if old != nil {
		opt.Embedder = old
		if _, err := f.st.CreateSpace(ctx, recall.VectorSpace{Name: testSpace, Provider: "embedtest", Model: "word-hash", Dim: 64, Normalized: true}); err != nil {
			t.Fatal(err)
		}
	}
	f.eng = search.New(f.st, opt)
	if err := f.eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	text := "a text without a vector"
	doc := recall.Document{Source: recall.Source{ID: "b.md", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash("x"), ChunkCount: 1, IndexState: recall.IndexPending},
		Chunks: []recall.Chunk{{Index: 0, Text: text, Header: "t", Hash: recall.TextHash(text)}}}
	if _, err := f.eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// use makes the other process create space name (24 dimensions) and make
// it the read space.
func (f *switchFixture) use(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.other.CreateSpace(ctx, recall.VectorSpace{Name: name, Provider: "embedtest", Model: "word-hash", Dim: 24, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.other.UseSpace(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// missing counts the texts without a vector in space, as the other
// process sees them.
func (f *switchFixture) missing(t *testing.T, space string) int {
	t.Helper()
	stats, err := f.other.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats.Spaces {
		if s.Name == space {
			return s.Missing
		}
	}
	t.Fatalf("no space %s", space)
	return 0
}

// start runs the fixture's background work, with emb writing into space,
// until the test ends.
func (f *switchFixture) start(t *testing.T, emb recall.Embedder, space string, log logger) *background {
	b := newBackground(f.eng, f.st, emb, space, newMetrics(), log, time.Now, 256, 0)
	b.followEvery = 10 * time.Millisecond
	b.repairRetry = 5 * time.Minute // a backoff far longer than a test may take
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); b.wg.Wait() })
	b.wg.Add(1)
	go func() { defer b.wg.Done(); b.run(ctx) }()
	return b
}

// When another process makes a new space the read space (`recall space
// use`) while background repair is stuck on the old space's model, failing
// and backing off, or waiting on a call that does not answer, repair moves
// to the new space at once: its missing vectors are embedded with its model
// without waiting out the old model's backoff (up to 5 min) or its call.
func TestBackgroundRepairFollowsASwitchAtOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		stuck func(*embedtest.Embedder)
		state string // the repair state that shows repair is stuck
	}{
		{"backing off", func(e *embedtest.Embedder) { e.FailOn(0, embedtest.FaultError) }, "retrying"},
		{"waiting on a call", func(e *embedtest.Embedder) { e.Delay = time.Hour }, "running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := embedtest.New(64)
			c.stuck(old)
			f := newSwitchFixture(t, old)
			b := f.start(t, old, testSpace, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if !until(func() bool { return old.Calls() > 0 && b.repairState().State == c.state }) {
				t.Fatalf("repair state %+v; want %s on the old model", b.repairState(), c.state)
			}

			f.use(t, "u")
			if !until(func() bool { return f.missing(t, "u") == 0 }) {
				t.Fatalf("space u still misses %d vectors 30 s after it became the read space; repair state %+v", f.missing(t, "u"), b.repairState())
			}
			if e := <-f.made; e.Texts() == 0 {
				t.Errorf("the new space's model embedded nothing")
			}
			if r := b.repairState(); r.Space != "u" {
				t.Errorf("repair state %+v; want space u", r)
			}
		})
	}
}

// A server started without a model to embed with (embedder none, the
// model missing, no read space yet) has background repair off. When
// another process makes a read space whose model the server can load,
// the server moves to it and its background repair starts: the space's
// missing vectors are embedded, and the repair state says so.
func TestBackgroundRepairStartsWhenAModelArrives(t *testing.T) {
	for _, c := range []struct {
		name string
		old  *embedtest.Embedder // the engine's query model at start (the server itself has none)
	}{
		{"no read space at start", nil},
		{"a read space without its model at start", embedtest.New(64)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newSwitchFixture(t, c.old)
			b := f.start(t, nil, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
			if !until(func() bool { return b.index().State == "ready" }) {
				t.Fatalf("index state %+v", b.index())
			}
			if r := b.repairState(); r.State != "off" {
				t.Fatalf("repair state %+v at start without a model; want off", r)
			}

			f.use(t, "u")
			if !until(func() bool { return b.repairState().State == "idle" }) {
				t.Fatalf("repair state %+v 30 s after space u became the read space; want idle", b.repairState())
			}
			if r := b.repairState(); r.Space != "u" || r.Embedded != 1 || f.missing(t, "u") != 0 {
				t.Errorf("repair state %+v, %d texts missing in space u; want space u, 1 text embedded, none missing", r, f.missing(t, "u"))
			}
		})
	}
}

// censusCounter counts its store's Census calls: one per look of Follow.
type censusCounter struct {
	recall.Store
	looks atomic.Int64
}

func (s *censusCounter) Census(ctx context.Context, space string) (recall.Census, error) {
	s.looks.Add(1)
	return s.Store.Census(ctx, space)
}

// A server without a model whose read space another process moves to one
// whose model it cannot load either stays quiet: it says so once, does not
// ask for the model again until the read space changes, and its repair
// stays off however often new writes wake it.
func TestBackgroundWithoutAModelStaysQuiet(t *testing.T) {
	f := newSwitchFixture(t, nil)
	counted := &censusCounter{Store: f.st}
	f.eng = search.New(counted, search.Options{MemoryLexical: true,
		SpaceEmbedder: func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error) {
			f.made <- nil
			return nil, recall.Errorf(recall.EUNAVAILABLE, "model %s is not installed", sp.Model)
		}})
	var logs syncBuffer
	b := f.start(t, nil, "", slog.New(slog.NewTextHandler(&logs, nil)))
	if !until(func() bool { return b.index().State == "ready" }) {
		t.Fatalf("index state %+v", b.index())
	}
	f.use(t, "u")
	<-f.made
	after := counted.looks.Load()
	for counted.looks.Load() < after+20 { // 20 more looks, each with a nudge as /ingest gives
		b.nudge()
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(f.made); n != 0 {
		t.Errorf("the model of space u was asked for %d more times", n)
	}
	if r := b.repairState(); r.State != "off" || r.LastRun != "" || r.LastError != "" {
		t.Errorf("repair state %+v; want off, never run", r)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	warns := 0
	for _, l := range lines {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			warns++
		}
	}
	if warns != 1 || !strings.Contains(logs.String(), "cannot be used here") {
		t.Errorf("%d warnings; want the one saying space u's model cannot be used:\n%s", warns, logs.String())
	}
}

// An admin's repair (repair_archive, POST /admin/repair) of the old space
// stops when another process makes another space the read space, rather
// than embed for a space no longer searched until its max_texts are done
// (holding the one repair slot the new space's repair waits for), and its
// answer says which space it repaired and where the target moved.
func TestAdminRepairStopsAtASwitch(t *testing.T) {
	ctx := context.Background()
	old := embedtest.New(64)
	old.Delay = time.Hour // a model that does not answer: each call waits on it
	f := newSwitchFixture(t, old)
	srv, err := New(Options{Engine: f.eng, Store: f.st, Embedder: old, Space: testSpace, AdminToken: adminTok,
		Memory: memory.New(f.st, f.eng, memory.Options{Embedder: old, Space: testSpace})})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		out RepairOutput
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := srv.repair(ctx, RepairInput{MaxTexts: 100})
		done <- answer{out, err}
	}()
	if !until(func() bool { return old.Calls() > 0 }) {
		t.Fatal("the admin repair never called the old model")
	}

	f.use(t, "u")
	if fl, err := f.eng.Follow(ctx); err != nil || fl.Switched != "u" {
		t.Fatalf("follow: %+v %v", fl, err)
	}
	srv.bg.followSwitch() // as the server's follow loop does
	var a answer
	if !until(func() bool {
		select {
		case a = <-done:
			return true
		default:
			return false
		}
	}) {
		t.Fatal("the admin repair of the old space went on 30 s after the read space moved")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.out.Space != testSpace || a.out.MovedTo != "u" || a.out.Embedded != 0 || a.out.Missing != 1 || a.out.Done ||
		!strings.Contains(a.out.Note, "made u the read space") {
		t.Errorf("answer %+v; want space %s, moved_to u, 1 missing, a note saying so", a.out, testSpace)
	}
}

// until polls cond until it holds and reports whether it did within 30 s:
// a bound on a failure, far above the milliseconds a pass takes, not a
// measure of speed.
func until(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// A memory saved, a diary day written or a memory reindexed without its
// vectors (the embedder failed) wakes the background repair, which would
// otherwise look again only after its idle wait; one stored with them
// does not.
func TestPendingWriteWakesRepair(t *testing.T) {
	f := newFixture(t, nil)
	user, admin := f.connect(aliceTok), f.connect(adminTok)
	woken := func() bool {
		select {
		case <-f.srv.bg.wake:
			return true
		default:
			return false
		}
	}
	for _, c := range []struct {
		name  string
		fails bool
		write func() string
	}{
		{"save_memory, embedded", false, func() string {
			out, _ := mustCall[memory.SaveResult](t, user, "save_memory", map[string]any{"key": "note_a", "value": "embedded"})
			return out.Index
		}},
		{"save_memory, embedder failing", true, func() string {
			out, _ := mustCall[memory.SaveResult](t, user, "save_memory", map[string]any{"key": "note_b", "value": "not embedded"})
			return out.Index
		}},
		{"write_diary, embedder failing", true, func() string {
			d, _ := mustCall[memory.DiaryResult](t, user, "write_diary", map[string]any{"text": "a day not embedded"})
			return d.Index
		}},
		{"reindex_memory, embedder failing", true, func() string {
			out, _ := mustCall[memory.SaveResult](t, admin, "reindex_memory", map[string]any{"key": "note_b", "owner": "alice"})
			return out.Index
		}},
	} {
		if c.fails {
			f.emb.FailOn(0, embedtest.FaultError)
		}
		got := c.write()
		f.emb.FailOn(0, 0)
		want := map[bool]string{false: recall.IndexOK, true: recall.IndexPending}[c.fails]
		if got != want {
			t.Fatalf("%s: index %q, want %q", c.name, got, want)
		}
		if w := woken(); w != c.fails {
			t.Errorf("%s: repair woken %v, want %v", c.name, w, c.fails)
		}
	}
}

// outageStore fails its first fail censuses as a database that is down
// does, and closes looked after its last.
type outageStore struct {
	recall.Store
	mu          sync.Mutex
	calls, fail int
	last        int
	looked      chan struct{}
}

func (s *outageStore) Census(ctx context.Context, space string) (recall.Census, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if n == s.last {
		close(s.looked)
	}
	if n <= s.fail {
		return recall.Census{}, recall.Errorf(recall.EUNAVAILABLE, "census: the database is not reachable")
	}
	return s.Store.Census(ctx, space)
}

// A database that is down fails every look for other processes' writes:
// the server says so once, not every 2 s for the whole outage, and says
// when it follows again.
func TestFollowSaysAnOutageOnceAndItsEnd(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "recall.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &outageStore{Store: db, last: -1}
	eng := search.New(st, search.Options{MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	st.calls, st.fail, st.last, st.looked = 0, 5, 8, make(chan struct{}) // the outage starts now
	var logged bytes.Buffer                                              // written by follow alone, read once it returned
	log := slog.New(slog.NewTextHandler(&logged, nil))
	b := newBackground(eng, st, nil, "", newMetrics(), log, time.Now, 256, 0)
	b.followEvery = time.Millisecond
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.follow(fctx) }()
	<-st.looked
	cancel()
	<-done
	out := logged.String()
	if n := strings.Count(out, "follow writes of other processes"); n != 1 {
		t.Errorf("an outage of 5 looks logged %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "following writes of other processes again") || !strings.Contains(out, "failed_looks=5") {
		t.Errorf("the end of the outage is not said:\n%s", out)
	}
}

// readOnlyStore refuses vector writes as a PostgreSQL role granted only
// SELECT has them refused, counting them.
type readOnlyStore struct {
	recall.Store
	refused  atomic.Int64
	writable atomic.Bool // the role was granted writes
}

func (s *readOnlyStore) PutVectors(ctx context.Context, vecs []recall.Vector) error {
	if s.writable.Load() {
		return s.Store.PutVectors(ctx, vecs)
	}
	s.refused.Add(1)
	return recall.Errorf(recall.EFORBIDDEN, "put vectors: the database role recall connects as may not do this (a role granted only SELECT can only read): nothing was changed")
}

// Background repair on a store that refuses its writes says so once and
// stops: it backed off to 5 min and tried again for ever, embedding a
// batch for nothing and logging a warning each round.
func TestBackgroundRepairStopsWhenWritesAreForbidden(t *testing.T) {
	f := newFixture(t, nil)
	doc := recall.Document{Source: recall.Source{ID: "b.md", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash("x"), ChunkCount: 1, IndexState: recall.IndexOK},
		Chunks: []recall.Chunk{{Index: 0, Text: "a text without a vector", Header: "t", Hash: recall.TextHash("a text without a vector")}}}
	if _, err := f.eng.Write(context.Background(), []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	st := &readOnlyStore{Store: f.st}
	eng := search.New(st, search.Options{Embedder: f.emb, MemoryLexical: true})
	var logs syncBuffer
	b := newBackground(eng, st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(&logs, nil)), time.Now, 256, 0)
	b.repairRetry = time.Millisecond // were it retried, at once
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); b.run(ctx) }()
	// The loop logs the stop just after the state says it: wait for both,
	// or the cancel below can come between them.
	if !until(func() bool {
		return b.repairState().State == "stopped" && strings.Contains(logs.String(), "background repair stopped")
	}) {
		t.Errorf("repair state %+v after %d refused writes; want stopped, and said", b.repairState(), st.refused.Load())
	}
	b.nudge() // new chunks arrive: nothing to be done with them
	cancel()
	<-ran
	b.wg.Wait()
	if n := st.refused.Load(); n != 1 {
		t.Errorf("%d vector writes tried; want 1", n)
	}
	out := logs.String()
	if n := strings.Count(out, "background repair"); n != 1 || !strings.Contains(out, "background repair stopped") || !strings.Contains(out, "can only read") {
		t.Errorf("the refusal is not said once, with why:\n%s", out)
	}
	if r := b.repairState(); !strings.Contains(r.LastError, "can only read") {
		t.Errorf("repair state %+v; want the refusal as its last error", r)
	}
}

// Stopped repair tries one text again every stoppedRetry, quietly, and
// goes on once the store takes its writes (the role granted them): it
// stayed stopped until the server was restarted.
func TestBackgroundRepairResumesWhenWritesAreAllowed(t *testing.T) {
	f := newFixture(t, nil)
	var docs []recall.Document
	for _, text := range []string{"a text without a vector", "another text without one"} {
		docs = append(docs, recall.Document{Source: recall.Source{ID: text + ".md", Kind: recall.KindArchive, Title: "t",
			ContentHash: recall.TextHash(text), ChunkCount: 1, IndexState: recall.IndexOK},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Header: "t", Hash: recall.TextHash(text)}}})
	}
	if _, err := f.eng.Write(context.Background(), docs, nil); err != nil {
		t.Fatal(err)
	}
	st := &readOnlyStore{Store: f.st}
	eng := search.New(st, search.Options{Embedder: f.emb, MemoryLexical: true})
	var logs syncBuffer
	b := newBackground(eng, st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(&logs, nil)), time.Now, 256, 0)
	b.stoppedRetry = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); b.run(ctx) }()
	defer func() { cancel(); <-ran; b.wg.Wait() }()
	if !until(func() bool { return st.refused.Load() >= 3 }) {
		t.Fatalf("repair state %+v after %d refused writes; want it to try again while stopped", b.repairState(), st.refused.Load())
	}
	if r := b.repairState(); r.State != "stopped" {
		t.Errorf("repair state %+v while writes are refused; want stopped", r)
	}
	st.writable.Store(true)
	if !until(func() bool { r := b.repairState(); return r.State == "idle" && r.Missing == 0 }) {
		t.Fatalf("repair state %+v after writes were allowed; want idle, nothing missing", b.repairState())
	}
	if p, err := f.st.MissingVectors(context.Background(), testSpace, 0, 10); err != nil || len(p) != 0 {
		t.Errorf("texts left without vectors: %+v, %v", p, err)
	}
	out := logs.String()
	if strings.Count(out, "background repair stopped") != 1 || strings.Count(out, "background repair resumed") != 1 {
		t.Errorf("want the stop and the resumption said once each:\n%s", out)
	}
}
