package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/remote"
)

// No log line and no audit line ever holds a token, a query, a memory
// value, archive text or a key, whatever the request and its outcome.
func TestAuditCanary(t *testing.T) {
	const (
		canaryTok   = "CANARYTOKEN-7f3a9c1e5b2d4a6f8e0c"
		canaryWrong = "CANARYWRONG-7f3a9c1e5b2d4a6f8e0c"
		canaryQuery = "canaryquery7f3a"
		canaryValue = "canaryvalue7f3a"
		canaryText  = "canaryarchive7f3a"
		canaryKey   = "note_canarykey7f3a"
	)
	f := newFixture(t, func(o *Options) {
		o.Tokens = append(o.Tokens, Token{Name: "canary", Secret: canaryTok})
		o.AllowPathToken = true
	})
	cs := f.connect(canaryTok)
	call(t, cs, "save_memory", map[string]any{"key": canaryKey, "value": "remember " + canaryValue})
	call(t, cs, "search_archive", map[string]any{"query": canaryQuery + " " + canaryValue})
	call(t, cs, "search_archive", map[string]any{"query": canaryQuery + strings.Repeat("x", 600)}) // refused
	call(t, cs, "read_memory", map[string]any{"key": canaryKey})
	call(t, cs, "read_memory", map[string]any{"key": canaryKey + "_missing"})
	call(t, cs, "write_diary", map[string]any{"text": canaryValue + " in the diary"})
	call(t, cs, "delete_memory", map[string]any{"key": canaryKey})
	call(t, cs, "delete_memory", map[string]any{"key": canaryKey, "confirm": true})
	f.ingest(canaryTok, remote.IngestChunk{SourceFile: "c.md", TotalChunks: 1, Content: canaryText})
	f.ingest(canaryTok, remote.IngestChunk{SourceFile: "../" + canaryText, TotalChunks: 1, Content: canaryText})
	f.do("POST", "/api/search", canaryTok, `{"query":"`+canaryQuery+`"}`)
	f.do("POST", "/api/search", canaryTok, `{"query":"`+canaryQuery+`","bogus":"`+canaryValue+`"}`)
	f.do("PUT", "/api/memories/"+canaryKey, canaryTok, `{"value":"`+canaryValue+`"}`)
	f.do("GET", "/api/memories/"+canaryKey, canaryTok, "")
	f.do("POST", "/api/search", canaryWrong, `{"query":"`+canaryQuery+`"}`)
	f.do("POST", "/api/search?access_token="+canaryTok, "", `{"query":"x"}`)
	f.do("POST", "/mcp/"+canaryWrong, "", initBody, mcpHeaders...)
	f.do("POST", "/mcp/"+canaryTok, "", initBody, mcpHeaders...)
	f.do("GET", "/admin/index-status", canaryTok, "")

	waitFor(f.audit, `"route":"GET /admin/index-status"`, `"tool":"delete_memory"`)
	out := f.logs.String() + f.audit.String()
	if f.audit.String() == "" || f.logs.String() == "" {
		t.Fatal("nothing was logged: the canary check would be blind")
	}
	for _, c := range []string{canaryTok, canaryWrong, canaryQuery, canaryValue, canaryText, canaryKey, "canary" + "key"} {
		if strings.Contains(out, c) {
			t.Errorf("%q leaked into the logs:\n%s", c, out)
		}
	}
	if !strings.Contains(f.audit.String(), `"token":"canary"`) {
		t.Error("the audit log does not name the token")
	}
}

func TestAuditLines(t *testing.T) {
	f := newFixture(t, nil)
	f.save("alice", "note_a", "apricot")
	cs := f.connect(aliceTok)
	call(t, cs, "search_archive", map[string]any{"query": "apricot", "mode": "lexical"})
	call(t, cs, "get_context", map[string]any{"source": "note_a", "chunk_index": 0, "radius": 4}) // refused by its schema
	f.do("GET", "/api/stats", wrongTok, "")
	f.do("GET", "/admin/memories", aliceTok, "")
	f.do("GET", "/api/memories?prefix=note_", aliceTok, "")

	// Lines are written after the answer is sent: wait for the last one.
	waitFor(f.audit, `"tool":"search_archive"`, `"tool":"get_context"`, `"route":"GET /api/memories"`, `"status":401`, `"route":"GET /admin/memories"`)
	var lines []auditLine
	sc := bufio.NewScanner(strings.NewReader(f.audit.String()))
	for sc.Scan() {
		var l auditLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if _, err := time.Parse(time.RFC3339Nano, l.Time); err != nil || !strings.HasSuffix(l.Time, "Z") {
			t.Errorf("time %q is not UTC RFC 3339", l.Time)
		}
		if len(l.RequestID) != 16 || l.Route == "" || l.Status == 0 || l.Outcome == "" {
			t.Errorf("incomplete line %+v", l)
		}
		lines = append(lines, l)
	}
	find := func(pred func(auditLine) bool) *auditLine {
		for i := range lines {
			if pred(lines[i]) {
				return &lines[i]
			}
		}
		return nil
	}
	search := find(func(l auditLine) bool { return l.Tool == "search_archive" })
	if search == nil || search.Token != "alice" || search.Route != "mcp tools/call" || search.Results == nil || *search.Results != 1 {
		t.Errorf("search line: %+v", search)
	}
	if l := find(func(l auditLine) bool { return l.Tool == "get_context" }); l == nil || l.Outcome != "invalid" || l.Token != "alice" {
		t.Errorf("refused call's line: %+v", l)
	}
	if _, m := f.do("GET", "/metrics", adminTok, ""); !strings.Contains(m, `recall_tool_calls_total{tool="get_context",outcome="invalid"} 1`) {
		t.Errorf("the refused call is not counted")
	}
	if l := find(func(l auditLine) bool { return l.Status == 401 }); l == nil || l.Outcome != "unauthorized" || l.Token != "-" || l.Route != "GET /api/stats" {
		t.Errorf("failed auth line: %+v", l)
	}
	if l := find(func(l auditLine) bool { return l.Route == "GET /admin/memories" }); l == nil || l.Status != 403 || l.Outcome != "forbidden" || l.Token != "alice" {
		t.Errorf("denial line: %+v", l)
	}
	if l := find(func(l auditLine) bool { return l.Route == "GET /api/memories" }); l == nil || l.Results == nil || *l.Results != 1 {
		t.Errorf("find line: %+v", l)
	}
}

func TestRedactWriter(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET /mcp/s3cr3t-token HTTP/1.1", "GET /mcp/[REDACTED] HTTP/1.1"},
		{`url="http://h/mcp/abc?x=1"`, `url="http://h/mcp/[REDACTED]?x=1"`},
		{"Authorization: Bearer abc.def", "Authorization: Bearer [REDACTED]"},
		{"authorization=bearer xyz, next", "authorization=bearer [REDACTED] next"},
		// A secret may hold any printable ASCII but space: all of it goes.
		{`Bearer abc,DEF;ghi'JKL&mno"PQR tail`, "Bearer [REDACTED] tail"},
		{`GET /mcp/abc,DEF;ghi'JKL&mno"PQR HTTP/1.1`, "GET /mcp/[REDACTED] HTTP/1.1"},
		{"nothing to hide /mcp", "nothing to hide /mcp"},
	} {
		var b bytes.Buffer
		n, err := RedactWriter(&b).Write([]byte(tc.in))
		if err != nil || n != len(tc.in) || b.String() != tc.want {
			t.Errorf("%q -> %q (%d, %v), want %q", tc.in, b.String(), n, err, tc.want)
		}
	}
}

func TestMetricsExposition(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("m.md", "M", "", "metric text")
	cs := f.connect(plainTok)
	for range 3 {
		call(t, cs, "search_archive", map[string]any{"query": "metric"})
	}
	call(t, cs, "search_archive", map[string]any{"query": "metric", "since": "never"})
	if resp, _ := f.do("GET", "/metrics", "", ""); resp.StatusCode != 401 {
		t.Errorf("metrics without a token: %d", resp.StatusCode)
	}
	// A request is counted after its answer is sent: wait for the last one.
	resp, body := f.do("GET", "/metrics", plainTok, "")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(body, `route="mcp tools/call",code="200"} 4`) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		resp, body = f.do("GET", "/metrics", plainTok, "")
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`recall_tool_calls_total{tool="search_archive",outcome="ok"} 3`,
		`recall_tool_calls_total{tool="search_archive",outcome="invalid"} 1`,
		`recall_tool_duration_seconds_count{tool="search_archive"} 4`,
		`recall_tool_duration_seconds_bucket{tool="search_archive",le="+Inf"} 4`,
		`recall_http_requests_total{route="mcp tools/call",code="200"} 4`,
		`recall_vector_coverage_ratio{space="` + testSpace + `"} 1`,
		`recall_sources{kind="archive"} 1`,
		"# TYPE recall_http_request_duration_seconds histogram",
		"recall_index_ready ",
		// It counts units, not chunks (it said "Chunks"): more than recall_vectors.
		"# HELP recall_index_vectors Entries in the in-memory vector index: one per paragraph group",
		"recall_repair_missing ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Every sample line is `name{labels} value` with a parseable value.
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err != nil && line[i+1:] != "+Inf" {
			t.Errorf("bad sample %q", line)
		}
	}
}

// waitFor waits until the log holds every want: a request's line is written
// after its answer has gone out, so the client may be ahead of it.
func waitFor(log *syncBuffer, want ...string) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		all := true
		for _, w := range want {
			all = all && strings.Contains(log.String(), w)
		}
		if all {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A command-line operation's audit line carries the status its error would
// have over HTTP (a missing space is 404, not 500).
func TestLocalEventStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		out    string
	}{
		{nil, 200, "ok"},
		{recall.Errorf(recall.ENOTFOUND, "no vector space %q", "nope"), 404, "not_found"},
		{recall.Errorf(recall.EINVALID, "bad"), 400, "invalid"},
		{errors.New("disk on fire"), 500, "internal"},
	} {
		var b bytes.Buffer
		LocalEvent(&b, "local:test", "cli space drop", time.Now(), 0, tc.err)
		var line auditLine
		if err := json.Unmarshal(b.Bytes(), &line); err != nil {
			t.Fatalf("%v: %s", err, b.String())
		}
		if line.Status != tc.status || line.Outcome != tc.out {
			t.Errorf("%v: status %d outcome %q; want %d %q", tc.err, line.Status, line.Outcome, tc.status, tc.out)
		}
	}
}
