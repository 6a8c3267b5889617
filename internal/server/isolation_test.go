package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

// Owner isolation: a token bound to an owner never sees another owner's
// memories or diary, in any search mode, over MCP and REST, and another
// owner's key reads exactly like a missing one.
func TestOwnerIsolation(t *testing.T) {
	f := newFixture(t, nil)
	const secret = "marzipan zeppelin quartet"
	f.save("bob", "note_secret", "bob keeps the "+secret+" here")
	f.save("alice", "note_mine", "alice likes the marzipan zeppelin quartet too")
	f.archive("shared.md", "Shared", "2025-01", "the zeppelin archive is shared by everyone")

	alice := f.connect(aliceTok)
	for _, mode := range []string{recall.ModeLexical, recall.ModeSemantic, recall.ModeHybrid} {
		for _, kind := range []string{"", "memory"} {
			args := map[string]any{"query": secret, "mode": mode, "limit": 20}
			if kind != "" {
				args["kind"] = kind
			}
			out, res := mustCall[recall.SearchResponse](t, alice, "search_archive", args)
			if len(out.Results) == 0 {
				t.Errorf("mode %s: alice finds nothing, not even her own memory", mode)
			}
			for _, h := range out.Results {
				if h.Source == "note_secret" || strings.Contains(h.Text, "bob keeps") {
					t.Errorf("MCP mode %s kind %q: alice sees bob's memory: %+v", mode, kind, h)
				}
			}
			if strings.Contains(resultText(res), "bob keeps") {
				t.Errorf("MCP mode %s: bob's text in the readable result", mode)
			}

			body, _ := json.Marshal(args)
			resp, raw := f.do("POST", "/api/search", aliceTok, string(body))
			if resp.StatusCode != 200 || strings.Contains(raw, "bob keeps") || strings.Contains(raw, "note_secret") {
				t.Errorf("REST mode %s: %d %s", mode, resp.StatusCode, raw)
			}
		}
	}

	// Another owner's key reads exactly like a missing key.
	missing := resultText(call(t, alice, "read_memory", map[string]any{"key": "note_nothing"}))
	theirs := resultText(call(t, alice, "read_memory", map[string]any{"key": "note_secret"}))
	if strings.ReplaceAll(missing, "note_nothing", "K") != strings.ReplaceAll(theirs, "note_secret", "K") {
		t.Errorf("bob's key reads differently from a missing one: %q vs %q", theirs, missing)
	}
	_, restMissing := f.do("GET", "/api/memories/note_nothing", aliceTok, "")
	_, restTheirs := f.do("GET", "/api/memories/note_secret", aliceTok, "")
	if strings.ReplaceAll(restMissing, "note_nothing", "K") != strings.ReplaceAll(restTheirs, "note_secret", "K") {
		t.Errorf("REST: bob's key reads differently from a missing one: %s vs %s", restTheirs, restMissing)
	}
	for _, tc := range []struct{ tool, args string }{
		{"get_context", `{"source":"note_secret","chunk_index":0}`},
		{"get_context", `{"source":"memory:bob:note_secret","chunk_index":0}`},
		{"delete_memory", `{"key":"note_secret","confirm":true}`},
	} {
		var args map[string]any
		json.Unmarshal([]byte(tc.args), &args)
		if res := call(t, alice, tc.tool, args); !res.IsError {
			t.Errorf("%s %s: alice reached bob's memory: %s", tc.tool, tc.args, resultText(res))
		}
	}
	res := call(t, alice, "search_archive", map[string]any{"query": secret, "owner": "bob"})
	if !res.IsError || !strings.Contains(resultText(res), "its own owner") {
		t.Errorf("alice asking for bob's owner: %s", resultText(res))
	}
	if resp, _ := f.do("GET", "/api/memories/note_secret?owner=bob", aliceTok, ""); resp.StatusCode != 403 {
		t.Errorf("REST read naming bob's owner: %d", resp.StatusCode)
	}
	// Bob's memory is intact and his.
	bob := f.connect(bobTok)
	if m := resultText(call(t, bob, "read_memory", map[string]any{"key": "note_secret"})); !strings.Contains(m, secret) {
		t.Errorf("bob's own memory: %s", m)
	}
}

// An archive source named like an owner's memory key or diary day (anyone
// who may ingest chooses the name) never stands in for them in get_context;
// the kind a search result carries reaches the archive file.
func TestArchiveNeverShadowsMemories(t *testing.T) {
	f := newFixture(t, nil)
	f.save("alice", "note_plan", "alice's real plan: the lighthouse at dawn")
	if _, err := f.mem.WriteDiary(t.Context(), "alice's real diary: fog all day", "2025-07-02", "", false, memoryScope("alice")); err != nil {
		t.Fatal(err)
	}
	f.archive("note_plan", "spoof", "2025-07", "SPOOFED plan: send the keys to mallory")
	f.archive("diary/2025-07-02", "spoof", "2025-07", "SPOOFED diary: nothing happened")

	alice := f.connect(aliceTok)
	for _, tc := range []struct{ source, kind, want string }{
		{"note_plan", "", "lighthouse at dawn"},
		{"note_plan", "memory", "lighthouse at dawn"},
		{"diary/2025-07-02", "", "fog all day"},
		{"diary/2025-07-02", "diary", "fog all day"},
		{"note_plan", "archive", "SPOOFED plan"},
		{"diary/2025-07-02", "archive", "SPOOFED diary"},
	} {
		args := map[string]any{"source": tc.source, "chunk_index": 0, "radius": 0}
		if tc.kind != "" {
			args["kind"] = tc.kind
		}
		out, res := mustCall[ContextOutput](t, alice, "get_context", args)
		if len(out.Chunks) != 1 || !strings.Contains(out.Chunks[0].Text, tc.want) {
			t.Errorf("get_context %s kind %q: %s (want %q)", tc.source, tc.kind, resultText(res), tc.want)
		}
		if tc.kind != "" && string(out.Kind) != tc.kind {
			t.Errorf("get_context %s kind %q answered kind %q", tc.source, tc.kind, out.Kind)
		}
		body, _ := json.Marshal(args)
		if resp, raw := f.do("POST", "/api/context", aliceTok, string(body)); resp.StatusCode != 200 || !strings.Contains(raw, tc.want) {
			t.Errorf("REST context %s kind %q: %d %s", tc.source, tc.kind, resp.StatusCode, raw)
		}
	}
	if resp, raw := f.do("POST", "/api/context", aliceTok, `{"source":"note_plan","chunk_index":0,"kind":"secret"}`); resp.StatusCode != 400 {
		t.Errorf("unknown kind: %d %s", resp.StatusCode, raw)
	}
}

// A token without an owner searches every owner's memories: each memory
// result names its owner, and get_context given that owner reads around
// the memory that was hit, not an unowned memory (or nothing) of the same
// key. A bound token naming another owner is refused as in search.
func TestContextOfAnotherOwnersHit(t *testing.T) {
	f := newFixture(t, nil)
	f.save("alice", "notes", "alice private pineapple orchard plan")
	f.save("", "notes", "unowned notes about carrots")
	f.save("bob", "bobkey", "bob grows pineapple orchard saplings")

	plain := f.connect(plainTok)
	out, _ := mustCall[recall.SearchResponse](t, plain, "search_archive", map[string]any{"query": "pineapple orchard", "kind": "memory", "limit": 10})
	owners := map[string]string{}
	var hits []recall.Hit
	for _, h := range out.Results {
		if strings.Contains(h.Text, "pineapple") {
			owners[h.Source] = h.Owner
			hits = append(hits, h)
		}
	}
	if owners["notes"] != "alice" || owners["bobkey"] != "bob" {
		t.Fatalf("memory results do not name their owners: %+v", out.Results)
	}
	for _, h := range hits {
		args := map[string]any{"source": h.Source, "chunk_index": h.ChunkIndex, "kind": string(h.Kind), "owner": h.Owner}
		ctx, res := mustCall[ContextOutput](t, plain, "get_context", args)
		if len(ctx.Chunks) == 0 || !strings.Contains(ctx.Chunks[0].Text, "pineapple") {
			t.Errorf("get_context of %s (owner %s): %s", h.Source, h.Owner, resultText(res))
		}
		body, _ := json.Marshal(args)
		if resp, raw := f.do("POST", "/api/context", plainTok, string(body)); resp.StatusCode != 200 || !strings.Contains(raw, "pineapple") {
			t.Errorf("REST context of %s (owner %s): %d %s", h.Source, h.Owner, resp.StatusCode, raw)
		}
	}
	// Without an owner, the key names the unowned memory.
	ctx, res := mustCall[ContextOutput](t, plain, "get_context", map[string]any{"source": "notes", "chunk_index": 0, "kind": "memory"})
	if len(ctx.Chunks) == 0 || !strings.Contains(ctx.Chunks[0].Text, "carrots") {
		t.Errorf("get_context of the unowned notes: %s", resultText(res))
	}
	alice := f.connect(aliceTok)
	if res := call(t, alice, "get_context", map[string]any{"source": "bobkey", "chunk_index": 0, "owner": "bob"}); !res.IsError || !strings.Contains(resultText(res), "its own owner") {
		t.Errorf("alice naming bob's owner in get_context: %s", resultText(res))
	}
	if res := call(t, plain, "get_context", map[string]any{"source": "notes", "chunk_index": 0, "owner": "no such/owner"}); !res.IsError {
		t.Errorf("an invalid owner was accepted: %s", resultText(res))
	}
}

// get_context finds a memory however its key's accents are encoded, as
// read_memory does: keys are saved in NFC.
func TestContextOfDecomposedKey(t *testing.T) {
	f := newFixture(t, nil)
	f.save("", "caf\u00e9", "the café on the corner roasts its own beans")
	cs := f.connect(plainTok)
	out, res := mustCall[ContextOutput](t, cs, "get_context", map[string]any{"source": "cafe\u0301", "chunk_index": 0, "kind": "memory"})
	if len(out.Chunks) != 1 || !strings.Contains(out.Chunks[0].Text, "roasts") {
		t.Errorf("get_context of the decomposed key: %s", resultText(res))
	}
}

// The other paths a bound token reads through keep to its owner too: a
// passage another owner holds as well is never named in a hit's also_in
// (in any mode, over MCP and REST), another owner's diary day reads like a
// missing one (read_diary, get_context) and is not among recent_diary's
// days, and find_memories lists only the caller's keys.
func TestOwnerIsolationOnEveryReadPath(t *testing.T) {
	f := newFixture(t, nil)
	const text = "the quince lantern code is 7319"
	f.save("bob", "bob_vault", text)
	f.save("alice", "alice_copy", text)
	day, err := f.mem.WriteDiary(t.Context(), "bob walked the quince orchard alone", "", "", false, memoryScope("bob"))
	if err != nil {
		t.Fatal(err)
	}

	alice := f.connect(aliceTok)
	for _, mode := range []string{recall.ModeLexical, recall.ModeSemantic, recall.ModeHybrid} {
		args := map[string]any{"query": "quince lantern code", "mode": mode, "limit": 20}
		out, res := mustCall[recall.SearchResponse](t, alice, "search_archive", args)
		found := false
		for _, h := range out.Results {
			found = found || h.Source == "alice_copy"
			if h.Source == "bob_vault" || h.Source == "diary/"+day.Date || strings.Join(h.AlsoIn, ",") != "" {
				t.Errorf("MCP mode %s: alice's hit names bob's sources: %+v", mode, h)
			}
		}
		if !found {
			t.Errorf("mode %s: alice does not find her own copy: %s", mode, resultText(res))
		}
		if txt := resultText(res); strings.Contains(txt, "bob_vault") || strings.Contains(txt, "walked the quince") {
			t.Errorf("MCP mode %s: bob's sources in the readable result: %s", mode, txt)
		}
		body, _ := json.Marshal(args)
		if resp, raw := f.do("POST", "/api/search", aliceTok, string(body)); resp.StatusCode != 200 ||
			strings.Contains(raw, "bob_vault") || strings.Contains(raw, "also_in") || strings.Contains(raw, "walked the quince") {
			t.Errorf("REST mode %s: %d %s", mode, resp.StatusCode, raw)
		}
	}

	// Bob's diary day reads like a day nobody wrote.
	const empty = "2001-01-01"
	theirs := resultText(call(t, alice, "read_diary", map[string]any{"date": day.Date}))
	missing := resultText(call(t, alice, "read_diary", map[string]any{"date": empty}))
	if strings.ReplaceAll(theirs, day.Date, "D") != strings.ReplaceAll(missing, empty, "D") {
		t.Errorf("bob's diary day reads differently from an empty one: %q vs %q", theirs, missing)
	}
	_, restTheirs := f.do("GET", "/api/diary/"+day.Date, aliceTok, "")
	_, restMissing := f.do("GET", "/api/diary/"+empty, aliceTok, "")
	if strings.ReplaceAll(restTheirs, day.Date, "D") != strings.ReplaceAll(restMissing, empty, "D") {
		t.Errorf("REST: bob's diary day reads differently from an empty one: %s vs %s", restTheirs, restMissing)
	}
	for _, kind := range []string{"", "diary"} {
		args := map[string]any{"source": "diary/" + day.Date, "chunk_index": 0}
		if kind != "" {
			args["kind"] = kind
		}
		if res := call(t, alice, "get_context", args); !res.IsError || strings.Contains(resultText(res), "walked") {
			t.Errorf("get_context of bob's diary day (kind %q): %s", kind, resultText(res))
		}
	}
	if txt := resultText(call(t, alice, "recent_diary", map[string]any{"days": 30})); strings.Contains(txt, "walked") || strings.Contains(txt, day.Date) {
		t.Errorf("recent_diary shows bob's day: %s", txt)
	}
	if _, raw := f.do("GET", "/api/diary?days=30", aliceTok, ""); strings.Contains(raw, "walked") || strings.Contains(raw, day.Date) {
		t.Errorf("REST recent diary shows bob's day: %s", raw)
	}

	// find_memories lists alice's keys only.
	for _, prefix := range []string{"bob_", "a", "b"} {
		txt := resultText(call(t, alice, "find_memories", map[string]any{"prefix": prefix}))
		if strings.Contains(txt, "bob_vault") {
			t.Errorf("find_memories %q lists bob's key: %s", prefix, txt)
		}
		if _, raw := f.do("GET", "/api/memories?prefix="+prefix, aliceTok, ""); strings.Contains(raw, "bob_vault") {
			t.Errorf("REST find %q lists bob's key: %s", prefix, raw)
		}
	}
	if txt := resultText(call(t, alice, "find_memories", map[string]any{"prefix": "alice_"})); !strings.Contains(txt, "alice_copy") {
		t.Errorf("find_memories misses alice's own key: %s", txt)
	}
}

// A bound token's statistics count the shared archive and its own
// memories and diary days: how many memories another owner keeps, and
// their index states, are not its to read (over MCP and REST), and
// /metrics, which counts every owner's, refuses it. Tokens bound to no
// owner, and the admin, still see every count.
func TestBoundTokenStatsCountItsOwnerOnly(t *testing.T) {
	f := newFixture(t, nil)
	f.save("bob", "bob_one", "bob's first memory")
	if _, err := f.mem.WriteDiary(t.Context(), "bob's day", "", "", false, memoryScope("bob")); err != nil {
		t.Fatal(err)
	}
	// One of bob's memories waits for its vectors.
	const pending = "bob's second memory, a longer one"
	if _, err := f.st.Write(t.Context(), []recall.Document{{Source: recall.Source{ID: recall.MemoryID("bob", "bob_two"),
		Kind: recall.KindMemory, Title: "bob_two", Owner: "bob", Body: pending, ContentHash: recall.TextHash(pending),
		Size: int64(len(pending)), IndexState: recall.IndexPending},
		Chunks: []recall.Chunk{{Text: pending, Hash: recall.TextHash(pending)}}}}, nil); err != nil {
		t.Fatal(err)
	}
	f.save("alice", "alice_one", "alice's memory")
	all, err := f.st.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		sources map[string]int
		chunks  int
		bytes   int64
		states  map[string]int
	}{
		"all": {map[string]int{"memory": 3, "diary": 1}, 4, int64(len("bob's first memory") + len("bob's day") + len(pending) + len("alice's memory")),
			map[string]int{recall.IndexOK: 3, recall.IndexPending: 1}},
		"alice": {map[string]int{"memory": 1}, 1, int64(len("alice's memory")), map[string]int{recall.IndexOK: 1}},
	}
	if w := want["all"]; all.Chunks != w.chunks || all.Bytes != w.bytes || fmt.Sprint(all.IndexStates) != fmt.Sprint(w.states) {
		t.Fatalf("the store's stats: %+v; the fixture is not as this test expects", all)
	}

	for _, who := range []string{"alice", "plain", "admin"} {
		tok := map[string]string{"alice": aliceTok, "plain": plainTok, "admin": adminTok}[who]
		w := want["all"]
		if who == "alice" {
			w = want["alice"]
		}
		out, _ := mustCall[StatsOutput](t, f.connect(tok), "get_archive_stats", map[string]any{})
		var rest StatsOutput
		resp, raw := f.do("GET", "/api/stats", tok, "")
		if err := json.Unmarshal([]byte(raw), &rest); resp.StatusCode != 200 || err != nil {
			t.Fatalf("%s: GET /api/stats: %d %s", who, resp.StatusCode, raw)
		}
		for via, got := range map[string]StatsOutput{"MCP": out, "REST": rest} {
			if fmt.Sprint(got.Sources) != fmt.Sprint(w.sources) || got.Chunks != w.chunks || got.Bytes != w.bytes ||
				fmt.Sprint(got.IndexStates) != fmt.Sprint(w.states) {
				t.Errorf("%s over %s: sources %v chunks %d bytes %d states %v; want %v %d %d %v",
					who, via, got.Sources, got.Chunks, got.Bytes, got.IndexStates, w.sources, w.chunks, w.bytes, w.states)
			}
		}
		resp, raw = f.do("GET", "/metrics", tok, "")
		switch {
		case who == "alice" && (resp.StatusCode != 403 || strings.Contains(raw, "recall_sources")):
			t.Errorf("alice: /metrics answered %d %.200s; want 403", resp.StatusCode, raw)
		case who != "alice" && (resp.StatusCode != 200 || !strings.Contains(raw, `recall_sources{kind="memory"} 3`)):
			t.Errorf("%s: /metrics answered %d; want 200 counting 3 memories: %.300s", who, resp.StatusCode, raw)
		}
	}
}

// Owners are filtered before the top k, not after: another owner's many
// memories that match a query better never crowd out the caller's one,
// even with a small limit, in any mode and kind.
func TestOwnerFilterBeforeTopK(t *testing.T) {
	f := newFixture(t, nil)
	const query = "orchid telescope harbor lantern"
	for i := range 80 {
		f.save("bob", fmt.Sprintf("bob_%02d", i), query)
	}
	f.save("alice", "alice_one", query+" and a few more words of hers")
	alice := f.connect(aliceTok)
	for _, mode := range []string{recall.ModeLexical, recall.ModeSemantic, recall.ModeHybrid} {
		for _, kind := range []string{"", "memory"} {
			args := map[string]any{"query": query, "mode": mode, "limit": 3}
			if kind != "" {
				args["kind"] = kind
			}
			out, res := mustCall[recall.SearchResponse](t, alice, "search_archive", args)
			if len(out.Results) != 1 || out.Results[0].Source != "alice_one" {
				t.Errorf("mode %s kind %q: want alice's one memory alone: %s", mode, kind, resultText(res))
			}
			body, _ := json.Marshal(args)
			if resp, raw := f.do("POST", "/api/search", aliceTok, string(body)); resp.StatusCode != 200 ||
				!strings.Contains(raw, "alice_one") || strings.Contains(raw, "bob_") {
				t.Errorf("REST mode %s kind %q: %d %s", mode, kind, resp.StatusCode, raw)
			}
		}
	}
}
