package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// gatedOllama is fakeOllama's model-a, except that the first request
// holding marker waits until its client goes away (the process sending it
// is killed), after saying on entered that it arrived: a sweep is then in
// the middle of its work.
func gatedOllama(t *testing.T, marker string) (url string, entered <-chan struct{}) {
	h := ollamaHandler(new(atomic.Bool))
	arrived := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(marker)) {
			held := false
			once.Do(func() { held = true })
			if held {
				close(arrived)
				<-r.Context().Done()
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, arrived
}

// signalWriter collects what a command writes and closes seen once it has
// written want.
type signalWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.b.String(), w.want)
	w.b.Write(p)
	if !had && strings.Contains(w.b.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// testSweepWhileAnotherSweeps runs a real `recall sweep` process on db
// and holds it in the middle of its work (in its embedder), then: a
// `sweep --no-wait` of the same vault exits with exitBusy naming that
// process, without writing; a `sweep` waits, saying so; the process is
// killed with SIGKILL; and the waiting sweep takes over and completes the
// vault, so a holder that crashed keeps nobody out.
func testSweepWhileAnotherSweeps(t *testing.T, db string) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildRecall(t, t.TempDir())
	vault := filepath.Join(t.TempDir(), "vault")
	genVault(t, vault, 40, 3)
	const marker = "zanzibar quokka"
	if err := os.WriteFile(filepath.Join(vault, "marker.md"), []byte("**User:** "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, entered := gatedOllama(t, marker)
	env := testEnv(t)
	env["RECALL_DB"], env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = db, "ollama", "model-a", url

	holder := exec.Command(bin, "sweep", vault)
	for k, v := range env {
		holder.Env = append(holder.Env, k+"="+v)
	}
	var holderOut bytes.Buffer
	holder.Stdout, holder.Stderr = &holderOut, &holderOut
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	<-entered
	who := fmt.Sprintf("process %d on ", holder.Process.Pid)

	out, errs, code := run(t, env, "sweep", "--no-wait", "--json", vault)
	if code != exitBusy || out != "" || !strings.Contains(errs, who) || !strings.Contains(errs, "--no-wait") {
		t.Fatalf("sweep --no-wait beside another sweep: exit %d, stdout %q, stderr %q; want exit %d naming %q", code, out, errs, exitBusy, who)
	}

	stderr := &signalWriter{want: "waiting for it to finish", seen: make(chan struct{})}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	m := NewMain()
	m.Stdout, m.Stderr, m.Stdin = &stdout, stderr, strings.NewReader("")
	m.Getenv = func(k string) string { return env[k] }
	m.IsTerminal = func() bool { return false }
	go func() {
		done <- m.Run(context.Background(), []string{"sweep", "--json", vault})
		m.Close()
	}()
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("sweep beside another ran without waiting: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), who) {
		t.Errorf("the waiting sweep does not say who it waits for: %q", stderr.String())
	}
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	if code := <-done; code != 0 {
		t.Fatalf("the waiting sweep, after the holder was killed: exit %d\n%s", code, stderr.String())
	}
	var res ingest.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	if res.FilesSeen != 41 || res.FilesChanged+res.FilesSkipped != 41 || res.FilesChanged == 0 {
		t.Fatalf("the sweep that took over: %+v; want the files the killed one left", res)
	}
	checkStore(t, db)
}

func TestSweepWhileAnotherSweeps(t *testing.T) {
	testSweepWhileAnotherSweeps(t, filepath.Join(t.TempDir(), "recall.db"))
}

func TestSweepWhileAnotherSweepsPostgres(t *testing.T) {
	testSweepWhileAnotherSweeps(t, pgtest.Server(t))
}
