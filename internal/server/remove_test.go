package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/remote"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

func (f *fixture) remove(token string, req remote.RemoveRequest) (int, remote.RemoveResponse, string) {
	f.t.Helper()
	b, _ := json.Marshal(req)
	resp, body := f.do("POST", "/ingest/remove", token, string(b))
	var out remote.RemoveResponse
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			f.t.Fatalf("remove answer %s: %v", body, err)
		}
	}
	return resp.StatusCode, out, body
}

// sweptSource stores the archive source id as the server's own sweep of a
// folder (serve --vault) stores it: no client sent it through /ingest.
func (f *fixture) sweptSource(ctx context.Context, id string) {
	f.t.Helper()
	swept := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, Vault: "/srv/vault",
		ContentHash: recall.TextHash("swept"), ChunkCount: 1, IndexState: recall.IndexOK},
		Chunks: []recall.Chunk{{Index: 0, Text: "swept", Hash: recall.TextHash("swept")}}}
	if _, err := f.eng.Write(ctx, []recall.Document{swept}, nil); err != nil {
		f.t.Fatal(err)
	}
}

// archiveIDs lists the stored archive sources.
func (f *fixture) archiveIDs() string {
	f.t.Helper()
	page, _, err := f.st.ListSources(context.Background(), recall.ListOptions{Filter: recall.Filter{Kinds: []recall.Kind{recall.KindArchive}}, Limit: 1000})
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for _, s := range page {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, " ")
}

// POST /ingest/remove removes a gone file's source, an export's
// conversations (one level under it) and single conversations, all sent
// through /ingest; what the server swept from a folder of its own is kept,
// and searches no longer find what was removed.
func TestIngestRemove(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	for _, id := range []string{"notes/a.md", "exp.json/c1", "exp.json/c2", "exp.json/c1/deeper", "exp.jsonx/c", "other.json/c9", "other.json/c10"} {
		word := "zebra" + strings.NewReplacer("/", "", ".", "").Replace(id)
		if status, out, body := f.ingest(plainTok, chunkOf(id, 0, 1, "a text about "+word)); status != 200 || !out.Sources[0].Complete() {
			t.Fatalf("%s: %s", id, body)
		}
	}
	// A conversation of the same export that the server swept itself.
	f.sweptSource(ctx, "exp.json/c3")
	f.save("alice", "k", "alice's memory")
	// Chunks of another conversation wait for the rest of their source.
	if _, out, _ := f.ingest(plainTok, chunkOf("exp.json/c4", 0, 2, "half")); out.Sources[0].Status != remote.StatusPartial {
		t.Fatalf("staging: %+v", out.Sources)
	}

	status, out, body := f.remove(plainTok, remote.RemoveRequest{
		Files:   []string{`notes\a.md`, "exp.json", "missing.md", "memory"},
		Sources: []string{"other.json/c9", "exp.json/c1"},
	})
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	want := remote.RemoveResponse{
		Files: []remote.Removal{{Name: `notes\a.md`, Source: "notes/a.md", Removed: 1}, {Name: "exp.json", Source: "exp.json", Removed: 2, Kept: 1},
			{Name: "missing.md", Source: "missing.md"}, {Name: "memory", Source: "memory"}},
		Sources: []remote.Removal{{Name: "other.json/c9", Source: "other.json/c9", Removed: 1}, {Name: "exp.json/c1", Source: "exp.json/c1"}},
		Removed: 4,
	}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("answer:\n%+v\nwant\n%+v", out, want)
	}
	if got := f.archiveIDs(); got != "exp.json/c1/deeper exp.json/c3 exp.jsonx/c other.json/c10" {
		t.Errorf("left: %s", got)
	}
	if m, err := f.mem.Read(ctx, "k", "", memoryScope("alice")); err != nil || m.Value != "alice's memory" {
		t.Errorf("the memory: %+v %v", m, err)
	}
	// The engine's in-memory indexes follow at once.
	for word, found := range map[string]bool{"zebranotesamd": false, "zebraexpjsonc1": false, "zebraotherjsonc9": false, "zebraotherjsonc10": true} {
		_, body := f.do("POST", "/api/search", plainTok, `{"query":"`+word+`","mode":"lexical"}`)
		if !strings.Contains(body, `"results":[]`) != found {
			t.Errorf("search %s after the removal: %s", word, body)
		}
	}
	// The staged chunks of a removed conversation went with it: the rest
	// of that upload does not bring it back.
	if _, out, _ := f.ingest(plainTok, chunkOf("exp.json/c4", 1, 2, "rest")); out.Sources[0].Status != remote.StatusPartial {
		t.Errorf("a removed source's staged chunks were kept: %+v", out.Sources)
	}
	// Removing again removes nothing, and says so.
	if _, out, _ := f.remove(plainTok, remote.RemoveRequest{Files: []string{"notes/a.md"}}); out.Removed != 0 || out.Files[0].Removed != 0 {
		t.Errorf("again: %+v", out)
	}
	// The admin token may, like /ingest.
	if status, out, body := f.remove(adminTok, remote.RemoveRequest{Sources: []string{"other.json/c10"}}); status != 200 || out.Removed != 1 {
		t.Errorf("admin: %d %s", status, body)
	}
	waitFor(f.audit, `"route":"POST /ingest/remove"`)
	if a := f.audit.String(); !strings.Contains(a, `"token":"plain"`) || !strings.Contains(a, `"results":4`) || strings.Contains(a, "notes/a.md") {
		t.Errorf("audit: %s", a)
	}
}

// Every name is checked as source_file is, before anything is removed;
// memories and diary days cannot be named; a token bound to an owner may
// not remove archive sources.
func TestIngestRemoveRefusals(t *testing.T) {
	f := newFixture(t, nil)
	f.ingest(plainTok, chunkOf("keep.md", 0, 1, "kept text"))
	f.save("alice", "k", "alice's memory")
	many := make([]string, remote.MaxRemoveNames+1)
	for i := range many {
		many[i] = fmt.Sprintf("f%d.md", i)
	}
	for _, tc := range []struct {
		req  remote.RemoveRequest
		want string
	}{
		{remote.RemoveRequest{}, "files and sources are empty"},
		{remote.RemoveRequest{Files: many}, "1001 names in one request; send at most 1000"},
		{remote.RemoveRequest{Files: many[:600], Sources: many[600:]}, "1001 names"},
		{remote.RemoveRequest{Files: []string{"keep.md", "../etc"}}, "leaves the vault"},
		{remote.RemoveRequest{Files: []string{"keep.md", "/abs"}}, "absolute"},
		{remote.RemoveRequest{Sources: []string{"keep.md", `C:\x`}}, "absolute"},
		{remote.RemoveRequest{Sources: []string{"keep.md", ""}}, "empty"},
		{remote.RemoveRequest{Sources: []string{"keep.md", "memory:alice:k"}}, "reserved"},
		{remote.RemoveRequest{Files: []string{"keep.md", "memory:alice"}}, "reserved"},
		{remote.RemoveRequest{Files: []string{"keep.md", "diary:alice:2025-01-01"}}, "reserved"},
		{remote.RemoveRequest{Files: []string{"keep.md", "a\x1b[2J.md"}}, "control character U+001B"},
		{remote.RemoveRequest{Files: []string{"keep.md", strings.Repeat("x", recall.MaxSourceIDLen+1)}}, "longer than 1024 bytes"},
	} {
		if status, _, body := f.remove(plainTok, tc.req); status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%.80v: %d %.300s", tc.req, status, body)
		}
	}
	for _, tc := range []struct{ body, want string }{
		{`{"files":["keep.md"],"extra":1}`, `unknown field \"extra\"`},
		{`{"files":"keep.md"}`, "field files must be a list"},
		{`[]`, "must be a JSON object"},
	} {
		if resp, body := f.do("POST", "/ingest/remove", plainTok, tc.body); resp.StatusCode != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
	}
	if status, _, body := f.remove(aliceTok, remote.RemoveRequest{Files: []string{"keep.md"}}); status != 403 || !strings.Contains(body, "bound to an owner") {
		t.Errorf("owner-bound token: %d %s", status, body)
	}
	if status, _, _ := f.remove("", remote.RemoveRequest{Files: []string{"keep.md"}}); status != 401 {
		t.Errorf("no token: %d", status)
	}
	if got := f.archiveIDs(); got != "keep.md" {
		t.Errorf("a refused request removed something: %q", got)
	}
	if m, err := f.mem.Read(context.Background(), "k", "", memoryScope("alice")); err != nil || m.Value != "alice's memory" {
		t.Errorf("the memory: %+v %v", m, err)
	}
}

func (f *fixture) sources(token string, req remote.SourcesRequest) (int, remote.SourcesResponse, string) {
	f.t.Helper()
	b, _ := json.Marshal(req)
	resp, body := f.do("POST", remote.SourcesPath, token, string(b))
	var out remote.SourcesResponse
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			f.t.Fatalf("sources answer %s: %v", body, err)
		}
	}
	return resp.StatusCode, out, body
}

// POST /ingest/sources lists, a page at a time, the sources /ingest/remove
// would remove for a file: its own and its conversations', sent through
// /ingest; not what the server swept itself, deeper sources, memories, or
// files that only begin alike.
func TestIngestSources(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	var chunks []remote.IngestChunk
	for _, id := range []string{"exp.json", "exp.json/c1", "exp.json/c2", "exp.json/c1/deeper", "exp.jsonx/c", "other.json/c9"} {
		chunks = append(chunks, chunkOf(id, 0, 1, "text of "+id))
	}
	const many = 2100
	for i := range many {
		chunks = append(chunks, chunkOf(fmt.Sprintf("big.json/%04d", i), 0, 1, fmt.Sprintf("text %d", i)))
	}
	if status, _, body := f.ingest(plainTok, chunks...); status != 200 {
		t.Fatalf("%d %.300s", status, body)
	}
	f.sweptSource(ctx, "exp.json/c3")
	f.save("alice", "k", "alice's memory")

	status, out, body := f.sources(plainTok, remote.SourcesRequest{File: `exp.json`})
	if status != 200 || out.File != "exp.json" || strings.Join(out.Sources, " ") != "exp.json exp.json/c1 exp.json/c2" || out.Next != "" {
		t.Errorf("exp.json: %d %s", status, body)
	}
	if _, out, body := f.sources(adminTok, remote.SourcesRequest{File: "nothing.json"}); out.Sources == nil || len(out.Sources) != 0 || out.Next != "" {
		t.Errorf("a file the server holds nothing of: %s", body)
	}
	// Pages follow one another to the end, every source once.
	var got []string
	pages := 0
	for req := (remote.SourcesRequest{File: "big.json"}); ; pages++ {
		status, out, body := f.sources(plainTok, req)
		if status != 200 || pages > many {
			t.Fatalf("page %d: %d %.300s", pages, status, body)
		}
		got = append(got, out.Sources...)
		if out.Next == "" {
			break
		}
		req.Cursor = out.Next
	}
	if len(got) != many || pages < 2 || got[0] != "big.json/0000" || got[many-1] != fmt.Sprintf("big.json/%04d", many-1) {
		t.Errorf("%d pages gave %d sources, want %d", pages+1, len(got), many)
	}
	waitFor(f.audit, `"route":"POST /ingest/sources"`)
	if a := f.audit.String(); !strings.Contains(a, `"token":"plain"`) || strings.Contains(a, "exp.json/c1") {
		t.Errorf("audit: %s", a)
	}
}

// A listing is refused as a removal is: the name checked as source_file
// is, unknown fields, a cursor the server did not make, a token bound to
// an owner, no token.
func TestIngestSourcesRefusals(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		body, want string
	}{
		{`{}`, "empty"},
		{`{"file":"../etc"}`, "leaves the vault"},
		{`{"file":"/abs"}`, "absolute"},
		{`{"file":"memory:alice"}`, "reserved"},
		{`{"file":"a\u001b[2J.json"}`, "control character U+001B"},
		{`{"file":"` + strings.Repeat("x", recall.MaxSourceIDLen+1) + `"}`, "longer than 1024 bytes"},
		{`{"file":"a.json","cursor":"%%%"}`, "invalid cursor"},
		{`{"file":"a.json","cursor":"` + strings.Repeat("A", 5000) + `"}`, "invalid cursor"},
		{`{"file":"a.json","extra":1}`, `unknown field \"extra\"`},
		{`{"file":["a.json"]}`, "field file must be a string"},
		{`[]`, "must be a JSON object"},
	} {
		if resp, body := f.do("POST", remote.SourcesPath, plainTok, tc.body); resp.StatusCode != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%.80s: %d %.300s", tc.body, resp.StatusCode, body)
		}
	}
	if status, _, body := f.sources(aliceTok, remote.SourcesRequest{File: "a.json"}); status != 403 || !strings.Contains(body, "bound to an owner") {
		t.Errorf("owner-bound token: %d %s", status, body)
	}
	if status, _, _ := f.sources("", remote.SourcesRequest{File: "a.json"}); status != 401 {
		t.Errorf("no token: %d", status)
	}
	if resp, _ := f.do("GET", remote.SourcesPath, plainTok, ""); resp.StatusCode != 405 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

// interleavingStore is the store with another writer's write made just
// before each Delete: after /ingest/remove read what to remove, before it
// removes it.
type interleavingStore struct {
	*sqlite.DB
	meanwhile func()
}

func (s *interleavingStore) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	if s.meanwhile != nil {
		s.meanwhile()
		s.meanwhile = nil
	}
	return s.DB.Delete(ctx, ids...)
}

// A source stored again after /ingest/remove read it (another client's
// upload of the same file, the server's own sweep of a folder) is kept and
// counted as kept: the removal was decided on the version read before.
// It was removed.
func TestIngestRemoveKeepsWhatWasStoredSince(t *testing.T) {
	ctx := context.Background()
	var is *interleavingStore
	f := newFixture(t, func(o *Options) {
		is = &interleavingStore{DB: o.Store.(*sqlite.DB)}
		eng := search.New(is, search.Options{Embedder: o.Embedder, MemoryLexical: true})
		if err := eng.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		o.Engine = eng
	})
	for _, id := range []string{"notes/a.md", "notes/b.md"} {
		if status, out, body := f.ingest(plainTok, chunkOf(id, 0, 1, "first copy of "+id)); status != 200 || !out.Sources[0].Complete() {
			t.Fatalf("%s: %s", id, body)
		}
	}
	text := "second copy, uploaded while the removal ran"
	is.meanwhile = func() {
		again := recall.Document{Source: recall.Source{ID: "notes/a.md", Kind: recall.KindArchive, Title: "title",
			ContentHash: recall.TextHash(text), IndexState: recall.IndexPending},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}
		if _, err := is.DB.Write(ctx, []recall.Document{again}, nil); err != nil {
			t.Errorf("the other write: %v", err)
		}
	}
	status, out, body := f.remove(plainTok, remote.RemoveRequest{Files: []string{"notes/a.md", "notes/b.md"}})
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if is.meanwhile != nil {
		t.Fatal("the removal made no Delete")
	}
	if got := fmt.Sprintf("%+v %d", out.Files, out.Removed); got != "[{Name:notes/a.md Source:notes/a.md Removed:0 Kept:1} {Name:notes/b.md Source:notes/b.md Removed:1 Kept:0}] 1" {
		t.Errorf("answer %s; want notes/a.md kept, notes/b.md removed", got)
	}
	if src, err := f.st.Source(ctx, "notes/a.md"); err != nil || src.ContentHash != recall.TextHash(text) {
		t.Errorf("notes/a.md, stored again meanwhile: %+v, %v; want the second copy", src, err)
	}
	if ids := f.archiveIDs(); ids != "notes/a.md" {
		t.Errorf("archive sources after the removal: %q; want notes/a.md", ids)
	}
}
