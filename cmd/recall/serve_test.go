package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const serveToken = "serve-test-token-0123456789abcdef"

// lockedBuffer is a stderr several goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServeLoaded is startServe once the server has built its in-memory
// indexes, which it does in the background: a change made before they are
// loaded would be read by the load itself, not followed.
func startServeLoaded(t *testing.T, env map[string]string, args ...string) (string, *lockedBuffer, func() int) {
	t.Helper()
	url, stderr, stop := startServe(t, env, args...)
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "vector index loaded") }, "the index to load")
	return url, stderr, stop
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+:\d+)\n`)

// startServe runs `recall serve` in-process on a free port and returns its
// URL, its stderr and a function that stops it and returns the exit code.
func startServe(t *testing.T, env map[string]string, args ...string) (string, *lockedBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := NewMain()
	m.Getenv = func(k string) string { return env[k] }
	url, stderr, done := serveWith(t, ctx, cancel, m, args...)
	stop := func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
			return -1
		}
	}
	return url, stderr, stop
}

// serveWith runs `recall serve` with m on a free port until ctx ends, and
// returns its URL, its stderr and a channel that gets its exit code once
// m is closed. cancel ends ctx.
func serveWith(t *testing.T, ctx context.Context, cancel func(), m *Main, args ...string) (string, *lockedBuffer, <-chan int) {
	t.Helper()
	stderr := &lockedBuffer{}
	m.Stdout, m.Stderr, m.Stdin = io.Discard, stderr, strings.NewReader("")
	done := make(chan int, 1)
	go func() {
		code := m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
		m.Close()
		done <- code
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr, done
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("serve never said where it listens: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	return send(t, "GET", url, token, "")
}

// send makes one HTTP request, with token as its bearer unless empty, and
// returns the status and body.
func send(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeStartsAndStops(t *testing.T) {
	env := testEnv(t)
	env["RECALL_TOKEN"] = serveToken
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	url, stderr, stop := startServe(t, env, "--audit", audit)
	if code, body := get(t, url+"/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	if code, body := get(t, url+"/readyz", ""); code != 200 || body != "ok\n" {
		t.Errorf("readyz: %d %q", code, body)
	}
	if code, _ := get(t, url+"/api/stats", ""); code != 401 {
		t.Errorf("stats without the token: %d", code)
	}
	if code, body := get(t, url+"/api/stats", serveToken); code != 200 || !strings.Contains(body, `"sources"`) {
		t.Errorf("stats: %d %s", code, body)
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited with %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(audit)
	if err != nil || strings.Count(string(b), "\n") != 4 || strings.Contains(string(b), serveToken) {
		t.Errorf("audit log: %v\n%s", err, b)
	}
	if strings.Contains(stderr.String(), serveToken) {
		t.Errorf("the token reached stderr: %s", stderr.String())
	}
}

// serve says what it serves before it listens: the database as resolved
// (here a config file's relative db, anchored at the file's folder), what
// searches read and how many tokens are configured, never a token. It
// said only where it listened, leaving an operator to guess which of the
// flags, RECALL_* variables and config file had chosen the database.
func TestServeLogsWhatItServes(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte("db = data/served.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	delete(env, "RECALL_DB")
	env["RECALL_CONFIG"] = cfg
	tokens := filepath.Join(dir, "tokens")
	second := "second-" + serveToken
	if err := os.WriteFile(tokens, []byte("laptop "+serveToken+"\nphone "+second+" ann\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["RECALL_TOKENS_FILE"] = tokens
	env["RECALL_ADMIN_TOKEN"] = "admin-" + serveToken
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, stderr, stop := startServe(t, env)
	if code := stop(); code != 0 {
		t.Errorf("serve exited with %d: %s", code, stderr.String())
	}
	want := "recall: serving " + filepath.Join(dir, "data", "served.db") +
		"; searches full text only (no embedding model); 2 user tokens and the admin token\nlistening on "
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("serve's log lacks %q:\n%s", want, stderr.String())
	}
	if strings.Contains(stderr.String(), serveToken) {
		t.Errorf("a token reached stderr: %s", stderr.String())
	}
	if !strings.HasSuffix(stderr.String(), "recall: stopped\n") {
		t.Errorf("serve's log does not end saying it stopped:\n%s", stderr.String())
	}
}

// serve names the space its searches read: after `space use` of another
// model's space, it named the configured model's space, which searches no
// longer read.
func TestServeNamesTheReadSpace(t *testing.T) {
	env := ollamaEnv(t)
	env["RECALL_TOKEN"] = serveToken
	for _, args := range [][]string{
		{"sweep", sampleVault},
		{"--embedder", "ollama", "--model", "model-b", "space", "create", "b"},
		{"repair", "--space", "b"},
		{"space", "use", "b"},
	} {
		if _, errs, code := run(t, env, args...); code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
	}
	_, stderr, stop := startServe(t, env)
	if code := stop(); code != 0 {
		t.Fatalf("serve exited with %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "searches full text and vector space b (new text is embedded into ") {
		t.Errorf("serve's log does not name the read space b:\n%s", stderr.String())
	}
}

// A server with no token says so once, on a line that says what it means;
// the summary of what it serves said "no user token" again after it. With
// only the admin token, the summary names it and the line still warns.
func TestServeSaysOnceThatItHasNoToken(t *testing.T) {
	for _, admin := range []string{"", "admin-" + serveToken} {
		env := testEnv(t)
		if admin != "" {
			env["RECALL_ADMIN_TOKEN"] = admin
		}
		_, stderr, stop := startServe(t, env)
		if code := stop(); code != 0 {
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		}
		out := stderr.String()
		if n := strings.Count(out, "no token configured: accepting token-less requests on loopback only"); n != 1 {
			t.Errorf("admin %q: the token-less warning is said %d times:\n%s", admin, n, out)
		}
		if strings.Contains(out, "no user token") {
			t.Errorf("admin %q: the summary says again that there is no token:\n%s", admin, out)
		}
		if admin != "" && !strings.Contains(out, "(no embedding model); the admin token\n") {
			t.Errorf("the summary does not name the admin token:\n%s", out)
		}
	}
}

// The address serve says it listens on has the host it was given: for
// 0.0.0.0 it said http://[::]:PORT.
func TestServeSaysTheAddressGiven(t *testing.T) {
	env := testEnv(t)
	env["RECALL_TOKEN"] = serveToken
	url, stderr, stop := startServe(t, env, "--addr", "0.0.0.0:0")
	if !regexp.MustCompile(`^http://0\.0\.0\.0:[1-9]\d*$`).MatchString(url) {
		t.Errorf("serve --addr 0.0.0.0:0 says it listens on %q", url)
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited with %d: %s", code, stderr.String())
	}
}

// serve -h explains --allow-path-token by what it is for, not by a system
// the reader may never have used.
func TestServeHelpForPathToken(t *testing.T) {
	out, _, code := run(t, testEnv(t), "serve", "-h")
	if code != 0 || !strings.Contains(out, "for clients that cannot set a header") || strings.Contains(out, "replaced system") {
		t.Errorf("serve -h: exit %d\n%s", code, out)
	}
}

// A mistake in the server's access settings (no token on a public
// address, a bad token, a bad origin) is the configuration's: exit 2, as
// README says of a setting's mistake, before the database is opened,
// which would create it (or upgrade an older one).
func TestServeRefusesOpenNonLoopback(t *testing.T) {
	tokensFile := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokensFile, []byte("laptop "+serveToken+" not/an/owner\n"), 0o600)
	shortTokenConfig := filepath.Join(t.TempDir(), "config")
	os.WriteFile(shortTokenConfig, []byte("token = short\n"), 0o600)
	for _, c := range []struct {
		name, want string
		env        map[string]string
		args       []string
	}{
		{"no token, public address", "no token configured", nil, []string{"--addr", "0.0.0.0:0"}},
		// Named by where it came from: the server's refusal said "user
		// token 1", which no setting is called.
		{"short token", "recall: RECALL_TOKEN: the token is 5 characters; tokens must be at least 24", map[string]string{"RECALL_TOKEN": "short"}, nil},
		{"short token in the config file", "recall: the config file's token: the token is 5 characters", map[string]string{"RECALL_CONFIG": shortTokenConfig}, nil},
		{"short admin token", "recall: RECALL_ADMIN_TOKEN: the token is 5 characters", map[string]string{"RECALL_ADMIN_TOKEN": "short"}, nil},
		{"admin token a user's", "must differ", map[string]string{"RECALL_TOKEN": serveToken, "RECALL_ADMIN_TOKEN": serveToken}, nil},
		{"bad tokens file line", "tokens file line 1", map[string]string{"RECALL_TOKENS_FILE": tokensFile}, nil},
		{"bad origin", "full origin", nil, []string{"--cors-origin", "*"}},
		{"no token, a proxy's name", "--allowed-host", nil, []string{"--allowed-host", "recall.example.com"}},
		{"no token, another site's pages", "--cors-origin", nil, []string{"--cors-origin", "https://app.example"}},
		{"no token, path tokens", "--allow-path-token", map[string]string{"RECALL_ADMIN_TOKEN": serveToken}, []string{"--allow-path-token"}},
	} {
		env := testEnv(t)
		for k, v := range c.env {
			env[k] = v
		}
		args := append([]string{"serve", "--addr", "127.0.0.1:0"}, c.args...)
		_, errs, code := run(t, env, args...)
		if code != exitUsage || !strings.Contains(errs, c.want) || strings.Contains(errs, "short\"") {
			t.Errorf("%s: exit %d, want %d: %s", c.name, code, exitUsage, errs)
		}
		if _, err := os.Stat(env["RECALL_DB"]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the database was opened before the refusal (stat: %v)", c.name, err)
		}
	}
}

// An address another process holds is named, with what to do, rather
// than left as the system's "bind: address already in use".
func TestServeSaysTheAddressIsInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errs, code := run(t, testEnv(t), "serve", "--addr", ln.Addr().String())
	if code == 0 || !strings.Contains(errs, ln.Addr().String()+" is in use") || !strings.Contains(errs, "--addr") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

func TestServeTokensFile(t *testing.T) {
	env := testEnv(t)
	file := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(file, []byte("# tokens\nlaptop "+serveToken+" ada\n"), 0o600)
	env["RECALL_TOKENS_FILE"] = file
	env["RECALL_ADMIN_TOKEN"] = "admin-" + serveToken
	url, _, stop := startServe(t, env)
	defer stop()
	if code, _ := get(t, url+"/api/memories?prefix=a", serveToken); code != 200 {
		t.Errorf("file token: %d", code)
	}
	if code, _ := get(t, url+"/admin/index-status", serveToken); code != 403 {
		t.Errorf("user token on an admin endpoint: %d", code)
	}
	if code, _ := get(t, url+"/admin/index-status", "admin-"+serveToken); code != 200 {
		t.Errorf("admin token: %d", code)
	}
}

func TestTokenNew(t *testing.T) {
	out, _, code := run(t, testEnv(t), "token", "new")
	tok := strings.TrimSpace(out)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if code != 0 || err != nil || len(raw) != 32 {
		t.Errorf("token new: %d %q %v", code, out, err)
	}
	if _, _, code := run(t, testEnv(t), "token"); code != exitUsage {
		t.Errorf("token without a subcommand: exit %d", code)
	}
}

// `recall mcp` speaks nothing but JSON-RPC on stdout.
func TestMCPOverStdio(t *testing.T) {
	env := testEnv(t)
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatalf("sweep: %s", errs)
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_archive","arguments":{"query":"moments of vulnerability"}}}`,
	}, "\n") + "\n"
	out := &lockedBuffer{}
	stderr := &lockedBuffer{}
	m := NewMain()
	// A pipe held open until the answers are in: EOF on stdin ends the session.
	pr, pw := io.Pipe()
	m.Stdin, m.Stdout, m.Stderr = pr, out, stderr
	m.Getenv = func(k string) string { return env[k] }
	done := make(chan int, 1)
	go func() { done <- m.Run(context.Background(), []string{"mcp"}); m.Close() }()
	pw.Write([]byte(in))
	// Generous: the whole suite shares two cores with other packages' tests.
	deadline := time.Now().Add(60 * time.Second)
	// Replies may come in any order: wait for both.
	for !(strings.Contains(out.String(), `"id":2`) && strings.Contains(out.String(), `"id":3`)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("mcp exit %d: %s", code, stderr.String())
	}
	ids := map[float64]string{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not JSON-RPC: %q", sc.Text())
		}
		if id, ok := msg["id"].(float64); ok {
			ids[id] = sc.Text()
		}
	}
	if !strings.Contains(ids[2], "search_archive") || strings.Contains(ids[2], "repair_archive") {
		t.Errorf("tools/list: %s", ids[2])
	}
	if !strings.Contains(ids[3], "2025/07/hard-week.md") {
		t.Errorf("search: %s", ids[3])
	}
}

// `recall sweep DIR --remote URL` fills a running server.
func TestSweepRemote(t *testing.T) {
	serverEnv := testEnv(t)
	serverEnv["RECALL_TOKEN"] = serveToken
	url, _, stop := startServe(t, serverEnv)
	defer stop()

	clientEnv := testEnv(t)
	clientEnv["RECALL_TOKEN"] = serveToken
	out, errs, code := run(t, clientEnv, "sweep", sampleVault, "--remote", url, "--json")
	if code != 0 {
		t.Fatalf("remote sweep exit %d: %s %s", code, out, errs)
	}
	var res struct{ FilesSeen, FilesChanged, FilesFailed int }
	var raw map[string]int
	json.Unmarshal([]byte(strings.TrimSpace(out)), &raw)
	// The keys of a local sweep's summary.
	res.FilesSeen, res.FilesChanged, res.FilesFailed = raw["files_seen"], raw["files_changed"], raw["files_failed"]
	if res.FilesSeen < 9 || res.FilesChanged != res.FilesSeen || res.FilesFailed != 0 || raw["chunks_written"] == 0 || raw["bytes"] == 0 {
		t.Fatalf("summary: %s", out)
	}
	if b := searchServer(t, url, `{"query":"moments of vulnerability"}`); !strings.Contains(b, `"source":"2025/07/hard-week.md"`) {
		t.Errorf("search on the server: %s", b)
	}
	out, _, code = run(t, clientEnv, "sweep", "--remote="+url, "--json", sampleVault)
	json.Unmarshal([]byte(strings.TrimSpace(out)), &raw)
	if code != 0 || raw["files_skipped"] != res.FilesSeen || raw["batches"] != 0 {
		t.Errorf("second run: %d %s", code, out)
	}
	// A symbolic link to the vault is the vault: its run finds the
	// manifest of the folder's and sends nothing.
	link := filepath.Join(t.TempDir(), "vault-link")
	if abs, _ := filepath.Abs(sampleVault); os.Symlink(abs, link) == nil {
		out, _, code = run(t, clientEnv, "sweep", "--remote", url, "--json", link)
		json.Unmarshal([]byte(strings.TrimSpace(out)), &raw)
		if code != 0 || raw["files_skipped"] != res.FilesSeen || raw["batches"] != 0 {
			t.Errorf("through a symbolic link: %d %s", code, out)
		}
	}
	// Without a token, the answer says where one goes (the server's 401
	// speaks of an Authorization header, which a recall user never sets).
	delete(clientEnv, "RECALL_TOKEN")
	if _, errs, code := run(t, clientEnv, "sweep", "--full", "--remote", url, sampleVault); code != exitFailure || !strings.Contains(errs, "set RECALL_TOKEN") {
		t.Errorf("no token: exit %d: %s", code, errs)
	}
	clientEnv["RECALL_TOKEN"] = "wrong-token-0123456789abcdefgh"
	if _, errs, code := run(t, clientEnv, "sweep", "--full", "--remote", url, sampleVault); code == 0 || !strings.Contains(errs, "401") {
		t.Errorf("wrong token: exit %d: %s", code, errs)
	}
}

// searchServer posts a search to the server's REST API and returns the answer.
func searchServer(t *testing.T, url, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/api/search", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b)
}

// `recall sweep DIR --remote URL --prune` removes from the server what was
// removed from the vault; without --prune, gone files are only reported.
func TestSweepRemotePrune(t *testing.T) {
	serverEnv := testEnv(t)
	serverEnv["RECALL_TOKEN"] = serveToken
	url, _, stop := startServe(t, serverEnv)
	defer stop()
	vault := t.TempDir()
	os.WriteFile(filepath.Join(vault, "keep.md"), []byte("**User:** about marmalade\n\n**Assistant:** oranges"), 0o644)
	gone := filepath.Join(vault, "gone.md")
	os.WriteFile(gone, []byte("**User:** about quinces\n\n**Assistant:** fragrant"), 0o644)

	clientEnv := testEnv(t)
	clientEnv["RECALL_TOKEN"] = serveToken
	if out, errs, code := run(t, clientEnv, "sweep", "--remote", url, vault); code != 0 {
		t.Fatalf("remote sweep exit %d: %s %s", code, out, errs)
	}
	found := func() bool {
		return strings.Contains(searchServer(t, url, `{"query":"quinces","mode":"lexical"}`), `"source":"gone.md"`)
	}
	if !found() {
		t.Fatal("the file was not sent")
	}
	os.Remove(gone)
	out, errs, code := run(t, clientEnv, "sweep", "--remote", url, vault)
	if code != 0 || !strings.HasPrefix(out, "sent 0 of 1 file to "+url+" (1 unchanged, 0 failed), 0 sources, 0 chunks in 0 requests, ") ||
		!strings.Contains(out, "1 file is gone from the vault (the server keeps it: run with --prune to remove it there):\n  gone.md") || !found() {
		t.Errorf("without --prune: exit %d: %s %s", code, out, errs)
	}
	out, errs, code = run(t, clientEnv, "sweep", "--remote", url, "--prune", "--json", vault)
	var raw map[string]int
	json.Unmarshal([]byte(strings.TrimSpace(out)), &raw)
	if code != 0 || raw["files_removed"] != 1 || raw["sources_removed"] != 1 || found() {
		t.Errorf("--prune: exit %d: %s %s", code, out, errs)
	}
	out, _, code = run(t, clientEnv, "sweep", "--remote", url, "--prune", "--json", vault)
	json.Unmarshal([]byte(strings.TrimSpace(out)), &raw)
	if code != 0 || raw["files_removed"] != 0 || raw["batches"] != 0 {
		t.Errorf("once pruned: exit %d: %s", code, out)
	}
}

// TestServeFollowsSweepOfAnotherProcess: a `recall sweep` run beside a
// running server writes straight to the database; the server's in-memory
// indexes follow within seconds, for new files and for pruned ones.
func TestServeFollowsSweepOfAnotherProcess(t *testing.T) {
	env := testEnv(t)
	env["RECALL_TOKEN"] = serveToken
	url, stderr, stop := startServeLoaded(t, env)
	defer stop()

	vault := t.TempDir()
	note := filepath.Join(vault, "axolotl.md")
	if err := os.WriteFile(note, []byte("# Pets\n\n**user:** my axolotl regrew a gill overnight\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := run(t, env, "sweep", vault); code != 0 {
		t.Fatalf("sweep: %d %s %s", code, out, errs)
	}
	search := func() string { return restSearch(t, url, "axolotl gill") }
	waitFor(t, func() bool { return strings.Contains(search(), `"source":"axolotl.md"`) }, "the server to find the swept file")
	if !strings.Contains(stderr.String(), "followed writes of another process") {
		t.Errorf("the server did not log what it followed: %s", stderr.String())
	}

	if err := os.Remove(note); err != nil {
		t.Fatal(err)
	}
	// The vault's one file gone: emptied on purpose.
	if out, errs, code := run(t, env, "sweep", "--prune", "--prune-empty", vault); code != 0 {
		t.Fatalf("sweep --prune --prune-empty: %d %s %s", code, out, errs)
	}
	waitFor(t, func() bool { return !strings.Contains(search(), `"source":"axolotl.md"`) }, "the pruned file to leave the server's results")
}

// waitFor polls cond for up to 15 seconds.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeSweepsItsVault: `recall serve --vault DIR` sweeps the folder at
// start and again every --sweep-every, so a file added later is found
// without any other command; each sweep is recorded as `recall sweep`
// records one.
func TestServeSweepsItsVault(t *testing.T) {
	env := testEnv(t)
	env["RECALL_TOKEN"] = serveToken
	vault := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(vault, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first.md", "# Garden\n\n**user:** the quince tree finally flowered\n")
	url, stderr, stop := startServe(t, env, "--vault", vault, "--sweep-every", "200ms")
	defer stop()
	search := func(q string) string { return restSearch(t, url, q) }
	waitFor(t, func() bool { return strings.Contains(search("quince"), `"source":"first.md"`) }, "the first sweep")
	write("second.md", "# Kitchen\n\n**user:** I pickled the green tomatoes with dill\n")
	waitFor(t, func() bool { return strings.Contains(search("pickled tomatoes"), `"source":"second.md"`) }, "a later sweep")
	if !strings.Contains(stderr.String(), "msg=sweep") {
		t.Errorf("no sweep in the server's log: %s", stderr.String())
	}
	out, errs, code := run(t, env, "stats", "--json")
	if code != 0 || !strings.Contains(out, `"outcome":"ok"`) {
		t.Errorf("stats after the server's sweeps: %d %s %s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(env["RECALL_DB"]), "sweep.log"))
	if err != nil || !strings.Contains(string(b), "summary\tvault="+vault) {
		t.Errorf("sweep.log: %v %s", err, b)
	}

	if _, errs, code := run(t, env, "serve", "--vault", filepath.Join(vault, "missing")); code == 0 || !strings.Contains(errs, "not a readable folder") {
		t.Errorf("serve --vault of a missing folder: exit %d: %s", code, errs)
	}
}

// restSearch posts a search to a server's REST API with serveToken and
// returns the response body.
func restSearch(t *testing.T, url, query string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequest("POST", url+"/api/search", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeStopsDuringSweep: a server stopped while it sweeps its vault
// records how far the sweep got, as `recall sweep` does on Ctrl-C, before
// its store closes.
func TestServeStopsDuringSweep(t *testing.T) {
	env := testEnv(t)
	env["RECALL_TOKEN"] = serveToken
	vault := t.TempDir()
	for i := range 4000 {
		text := fmt.Sprintf("# Note %d\n\n**user:** a note about item %d and the weather\n", i, i)
		if err := os.WriteFile(filepath.Join(vault, fmt.Sprintf("n%04d.md", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, stop := startServe(t, env, "--vault", vault, "--sweep-every", "0")
	// Stopped once the sweep has committed something: a stop before it had
	// begun (a busy machine) would leave no sweep to record.
	waitFor(t, func() bool {
		out, _, code := run(t, env, "stats", "--json")
		var st struct{ Sources map[string]int }
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Sources["archive"] > 0
	}, "the sweep to commit its first files")
	if code := stop(); code != 0 {
		t.Fatalf("serve exited with %d: %s", code, stderr.String())
	}
	out, errs, code := run(t, env, "stats", "--json")
	if code != 0 || !regexp.MustCompile(`"outcome":"(interrupted|ok)"`).MatchString(out) {
		t.Errorf("stats after stopping serve mid-sweep: %d %s %s\nserve: %s", code, out, errs, stderr.String())
	}
}

// `recall mcp` typed at a prompt says what it waits for, on stderr: it
// printed nothing and seemed to hang. Started by a client (stdin not a
// terminal) it says nothing of the kind, and stdout carries only protocol.
func TestMCPAtATerminalSaysWhatItWaitsFor(t *testing.T) {
	for _, tty := range []bool{true, false} {
		env := testEnv(t)
		out, errs, code := runWith(t, context.Background(), strings.NewReader(""), env,
			func(m *Main) { m.StdinIsTerminal = func() bool { return tty } }, "mcp")
		said := strings.Contains(errs, "waiting for JSON-RPC messages on stdin")
		if code != 0 || out != "" || said != tty {
			t.Errorf("stdin a terminal %v: exit %d, stdout %q, stderr %q", tty, code, out, errs)
		}
	}
}
