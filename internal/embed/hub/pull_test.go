package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// fakeHub serves files the way huggingface.co's /resolve/ URLs do, with
// switches for the failures a download must survive.
type fakeHub struct {
	t     *testing.T
	files map[string][]byte // URL path -> content

	noRange  bool          // ignore Range headers (always 200 with the whole file)
	cutFirst atomic.Int32  // cut this many responses halfway through the body
	stall    time.Duration // after half the body, wait this long before the rest
	gate     chan struct{} // when set, responses wait for it to close

	mu     sync.Mutex
	ranges []string // Range header of each request ("" for none)
}

func newFakeHub(t *testing.T, m Model, content map[string][]byte) (*fakeHub, *httptest.Server) {
	h := &fakeHub{t: t, files: map[string][]byte{}}
	for _, f := range m.Files {
		h.files["/"+m.Repo+"/resolve/"+m.Revision+"/"+f.Path] = content[f.Path]
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	h.mu.Unlock()
	if h.gate != nil {
		<-h.gate
	}
	data, ok := h.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	start := int64(0)
	if rg := r.Header.Get("Range"); rg != "" && !h.noRange {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"), 10, 64)
		if err != nil || n > int64(len(data)) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		if n == int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start = n
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(data)-1, len(data)))
	}
	body := data[start:]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if start > 0 {
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	half := len(body) / 2
	w.Write(body[:half])
	w.(http.Flusher).Flush()
	if h.cutFirst.Add(-1) >= 0 {
		// Die mid-body: the client sees the connection drop.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if h.stall > 0 {
		select {
		case <-time.After(h.stall):
		case <-r.Context().Done():
			return
		}
	}
	w.Write(body[half:])
}

func (h *fakeHub) rangesSeen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ranges...)
}

// tinyModel is a three-file model with random content, the weights large
// enough to arrive in several reads.
func tinyModel(t *testing.T) (Model, map[string][]byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	content := map[string][]byte{
		"config.json":           []byte(`{"hidden_size": 8}`),
		"model.safetensors":     make([]byte, 600<<10),
		"tokenizer.json":        []byte(`{"model": {"type": "WordPiece"}}`),
		"1_Pooling/config.json": []byte(`{"pooling_mode_mean_tokens": true}`),
	}
	for i := range content["model.safetensors"] {
		content["model.safetensors"][i] = byte(rng.Uint32())
	}
	m := Model{Name: "tiny-model", Repo: "org/tiny-model", Revision: strings.Repeat("ab", 20)}
	for _, p := range []string{"config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json"} {
		sum := sha256.Sum256(content[p])
		m.Files = append(m.Files, File{Path: p, Size: int64(len(content[p])), SHA256: hex.EncodeToString(sum[:])})
	}
	return m, content
}

func checkInstalled(t *testing.T, dir string, content map[string][]byte) {
	t.Helper()
	for p, want := range content {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: content differs (%d bytes, want %d)", p, len(got), len(want))
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	if len(leftovers) > 0 {
		t.Errorf("leftover part files: %v", leftovers)
	}
	if unlock, err := lockModel(filepath.Dir(dir), filepath.Base(dir)); err != nil {
		t.Errorf("the pull lock is still held: %v", err)
	} else {
		unlock()
	}
}

func TestPullDownloadsAndVerifies(t *testing.T) {
	m, content := tinyModel(t)
	_, srv := newFakeHub(t, m, content)
	root := t.TempDir()
	p := &Puller{Endpoint: srv.URL}
	dir, err := p.Pull(context.Background(), m, root)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(root, m.Name) {
		t.Errorf("dir = %s", dir)
	}
	checkInstalled(t, dir, content)
	mf, err := readManifest(dir)
	if err != nil || mf.Revision != m.Revision || len(mf.Files) != len(m.Files) {
		t.Fatalf("manifest = %+v, %v", mf, err)
	}
	got, _, err := Resolve(m.Name, root, nil)
	if err != nil || got != dir {
		t.Errorf("Resolve = %q, %v; want %q", got, err, dir)
	}
}

func TestPullSkipsVerifiedFiles(t *testing.T) {
	m, content := tinyModel(t)
	h, srv := newFakeHub(t, m, content)
	root := t.TempDir()
	p := &Puller{Endpoint: srv.URL}
	if _, err := p.Pull(context.Background(), m, root); err != nil {
		t.Fatal(err)
	}
	before := len(h.rangesSeen())
	if _, err := p.Pull(context.Background(), m, root); err != nil {
		t.Fatal(err)
	}
	if after := len(h.rangesSeen()); after != before {
		t.Errorf("second pull made %d requests, want none", after-before)
	}
}

func TestPullResumesAfterCutConnection(t *testing.T) {
	m, content := tinyModel(t)

	t.Run("re-run", func(t *testing.T) {
		h, srv := newFakeHub(t, m, content)
		root := t.TempDir()
		p := &Puller{Endpoint: srv.URL, Retries: -1}
		// The first response (config.json) dies halfway.
		h.cutFirst.Store(1)
		_, err := p.Pull(context.Background(), m, root)
		if recall.ErrorCode(err) != recall.EUNAVAILABLE {
			t.Fatalf("first pull: %v (code %s), want an unavailable error", err, recall.ErrorCode(err))
		}
		part := filepath.Join(root, m.Name, "config.json.part")
		st, err := os.Stat(part)
		if err != nil || st.Size() == 0 {
			t.Fatalf("part file after the cut: %v, %v", st, err)
		}
		half := st.Size()
		dir, err := p.Pull(context.Background(), m, root)
		if err != nil {
			t.Fatal(err)
		}
		checkInstalled(t, dir, content)
		if r := h.rangesSeen()[1]; r != fmt.Sprintf("bytes=%d-", half) {
			t.Errorf("resume asked for %q, want bytes=%d-", r, half)
		}
	})

	t.Run("retry in one pull", func(t *testing.T) {
		h, srv := newFakeHub(t, m, content)
		root := t.TempDir()
		var out bytes.Buffer
		p := &Puller{Endpoint: srv.URL, RetryDelay: time.Millisecond, Progress: &out}
		// config.json dies halfway, and so does the first resume of it.
		h.cutFirst.Store(2)
		dir, err := p.Pull(context.Background(), m, root)
		if err != nil {
			t.Fatal(err)
		}
		checkInstalled(t, dir, content)
		if !strings.Contains(out.String(), "resuming") {
			t.Errorf("progress does not mention the resume:\n%s", out.String())
		}
		if got := h.rangesSeen(); len(got) < 3 || got[1] == "" || got[2] == "" {
			t.Errorf("requests' ranges = %q, want two resumes", got)
		}
	})
}

func TestPullRestartsWhenRangeIsIgnored(t *testing.T) {
	m, content := tinyModel(t)
	h, srv := newFakeHub(t, m, content)
	h.noRange = true
	root := t.TempDir()
	dst := filepath.Join(root, m.Name, "model.safetensors")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	// A stale partial download with wrong bytes: a server without Range
	// support sends the whole file, which must replace it.
	if err := os.WriteFile(dst+".part", bytes.Repeat([]byte{0xEE}, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Puller{Endpoint: srv.URL}
	dir, err := p.Pull(context.Background(), m, root)
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, content)
	if !containsString(h.rangesSeen(), "bytes=1000-") {
		t.Errorf("the partial file was not offered for resume: %q", h.rangesSeen())
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestPullHashMismatchDeletesFile(t *testing.T) {
	m, content := tinyModel(t)
	h, srv := newFakeHub(t, m, content)
	bad := bytes.Clone(content["model.safetensors"])
	bad[100] ^= 1
	h.files["/"+m.Repo+"/resolve/"+m.Revision+"/model.safetensors"] = bad
	root := t.TempDir()
	p := &Puller{Endpoint: srv.URL}
	_, err := p.Pull(context.Background(), m, root)
	if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("err = %v, want a corrupt-download error naming the hash", err)
	}
	for _, name := range []string{"model.safetensors", "model.safetensors.part", manifestName} {
		if _, err := os.Stat(filepath.Join(root, m.Name, name)); err == nil {
			t.Errorf("%s exists after a hash mismatch", name)
		}
	}
	in, _ := List(root)
	if len(in) != 1 || in[0].Complete {
		t.Errorf("List = %+v, want one incomplete model", in)
	}
}

func TestPullNotFound(t *testing.T) {
	m, content := tinyModel(t)
	_, srv := newFakeHub(t, m, content)
	m.Revision = strings.Repeat("cd", 20)
	p := &Puller{Endpoint: srv.URL}
	_, err := p.Pull(context.Background(), m, t.TempDir())
	if recall.ErrorCode(err) != recall.ENOTFOUND || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want not found with 404", err)
	}
}

func TestPullStallTimeout(t *testing.T) {
	m, content := tinyModel(t)
	h, srv := newFakeHub(t, m, content)
	h.stall = 5 * time.Second
	p := &Puller{Endpoint: srv.URL, StallTimeout: 100 * time.Millisecond, Retries: -1}
	start := time.Now()
	_, err := p.Pull(context.Background(), m, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "stall") {
		t.Fatalf("err = %v, want a stall error", err)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("the stall was not cut short")
	}
}

func TestPullProgress(t *testing.T) {
	m, content := tinyModel(t)
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			_, srv := newFakeHub(t, m, content)
			var out bytes.Buffer
			p := &Puller{Endpoint: srv.URL, Progress: &out, Terminal: terminal}
			if _, err := p.Pull(context.Background(), m, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			s := out.String()
			for _, f := range m.Files {
				if !strings.Contains(s, m.Name+" "+f.Path) {
					t.Errorf("no progress for %s:\n%q", f.Path, s)
				}
			}
			if !strings.Contains(s, "100%") || !strings.Contains(s, "done") {
				t.Errorf("no completion in progress:\n%q", s)
			}
			if strings.Contains(s, "\r") != terminal {
				t.Errorf("carriage returns = %v, want %v:\n%q", !terminal, terminal, s)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	tests := []struct {
		have, total int64
		rate        float64
		done        bool
		want        []string
	}{
		{50 << 20, 100 << 20, 10 << 20, false, []string{"m f.bin [============            ]  50% 50.0 MiB / 100.0 MiB  10.0 MiB/s  ETA 0:05"}},
		{100, 0, 0, false, []string{"m f.bin 100 B"}},
		{2048, 2048, 1, true, []string{"100%", "2.0 KiB / 2.0 KiB  done"}},
		{1 << 30, 8 << 30, 1 << 20, false, []string{"ETA 1:59:28"}},
	}
	for _, tt := range tests {
		got := progressLine("m", "f.bin", tt.have, tt.total, tt.rate, tt.done)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("progressLine(%d, %d, %v, %v) = %q, want it to contain %q", tt.have, tt.total, tt.rate, tt.done, got, w)
			}
		}
	}
}

func TestPullRefusesConcurrentPull(t *testing.T) {
	m, content := tinyModel(t)
	h, srv := newFakeHub(t, m, content)
	h.gate = make(chan struct{})
	root := t.TempDir()
	p := &Puller{Endpoint: srv.URL}

	first := make(chan error, 1)
	go func() {
		_, err := p.Pull(context.Background(), m, root)
		first <- err
	}()
	// Wait until the first pull holds the lock and is waiting on the server.
	deadline := time.Now().Add(5 * time.Second)
	for len(h.rangesSeen()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("first pull never reached the server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err := p.Pull(context.Background(), m, root)
	if recall.ErrorCode(err) != recall.ECONFLICT || !strings.Contains(err.Error(), "another pull") {
		t.Errorf("second pull: %v, want a conflict", err)
	}
	close(h.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, filepath.Join(root, m.Name), content)
}

func TestPullClearsStaleLock(t *testing.T) {
	m, content := tinyModel(t)
	_, srv := newFakeHub(t, m, content)
	root := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a process to get a dead pid: %v", err)
	}
	if err := os.WriteFile(lockPath(root, m.Name), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Puller{Endpoint: srv.URL}).Pull(context.Background(), m, root); err != nil {
		t.Fatalf("pull with a dead process's lock: %v", err)
	}
}

// Pulls that start together over a lock file a dead pull left take the
// lock one at a time: clearing a stale lock by its recorded process id
// once let two of them in.
func TestPullLockHeldByOneOverStaleLock(t *testing.T) {
	for trial := 0; trial < 100; trial++ {
		dir := t.TempDir()
		if err := os.WriteFile(lockPath(dir, "m"), []byte("999999\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var unlocks []func()
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				if unlock, err := lockModel(dir, "m"); err == nil {
					mu.Lock()
					unlocks = append(unlocks, unlock) // held: a holder pulls for a while
					mu.Unlock()
				} else if recall.ErrorCode(err) != recall.ECONFLICT {
					t.Errorf("lock: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		for _, unlock := range unlocks {
			unlock()
		}
		if len(unlocks) != 1 {
			t.Fatalf("trial %d: %d pulls hold the lock of one model directory at once", trial, len(unlocks))
		}
	}
}

func TestFileURL(t *testing.T) {
	p := &Puller{Endpoint: "https://mirror.example/hf/"}
	m := Model{Repo: "BAAI/bge-small-en-v1.5", Revision: "abc"}
	got := p.fileURL(m, File{Path: "1_Pooling/config.json"})
	if want := "https://mirror.example/hf/BAAI/bge-small-en-v1.5/resolve/abc/1_Pooling/config.json"; got != want {
		t.Errorf("fileURL = %q, want %q", got, want)
	}
}

func TestEndpoint(t *testing.T) {
	tests := map[string]string{
		"":                        DefaultEndpoint,
		"https://hf-mirror.test/": "https://hf-mirror.test",
		"  http://127.0.0.1:9  ":  "http://127.0.0.1:9",
	}
	for env, want := range tests {
		got := Endpoint(func(k string) string {
			if k == "HF_ENDPOINT" {
				return env
			}
			return ""
		})
		if got != want {
			t.Errorf("Endpoint(HF_ENDPOINT=%q) = %q, want %q", env, got, want)
		}
	}
}
