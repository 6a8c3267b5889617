package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
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
	if refused[-32700] != 1 || refused[-32600] != 2 {
		t.Errorf("refusals by code: %v; want one parse error (garbage) and two invalid requests (object id, batch)", refused)
	}
	if !answered["big"] {
		t.Errorf("the line over the limit was not answered with its id; output:\n%.2000s", out.String())
	}
}

// A line the SDK is not given is answered with the id it carries, where
// one can be read: a client waits for the answer to that id, and the
// official Python SDK, which has no timeout by default, waited for ever
// for its call of over 2 MiB, whose refusal came with id null. The id is
// found wherever the client put it (the TypeScript SDK writes it last)
// and never taken from inside params; messages the HTTP front door
// refuses are refused alike.
func TestStdioRefusalsCarryTheID(t *testing.T) {
	f := newFixture(t, nil)
	big := strings.Repeat("x", maxCallBody)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"first","method":"tools/call","params":{"name":"save_memory","arguments":{"key":"k","value":"` + big + `"}}}`,
		`{"method":"tools/call","params":{"name":"save_memory","arguments":{"id":"inner","key":"k","value":"` + big + `"}},"jsonrpc":"2.0","id":41}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"` + big + `"}}`,
		`{"jsonrpc":"1.0","id":43,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":6.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":44,"method":"tools/call","params":"x"}`,
		`{"jsonrpc":"2.0","id":45,"method":"ping"}`,
	}, "\n") + "\n"
	var out syncBuffer
	if err := f.srv.RunStdio(context.Background(), strings.NewReader(in), &out, false); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		msg  string
	}
	byID := map[string]answer{}
	var nullIDs []answer
	for line := range strings.Lines(out.String()) {
		var m struct {
			ID    any `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		var a answer
		if m.Error != nil {
			a = answer{m.Error.Code, m.Error.Message}
		}
		if m.ID == nil {
			nullIDs = append(nullIDs, a)
			continue
		}
		byID[idString(m.ID)] = a
	}
	want := map[string]answer{
		"first": {-32600, "the message is over the 2 MiB limit"},
		"41":    {-32600, "the message is over the 2 MiB limit"},
		"43":    {-32600, "the line is not a JSON-RPC message"},
		"44":    {-32602, "params must be an object"},
		"45":    {},
	}
	for id, w := range want {
		if got, ok := byID[id]; !ok || got != w {
			t.Errorf("answer to id %s: %+v (answered: %v), want %+v", id, got, ok, w)
		}
	}
	for _, id := range []string{"inner", "6"} {
		if a, ok := byID[id]; ok {
			t.Errorf("an answer names id %s, which no request had: %+v", id, a)
		}
	}
	wantNull := []answer{{-32600, "the message is over the 2 MiB limit"}, {-32600, "the id must be a string or an integer"}}
	if !slices.Equal(nullIDs, wantNull) {
		t.Errorf("answers with a null id: %+v, want %+v", nullIDs, wantNull)
	}
}

// idScan finds the same id as decoding the whole message, however the
// message is cut into pieces, and none where the message has none.
func TestIDScan(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"method":"ping","jsonrpc":"2.0","id":"a\"b,}"}`,
		` { "params" : {"id":"inner","list":[{"id":1}],"s":"\"id\":9"} , "id" : -12 } `,
		`{"\u0069d":"escaped key"}`,
		`{"params":{"x":"}"},"id":3}`,
		`{"id":null,"method":"ping"}`,
		`{"id":1.5}`,
		`{"id":{"a":1}}`,
		`{"id":[1,2]}`,
		`{"method":"notifications/initialized"}`,
		`{"` + strings.Repeat("k", 40) + `id":"not a key named id"}`,
		`{"id":"` + strings.Repeat("z", 300) + `"}`,
		`[{"id":1}]`,
		`"id"`,
		`{"a":"id","id":"after a value named id"}`,
	} {
		var whole mcpPeek
		var want any
		if json.Unmarshal([]byte(msg), &whole) == nil && whole.ID != nil && validRPCID(whole.ID) && len(msg) < 300 {
			want = whole.ID
		}
		for size := 1; size <= len(msg); size++ {
			var s idScan
			for i := 0; i < len(msg); i += size {
				s.scan([]byte(msg[i:min(i+size, len(msg))]))
			}
			if got := s.id(); got != want {
				t.Errorf("%.80s in pieces of %d: id %#v, want %#v", msg, size, got, want)
				break
			}
		}
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
