package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func TestToolsListedByRole(t *testing.T) {
	f := newFixture(t, nil)
	user := slices.Sorted(slices.Values(userTools))
	all := slices.Sorted(slices.Values(append(slices.Clone(userTools), adminTools...)))
	for _, tc := range []struct {
		token string
		want  []string
	}{{aliceTok, user}, {plainTok, user}, {adminTok, all}} {
		if got := toolNames(t, f.connect(tc.token)); !slices.Equal(got, tc.want) {
			t.Errorf("token %.5s lists %v, want %v", tc.token, got, tc.want)
		}
	}
}

func TestToolAnnotationsAreTrue(t *testing.T) {
	f := newFixture(t, nil)
	res, err := f.connect(adminTok).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnlyTools := []string{"search_archive", "get_context", "get_archive_stats", "read_memory", "find_memories",
		"read_diary", "recent_diary", "list_memories", "memory_index_status"}
	for _, tl := range res.Tools {
		a := tl.Annotations
		if a == nil || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint must be false", tl.Name)
			continue
		}
		if got, want := a.ReadOnlyHint, slices.Contains(readOnlyTools, tl.Name); got != want {
			t.Errorf("%s: readOnlyHint %v, want %v", tl.Name, got, want)
		}
		if tl.Name == "delete_memory" && (a.DestructiveHint == nil || !*a.DestructiveHint) {
			t.Errorf("delete_memory must be destructiveHint")
		}
		if tl.Description == "" || len(tl.Description) < 40 {
			t.Errorf("%s: description %q is too thin", tl.Name, tl.Description)
		}
	}
}

func TestSearchOverMCP(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("2025/07/trip.md", "Trip planning", "2025-07", "We booked the night train to Vienna for the conference.",
		"The hotel near the station has a quiet courtyard.")
	f.archive("2024/01/other.md", "Other", "2024-01", "Nothing about trains here, only soup recipes.")
	cs := f.connect(plainTok)
	for _, mode := range []string{"", recall.ModeLexical, recall.ModeSemantic, recall.ModeHybrid} {
		args := map[string]any{"query": "night train Vienna"}
		if mode != "" {
			args["mode"] = mode
		}
		out, res := mustCall[recall.SearchResponse](t, cs, "search_archive", args)
		if len(out.Results) == 0 || out.Results[0].Source != "2025/07/trip.md" {
			t.Fatalf("mode %q: results %+v", mode, out.Results)
		}
		text := resultText(res)
		if !strings.Contains(text, "[1] source: 2025/07/trip.md · chunk 0 · archive · 2025-07") ||
			!strings.Contains(text, passagePrefix+"We booked the night train to Vienna") {
			t.Errorf("mode %q: readable text lacks attribution or quoting:\n%s", mode, text)
		}
	}
	out, _ := mustCall[recall.SearchResponse](t, cs, "search_archive", map[string]any{"query": "train", "since": "2025", "kind": "archive"})
	for _, h := range out.Results {
		if h.Source != "2025/07/trip.md" {
			t.Errorf("since 2025 returned %s", h.Source)
		}
	}
	ctxOut, res := mustCall[ContextOutput](t, cs, "get_context", map[string]any{"source": "2025/07/trip.md", "chunk_index": 0})
	if len(ctxOut.Chunks) != 2 || ctxOut.Chunks[1].ChunkIndex != 1 {
		t.Errorf("get_context: %+v", ctxOut)
	}
	if !strings.Contains(resultText(res), "· the requested chunk") {
		t.Errorf("get_context text: %s", resultText(res))
	}
	stats, _ := mustCall[StatsOutput](t, cs, "get_archive_stats", map[string]any{})
	if stats.Sources["archive"] != 2 || len(stats.Spaces) != 1 || stats.Spaces[0].Coverage != 1 {
		t.Errorf("stats: %+v", stats)
	}
}

func TestMemoryRoundTripOverMCP(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(aliceTok)
	saved, _ := mustCall[memory.SaveResult](t, cs, "save_memory", map[string]any{"key": "project_recall", "value": "recall stores memories in SQLite"})
	if saved.Stored != "ok" || saved.Index != recall.IndexOK || saved.Chunks != 1 {
		t.Errorf("save: %+v", saved)
	}
	m, _ := mustCall[memory.Memory](t, cs, "read_memory", map[string]any{"key": "project_recall"})
	if m.Value != "recall stores memories in SQLite" || m.Category != "project" || m.Owner != "alice" {
		t.Errorf("read: %+v", m)
	}
	found, _ := mustCall[memory.Page](t, cs, "find_memories", map[string]any{"prefix": "project_"})
	if len(found.Items) != 1 || found.Items[0].Key != "project_recall" {
		t.Errorf("find: %+v", found)
	}
	res := call(t, cs, "delete_memory", map[string]any{"key": "project_recall"})
	if !res.IsError || !strings.Contains(resultText(res), "confirm") {
		t.Errorf("delete without confirm: %v %s", res.IsError, resultText(res))
	}
	mustCall[DeleteOutput](t, cs, "delete_memory", map[string]any{"key": "project_recall", "confirm": true})
	res = call(t, cs, "read_memory", map[string]any{"key": "project_recall"})
	if !res.IsError || !strings.Contains(resultText(res), `no memory with key "project_recall"`) {
		t.Errorf("read after delete: %s", resultText(res))
	}
	out, _ := mustCall[recall.SearchResponse](t, cs, "search_archive", map[string]any{"query": "SQLite memories"})
	if len(out.Results) != 0 {
		t.Errorf("deleted memory still found: %+v", out.Results)
	}

	day, _ := mustCall[memory.DiaryResult](t, cs, "write_diary", map[string]any{"text": "walked to the lake", "date": "2025-07-01"})
	if day.Entries != 1 || day.Source != "diary/2025-07-01" {
		t.Errorf("write_diary: %+v", day)
	}
	mustCall[memory.DiaryResult](t, cs, "write_diary", map[string]any{"text": "swam", "date": "2025-07-01"})
	d, _ := mustCall[memory.Day](t, cs, "read_diary", map[string]any{"date": "2025-07-01"})
	if len(d.Entries) != 2 || d.Entries[1].Text != "swam" {
		t.Errorf("read_diary: %+v", d)
	}
	rec, _ := mustCall[RecentOutput](t, cs, "recent_diary", map[string]any{"days": 30})
	if rec.Days == nil {
		t.Errorf("recent_diary days is null")
	}
}

// Validation failures come back as tool errors that say what to fix.
func TestToolValidationErrors(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(plainTok)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_archive", map[string]any{"query": strings.Repeat("x", 501)}, "characters"},
		{"search_archive", map[string]any{"query": "x", "limit": 21}, "must be between"},
		{"search_archive", map[string]any{"query": "x", "mode": "fuzzy"}, "mode must be one of hybrid, lexical, semantic"},
		{"search_archive", map[string]any{"query": "x", "since": "yesterday"}, `since "yesterday" is not a date`},
		{"search_archive", map[string]any{"query": "x", "bogus": 1}, "unknown argument bogus: search_archive takes"},
		{"search_archive", map[string]any{}, "query is required"},
		{"search_archive", map[string]any{"query": 5}, "query must be a string"},
		{"recent_diary", map[string]any{"days": "x"}, "days must be an integer"},
		{"write_diary", map[string]any{"text": "t", "date": "2026-02-30"}, `date "2026-02-30" is not a day of the calendar`},
		{"save_memory", map[string]any{"key": "x/./y", "value": "v"}, "empty or . segment"},
		{"save_memory", map[string]any{"key": "", "value": "v"}, "key must not be empty"},
		{"search_archive", map[string]any{"query": "   "}, "query is empty"},
		{"get_context", map[string]any{"source": "a.md", "chunk_index": 0, "radius": 4}, "must be between"},
		{"get_context", map[string]any{"source": "missing.md", "chunk_index": 0}, `no source "missing.md"`},
		{"save_memory", map[string]any{"key": "bad key!", "value": "v"}, "use letters, digits and _-.:/ only"},
		{"save_memory", map[string]any{"key": strings.Repeat("k", 201), "value": "v"}, "characters"},
		{"save_memory", map[string]any{"key": "k", "value": strings.Repeat("v", 100_001)}, "characters"},
		{"find_memories", map[string]any{}, "give at least one of prefix, category, since or until"},
		{"find_memories", map[string]any{"prefix": "a", "limit": 50}, "must be between"},
		{"recent_diary", map[string]any{"days": 31}, "must be between"},
		{"read_diary", map[string]any{"date": "July"}, "not YYYY-MM-DD"},
		// Bounds shared by every tool that takes the property.
		{"save_memory", map[string]any{"key": "k", "value": "v", "category": strings.Repeat("c", 65)}, "characters"},
		{"find_memories", map[string]any{"prefix": strings.Repeat("p", 201)}, "characters"},
		{"read_memory", map[string]any{"key": "k", "owner": strings.Repeat("o", 65)}, "characters"},
		{"get_context", map[string]any{"source": "a.md", "chunk_index": 0, "owner": strings.Repeat("o", 65)}, "characters"},
		{"write_diary", map[string]any{"text": "t", "date": "2025-07-01T10:00"}, "characters"},
		// Found by the audit with the Python and TypeScript SDK clients.
		{"get_archive_stats", map[string]any{"verbose": true}, "unknown argument verbose: get_archive_stats takes no arguments"},
		{"get_context", map[string]any{"source": "a.md", "chunk_index": -1}, "chunk_index must be between 0 and 1000000000"},
	} {
		res := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(resultText(res), tc.want) {
			t.Errorf("%s %.80v: isError=%v %q, want it to mention %q", tc.tool, tc.args, res.IsError, resultText(res), tc.want)
		}
	}
	// arguments that are no object, which an SDK client cannot send.
	sid := f.rawSession(plainTok)
	for _, args := range []string{`"x"`, `[]`, `5`} {
		_, body := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_archive","arguments":`+args+`}}`)
		if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, `"text":"arguments must be an object"`) {
			t.Errorf("arguments %s: %s", args, body)
		}
	}
}

func TestAdminToolsOverMCP(t *testing.T) {
	f := newFixture(t, nil)
	f.save("alice", "note_a", "first note")
	// A chunk without a vector, as after an embedder outage.
	f.emb.FailOn(0, 1)
	f.save("alice", "note_b", "second note pending")
	f.emb.FailOn(0, 0)
	cs := f.connect(adminTok)
	st, _ := mustCall[memory.Status](t, cs, "memory_index_status", map[string]any{})
	if st.Counts[recall.IndexPending] != 1 || len(st.Pending) != 1 || st.Pending[0].Key != "note_b" {
		t.Errorf("status: %+v", st)
	}
	rep, _ := mustCall[RepairOutput](t, cs, "repair_archive", map[string]any{"max_texts": 10})
	if !rep.Done || rep.Missing != 0 || rep.Embedded != 1 || !strings.Contains(rep.Note, "reached the end") {
		t.Errorf("repair: %+v", rep)
	}
	page, _ := mustCall[memory.Page](t, cs, "list_memories", map[string]any{"limit": 1})
	if len(page.Items) != 1 || page.Next == "" {
		t.Errorf("list page 1: %+v", page)
	}
	re, _ := mustCall[memory.SaveResult](t, cs, "reindex_memory", map[string]any{"key": "note_b", "owner": "alice"})
	if re.Index != recall.IndexOK {
		t.Errorf("reindex: %+v", re)
	}
}

func TestBackgroundLoadsIndexAndRepairs(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.RepairPause = time.Millisecond })
	f.emb.FailOn(0, 1)
	f.save("", "k", "waiting for its vector")
	f.emb.FailOn(0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.srv.Start(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := f.srv.stats(ctx, caller{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Index.State == "ready" && out.Repair.State == "idle" && out.Spaces[0].Missing == 0 {
			if out.Repair.Embedded != 1 {
				t.Errorf("repair embedded %d texts, want 1", out.Repair.Embedded)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background work did not finish: %+v", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every string a tool takes has its length bound in the schema clients see
// (the handlers check the same), whichever tool takes it.
func TestToolStringsAreBounded(t *testing.T) {
	f := newFixture(t, nil)
	res, err := f.connect(adminTok).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		var s struct {
			Properties map[string]struct {
				Type      any   `json:"type"`
				MaxLength *int  `json:"maxLength"`
				Enum      []any `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		for name, p := range s.Properties {
			if p.Type == "string" && p.MaxLength == nil && p.Enum == nil {
				t.Errorf("%s: %s has no maxLength", tl.Name, name)
			}
		}
	}
}

// The stats hold two counts named vectors: a space's distinct texts
// embedded (a chunk text under its header) with a vector, and the index's
// entries, one per paragraph group of each chunk. get_archive_stats' output
// schema says which is which, and the counts are what it says: a
// three-paragraph text in two files of one title and a short text in a
// third are 2 texts and 3+3+1 entries.
func TestStatsSayWhatTheyCount(t *testing.T) {
	f := newFixture(t, nil)
	para := strings.Repeat("word ", 55)
	three := para + "\n\nkettle " + para + "\n\nriver " + para
	f.archive("a.md", "A", "", three)
	f.archive("b.md", "A", "", three)
	f.archive("c.md", "C", "", "a short text")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.srv.Start(ctx)
	var out StatsOutput
	if !until(func() bool {
		_, raw := f.do("GET", "/api/stats", plainTok, "")
		out = StatsOutput{}
		return json.Unmarshal([]byte(raw), &out) == nil && out.Index.State == "ready"
	}) {
		t.Fatalf("the index was never ready: %+v", out)
	}
	if len(out.Spaces) != 1 || out.Spaces[0].Vectors != 2 || out.Index.Vectors != 7 {
		t.Errorf("stats %+v; want 2 texts with a vector in the space and 7 index entries", out)
	}

	res, err := f.connect(plainTok).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema any
	for _, tl := range res.Tools {
		if tl.Name == "get_archive_stats" {
			schema = tl.OutputSchema
		}
	}
	describe := func(path ...string) string {
		node := schema
		for _, key := range path {
			m, _ := node.(map[string]any)
			node = m[key]
		}
		m, _ := node.(map[string]any)
		d, _ := m["description"].(string)
		return d
	}
	if d := describe("properties", "spaces", "items", "properties", "vectors"); !strings.Contains(d, "distinct chunk texts") {
		t.Errorf("spaces[].vectors is described as %q; want it to say it counts distinct texts", d)
	}
	if d := describe("properties", "index", "properties", "vectors"); !strings.Contains(d, "one per unit vector (paragraph group) of each chunk") || !strings.Contains(d, "distinct texts") {
		t.Errorf("index.vectors is described as %q; want it to say it counts index entries, and how they differ from texts", d)
	}
}
