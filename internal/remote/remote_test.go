package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/remote"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/server"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/testvault"
)

const token = "remote-test-token-0123456789abcdef"

// target is a real recall server over a temporary store.
type target struct {
	st  *sqlite.DB
	srv *httptest.Server
}

func newTarget(t *testing.T, wrap func(http.Handler) http.Handler) *target {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "remote.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	eng := search.New(st, search.Options{})
	s, err := server.New(server.Options{Engine: eng, Store: st, Memory: memory.New(st, eng, memory.Options{}),
		Tokens: []server.Token{{Name: "sweeper", Secret: token}}, StageBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = s
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &target{st: st, srv: srv}
}

// vault copies testdata/vault to a temporary directory the test may
// change, its files' mtimes an hour back, as a vault's files are older than
// the sweep that reads them (one read within ingest.RacyWindow of its change
// is hashed again by the next run: TestSameSizeEditInTheRunsSecond).
func vault(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk("testdata/vault", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/vault", p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return testvault.WriteFile(filepath.Join(dst, rel), string(b), testvault.Settled())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func options(t *testing.T, url string) remote.Options {
	return remote.Options{URL: url, Token: token, Manifest: filepath.Join(t.TempDir(), "manifest.json"),
		Chunk: chunk.Options{Size: 300, Overlap: 30}, BatchChunks: 4, MaxWait: 1}
}

// contents lists every archive source as "id|title|date" and its chunk texts.
func contents(t *testing.T, st recall.Store) []string {
	t.Helper()
	var out []string
	err := st.Export(context.Background(), func(d recall.Document) error {
		line := fmt.Sprintf("%s|%s|%s", d.Source.ID, d.Source.Title, d.Source.Date)
		for _, c := range d.Chunks {
			line += "\n  " + c.Text
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// localSweep sweeps dir into a fresh local database, for a comparison.
func localSweep(t *testing.T, dir string, co chunk.Options) (ingest.Result, *sqlite.DB) {
	t.Helper()
	local, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "local.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })
	res, err := ingest.Sweep(context.Background(), local, local, dir, ingest.Options{Chunk: co})
	if err != nil {
		t.Fatal(err)
	}
	return res, local
}

// A remote sweep stores what a local sweep of the same vault stores.
func TestRemoteSweepMatchesLocalSweep(t *testing.T) {
	dir := vault(t)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesSeen != 4 || res.FilesChanged != 4 || res.FilesFailed != 0 || res.Batches < 2 {
		t.Errorf("first run: %+v", res)
	}

	_, local := localSweep(t, dir, opt.Chunk)
	got, want := contents(t, tg.st), contents(t, local)
	if len(want) < 5 {
		t.Fatalf("the local sweep stored only %d sources: the comparison would prove little", len(want))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("remote store:\n%s\n\nlocal sweep:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(got, ""), "secret notes") {
		t.Error("a hidden folder was sent")
	}

	// Nothing changed: nothing is sent.
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesSkipped != 4 || res.Batches != 0 {
		t.Errorf("second run: %+v %v", res, err)
	}
	// A changed file is sent again, alone.
	p := filepath.Join(dir, "chinese-names.md")
	if err := os.WriteFile(p, []byte("**User:** 新的内容\n\n**Assistant:** 好的"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 1 || res.FilesSkipped != 3 {
		t.Errorf("after a change: %+v %v", res, err)
	}
	if chunks, _ := tg.st.Chunks(context.Background(), "chinese-names.md", 0, 10); len(chunks) != 1 || !strings.Contains(chunks[0].Text, "新的内容") {
		t.Errorf("the change did not reach the server: %+v", chunks)
	}
	// A removed file is reported; the server keeps it without Prune
	// (TestPruneRemovesGoneFilesFromTheServer).
	os.Remove(p)
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesRemoved != 1 {
		t.Errorf("after a removal: %+v %v", res, err)
	}
}

// A batch that keeps failing is logged and its files stay out of the
// manifest; the next run sends them.
func TestFailedBatchesAreRetriedNextRun(t *testing.T) {
	dir := vault(t)
	var down atomic.Bool
	var calls atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			if down.Load() {
				http.Error(w, `{"error":{"code":"unavailable","message":"down for maintenance"}}`, http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.Retries = 1
	var log bytes.Buffer
	opt.Failures = &log
	down.Store(true)
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesChanged != 0 || res.FilesFailed != 4 || res.BatchesFailed != res.Batches || int(calls.Load()) != 2*res.Batches {
		t.Errorf("while down: %+v, %d calls", res, calls.Load())
	}
	if !strings.Contains(log.String(), "down for maintenance") || !strings.Contains(log.String(), "\tbatch\t") {
		t.Errorf("failure log:\n%s", log.String())
	}
	down.Store(false)
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 4 || res.FilesFailed != 0 {
		t.Errorf("once up: %+v %v", res, err)
	}
}

// Transient failures are retried within the run, honouring Retry-After.
func TestTransientFailuresRetried(t *testing.T) {
	dir := vault(t)
	var n atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%2 == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	res, err := remote.Sweep(context.Background(), dir, options(t, tg.srv.URL))
	if err != nil || res.FilesChanged != 4 || res.BatchesFailed != 0 {
		t.Errorf("%+v %v", res, err)
	}
}

// A file is recorded only when the server reports its sources complete.
func TestIncompleteSourcesAreNotRecorded(t *testing.T) {
	dir := vault(t)
	partial := partialServer(t, nil)
	opt := options(t, partial.URL)
	var log bytes.Buffer
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 0 || res.FilesFailed != 4 {
		t.Errorf("%+v %v", res, err)
	}
	if !strings.Contains(log.String(), "did not report") {
		t.Errorf("log: %s", log.String())
	}
	b, _ := os.ReadFile(opt.Manifest)
	var m struct{ Files map[string]any }
	if json.Unmarshal(b, &m); len(m.Files) != 0 {
		t.Errorf("manifest records %v", m.Files)
	}
}

func TestWrongTokenStopsTheRun(t *testing.T) {
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	opt.Token = "not-the-token-0123456789abcdef"
	_, err := remote.Sweep(context.Background(), vault(t), opt)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("err = %v", err)
	}
}

func TestUnparseableFileIsLoggedAndSkipped(t *testing.T) {
	dir := vault(t)
	b, _ := os.ReadFile("testdata/broken.json")
	os.WriteFile(filepath.Join(dir, "broken.json"), b, 0o644)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log bytes.Buffer
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 4 || res.FilesFailed != 1 || !strings.Contains(log.String(), "broken.json") {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
}

// A failure is one line of the log, however the file is named: a line
// break in the name is quoted, not written.
func TestFailureLogOneLinePerFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a file name cannot hold a line break on Windows")
	}
	dir := vault(t)
	name := "bad\n2099-01-01T00:00:00Z\tsummary\tforged.md"
	os.WriteFile(filepath.Join(dir, name), []byte("hi\n"), 0o644)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log bytes.Buffer
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || strings.Count(log.String(), "\n") != 1 || !strings.Contains(log.String(), strconv.Quote(name)) {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
}

// The manifest of another server or other chunking is not trusted.
func TestManifestTiedToServerAndChunking(t *testing.T) {
	dir := vault(t)
	a, b := newTarget(t, nil), newTarget(t, nil)
	opt := options(t, a.srv.URL)
	if _, err := remote.Sweep(context.Background(), dir, opt); err != nil {
		t.Fatal(err)
	}
	opt.URL = b.srv.URL
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 4 {
		t.Errorf("new server: %+v %v", res, err)
	}
	opt.Chunk.Size = 500
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 4 {
		t.Errorf("new chunking: %+v %v", res, err)
	}
	os.WriteFile(opt.Manifest, []byte("{not json"), 0o600)
	if _, err := remote.Sweep(context.Background(), dir, opt); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged manifest: %v", err)
	}
}

// A manifest whose files an older reading sent (here, one written before
// the reading was recorded) has them sent again, though unchanged, as a
// local sweep reads them again: once, said once; the server keeps what
// reads the same, writing nothing.
func TestOlderReadingIsSentAgain(t *testing.T) {
	dir := vault(t)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	if _, err := remote.Sweep(context.Background(), dir, opt); err != nil {
		t.Fatal(err)
	}
	editManifest(t, opt.Manifest, func(_ string, e map[string]any) { delete(e, "reading") })

	var told []int
	opt.Rereading = func(n int) { told = append(told, n) }
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || len(told) != 1 || told[0] != 4 || res.FilesChanged != 4 || res.ChunksWritten != 0 {
		t.Errorf("older reading: told %v, %+v, %v; want the 4 files sent again and nothing written", told, res, err)
	}
	told = nil
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || len(told) != 0 || res.FilesSkipped != 4 {
		t.Errorf("the run after: told %v, %+v, %v; want every file skipped", told, res, err)
	}
}

// editManifest rewrites each entry of the manifest at p with edit, as an
// older client would have written it.
func editManifest(t *testing.T, p string, edit func(file string, entry map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // mtimes in nanoseconds do not fit a float64
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for name, e := range m["files"].(map[string]any) {
		edit(name, e.(map[string]any))
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A source that an upload left half staged on the server, then edited
// without changing its chunk count, is not completed by the old chunks and
// recorded as sent: the server ends up with the edit.
func TestEditedSourceNotMixedWithStagedChunks(t *testing.T) {
	dir := t.TempDir()
	msgs := eightMessages(t, dir, "word")
	tg := newTarget(t, nil)
	stageTail(t, dir, tg.srv.URL)
	// Edit the last message; the chunk count stays the same.
	msgs[7] = strings.Replace(msgs[7], "word word", "EDIT EDIT", 1)
	os.WriteFile(filepath.Join(dir, "chat.md"), []byte(strings.Join(msgs, "\n\n")), 0o644)
	opt := options(t, tg.srv.URL)
	remote.Sweep(context.Background(), dir, opt)
	remote.Sweep(context.Background(), dir, opt)
	got := strings.Join(contents(t, tg.st), "\n")
	if !strings.Contains(got, "EDIT EDIT") {
		t.Errorf("server holds the old text although the manifest records the edit:\n%s", got)
	}
}

// stageTail leaves the vault's chunks staged on the server at url as an
// upload whose first request was lost leaves them, when its client sends
// the rest anyway (recall's own stops sending a failed file, but another
// client, or an older recall, may not): all but the first request of a
// run.
func stageTail(t *testing.T, dir, url string) {
	t.Helper()
	var bodies [][]byte
	remote.Sweep(context.Background(), dir, options(t, partialServer(t, &bodies).URL))
	if len(bodies) < 2 {
		t.Fatalf("the vault took %d requests; the test needs a head and a tail", len(bodies))
	}
	for _, b := range bodies[1:] {
		req, _ := http.NewRequest("POST", url+"/ingest", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("staging the tail: %s", resp.Status)
		}
	}
}

// eightMessages writes chat.md, a file of several batches' worth of chunks.
func eightMessages(t *testing.T, dir, word string) []string {
	t.Helper()
	var msgs []string
	for i := 0; i < 8; i++ {
		msgs = append(msgs, fmt.Sprintf("**User:** message %d %s", i, strings.Repeat(word+" ", 50)))
	}
	if err := os.WriteFile(filepath.Join(dir, "chat.md"), []byte(strings.Join(msgs, "\n\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// refuseFirst answers the first request 503 and passes the others on.
func refuseFirst(h http.Handler) http.Handler {
	var n atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// A file whose batch was refused is sent no further: its other chunks
// would only wait on the server, and a file of many batches once sent them
// all after its first failed. The next run sends it whole and records it.
func TestChunksOfAFailedFileAreNotSent(t *testing.T) {
	dir := t.TempDir()
	eightMessages(t, dir, "word")
	var calls atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		refuse := refuseFirst(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			refuse.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.Retries = -1
	var log strings.Builder
	opt.Failures = &log
	if res, _ := remote.Sweep(context.Background(), dir, opt); res.FilesFailed != 1 || res.Batches != 1 || calls.Load() != 1 {
		t.Fatalf("first run: %+v, %d requests", res, calls.Load())
	}
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesChanged != 1 || res.FilesFailed != 0 || res.Batches < 2 {
		t.Errorf("second run: %+v %v\n%s", res, err, log.String())
	}
	if res, _ := remote.Sweep(context.Background(), dir, opt); res.FilesSkipped != 1 {
		t.Errorf("third run: %+v", res)
	}
	if got := strings.Join(contents(t, tg.st), "\n"); !strings.Contains(got, "message 0") || !strings.Contains(got, "message 7") {
		t.Errorf("stored:\n%s", got)
	}
}

// partialServer answers every source of every request partial, as a server
// that lost each source's other chunks would, and keeps the bodies.
func partialServer(t *testing.T, bodies *[][]byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bodies != nil {
			*bodies = append(*bodies, body)
		}
		var req remote.IngestRequest
		json.Unmarshal(body, &req)
		var resp remote.IngestResponse
		seen := map[string]bool{}
		for _, c := range req.Chunks {
			if !seen[c.SourceFile] {
				seen[c.SourceFile] = true
				resp.Sources = append(resp.Sources, remote.SourceStatus{SourceFile: c.SourceFile, Source: c.SourceFile,
					Status: remote.StatusPartial, TotalChunks: c.TotalChunks})
			}
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Chunks of an older text that an earlier upload left staged are dropped
// when the new text's chunks arrive (another version), not stored mixed in.
func TestStagedChunksOfAnOlderVersionAreNotMixedIn(t *testing.T) {
	dir := t.TempDir()
	msgs := eightMessages(t, dir, "word")
	tg := newTarget(t, nil)
	stageTail(t, dir, tg.srv.URL)
	for i := range msgs {
		msgs[i] = strings.ReplaceAll(msgs[i], "word", "NEWV")
	}
	os.WriteFile(filepath.Join(dir, "chat.md"), []byte(strings.Join(msgs, "\n\n")), 0o644)
	res, err := remote.Sweep(context.Background(), dir, options(t, tg.srv.URL))
	got := strings.Join(contents(t, tg.st), "\n")
	if err != nil || res.FilesChanged != 1 || strings.Contains(got, "word") || !strings.Contains(got, "message 7 NEWV") {
		t.Errorf("%+v %v; stored:\n%s", res, err, got)
	}
}

// The answer to the last batch of a source is lost after the server wrote
// it: the retry leaves that batch staged alone. The next run still records
// the file (it never did, once).
func TestLostAnswerConverges(t *testing.T) {
	dir := t.TempDir()
	eightMessages(t, dir, "word")
	var n atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 2 { // the second batch: processed, its answer lost
				h.ServeHTTP(httptest.NewRecorder(), r)
				http.Error(w, "bad gateway", http.StatusBadGateway)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	remote.Sweep(context.Background(), dir, opt)
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesChanged != 1 {
		t.Errorf("second run: %+v %v\n%s", res, err, log.String())
	}
	if res, _ := remote.Sweep(context.Background(), dir, opt); res.FilesSkipped != 1 {
		t.Errorf("third run: %+v\n%s", res, log.String())
	}
}

// Two conversations of an export whose ids differ only in Unicode
// normalisation are one source: the file fails rather than being recorded
// with one of them silently lost.
func TestConversationsOfOneSourceFailTheFile(t *testing.T) {
	dir := t.TempDir()
	export := `[{"uuid": "caf\u00e9", "name": "first", "chat_messages": [{"sender": "human", "text": "FIRST conversation"}]},
 {"uuid": "cafe\u0301", "name": "second", "chat_messages": [{"sender": "human", "text": "SECOND conversation"}]}]`
	if err := os.WriteFile(filepath.Join(dir, "conversations.json"), []byte(export), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesFailed != 1 || res.FilesChanged != 0 || !strings.Contains(log.String(), "Unicode normalisation") {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
	if got := contents(t, tg.st); len(got) != 0 {
		t.Errorf("stored: %v", got)
	}
}

// Two files that are one source (a\b.md beside a/b.md) both fail, as in a
// local sweep; they once overwrote the source in turn, run after run.
func TestFilesOfOneSourceFail(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, `a\b.md`), []byte("**User:** BACKSLASH version of the note"), 0o644)
	os.WriteFile(filepath.Join(dir, "a", "b.md"), []byte("**User:** SLASH version of the note"), 0o644)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	opt.BatchChunks = 1
	for run := 1; run <= 2; run++ {
		var log strings.Builder
		opt.Failures = &log
		res, err := remote.Sweep(context.Background(), dir, opt)
		if err != nil || res.FilesSeen != 2 || res.FilesFailed != 2 || res.FilesRemoved != 0 || res.Batches != 0 ||
			strings.Count(log.String(), "rename all but one") != 2 {
			t.Errorf("run %d: %+v %v\n%s", run, res, err, log.String())
		}
	}
	if got := contents(t, tg.st); len(got) != 0 {
		t.Errorf("stored: %v", got)
	}
}

// Overlapping runs of one vault (two cron runs) are refused while one holds
// the manifest: each saves the manifest whole, so the later save could
// record a version of a file the server does not hold.
func TestOverlappingRunsRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "note.md"), []byte("**User:** OLDVERSION text"), 0o644)
	arrived, release := make(chan struct{}), make(chan struct{})
	tg := newTarget(t, holdRequest(1, arrived, release, true))
	opt := options(t, tg.srv.URL)
	done := make(chan error)
	go func() {
		_, err := remote.Sweep(context.Background(), dir, opt)
		done <- err
	}()
	<-arrived
	_, err := remote.Sweep(context.Background(), dir, opt)
	close(release)
	if recall.ErrorCode(err) != recall.ECONFLICT || !strings.Contains(recall.ErrorMessage(err), "another remote sweep (process ") {
		t.Errorf("overlapping run: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The lock goes with its run.
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesSkipped != 1 {
		t.Errorf("later run: %+v %v", res, err)
	}
}

// holdRequest wraps a server to hold its nth request, closing arrived
// when it comes, until release is closed; then it is served, or with
// serve false left unanswered.
func holdRequest(n int32, arrived, release chan struct{}, serve bool) func(http.Handler) http.Handler {
	var calls atomic.Int32
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == n {
				close(arrived)
				<-release
				if !serve {
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
}

// Batches are bounded by their JSON size: markup-heavy text (each <, >
// and & takes 6 bytes in JSON) once made requests past the server's limit,
// refused with 413 on every run.
func TestMarkupHeavyFileFitsRequests(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("**User:** here is my page\n\n**Assistant:**\n")
	for b.Len() < 2_200_000 {
		b.WriteString("<p>a&b</p><br/>\n")
	}
	os.WriteFile(filepath.Join(dir, "page.md"), []byte(b.String()), 0o644)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	opt.Chunk.Size, opt.Chunk.Overlap = 8000, 0
	opt.BatchChunks = 0
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if res.FilesFailed != 0 {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
}

// manifestFiles lists the files a manifest records.
func manifestFiles(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Files map[string]any }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for f := range m.Files {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// A vault given as a symbolic link is the folder it points to, as in a
// local sweep: the walk once stopped at the link, sent nothing and took
// every file the manifest recorded for gone.
func TestVaultGivenThroughSymbolicLink(t *testing.T) {
	dir := vault(t)
	link := filepath.Join(t.TempDir(), "vault-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	if res, err := remote.Sweep(context.Background(), link, opt); err != nil || res.FilesSeen != 4 || res.FilesChanged != 4 {
		t.Errorf("through the link: %+v %v", res, err)
	}
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesSkipped != 4 {
		t.Errorf("the folder itself: %+v %v", res, err)
	}
	res, err := remote.Sweep(context.Background(), link, opt)
	if err != nil || res.FilesSkipped != 4 || res.FilesRemoved != 0 || len(manifestFiles(t, opt.Manifest)) != 4 {
		t.Errorf("through the link again: %+v %v; manifest %v", res, err, manifestFiles(t, opt.Manifest))
	}
}

// A file the walk cannot take (a name that is not UTF-8) is seen and
// failed, as a local sweep counts it, so the run exits non-zero; it was
// once only logged.
func TestWalkFailuresCountAsFailedFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ok.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	if err := os.WriteFile(filepath.Join(dir, "bad\xff.md"), []byte("**User:** hi"), 0o644); err != nil {
		t.Skipf("this file system refuses a name that is not UTF-8: %v", err)
	}
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesSeen != 2 || res.FilesFailed != 1 || res.FilesChanged != 1 || !strings.Contains(log.String(), `"bad\xff.md"`) {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
	if lr, _ := localSweep(t, dir, opt.Chunk); lr.FilesSeen != res.FilesSeen || lr.FilesFailed != res.FilesFailed {
		t.Errorf("a local sweep counts %d seen, %d failed", lr.FilesSeen, lr.FilesFailed)
	}
}

// A folder that cannot be read fails, and its files are not taken for
// gone: the manifest keeps them, as a local sweep keeps their sources.
// They were once counted removed and dropped from the manifest, in a run
// that exited 0.
func TestUnreadableFolderIsNotTakenForGone(t *testing.T) {
	if os.Geteuid() == 0 || runtime.GOOS == "windows" {
		t.Skip("needs a folder this user cannot read: not as root, nor on Windows")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "a.md"), []byte("**User:** hi\n\n**Assistant:** hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "top.md"), []byte("**User:** yo\n\n**Assistant:** hey"), 0o644)
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	if _, err := remote.Sweep(context.Background(), dir, opt); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sub, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(sub, 0o755)
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesFailed != 1 || res.FilesRemoved != 0 || res.FilesSkipped != 1 {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
	if got := manifestFiles(t, opt.Manifest); strings.Join(got, " ") != "sub/a.md top.md" {
		t.Errorf("manifest: %v", got)
	}
}

// Titles a local sweep stores are stored alike by a remote one: a heading
// of more than 1,000 characters and an export's conversation name holding
// a tab were once refused by the server, failing their files on every run.
func TestTitlesStoredAsALocalSweepStoresThem(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("long title ", 100) + "end"
	os.WriteFile(filepath.Join(dir, "long.md"), []byte("# "+long+"\n\n**User:** hi\n\n**Assistant:** hello"), 0o644)
	export := `[{"uuid": "c1", "name": "Plan\tfor June", "chat_messages": [{"sender": "human", "text": "what is the plan"}]}]`
	os.WriteFile(filepath.Join(dir, "conversations.json"), []byte(export), 0o644)
	// Titles are sent clean, so that a server that still refuses such
	// titles (this wrapper, as recall did) takes them too.
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req remote.IngestRequest
			json.Unmarshal(body, &req)
			for _, c := range req.Chunks {
				if c.ConversationTitle != nil && (strings.ContainsFunc(*c.ConversationTitle, unicode.IsControl) || utf8.RuneCountInString(*c.ConversationTitle) > 1000) {
					http.Error(w, `{"error":{"code":"invalid","message":"conversation_title is not clean"}}`, http.StatusBadRequest)
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesFailed != 0 || res.FilesChanged != 2 {
		t.Errorf("%+v %v\n%s", res, err, log.String())
	}
	_, local := localSweep(t, dir, opt.Chunk)
	got, want := strings.Join(contents(t, tg.st), "\n"), strings.Join(contents(t, local), "\n")
	if got != want || !strings.Contains(got, "|Plan for June|") {
		t.Errorf("remote store:\n%s\n\nlocal sweep:\n%s", got, want)
	}
}

// A server that cannot be reached stops the run after a few batches in a
// row, saying so; what it confirmed before is recorded and the next run
// sends the rest. Every batch once paid its retries, batch after batch (a
// vault of four 2 MB files took 140 s against a port nothing listened on).
func TestUnreachableServerStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("note%d.md", i)), []byte(fmt.Sprintf("**User:** note %d", i)), 0o644)
	}
	var down atomic.Bool
	var calls atomic.Int32
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) > 2 && down.Load() { // the server goes away after two requests
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.BatchChunks, opt.Retries = 1, 1
	var log strings.Builder
	opt.Failures = &log
	down.Store(true)
	res, err := remote.Sweep(context.Background(), dir, opt)
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(recall.ErrorMessage(err), "cannot be reached") ||
		res.Batches != 5 || res.BatchesFailed != 3 || calls.Load() != 2+3*2 {
		t.Fatalf("%+v %v, %d requests\n%s", res, err, calls.Load(), log.String())
	}
	confirmed := manifestFiles(t, opt.Manifest)
	if len(confirmed) == 0 || len(confirmed) != res.FilesChanged {
		t.Errorf("manifest %v after %+v", confirmed, res)
	}
	down.Store(false)
	res, err = remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesSkipped != len(confirmed) || res.FilesChanged != 10-len(confirmed) {
		t.Errorf("next run: %+v %v", res, err)
	}

	// Nothing listening at all: three batches, not the whole vault.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	opt = options(t, "http://"+ln.Addr().String())
	opt.BatchChunks, opt.Retries = 1, 1
	if res, err := remote.Sweep(context.Background(), dir, opt); recall.ErrorCode(err) != recall.EUNAVAILABLE || res.Batches != 3 {
		t.Errorf("no server: %+v %v", res, err)
	}
}

// bodySizes wraps a server to keep the size of the largest request body
// and count its 413 answers.
func bodySizes(largest *atomic.Int64, tooLarge *atomic.Int32) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if int64(len(body)) > largest.Load() {
				largest.Store(int64(len(body)))
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code == http.StatusRequestEntityTooLarge {
				tooLarge.Add(1)
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	}
}

// A request body stays under the server's limit however much of it is
// not chunk text: a long path and title of markup, sent with every chunk,
// once took requests past 4 MiB (only the text was counted, and
// encoding/json wrote each <, > and & as six bytes).
func TestRequestBodiesStayUnderTheServersLimit(t *testing.T) {
	dir := t.TempDir()
	var msgs []map[string]any
	for i := range 600 {
		msgs = append(msgs, map[string]any{"sender": "human", "text": fmt.Sprintf("q%d %s", i, strings.Repeat("<b> ", 300))})
	}
	b, _ := json.Marshal([]map[string]any{{"uuid": strings.Repeat("&", 200), "name": strings.Repeat("<", 1000), "chat_messages": msgs}})
	deep := filepath.Join(dir, strings.Repeat("&", 250), strings.Repeat("&", 250), strings.Repeat("&", 250))
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "conversations.json"), b, 0o644)
	var largest atomic.Int64
	var tooLarge atomic.Int32
	tg := newTarget(t, bodySizes(&largest, &tooLarge))
	opt := options(t, tg.srv.URL)
	opt.BatchChunks, opt.BatchBytes = 0, 1<<30 // the default count; more bytes than the server takes
	opt.Chunk = chunk.Options{Size: 2000, Overlap: 200}
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesChanged != 1 || largest.Load() > remote.MaxBody || tooLarge.Load() != 0 {
		t.Errorf("%+v %v; largest body %d bytes, %d answered 413\n%.500s", res, err, largest.Load(), tooLarge.Load(), log.String())
	}
}

// A chunk too large for any request (--chunk-size has no upper bound)
// fails its file saying so, without a request: the server once answered
// 413 on every run.
func TestChunkTooLargeForARequestFailsItsFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "page.md"), []byte("**User:** "+strings.Repeat(`"quoted" `, 600_000)), 0o644)
	os.WriteFile(filepath.Join(dir, "small.md"), []byte("**User:** a small note"), 0o644)
	var largest atomic.Int64
	var tooLarge atomic.Int32
	tg := newTarget(t, bodySizes(&largest, &tooLarge))
	opt := options(t, tg.srv.URL)
	opt.Chunk = chunk.Options{Size: 10_000_000, Overlap: chunk.NoOverlap}
	var log strings.Builder
	opt.Failures = &log
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesFailed != 1 || res.FilesChanged != 1 || tooLarge.Load() != 0 || largest.Load() > remote.MaxBody ||
		!strings.Contains(log.String(), "page.md") || !strings.Contains(log.String(), "smaller --chunk-size") {
		t.Errorf("%+v %v; largest body %d, %d answered 413\n%.500s", res, err, largest.Load(), tooLarge.Load(), log.String())
	}
}

// chunks_written counts the chunks of sources the server reported
// written: none while it is down, none for a --full run of what it holds
// already. Chunks were once counted as they were queued.
func TestChunksWrittenCountsWhatTheServerWrote(t *testing.T) {
	dir := vault(t)
	var down atomic.Bool
	tg := newTarget(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if down.Load() {
				http.Error(w, `{"error":{"code":"unavailable","message":"down"}}`, http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	opt := options(t, tg.srv.URL)
	opt.Retries = -1
	down.Store(true)
	if res, _ := remote.Sweep(context.Background(), dir, opt); res.BatchesFailed == 0 || res.ChunksWritten != 0 {
		t.Errorf("while down: %+v", res)
	}
	down.Store(false)
	res, err := remote.Sweep(context.Background(), dir, opt)
	stored := 0
	for _, c := range contents(t, tg.st) {
		stored += strings.Count(c, "\n  ")
	}
	if err != nil || res.ChunksWritten != stored || stored == 0 {
		t.Errorf("once up: %+v %v; the server holds %d chunks", res, err, stored)
	}
	opt.Full = true
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesChanged != 4 || res.ChunksWritten != 0 {
		t.Errorf("--full, nothing changed: %+v %v", res, err)
	}
}

// A server older than the client, which refuses the version field, stops
// the run at the first batch, saying to upgrade it; the whole vault was
// once sent, every batch refused alike.
func TestOlderServerStopsTheRun(t *testing.T) {
	var calls atomic.Int32
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":{"code":"invalid","message":"json: unknown field \"version\""}}`, http.StatusBadRequest)
	}))
	defer old.Close()
	opt := options(t, old.URL)
	_, err := remote.Sweep(context.Background(), vault(t), opt)
	if err == nil || !strings.Contains(recall.ErrorMessage(err), "is older than this client: upgrade it") || calls.Load() != 1 {
		t.Errorf("%v after %d requests", err, calls.Load())
	}
}

// A source with no title of its own, or no date, gets the same title and
// date from a remote sweep as from a local one. The server once named every
// untitled source by the last element of its id and dated it by any date in
// its id: an export's conversation whose first message gives no title was
// titled by its conversation id, and a conversation whose id reads as a
// date (a fine-tuning set's element 2025, or an id "2024-03-05-standup")
// was dated by it, where a local sweep stores no title and no date.
func TestUntitledSourcesStoredAsALocalSweepStoresThem(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ChatGPT: no title, and a first message that gives none (a code block).
	write("chatgpt/conversations.json", `[{"id": "conv-1.v2", "title": "", "create_time": null, "mapping": {
	  "a": {"id": "a", "message": {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["`+"```\\nls -la\\n```"+`"]}}, "children": ["b"]},
	  "b": {"id": "b", "parent": "a", "message": {"author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["a listing"]}}, "children": []}}}]`)
	// Claude: no name at all, an image placeholder first.
	write("claude/conversations.json", `[{"uuid": "c-2", "chat_messages": [{"sender": "human", "text": "[image]"}, {"sender": "assistant", "text": "a picture"}]}]`)
	// A JSON array of conversations: ids that read as dates, no titles.
	write("sets/train.json", `[{"id": "2024-03-05-standup", "messages": [{"role": "user", "content": "`+"```\\nstandup\\n```"+`"}, {"role": "assistant", "content": "noted"}]},
	  {"id": "2025", "messages": [{"role": "user", "content": "[image]"}, {"role": "assistant", "content": "seen"}]}]`)
	// Files that are one conversation, without a title line.
	write("notes/untitled.md", "**User:** no heading here\n\n**Assistant:** none")
	write("2023/05/plain.txt", "just some text without markers")

	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	var log strings.Builder
	opt.Failures = &log
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesFailed != 0 || res.FilesChanged != 5 {
		t.Fatalf("%+v %v\n%s", res, err, log.String())
	}
	_, local := localSweep(t, dir, opt.Chunk)
	got, want := contents(t, tg.st), contents(t, local)
	if len(want) != 6 {
		t.Fatalf("the local sweep stored %d sources, want 6:\n%s", len(want), strings.Join(want, "\n"))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("remote store:\n%s\n\nlocal sweep:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A remote sweep walks as a local one does, and lists as it does the
// symbolic links it does not follow (an export linked into the vault).
func TestRemoteSweepListsLinksItDoesNotFollow(t *testing.T) {
	dir, outside := vault(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "conversations.json"), []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "conversations.json"), filepath.Join(dir, "linked.json")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	tg := newTarget(t, nil)
	res, err := remote.Sweep(context.Background(), dir, options(t, tg.srv.URL))
	if err != nil || !slices.Equal(res.Links, []string{"linked.json"}) {
		t.Errorf("links %q (%v); want linked.json", res.Links, err)
	}
}

// A run killed midway (kill -9, a crash: the end of Sweep, which saves the
// manifest however the run ended, never comes) keeps in the manifest the
// files the server confirmed a while before, so the next run sends only
// the rest. The manifest was saved only at the end: a killed first upload
// was read, hashed and sent again whole. The kill is the second request
// held unanswered: what the manifest's file holds then is what a kill
// leaves.
func TestKilledRunKeepsWhatTheServerConfirmed(t *testing.T) {
	dir := t.TempDir()
	for i := range 8 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("note%d.md", i)), []byte(fmt.Sprintf("**User:** note %d", i)), 0o644)
	}
	held, release := make(chan struct{}), make(chan struct{})
	tg := newTarget(t, holdRequest(2, held, release, false))
	opt := options(t, tg.srv.URL)
	opt.BatchChunks, opt.Retries = 2, -1
	// A save that a kill cut short left its temporary file.
	leftover := opt.Manifest + ".123456.tmp"
	if err := os.WriteFile(leftover, []byte(`{"version":`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		remote.Sweep(ctx, dir, opt)
	}()
	<-held
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("a temporary file a killed save left is still there: %v", err)
	}
	killed := filepath.Join(t.TempDir(), "manifest.json")
	b, err := os.ReadFile(opt.Manifest)
	if err != nil {
		t.Errorf("no manifest while the run waits on its second request: %v", err)
	}
	if err := os.WriteFile(killed, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cancel()
	close(release)
	<-done

	// The first request confirmed two files: the kill keeps them.
	confirmed := manifestFiles(t, killed)
	if want := []string{"note0.md", "note1.md"}; !slices.Equal(confirmed, want) {
		t.Fatalf("the manifest a kill left records %v; want %v", confirmed, want)
	}
	opt.Manifest = killed
	res, err := remote.Sweep(context.Background(), dir, opt)
	if err != nil || res.FilesSkipped != 2 || res.FilesChanged != 6 {
		t.Errorf("the run after the kill: %+v %v; want the 2 confirmed files skipped, the 6 others sent", res, err)
	}
	if got := manifestFiles(t, killed); len(got) != 8 {
		t.Errorf("after the next run the manifest records %v", got)
	}
}

// A file changed again, to the same size, within the tick of its mtime in
// which a run hashed it looked unchanged to every later run, which skips
// the hashing of a file whose size and mtime the manifest records: the edit
// never reached the server. A file read within ingest.RacyWindow of its
// mtime is hashed again by the next run (an mtime ahead of the clock is the
// tick that has not passed), and skipped once settled.
func TestSameSizeEditInTheRunsSecond(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "note.md")
	tick := time.Now().Add(time.Hour).Truncate(time.Second)
	edit := func(text string, mtime time.Time) {
		t.Helper()
		if err := testvault.WriteFile(p, text, mtime); err != nil {
			t.Fatal(err)
		}
	}
	tg := newTarget(t, nil)
	opt := options(t, tg.srv.URL)
	edit("**User:** the kettle is on the left shelf", tick)
	if _, err := remote.Sweep(context.Background(), dir, opt); err != nil {
		t.Fatal(err)
	}
	edit("**User:** the kettle is on the high shelf", tick) // the same size
	res, err := remote.Sweep(context.Background(), dir, opt)
	cs, _ := tg.st.Chunks(context.Background(), "note.md", 0, 10)
	if err != nil || res.FilesChanged != 1 || len(cs) != 1 || !strings.Contains(cs[0].Text, "high shelf") {
		t.Fatalf("the run after a same-size edit in the tick of the last: %+v %v, server holds %v; want the edit sent", res, err, cs)
	}
	edit("**User:** the kettle is on the high shelf", testvault.Settled())
	remote.Sweep(context.Background(), dir, opt)
	if res, err := remote.Sweep(context.Background(), dir, opt); err != nil || res.FilesSkipped != 1 || res.Bytes != 0 {
		t.Errorf("a settled file: %+v %v; want it skipped", res, err)
	}
}
