package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// TestCrashDuringWrites kills (SIGKILL) real processes of the built binary
// at random moments of the writes other than a sweep of text
// (TestCrashDuringSweep): a first sweep that embeds, an import, a repair,
// a model switch (repair --space, space use) and memory saves through a
// server's REST API. After each kill the store passes its integrity check
// and recall's invariants (every source with all its chunks, full-text
// rows and chunks one to one, vectors only for chunks: checkStore), and
// the same command run again ends in what an uninterrupted run stores,
// vectors and index states included; every save the server acknowledged
// is stored. The moments are drawn (with a fixed seed) over the
// uninterrupted run's duration, so they fall inside the work on any
// machine; the embedder answers each request after 3 ms, so that a sweep
// and a repair commit in several transactions.
func TestCrashDuringWrites(t *testing.T) {
	testCrashDuringWrites(t, 2, func(t *testing.T) string { return filepath.Join(t.TempDir(), "recall.db") })
}

// testCrashDuringWrites is TestCrashDuringWrites on the databases newDB
// makes (a SQLite path or a PostgreSQL URL), with rounds kills of each
// command.
func testCrashDuringWrites(t *testing.T, rounds int, newDB func(*testing.T) string) {
	if testing.Short() {
		t.Skip("builds the binary and runs many commands")
	}
	bin := buildRecall(t, t.TempDir())
	vault := filepath.Join(t.TempDir(), "vault")
	genVault(t, vault, 100, 5)
	var down atomic.Bool
	slow := ollamaHandler(&down)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * time.Millisecond)
		slow.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	env := func(db string, embedder string) []string {
		return []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "RECALL_DB=" + db,
			"RECALL_EMBEDDER=" + embedder, "RECALL_MODEL=model-a", "RECALL_OLLAMA_URL=" + srv.URL}
	}
	r := rand.New(rand.NewPCG(31, 32))
	// crash runs args on a database prepare makes, killed at a random
	// moment of an uninterrupted run's duration, rounds times; after each
	// kill it checks the store, runs args again to its end and then
	// finish (when given), and compares the store with the uninterrupted
	// run's.
	crash := func(t *testing.T, prepare func(db string), finish [][]string, args ...string) {
		t.Helper()
		clean := newDB(t)
		prepare(clean)
		took := runBinary(t, bin, env(clean, "ollama"), args...)
		for _, f := range finish {
			runBinary(t, bin, env(clean, "ollama"), f...)
		}
		want := storeState(t, clean)
		t.Logf("%v: %v uninterrupted", args, took)
		for round := range rounds {
			db := newDB(t)
			prepare(db)
			after := time.Duration(float64(took) * (0.1 + 0.8*r.Float64()))
			// A run that ended before its kill (the machine ran faster
			// than when the run was timed) tested nothing: it is made
			// again on a fresh database, killed at half the moment.
			for try := 1; !killAfter(t, bin, env(db, "ollama"), after, args...); try++ {
				if try == 3 {
					t.Logf("round %d: %v ended before its kill at %v, %d times", round, args, after, try)
					break
				}
				after /= 2
				db = newDB(t)
				prepare(db)
			}
			checkStore(t, db)
			runBinary(t, bin, env(db, "ollama"), args...)
			for _, f := range finish {
				runBinary(t, bin, env(db, "ollama"), f...)
			}
			if got := storeState(t, db); got != want {
				t.Errorf("round %d: after a kill %v into %v and a run again, the store holds\n%s\nwant, as an uninterrupted run stores,\n%s",
					round, after, args, clip(got), clip(want))
			}
		}
	}
	none := func(db string) {}
	// The vault swept without vectors, and then embedded with model-a:
	// SQLite files copied, PostgreSQL databases made so each time.
	text, embedded := newDB(t), newDB(t)
	fromText := func(db string) { runBinary(t, bin, env(db, "none"), "sweep", vault) }
	fromEmbedded := func(db string) {
		fromText(db)
		runBinary(t, bin, env(db, "ollama"), "repair")
	}
	fromText(text)
	fromEmbedded(embedded)
	if !isPostgres(text) {
		fromText = func(db string) { copyDB(t, text, db) }
		fromEmbedded = func(db string) { copyDB(t, embedded, db) }
	}
	backup := filepath.Join(dir, "backup.jsonl")
	runBinary(t, bin, env(embedded, "ollama"), "export", "--out", backup)

	t.Run("first sweep", func(t *testing.T) { crash(t, none, nil, "sweep", vault) })
	t.Run("import", func(t *testing.T) { crash(t, none, nil, "import", backup) })
	t.Run("repair", func(t *testing.T) { crash(t, fromText, nil, "repair") })
	t.Run("model switch", func(t *testing.T) {
		withSpace := func(db string) {
			fromEmbedded(db)
			runBinary(t, bin, env(db, "ollama"), "space", "create", "b", "--embedder", "ollama", "--model", "model-b")
		}
		crash(t, withSpace, [][]string{{"space", "use", "b"}}, "repair", "--space", "b")
	})
	t.Run("memory saves", func(t *testing.T) {
		db := newDB(t)
		token := "Zq8vR2mX4pL9sT6wB1nC7yK3hF5jD0gA"
		var acked []string
		for round := range rounds {
			acked = append(acked, saveUntilKilled(t, bin, append(env(db, "ollama"), "RECALL_TOKEN="+token), token, round,
				time.Duration(300+r.IntN(1200))*time.Millisecond)...)
			checkStore(t, db)
			stored := memoryValues(t, db)
			for _, key := range acked {
				if stored[key] != memoryValue(key) {
					t.Errorf("round %d: the save of %s was acknowledged, but the store holds %q", round, key, stored[key])
				}
			}
		}
	})
}

// runBinary runs bin with args in env to its end, failing the test unless
// it succeeds, and returns how long it took.
func runBinary(t *testing.T, bin string, env []string, args ...string) time.Duration {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = env
	start := time.Now()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return time.Since(start)
}

// killAfter starts bin with args in env and kills it with SIGKILL after d,
// reporting whether it was still running then.
func killAfter(t *testing.T, bin string, env []string, d time.Duration, args ...string) bool {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = env
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	killed := c.Process.Kill() == nil
	err := c.Wait()
	return killed && err != nil && c.ProcessState.ExitCode() == -1
}

// copyDB copies the SQLite database from (closed: no log beside it) to to.
func copyDB(t *testing.T, from, to string) {
	t.Helper()
	if _, err := os.Stat(from + "-wal"); err == nil {
		t.Fatalf("%s has a log beside it", from)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// storeState is checkStore's content of the store at loc, with each
// source's index state and each space's vectors and whether it is read.
func storeState(t *testing.T, loc string) string {
	t.Helper()
	content := checkStore(t, loc)
	ctx := context.Background()
	db := openAny(t, loc)
	defer db.Close()
	var b strings.Builder
	b.WriteString(content + "\n")
	err := db.Export(ctx, func(d recall.Document) error {
		fmt.Fprintf(&b, "%s %s\n", d.Source.ID, d.Source.IndexState)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := db.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range stats.Spaces {
		fmt.Fprintf(&b, "space %s read=%t vectors=%d missing=%d\n", sp.Name, sp.Read, sp.Vectors, sp.Missing)
	}
	return b.String()
}

// clip is the start of a long state, for a failure message.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// memoryValue is what saveUntilKilled saves under key.
func memoryValue(key string) string { return "the kettle by the river window, note " + key }

// saveUntilKilled serves the database of env and saves memories through
// its REST API one after another, until it kills the server (SIGKILL) d
// after the first save was acknowledged; it returns the keys whose saves
// were acknowledged.
func saveUntilKilled(t *testing.T, bin string, env []string, token string, round int, d time.Duration) []string {
	t.Helper()
	p := startBinary(t, bin, env, "serve", "--addr", "127.0.0.1:0")
	var acked []string
	saving, first := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(saving)
		client := &http.Client{Timeout: 10 * time.Second}
		for i := 0; ; i++ {
			key := fmt.Sprintf("note_%d_%04d", round, i)
			body := fmt.Sprintf(`{"value": %q}`, memoryValue(key))
			req, _ := http.NewRequest(http.MethodPut, p.url+"/api/memories/"+key, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				return // the server is gone
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
				acked = append(acked, key)
				if len(acked) == 1 {
					close(first)
				}
			case resp.StatusCode == http.StatusTooManyRequests:
				time.Sleep(100 * time.Millisecond)
			default:
				t.Errorf("save %s: %s", key, resp.Status)
				return
			}
		}
	}()
	select {
	case <-first:
		time.Sleep(d)
	case <-saving: // failed, said so
	}
	p.kill()
	<-saving
	return acked
}

// memoryValues maps the unowned memories' keys stored at loc to their values.
func memoryValues(t *testing.T, loc string) map[string]string {
	t.Helper()
	db := openAny(t, loc)
	defer db.Close()
	out := map[string]string{}
	err := db.Export(context.Background(), func(d recall.Document) error {
		if d.Source.Kind == recall.KindMemory {
			out[d.Source.Title] = d.Source.Body
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkedStore is a store that checks its own integrity, as both do.
type checkedStore interface {
	recall.Store
	IntegrityCheck(context.Context) error
}

// openAny opens the store at loc, a SQLite path or a PostgreSQL URL.
func openAny(t *testing.T, loc string) checkedStore {
	t.Helper()
	ctx := context.Background()
	var (
		db  checkedStore
		err error
	)
	if isPostgres(loc) {
		db, err = postgres.Open(ctx, loc, postgres.Options{})
	} else {
		db, err = sqlite.Open(ctx, loc, sqlite.Options{})
	}
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	return db
}
