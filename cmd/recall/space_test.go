package main

import (
	"database/sql"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	_ "modernc.org/sqlite"
)

// fakeOllama stands in for a remote Ollama server: /api/embed answers with
// deterministic vectors whose size depends on the model, and can be told to
// fail.
func fakeOllama(t *testing.T, down *atomic.Bool) *httptest.Server {
	srv := httptest.NewServer(ollamaHandler(down))
	t.Cleanup(srv.Close)
	return srv
}

// ollamaHandler answers fakeOllama's requests.
func ollamaHandler(down *atomic.Bool) http.Handler {
	dims := map[string]int{"model-a": 16, "model-b": 24}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/embed" {
			http.NotFound(w, r)
			return
		}
		if down.Load() {
			http.Error(w, "model runner crashed", http.StatusInternalServerError)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		dim, ok := dims[req.Model]
		if !ok {
			w.WriteHeader(404)
			json.NewEncoder(w).Encode(map[string]string{"error": "model '" + req.Model + "' not found"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vectorsOf(req.Input, dim)})
	})
}

// ollamaEnv is a test environment whose embedder is model-a of a fake
// Ollama server.
func ollamaEnv(t *testing.T) map[string]string {
	var down atomic.Bool
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "ollama"
	env["RECALL_MODEL"] = "model-a"
	env["RECALL_OLLAMA_URL"] = srv.URL
	return env
}

func TestSwitchModelsWithoutDowntime(t *testing.T) {
	env := ollamaEnv(t)

	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	search := func() recall.SearchResponse {
		t.Helper()
		out, errs, code := run(t, env, "search", "--json", "revive a sourdough starter")
		if code != 0 {
			t.Fatalf("search: %s", errs)
		}
		var r recall.SearchResponse
		json.Unmarshal([]byte(out), &r)
		if len(r.Results) == 0 || r.Results[0].Source != "2025/09/sourdough.md" {
			t.Fatalf("search during the switch: %+v", r)
		}
		return r
	}
	if r := search(); r.Mode != recall.ModeHybrid {
		t.Fatalf("mode %s: %s", r.Mode, r.Note)
	}

	// A new space alongside; reads stay on the old one until it is complete.
	if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-b", "space", "create", "b"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "space", "use", "b"); code == 0 || !strings.Contains(errs, "repair") {
		t.Fatalf("using an incomplete space: exit %d %s", code, errs)
	}
	search()
	if _, errs, code := run(t, env, "repair", "--space", "b", "--limit", "3"); code != 0 {
		t.Fatal(errs)
	}
	search()
	if out, errs, code := run(t, env, "repair", "--space", "b"); code != 0 || !strings.Contains(out, "complete") {
		t.Fatalf("repair: %s %s", out, errs)
	}
	if _, errs, code := run(t, env, "space", "use", "b"); code != 0 {
		t.Fatal(errs)
	}
	// Queries now use model-b (the read space's model), whatever is configured.
	if r := search(); r.Mode != recall.ModeHybrid {
		t.Fatalf("after the switch: %s %s", r.Mode, r.Note)
	}
	out, _, _ := run(t, env, "space", "list", "--json")
	var spaces []recall.SpaceStats
	json.Unmarshal([]byte(out), &spaces)
	if len(spaces) != 2 {
		t.Fatalf("spaces: %s", out)
	}
	for _, s := range spaces {
		if s.Name == "b" && (!s.Read || s.Dim != 24 || s.Coverage != 1) {
			t.Fatalf("space b: %+v", s)
		}
	}
	if _, errs, code := run(t, env, "space", "drop", "b"); code == 0 {
		t.Fatalf("dropping the read space must be refused: %s", errs)
	}
	for _, s := range spaces {
		if s.Name != "b" {
			if _, errs, code := run(t, env, "space", "drop", s.Name); code != 0 {
				t.Fatalf("drop %s: %s", s.Name, errs)
			}
		}
	}
	search()
}

// TestEmbedderFailureDuringSweep: chunks are stored and searchable by text
// when the embedder fails; repair completes them once it is back.
func TestEmbedderFailureDuringSweep(t *testing.T) {
	var down atomic.Bool
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "ollama"
	env["RECALL_MODEL"] = "model-a"
	env["RECALL_OLLAMA_URL"] = srv.URL
	// Create the space while the server is up, then let it fail.
	if _, errs, code := run(t, env, "memory", "save", "note_probe", "a probe"); code != 0 {
		t.Fatal(errs)
	}
	down.Store(true)
	out, errs, code := run(t, env, "sweep", sampleVault)
	if code != 0 || !strings.Contains(out, "no vector yet") {
		t.Fatalf("sweep with a failing embedder: exit %d\n%s\n%s", code, out, errs)
	}
	out, _, _ = run(t, env, "search", "--json", "--mode", "lexical", "sourdough")
	if !strings.Contains(out, "sourdough.md") {
		t.Fatalf("text search after embedder failure: %s", out)
	}
	out, _, _ = run(t, env, "stats", "--json")
	var st recall.Stats
	json.Unmarshal([]byte(out), &st)
	if len(st.Spaces) != 1 || st.Spaces[0].Missing == 0 {
		t.Fatalf("stats: %s", out)
	}
	if _, _, code := run(t, env, "repair"); code == 0 {
		t.Fatal("repair with the embedder still down should fail")
	}
	down.Store(false)
	if out, errs, code := run(t, env, "repair"); code != 0 || !strings.Contains(out, "complete") {
		t.Fatalf("repair: %s %s", out, errs)
	}
	out, _, _ = run(t, env, "stats", "--json")
	json.Unmarshal([]byte(out), &st)
	if st.Spaces[0].Missing != 0 || st.Spaces[0].Coverage != 1 {
		t.Fatalf("after repair: %+v", st.Spaces[0])
	}
}

// copyModel copies the tiny test model into dir/model (every model directory
// in this test has the same name) and, for variant > 0, changes bytes
// throughout its weights: another model of the same shape.
func copyModel(t *testing.T, dir string, variant byte) string {
	t.Helper()
	src := "../../internal/embed/encoder/testdata/bge-tiny"
	dst := filepath.Join(dir, "model")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if variant > 0 {
		w := filepath.Join(dst, "model.safetensors")
		b, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		for k := 2; k < 8; k++ {
			b[len(b)*k/8&^3+3] ^= variant // a float32's sign and exponent
		}
		if err := os.WriteFile(w, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// twoModels sets up a database swept with model a, another model b of the
// same shape in a folder of the same name, and the one-file vault.
func twoModels(t *testing.T) (env map[string]string, a, b, vault string) {
	t.Helper()
	env = testEnv(t)
	env["RECALL_EMBEDDER"] = "builtin"
	a = copyModel(t, filepath.Join(t.TempDir(), "a"), 0)
	b = copyModel(t, filepath.Join(t.TempDir(), "b"), 0x5a)
	vault = t.TempDir()
	if err := os.WriteFile(filepath.Join(vault, "c.md"), []byte("**User:** the quick brown fox\n\n**Assistant:** jumps over the lazy dog\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, env, "--model", a, "sweep", vault); code != 0 {
		t.Fatalf("sweep with model a: %s", errs)
	}
	return env, a, b, vault
}

// A folder named without a slash (--model model, from the folder above
// it) is loaded as a folder, so it is named by its files too: two
// different models in folders called "model" once shared one space named
// "model".
func TestModelFolderByBareNameIsFingerprinted(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "builtin"
	a, b := t.TempDir(), t.TempDir()
	copyModel(t, a, 0)
	copyModel(t, b, 7)
	for i, dir := range []string{a, b} {
		t.Chdir(dir)
		if _, errs, code := run(t, env, "--model", "model", "memory", "save", "note_"+string(rune('a'+i)), "hello"); code != 0 {
			t.Fatalf("memory save with model %d: %s", i, errs)
		}
	}
	out, errs, _ := run(t, env, "space", "list", "--json")
	var spaces []recall.SpaceStats
	if err := json.Unmarshal([]byte(out), &spaces); err != nil {
		t.Fatalf("space list: %v: %s %s", err, out, errs)
	}
	if len(spaces) != 2 || spaces[0].Model == spaces[1].Model {
		t.Errorf("two different models in folders named model: spaces %+v", spaces)
	}
}

// A model loaded from a directory is named by its files, not by the
// directory's name: two different models in directories called "model"
// get a space each, and a space made from a directory can be filled and
// read by pointing --model at that directory again.
func TestModelDirectoriesAreToldApart(t *testing.T) {
	env, _, b, _ := twoModels(t)
	if _, errs, code := run(t, env, "--model", b, "space", "create", "other", "--embedder", "builtin"); code != 0 {
		t.Fatalf("space create with model b: %s", errs)
	}
	out, _, _ := run(t, env, "space", "list", "--json")
	var spaces []recall.SpaceStats
	if err := json.Unmarshal([]byte(out), &spaces); err != nil {
		t.Fatalf("space list: %v: %s", err, out)
	}
	models := map[string]string{}
	for _, s := range spaces {
		models[s.Name] = s.Model
	}
	if len(models) != 2 || models["other"] == "" {
		t.Fatalf("want the sweep's space and \"other\": %v", models)
	}
	for name, m := range models {
		if name != "other" && m == models["other"] {
			t.Fatalf("two different models share the name %q: %v", m, models)
		}
	}
	if _, errs, code := run(t, env, "--model", b, "repair", "--space", "other"); code != 0 {
		t.Fatalf("repair of a space made from a model directory: %s", errs)
	}
	if _, errs, code := run(t, env, "--model", b, "space", "use", "other"); code != 0 {
		t.Fatalf("space use: %s", errs)
	}
	out, errs, code := run(t, env, "--model", b, "search", "--mode", "semantic", "--json", "lazy dog")
	if code != 0 || !strings.Contains(out, "c.md") || strings.Contains(errs, "lexical-only") {
		t.Fatalf("semantic search in the new space: exit %d: %s %s", code, out, errs)
	}
}

// A space made by a recall that named a directory's model after the
// directory alone is still this model's when the model's vectors prove it:
// searches read it and sweeps fill it, and another model in a folder of the
// same name is not taken for it.
func TestLegacyDirectoryModelSpace(t *testing.T) {
	env, a, b, vault := twoModels(t)
	// What the earlier version recorded: the model named "model".
	db, err := sql.Open("sqlite", env["RECALL_DB"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE spaces SET model = 'model'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, errs, code := run(t, env, "--model", a, "search", "--mode", "semantic", "--json", "lazy dog")
	if code != 0 || !strings.Contains(out, "c.md") || strings.Contains(errs, "lexical-only") {
		t.Fatalf("the legacy space is not read: exit %d: %s %s", code, out, errs)
	}
	list := func() []recall.SpaceStats {
		out, _, _ := run(t, env, "space", "list", "--json")
		var spaces []recall.SpaceStats
		if err := json.Unmarshal([]byte(out), &spaces); err != nil {
			t.Fatalf("space list: %v: %s", err, out)
		}
		return spaces
	}
	if n := len(list()); n != 1 {
		t.Fatalf("%d spaces after using the legacy one, want 1", n)
	}
	// Another model in a folder of the same name gets a space of its own.
	if _, errs, code := run(t, env, "--model", b, "sweep", "--full", vault); code != 0 {
		t.Fatal(errs)
	}
	if n := len(list()); n != 2 {
		t.Fatalf("%d spaces after sweeping with another model called model, want 2", n)
	}
}

// TestServeFollowsSpaceSwitch: `recall space use` run beside a server moves
// the server's searches to the new space and its model within seconds,
// without a restart.
func TestServeFollowsSpaceSwitch(t *testing.T) {
	env := ollamaEnv(t)
	env["RECALL_TOKEN"] = serveToken
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	url, stderr, stop := startServeLoaded(t, env)
	defer stop()
	readSpace := func() string {
		code, body := get(t, url+"/api/stats", serveToken)
		var st struct {
			Index struct {
				Space string `json:"space"`
			} `json:"index"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("stats: %d %s", code, body)
		}
		return st.Index.Space
	}
	before := readSpace()

	if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-b", "space", "create", "b"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "repair", "--space", "b"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "space", "use", "b"); code != 0 {
		t.Fatal(errs)
	}
	waitFor(t, func() bool { return readSpace() == "b" }, "the server to read space b")
	if !strings.Contains(stderr.String(), "read_space=b") {
		t.Errorf("the server did not log the switch: %s", stderr.String())
	}
	// Queries are embedded with model-b (24 dimensions) for b's index: a
	// query vector of model-a would fail every semantic search.
	code, body := send(t, "POST", url+"/api/search", serveToken, `{"query": "revive a sourdough starter", "mode": "semantic"}`)
	var r recall.SearchResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil || code != 200 {
		t.Fatalf("semantic search after the switch: %d %s", code, body)
	}
	if r.Mode != recall.ModeSemantic || len(r.Results) == 0 {
		t.Errorf("semantic search after the switch from %s: mode %s, %d results, note %q", before, r.Mode, len(r.Results), r.Note)
	}

	// The server's writes moved too: a memory it saves is embedded with
	// model-b into b, and dropping the old space, as the switching recipe
	// does next, breaks nothing.
	save := func(key, value string) string {
		t.Helper()
		code, body := send(t, "PUT", url+"/api/memories/"+key, serveToken, `{"value":"`+value+`"}`)
		if code != 200 {
			t.Fatalf("save %s: %d %s", key, code, body)
		}
		return body
	}
	if out := save("note_axolotl", "my axolotl regrew a gill"); !strings.Contains(out, `"model":"ollama/model-b"`) || !strings.Contains(out, `"index":"ok"`) {
		t.Errorf("a save after the switch: %s", out)
	}
	if _, errs, code := run(t, env, "space", "drop", before); code != 0 {
		t.Fatalf("drop %s: %s", before, errs)
	}
	if out := save("note_newt", "the newt hides under the log"); !strings.Contains(out, `"index":"ok"`) {
		t.Errorf("a save after the old space was dropped: %s", out)
	}
	out, _, _ := run(t, env, "space", "list", "--json")
	var spaces []recall.SpaceStats
	json.Unmarshal([]byte(out), &spaces)
	if len(spaces) != 1 || spaces[0].Name != "b" || spaces[0].Missing != 0 {
		t.Errorf("spaces after the server's saves: %s", out)
	}
}

// Vectors are not exported: an imported memory reads "pending" until
// repair embeds it, then "ok" (it was restored as "ok" with no vector).
func TestImportedMemoryIsPendingUntilRepaired(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "memory", "save", "note_a", "Ann keeps bees on the roof."); code != 0 {
		t.Fatal(errs)
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if _, errs, code := run(t, env, "export", "--out", dump); code != 0 {
		t.Fatal(errs)
	}
	env2 := ollamaEnv(t)
	if _, errs, code := run(t, env2, "import", dump); code != 0 {
		t.Fatal(errs)
	}
	state := func() string {
		t.Helper()
		out, errs, code := run(t, env2, "memory", "get", "note_a", "--json")
		if code != 0 {
			t.Fatal(errs)
		}
		var item struct {
			Index string `json:"index"`
		}
		if err := json.Unmarshal([]byte(out), &item); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return item.Index
	}
	if s := state(); s != recall.IndexPending {
		t.Errorf("after import: index %q, want pending", s)
	}
	if _, errs, code := run(t, env2, "repair"); code != 0 {
		t.Fatal(errs)
	}
	if s := state(); s != recall.IndexOK {
		t.Errorf("after repair: index %q, want ok", s)
	}
}

// A sweep without an embedder writes its sources "ok" (there is no space
// to miss vectors in) and a save without one "skipped". Creating the first
// space makes it the read space, which holds no vector yet: until repair
// fills it, every source with text is pending, in the export and in stats.
func TestFirstSpaceMakesSweptSourcesPendingUntilRepaired(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "--embedder", "none", "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := run(t, env, "--embedder", "none", "memory", "save", "note_a", "Ann keeps bees on the roof."); code != 0 {
		t.Fatal(errs)
	}
	states := func() map[string]int {
		t.Helper()
		out, errs, code := run(t, env, "export")
		if code != 0 {
			t.Fatal(errs)
		}
		n := map[string]int{}
		for line := range strings.Lines(out) {
			var src struct {
				Kind       string `json:"kind"`
				IndexState string `json:"index_state"`
				ChunkCount int    `json:"chunk_count"`
			}
			if err := json.Unmarshal([]byte(line), &src); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if src.ChunkCount > 0 {
				n[src.Kind+" "+src.IndexState]++
			}
		}
		return n
	}
	memoryLine := func() string {
		t.Helper()
		out, errs, code := run(t, env, "stats")
		if code != 0 {
			t.Fatal(errs)
		}
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "memory index:") {
				return strings.TrimSpace(line)
			}
		}
		t.Fatalf("stats without a memory index line:\n%s", out)
		return ""
	}
	before := states()
	archives := before["archive ok"]
	if archives == 0 || before["memory skipped"] != 1 || len(before) != 2 {
		t.Fatalf("swept and saved without an embedder: %v; want archive sources ok and one memory skipped", before)
	}
	if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-a", "space", "create", "first"); code != 0 {
		t.Fatal(errs)
	}
	if got, want := states(), map[string]int{"archive pending": archives, "memory pending": 1}; !maps.Equal(got, want) {
		t.Errorf("once the first space exists, before repair: %v; want %v", got, want)
	}
	if got, want := memoryLine(), "memory index: ok 0, pending 1, skipped 0"; got != want {
		t.Errorf("stats before repair: %q; want %q", got, want)
	}
	if _, errs, code := run(t, env, "repair"); code != 0 {
		t.Fatal(errs)
	}
	if got, want := states(), map[string]int{"archive ok": archives, "memory ok": 1}; !maps.Equal(got, want) {
		t.Errorf("after repair: %v; want %v", got, want)
	}
	if got, want := memoryLine(), "memory index: ok 1, pending 0, skipped 0"; got != want {
		t.Errorf("stats after repair: %q; want %q", got, want)
	}
}

// On a database without a space, an embedder that cannot be reached to
// learn its vector size leaves the command text-only: text is stored, and
// once the embedder is back the first command makes the space and repair
// embeds what was stored meanwhile (memories saved as skipped end ok).
func TestUnreachableEmbedderOnFreshDatabaseStoresText(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	srv := fakeOllama(t, &down)
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "ollama"
	env["RECALL_MODEL"] = "model-a"
	env["RECALL_OLLAMA_URL"] = srv.URL
	for _, args := range [][]string{
		{"sweep", sampleVault},
		{"memory", "save", "note_while_down", "saved while the embedder was down"},
		{"diary", "write", "--date", "2025-07-01", "written while the embedder was down"},
	} {
		out, errs, code := run(t, env, args...)
		if code != 0 || !strings.Contains(errs, "could not be reached to learn its vector size") || !strings.Contains(errs, "recall repair") {
			t.Fatalf("%v with the embedder down: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
	out, _, _ := run(t, env, "search", "--json", "--kind", "archive,memory,diary", "sourdough")
	if !strings.Contains(out, "sourdough.md") {
		t.Fatalf("text search after a text-only sweep: %s", out)
	}
	if out, _, _ := run(t, env, "memory", "get", "note_while_down"); !strings.Contains(out, "saved while") {
		t.Fatalf("memory saved text-only: %q", out)
	}

	down.Store(false)
	if _, errs, code := run(t, env, "memory", "save", "note_after", "saved once the embedder was back"); code != 0 || errs != "" {
		t.Fatalf("save with the embedder back: exit %d %s", code, errs)
	}
	if out, errs, code := run(t, env, "repair"); code != 0 || !strings.Contains(out, "complete") {
		t.Fatalf("repair: exit %d %s %s", code, out, errs)
	}
	out, _, _ = run(t, env, "stats", "--json")
	var st recall.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Spaces) != 1 || st.Spaces[0].Missing != 0 || st.Spaces[0].Vectors == 0 {
		t.Fatalf("spaces after repair: %+v", st.Spaces)
	}
	if st.IndexStates[recall.IndexOK] != 3 || len(st.IndexStates) != 1 {
		t.Fatalf("memory index states after repair: %v, want 3 ok", st.IndexStates)
	}
}

func TestSpaceListJSONWithoutSpaces(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	if out, errs, code := run(t, env, "space", "list", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("space list --json without spaces: exit %d, %q %s", code, out, errs)
	}
}

// dimOllama is an Ollama stand-in whose one model (one that can shorten
// its vectors, as qwen3-embedding or nomic-embed-text can) answers 16
// values, or the number asked for in "dimensions".
func dimOllama(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model      string   `json:"model"`
			Input      []string `json:"input"`
			Dimensions int      `json:"dimensions"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		dim := 16
		if req.Dimensions > 0 {
			dim = req.Dimensions
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": vectorsOf(req.Input, dim)})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// switchToShorterVectors sweeps the sample vault with model mx at its own
// size (16), then makes, fills and reads from a space of mx at 8 values
// (dimensions set only for those commands). env is the environment
// without dimensions.
func switchToShorterVectors(t *testing.T, env map[string]string) {
	t.Helper()
	small := maps.Clone(env)
	small["RECALL_DIMENSIONS"] = "8"
	for _, args := range [][]string{
		{"--embedder", "ollama", "--model", "mx", "space", "create", "small"},
		{"repair", "--space", "small"},
		{"space", "use", "small"},
	} {
		if out, errs, code := run(t, small, args...); code != 0 {
			t.Fatalf("%v: %s %s", args, out, errs)
		}
	}
}

// A space of the configured model at another size (made with dimensions
// set) is searched with queries of its size, by commands configured
// without dimensions, and sweeps write to the space of their own size.
func TestSpaceOfTheSameModelAtAnotherSize(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "mx", dimOllama(t).URL
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	switchToShorterVectors(t, env)
	out, errs, code := run(t, env, "search", "--json", "revive a sourdough starter")
	var r recall.SearchResponse
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Mode != recall.ModeHybrid || r.Note != "" {
		t.Errorf("search of the 8-value space: exit %d, mode %q, note %q, %s", code, r.Mode, r.Note, errs)
	}
	if _, errs, code := run(t, env, "memory", "save", "note_x", "my axolotl regrew a gill"); code != 0 {
		t.Fatalf("save: %s", errs)
	}
	out, _, _ = run(t, env, "space", "list", "--json")
	var spaces []recall.VectorSpace
	json.Unmarshal([]byte(out), &spaces)
	for _, sp := range spaces {
		if sp.Dim != 8 && sp.Dim != 16 {
			t.Errorf("space %s holds %d-value vectors", sp.Name, sp.Dim)
		}
	}
	if out, errs, code := run(t, env, "repair"); code != 0 {
		t.Errorf("repair of the configured model's space after the save: exit %d %s %s", code, out, errs)
	}
}

// A running server follows a switch to a space of its model at another
// size: its searches stay hybrid, and what it saves is indexed there.
func TestServeFollowsSwitchToAnotherSize(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "mx", dimOllama(t).URL
	env["RECALL_TOKEN"] = serveToken
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	url, stderr, stop := startServeLoaded(t, env)
	defer stop()
	switchToShorterVectors(t, env)
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "read_space=small") }, "the server to follow")
	code, body := send(t, "POST", url+"/api/search", serveToken, `{"query": "revive a sourdough starter", "mode": "hybrid"}`)
	var r recall.SearchResponse
	if json.Unmarshal([]byte(body), &r); code != 200 || r.Mode != recall.ModeHybrid || r.Note != "" {
		t.Errorf("hybrid search after the switch: %d mode %q note %q", code, r.Mode, r.Note)
	}
	if code, body := send(t, "PUT", url+"/api/memories/note_x", serveToken, `{"value":"my axolotl regrew a gill"}`); code != 200 || !strings.Contains(body, `"index":"ok"`) {
		t.Errorf("a save after the switch: %d %s", code, body)
	}
}

// TestServeWithoutAModelFollowsASpaceMadeLater: a server started while its
// model could not be used (Ollama down on a new database, so no space
// could be made) runs on full text with repair off. Once another process
// makes a space with a model the server can reach, the server searches it
// and its background repair embeds what was stored meanwhile, without a
// restart. A server configured with embedder none stays on full text.
func TestServeWithoutAModelFollowsASpaceMadeLater(t *testing.T) {
	for _, embedder := range []string{"ollama", "none"} {
		t.Run(embedder, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			srv := fakeOllama(t, &down)
			env := testEnv(t)
			env["RECALL_OLLAMA_URL"] = srv.URL
			env["RECALL_TOKEN"] = serveToken
			if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 { // text only
				t.Fatal(errs)
			}
			senv := maps.Clone(env)
			senv["RECALL_EMBEDDER"], senv["RECALL_MODEL"] = embedder, "model-a"
			url, stderr, stop := startServeLoaded(t, senv)
			defer stop()
			stat := func() spaceStats { return readSpaceStats(t, url) }
			if st := stat(); st.Repair.State != "off" || st.Index.Space != "" {
				t.Fatalf("a server started without a model: %+v; want repair off, no read space", st)
			}

			down.Store(false)
			// The first space made is the read space.
			if _, errs, code := run(t, env, "--embedder", "ollama", "--model", "model-b", "space", "create", "b"); code != 0 {
				t.Fatal(errs)
			}
			if embedder == "none" {
				waitFor(t, func() bool { return strings.Contains(stderr.String(), "read_space=b") }, "the server to see space b")
				if st := stat(); st.Repair.State != "off" || st.Index.Space != "" {
					t.Errorf("a server configured with embedder none: %+v; want repair off, no read space", st)
				}
				return
			}
			waitFor(t, func() bool {
				st := stat()
				return st.Index.Space == "b" && st.Repair.Space == "b" && st.Repair.State == "idle" &&
					len(st.Spaces) == 1 && st.Spaces[0].Missing == 0
			}, "the server to read space b and repair its vectors")
		})
	}
}

// TestReadSpaceSearchedWhenTheConfiguredModelIsMissing: with the configured
// model unusable (here the built-in model, not installed), searches
// still embed queries with the read space's model when that is another one
// that can be used, and new text is stored for repair.
func TestReadSpaceSearchedWhenTheConfiguredModelIsMissing(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	missing := maps.Clone(env)
	missing["RECALL_EMBEDDER"] = "builtin"
	delete(missing, "RECALL_MODEL")
	missing["RECALL_MODELS_DIR"] = t.TempDir()
	out, errs, code := run(t, missing, "search", "--json", "revive a sourdough starter")
	if code != 0 {
		t.Fatalf("search: %s", errs)
	}
	var r recall.SearchResponse
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Mode != recall.ModeHybrid || len(r.Results) == 0 || r.Results[0].Source != "2025/09/sourdough.md" {
		t.Fatalf("mode %s (%s), results %+v; stderr %s", r.Mode, r.Note, r.Results, errs)
	}
	if !strings.Contains(errs, "using read space") || strings.Contains(errs, "lexical-only") {
		t.Fatalf("stderr: %s", errs)
	}

	// Its own model down too: full text, saying why.
	missing["RECALL_OLLAMA_URL"] = "http://127.0.0.1:1"
	out, errs, code = run(t, missing, "search", "--json", "revive a sourdough starter")
	if code != 0 {
		t.Fatalf("search: %s", errs)
	}
	r = recall.SearchResponse{}
	json.Unmarshal([]byte(out), &r)
	if r.Mode != recall.ModeLexical || r.Note == "" || len(r.Results) == 0 {
		t.Fatalf("mode %s (%s), %d results; stderr %s", r.Mode, r.Note, len(r.Results), errs)
	}
}

// TestServeUsesTheReadSpacesModelWhenTheConfiguredOneIsMissing: a server
// whose configured model is unusable (the built-in one, not installed) but
// whose read space's model can be used searches with that model, and
// embeds and repairs into the read space with it: once, its repair stayed
// "off" and what it stored (a memory saved through it) was never embedded.
func TestServeUsesTheReadSpacesModelWhenTheConfiguredOneIsMissing(t *testing.T) {
	env := ollamaEnv(t)
	env["RECALL_TOKEN"] = serveToken
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	missing := maps.Clone(env)
	missing["RECALL_EMBEDDER"] = "builtin"
	delete(missing, "RECALL_MODEL")
	missing["RECALL_MODELS_DIR"] = t.TempDir()
	url, stderr, stop := startServeLoaded(t, missing)
	defer stop()
	if !strings.Contains(stderr.String(), "using read space") {
		t.Fatalf("stderr: %s", stderr.String())
	}
	if code, body := send(t, "PUT", url+"/api/memories/note_x", serveToken, `{"value":"my axolotl regrew a gill"}`); code != 200 {
		t.Fatalf("save: %d %s", code, body)
	}
	var last spaceStats
	for range 200 { // 10 s: the repair of one memory takes milliseconds
		last = readSpaceStats(t, url)
		if last.Repair.State != "off" && len(last.Spaces) == 1 && last.Spaces[0].Missing == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("stats %+v: want the read space repaired by the model the server searches it with", last)
}

// spaceStats is the part of a server's /api/stats the space tests read.
type spaceStats struct {
	Spaces []struct {
		Name    string `json:"name"`
		Missing int    `json:"missing"`
	} `json:"spaces"`
	Index struct {
		Space string `json:"space"`
	} `json:"index"`
	Repair struct {
		State string `json:"state"`
		Space string `json:"space"`
	} `json:"repair"`
}

func readSpaceStats(t *testing.T, url string) spaceStats {
	t.Helper()
	code, body := get(t, url+"/api/stats", serveToken)
	var st spaceStats
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("stats: %d %s", code, body)
	}
	return st
}

// An Ollama behind an authenticating proxy wants a bearer key, which the
// ollama_api_key setting gives; without it the proxy's 401 is the error.
func TestOllamaAPIKey(t *testing.T) {
	const key = "ollama-proxy-key-0123456789"
	var down atomic.Bool
	inner := ollamaHandler(&down)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error": "unauthorized"}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "model-a", srv.URL
	if _, errs, code := run(t, env, "memory", "save", "note_a", "kept behind a proxy"); code == 0 || !strings.Contains(errs, "HTTP 401") {
		t.Fatalf("without the key: exit %d, stderr %q; want the 401", code, errs)
	}
	env["RECALL_OLLAMA_API_KEY"] = key
	out, errs, code := run(t, env, "memory", "save", "note_a", "kept behind a proxy")
	if code != 0 || !strings.Contains(out, "index ok") {
		t.Fatalf("with the key: exit %d: %s%s", code, out, errs)
	}
}

// A configured model that cannot be reached to learn its vector size, on a
// database whose read space is another model's that can be used: the text
// is embedded with the read space's model, and stderr says so. It said
// "storing text only: `recall repair` embeds it once the embedder is
// back", above a save that answered "index ok" and a search that was
// hybrid.
func TestUnprobedModelSaysTheReadSpacesModelIsUsed(t *testing.T) {
	env := ollamaEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	other := maps.Clone(env)
	delete(other, "RECALL_MODEL")
	other["RECALL_EMBEDDER"] = "openai"
	other["RECALL_OPENAI_URL"] = "http://127.0.0.1:1" // nothing listens
	other["RECALL_OPENAI_API_KEY"] = "sk-test"
	out, errs, code := run(t, other, "memory", "save", "note_x", "my axolotl regrew a gill")
	if code != 0 || !strings.Contains(out, "index ok") {
		t.Fatalf("save: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "openai/text-embedding-3-small could not be reached to learn its vector size") ||
		!strings.Contains(errs, "using read space") || strings.Contains(errs, "storing text only") {
		t.Errorf("save: stderr %q; want the unreachable model named and the read space's model said to be used instead", errs)
	}
}
