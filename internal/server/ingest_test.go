package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
)

func (f *fixture) ingest(token string, chunks ...remote.IngestChunk) (int, remote.IngestResponse, string) {
	f.t.Helper()
	b, _ := json.Marshal(remote.IngestRequest{Chunks: chunks})
	resp, body := f.do("POST", "/ingest", token, string(b))
	var out remote.IngestResponse
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			f.t.Fatalf("ingest answer %s: %v", body, err)
		}
	}
	return resp.StatusCode, out, body
}

func chunkOf(file string, i, n int, text string) remote.IngestChunk {
	return remote.IngestChunk{SourceFile: file, ChunkIndex: i, TotalChunks: n, Content: text, Era: new("2025-07"), ConversationTitle: new("title")}
}

func TestIngestWritesCompleteSources(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	// A source whose chunks span two requests, in the replaced system's payload.
	status, out, body := f.ingest(plainTok, chunkOf(`2025\07\trip.md`, 0, 3, "first part"), chunkOf(`2025\07\trip.md`, 2, 3, "third part"),
		chunkOf("one.md", 0, 1, "a source in one chunk"))
	if status != 200 || len(out.Sources) != 2 {
		t.Fatalf("%d %s", status, body)
	}
	want := []remote.SourceStatus{
		{SourceFile: `2025\07\trip.md`, Source: "2025/07/trip.md", Status: remote.StatusPartial, Received: 2, TotalChunks: 3},
		{SourceFile: "one.md", Source: "one.md", Status: remote.StatusWritten, Received: 1, TotalChunks: 1},
	}
	for i := range want {
		if out.Sources[i] != want[i] {
			t.Errorf("source %d: %+v, want %+v", i, out.Sources[i], want[i])
		}
	}
	if _, err := f.st.Source(ctx, "2025/07/trip.md"); !recall.IsNotFound(err) {
		t.Errorf("a partial source was written: %v", err)
	}
	_, out, _ = f.ingest(plainTok, chunkOf("2025/07/trip.md", 1, 3, "second part"))
	if out.Sources[0].Status != remote.StatusWritten || out.Sources[0].Received != 3 {
		t.Errorf("completing request: %+v", out.Sources[0])
	}
	chunks, err := f.st.Chunks(ctx, "2025/07/trip.md", 0, 10)
	if err != nil || len(chunks) != 3 || chunks[1].Text != "second part" {
		t.Fatalf("stored chunks: %v %+v", err, chunks)
	}
	src, _ := f.st.Source(ctx, "2025/07/trip.md")
	if src.Title != "title" || src.Date != "2025-07" || src.Kind != recall.KindArchive {
		t.Errorf("stored source: %+v", src)
	}

	// Sending it again changes nothing.
	_, out, _ = f.ingest(plainTok, chunkOf("2025/07/trip.md", 0, 3, "first part"), chunkOf("2025/07/trip.md", 1, 3, "second part"), chunkOf("2025/07/trip.md", 2, 3, "third part"))
	if out.Sources[0].Status != remote.StatusUnchanged {
		t.Errorf("identical resend: %+v", out.Sources[0])
	}
	// A shorter version replaces it: chunks at or beyond the new count go.
	_, out, _ = f.ingest(plainTok, chunkOf("2025/07/trip.md", 0, 1, "rewritten"))
	if out.Sources[0].Status != remote.StatusWritten {
		t.Errorf("replacement: %+v", out.Sources[0])
	}
	if chunks, _ := f.st.Chunks(ctx, "2025/07/trip.md", 0, 10); len(chunks) != 1 || chunks[0].Text != "rewritten" {
		t.Errorf("after replacement: %+v", chunks)
	}
	// The written text is searchable.
	resp, raw := f.do("POST", "/api/search", plainTok, `{"query":"rewritten","mode":"lexical"}`)
	if resp.StatusCode != 200 || !strings.Contains(raw, `"source":"2025/07/trip.md"`) {
		t.Errorf("search after ingest: %d %s", resp.StatusCode, raw)
	}
}

func TestIngestRejections(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		chunk remote.IngestChunk
		want  string
	}{
		{chunkOf("../etc/passwd", 0, 1, "x"), "leaves the vault"},
		{chunkOf("/abs.md", 0, 1, "x"), "absolute"},
		{chunkOf(`C:\x.md`, 0, 1, "x"), "absolute"},
		{chunkOf("memory:alice:k", 0, 1, "x"), "reserved"},
		{chunkOf("a.md", 1, 1, "x"), "chunk_index 1 is outside"},
		{chunkOf("a.md", 0, 0, "x"), "total_chunks must be"},
		{chunkOf("a.md", 0, 1, "  "), "content is empty"},
		{chunkOf("a.md", 0, 1, "a nul \x00 here"), "content holds a NUL character"},
		{remote.IngestChunk{SourceFile: "a.md", TotalChunks: 1, Content: "x", Era: new("July")}, `era "July" is not a date`},
		{chunkOf("ctl\u001b[2J\n.md", 0, 1, "x"), "control character U+001B"},
		{remote.IngestChunk{SourceFile: "a.md", TotalChunks: 1, Content: "x", Zone: new("z\n")}, "zone must be at most"},
		{remote.IngestChunk{SourceFile: "a.md", TotalChunks: 1, Content: "x", Zone: new(recall.ZoneUnknown)}, "zone must be at most"},
	} {
		status, out, body := f.ingest(plainTok, tc.chunk)
		if status != 200 || len(out.Sources) != 1 || out.Sources[0].Status != remote.StatusRejected ||
			!strings.Contains(out.Sources[0].Error, tc.want) {
			t.Errorf("%+v: %d %s", tc.chunk, status, body)
		}
	}
	for _, tc := range []struct{ body, want string }{
		{`{"chunks":[]}`, "chunks is empty"},
		{`{"chunks":[{"source_file":"a.md","chunk_index":0,"total_chunks":1,"content":"x","extra":1}]}`, `unknown field \"extra\"`},
		{`{"chunks":"no"}`, "field chunks must be a list"},
		{`{"chunks":[`, "not valid JSON"},
		{`[]`, "must be a JSON object"},
	} {
		resp, body := f.do("POST", "/ingest", plainTok, tc.body)
		if resp.StatusCode != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
	}
	// One chunk sent twice: the same text is a harmless repeat, two texts
	// refuse the request, naming the chunk.
	if _, out, body := f.ingest(plainTok, chunkOf("twice.md", 0, 1, "x"), chunkOf("twice.md", 0, 1, "x")); out.Sources[0].Status != remote.StatusWritten {
		t.Errorf("identical repeat: %s", body)
	}
	if status, _, body := f.ingest(plainTok, chunkOf("dup.md", 0, 1, "one"), chunkOf("dup.md", 0, 1, "two")); status != 400 ||
		!strings.Contains(body, `chunk 0 of source_file \"dup.md\" is sent twice with different content`) {
		t.Errorf("two texts for one chunk: %d %s", status, body)
	}
	// Chunks that disagree on the count reject the source, not the request.
	_, out, _ := f.ingest(plainTok, chunkOf("a.md", 0, 2, "x"), chunkOf("a.md", 1, 3, "y"), chunkOf("b.md", 0, 1, "fine"))
	if out.Sources[0].Status != remote.StatusRejected || out.Sources[1].Status != remote.StatusWritten {
		t.Errorf("mixed request: %+v", out.Sources)
	}
}

// A rejected source is answered with the source_file it was sent as, so
// the client can tell which of its files failed and why; a path of more
// than 500 bytes was once answered cut short. Only a path too long to be
// a source id is cut.
func TestIngestRejectionEchoesSourceFile(t *testing.T) {
	f := newFixture(t, nil)
	long := strings.Repeat("d", 300) + "/" + strings.Repeat("e", 300) + "/long.md"
	tooLong := strings.Repeat("x", recall.MaxSourceIDLen+1)
	for _, file := range []string{long, tooLong} {
		c := chunkOf(file, 0, 1, "x")
		c.Era = new("July")
		_, out, body := f.ingest(plainTok, c)
		if len(out.Sources) != 1 || out.Sources[0].Status != remote.StatusRejected || (out.Sources[0].SourceFile == file) != (file == long) {
			t.Errorf("%d bytes: %.300s", len(file), body)
		}
	}
}

// A title is stored as a local sweep stores it: control characters become
// spaces and a long one is cut at ingest.MaxTitle characters. Such titles
// were once refused, and a client sent their files again on every run.
func TestIngestCleansTitlesAsASweepDoes(t *testing.T) {
	f := newFixture(t, nil)
	long := strings.Repeat("é", ingest.MaxTitle) + "cut"
	for _, tc := range []struct{ title, want string }{
		{"Plan\tfor June", "Plan for June"},
		{"t\u009b2J\x1b[0m", "t 2J [0m"},
		{long, strings.Repeat("é", ingest.MaxTitle)},
	} {
		c := chunkOf("titled.md", 0, 1, "text titled "+tc.want)
		c.ConversationTitle = &tc.title
		if _, out, body := f.ingest(plainTok, c); len(out.Sources) != 1 || out.Sources[0].Status != remote.StatusWritten {
			t.Errorf("%.40q: %s", tc.title, body)
			continue
		}
		if src, err := f.st.Source(context.Background(), "titled.md"); err != nil || src.Title != tc.want {
			t.Errorf("%.40q: stored %.40q, want %.40q (%v)", tc.title, src.Title, tc.want, err)
		}
	}
}

// A title or era sent, even empty, is stored as sent; one left out is made
// as a local sweep makes it for the file source_file names (ingest.Label).
// Empty ones were once taken for left out, and a conversation of an export
// with no title, or no date, was titled or dated by its id.
func TestIngestLabelsAsASweepDoes(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		file, title, era string // "-": left out
		want             string // title|date
	}{
		{"2024/05/notes.md", "-", "-", "notes|2024-05"},
		{"2024/05/titled.md", "Titled", "-", "Titled|2024-05"},
		{"2024/05/dated.md", "-", "2023", "dated|2023"},
		{"exports/conversations.json/2025", "", "", "|"},
		{"exports/conversations.json/c-2.v1", "", "2024-01-02", "|2024-01-02"},
		{"2024/06/chat.json/c-3", "Plan", "", "Plan|"},
	} {
		c := remote.IngestChunk{SourceFile: tc.file, TotalChunks: 1, Content: "text of " + tc.file}
		if tc.title != "-" {
			c.ConversationTitle = &tc.title
		}
		if tc.era != "-" {
			c.Era = &tc.era
		}
		if _, out, body := f.ingest(plainTok, c); len(out.Sources) != 1 || out.Sources[0].Status != remote.StatusWritten {
			t.Errorf("%s: %s", tc.file, body)
			continue
		}
		src, err := f.st.Source(context.Background(), tc.file)
		if got := src.Title + "|" + src.Date; err != nil || got != tc.want {
			t.Errorf("%s (title %q, era %q): stored %q, want %q (%v)", tc.file, tc.title, tc.era, got, tc.want, err)
		}
	}
}

// Staged chunks are kept by version: a chunk of another version starts the
// source over, so two texts are never assembled into one source.
func TestIngestStagingKeyedByVersion(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	v := func(c remote.IngestChunk, version string) remote.IngestChunk { c.Version = version; return c }
	_, out, _ := f.ingest(plainTok, v(chunkOf("v.md", 1, 2, "old tail"), "v1"))
	if out.Sources[0].Status != remote.StatusPartial {
		t.Fatalf("first: %+v", out.Sources[0])
	}
	_, out, _ = f.ingest(plainTok, v(chunkOf("v.md", 0, 2, "new head"), "v2"))
	if out.Sources[0].Status != remote.StatusPartial || out.Sources[0].Received != 1 {
		t.Errorf("another version completed the source: %+v", out.Sources[0])
	}
	_, out, _ = f.ingest(plainTok, v(chunkOf("v.md", 1, 2, "new tail"), "v2"))
	if out.Sources[0].Status != remote.StatusWritten {
		t.Fatalf("same version: %+v", out.Sources[0])
	}
	if chunks, _ := f.st.Chunks(ctx, "v.md", 0, 10); len(chunks) != 2 || chunks[0].Text != "new head" || chunks[1].Text != "new tail" {
		t.Errorf("stored: %+v", chunks)
	}
	// Chunks of one source in one request must agree on it.
	_, out, _ = f.ingest(plainTok, v(chunkOf("w.md", 0, 2, "a"), "v1"), v(chunkOf("w.md", 1, 2, "b"), "v2"))
	if out.Sources[0].Status != remote.StatusRejected || !strings.Contains(out.Sources[0].Error, "disagree on version") {
		t.Errorf("mixed versions: %+v", out.Sources[0])
	}
}

func TestIngestStagingIsBounded(t *testing.T) {
	now := time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	// A waiting source counts its id, title, era, entry and chunk overheads
	// as well as its text.
	entry := int64(stagedEntryCost + len("a.md") + len("title") + len("2025-07") + stagedChunkCost + 60)
	f := newFixture(t, func(o *Options) { o.StageBytes = entry * 3 / 2; o.StageTTL = time.Minute; o.Now = clock })
	big := strings.Repeat("x", 60)
	_, out, _ := f.ingest(plainTok, chunkOf("a.md", 0, 2, big))
	if out.Sources[0].Status != remote.StatusPartial {
		t.Fatalf("first: %+v", out.Sources[0])
	}
	now = now.Add(time.Second)
	// b does not fit beside a: the least recently touched (a) is evicted.
	_, out, _ = f.ingest(plainTok, chunkOf("b.md", 0, 2, big))
	if out.Sources[0].Status != remote.StatusPartial {
		t.Fatalf("second: %+v", out.Sources[0])
	}
	if n, bytes := f.srv.stage.size(); n != 1 || bytes != entry {
		t.Errorf("staging holds %d sources, %d bytes; want 1, %d", n, bytes, entry)
	}
	// a's last chunk now completes nothing: the client will resend a in full.
	_, out, _ = f.ingest(plainTok, chunkOf("a.md", 1, 2, "end"))
	if out.Sources[0].Status != remote.StatusPartial || out.Sources[0].Received != 1 {
		t.Errorf("after eviction: %+v", out.Sources[0])
	}
	// A source that can never fit is refused with advice.
	_, out, _ = f.ingest(plainTok, chunkOf("huge.md", 0, 2, strings.Repeat("y", int(entry))))
	if out.Sources[0].Status != remote.StatusRejected || !strings.Contains(out.Sources[0].Error, "in one request") {
		t.Errorf("oversized: %+v", out.Sources[0])
	}
	// Entries expire.
	now = now.Add(2 * time.Minute)
	f.ingest(plainTok, chunkOf("c.md", 0, 1, "done"))
	if n, _ := f.srv.stage.size(); n != 0 {
		t.Errorf("%d staged sources outlived their TTL", n)
	}
	if n, bytes := f.srv.stage.size(); n < 0 || bytes < 0 {
		t.Errorf("negative accounting: %d %d", n, bytes)
	}
	// The injected clock governs staging only: MCP still works with it in the past.
	mustCall[StatsOutput](t, f.connect(plainTok), "get_archive_stats", map[string]any{})
}

func TestIngestMetrics(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 3 {
		f.ingest(plainTok, chunkOf(fmt.Sprintf("m%d.md", i), 0, 1, "text"))
	}
	_, body := f.do("GET", "/metrics", plainTok, "")
	if !strings.Contains(body, `recall_ingest_sources_total{status="written"} 3`) {
		t.Errorf("metrics:\n%s", body)
	}
}

// A source's zone, sent with its chunks, is recorded as a local sweep
// records it (recall.Source.Zone); a source sent again in another zone
// with the same dates is recorded in that zone, and chunks without one, as
// clients older than the field send them, record none, as before.
func TestIngestRecordsTheZone(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	zoned := func(zone *string) remote.IngestChunk {
		c := chunkOf("export.json/c1", 0, 1, "a conversation")
		c.Zone = zone
		return c
	}
	for _, tc := range []struct {
		zone   *string
		status string
	}{
		{new("z1:west"), remote.StatusWritten},
		{new("z1:west"), remote.StatusUnchanged},
		{new("z1:east"), remote.StatusWritten},
		{nil, remote.StatusWritten},
		{nil, remote.StatusUnchanged},
	} {
		_, out, body := f.ingest(plainTok, zoned(tc.zone))
		if len(out.Sources) != 1 || out.Sources[0].Status != tc.status {
			t.Fatalf("zone %v: %s; want %s", tc.zone, body, tc.status)
		}
		want := ""
		if tc.zone != nil {
			want = *tc.zone
		}
		if src, err := f.st.Source(ctx, "export.json/c1"); err != nil || src.Zone != want {
			t.Errorf("sent in zone %v: stored %q (%v)", tc.zone, src.Zone, err)
		}
	}
}
