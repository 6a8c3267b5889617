package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A client that writes all its requests and closes its end, as
// `printf '...' | recall mcp` does, gets an answer to every one of them.
func TestStdioAnswersEveryPipedRequest(t *testing.T) {
	f := newFixture(t, nil)
	f.archive("a.md", "A", "2025-01-01", "the lighthouse keeper's daughter painted the rocks")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"s1","method":"tools/call","params":{"name":"search_archive","arguments":{"query":"lighthouse"}}}`,
		`{"jsonrpc":"2.0","id":"s2","method":"tools/call","params":{"name":"search_archive","arguments":{"query":"painted rocks","mode":"semantic"}}}`,
	}, "\n") + "\n"
	for round := range 10 {
		var out syncBuffer
		if err := f.srv.RunStdio(context.Background(), strings.NewReader(in), &out, false); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		got := map[string]string{}
		for line := range strings.Lines(out.String()) {
			var m struct {
				ID     any             `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("round %d: %q: %v", round, line, err)
			}
			if m.ID != nil {
				got[idString(m.ID)] = string(m.Result) + string(m.Error)
			}
		}
		for _, id := range []string{"1", "2", "s1", "s2"} {
			if got[id] == "" {
				t.Fatalf("round %d: no answer to request %s; output:\n%s", round, id, out.String())
			}
		}
		if !bytes.Contains([]byte(got["s1"]), []byte("lighthouse")) {
			t.Fatalf("round %d: search answered without the passage: %s", round, got["s1"])
		}
	}
}

// A line that is no JSON-RPC message gets an error answer (id null) and
// the session goes on: the requests around it are answered.
func TestStdioBadLinesDoNotEndTheSession(t *testing.T) {
	f := newFixture(t, nil)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage`,
		``,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"` + strings.Repeat("x", maxCallBody) + `"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out syncBuffer
	if err := f.srv.RunStdio(context.Background(), strings.NewReader(in), &out, false); err != nil {
		t.Fatal(err)
	}
	answered, refused := map[string]bool{}, map[int]int{}
	for line := range strings.Lines(out.String()) {
		var m struct {
			ID    any `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case m.ID == nil && m.Error != nil:
			refused[m.Error.Code]++
		case m.ID != nil:
			answered[idString(m.ID)] = true
		}
	}
	for _, id := range []string{"1", "2", "3"} {
		if !answered[id] {
			t.Errorf("no answer to request %s after the bad lines; output:\n%.2000s", id, out.String())
		}
	}
	if refused[-32700] != 1 || refused[-32600] != 3 {
		t.Errorf("refusals by code: %v; want one parse error (garbage) and three invalid requests (object id, batch, too long)", refused)
	}
}

func idString(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// Over stdio, each tool call writes its own audit line.
func TestStdioToolCallsAreAudited(t *testing.T) {
	f := newFixture(t, nil)
	f.save("", "note_k", "a value")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_memory","arguments":{"key":"note_k","confirm":true}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_archive","arguments":{"query":"x","limit":21}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
	}, "\n") + "\n"
	var out syncBuffer
	if err := f.srv.RunStdio(context.Background(), strings.NewReader(in), &out, false); err != nil {
		t.Fatal(err)
	}
	line := f.audit.String()
	if !strings.Contains(line, `"tool":"delete_memory"`) || !strings.Contains(line, `"remote":"stdio"`) || strings.Contains(line, "a value") {
		t.Fatalf("audit: %q", line)
	}
	// A call the tool's input schema refuses is audited as invalid too.
	if !strings.Contains(line, `"tool":"search_archive","status":200,"outcome":"invalid"`) {
		t.Errorf("refused call's audit: %q", line)
	}
	if !strings.Contains(line, `"tool":"unknown","status":200,"outcome":"not_found"`) || strings.Contains(line, "no_such_tool") {
		t.Errorf("unknown tool's audit: %q", line)
	}
}
