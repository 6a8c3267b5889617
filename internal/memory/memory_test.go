package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

type fixture struct {
	st  *sqlite.DB
	eng *search.Engine
	svc *Service
	emb *embedtest.Embedder
}

func newFixture(t testing.TB, withEmbedder bool) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st}
	opt := Options{Now: func() time.Time { return time.Date(2025, 7, 14, 9, 30, 0, 0, time.UTC) }}
	var qe recall.Embedder
	if withEmbedder {
		f.emb = embedtest.New(32)
		info := f.emb.Info()
		if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 32, Normalized: true}); err != nil {
			t.Fatal(err)
		}
		opt.Embedder, opt.Space, qe = f.emb, "t", f.emb
	}
	f.eng = search.New(st, search.Options{Embedder: qe, MemoryLexical: true}) // as recall serve and recall mcp build it
	if err := f.eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	f.svc = New(st, f.eng, opt)
	return f
}

var ctx = context.Background()

func TestSaveReadDeleteRoundTrip(t *testing.T) {
	f := newFixture(t, true)
	res, err := f.svc.Save(ctx, SaveRequest{Key: "person_ann", Value: "Ann runs marathons.\n\nShe hates cilantro."}, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != "ok" || res.Index != recall.IndexOK || res.Chunks != 1 || res.ContentHash != recall.TextHash("Ann runs marathons.\n\nShe hates cilantro.") || res.Model == "" {
		t.Fatalf("save: %+v", res)
	}
	m, err := f.svc.Read(ctx, "person_ann", "", Scope{})
	if err != nil || m.Value != "Ann runs marathons.\n\nShe hates cilantro." || m.Category != "person" || m.Date != "2025-07-14" {
		t.Fatalf("read: %+v %v", m, err)
	}
	// Identical content: nothing re-embedded.
	calls := f.emb.Calls()
	res, _ = f.svc.Save(ctx, SaveRequest{Key: "person_ann", Value: "Ann runs marathons.\n\nShe hates cilantro."}, Scope{})
	if res.Index != recall.IndexSkipped || f.emb.Calls() != calls {
		t.Fatalf("identical save: %+v (embed calls %d -> %d)", res, calls, f.emb.Calls())
	}
	// Replace.
	f.svc.Save(ctx, SaveRequest{Key: "person_ann", Value: "Ann swims now."}, Scope{})
	if m, _ := f.svc.Read(ctx, "person_ann", "", Scope{}); m.Value != "Ann swims now." {
		t.Fatalf("replace: %q", m.Value)
	}
	hits, _ := f.eng.Search(ctx, recall.SearchRequest{Query: "marathons", Mode: recall.ModeLexical})
	if len(hits.Results) != 0 {
		t.Fatalf("old value still searchable: %+v", hits.Results)
	}
	// Delete needs confirm.
	if err := f.svc.Delete(ctx, "person_ann", "", false, Scope{}); recall.ErrorCode(err) != recall.EINVALID {
		t.Fatalf("delete without confirm: %v", err)
	}
	if _, err := f.svc.Read(ctx, "person_ann", "", Scope{}); err != nil {
		t.Fatal("refused delete deleted anyway")
	}
	if err := f.svc.Delete(ctx, "person_ann", "", true, Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Read(ctx, "person_ann", "", Scope{}); !recall.IsNotFound(err) {
		t.Fatalf("read after delete: %v", err)
	}
	for _, mode := range []string{recall.ModeLexical, recall.ModeSemantic, recall.ModeHybrid} {
		r, err := f.eng.Search(ctx, recall.SearchRequest{Query: "Ann swims", Mode: mode})
		if err == nil && len(r.Results) != 0 {
			t.Fatalf("%s search finds a deleted memory: %+v", mode, r.Results)
		}
	}
	if err := f.svc.Delete(ctx, "person_ann", "", true, Scope{}); !recall.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
	stats, _ := f.st.Stats(ctx)
	if stats.Chunks != 0 || stats.Spaces[0].Vectors != 0 {
		t.Fatalf("delete left chunks or vectors: %+v", stats)
	}
}

func TestLimits(t *testing.T) {
	f := newFixture(t, false)
	bad := []SaveRequest{
		{Key: "", Value: "x"},
		{Key: strings.Repeat("k", 201), Value: "x"},
		{Key: "has space", Value: "x"},
		{Key: "semi;colon", Value: "x"},
		{Key: "../escape", Value: "x"},
		{Key: "ok", Value: ""},
		{Key: "ok", Value: "   "},
		{Key: "ok", Value: strings.Repeat("v", 100_001)},
		{Key: "ok", Value: "x", Date: "2025-13-01"},
		{Key: "ok", Value: "x", Owner: "bad owner"},
		{Key: "diary/2025-07-01", Value: "x"}, // a diary day's name
		{Key: "diary/notes", Value: "x"},
		{Key: "\u0301notes", Value: "x"}, // leading combining mark
		{Key: "notes\u034f", Value: "x"}, // combining grapheme joiner: invisible
		{Key: "notes\ufe0f", Value: "x"}, // variation selector
		{Key: "notes\U000E0100", Value: "x"},
		{Key: "notes\u3164", Value: "x"}, // Hangul filler, a "letter"
		{Key: "\u115fnotes", Value: "x"},
		{Key: "no\u1160tes", Value: "x"},
		{Key: "notes\uffa0", Value: "x"},
		{Key: "notes\u200b", Value: "x"}, // zero width space
	}
	for _, r := range bad {
		if _, err := f.svc.Save(ctx, r, Scope{}); err == nil || recall.ErrorCode(err) == recall.EINTERNAL {
			t.Errorf("Save(%q, %d chars) = %v; want a clear error", r.Key, len(r.Value), err)
		}
	}
	good := []string{strings.Repeat("k", 200), "日本語のキー", "a:b/c-d_e.f", "Ünïcödé", "diary", "diary_2025", "my/diary/2025-07-01", "한국어", "नमस्ते"}
	for _, k := range good {
		if _, err := f.svc.Save(ctx, SaveRequest{Key: k, Value: "v"}, Scope{}); err != nil {
			t.Errorf("Save(%q): %v", k, err)
		}
	}
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "big", Value: strings.Repeat("字", 100_000)}, Scope{}); err != nil {
		t.Errorf("100,000 characters must fit: %v", err)
	}
	if _, err := f.svc.Find(ctx, FindRequest{}, Scope{}); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("unconditional find: %v", err)
	}
	if _, err := f.svc.Find(ctx, FindRequest{Prefix: "a", Limit: 21}, Scope{}); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("find limit 21: %v", err)
	}
}

// A key is one key however its accents are encoded: saves use its NFC
// form, and reads, finds and deletes find it typed either way.
func TestKeysAreNormalised(t *testing.T) {
	f := newFixture(t, false)
	nfc, nfd := "caf\u00e9", "cafe\u0301"
	res, err := f.svc.Save(ctx, SaveRequest{Key: nfd, Value: "first"}, Scope{})
	if err != nil || res.Key != nfc {
		t.Fatalf("save: %+v %v", res, err)
	}
	if m, err := f.svc.Read(ctx, nfc, "", Scope{}); err != nil || m.Value != "first" || m.Key != nfc {
		t.Fatalf("read %q: %+v %v", nfc, m, err)
	}
	if _, err := f.svc.Save(ctx, SaveRequest{Key: nfc, Value: "second"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	if m, err := f.svc.Read(ctx, nfd, "", Scope{}); err != nil || m.Value != "second" {
		t.Fatalf("read %q: %+v %v", nfd, m, err)
	}
	if p, _ := f.svc.Find(ctx, FindRequest{Prefix: nfd}, Scope{}); len(p.Items) != 1 || p.Items[0].Key != nfc {
		t.Fatalf("find %q: %+v", nfd, p.Items)
	}
	if err := f.svc.Delete(ctx, nfd, "", true, Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Read(ctx, nfc, "", Scope{}); !recall.IsNotFound(err) {
		t.Fatalf("read after delete: %v", err)
	}
}

// saveLegacy stores a memory under a key exactly as given, as a recall that
// did not normalise keys or refuse diary names saved it.
func saveLegacy(t *testing.T, f *fixture, key, value string) {
	t.Helper()
	doc := recall.Document{
		Source: recall.Source{ID: recall.MemoryID("", key), Kind: recall.KindMemory, Title: key, Date: "2025-07-14",
			ContentHash: recall.TextHash(value), Size: int64(len(value)), ChunkCount: 1, Body: value, IndexState: recall.IndexPending},
		Chunks: f.svc.chunks(key, []string{value}),
	}
	if _, err := f.eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
}

// Keys saved before the stricter rules stay readable, reindexable and
// deletable by the exact key: a decomposed one, one with an invisible
// character, and one named like a diary day, which reindex_memory reaches
// when there is no such day.
func TestLegacyKeysStayReachable(t *testing.T) {
	f := newFixture(t, true)
	for _, key := range []string{"cafe\u0301", "notes\u034f", "diary/2025-07-01"} {
		saveLegacy(t, f, key, "legacy value of "+key)
		if m, err := f.svc.Read(ctx, key, "", Scope{}); err != nil || m.Value != "legacy value of "+key {
			t.Errorf("read legacy %q: %+v %v", key, m, err)
		}
		if r, err := f.svc.Reindex(ctx, key, ""); err != nil || r.Index != recall.IndexOK {
			t.Errorf("reindex legacy %q: %+v %v", key, r, err)
		}
	}
	if _, err := f.svc.WriteDiary(ctx, "a real diary entry", "2025-07-01", "", false, Scope{}); err != nil {
		t.Fatal(err)
	}
	day, _ := f.st.Source(ctx, recall.DiaryID("", "2025-07-01"))
	if r, err := f.svc.Reindex(ctx, "diary/2025-07-01", ""); err != nil || r.ContentHash != day.ContentHash {
		t.Errorf("reindex of diary/2025-07-01 with a day of that date must rebuild the day: %+v %v", r, err)
	}
	for _, key := range []string{"cafe\u0301", "notes\u034f", "diary/2025-07-01"} {
		if err := f.svc.Delete(ctx, key, "", true, Scope{}); err != nil {
			t.Errorf("delete legacy %q: %v", key, err)
		}
	}
	if _, err := f.svc.ReadDiary(ctx, "2025-07-01", "", Scope{}); err != nil {
		t.Errorf("deleting the legacy memory touched the diary day: %v", err)
	}
}

// A legacy key and its NFC twin saved since are two memories, each read,
// read around (get_context) and deleted by its own name.
func TestLegacyKeyAndItsNFCTwin(t *testing.T) {
	f := newFixture(t, false)
	nfd, nfc := "cafe\u0301", "caf\u00e9"
	saveLegacy(t, f, nfd, "legacy value")
	if _, err := f.svc.Save(ctx, SaveRequest{Key: nfc, Value: "new value"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{nfd: "legacy value", nfc: "new value"} {
		if m, err := f.svc.Read(ctx, key, "", Scope{}); err != nil || m.Value != want {
			t.Errorf("read %+q: %q %v; want %q", key, m.Value, err, want)
		}
		c, _, err := f.eng.Context(ctx, key, recall.KindMemory, 0, 0, recall.Filter{})
		if err != nil || len(c) != 1 || c[0].Text != want {
			t.Errorf("context of %+q: %+v %v; want %q", key, c, err, want)
		}
	}
	if err := f.svc.Delete(ctx, nfd, "", true, Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Source(ctx, recall.MemoryID("", nfc)); err != nil {
		t.Errorf("deleting the legacy key deleted its NFC twin: %v", err)
	}
	if _, err := f.st.Source(ctx, recall.MemoryID("", nfd)); !recall.IsNotFound(err) {
		t.Errorf("the legacy key is still there after its delete: %v", err)
	}
}

func TestCategoriesAndFindPaging(t *testing.T) {
	f := newFixture(t, false)
	for i := range 25 {
		f.svc.Save(ctx, SaveRequest{Key: fmt.Sprintf("project_%02d", i), Value: fmt.Sprintf("project number %d", i)}, Scope{})
	}
	f.svc.Save(ctx, SaveRequest{Key: "proj_x", Value: "short prefix"}, Scope{})
	f.svc.Save(ctx, SaveRequest{Key: "person_bo", Value: "Bo", Category: "friend"}, Scope{})
	seen := map[string]bool{}
	cursor := ""
	for {
		p, err := f.svc.Find(ctx, FindRequest{Category: "project", Limit: 10, Cursor: cursor}, Scope{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if seen[it.Key] {
				t.Fatalf("key %s listed twice", it.Key)
			}
			seen[it.Key] = true
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if len(seen) != 26 {
		t.Fatalf("paged find saw %d project memories, want 26", len(seen))
	}
	if p, _ := f.svc.Find(ctx, FindRequest{Category: "friend"}, Scope{}); len(p.Items) != 1 || p.Items[0].Key != "person_bo" {
		t.Fatalf("explicit category: %+v", p)
	}
}

// A key's category prefix matches in any case, rune by rune under Unicode
// folding; a key shorter than the prefix, or one that only shares its
// letters further in, has none.
func TestCategoryPrefixIgnoresCase(t *testing.T) {
	s := New(nil, nil, Options{Categories: []CategoryRule{{Prefix: "project_", Category: "project"}, {Prefix: "straße_", Category: "street"}, {Prefix: "kid_", Category: "kid"}}})
	for key, want := range map[string]string{
		"project_x":    "project",
		"Project_x":    "project",
		"PROJECT_X":    "project",
		"\u212aid_x":   "kid", // the Kelvin sign (three bytes) folds to k (one)
		"kID":          "",
		"STRASSE_x":    "", // full folding (ß → ss) is not simple folding
		"STRAẞE_mitte": "street",
		"projec":       "",
		"my_project_x": "",
		"Ｐroject_x":    "", // a full-width P is another letter (keys are saved in NFKC first)
	} {
		if got := s.Category(key, ""); got != want {
			t.Errorf("Category(%q) = %q, want %q", key, got, want)
		}
	}
	if got := s.Category("Project_x", "mine"); got != "mine" {
		t.Errorf("an explicit category lost to the prefix: %q", got)
	}
}

func TestPendingThenRepaired(t *testing.T) {
	f := newFixture(t, true)
	f.emb.FailOn(0, embedtest.FaultError)
	res, err := f.svc.Save(ctx, SaveRequest{Key: "note_x", Value: "the quick brown fox"}, Scope{})
	if err != nil || res.Index != recall.IndexPending {
		t.Fatalf("save with failing embedder: %+v %v", res, err)
	}
	// Why it is pending is the command line's to say, never a client's.
	const why = "embedtest: injected failure"
	if res.IndexError == nil || !strings.Contains(res.IndexError.Error(), why) {
		t.Errorf("save: index error %v; want %q", res.IndexError, why)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), why) {
		t.Errorf("the answer a client gets holds the reason: %s", b)
	}
	if r, _ := f.eng.Search(ctx, recall.SearchRequest{Query: "brown fox"}); len(r.Results) != 1 {
		t.Fatalf("pending memory must be searchable by text: %+v", r)
	}
	st, _ := f.svc.IndexStatus(ctx)
	if st.Counts[recall.IndexPending] != 1 || len(st.Pending) != 1 || st.Pending[0].Key != "note_x" {
		t.Fatalf("index status: %+v", st)
	}
	f.emb.FailOn(0, 0)
	p, err := repair.Run(ctx, f.st, f.eng, "t", f.emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != 1 {
		t.Fatalf("repair: %+v %v", p, err)
	}
	if m, _ := f.svc.Read(ctx, "note_x", "", Scope{}); m.Index != recall.IndexOK {
		t.Fatalf("after repair the memory is %q", m.Index)
	}
	r, err := f.eng.Search(ctx, recall.SearchRequest{Query: "quick brown fox", Mode: recall.ModeSemantic})
	if err != nil || len(r.Results) != 1 {
		t.Fatalf("semantic after repair: %+v %v", r, err)
	}
	if res, err := f.svc.Save(ctx, SaveRequest{Key: "note_y", Value: "embedded at once"}, Scope{}); err != nil || res.Index != recall.IndexOK || res.IndexError != nil {
		t.Fatalf("save with the embedder back: %+v %v", res, err)
	}
}

// A diary day and a reindexed memory left pending say why, as a save does.
func TestPendingSaysWhy(t *testing.T) {
	f := newFixture(t, true)
	f.emb.FailOn(0, embedtest.FaultError)
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "note_x", Value: "the quick brown fox"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	const why = "embedtest: injected failure"
	if d, err := f.svc.WriteDiary(ctx, "a day", "2025-01-02", "", false, Scope{}); err != nil || d.Index != recall.IndexPending ||
		d.IndexError == nil || !strings.Contains(d.IndexError.Error(), why) {
		t.Errorf("diary: %+v %v; want pending, and %q", d, err, why)
	}
	if r, err := f.svc.Reindex(ctx, "note_x", ""); err != nil || r.Index != recall.IndexPending ||
		r.IndexError == nil || !strings.Contains(r.IndexError.Error(), why) {
		t.Errorf("reindex: %+v %v; want pending, and %q", r, err, why)
	}
}

// "skipped" lasts only while the database has no vector space: once one
// exists, a memory saved without an embedder is pending, listed and
// repaired, and saving it again with an embedder embeds it.
func TestSkippedUntilASpaceExists(t *testing.T) {
	f := newFixture(t, false)
	for _, key := range []string{"person_ann", "person_bo"} {
		res, err := f.svc.Save(ctx, SaveRequest{Key: key, Value: key + " runs marathons"}, Scope{})
		if err != nil || res.Index != recall.IndexSkipped {
			t.Fatalf("save without a space: %+v %v", res, err)
		}
	}
	emb := embedtest.New(32)
	info := emb.Info()
	if _, err := f.st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: info.Provider, Model: info.Model, Dim: 32, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.svc.IndexStatus(ctx); st.Counts[recall.IndexPending] != 2 || len(st.Pending) != 2 {
		t.Fatalf("once a space exists: %+v", st)
	}
	res, err := f.svc.Save(ctx, SaveRequest{Key: "note_x", Value: "saved without an embedder beside a space"}, Scope{})
	if err != nil || res.Index != recall.IndexPending {
		t.Fatalf("save without an embedder beside a space: %+v %v", res, err)
	}
	withModel := New(f.st, f.eng, Options{Embedder: emb, Space: "t", Dim: 32})
	res, err = withModel.Save(ctx, SaveRequest{Key: "person_ann", Value: "person_ann runs marathons"}, Scope{})
	if m, _ := f.svc.Read(ctx, "person_ann", "", Scope{}); err != nil || res.Index != recall.IndexOK || m.Index != recall.IndexOK {
		t.Fatalf("unchanged value saved again with an embedder: %+v %v; stored %q", res, err, m.Index)
	}
	p, err := repair.Run(ctx, f.st, f.eng, "t", emb, repair.Options{})
	if err != nil || p.Embedded != 2 {
		t.Fatalf("repair: %+v %v", p, err)
	}
	st, _ := f.svc.IndexStatus(ctx)
	if st.Counts[recall.IndexOK] != 3 || st.Counts[recall.IndexPending] != 0 || st.Counts[recall.IndexSkipped] != 0 {
		t.Fatalf("after repair: %+v", st.Counts)
	}
}

// A hanging embedder holds a save or diary write only for the embedding
// budget: the text is stored, searchable by text and pending.
func TestHangingEmbedderDoesNotHoldSaves(t *testing.T) {
	f := newFixture(t, true)
	f.svc.opt.EmbedBudget = 50 * time.Millisecond
	f.emb.Delay = time.Hour
	res, err := f.svc.Save(ctx, SaveRequest{Key: "note_x", Value: "the quick brown fox"}, Scope{})
	if err != nil || res.Index != recall.IndexPending {
		t.Fatalf("save with a hanging embedder: %+v %v", res, err)
	}
	d, err := f.svc.WriteDiary(ctx, "a slow lazy dog", "2025-07-14", "", false, Scope{})
	if err != nil || d.Index != recall.IndexPending {
		t.Fatalf("diary write with a hanging embedder: %+v %v", d, err)
	}
	r, err := f.eng.Search(ctx, recall.SearchRequest{Query: "brown fox", Mode: recall.ModeLexical})
	if err != nil || len(r.Results) != 1 {
		t.Fatalf("the pending memory is not searchable by text: %+v %v", r, err)
	}
}

func TestConcurrentSavesOfOneKeyAreAtomic(t *testing.T) {
	f := newFixture(t, true)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := strings.Repeat(fmt.Sprintf("version %d says hello. ", i), 50+i*20)
			if _, err := f.svc.Save(ctx, SaveRequest{Key: "shared", Value: v}, Scope{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	m, err := f.svc.Read(ctx, "shared", "", Scope{})
	if err != nil {
		t.Fatal(err)
	}
	chunks, _ := f.st.Chunks(ctx, recall.MemoryID("", "shared"), 0, 1000)
	var joined strings.Builder
	for _, c := range chunks {
		if !strings.Contains(m.Value, c.Text) {
			t.Fatalf("chunk %d is not from the stored value: the replace was not atomic", c.Index)
		}
		joined.WriteString(c.Text)
	}
	if len(chunks) != m.Chunks || m.ContentHash != recall.TextHash(m.Value) {
		t.Fatalf("value and chunks disagree: %d chunks recorded, %d stored", m.Chunks, len(chunks))
	}
}

func TestDiaryAppendsAndNeverWipesByAccident(t *testing.T) {
	f := newFixture(t, true)
	for _, text := range []string{"Woke early.", "Planted mint.", "Tea on the balcony."} {
		if _, err := f.svc.WriteDiary(ctx, text, "", "", false, Scope{}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := f.svc.ReadDiary(ctx, "2025-07-14", "", Scope{})
	if err != nil || len(d.Entries) != 3 || d.Entries[1].Text != "Planted mint." {
		t.Fatalf("diary: %+v %v", d, err)
	}
	res, _ := f.svc.WriteDiary(ctx, "Only this.", "2025-07-14", "", true, Scope{})
	if res.Entries != 1 {
		t.Fatalf("replace: %+v", res)
	}
	f.svc.WriteDiary(ctx, "Older day.", "2025-07-10", "", false, Scope{})
	f.svc.WriteDiary(ctx, "Too old.", "2025-06-01", "", false, Scope{})
	days, err := f.svc.RecentDiary(ctx, 7, "", Scope{})
	if err != nil || len(days) != 2 || days[0].Date != "2025-07-14" || days[1].Date != "2025-07-10" {
		t.Fatalf("recent: %+v %v", days, err)
	}
	r, _ := f.eng.Search(ctx, recall.SearchRequest{Query: "Older day", Filter: recall.Filter{Kinds: []recall.Kind{recall.KindDiary}, Since: "2025-07-01"}})
	if len(r.Results) == 0 || r.Results[0].Source != "diary/2025-07-10" || r.Results[0].Kind != recall.KindDiary {
		t.Fatalf("diary search: %+v", r)
	}
	if _, err := f.svc.RecentDiary(ctx, 31, "", Scope{}); recall.ErrorCode(err) != recall.EINVALID {
		t.Fatalf("31 days: %v", err)
	}
	// Concurrent appends lose nothing.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.svc.WriteDiary(ctx, fmt.Sprintf("entry %d", i), "2025-08-01", "", false, Scope{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d, _ := f.svc.ReadDiary(ctx, "2025-08-01", "", Scope{}); len(d.Entries) != 20 {
		t.Fatalf("concurrent appends: %d entries, want 20", len(d.Entries))
	}
}

func TestOwnerIsolation(t *testing.T) {
	f := newFixture(t, true)
	ann, bob := Scope{Owner: "ann", Bound: true}, Scope{Owner: "bob", Bound: true}
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "secret", Value: "ann's locker code is 4711 zebra"}, ann); err != nil {
		t.Fatal(err)
	}
	f.svc.WriteDiary(ctx, "ann met the zebra keeper", "2025-07-14", "", false, ann)
	_, errMissing := f.svc.Read(ctx, "no-such-key", "", bob)
	_, errOther := f.svc.Read(ctx, "secret", "", bob)
	if errOther == nil || errOther.Error() != strings.Replace(errMissing.Error(), "no-such-key", "secret", 1) {
		t.Fatalf("another owner's key must read like a missing key: %v vs %v", errOther, errMissing)
	}
	if _, err := f.svc.Read(ctx, "secret", "ann", bob); recall.ErrorCode(err) != recall.EFORBIDDEN {
		t.Fatalf("bob naming owner ann: %v", err)
	}
	if err := f.svc.Delete(ctx, "secret", "", true, bob); !recall.IsNotFound(err) {
		t.Fatalf("bob deleting ann's key: %v", err)
	}
	if _, err := f.svc.ReadDiary(ctx, "2025-07-14", "", bob); !recall.IsNotFound(err) {
		t.Fatalf("bob reading ann's diary: %v", err)
	}
	if p, _ := f.svc.Find(ctx, FindRequest{Prefix: "sec"}, bob); len(p.Items) != 0 {
		t.Fatalf("bob finds ann's keys: %+v", p)
	}
	for _, mode := range []string{recall.ModeLexical, recall.ModeSemantic, recall.ModeHybrid} {
		r, err := f.eng.Search(ctx, recall.SearchRequest{Query: "zebra locker code", Mode: mode, Limit: 20, Filter: bob.Filter(recall.Filter{})})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 0 {
			t.Fatalf("%s search shows bob ann's text: %+v", mode, r.Results)
		}
		r, _ = f.eng.Search(ctx, recall.SearchRequest{Query: "zebra locker code", Mode: mode, Filter: ann.Filter(recall.Filter{})})
		if len(r.Results) == 0 {
			t.Fatalf("%s search hides ann's own text from ann", mode)
		}
	}
	// Bob may use the same key for his own memory.
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "secret", Value: "bob's own"}, bob); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.svc.Read(ctx, "secret", "", ann); m.Value != "ann's locker code is 4711 zebra" {
		t.Fatalf("bob overwrote ann: %q", m.Value)
	}
}

// TestChineseExactPhrases: every exact-phrase query of a fictional Chinese
// and Japanese memory set, two-character ones included, finds its memory first.
func TestChineseExactPhrases(t *testing.T) {
	f := newFixture(t, true)
	raw, err := os.ReadFile("testdata/zh_memories.json")
	if err != nil {
		t.Fatal(err)
	}
	var set []struct {
		Key, Value string
		Queries    []string
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	for _, m := range set {
		if _, err := f.svc.Save(ctx, SaveRequest{Key: m.Key, Value: m.Value}, Scope{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid} {
		for _, m := range set {
			for _, q := range m.Queries {
				r, err := f.eng.Search(ctx, recall.SearchRequest{Query: q, Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Results) == 0 || r.Results[0].Source != m.Key {
					t.Errorf("%s %q: want %s first, got %+v", mode, q, m.Key, r.Results)
					continue
				}
				if !contains(r.Results[0].Match, "exact") {
					t.Errorf("%s %q: first result not marked exact: %v", mode, q, r.Results[0].Match)
				}
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestChineseQuestions: a Chinese question typed as a sentence (no quotes,
// no spaces) finds the memory it is about in every mode that uses text.
func TestChineseQuestions(t *testing.T) {
	f := newFixture(t, true)
	raw, _ := os.ReadFile("testdata/zh_memories.json")
	var set []struct{ Key, Value string }
	json.Unmarshal(raw, &set)
	for _, m := range set {
		f.svc.Save(ctx, SaveRequest{Key: m.Key, Value: m.Value}, Scope{})
	}
	cases := map[string]string{
		"小明每天早上喝什么茶":  "person_小明",
		"我们什么时候搬到杭州去": "project_搬家",
		"李华对什么东西过敏呢":  "person_李华",
	}
	for q, want := range cases {
		for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid} {
			r, err := f.eng.Search(ctx, recall.SearchRequest{Query: q, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Results) == 0 || r.Results[0].Source != want {
				t.Errorf("%s %q: want %s first, got %+v", mode, q, want, r.Results)
			}
		}
	}
}

// A diary day whose texts all have vectors already (the same entry on
// another day, or a day replaced by the same text) ends up indexed: no
// vector is new, and repair would find nothing missing.
func TestDiaryDayOfKnownTextsIsIndexed(t *testing.T) {
	f := newFixture(t, true)
	if _, err := f.svc.WriteDiary(ctx, "walked the dog", "2025-07-01", "", false, Scope{}); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.WriteDiary(ctx, "walked the dog", "2025-07-02", "", false, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.st.Source(ctx, recall.DiaryID("", "2025-07-02"))
	if err != nil {
		t.Fatal(err)
	}
	if src.IndexState != res.Index {
		t.Errorf("WriteDiary answered index %q; the store holds %q", res.Index, src.IndexState)
	}
	if _, err := repair.Run(ctx, f.st, f.eng, "t", f.emb, repair.Options{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.svc.IndexStatus(ctx); st.Counts[recall.IndexPending] != 0 {
		t.Errorf("after repair: %+v", st)
	}
	// Replaced by identical text.
	res, _ = f.svc.WriteDiary(ctx, "walked the dog", "2025-07-01", "", true, Scope{})
	src, _ = f.st.Source(ctx, recall.DiaryID("", "2025-07-01"))
	if src.IndexState != recall.IndexOK {
		t.Fatalf("replace: answered %q; stored %q", res.Index, src.IndexState)
	}
}

// RecentDiary is the last days up to today: a day written ahead (an
// appointment) is not among them.
func TestRecentDiaryLeavesOutFutureDays(t *testing.T) {
	f := newFixture(t, false) // today is 2025-07-14
	f.svc.WriteDiary(ctx, "today", "", "", false, Scope{})
	f.svc.WriteDiary(ctx, "dentist appointment planned", "2026-01-05", "", false, Scope{})
	days, err := f.svc.RecentDiary(ctx, 7, "", Scope{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range days {
		if d.Date > "2025-07-14" {
			t.Errorf("recent diary holds a future day %s", d.Date)
		}
	}
}

// deletingWriter deletes a memory right before the first write it passes
// on, as another client's delete_memory landing mid-save.
type deletingWriter struct {
	Writer
	svc  *Service
	key  string
	once sync.Once
}

func (w *deletingWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	var err error
	w.once.Do(func() { err = w.svc.Delete(ctx, w.key, "", true, Scope{}) })
	if err != nil {
		return recall.WriteResult{}, err
	}
	return w.Writer.Write(ctx, docs, vecs, remove...)
}

// A save whose text another memory has embedded already is "ok" only with
// that vector: deleting the other memory while the save is under way
// removes the vector it shared, and the save must put it back.
func TestSaveKeepsASharedVectorDeletedMeanwhile(t *testing.T) {
	f := newFixture(t, true)
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "a", Value: "shared text"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	svc := New(f.st, &deletingWriter{Writer: f.eng, svc: f.svc, key: "a"}, f.svc.opt)
	res, err := svc.Save(ctx, SaveRequest{Key: "b", Value: "shared text"}, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.svc.Read(ctx, "b", "", Scope{})
	stats, _ := f.st.Stats(ctx)
	if res.Index != m.Index || (m.Index == recall.IndexOK && stats.Spaces[0].Missing > 0) {
		t.Fatalf("save answered %q, stored %q, with %d texts missing a vector", res.Index, m.Index, stats.Spaces[0].Missing)
	}
	r, err := f.eng.Search(ctx, recall.SearchRequest{Query: "shared text", Mode: recall.ModeSemantic})
	if err != nil || len(r.Results) != 1 {
		t.Fatalf("semantic search for the saved memory: %+v %v", r, err)
	}
}

// Saving under a legacy key as typed saves there, so the same name reads
// back what was just saved; saving the NFC form still makes its twin.
func TestSaveUnderALegacyKeyReadsBack(t *testing.T) {
	f := newFixture(t, false)
	nfd, nfc := "cafe\u0301", "caf\u00e9"
	saveLegacy(t, f, nfd, "legacy value")
	if r, err := f.svc.Save(ctx, SaveRequest{Key: nfd, Value: "new value"}, Scope{}); err != nil || r.Key != nfd {
		t.Fatalf("save under the legacy key: %+v %v", r, err)
	}
	if m, err := f.svc.Read(ctx, nfd, "", Scope{}); err != nil || m.Value != "new value" {
		t.Errorf("read back as typed: %q %v; want the value just saved", m.Value, err)
	}
	if _, err := f.st.Source(ctx, recall.MemoryID("", nfc)); !recall.IsNotFound(err) {
		t.Errorf("a twin was made beside the legacy key: %v", err)
	}
}

// Keys are clean paths: a key with an empty or "." segment would be
// rewritten by HTTP clients and routers into another memory's name.
func TestKeysAreCleanPaths(t *testing.T) {
	f := newFixture(t, false)
	for _, key := range []string{"notes//todo", "x/./y", "k/.", ".", "./k", "a//"} {
		if _, err := f.svc.Save(ctx, SaveRequest{Key: key, Value: "v"}, Scope{}); recall.ErrorCode(err) != recall.EINVALID {
			t.Errorf("save %q: %v; want it refused", key, err)
		}
	}
	for _, key := range []string{"notes/todo", "a/", "v1.2", "x.y/z", ".hidden"} {
		if _, err := f.svc.Save(ctx, SaveRequest{Key: key, Value: "v"}, Scope{}); err != nil {
			t.Errorf("save %q: %v", key, err)
		}
	}
}

// A re-save keeps the category and date the caller leaves out; giving
// them changes them.
func TestResaveKeepsWhatItLeavesOut(t *testing.T) {
	f := newFixture(t, false)
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "person_bo", Value: "Bo likes jazz", Category: "friend", Date: "2020-05-01"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"Bo likes jazz and tea", "Bo likes jazz and tea"} {
		if _, err := f.svc.Save(ctx, SaveRequest{Key: "person_bo", Value: v}, Scope{}); err != nil {
			t.Fatal(err)
		}
		if m, _ := f.svc.Read(ctx, "person_bo", "", Scope{}); m.Category != "friend" || m.Date != "2020-05-01" || m.Value != v {
			t.Errorf("after a re-save without them: category %q, date %q; want friend, 2020-05-01", m.Category, m.Date)
		}
	}
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "person_bo", Value: "Bo likes tea", Category: "family", Date: "2021-01-02"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.svc.Read(ctx, "person_bo", "", Scope{}); m.Category != "family" || m.Date != "2021-01-02" {
		t.Errorf("after a re-save with them: category %q, date %q", m.Category, m.Date)
	}
	// A new key still takes its category from its prefix, and today.
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "person_cy", Value: "Cy"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.svc.Read(ctx, "person_cy", "", Scope{}); m.Category != "person" || m.Date != f.svc.today() {
		t.Errorf("a new key: category %q, date %q", m.Category, m.Date)
	}
}

// A re-save that only changes metadata carries no vectors: when a delete
// and a new save of the same value come between its read and its write,
// it must not claim the vectors the delete took.
func TestMetadataResaveRacingDeleteDoesNotClaimVectors(t *testing.T) {
	f := newFixture(t, true)
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "note_a", Value: "the quick brown fox"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	svc := New(f.st, &deletingWriter{Writer: f.eng, svc: f.svc, key: "note_a"}, f.svc.opt)
	if _, err := svc.Save(ctx, SaveRequest{Key: "note_a", Value: "the quick brown fox", Category: "animals"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	m, _ := f.svc.Read(ctx, "note_a", "", Scope{})
	stats, _ := f.st.Stats(ctx)
	if m.Index == recall.IndexOK && stats.Spaces[0].Missing > 0 {
		t.Errorf("stored %q although its vector is missing", m.Index)
	}
}

// racingWriter lands another client's write right before the first write
// or update it passes on, as a save or a diary entry arriving while an
// admin's reindex embeds.
type racingWriter struct {
	Writer
	before func()
	once   sync.Once
}

func (w *racingWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	w.once.Do(w.before)
	return w.Writer.Write(ctx, docs, vecs, remove...)
}

func (w *racingWriter) Update(ctx context.Context, id string, fn func(cur *recall.Document) (*recall.Document, error)) (recall.WriteResult, error) {
	w.once.Do(w.before)
	return w.Writer.Update(ctx, id, fn)
}

// A reindex rebuilds from the value as it is when it writes: a diary
// entry or a save that lands meanwhile is neither lost nor undone, and a
// delete meanwhile is not undone either.
func TestReindexKeepsWritesMadeMeanwhile(t *testing.T) {
	f := newFixture(t, true)
	if _, err := f.svc.WriteDiary(ctx, "first entry", "2025-07-01", "", false, Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Save(ctx, SaveRequest{Key: "note_a", Value: "old value"}, Scope{}); err != nil {
		t.Fatal(err)
	}
	racing := func(before func()) *Service {
		return New(f.st, &racingWriter{Writer: f.eng, before: before}, f.svc.opt)
	}
	admin := racing(func() {
		if _, err := f.svc.WriteDiary(ctx, "second entry, written during the reindex", "2025-07-01", "", false, Scope{}); err != nil {
			t.Error(err)
		}
	})
	if r, err := admin.Reindex(ctx, "diary/2025-07-01", ""); err != nil || r.Index != recall.IndexOK || r.Chunks == 0 {
		t.Fatalf("reindex of the day: %+v %v", r, err)
	}
	if d, _ := f.svc.ReadDiary(ctx, "2025-07-01", "", Scope{}); len(d.Entries) != 2 {
		t.Errorf("the day holds %d entries after a reindex that raced an append; want 2", len(d.Entries))
	}
	admin = racing(func() {
		if _, err := f.svc.Save(ctx, SaveRequest{Key: "note_a", Value: "new value saved by the user"}, Scope{}); err != nil {
			t.Error(err)
		}
	})
	if _, err := admin.Reindex(ctx, "note_a", ""); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.svc.Read(ctx, "note_a", "", Scope{}); m.Value != "new value saved by the user" || m.Index != recall.IndexOK {
		t.Errorf("after a reindex that raced a save: %q (%s)", m.Value, m.Index)
	}
	admin = racing(func() {
		if err := f.svc.Delete(ctx, "note_a", "", true, Scope{}); err != nil {
			t.Error(err)
		}
	})
	if _, err := admin.Reindex(ctx, "note_a", ""); !recall.IsNotFound(err) {
		t.Errorf("a reindex that raced a delete: %v; want not found", err)
	}
	if _, err := f.svc.Read(ctx, "note_a", "", Scope{}); !recall.IsNotFound(err) {
		t.Errorf("a reindex brought a deleted memory back: %v", err)
	}
}

// Repairing a space searches do not read (a model switch's next one)
// leaves a pending memory pending: semantic search cannot find it yet.
func TestRepairOfAnotherSpaceLeavesPending(t *testing.T) {
	f := newFixture(t, true)
	f.emb.FailOn(0, embedtest.FaultError)
	if r, err := f.svc.Save(ctx, SaveRequest{Key: "note_x", Value: "the quick brown fox"}, Scope{}); err != nil || r.Index != recall.IndexPending {
		t.Fatalf("%+v %v", r, err)
	}
	f.emb.FailOn(0, 0)
	other := embedtest.New(16)
	info := other.Info()
	if _, err := f.st.CreateSpace(ctx, recall.VectorSpace{Name: "other", Provider: info.Provider, Model: info.Model, Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := repair.Run(ctx, f.st, f.eng, "other", other, repair.Options{}); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.svc.Read(ctx, "note_x", "", Scope{}); m.Index != recall.IndexPending {
		t.Errorf("after a repair of another space: %q; want pending", m.Index)
	}
	st, err := f.svc.IndexStatus(ctx)
	if err != nil || st.Counts[recall.IndexPending] != 1 {
		t.Errorf("index status: %+v %v; want 1 pending", st, err)
	}
}

// A key typed in full-width letters (a CJK input method's) is the key in
// ordinary letters: one memory, its category from its prefix, read, found
// and deleted by either spelling.
func TestFullWidthKeysAreTheirOrdinaryForm(t *testing.T) {
	f := newFixture(t, false)
	wide := "ｐｅｒｓｏｎ_ａｎｎ"
	if r, err := f.svc.Save(ctx, SaveRequest{Key: wide, Value: "Ann likes tea"}, Scope{}); err != nil || r.Key != "person_ann" {
		t.Fatalf("save %q: %+v %v", wide, r, err)
	}
	for _, key := range []string{wide, "person_ann"} {
		if m, err := f.svc.Read(ctx, key, "", Scope{}); err != nil || m.Value != "Ann likes tea" || m.Category != "person" {
			t.Errorf("read %q: %+v %v", key, m, err)
		}
	}
	if p, err := f.svc.Find(ctx, FindRequest{Prefix: "ｐｅｒｓｏｎ_"}, Scope{}); err != nil || len(p.Items) != 1 {
		t.Errorf("find by a full-width prefix: %+v %v", p, err)
	}
	if err := f.svc.Delete(ctx, "person_ann", "", true, Scope{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Read(ctx, wide, "", Scope{}); !recall.IsNotFound(err) {
		t.Errorf("read after delete: %v", err)
	}
}
