package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/textindex"
)

// TestMigrateFullTextToTerms upgrades a database written at schema 3, whose
// full-text index stemmed with FTS5's porter tokenizer, and finds its chunks
// by stem, by phrase and by a two-character Chinese word afterwards: the
// migration rebuilt the index as terms.
func TestMigrateFullTextToTerms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	old := &DB{path: path}
	old.opts.defaults()
	conn, err := sql.Open("sqlite", old.dsn(true))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetMaxOpenConns(1)
	if err := migrateTo(ctx, conn, 3); err != nil {
		t.Fatal(err)
	}
	texts := []string{"She keeps running along the river every morning.", "我喜欢薄荷茶, and the Generalizations of cafés."}
	for i, text := range texts {
		id := int64(i + 1)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO sources (sid, id, kind, title, chunk_count, created_at, updated_at) VALUES (?, ?, 'archive', 'Walks', 1, 0, 0)`,
				[]any{id, "old/" + string(rune('a'+i)) + ".md"}},
			{`INSERT INTO chunks (id, sid, idx, hash, kind, owner, category) VALUES (?, ?, 0, ?, 'archive', '', '')`,
				[]any{id, id, recall.TextHash(text)}},
			{`INSERT INTO chunk_texts (id, text) VALUES (?, ?)`, []any{id, text}},
			// What schema 3's writer gave its porter tokenizer.
			{`INSERT INTO chunks_fts (rowid, title, body) VALUES (?, ?, ?)`,
				[]any{id, textindex.Normalize("Walks"), textindex.Normalize(text)}},
		} {
			if _, err := conn.Exec(q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	conn.Close()

	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		query string
		want  []int64
	}{
		{"runs", []int64{1}},
		{`"keeps running"`, []int64{1}},
		{"薄荷", []int64{2}},
		{"generalization cafe", []int64{2}},
		{"walk", []int64{1, 2}}, // the title
	} {
		cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: tt.query, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, c := range cands {
			got = append(got, c.ChunkID)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Lexical(%q) found chunks %v; want %v", tt.query, got, tt.want)
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("integrity check after migration: %v", err)
	}
}

// TestMigrateSettlesSkipped upgrades a database in which memories saved
// without an embedder stayed "skipped" beside a vector space, one of them
// after repair embedded it: the migration makes that one ok and the other
// pending, for repair.
func TestMigrateSettlesSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "test", Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	var docs []recall.Document
	for _, key := range []string{"embedded", "not embedded"} {
		docs = append(docs, recall.Document{
			Source: recall.Source{ID: recall.MemoryID("", key), Kind: recall.KindMemory, ContentHash: recall.TextHash(key),
				Size: int64(len(key)), ChunkCount: 1, Body: key, IndexState: recall.IndexSkipped},
			Chunks: []recall.Chunk{{Text: key, Hash: recall.TextHash(key)}},
		})
	}
	vecs := []recall.Vector{{Space: "s", Hash: recall.TextHash("embedded"), Vec: []float32{0.6, 0.8}}}
	if _, err := db.Write(ctx, docs, vecs); err != nil {
		t.Fatal(err)
	}
	// What an older recall left: both skipped, and schema 6.
	for _, q := range []string{`UPDATE sources SET index_state = 'skipped'`, `DELETE FROM schema_migrations WHERE version = 7`} {
		if _, err := db.rw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for key, want := range map[string]string{"embedded": recall.IndexOK, "not embedded": recall.IndexPending} {
		if src, err := db.Source(ctx, recall.MemoryID("", key)); err != nil || src.IndexState != want {
			t.Errorf("%s after migrating: %q %v; want %q", key, src.IndexState, err, want)
		}
	}
}

// TestCheckpointsInBackground: the write connection never checkpoints, yet
// the pages of committed writes reach the database file: the checkpointer
// copies every frame of the log soon after the writes stop.
func TestCheckpointsInBackground(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	for i := range 20 {
		doc := recall.Document{
			Source: recall.Source{ID: fmt.Sprintf("c/%d.md", i), Kind: recall.KindArchive},
			Chunks: []recall.Chunk{{Text: strings.Repeat(fmt.Sprintf("word%d ", i), 2000)}},
		}
		doc.Chunks[0].Hash = recall.TextHash(doc.Chunks[0].Text)
		doc.Source.ChunkCount = 1
		if _, err := db.Write(ctx, []recall.Document{doc}, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		logFrames, copied := db.ckpt.logFrames.Load(), db.ckpt.copied.Load()
		if logFrames > 0 && copied == logFrames {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last checkpoint: %d of %d log frames copied; want all", copied, logFrames)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var auto int
	if err := db.rw.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Errorf("write connection wal_autocheckpoint = %d, %v; want 0", auto, err)
	}
}
