package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/testvault"
)

// claudeExport returns a Claude export of the n conversations of about
// avgBytes that testvault generates from seed, a paragraph a message; edit,
// when set, may change a conversation (by its index) or drop it (by
// returning false).
func claudeExport(t testing.TB, n, avgBytes int, seed uint64, edit func(i int, msgs []string) ([]string, bool)) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := testvault.Generate(dir, n, avgBytes, seed); err != nil {
		t.Fatal(err)
	}
	type message struct {
		Sender string `json:"sender"`
		Text   string `json:"text"`
	}
	type conversation struct {
		UUID     string    `json:"uuid"`
		Name     string    `json:"name"`
		Created  string    `json:"created_at"`
		Messages []message `json:"chat_messages"`
	}
	var convs []conversation
	for i := range n {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%04d/%02d/chat-%d.md", 2018+i%8, 1+i%12, i)))
		if err != nil {
			t.Fatal(err)
		}
		msgs := strings.Split(strings.TrimSpace(string(data)), "\n\n")[1:] // the first is the title
		keep := true
		if edit != nil {
			msgs, keep = edit(i, msgs)
		}
		if !keep {
			continue
		}
		c := conversation{UUID: fmt.Sprintf("c-%d-%d", seed, i), Name: fmt.Sprintf("Chat %d", i), Created: "2024-05-06T07:08:09Z"}
		for j, m := range msgs {
			c.Messages = append(c.Messages, message{Sender: []string{"human", "assistant"}[j%2], Text: m})
		}
		convs = append(convs, c)
	}
	b, err := json.Marshal(convs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// content is the store as `recall export` shows it, without timestamps:
// source ids, the recorded file state, content hashes and chunk texts.
func content(t *testing.T, st *sqlite.DB) string {
	t.Helper()
	var b strings.Builder
	err := st.Export(context.Background(), func(d recall.Document) error {
		s := d.Source
		fmt.Fprintf(&b, "%s size=%d mtime=%d %s %s %d\n", s.ID, s.Size, s.MTime, s.ContentHash, s.IndexState, s.ChunkCount)
		for _, c := range d.Chunks {
			fmt.Fprintf(&b, "\t%d %q\n", c.Index, c.Text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// countingWriter counts the store's write transactions and the chunks
// they add and, after the cancelAfter-th, cancels the sweep, as a Ctrl-C
// right after a commit would.
type countingWriter struct {
	*sqlite.DB
	writes      int
	added       int
	cancelAfter int
	cancel      context.CancelFunc
}

func (w *countingWriter) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	res, err := w.DB.Write(ctx, docs, vecs, remove...)
	if err == nil {
		w.writes++
		w.added += len(res.Added)
		if w.writes == w.cancelAfter {
			w.cancel()
		}
	}
	return res, err
}

// embedSpace returns an embedder and the name of a vector space for it in st.
func embedSpace(t *testing.T, st *sqlite.DB) (*embedtest.Embedder, string) {
	t.Helper()
	emb := embedtest.New(16)
	sp, err := st.CreateSpace(context.Background(), recall.VectorSpace{Name: "test", Provider: emb.Info().Provider, Model: emb.Info().Model, Dim: 16, Normalized: true})
	if err != nil {
		t.Fatal(err)
	}
	return emb, sp.Name
}

// TestSweepExportInPieces: an export larger than a piece is written in
// several transactions and ends the same as when it is written in one.
func TestSweepExportInPieces(t *testing.T) {
	root := t.TempDir()
	write(t, root, "conversations.json", claudeExport(t, 300, 1200, 1, nil))
	one := openStore(t)
	whole, _ := sweep(t, one, root, Options{Batch: BatchLimits{Docs: 1 << 30, Bytes: 1 << 30}})
	want := content(t, one)

	for _, tc := range []struct {
		name      string
		batch     BatchLimits
		minWrites int
	}{
		{"defaults", BatchLimits{}, 2}, // 300 conversations: over one piece
		{"bytes", BatchLimits{Bytes: 32 << 10}, 10},
		{"docs", BatchLimits{Docs: 7}, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			w := &countingWriter{DB: st}
			res, err := Sweep(context.Background(), st, w, root, Options{Batch: tc.batch})
			if err != nil {
				t.Fatal(err)
			}
			if w.writes < tc.minWrites {
				t.Errorf("%d write transactions, want at least %d", w.writes, tc.minWrites)
			}
			if res.FilesChanged != 1 || res.ChunksWritten != whole.ChunksWritten || res.Bytes != whole.Bytes {
				t.Errorf("result %+v, want %+v", res, whole)
			}
			if got := content(t, st); got != want {
				t.Errorf("content differs from a sweep in one piece")
			}
			if res, _ := sweep(t, st, root, Options{Batch: tc.batch}); res.FilesSkipped != 1 || res.FilesChanged != 0 {
				t.Errorf("re-sweep: %+v", res)
			}
		})
	}
}

// TestSweepInterruptedExportResumes interrupts a sweep right after the first
// piece of an export commits: what was committed stays, the file does not
// look unchanged, and the next sweep completes it without embedding again
// what was committed, ending as an uninterrupted sweep does.
func TestSweepInterruptedExportResumes(t *testing.T) {
	edited := func(i int, msgs []string) ([]string, bool) {
		switch i % 10 {
		case 3:
			return msgs, false
		case 5:
			return append(msgs, "And one more thing about the kettle."), true
		}
		return msgs, true
	}
	for _, tc := range []struct {
		name   string
		before string // the export an earlier sweep stored, if any
		after  string
		full   bool
	}{
		{name: "first sweep", after: claudeExport(t, 200, 1200, 2, nil)},
		{name: "edited export", before: claudeExport(t, 200, 1200, 2, nil), after: claudeExport(t, 200, 1200, 2, edited)},
		{name: "full re-sweep", before: claudeExport(t, 200, 1200, 2, nil), after: claudeExport(t, 200, 1200, 2, nil), full: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			batch := BatchLimits{Bytes: 24 << 10}
			st := openStore(t)
			emb, space := embedSpace(t, st)
			if tc.before != "" {
				write(t, root, "conversations.json", tc.before)
				sweep(t, st, root, Options{Batch: batch})
			}
			write(t, root, "conversations.json", tc.after)

			ref := openStore(t)
			refEmb, refSpace := embedSpace(t, ref)
			sweep(t, ref, root, Options{Batch: batch, Embedder: refEmb, Space: refSpace})
			want := content(t, ref)

			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			w := &countingWriter{DB: st, cancelAfter: 1, cancel: cancel}
			res, err := Sweep(cctx, st, w, root, Options{Batch: batch, Full: tc.full, Embedder: emb, Space: space})
			if !errors.Is(err, context.Canceled) || !res.Interrupted || res.FilesChanged+res.FilesSkipped != 0 {
				t.Fatalf("interrupted sweep: %+v, %v", res, err)
			}
			abs, _ := filepath.Abs(root)
			have, _ := st.Manifest(ctx, recall.KindArchive, abs)
			final, _ := ref.Manifest(ctx, recall.KindArchive, abs)
			kept := 0
			for id, s := range final {
				if have[id].ContentHash == s.ContentHash {
					kept++
				}
			}
			if !tc.full && (kept == 0 || kept == len(final)) {
				t.Fatalf("the interrupted sweep stored %d of the export's %d conversations, want some", kept, len(final))
			}
			if res, _ := sweep(t, st, root, Options{DryRun: true}); res.Bytes == 0 {
				t.Fatalf("the partly written export looks unchanged (a sweep would not read it): %+v", res)
			}

			embedded := emb.Texts()
			res, _ = sweep(t, st, root, Options{Batch: batch, Embedder: emb, Space: space})
			if res.FilesChanged+res.FilesSkipped != 1 || res.VectorsMissing != 0 {
				t.Fatalf("resumed sweep: %+v", res)
			}
			if tc.before == "" && emb.Texts()-embedded >= refEmb.Texts() {
				t.Errorf("resumed sweep embedded %d texts, a whole sweep %d: the committed ones again", emb.Texts()-embedded, refEmb.Texts())
			}
			if got := content(t, st); got != want {
				t.Errorf("after the resumed sweep the store differs from an uninterrupted sweep (%d of %d stored after the interruption)", kept, len(final))
			}
			stats, _ := st.Stats(ctx)
			if stats.Spaces[0].Missing != 0 {
				t.Errorf("vectors missing after the resumed sweep: %+v", stats.Spaces)
			}
			if res, _ := sweep(t, st, root, Options{}); res.FilesSkipped != 1 {
				t.Errorf("sweep after the resumed one: %+v", res)
			}
		})
	}
}

// TestSweepFileWithoutSources: a file that holds no conversation is not a
// change, unless it held some before.
func TestSweepFileWithoutSources(t *testing.T) {
	for _, tc := range []struct {
		name, rel, text, before string
		changed                 int // files_changed of the first sweep
	}{
		{name: "empty note", rel: "empty.md", text: ""},
		{name: "blank note", rel: "blank.md", text: " \n\n\t\n"},
		{name: "empty export", rel: "conversations.json", text: "[]"},
		{name: "empty JSON file", rel: "conversations.json", text: ""},
		{name: "blank JSON file", rel: "c.json", text: " \r\n"},
		{name: "empty JSON lines file", rel: "c.jsonl", text: ""},
		{name: "emptied export", rel: "conversations.json", text: "[]", before: export, changed: 1},
		{name: "emptied note", rel: "a.md", text: "\n", before: convA, changed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			root := t.TempDir()
			if tc.before != "" {
				write(t, root, tc.rel, tc.before)
				sweep(t, st, root, Options{})
			}
			write(t, root, tc.rel, tc.text)
			for i, changed := range []int{tc.changed, 0} {
				res, log := sweep(t, st, root, Options{})
				if res.FilesChanged != changed || res.FilesSkipped != 1-changed || res.FilesFailed != 0 {
					t.Errorf("sweep %d: %+v %s", i+1, res, log)
				}
			}
			if ids := sourceIDs(t, st, root); len(ids) != 0 {
				t.Errorf("sources %v", ids)
			}
		})
	}
}

// A file that holds no conversation is recorded, so that the next sweep
// skips it while its size and mtime are unchanged, as it skips a file of
// conversations, where it used to read it every time: here the files get
// other content of the same size and mtime, which a sweep that read them
// would fail on. The record is no source anywhere else; a file that
// changes is read again, and the conversation it gains stored; a file gone
// is forgotten, not reported as removed.
func TestSweepSkipsFilesWithoutConversation(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	root := t.TempDir()
	for rel, text := range map[string]string{"empty.md": "", "blank.md": " \n\n", "conversations.json": "[]",
		"c.jsonl": "\n", "chatgpt/user.json": `{"id":"u"}`} {
		write(t, root, rel, text)
	}
	write(t, root, "a.md", convA)
	if res, log := sweep(t, st, root, Options{}); res.FilesChanged != 1 || res.FilesSkipped != 5 || res.FilesFailed != 0 {
		t.Fatalf("first sweep: %+v %q", res, log)
	}
	abs, _ := filepath.Abs(root)
	m, err := st.Manifest(ctx, recall.KindArchive, abs)
	if err != nil {
		t.Fatal(err)
	}
	if s := m["conversations.json"]; len(m) != 6 || s.Chunks != 0 || s.Size != 2 || s.Reading != ReadingVersion {
		t.Errorf("manifest: %+v; want a record of each file, conversations.json's of 2 bytes, no chunks, this reading", m)
	}
	if _, err := st.Source(ctx, "empty.md"); recall.ErrorCode(err) != recall.ENOTFOUND {
		t.Errorf("Source(empty.md) = %v; want not found", err)
	}
	if stats, _ := st.Stats(ctx); stats.Sources[recall.KindArchive] != 1 {
		t.Errorf("stats count %v sources; want a.md alone", stats.Sources)
	}

	// Unchanged: not read (what they hold now fails when read).
	same := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Stat(p)
		if err != nil || fi.Size() != int64(len(text)) {
			t.Fatalf("%s: %v, size %d", rel, err, fi.Size())
		}
		write(t, root, rel, text)
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	same("blank.md", "\x00\x01\x02")
	same("conversations.json", "{}")
	same("c.jsonl", "x")
	if res, log := sweep(t, st, root, Options{}); res.FilesSkipped != 6 || res.FilesChanged != 0 || res.FilesFailed != 0 || log != "" {
		t.Fatalf("second sweep: %+v %q; want every file skipped, none read", res, log)
	}

	// Changed: read, and a conversation gained is stored.
	write(t, root, "empty.md", convB)
	write(t, root, "conversations.json", export)
	res, log := sweep(t, st, root, Options{})
	if res.FilesChanged != 2 || res.FilesFailed != 0 || res.ConversationsRemoved != 0 {
		t.Fatalf("sweep after two files gained conversations: %+v %q", res, log)
	}
	ids := sourceIDs(t, st, root)
	if !slices.Contains(ids, "empty.md") || !slices.Contains(ids, "conversations.json/u-1") {
		t.Errorf("conversations: %q; want empty.md's and the export's", ids)
	}
	if m, _ := st.Manifest(ctx, recall.KindArchive, abs); m["conversations.json"] != (recall.SourceState{}) {
		t.Errorf("the record of the export without conversations is left: %+v", m["conversations.json"])
	}

	// Gone: forgotten, said nowhere, with or without --prune.
	if err := os.Remove(filepath.Join(root, "blank.md")); err != nil {
		t.Fatal(err)
	}
	if res, log := sweep(t, st, root, Options{}); res.FilesRemoved != 0 || len(res.Removed) != 0 || res.FilesFailed != 0 {
		t.Errorf("sweep after a file without conversations went: %+v %q; want nothing said removed", res, log)
	}
	if m, _ := st.Manifest(ctx, recall.KindArchive, abs); len(m) != 6 || m["empty.md"].Chunks == 0 {
		t.Errorf("manifest after blank.md went: %q; want its record gone", slices.Sorted(maps.Keys(m)))
	}
}

// A file that holds no conversation in one vault is no conflict for the
// same path in another, which it was not before it was recorded: there is
// no conversation there to keep.
func TestSweepAnotherVaultsFileWithoutConversation(t *testing.T) {
	st := openStore(t)
	a, b := t.TempDir(), t.TempDir()
	write(t, a, "same.md", "")
	write(t, b, "same.md", convA)
	sweep(t, st, a, Options{})
	if res, log := sweep(t, st, b, Options{}); res.FilesChanged != 1 || res.FilesFailed != 0 {
		t.Fatalf("the other vault: %+v %q", res, log)
	}
	sweep(t, st, a, Options{}) // refuses same.md: the other vault's conversation is there
	if src, err := st.Source(context.Background(), "same.md"); err != nil || src.Vault != b || src.ChunkCount == 0 {
		t.Errorf("same.md: %+v, %v; want the other vault's conversation", src, err)
	}
}

// A conversation a newer export no longer holds is removed with it, and
// the summary counts it.
func TestSweepExportDropsConversation(t *testing.T) {
	st := openStore(t)
	vault := t.TempDir()
	write(t, vault, "conversations.json", claudeExport(t, 3, 800, 7, nil))
	if res, log := sweep(t, st, vault, Options{}); res.FilesChanged != 1 || log != "" {
		t.Fatalf("first sweep: %+v %q", res, log)
	}
	if ids := sourceIDs(t, st, vault); len(ids) != 3 {
		t.Fatalf("sources: %v", ids)
	}
	write(t, vault, "conversations.json", claudeExport(t, 3, 800, 7, func(i int, msgs []string) ([]string, bool) { return msgs, i != 1 }))
	res, _ := sweep(t, st, vault, Options{})
	if res.ConversationsRemoved != 1 || res.FilesChanged != 1 {
		t.Fatalf("second sweep: %+v", res)
	}
	ids := sourceIDs(t, st, vault)
	if len(ids) != 2 || slices.Contains(ids, "conversations.json/c-7-1") {
		t.Fatalf("sources after the conversation left the export: %v", ids)
	}
}

// chunks_written counts the chunks a sweep wrote: of an export in which
// one conversation changed, that one's, not every conversation's; a full
// sweep writes them all.
func TestSweepChunksWrittenOfChangedConversations(t *testing.T) {
	st := openStore(t)
	vault := t.TempDir()
	write(t, vault, "conversations.json", export)
	if res, _ := sweep(t, st, vault, Options{}); res.ChunksWritten != 2 {
		t.Fatalf("first sweep: %+v, want 2 chunks written", res)
	}
	write(t, vault, "conversations.json", strings.Replace(export, "Lima.", "Lima, on the coast.", 1))
	if res, _ := sweep(t, st, vault, Options{}); res.FilesChanged != 1 || res.ChunksWritten != 1 {
		t.Errorf("one conversation changed: %+v, want 1 chunk written", res)
	}
	if res, _ := sweep(t, st, vault, Options{Full: true}); res.FilesChanged != 1 || res.ChunksWritten != 2 {
		t.Errorf("full sweep: %+v, want 2 chunks written", res)
	}
}

// The other files of an unzipped export are no failures: they hold no
// conversations, as an empty note does. A broken conversations.json still
// fails.
func TestSweepExportCompanions(t *testing.T) {
	st := openStore(t)
	vault := t.TempDir()
	write(t, vault, "claude/conversations.json", export)
	write(t, vault, "claude/users.json", `[{"uuid":"u","full_name":"Ann","email_address":"a@example.com"}]`)
	write(t, vault, "claude/projects.json", `[{"uuid":"p","name":"proj","docs":[]}]`)
	write(t, vault, "chatgpt/conversations.json", `[{"id":"c1","title":"t","mapping":{`)
	write(t, vault, "chatgpt/user.json", `{"id":"user-1","email":"a@example.com"}`)
	write(t, vault, "chatgpt/message_feedback.json", `[{"id":"f","conversation_id":"c1","rating":"thumbsUp"}]`)
	write(t, vault, "chatgpt/shared_conversations.json", `[{"id":"s","conversation_id":"c1","title":"t"}]`)
	for i, changed := range []int{1, 0} {
		res, log := sweep(t, st, vault, Options{})
		if res.FilesChanged != changed || res.FilesSkipped != 6-changed || res.FilesFailed != 1 ||
			!strings.Contains(log, "chatgpt/conversations.json") || strings.Count(log, "\n") != 1 {
			t.Errorf("sweep %d: %+v\n%s", i+1, res, log)
		}
	}
	if ids := sourceIDs(t, st, vault); len(ids) != 2 {
		t.Errorf("sources %v", ids)
	}
}

// A fine-tuning set holds one conversation per line (or per element of a
// JSON array): each becomes a source of its own, so no chunk holds the end
// of one and the start of the next.
func TestSweepConversationPerLine(t *testing.T) {
	st := openStore(t)
	vault := t.TempDir()
	line := func(q, a string) string {
		return `{"messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"` + q + `"},{"role":"assistant","content":"` + a + `"}]}` + "\n"
	}
	write(t, vault, "train.jsonl", line("zebra question", "zebra answer")+line("yak question", "yak answer"))
	write(t, vault, "sharegpt.json", `[{"id":"s1","conversations":[{"from":"human","value":"okapi question"},{"from":"gpt","value":"okapi answer"}]}]`)
	if res, log := sweep(t, st, vault, Options{}); res.FilesChanged != 2 || log != "" {
		t.Fatalf("first sweep: %+v %q", res, log)
	}
	if ids, want := sourceIDs(t, st, vault), []string{"sharegpt.json/s1", "train.jsonl/1", "train.jsonl/2"}; !slices.Equal(ids, want) {
		t.Fatalf("sources %v, want %v", ids, want)
	}
	got := content(t, st)
	for _, chunk := range strings.Split(got, "\n") {
		if strings.Contains(chunk, "zebra") && strings.Contains(chunk, "yak") {
			t.Errorf("a chunk holds two conversations: %s", chunk)
		}
	}
	if strings.Contains(got, "You are helpful") {
		t.Errorf("the system prompt was indexed:\n%s", got)
	}
}

// Two conversations of one file whose ids differ only in Unicode
// normalisation would be one source (ids are NFC): that file fails, and the
// rest of the vault is swept, where the store refused the whole batch on
// every sweep.
func TestSweepConversationIDsOneInNFC(t *testing.T) {
	st := openStore(t)
	vault := t.TempDir()
	write(t, vault, "a.md", convA)
	write(t, vault, "set.jsonl",
		`{"id":"caf\u00e9","messages":[{"role":"user","content":"espresso"}]}`+"\n"+
			`{"id":"cafe\u0301","messages":[{"role":"user","content":"green tea"}]}`+"\n")
	for i := range 2 {
		res, log := sweep(t, st, vault, Options{})
		if res.FilesFailed != 1 || res.FilesChanged != 1-i || res.FilesSkipped != i || !strings.Contains(log, "set.jsonl") {
			t.Errorf("sweep %d: %+v %q, want set.jsonl failed and a.md swept", i+1, res, log)
		}
	}
	if ids := sourceIDs(t, st, vault); !slices.Equal(ids, []string{"a.md"}) {
		t.Errorf("sources %v, want a.md alone", ids)
	}
}
